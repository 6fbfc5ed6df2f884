import Foundation
import Sys
import TestSupport
import Testing
@testable import Capture

extension PcapFile {
    func write(_ bytes: [UInt8], timestamp: UInt64 = 0) {
        bytes.withUnsafeBytes { write($0, timestamp: timestamp) }
    }
}

/// Reads every datagram of a capture into arrays, for comparison.
func readAll(_ path: String) throws -> (reader: PcapReader, datagrams: [[UInt8]], frames: [Int], timestamps: [UInt64]) {
    let reader = try PcapReader(path: path)
    var datagrams: [[UInt8]] = [], frames: [Int] = [], timestamps: [UInt64] = []
    while let packet = try reader.next() {
        datagrams.append(Array(packet.datagram))
        frames.append(packet.frameNumber)
        timestamps.append(packet.timestamp)
        if datagrams.count > 100_000 { break }
    }
    return (reader, datagrams, frames, timestamps)
}

@Suite struct PcapReaderTests {
    let v4 = TestPacket.ipv4(.tcp, id: 7, destinationPort: 80, payload: 12)
    let v6 = TestPacket.ipv6(.udp, id: 9, destinationPort: 53, payload: 5)
    let mac: [UInt8] = [0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2]

    @Test func rawCapturesComeBackWithTheirTimestamps() throws {
        let dir = ScratchDirectory()
        let path = dir.file("raw.pcap")
        let file = try PcapFile(path: path)
        file.write(v4, timestamp: 1_764_500_000_123_456_789)
        file.write(v6, timestamp: 1_764_500_001_000_001_000)
        file.write([0x50, 1, 2, 3], timestamp: 1_764_500_002_000_000_000) // not IP: skipped
        file.write(v4, timestamp: 1_764_500_003_000_000_000)
        try file.close()
        #expect(file.bytesWritten == fileSize(path))

        let (reader, datagrams, frames, timestamps) = try readAll(path)
        #expect(reader.linkType == .raw)
        #expect(reader.snaplen == 65535)
        #expect(datagrams == [v4, v6, v4])
        #expect(frames == [1, 2, 4])
        #expect(reader.framesSkipped == 1)
        #expect(reader.framesRead == 4)
        // The file holds microseconds: the nanoseconds below them are gone.
        #expect(timestamps == [1_764_500_000_123_456_000, 1_764_500_001_000_001_000, 1_764_500_003_000_000_000])
    }

    /// pcapng and nanosecond pcap, as editcap (from the tshark package) converts them.
    @Test(.enabled(if: Tool.has("editcap"), "editcap is not installed (tools/setup installs tshark): skipping"))
    func pcapngAndNanosecondFilesRead() throws {
        let dir = ScratchDirectory()
        let path = dir.file("raw.pcap")
        let file = try PcapFile(path: path)
        file.write(v4, timestamp: 1_764_500_000_123_456_000)
        file.write(v6, timestamp: 1_764_500_001_000_001_000)
        try file.close()
        for format in ["pcapng", "nsecpcap"] {
            let converted = dir.file("raw.\(format)")
            try Tool.run(["editcap", "-F", format, path, converted])
            let magic = Array(fileBytes(converted).prefix(4))
            #expect(magic == (format == "pcapng" ? [0x0a, 0x0d, 0x0d, 0x0a] : [0x4d, 0x3c, 0xb2, 0xa1]), "\(format)")
            let (reader, datagrams, _, timestamps) = try readAll(converted)
            #expect(reader.linkType == .raw, "\(format)")
            #expect(datagrams == [v4, v6], "\(format)")
            #expect(timestamps == [1_764_500_000_123_456_000, 1_764_500_001_000_001_000], "\(format)")
        }
    }

    @Test func dltRawTwelveAndFourteenReadAsRaw() throws {
        let dir = ScratchDirectory()
        let path = dir.file("raw.pcap")
        let file = try PcapFile(path: path)
        file.write(v4)
        file.write(v6)
        try file.close()
        var bytes = fileBytes(path)
        for linkType: UInt8 in [12, 14] {
            bytes[20] = linkType
            let patched = dir.file("raw-\(linkType).pcap")
            try #require(FileManager.default.createFile(atPath: patched, contents: Data(bytes)))
            let (reader, datagrams, _, _) = try readAll(patched)
            #expect(reader.linkType == .raw, "link type \(linkType)")
            #expect(datagrams == [v4, v6])
        }
    }

    @Test func everyLinkTypeYieldsTheSameDatagrams() throws {
        let dir = ScratchDirectory()
        let arp: [UInt8] = mac + [0x08, 0x06] + [UInt8](repeating: 0, count: 28)
        let vlan: (UInt16, UInt16) -> [UInt8] = { tpid, id in [UInt8(tpid >> 8), UInt8(tpid & 0xff), UInt8(id >> 8), UInt8(id & 0xff)] }
        let cases: [(PcapLinkType, frames: [[UInt8]], datagrams: [[UInt8]], skipped: Int)] = [
            (.ethernet, [
                mac + [0x08, 0x00] + v4,
                arp,
                mac + vlan(0x8100, 5) + [0x86, 0xdd] + v6,
                mac + vlan(0x88a8, 100) + vlan(0x8100, 5) + [0x08, 0x00] + v4,
                mac + [0x08], // cut inside the header
                mac + vlan(0x8100, 5) + [0x08, 0x06] + [UInt8](repeating: 0, count: 28), // tagged ARP
            ], [v4, v6, v4], 3),
            (.linuxCooked, [
                [0, 0, 0, 1, 0, 6] + mac.prefix(6) + [0, 0, 0x08, 0x00] + v4,
                [0, 4, 0, 1, 0, 6] + mac.prefix(6) + [0, 0, 0x86, 0xdd] + v6,
                [0, 0, 0, 1, 0, 6] + mac.prefix(6) + [0, 0, 0x08, 0x06] + [UInt8](repeating: 0, count: 28),
            ], [v4, v6], 1),
            (.linuxCooked2, [
                [0x08, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6] + mac.prefix(6) + [0, 0] + v4,
                [0x86, 0xdd, 0, 0, 0, 0, 0, 2, 0, 1, 4, 6] + mac.prefix(6) + [0, 0] + v6,
                [0x08, 0x06, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6] + mac.prefix(6) + [0, 0] + [UInt8](repeating: 0, count: 28),
            ], [v4, v6], 1),
            // NULL: the family in the capturing host's order; AF_INET6 differs by OS (Darwin 30, FreeBSD 28).
            (.null, [[2, 0, 0, 0] + v4, [30, 0, 0, 0] + v6, [0, 0, 0, 28] + v6], [v4, v6, v6], 0),
            (.loop, [[0, 0, 0, 2] + v4, [0, 0, 0, 24] + v6, [0, 0, 0, 2]], [v4, v6], 1),
            (.ipv4, [v4, v6], [v4], 1),
            (.ipv6, [v4, v6], [v6], 1),
        ]
        for (linkType, frames, expected, skipped) in cases {
            let path = dir.file("\(linkType).pcap")
            let file = try PcapFile(path: path, linkType: linkType)
            for frame in frames { file.write(frame) }
            try file.close()
            let (reader, datagrams, _, _) = try readAll(path)
            #expect(reader.linkType == linkType)
            #expect(datagrams == expected, "\(linkType)")
            #expect(reader.framesSkipped == skipped, "\(linkType)")
            #expect(reader.framesRead == frames.count, "\(linkType)")
            if Tool.hasTshark, linkType != .ipv4, linkType != .ipv6 {
                // tshark finds the same IP datagrams in the same frames.
                #expect(try Tool.tsharkFrameCount(path, filter: "ip or ipv6") == expected.count, "\(linkType)")
            }
        }
    }

    @Test func vlanTagsAreBounded() {
        let mac = self.mac
        func frame(tags: Int) -> [UInt8] {
            mac + Array([[UInt8]](repeating: [0x81, 0x00, 0, 5], count: tags).joined()) + [0x08, 0x00] + v4
        }
        for tags in 0 ... PcapLinkType.maximumVLANTags {
            #expect(frame(tags: tags).withUnsafeBytes { PcapLinkType.ethernet.datagramOffset(in: $0) } == 14 + 4 * tags)
        }
        #expect(frame(tags: PcapLinkType.maximumVLANTags + 1).withUnsafeBytes { PcapLinkType.ethernet.datagramOffset(in: $0) } == nil)
        // A frame that is all tags, cut short, never reads past its end.
        for count in 0 ..< 30 {
            let cut = Array(frame(tags: 6).prefix(count))
            _ = cut.withUnsafeBytes { PcapLinkType.ethernet.datagramOffset(in: $0) }
        }
        for linkType: Int32 in [0, 1, 12, 14, 101, 108, 113, 228, 229, 276] {
            #expect(PcapLinkType(dlt: linkType) != nil)
        }
        #expect(PcapLinkType(dlt: 105) == nil)
    }

    @Test func theLeadsFixturesReadLikeTestSupportsParser() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("WireTests/Fixtures").path
        let names = try FileManager.default.contentsOfDirectory(atPath: fixtures).filter { $0.hasSuffix(".pcap") }.sorted()
        try #require(!names.isEmpty, "no fixtures in \(fixtures)")
        for name in names {
            let path = fixtures + "/" + name
            let expected = try PcapFixture(path: path).packets.map(\.bytes)
            let (reader, datagrams, _, _) = try readAll(path)
            #expect(reader.linkType == .ethernet, "\(name)")
            #expect(datagrams == expected, "\(name)")
        }
    }

    @Test func errorsSayWhichFileAndWhy() throws {
        let dir = ScratchDirectory()
        #expect {
            _ = try PcapReader(path: dir.file("missing.pcap"))
        } throws: { error in
            guard case let .cannotOpen(_, reason)? = error as? CaptureError else { return false }
            return reason.hasPrefix("ENOENT")
        }

        let text = dir.file("notes.pcap")
        try #require(FileManager.default.createFile(atPath: text, contents: Data("GET / HTTP/1.1\r\nHost: example\r\n\r\n".utf8)))
        #expect {
            _ = try PcapReader(path: text)
        } throws: { error in
            guard let error = error as? CaptureError, case .notCaptureFile = error else { return false }
            return "\(error)".hasPrefix("\(text): not a capture file (")
        }

        // A record cut by the end of the file: the frames before it still read.
        let path = dir.file("cut.pcap")
        let file = try PcapFile(path: path)
        file.write(v4)
        file.write(v4)
        try file.close()
        let bytes = fileBytes(path)
        try #require(FileManager.default.createFile(atPath: path, contents: Data(bytes.dropLast(5))))
        let reader = try PcapReader(path: path)
        #expect(try reader.next() != nil)
        #expect {
            _ = try reader.next()
        } throws: { error in
            guard case .readFailed? = error as? CaptureError else { return false }
            return "\(error)".contains("truncated")
        }

        // 802.11 (105): libpcap reads it, we have no datagram to give.
        let wifi = dir.file("wifi.pcap")
        var header = bytes.prefix(24)
        header[header.startIndex + 20] = 105
        try #require(FileManager.default.createFile(atPath: wifi, contents: Data(header)))
        #expect {
            _ = try PcapReader(path: wifi)
        } throws: { error in
            guard case let .unsupportedLinkType(_, linkType, name)? = error as? CaptureError else { return false }
            return linkType == 105 && name == "IEEE802_11"
        }
    }

    @Test func packetsPrintLikeTcpdump() throws {
        let dir = ScratchDirectory()
        let path = dir.file("print.pcap")
        let file = try PcapFile(path: path, snaplen: 40)
        file.write(TestPacket.ipv4(.udp, id: 1, destinationPort: 9, payload: 4), timestamp: 1_764_500_000_000_042_000)
        file.write(TestPacket.ipv4(.udp, id: 2, destinationPort: 9, payload: 100), timestamp: 1_764_500_000_000_042_000)
        try file.close()
        let reader = try PcapReader(path: path)
        let whole = try #require(try reader.next())
        #expect(whole.description == "1 1764500000.000042 IP 10.0.0.1.40000 > 10.0.0.2.9: UDP, length 4")
        let cut = try #require(try reader.next())
        #expect(cut.isTruncated)
        #expect(cut.originalLength == 128)
        #expect(cut.description == "2 1764500000.000042 IP datagram, 40 of 128 bytes captured")
    }
}

/// Captures made by tcpdump on interfaces the test creates in its own namespaces.
@Suite(.serialized, .enabled(if: TestNetwork.isRoot && Tool.has("tcpdump"), "needs root and tcpdump"))
struct TcpdumpCaptureTests {
    /// Runs tcpdump with `arguments` in namespace `a` while `a` pings `target` three times.
    func capture(_ network: TestNetwork, in ns: String, _ arguments: [String], ping target: String, file: String) throws {
        let log = file + ".log"
        // --immediate-mode: without it TPACKET_V3 holds packets in a block for up
        // to a second, and SIGTERM would end tcpdump before it wrote them.
        let tcpdump = try network.start(["tcpdump", "-n", "--immediate-mode", "-U", "-w", file] + arguments, in: ns, log: log)
        let listening = TestNetwork.waitUntil(seconds: 10) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("listening on")
        }
        try #require(listening, "tcpdump did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        try network.run(["ping", "-c", "3", "-i", "0.2", "-W", "2", target], in: ns, timeout: 20)
        usleep(200_000)
        tcpdump.terminate(graceMilliseconds: 3000)
    }

    func echoes(_ datagrams: [[UInt8]]) -> (requests: Int, replies: Int) {
        var requests = 0, replies = 0
        for datagram in datagrams {
            let text = datagram.withUnsafeBytes { PcapPacket(frameNumber: 0, timestamp: 0, datagram: $0, originalLength: $0.count).description }
            if text.contains("ICMP echo request") { requests += 1 }
            if text.contains("ICMP echo reply") { replies += 1 }
        }
        return (requests, replies)
    }

    @Test func ethernet() throws {
        let network = TestNetwork("cap")
        defer { network.destroy() }
        let a = try network.namespace("a"), b = try network.namespace("b")
        try network.link(a, "veth0", b, "veth1")
        try network.address(a, "veth0", "10.77.0.1/24")
        try network.address(b, "veth1", "10.77.0.2/24")
        let dir = ScratchDirectory()
        let path = dir.file("ethernet.pcap")
        try capture(network, in: a, ["-i", "veth0", "icmp or arp"], ping: "10.77.0.2", file: path)
        let (reader, datagrams, _, _) = try readAll(path)
        #expect(reader.linkType == .ethernet)
        #expect(echoes(datagrams) == (3, 3))
        // The ARP exchange before the first ping is there, and skipped.
        #expect(reader.framesSkipped >= 1)
        #expect(datagrams.count + reader.framesSkipped == reader.framesRead)
        if Tool.hasTshark { #expect(try Tool.tsharkFrameCount(path, filter: "ip") == datagrams.count) }
    }

    static let hasVLANs = FileManager.default.fileExists(atPath: "/sys/module/8021q")

    /// On the parent interface, a VLAN's frames carry an 802.1Q tag. (Crafted
    /// single and stacked tags are also read in PcapReaderTests.)
    @Test(.enabled(if: hasVLANs, "the kernel has no 802.1Q support (8021q not loaded): skipping"))
    func ethernetWithVLANTags() throws {
        let network = TestNetwork("cap")
        defer { network.destroy() }
        let a = try network.namespace("a"), b = try network.namespace("b")
        try network.link(a, "veth0", b, "veth1")
        for (ns, dev, address) in [(a, "veth0", "10.77.5.1/24"), (b, "veth1", "10.77.5.2/24")] {
            try network.run(["ip", "-n", ns, "link", "add", "link", dev, "name", "\(dev).5", "type", "vlan", "id", "5"])
            try network.run(["ip", "-n", ns, "link", "set", "\(dev).5", "up"])
            try network.address(ns, "\(dev).5", address)
        }
        let dir = ScratchDirectory()
        let path = dir.file("tagged.pcap")
        try capture(network, in: a, ["-i", "veth0", "vlan and icmp"], ping: "10.77.5.2", file: path)
        let (reader, datagrams, _, _) = try readAll(path)
        #expect(reader.linkType == .ethernet)
        #expect(echoes(datagrams) == (3, 3))
        if Tool.hasTshark { #expect(try Tool.tsharkFrameCount(path, filter: "vlan.id == 5 and icmp") == 6) }
    }

    @Test func linuxCookedFromTheAnyDevice() throws {
        let network = TestNetwork("cap")
        defer { network.destroy() }
        let a = try network.namespace("a"), b = try network.namespace("b")
        try network.link(a, "veth0", b, "veth1")
        try network.address(a, "veth0", "fd00:77::1/64")
        try network.address(b, "veth1", "fd00:77::2/64")
        let dir = ScratchDirectory()
        for (name, linkType) in [("LINUX_SLL2", PcapLinkType.linuxCooked2), ("LINUX_SLL", .linuxCooked)] {
            let path = dir.file("\(name).pcap")
            try capture(network, in: a, ["-i", "any", "-y", name, "icmp6"], ping: "fd00:77::2", file: path)
            let (reader, datagrams, _, _) = try readAll(path)
            #expect(reader.linkType == linkType)
            let text = datagrams.map { d in d.withUnsafeBytes { PcapPacket(frameNumber: 0, timestamp: 0, datagram: $0, originalLength: $0.count).description } }
            #expect(text.filter { $0.contains("echo request") }.count == 3, "\(text)")
            #expect(text.filter { $0.contains("echo reply") }.count == 3, "\(text)")
        }
    }
}
