import Foundation
import Testing
import Wire
@testable import Capture

private func flow(_ n: UInt16) -> CaptureFlow {
    CaptureFlow(transport: 6, app: IPAddress("10.0.0.1")!, appPort: 40000 + n, remote: IPAddress("10.0.0.2")!, remotePort: 80)
}

private let syn: UInt8 = 0x02

/// `capture` rules: packets wait until their flow's fate is known.
@Suite struct FlowSelectionTests {
    final class Sink {
        var written: [[UInt8]] = []
    }

    func offer(_ selection: FlowSelection, _ packet: [UInt8], outbound: Bool, to sink: Sink, at time: UInt64 = 1_000) {
        packet.withUnsafeBytes { bytes in
            selection.offer(bytes, originalLength: packet.count, outbound: outbound, timestamp: time) { b, _, _, _ in
                sink.written.append(Array(b))
            }
        }
    }

    func select(_ selection: FlowSelection, _ flow: CaptureFlow, keep: Bool, to sink: Sink) {
        selection.select(flow, keep: keep, timestamp: 2_000) { b, _, _, _ in sink.written.append(Array(b)) }
    }

    @Test func aKeptFlowsHeldPacketsComeOutInOrderAndTheRestFollow() {
        let selection = FlowSelection()
        let sink = Sink()
        let early = [TestPacket.flowSegment(1, fromApp: true, flags: syn, id: 1), TestPacket.flowSegment(1, fromApp: false, flags: 0x12, id: 2), TestPacket.flowSegment(1, fromApp: true, id: 3)]
        offer(selection, early[0], outbound: false, to: sink)
        offer(selection, early[1], outbound: true, to: sink)
        offer(selection, early[2], outbound: false, to: sink)
        #expect(sink.written.isEmpty)
        #expect(selection.heldTotal == early.reduce(0) { $0 + $1.count })
        select(selection, flow(1), keep: true, to: sink)
        #expect(sink.written == early)
        #expect(selection.heldTotal == 0)
        let later = TestPacket.flowSegment(1, fromApp: false, id: 4)
        offer(selection, later, outbound: true, to: sink)
        #expect(sink.written == early + [later])
        #expect(selection.packetsLeftOut == 0)
    }

    @Test func aFlowNoCaptureRuleChoseIsLeftOutWholly() {
        let selection = FlowSelection()
        let sink = Sink()
        offer(selection, TestPacket.flowSegment(2, fromApp: true, flags: syn), outbound: false, to: sink)
        offer(selection, TestPacket.flowSegment(2, fromApp: false, flags: 0x12), outbound: true, to: sink)
        select(selection, flow(2), keep: false, to: sink)
        offer(selection, TestPacket.flowSegment(2, fromApp: true), outbound: false, to: sink)
        #expect(sink.written.isEmpty)
        #expect(selection.packetsLeftOut == 3)
        #expect(selection.heldTotal == 0)
    }

    @Test func flowsAreSelectedApartAndBothDirectionsCount() {
        let selection = FlowSelection()
        let sink = Sink()
        let a = TestPacket.flowSegment(3, fromApp: true, flags: syn), b = TestPacket.flowSegment(4, fromApp: true, flags: syn)
        offer(selection, a, outbound: false, to: sink)
        offer(selection, b, outbound: false, to: sink)
        select(selection, flow(4), keep: true, to: sink)
        select(selection, flow(3), keep: false, to: sink)
        let reply = TestPacket.flowSegment(4, fromApp: false, flags: 0x12)
        offer(selection, reply, outbound: true, to: sink)
        #expect(sink.written == [b, reply])
    }

    /// A port used again after its flow ended starts over: the old verdict
    /// does not carry to the new connection's SYN.
    @Test func aNewSynFromTheAppStartsTheFlowAnew() {
        let selection = FlowSelection()
        let sink = Sink()
        offer(selection, TestPacket.flowSegment(5, fromApp: true, flags: syn), outbound: false, to: sink)
        select(selection, flow(5), keep: true, to: sink)
        #expect(sink.written.count == 1)
        let again = TestPacket.flowSegment(5, fromApp: true, flags: syn, id: 9)
        offer(selection, again, outbound: false, to: sink)
        #expect(sink.written.count == 1)             // held: its fate is not known yet
        select(selection, flow(5), keep: false, to: sink)
        #expect(selection.packetsLeftOut == 1)
    }

    @Test func heldPacketsAreBoundedAndUndecidedFlowsAreForgotten() {
        let selection = FlowSelection(idleSeconds: 1)
        let sink = Sink()
        let packet = TestPacket.flowSegment(6, fromApp: true, id: 1)
        let fits = FlowSelection.maximumHeldPerFlow / packet.count
        for _ in 0 ..< fits + 5 { offer(selection, packet, outbound: false, to: sink) }
        #expect(selection.packetsLeftOut == 5)
        #expect(selection.heldTotal == fits * packet.count)
        // A DNS query Sluice answers itself never gets a verdict: after a
        // second without a packet its flow is forgotten, and what it held left out.
        selection.sweep(now: 1_000 + 999_999_999) { _, _, _, _ in }
        #expect(selection.flowCount == 1)
        selection.sweep(now: 1_000 + 1_000_000_000) { _, _, _, _ in }
        #expect(selection.flowCount == 0 && selection.heldTotal == 0)
        #expect(selection.packetsLeftOut == 5 + fits)
        // Not IP: no flow to choose, so not captured.
        offer(selection, [0x00, 1, 2, 3], outbound: false, to: sink)
        #expect(selection.packetsLeftOut == 6 + fits && sink.written.isEmpty)
    }

    @Test func aSelectionRoundTripsThroughItsRecordBytes() {
        let flows = [flow(7), CaptureFlow(transport: 17, app: IPAddress("fd00::1")!, appPort: 5353,
                                          remote: IPAddress("fd00:233::53")!, remotePort: 53)]
        for original in flows {
            for keep in [true, false] {
                var bytes = [UInt8](repeating: 0xee, count: CaptureFlow.selectionSize)
                bytes.withUnsafeMutableBytes { original.encodeSelection(keep: keep, into: $0) }
                let decoded = bytes.withUnsafeBytes { CaptureFlow.decodeSelection($0) }
                #expect(decoded?.flow == original && decoded?.keep == keep)
            }
        }
    }

    /// A kept flow's packets do not overtake an undecided flow's older ones:
    /// the file's timestamps never step back when the undecided flow is kept.
    @Test func keptPacketsWaitBehindAnUndecidedFlowsOlderOnes() {
        let selection = FlowSelection()
        let sink = Sink()
        var times: [UInt64] = []
        func offer(_ packet: [UInt8], at time: UInt64) {
            packet.withUnsafeBytes { bytes in
                selection.offer(bytes, originalLength: packet.count, outbound: false, timestamp: time) { b, _, _, t in
                    sink.written.append(Array(b)); times.append(t)
                }
            }
        }
        func select(_ n: UInt16, keep: Bool) {
            selection.select(flow(n), keep: keep, timestamp: 0) { b, _, _, t in sink.written.append(Array(b)); times.append(t) }
        }
        let k1 = TestPacket.flowSegment(1, fromApp: true, flags: syn, id: 1)
        offer(k1, at: 100)
        select(1, keep: true)                       // flow 1 kept: written at once
        #expect(sink.written == [k1])
        let p1 = TestPacket.flowSegment(2, fromApp: true, flags: syn, id: 2)
        offer(p1, at: 200)                          // flow 2 undecided, holding from 200
        let k2 = TestPacket.flowSegment(1, fromApp: true, id: 3)
        offer(k2, at: 300)                          // younger than 200: waits
        let p2 = TestPacket.flowSegment(2, fromApp: true, id: 4)
        offer(p2, at: 400)
        let k3 = TestPacket.flowSegment(1, fromApp: true, id: 5)
        offer(k3, at: 500)
        #expect(sink.written == [k1])
        #expect(selection.queuedBytes == k2.count + k3.count)
        select(2, keep: true)                       // everything in time order
        #expect(sink.written == [k1, p1, k2, p2, k3])
        #expect(times == [100, 200, 300, 400, 500])
        #expect(selection.queuedBytes == 0)

        // A flow left out lets the queue go; one undecided for longer than the
        // patience stops holding the others back.
        let p3 = TestPacket.flowSegment(3, fromApp: true, flags: syn, id: 6)
        offer(p3, at: 600)
        let k4 = TestPacket.flowSegment(1, fromApp: true, id: 7)
        offer(k4, at: 700)
        select(3, keep: false)
        #expect(sink.written == [k1, p1, k2, p2, k3, k4])
        let p4 = TestPacket.flowSegment(4, fromApp: true, flags: syn, id: 8)
        offer(p4, at: 800)
        let k5 = TestPacket.flowSegment(1, fromApp: true, id: 9)
        offer(k5, at: 900)
        selection.sweep(now: 800 + selection.orderPatienceNanoseconds - 1) { b, _, _, _ in sink.written.append(Array(b)) }
        #expect(sink.written.count == 6)
        selection.sweep(now: 800 + selection.orderPatienceNanoseconds) { b, _, _, _ in sink.written.append(Array(b)) }
        #expect(sink.written.last == k5)
        // Flow 4 kept after all, late: its packet comes out of order, as before this queue existed.
        select(4, keep: true)
        #expect(sink.written.last == p4)
    }

    /// Many undecided flows, decided oldest first while kept packets stream:
    /// each verdict lets out a part of a long queue, in time order, to the end.
    @Test func aLongQueueGoesOutInPartsAndInOrder() {
        let selection = FlowSelection()
        var times: [UInt64] = []
        let write: FlowSelection.Write = { _, _, _, t in times.append(t) }
        func offer(_ packet: [UInt8], _ t: UInt64) {
            packet.withUnsafeBytes { selection.offer($0, originalLength: packet.count, outbound: false, timestamp: t, write: write) }
        }
        offer(TestPacket.flowSegment(0, fromApp: true, flags: syn, id: 1), 1)
        selection.select(flow(0), keep: true, timestamp: 1, write: write)
        var t: UInt64 = 10
        for n in UInt16(1) ... 20 {
            offer(TestPacket.flowSegment(n, fromApp: true, flags: syn, id: n), t); t += 1
            for _ in 0 ..< 300 { offer(TestPacket.flowSegment(0, fromApp: true, id: 0), t); t += 1 }
        }
        #expect(times == [1])
        for n in UInt16(1) ... 20 {
            selection.select(flow(n), keep: n % 2 == 0, timestamp: t, write: write)
            #expect(times.count > 1 + 301 * Int(n - 1) / 2 - 20, "verdict \(n) let nothing out")
        }
        // Everything out, none twice, in time order: 1 + 20 × 300 kept packets and the 10 kept SYNs.
        #expect(times.count == 1 + 20 * 300 + 10)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
        #expect(selection.queuedBytes == 0)
    }

    /// Seeded random runs against a plain model: exactly the packets of the
    /// flows (connections: a SYN starts a new one) whose verdict was "keep"
    /// are written, each once, and in time order, since every verdict comes
    /// within the patience.
    @Test func randomRunsWriteExactlyTheKeptFlowsInTimeOrder() {
        var state: UInt64 = 21
        func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(state >> 33) % n
        }
        for run in 0 ..< 40 {
            let selection = FlowSelection()
            var written: [UInt16] = []
            var times: [UInt64] = []
            let write: FlowSelection.Write = { bytes, _, _, t in
                written.append(UInt16(bytes[4]) << 8 | UInt16(bytes[5])) // the IP identification: the packet's id
                times.append(t)
            }
            var generation = [Int](repeating: 0, count: 6)      // per flow: its current connection
            var decided = [[Int: Bool]](repeating: [:], count: 6) // per flow: connection → keep
            var packets: [(id: UInt16, flow: Int, connection: Int)] = []
            var t: UInt64 = 1_000
            var id: UInt16 = 0
            for _ in 0 ..< 300 {
                let f = next(6)
                switch next(10) {
                case 0 ..< 6:
                    id += 1; t += UInt64(1 + next(5))
                    let opening = next(8) == 0
                    if opening { generation[f] += 1 }
                    let packet = TestPacket.flowSegment(UInt16(f), fromApp: true, flags: opening ? syn : 0x10, id: id)
                    packet.withUnsafeBytes { selection.offer($0, originalLength: packet.count, outbound: false, timestamp: t, write: write) }
                    packets.append((id, f, generation[f]))
                case 6 ..< 9:
                    guard decided[f][generation[f]] == nil else { continue }
                    let keep = next(2) == 0
                    decided[f][generation[f]] = keep
                    selection.select(flow(UInt16(f)), keep: keep, timestamp: t, write: write)
                default:
                    selection.sweep(now: t, write: write) // well within the patience and the idle time
                }
            }
            selection.finish(write: write)
            let expected = packets.filter { decided[$0.flow][$0.connection] == true }.map(\.id)
            #expect(written.sorted() == expected.sorted(), "run \(run)")
            #expect(Set(written).count == written.count, "run \(run): a packet written twice")
            #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 }, "run \(run): out of time order")
            #expect(selection.queuedBytes == 0 && selection.heldTotal == 0)
        }
    }

    /// The queue is bounded: past it, the oldest go out without waiting.
    @Test func theQueueIsBounded() {
        let selection = FlowSelection()
        var written = 0
        let write: FlowSelection.Write = { _, _, _, _ in written += 1 }
        let keptSyn = TestPacket.flowSegment(1, fromApp: true, flags: syn, id: 1)
        keptSyn.withUnsafeBytes { selection.offer($0, originalLength: keptSyn.count, outbound: false, timestamp: 1, write: write) }
        selection.select(flow(1), keep: true, timestamp: 1, write: write)
        let pending = TestPacket.flowSegment(2, fromApp: true, flags: syn, id: 2)
        pending.withUnsafeBytes { selection.offer($0, originalLength: pending.count, outbound: false, timestamp: 2, write: write) }
        let big = TestPacket.flowSegment(1, fromApp: true, id: 3, payload: 60_000)
        let count = FlowSelection.maximumQueued / big.count + 10
        for i in 0 ..< count {
            big.withUnsafeBytes { selection.offer($0, originalLength: big.count, outbound: false, timestamp: UInt64(10 + i), write: write) }
        }
        #expect(selection.queuedBytes <= FlowSelection.maximumQueued)
        #expect(written >= 1 + 10)
    }

    /// Through the recorder: the whole capture and the per-flow files hold
    /// only the chosen flow, its early packets included.
    @Test func theRecorderWritesOnlyTheChosenFlows() throws {
        let dir = ScratchDirectory()
        let folder = dir.file("flows")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let recorder = try PacketRecorder(path: dir.file("all.pcap"), perFlowDirectory: folder, selectsFlows: true)
        #expect(recorder.selectsFlows)
        var kept: [[UInt8]] = []
        for n in UInt16(0) ..< 4 {
            let first = TestPacket.flowSegment(n, fromApp: true, flags: syn, id: n)
            recorder.record(first, outbound: false)
            if n % 2 == 0 { kept.append(first) }
        }
        for n in UInt16(0) ..< 4 { recorder.select(flow(n), keep: n % 2 == 0) }
        for n in UInt16(0) ..< 4 {
            let reply = TestPacket.flowSegment(n, fromApp: false, flags: 0x12, id: 100 + n)
            recorder.record(reply, outbound: true)
            if n % 2 == 0 { kept.append(reply) }
        }
        let statistics = recorder.close()
        #expect(statistics.packetsCaptured == 4)
        #expect(statistics.packetsNotSelected == 4)
        #expect(statistics.flowFilesOpened == 2)
        let reader = try PcapReader(path: dir.file("all.pcap"))
        var frames: [[UInt8]] = []
        while let packet = try reader.next() { frames.append(Array(packet.datagram)) }
        #expect(frames == kept)
        #expect(statistics.description.contains("4 left out of flows no capture rule chose"))
    }

    /// A reload turns selection on and off in the middle of a capture: packets
    /// before the switch follow the old way, after it the new one; turning it
    /// off writes what undecided flows held, oldest first.
    @Test func selectionTurnsOnAndOffBetweenPackets() throws {
        let dir = ScratchDirectory()
        let recorder = try PacketRecorder(path: dir.file("all.pcap"))
        #expect(!recorder.selectsFlows)
        let a = TestPacket.flowSegment(0, fromApp: true, flags: syn, id: 1)
        recorder.record(a, outbound: false, timestamp: 1_000)      // kept: every flow is
        #expect(recorder.setSelectsFlows(true))
        #expect(recorder.selectsFlows)
        let b = TestPacket.flowSegment(1, fromApp: true, flags: syn, id: 2)
        let c = TestPacket.flowSegment(2, fromApp: true, flags: syn, id: 3)
        let a2 = TestPacket.flowSegment(0, fromApp: false, flags: 0x10, id: 4)
        recorder.record(b, outbound: false, timestamp: 2_000)      // held: flow 1 undecided
        recorder.record(c, outbound: false, timestamp: 3_000)      // left out: flow 2 is
        recorder.select(flow(2), keep: false)
        recorder.select(flow(0), keep: true)
        recorder.record(a2, outbound: true, timestamp: 4_000)      // kept (flow 0 chosen again), behind flow 1's older packet
        let b2 = TestPacket.flowSegment(1, fromApp: true, flags: 0x10, id: 5)
        recorder.record(b2, outbound: false, timestamp: 5_000)     // held
        #expect(recorder.setSelectsFlows(false))
        let c2 = TestPacket.flowSegment(2, fromApp: true, flags: 0x10, id: 6)
        recorder.record(c2, outbound: false, timestamp: 6_000)     // kept: selection is off
        let statistics = recorder.close()
        let reader = try PcapReader(path: dir.file("all.pcap"))
        var frames: [[UInt8]] = []
        while let packet = try reader.next() { frames.append(Array(packet.datagram)) }
        // In time order: flow 1's held packet (2,000) before flow 0's kept one (4,000).
        #expect(frames == [a, b, a2, b2, c2])
        #expect(statistics.packetsCaptured == 5)
        #expect(statistics.packetsNotSelected == 1)
        // Asking for the mode it is in changes nothing and costs no record.
        let again = try PacketRecorder(path: dir.file("again.pcap"), selectsFlows: true)
        #expect(again.setSelectsFlows(true))
        _ = again.close()
        #expect(!again.setSelectsFlows(false)) // closed
    }
}
