import Foundation
import Testing
import TestSupport

/// iperf3 through `sluice exec`, both directions, TCP and UDP, IPv4 and IPv6.
/// Throughput figures belong in docs/benchmarks.md; these tests check that
/// every run completes, moves data, and that UDP at 200 Mbit/s loses < 1%.
@Suite(.enabled(if: TestNetwork.isRoot, "needs root: creates network namespaces and TUN devices"), .serialized)
final class IperfTests {
    let pair: ServerPair

    init() throws {
        pair = try ServerPair("iperf")
        try pair.net.start(["iperf3", "-s", "--bind", "::"], in: pair.server)
        guard pair.waitForListener(":5201") else {
            throw TestNetwork.CommandFailed(command: ["iperf3", "-s"], status: 1, output: "iperf3 did not start")
        }
    }

    /// Runs iperf3 with `arguments` through Sluice and returns its JSON's "end" section.
    func iperf(_ arguments: String) throws -> [String: Any] {
        let r = try pair.exec("iperf3 -J \(arguments)", timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        guard let json = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any],
              let end = json["end"] as? [String: Any] else {
            Issue.record("no iperf3 JSON: \(r.stdout.prefix(400)) \(r.stderr)")
            return [:]
        }
        return end
    }

    func bitsPerSecond(_ end: [String: Any], _ key: String) -> Double {
        ((end[key] as? [String: Any])?["bits_per_second"] as? Double) ?? 0
    }

    @Test(arguments: ["10.88.0.2", "fd00:88::2"])
    func tcpBothWays(server: String) throws {
        let up = try iperf("-c \(server) -t 3")
        #expect(bitsPerSecond(up, "sum_received") > 100e6, "\(up)")
        let down = try iperf("-c \(server) -t 3 -R")
        #expect(bitsPerSecond(down, "sum_received") > 100e6, "\(down)")
    }

    @Test(arguments: ["10.88.0.2", "fd00:88::2"])
    func udpAt200MbitLosesUnderOnePercent(server: String) throws {
        // 1400-byte datagrams, as real UDP apps send: with the TUN's 64 KiB MTU iperf3 would
        // otherwise pick 32 KiB datagrams, which the 1500-byte link beyond Sluice must fragment.
        let end = try iperf("-c \(server) -u -b 200M -l 1400 -t 3")
        let sum = end["sum"] as? [String: Any] ?? [:]
        let lost = (sum["lost_percent"] as? Double) ?? 100
        let packets = (sum["packets"] as? Int) ?? 0
        #expect(packets > 10_000, "\(sum)")
        #expect(lost < 1.0, "\(sum)")
    }
}
