import Testing
@testable import Engine

/// `--forward [ADDRESS:]PORT:APP-PORT[/udp]`.
@Suite struct PortForwardTests {
    @Test func parsesThePortsAndTheListenAddress() {
        #expect(PortForward.parse("8080:80") == PortForward(host: "127.0.0.1", port: 8080, appPort: 80))
        #expect(PortForward.parse("0.0.0.0:8080:80") == PortForward(host: "0.0.0.0", port: 8080, appPort: 80))
        #expect(PortForward.parse("[::1]:8443:443") == PortForward(host: "::1", port: 8443, appPort: 443))
        #expect(PortForward.parse("8080:80")?.description == "127.0.0.1:8080 → 80")
        #expect(PortForward.parse("[::1]:8443:443")?.description == "[::1]:8443 → 443")
        #expect(PortForward.parse("5353:53/udp") == PortForward(host: "127.0.0.1", port: 5353, appPort: 53, udp: true))
        #expect(PortForward.parse("[::1]:5353:53/udp")?.description == "[::1]:5353 → 53/udp")
        #expect(PortForward.parse("8080:80/tcp") == PortForward(host: "127.0.0.1", port: 8080, appPort: 80))
        for bad in ["", "80", "8080:", ":80", "0:80", "8080:0", "70000:80", "host.test:8080:80", "::1:8080:80", "8080:80x", "1.2.3:8080:80",
                    "8080:80/sctp", "8080:80/", "/udp", "8080:80/udp/udp", "8080/udp:80"] {
            #expect(PortForward.parse(bad) == nil, "\(bad)")
        }
    }
}
