import Foundation

/// Reads the classic pcap format (the one tcpdump -w writes) without libpcap,
/// so that Wire tests can load real captured packets from Fixtures/.
/// Link types handled: RAW (101), EN10MB (1), LINUX_SLL (113) and LINUX_SLL2 (276);
/// each packet comes back as its IP datagram, link header removed.
public struct PcapFixture: Sendable {
    public struct Packet: Sendable {
        public var bytes: [UInt8]
        /// The length on the wire; larger than `bytes.count` when snaplen cut it.
        public var originalLength: Int
    }

    public var linkType: UInt32
    public var packets: [Packet]

    public enum Failure: Error, CustomStringConvertible {
        case unreadable(String), notPcap(String), unknownLinkType(UInt32), truncated(String)
        public var description: String {
            switch self {
            case let .unreadable(p): return "\(p): cannot read"
            case let .notPcap(p): return "\(p): not a classic pcap file"
            case let .unknownLinkType(t): return "unknown link type \(t)"
            case let .truncated(p): return "\(p): truncated record"
            }
        }
    }

    public init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw Failure.unreadable(path) }
        let b = [UInt8](data)
        guard b.count >= 24 else { throw Failure.notPcap(path) }
        let magicLE = UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
        let littleEndian: Bool
        switch magicLE {
        case 0xa1b2_c3d4, 0xa1b2_3c4d: littleEndian = true
        case 0xd4c3_b2a1, 0x4d3c_b2a1: littleEndian = false
        default: throw Failure.notPcap(path)
        }
        func u32(_ i: Int) -> UInt32 {
            littleEndian
                ? UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
                : UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
        }
        linkType = u32(20) & 0x0fff_ffff
        let linkHeader: Int
        switch linkType {
        case 101: linkHeader = 0
        case 1: linkHeader = 14
        case 113: linkHeader = 16
        case 276: linkHeader = 20
        default: throw Failure.unknownLinkType(linkType)
        }
        var packets: [Packet] = []
        var i = 24
        while i + 16 <= b.count {
            let captured = Int(u32(i + 8)), original = Int(u32(i + 12))
            guard i + 16 + captured <= b.count else { throw Failure.truncated(path) }
            let start = i + 16 + min(linkHeader, captured)
            packets.append(Packet(bytes: Array(b[start ..< i + 16 + captured]), originalLength: original - linkHeader))
            i += 16 + captured
        }
        self.packets = packets
    }

    /// Loads `Fixtures/NAME` next to the calling test file.
    public static func named(_ name: String, near file: String = #filePath) throws -> PcapFixture {
        let dir = (file as NSString).deletingLastPathComponent
        return try PcapFixture(path: dir + "/Fixtures/" + name)
    }
}
