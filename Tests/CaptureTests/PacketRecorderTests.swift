import Foundation
import Testing
@testable import Capture

extension PacketRecorder {
    func record(_ bytes: [UInt8], outbound: Bool = false) {
        bytes.withUnsafeBytes { record($0, outbound: outbound) }
    }

    func record(_ bytes: [UInt8], outbound: Bool = false, timestamp: UInt64) {
        bytes.withUnsafeBytes { record($0, outbound: outbound, timestamp: timestamp) }
    }
}

@Suite struct PacketRecorderTests {
    @Test(.enabled(if: Tool.hasTshark, Tool.tsharkMissing))
    func everyPacketBecomesAFrameOfRawIP() throws {
        let dir = ScratchDirectory()
        let path = dir.file("tun.pcap")
        let recorder = try PacketRecorder(path: path)
        var lengths: [Int] = []
        for i in 0 ..< 300 {
            let packet = TestPacket.mixed(i, payload: (i * 37) % 1400).bytes
            lengths.append(packet.count)
            recorder.record(packet, outbound: i % 2 == 0)
        }
        let statistics = recorder.close()
        #expect(statistics.packetsRecorded == 300)
        #expect(statistics.packetsCaptured == 300)
        #expect(statistics.packetsDropped == 0)
        #expect(statistics.failure == nil)

        // The file header: microsecond magic, then LINKTYPE_RAW (101), not DLT_RAW (12).
        let header = fileBytes(path)
        try #require(header.count >= 24)
        #expect(Array(header[0 ..< 4]) == [0xd4, 0xc3, 0xb2, 0xa1])
        #expect(Array(header[20 ..< 24]) == [101, 0, 0, 0])
        #expect(Array(header[16 ..< 20]) == [0xff, 0xff, 0, 0])

        let frames = try Tool.tsharkFields(path, ["frame.len", "frame.protocols", "ip.id", "ipv6.flow"])
        #expect(frames.count == 300)
        #expect(frames.map { Int($0[0]) } == lengths.map { Optional($0) })
        for (i, frame) in frames.enumerated() {
            // tshark decodes the first layer as raw IP ("raw:ip:..." or "raw:ipv6:...").
            #expect(frame[1].hasPrefix("raw:ip"), "frame \(i + 1): \(frame[1])")
            if frame[1].hasPrefix("raw:ipv6") {
                #expect(Int(frame[3].dropFirst(2), radix: 16) == i, "frame \(i + 1) flow label")
            } else {
                #expect(Int(frame[2].dropFirst(2), radix: 16) == i, "frame \(i + 1) ip.id")
            }
        }
    }

    @Test(.enabled(if: Tool.hasTshark, Tool.tsharkMissing))
    func bpfFilterKeepsExactlyTCPPort80() throws {
        let dir = ScratchDirectory()
        let path = dir.file("tun.pcap")
        let recorder = try PacketRecorder(path: path, filter: "tcp port 80")
        var expected: [Int] = []
        for i in 0 ..< 240 {
            let (packet, kind) = TestPacket.mixed(i, payload: i % 300)
            if kind == .v4tcp80 || kind == .v6tcp80 { expected.append(i) }
            recorder.record(packet)
        }
        let statistics = recorder.close()
        #expect(statistics.packetsCaptured == expected.count)
        #expect(statistics.packetsFilteredOut == 240 - expected.count)
        #expect(try Tool.tsharkFrameCount(path) == expected.count)
        // tshark's own reading of the same question agrees frame by frame.
        #expect(try Tool.tsharkFrameCount(path, filter: "tcp.port == 80") == expected.count)
        let ids = try Tool.tsharkFields(path, ["ip.id", "ipv6.flow"]).map { frame in
            Int((frame[0].isEmpty ? frame[1] : frame[0]).dropFirst(2), radix: 16)
        }
        #expect(ids == expected.map { Optional($0) })
    }

    @Test func badFilterFailsAtOnceWithLibpcapsReason() throws {
        let dir = ScratchDirectory()
        #expect {
            _ = try PacketRecorder(path: dir.file("tun.pcap"), filter: "tcp port eighty")
        } throws: { error in
            guard case let .badFilter(expression, reason) = error as? CaptureError else { return false }
            let text = (error as! CaptureError).description
            return expression == "tcp port eighty" && !reason.isEmpty
                && text.hasPrefix("bad capture filter 'tcp port eighty': ")
        }
        #expect(throws: CaptureError.self) { _ = try PcapFilter("port 99999") }
        #expect(throws: CaptureError.self) { _ = try PcapFilter("(tcp") }
        let filter = try PcapFilter("udp")
        let udp = TestPacket.ipv4(.udp, id: 1, destinationPort: 53, payload: 4)
        let tcp = TestPacket.ipv4(.tcp, id: 1, destinationPort: 53, payload: 4)
        #expect(udp.withUnsafeBytes { filter.matches($0) })
        #expect(!tcp.withUnsafeBytes { filter.matches($0) })
    }

    @Test func unwritablePathFailsAtOnce() {
        #expect {
            _ = try PacketRecorder(path: "/nonexistent-sluice-dir/tun.pcap")
        } throws: { error in
            guard case let .cannotOpen(path, reason) = error as? CaptureError else { return false }
            return path == "/nonexistent-sluice-dir/tun.pcap" && reason.contains("No such file")
        }
        #expect(throws: CaptureError.self) { _ = try PacketRecorder(path: "/tmp/x.pcap", snaplen: 0) }
        #expect(throws: CaptureError.self) { _ = try PacketRecorder(path: "/tmp/x.pcap", snaplen: 9000, ringCapacity: 4096) }
    }

    @Test(.enabled(if: Tool.hasTshark, Tool.tsharkMissing))
    func snaplenCutsPacketsAndKeepsTheirLength() throws {
        let dir = ScratchDirectory()
        let path = dir.file("tun.pcap")
        let recorder = try PacketRecorder(path: path, snaplen: 64)
        let sizes = [20 + 20 + 10, 20 + 20 + 24, 20 + 20 + 25, 20 + 20 + 500, 20 + 8 + 1400]
        for (i, size) in sizes.enumerated() {
            recorder.record(TestPacket.ipv4(i == 4 ? .udp : .tcp, id: UInt16(i), destinationPort: 80, payload: size - (i == 4 ? 28 : 40)))
        }
        #expect(recorder.close().packetsCaptured == sizes.count)
        let header = fileBytes(path)
        #expect(Array(header[16 ..< 20]) == [64, 0, 0, 0])
        let frames = try Tool.tsharkFields(path, ["frame.cap_len", "frame.len"])
        #expect(frames.map { Int($0[0])! } == sizes.map { min($0, 64) })
        #expect(frames.map { Int($0[1])! } == sizes)
        // The filter sees the cut packet but the real length: `greater 100` keeps the long ones.
        let filtered = dir.file("filtered.pcap")
        let long = try PacketRecorder(path: filtered, snaplen: 64, filter: "greater 100")
        for (i, size) in sizes.enumerated() {
            long.record(TestPacket.ipv4(i == 4 ? .udp : .tcp, id: UInt16(i), destinationPort: 80, payload: size - (i == 4 ? 28 : 40)))
        }
        #expect(long.close().packetsCaptured == 2)
        #expect(try Tool.tsharkFrameCount(filtered) == 2)
    }

    @Test(.enabled(if: Tool.hasTshark, Tool.tsharkMissing))
    func rotationKeepsTheNewestFilesUnderTheSize() throws {
        let dir = ScratchDirectory()
        let path = dir.file("tun.pcap")
        // 100-byte packets are 116-byte records: 8 fit after the 24-byte header in 1000 bytes.
        let recorder = try PacketRecorder(path: path, rotateSize: 1000, rotateCount: 3)
        for i in 0 ..< 50 {
            recorder.record(TestPacket.ipv4(.udp, id: UInt16(i), destinationPort: 9, payload: 72))
        }
        let statistics = recorder.close()
        #expect(statistics.packetsCaptured == 50)
        #expect(statistics.filesRotated == 6)
        #expect(fileExists(path) && fileExists(path + ".1") && fileExists(path + ".2"))
        #expect(!fileExists(path + ".3"))
        #expect(fileSize(path) == 24 + 2 * 116)
        #expect(fileSize(path + ".1") == 24 + 8 * 116)
        #expect(fileSize(path + ".2") == 24 + 8 * 116)
        func ids(_ file: String) throws -> [Int] {
            try Tool.tsharkFields(file, ["ip.id"]).map { Int($0[0].dropFirst(2), radix: 16)! }
        }
        // The newest packets are in tun.pcap, the oldest kept in tun.pcap.2.
        #expect(try ids(path) == [48, 49])
        #expect(try ids(path + ".1") == Array(40 ..< 48))
        #expect(try ids(path + ".2") == Array(32 ..< 40))
    }

    @Test func rotationWithoutACountKeepsEveryFile() throws {
        let dir = ScratchDirectory()
        let path = dir.file("tun.pcap")
        let recorder = try PacketRecorder(path: path, rotateSize: 1000)
        for i in 0 ..< 20 {
            recorder.record(TestPacket.ipv4(.udp, id: UInt16(i), destinationPort: 9, payload: 72))
        }
        #expect(recorder.close().filesRotated == 2)
        #expect([path, path + ".1", path + ".2"].map(fileSize) == [24 + 4 * 116, 24 + 8 * 116, 24 + 8 * 116])
        #expect(!fileExists(path + ".3"))
        // rotateCount 1 keeps only the file being written.
        let single = dir.file("one.pcap")
        let one = try PacketRecorder(path: single, rotateSize: 1000, rotateCount: 1)
        for i in 0 ..< 20 {
            one.record(TestPacket.ipv4(.udp, id: UInt16(i), destinationPort: 9, payload: 72))
        }
        #expect(one.close().filesRotated == 2)
        #expect(fileSize(single) == 24 + 4 * 116)
        #expect(!fileExists(single + ".1"))
        #expect(throws: CaptureError.self) { _ = try PacketRecorder(path: dir.file("bad.pcap"), rotateSize: 30) }
        #expect(throws: CaptureError.self) { _ = try PacketRecorder(path: dir.file("bad.pcap"), rotateSize: 1000, rotateCount: 0) }
    }

    @Test func aFullRingDropsAndCountsInsteadOfBlocking() throws {
        let dir = ScratchDirectory()
        let path = dir.file("tun.pcap")
        let gate = WriterGate()
        // A 4096-byte ring of 128-byte records (24-byte header + 100 bytes, aligned to 8) holds 32.
        let recorder = try PacketRecorder(
            path: path, snaplen: 200, ringCapacity: 4096,
            hooks: .init(writerWillDrain: { gate.pass() })
        )
        let packet = TestPacket.ipv4(.udp, id: 0, destinationPort: 9, payload: 72)
        #expect(packet.count == 100)
        let start = ContinuousClock.now
        for _ in 0 ..< 5000 { recorder.record(packet) }
        let elapsed = ContinuousClock.now - start
        // The writer is stalled: had record() waited for it, this would take the gate's 20 s.
        #expect(elapsed < .seconds(2), "record() took \(elapsed) with the writer stalled")
        var statistics = recorder.statistics
        #expect(statistics.packetsRecorded == 5000)
        #expect(statistics.packetsDropped == 5000 - 32)
        #expect(statistics.packetsCaptured == 0)

        gate.open()
        // Once the writer catches up, the ring takes packets again.
        let deadline = ContinuousClock.now + .seconds(10)
        while recorder.statistics.packetsCaptured < 32, ContinuousClock.now < deadline { usleep(1000) }
        for _ in 0 ..< 10 { recorder.record(packet) }
        statistics = recorder.close()
        #expect(statistics.packetsCaptured == 42)
        #expect(statistics.packetsDropped == 5000 - 32)
        #expect(statistics.packetsRecorded == statistics.packetsCaptured + statistics.packetsDropped)
        #expect(fileSize(path) == 24 + 42 * 116)
        if Tool.hasTshark { #expect(try Tool.tsharkFrameCount(path) == 42) }
    }

    @Test func packetsOfEverySizeSurviveTheRingsWrapAround() throws {
        let dir = ScratchDirectory()
        let path = dir.file("tun.pcap")
        let recorder = try PacketRecorder(path: path, snaplen: 600, ringCapacity: 4096)
        var sent: [[UInt8]] = []
        var generator = SystemRandomNumberGenerator()
        for i in 0 ..< 3000 {
            let payload = Int.random(in: 0 ... 560, using: &generator)
            let packet = TestPacket.ipv4(.udp, id: UInt16(i), destinationPort: 9, payload: payload)
            sent.append(packet)
            recorder.record(packet, timestamp: 1_700_000_000_000_000_000 + UInt64(i) * 1_000_000)
            // Give the writer a chance now and then, so both full and wrapping rings happen.
            if i % 50 == 0 { usleep(200) }
        }
        let statistics = recorder.close()
        #expect(statistics.packetsCaptured + statistics.packetsDropped == 3000)
        #expect(statistics.packetsCaptured > 0)

        let reader = try PcapReader(path: path)
        var previous = -1
        var read = 0
        while let packet = try reader.next() {
            let id = Int(packet.datagram.load(fromByteOffset: 4, as: UInt16.self).bigEndian)
            // Drops leave gaps, never reorder: ids only grow (3000 < 65536, no wrap).
            #expect(id > previous)
            previous = id
            #expect(Array(packet.datagram) == sent[id], "packet \(id) changed in the ring")
            #expect(packet.timestamp == 1_700_000_000_000_000_000 + UInt64(id) * 1_000_000)
            read += 1
        }
        #expect(read == statistics.packetsCaptured)
    }

    /// The loop reads and builds packets straight in the ring: what it writes
    /// there is what the file holds, abandoned reservations leave no trace,
    /// and a published packet stays intact while later ones are recorded.
    @Test func lentSpaceRecordsPacketsWithoutACopy() throws {
        let dir = ScratchDirectory()
        let path = dir.file("tun.pcap")
        let recorder = try PacketRecorder(path: path)
        var sent: [[UInt8]] = []
        var generator = SystemRandomNumberGenerator()
        for i in 0 ..< 2000 {
            let payload = i % 10 == 0 ? 60_000 : Int.random(in: 0 ... 1400, using: &generator)
            let packet = TestPacket.ipv4(.tcp, id: UInt16(i), destinationPort: 80, payload: payload)
            if i % 7 == 0 {
                // A reservation the loop gives up (the TUN read found nothing).
                _ = try #require(recorder.reserve(maximum: 65536))
            }
            guard let space = recorder.reserve(maximum: 65536) else {
                recorder.record(packet) // the ring is full: copied, or dropped and counted
                sent.append(packet)
                continue
            }
            packet.withUnsafeBytes { space.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            recorder.commit(length: packet.count, outbound: i % 2 == 0, timestamp: 1_700_000_000_000_000_000 + UInt64(i) * 1000)
            sent.append(packet)
            // Records made while the loop still reads this packet land after it.
            for j in 0 ..< 3 { recorder.record(TestPacket.ipv4(.udp, id: UInt16(50_000 + j), destinationPort: 9, payload: 30)) }
            #expect(Array(UnsafeRawBufferPointer(rebasing: space[0 ..< packet.count])) == packet, "packet \(i) overwritten")
            if i % 100 == 0 { usleep(500) }
        }
        let statistics = recorder.close()
        #expect(statistics.packetsRecorded == 2000 * 4)
        #expect(statistics.packetsCaptured + statistics.packetsDropped == 2000 * 4)
        let reader = try PcapReader(path: path)
        var previous = -1
        var read = 0
        while let packet = try reader.next() {
            read += 1
            let id = Int(packet.datagram.load(fromByteOffset: 4, as: UInt16.self).bigEndian)
            guard id < 50_000 else { continue }
            #expect(id > previous)
            previous = id
            #expect(Array(packet.datagram) == sent[id], "packet \(id) changed in the ring")
            #expect(packet.originalLength == sent[id].count)
        }
        #expect(read == statistics.packetsCaptured)
        #expect(previous == 1999 || statistics.packetsDropped > 0)
    }

    @Test func lentSpaceIsCutToSnaplenInTheFile() throws {
        let dir = ScratchDirectory()
        let path = dir.file("tun.pcap")
        let recorder = try PacketRecorder(path: path, snaplen: 4096)
        let packet = TestPacket.ipv4(.tcp, id: 1, destinationPort: 80, payload: 9000)
        let space = try #require(recorder.reserve(maximum: 65536))
        packet.withUnsafeBytes { space.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        recorder.commit(length: packet.count, outbound: false, timestamp: 1_700_000_000_000_000_000)
        // The file keeps 4096 bytes, but the loop still reads all 9040: later records land past them.
        for j in 0 ..< 3 { recorder.record(TestPacket.ipv4(.udp, id: UInt16(2 + j), destinationPort: 9, payload: 3000)) }
        #expect(Array(UnsafeRawBufferPointer(rebasing: space[0 ..< packet.count])) == packet)
        #expect(recorder.close().packetsCaptured == 4)
        let reader = try PcapReader(path: path)
        let frame = try #require(try reader.next())
        #expect(Array(frame.datagram) == Array(packet[0 ..< 4096]))
        #expect(frame.originalLength == packet.count)
    }

    @Test func noSpaceIsLentWhenACopyIsCheaperOrTheRingTooSmall() throws {
        let dir = ScratchDirectory()
        let headersOnly = try PacketRecorder(path: dir.file("a.pcap"), snaplen: 96)
        #expect(headersOnly.reserve(maximum: 65536) == nil)
        headersOnly.close()
        let smallRing = try PacketRecorder(path: dir.file("b.pcap"), ringCapacity: 256 << 10)
        #expect(smallRing.reserve(maximum: 65536) == nil)
        smallRing.close()
        let closed = try PacketRecorder(path: dir.file("c.pcap"))
        closed.close()
        #expect(closed.reserve(maximum: 65536) == nil)
    }

    /// The file header StagedFile writes is libpcap's own.
    @Test func theDirectFileStartsWithLibpcapsHeader() throws {
        let dir = ScratchDirectory()
        for (snaplen, link) in [(65535, PcapLinkType.raw), (128, .raw), (262_144, .ethernet)] {
            let classic = dir.file("classic-\(snaplen).pcap")
            let direct = dir.file("direct-\(snaplen).pcap")
            try PcapFile(path: classic, snaplen: snaplen, linkType: link).close()
            try DirectPcapFile(path: direct, snaplen: snaplen, linkType: link).close()
            #expect(fileBytes(direct) == fileBytes(classic))
            #expect(fileBytes(direct).count == 24)
        }
    }

    @Test func closeIsIdempotentAndLaterRecordsAreIgnored() throws {
        let dir = ScratchDirectory()
        let recorder = try PacketRecorder(path: dir.file("tun.pcap"))
        recorder.record(TestPacket.ipv4(.udp, id: 0, destinationPort: 9, payload: 1))
        let first = recorder.close()
        recorder.record(TestPacket.ipv4(.udp, id: 1, destinationPort: 9, payload: 1))
        #expect(recorder.close() == first)
        #expect(first.packetsCaptured == 1)
        #expect("\(recorder)".contains("1 captured"))
    }

    /// A packet recorded while the loop is otherwise idle reaches the disk
    /// without close(): the writer wakes, writes and flushes.
    @Test func anIdleWriterWakesAndFlushes() throws {
        let dir = ScratchDirectory()
        let path = dir.file("tun.pcap")
        let recorder = try PacketRecorder(path: path)
        defer { recorder.close() }
        usleep(50_000) // let the writer go to sleep
        let start = ContinuousClock.now
        recorder.record(TestPacket.ipv4(.udp, id: 0, destinationPort: 9, payload: 10))
        while fileSize(path) < 24 + 16 + 38, ContinuousClock.now - start < .seconds(5) { usleep(1000) }
        #expect(fileSize(path) == 24 + 16 + 38)
        // Well before the writer's idle timeout: it was woken, not polling.
        let waited = ContinuousClock.now - start
        #expect(waited < .milliseconds(Int64(PacketRecorder.Writer.idleMilliseconds) / 2), "written after \(waited)")
    }

    /// A steady trickle (a packet every 0.1 ms) never lets the writer fall
    /// into its announced sleep, so record() makes no eventfd write for it.
    @Test func aBusyLoopDoesNotWakeTheWriterPerPacket() throws {
        let dir = ScratchDirectory()
        let recorder = try PacketRecorder(path: dir.file("tun.pcap"))
        let packet = TestPacket.ipv4(.udp, id: 0, destinationPort: 9, payload: 100)
        for _ in 0 ..< 2000 {
            recorder.record(packet)
            usleep(100)
        }
        let statistics = recorder.close()
        #expect(statistics.packetsCaptured == 2000)
        #expect(statistics.writerWakeUps <= 20, "\(statistics.writerWakeUps) wake-ups for 2000 packets")
    }

    /// /dev/full opens, and every write to it fails with ENOSPC: the failure is
    /// reported, and the packets after it are counted, not silently lost.
    @Test func aFailingDiskIsReported() throws {
        let recorder = try PacketRecorder(path: "/dev/full")
        let packet = TestPacket.ipv4(.udp, id: 0, destinationPort: 9, payload: 100)
        recorder.record(packet)
        // Let the writer go idle, which flushes, which fails.
        let deadline = ContinuousClock.now + .seconds(5)
        while recorder.statistics.failure == nil, ContinuousClock.now < deadline { usleep(2000) }
        for _ in 0 ..< 10 { recorder.record(packet) }
        let statistics = recorder.close()
        #expect(statistics.failure?.hasPrefix("/dev/full: write failed: ENOSPC") == true, "\(statistics)")
        #expect(statistics.packetsCaptured == 1)
        #expect(statistics.packetsUnwritten == 10)
        #expect(statistics.packetsRecorded == 11)
    }
}
