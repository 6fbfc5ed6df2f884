import Testing
import Relay
import Wire

@Suite struct ProxyTargetTests {
    @Test func printsLikeAnAuthority() {
        #expect(ProxyTarget(host: .domain("example.test"), port: 443).description == "example.test:443")
        #expect(ProxyTarget(host: .ipv4(IPv4Address(10, 0, 0, 1)), port: 80).description == "10.0.0.1:80")
        #expect(ProxyTarget(host: .ipv6(.loopback), port: 53).description == "[::1]:53")
    }

    @Test func parsesAuthorities() {
        #expect(ProxyTarget(authority: "example.test:443") == ProxyTarget(host: .domain("example.test"), port: 443))
        #expect(ProxyTarget(authority: "10.0.0.1:80") == ProxyTarget(host: .ipv4(IPv4Address(10, 0, 0, 1)), port: 80))
        #expect(ProxyTarget(authority: "[2001:db8::1]:8443") == ProxyTarget(host: .ipv6(IPv6Address("2001:db8::1")!), port: 8443))
        for bad in ["example.test", "example.test:", "example.test:0", "example.test:65536", "::1:80", "[::1]80",
                    "[::1", "exa mple:80", "a\r\nb:80", ":80", "[example]:80", "host:8x"] {
            #expect(ProxyTarget(authority: bad) == nil, "\(bad)")
        }
    }

    @Test func credentialsPrintWithoutThePassword() {
        #expect(ProxyCredentials(username: "alice", password: "s3cret").description == "alice:***")
    }
}
