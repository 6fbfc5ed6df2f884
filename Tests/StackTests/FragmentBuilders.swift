import Stack
import TestSupport
import Wire

/// Hand-made datagrams and fragments for the fragment tests, and the captured
/// ones from WireTests' fixtures.
enum Frag {
    static let app4 = IPv4Address(10, 7, 0, 2)
    static let server4 = IPv4Address(198, 18, 0, 5)
    static let app6 = IPv6Address("fd00:7::2")!
    static let server6 = IPv6Address("fd00:99::5")!

    /// fragments.pcap from WireTests' fixtures: `named` looks next to the file
    /// it is given, so give it a path inside WireTests.
    static func capturedFragments() throws -> [[UInt8]] {
        let here = #filePath
        let tests = here[..<here.lastIndex(of: "/")!].dropLast("StackTests".count)
        return try PcapFixture.named("fragments.pcap", near: tests + "WireTests/IPFixtureTests.swift").packets.map(\.bytes)
    }

    /// The captured fragments grouped by datagram, in capture order.
    static func capturedDatagrams() throws -> [[[UInt8]]] {
        var groups: [(id: UInt32, v6: Bool, packets: [[UInt8]])] = []
        for bytes in try capturedFragments() {
            let info: (UInt32, Bool)? = bytes.withUnsafeBytes { raw in
                guard let packet = try? IPPacketView(raw), let fragment = packet.fragment else { return nil }
                if case .v6 = packet.network { return (fragment.identification, true) }
                return (fragment.identification, false)
            }
            guard let (id, v6) = info else { continue }
            if let i = groups.firstIndex(where: { $0.id == id && $0.v6 == v6 }) {
                groups[i].packets.append(bytes)
            } else {
                groups.append((id, v6, [bytes]))
            }
        }
        return groups.map(\.packets)
    }

    static func payload(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        return (0 ..< count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }

    /// A whole UDP/IPv4 datagram, DF clear unless asked; `options` fill the IPv4 options area.
    static func udp4(_ data: [UInt8], identification: UInt16 = 0x1234, dontFragment: Bool = false,
                     options: [UInt8] = []) -> [UInt8] {
        let optionsLength = (options.count + 3) / 4 * 4
        let headerLength = 20 + optionsLength
        var bytes = [UInt8](repeating: 0, count: headerLength + 8 + data.count)
        bytes.withUnsafeMutableBytes { out in
            for (i, b) in data.enumerated() { out[headerLength + 8 + i] = b }
            _ = try! UDPHeader(sourcePort: 40000, destinationPort: 53, payloadLength: data.count)
                .emit(into: out.sub(headerLength, 8 + data.count), source: app4, destination: server4)
            _ = options.withUnsafeBytes { opts in
                try! IPv4Header(source: app4, destination: server4, protocol: .udp, payloadLength: 8 + data.count,
                                identification: identification, dontFragment: dontFragment, optionsLength: optionsLength)
                    .emit(into: out.sub(0, headerLength), options: opts)
            }
        }
        return bytes
    }

    /// A whole UDP/IPv6 datagram without extension headers.
    static func udp6(_ data: [UInt8]) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 48 + data.count)
        bytes.withUnsafeMutableBytes { out in
            for (i, b) in data.enumerated() { out[48 + i] = b }
            _ = try! UDPHeader(sourcePort: 40000, destinationPort: 53, payloadLength: data.count)
                .emit(into: out.sub(40, 8 + data.count), source: app6, destination: server6)
            _ = try! IPv6Header(source: app6, destination: server6, nextHeader: .udp, payloadLength: 8 + data.count)
                .emit(into: out.sub(0, 40))
        }
        return bytes
    }

    /// A whole IPv6 datagram carrying `upper` as protocol `proto` (no checksum fixing).
    static func ipv6(_ proto: IPProtocol, _ upper: [UInt8]) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 40) + upper
        bytes.withUnsafeMutableBytes { out in
            _ = try! IPv6Header(source: app6, destination: server6, nextHeader: proto, payloadLength: upper.count)
                .emit(into: out.sub(0, 40))
        }
        return bytes
    }

    /// An IPv4 fragment carrying `whole`'s payload bytes `range`, its header
    /// copied from `whole` with the fragment fields and checksum rewritten.
    /// `replacing` overwrites data bytes (indices into the payload) to make conflicts.
    static func fragment4(_ whole: [UInt8], _ range: Range<Int>, more: Bool, replacing: [Int: UInt8] = [:]) -> [UInt8] {
        let headerLength = Int(whole[0] & 0x0f) * 4
        var data = Array(whole[(headerLength + range.lowerBound) ..< (headerLength + range.upperBound)])
        for (i, b) in replacing where range.contains(i) { data[i - range.lowerBound] = b }
        var bytes = Array(whole[0 ..< headerLength]) + data
        let total = bytes.count
        bytes.withUnsafeMutableBytes { out in
            out.setU16(2, UInt16(total))
            out.setU16(6, (more ? 0x2000 : 0) | UInt16(range.lowerBound / 8))
            out.setU16(10, 0)
            out.setU16(10, InternetChecksum.of(UnsafeRawBufferPointer(out.sub(0, headerLength))))
        }
        return bytes
    }

    /// An IPv6 fragment of `whole` (which has no extension headers): its fixed
    /// header, a fragment header, and bytes `range` of its payload.
    static func fragment6(_ whole: [UInt8], _ range: Range<Int>, more: Bool, identification: UInt32 = 0xfeed_f00d,
                          replacing: [Int: UInt8] = [:]) -> [UInt8] {
        var data = Array(whole[(40 + range.lowerBound) ..< (40 + range.upperBound)])
        for (i, b) in replacing where range.contains(i) { data[i - range.lowerBound] = b }
        var bytes = Array(whole[0 ..< 40]) + [UInt8](repeating: 0, count: 8) + data
        bytes.withUnsafeMutableBytes { out in
            out.setU16(4, UInt16(8 + data.count))
            let next = out[6]
            out[6] = IPProtocol.ipv6Fragment.rawValue
            _ = try! IPv6FragmentHeader(nextHeader: IPProtocol(rawValue: next), fragmentOffset: UInt16(range.lowerBound / 8),
                                        moreFragments: more, identification: identification).emit(into: out.sub(40, 8))
        }
        return bytes
    }
}

/// Runs `body` on the parsed packet; the bytes must parse.
func withPacket<R>(_ bytes: [UInt8], _ body: (IPPacketView) throws -> R) throws -> R {
    try bytes.withUnsafeBytes { raw in try body(try IPPacketView(raw)) }
}

extension FragmentReassembler {
    /// Parses and inserts, as the engine will.
    func insert(_ bytes: [UInt8], now: Instant = .zero) throws -> Outcome {
        try withPacket(bytes) { insert($0, now: now) }
    }
}

extension FragmentReassembler.Outcome {
    var datagram: ReassembledDatagram? {
        if case let .complete(d) = self { return d }
        return nil
    }
    var isIncomplete: Bool {
        if case .incomplete = self { return true }
        return false
    }
    var dropReason: FragmentReassembler.DropReason? {
        if case let .dropped(reason) = self { return reason }
        return nil
    }
}

/// Every order of `items` (Heap's algorithm), for small counts.
func permutations<T>(_ items: [T]) -> [[T]] {
    var result: [[T]] = []
    var a = items
    func generate(_ k: Int) {
        if k <= 1 { result.append(a); return }
        for i in 0 ..< k {
            generate(k - 1)
            a.swapAt(k % 2 == 0 ? i : 0, k - 1)
        }
    }
    generate(a.count)
    return result
}

/// Like `CollectingSink`, but offers buffers poisoned with 0xAA (and larger
/// than asked), so a byte the writer forgets shows up in the packet.
struct PoisonedSink: PacketSink {
    var packets: [[UInt8]] = []
    mutating func send(capacity: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Int) {
        var buffer = [UInt8](repeating: 0xAA, count: capacity + 64)
        let n = buffer.withUnsafeMutableBytes { fill($0) }
        if n > 0 { packets.append(Array(buffer.prefix(n))) }
    }
}
