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
        selection.sweep(now: 1_000 + 999_999_999)
        #expect(selection.flowCount == 1)
        selection.sweep(now: 1_000 + 1_000_000_000)
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
        recorder.record(a2, outbound: true, timestamp: 4_000)      // kept: flow 0 chosen again
        let b2 = TestPacket.flowSegment(1, fromApp: true, flags: 0x10, id: 5)
        recorder.record(b2, outbound: false, timestamp: 5_000)     // held
        #expect(recorder.setSelectsFlows(false))
        let c2 = TestPacket.flowSegment(2, fromApp: true, flags: 0x10, id: 6)
        recorder.record(c2, outbound: false, timestamp: 6_000)     // kept: selection is off
        let statistics = recorder.close()
        let reader = try PcapReader(path: dir.file("all.pcap"))
        var frames: [[UInt8]] = []
        while let packet = try reader.next() { frames.append(Array(packet.datagram)) }
        #expect(frames == [a, a2, b, b2, c2])
        #expect(statistics.packetsCaptured == 5)
        #expect(statistics.packetsNotSelected == 1)
        // Asking for the mode it is in changes nothing and costs no record.
        let again = try PacketRecorder(path: dir.file("again.pcap"), selectsFlows: true)
        #expect(again.setSelectsFlows(true))
        _ = again.close()
        #expect(!again.setSelectsFlows(false)) // closed
    }
}
