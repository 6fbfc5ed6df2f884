@testable import Engine
import Sys
import Testing

@Suite struct ResolverWarningTests {
    let host = SocketAddress(.v4(0x0a58_0002), port: 53)
    let split = SocketAddress(.v4(0x0a58_0002), port: 5353)

    /// A [Host] `server:` line's resolver is named as such, with its port;
    /// it was called "the host's resolver 10.88.0.2", and the hint pointed at
    /// /etc/resolv.conf, where 10.88.0.2:53 answered fine.
    @Test func aServerLinesResolverIsNamedWithItsPort() {
        #expect(Tunnel.unansweredWarning([split], defaults: [host])
            == "the resolver 10.88.0.2:5353 of a [Host] server: line did not answer: the names sent there fail")
        #expect(Tunnel.unansweredWarning([host], defaults: [host])
            == "the host's resolver 10.88.0.2 did not answer: names it was asked fail (see /etc/resolv.conf, or [General] dns-server)")
    }
}
