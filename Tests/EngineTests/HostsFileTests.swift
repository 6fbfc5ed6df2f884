import Stack
import Sys
import Testing
import Wire
@testable import Engine

/// /etc/hosts as `sluice proxy` reads it: hosts(5) lines, names in any
/// case and with or without their trailing dot, comments, both families;
/// and localhost (RFC 6761) whatever the file says.
@Suite struct HostsFileTests {
    let hosts = HostsFile(text: """
    127.0.0.1\tlocalhost
    ::1     localhost ip6-localhost   # loopback
    10.77.1.2 Srv.Test   alias.test
    fd00:77::2 srv.test
    # 10.0.0.9 commented.test
    not-an-address broken.test
    10.77.1.3
    """)

    @Test func namesFindTheirAddressesInTheirFamily() {
        #expect(hosts.address(of: "srv.test", family: .v4) == IPAddress("10.77.1.2"))
        #expect(hosts.address(of: "SRV.test.", family: .v6) == IPAddress("fd00:77::2"))
        #expect(hosts.address(of: "alias.test", family: .v6) == IPAddress("10.77.1.2"), "the other family's when the name has no address in this one")
        #expect(hosts.address(of: "ip6-localhost", family: .v4) == IPAddress("::1"))
        #expect(hosts.address(of: "commented.test", family: .v4) == nil)
        #expect(hosts.address(of: "broken.test", family: .v4) == nil)
    }

    @Test func localhostIsLoopbackWithoutTheFile() {
        let empty = HostsFile(text: "")
        #expect(empty.address(of: "localhost", family: .v4) == IPAddress("127.0.0.1"))
        #expect(empty.address(of: "LocalHost.", family: .v6) == IPAddress("::1"))
        #expect(empty.address(of: "app.localhost", family: .v4) == IPAddress("127.0.0.1"))
        #expect(empty.address(of: "notlocalhost", family: .v4) == nil)
    }

    @Test func theResolverAnswersFromItAtOnce() {
        let resolver = HostResolver(token: 99, seed: 1, servers: [IPAddress("10.255.255.1")!])
        resolver.hostsFile = hosts
        let key = FlowKey(transport: .tcp, appAddress: IPAddress("10.0.0.1")!, appPort: 1, destinationAddress: IPAddress("10.0.0.2")!, destinationPort: 80)
        #expect(resolver.resolve(DNSName("Srv.Test")!, family: .v4, for: key, now: Instant(nanoseconds: 0)) == IPAddress("10.77.1.2"))
        #expect(resolver.pending.isEmpty, "no query was sent")
        #expect(resolver.resolve(DNSName("elsewhere.test")!, family: .v4, for: key, now: Instant(nanoseconds: 0)) == nil)
        #expect(resolver.pending.count == 1)
    }
}
