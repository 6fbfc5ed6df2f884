import Foundation
import Sys
import TestSupport
import Testing
@testable import Capture

/// The recorder fed what a real TUN hands us, next to tcpdump listening on the
/// same TUN: both files must hold the same datagrams, with the same link type.
@Suite(.serialized, .enabled(if: TestNetwork.isRoot && Tool.has("tcpdump") && Tool.hasTshark, "needs root, tcpdump and tshark"))
struct TunCaptureTests {
    @Test func whatCrossesTheTunIsWhatTcpdumpSees() throws {
        let network = TestNetwork("tunc")
        defer { network.destroy() }
        let ns = try network.namespace("a")
        let namespace = try NetworkNamespace(named: ns)
        let (raw, name): (Int32, String) = try namespace.run {
            let tun = try TunDevice(name: "cap%d")
            let name = tun.name
            return (tun.releaseDescriptor(), name)
        }
        let tun = TunDevice(adopting: raw, name: name)
        try network.run(["ip", "-n", ns, "link", "set", name, "up"])
        try network.address(ns, name, "10.78.0.1/24")
        try network.address(ns, name, "fd00:78::1/64")

        let dir = ScratchDirectory()
        let reference = dir.file("tcpdump.pcap"), ours = dir.file("sluice.pcap")
        let log = reference + ".log"
        let tcpdump = try network.start(["tcpdump", "-n", "--immediate-mode", "-U", "-i", name, "-w", reference], in: ns, log: log)
        try #require(TestNetwork.waitUntil(seconds: 10) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("listening on")
        }, "tcpdump did not start")

        let recorder = try PacketRecorder(path: ours)
        // Nobody answers: each ping sends its three requests and gives up.
        try network.start(["ping", "-n", "-c", "3", "-i", "0.2", "-W", "1", "10.78.0.2"], in: ns)
        try network.start(["ping", "-6", "-n", "-c", "3", "-i", "0.2", "-W", "1", "fd00:78::2"], in: ns)

        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
        defer { buffer.deallocate() }
        func drain() throws {
            for _ in 0 ..< 10_000 {
                guard case let .value(count) = try tun.read(into: buffer) else { return }
                recorder.record(UnsafeRawBufferPointer(rebasing: buffer[0 ..< count]), outbound: true)
            }
        }
        let until = ContinuousClock.now + .milliseconds(1200)
        while ContinuousClock.now < until {
            try drain()
            usleep(2000)
        }
        // tcpdump stops first; whatever it saw is already queued on the TUN.
        tcpdump.terminate(graceMilliseconds: 3000)
        try drain()
        let statistics = recorder.close()
        #expect(statistics.packetsDropped == 0)

        let (theirs, mine) = (try readAll(reference), try readAll(ours))
        #expect(theirs.reader.linkType == .raw)
        #expect(Array(fileBytes(reference)[20 ..< 24]) == Array(fileBytes(ours)[20 ..< 24]))
        // Ours holds everything tcpdump saw, in the same order, as one run;
        // around it there may be a packet sent before tcpdump listened (the
        // TUN queued it) or after it stopped (a router solicitation).
        try #require(theirs.datagrams.count >= 6)
        let start = try #require(mine.datagrams.firstIndex(of: theirs.datagrams[0]), "tcpdump's first packet is not in ours")
        let aligned = Array(mine.datagrams.dropFirst(start).prefix(theirs.datagrams.count))
        #expect(aligned == theirs.datagrams)
        #expect(mine.datagrams.count - theirs.datagrams.count <= 4)
        #expect(try Tool.tsharkFrameCount(ours, filter: "icmp.type == 8") == 3)
        #expect(try Tool.tsharkFrameCount(ours, filter: "icmpv6.type == 128") == 3)
        // The two clocks read the same moments: timestamps within 100 ms.
        for (a, b) in zip(theirs.timestamps, mine.timestamps.dropFirst(start)) {
            #expect(a.distance(to: b).magnitude < 100_000_000)
        }
    }
}
