import Foundation
import Testing
@testable import Capture

private let fin: UInt8 = 0x11, rst: UInt8 = 0x04, ack: UInt8 = 0x10

@Suite struct FlowPcapFilesTests {
    func write(_ files: FlowPcapFiles, _ packet: [UInt8], outbound: Bool, at time: UInt64 = 1_700_000_000_000_000_000) throws {
        try packet.withUnsafeBytes { try files.write($0, originalLength: packet.count, outbound: outbound, timestamp: time) }
    }

    func frames(_ path: String) throws -> [[UInt8]] {
        let reader = try PcapReader(path: path)
        var result: [[UInt8]] = []
        while let packet = try reader.next() { result.append(Array(packet.datagram)) }
        return result
    }

    @Test func bothDirectionsOfAFlowHaveOneKey() {
        func key(_ bytes: [UInt8], outbound: Bool) -> FlowPcapFiles.Key? {
            bytes.withUnsafeBytes { FlowPcapFiles.key(of: $0, outbound: outbound)?.0 }
        }
        let up = key(TestPacket.flowSegment(1, fromApp: true), outbound: false)
        let down = key(TestPacket.flowSegment(1, fromApp: false), outbound: true)
        #expect(up != nil && up == down)
        #expect(up?.appPort == 40001 && up?.remotePort == 80 && up?.transport == 6)
        #expect(key(TestPacket.flowSegment(2, fromApp: true), outbound: false) != up)
        let v6 = key(TestPacket.ipv6(.udp, id: 1, sourcePort: 5353, destinationPort: 53, payload: 4), outbound: false)
        #expect(v6?.transport == 17 && v6?.appPort == 5353 && v6?.remotePort == 53)
        #expect(v6.map { "\($0.app)" } == "fd00::1")
        // Not IP, or too short for its header: no flow.
        #expect(key([0x00, 1, 2, 3], outbound: false) == nil)
        #expect(key(Array(TestPacket.flowSegment(1, fromApp: true).prefix(19)), outbound: false) == nil)
        // A header cut before the ports (snaplen 20): the flow without ports.
        #expect(key(Array(TestPacket.flowSegment(1, fromApp: true).prefix(20)), outbound: false)?.appPort == 0)
        // A later fragment carries no ports.
        var fragment = TestPacket.flowSegment(1, fromApp: true)
        fragment[6] = 0x00; fragment[7] = 0x10
        #expect(key(fragment, outbound: false)?.appPort == 0)
    }

    @Test func eachFlowGetsItsFileAndTheFilesHoldExactlyItsPackets() throws {
        let dir = ScratchDirectory()
        let files = try FlowPcapFiles(directory: dir.path, snaplen: 65535)
        var expected: [UInt16: [[UInt8]]] = [:]
        for i in 0 ..< 60 {
            let flow = UInt16(i % 3), fromApp = i % 2 == 0
            let packet = TestPacket.flowSegment(flow, fromApp: fromApp, id: UInt16(i))
            try write(files, packet, outbound: !fromApp)
            expected[flow, default: []].append(packet)
        }
        try files.close()
        #expect(files.filesOpened == 3)
        for flow in UInt16(0) ..< 3 {
            let name = "00000\(flow + 1)-tcp-10.0.0.1.\(40000 + flow)-10.0.0.2.80.pcap"
            #expect(try frames(dir.file(name)) == expected[flow], "\(name)")
        }
    }

    @Test func aFlowsFileClosesAtItsEndAndALaterPacketStartsANewOne() throws {
        let dir = ScratchDirectory()
        let files = try FlowPcapFiles(directory: dir.path, snaplen: 65535)
        try write(files, TestPacket.flowSegment(1, fromApp: true, flags: 0x02), outbound: false)
        try write(files, TestPacket.flowSegment(1, fromApp: true, flags: fin), outbound: false)
        try write(files, TestPacket.flowSegment(1, fromApp: false, flags: fin), outbound: true)
        #expect(files.openCount == 1)
        try write(files, TestPacket.flowSegment(1, fromApp: true, flags: ack), outbound: false) // the last ACK ends it
        #expect(files.openCount == 0)
        try write(files, TestPacket.flowSegment(2, fromApp: true), outbound: false)
        try write(files, TestPacket.flowSegment(2, fromApp: false, flags: rst), outbound: true) // a RST ends it at once
        #expect(files.openCount == 0)
        try write(files, TestPacket.flowSegment(1, fromApp: true, flags: 0x02), outbound: false) // the same ports again
        try files.close()
        #expect(files.filesOpened == 3)
        #expect(try frames(dir.file("000001-tcp-10.0.0.1.40001-10.0.0.2.80.pcap")).count == 4)
        #expect(try frames(dir.file("000002-tcp-10.0.0.1.40002-10.0.0.2.80.pcap")).count == 2)
        #expect(try frames(dir.file("000003-tcp-10.0.0.1.40001-10.0.0.2.80.pcap")).count == 1)
    }

    @Test func theOpenFilesAreBoundedAndIdleOnesClose() throws {
        let dir = ScratchDirectory()
        let files = try FlowPcapFiles(directory: dir.path, snaplen: 65535, maximumOpen: 4, idleSeconds: 30)
        let t0: UInt64 = 1_700_000_000_000_000_000
        for flow in UInt16(0) ..< 10 {
            try write(files, TestPacket.flowSegment(flow, fromApp: true), outbound: false, at: t0 + UInt64(flow) * 1_000_000)
            #expect(files.openCount == min(Int(flow) + 1, 4))
        }
        // Flows 6...9 are open; 0 comes back and takes the place of the least recent, 6.
        try write(files, TestPacket.flowSegment(0, fromApp: true), outbound: false, at: t0 + 20_000_000)
        #expect(files.filesOpened == 11 && files.openCount == 4)
        try write(files, TestPacket.flowSegment(9, fromApp: true), outbound: false, at: t0 + 40_000_000_000)
        try files.flush(now: t0 + 41_000_000_000)
        #expect(files.openCount == 1) // only 9 wrote within 30 s
        try files.close()
        #expect(try frames(dir.file("000010-tcp-10.0.0.1.40009-10.0.0.2.80.pcap")).count == 2)
        #expect(try frames(dir.file("000011-tcp-10.0.0.1.40000-10.0.0.2.80.pcap")).count == 1)
    }

    @Test func aMissingFolderFailsAtOnceWithAHint() {
        #expect {
            _ = try FlowPcapFiles(directory: "/nonexistent-sluice-dir", snaplen: 65535)
        } throws: { error in
            "\(error)".contains("/nonexistent-sluice-dir") && "\(error)".contains("create it first")
        }
    }

    /// A folder no file can be made in fails at start-up too (it failed on the
    /// writer thread, said only in the exit summary, which -q hides).
    @Test func aFolderThatTakesNoFilesFailsAtOnce() {
        #expect {
            _ = try FlowPcapFiles(directory: "/proc/self", snaplen: 65535)
        } throws: { error in
            "\(error)".contains("/proc/self") && "\(error)".contains("cannot create files in it")
        }
    }

    /// Through the recorder: the whole file and the flow files hold the same packets.
    @Test func theRecorderWritesTheWholeCaptureAndTheFlowFiles() throws {
        let dir = ScratchDirectory()
        let folder = dir.file("flows")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let recorder = try PacketRecorder(path: dir.file("all.pcap"), perFlowDirectory: folder)
        for i in 0 ..< 40 { recorder.record(TestPacket.flowSegment(UInt16(i % 4), fromApp: i % 3 != 0, id: UInt16(i)), outbound: i % 3 == 0) }
        let statistics = recorder.close()
        #expect(statistics.packetsCaptured == 40 && statistics.flowFilesOpened == 4)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        #expect(names.count == 4)
        let split = try names.reduce(0) { $0 + (try frames(folder + "/" + $1)).count }
        #expect(split == 40)
        #expect(try frames(dir.file("all.pcap")).count == 40)
        // Per-flow files alone, without a whole capture.
        let only = try PacketRecorder(path: nil, perFlowDirectory: folder)
        #expect(only.close().packetsCaptured == 0)
        #expect(throws: CaptureError.self) { _ = try PacketRecorder(path: nil) }
    }
}
