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

    /// UDP datagrams that reached the server namespace's UDP layer: taken
    /// by a socket (InDatagrams) or refused there (InErrors, which holds the
    /// drops for a full receive buffer), IPv4 and IPv6. /proc/net/snmp and
    /// snmp6 are per namespace.
    func udpArrivals() throws -> (arrived: Int, overflowed: Int) {
        let snmp = try pair.net.run(["cat", "/proc/net/snmp", "/proc/net/snmp6"], in: pair.server).output
        let lines = snmp.split(separator: "\n").map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init) }
        var counters: [String: Int] = [:]
        let udp = lines.filter { $0.first == "Udp:" }
        if udp.count == 2 {
            for (name, value) in zip(udp[0].dropFirst(), udp[1].dropFirst()) { counters["Udp" + name] = Int(value) }
        }
        for line in lines where line.count == 2 && line[0].hasPrefix("Udp6") { counters[line[0]] = Int(line[1]) }
        func sum(_ names: String...) -> Int { names.reduce(0) { $0 + (counters[$1] ?? 0) } }
        return (sum("UdpInDatagrams", "UdpInErrors", "Udp6InDatagrams", "Udp6InErrors"), sum("UdpRcvbufErrors", "Udp6RcvbufErrors"))
    }

    /// iperf3 counts every datagram that did not reach its server as lost,
    /// also those its own socket had no room for: on a loaded 2-core machine
    /// the receiving iperf3 falls behind now and then (with both cores busy,
    /// the kernel's own veth path lost up to 0.4% so, and through Sluice
    /// CI once saw 1.03%, every one of them in the receiver's socket buffer
    /// and none in the TUN). What must stay under 1% is the path's loss:
    /// the datagrams sent that never reached the server's UDP layer, which
    /// the server namespace's kernel counts. iperf3's figure is shown too.
    @Test(arguments: ["10.88.0.2", "fd00:88::2"])
    func udpAt200MbitLosesUnderOnePercent(server: String) throws {
        let before = try udpArrivals()
        // 1400-byte datagrams, as real UDP apps send: with the TUN's 64 KiB MTU iperf3 would
        // otherwise pick 32 KiB datagrams, which the 1500-byte link beyond Sluice must fragment.
        let end = try iperf("-c \(server) -u -b 200M -l 1400 -t 3")
        let after = try udpArrivals()
        let sum = end["sum"] as? [String: Any] ?? [:]
        let sent = (sum["packets"] as? Int) ?? 0
        let arrived = after.arrived - before.arrived
        let overflowed = after.overflowed - before.overflowed
        #expect(sent > 10_000, "\(sum)")
        // iperf3 opens a UDP test with one datagram of its own (its "connect"), not among `packets`.
        let pathLoss = Double(sent + 1 - arrived) / Double(max(sent, 1)) * 100
        #expect(pathLoss < 1.0, "the path lost \(pathLoss)%: \(sent) sent, \(arrived) reached the server (\(overflowed) of them dropped by its full socket buffer); iperf3: \(sum)")
    }
}
