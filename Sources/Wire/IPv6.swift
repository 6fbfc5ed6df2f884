/// A validated IPv6 datagram (RFC 8200), read in place, with its chain of
/// extension headers walked once at init.
///
/// The walk stops at the first header that is not an extension header
/// (the upper layer), at "no next header", at ESP (whose contents are
/// encrypted), and at a fragment header of a non-first fragment (what follows
/// it is the middle of someone else's data).
public struct IPv6View: CustomStringConvertible {
    /// The datagram, exactly 40 + `payloadLength` bytes (or fewer for a quote).
    public let bytes: UnsafeRawBufferPointer
    /// The protocol after the last extension header walked.
    public let upperLayerProtocol: IPProtocol
    /// Where the upper-layer data starts, from the start of the datagram.
    public let upperLayerOffset: Int
    /// Where the fragment header starts, or nil when there is none.
    public let fragmentHeaderOffset: Int?
    /// How many extension headers precede the upper layer.
    public let extensionHeaderCount: Int

    public static let headerLength = 40
    /// More headers than this is a resource attack rather than a packet.
    public static let maximumExtensionHeaders = 8

    /// Validates a datagram that must be whole.
    @inlinable
    public init(_ buffer: UnsafeRawBufferPointer) throws(WireError) {
        try self.init(buffer, quoted: false)
    }

    /// Validates the datagram an ICMPv6 error quotes: the fixed header must be
    /// whole, the rest may stop short of the payload length. An extension
    /// header cut by the quote still throws `.truncated`.
    @inlinable
    public init(quoted buffer: UnsafeRawBufferPointer) throws(WireError) {
        try self.init(buffer, quoted: true)
    }

    @inlinable
    init(_ buffer: UnsafeRawBufferPointer, quoted: Bool) throws(WireError) {
        try require(Self.headerLength, in: buffer, .ipv6)
        guard buffer.u8(0) >> 4 == 6 else { throw .malformed(layer: .ipv6, reason: .version) }
        let payloadLength = Int(buffer.u16(4))
        var next = IPProtocol(rawValue: buffer.u8(6))
        // A zero payload length with a hop-by-hop header is a jumbogram (RFC 2675).
        if payloadLength == 0, next == .hopByHop { throw .unsupported(layer: .ipv6, reason: .payloadLength) }
        let datagram: UnsafeRawBufferPointer
        if quoted {
            datagram = buffer.sub(0, min(Self.headerLength + payloadLength, buffer.count))
        } else {
            try require(Self.headerLength + payloadLength, in: buffer, .ipv6)
            datagram = buffer.sub(0, Self.headerLength + payloadLength)
        }

        var offset = Self.headerLength
        var count = 0
        var fragmentAt: Int? = nil
        walk: while true {
            let length: Int
            switch next {
            case .hopByHop, .ipv6Route, .ipv6Options:
                // RFC 8200 §4.1: hop-by-hop options may only come first.
                if next == .hopByHop, count != 0 { throw .malformed(layer: .ipv6, reason: .extensionHeader) }
                try require(offset + 2, in: datagram, .ipv6)
                length = (Int(datagram.u8(offset + 1)) + 1) * 8
            case .ipv6Fragment:
                if fragmentAt != nil { throw .malformed(layer: .ipv6, reason: .extensionHeader) }
                length = 8
            case .ah:
                // RFC 4302 §2.2: AH counts 32-bit words, less 2.
                try require(offset + 2, in: datagram, .ipv6)
                length = (Int(datagram.u8(offset + 1)) + 2) * 4
            default:
                break walk
            }
            if count == Self.maximumExtensionHeaders { throw .unsupported(layer: .ipv6, reason: .extensionHeader) }
            try require(offset + length, in: datagram, .ipv6)
            let isLaterFragment = next == .ipv6Fragment && datagram.u16(offset + 2) & 0xfff8 != 0
            if next == .ipv6Fragment { fragmentAt = offset }
            count += 1
            next = IPProtocol(rawValue: datagram.u8(offset))
            offset += length
            if isLaterFragment { break walk }
        }
        bytes = datagram
        upperLayerProtocol = next
        upperLayerOffset = offset
        fragmentHeaderOffset = fragmentAt
        extensionHeaderCount = count
    }

    @inlinable public var version: UInt8 { bytes.u8(0) >> 4 }
    @inlinable public var trafficClass: UInt8 { UInt8(truncatingIfNeeded: bytes.u16(0) >> 4) }
    @inlinable public var flowLabel: UInt32 { bytes.u32(0) & 0x000f_ffff }
    /// Everything after the fixed header, extension headers included.
    @inlinable public var payloadLength: UInt16 { bytes.u16(4) }
    /// The first next-header field: an extension header or the upper layer.
    @inlinable public var nextHeader: IPProtocol { IPProtocol(rawValue: bytes.u8(6)) }
    @inlinable public var hopLimit: UInt8 { bytes.u8(7) }
    @inlinable public var source: IPv6Address { IPv6Address.load(bytes, 8) }
    @inlinable public var destination: IPv6Address { IPv6Address.load(bytes, 24) }

    /// Everything after the fixed header (extension headers and upper layer).
    @inlinable public var payload: UnsafeRawBufferPointer { bytes.suffix(from: Self.headerLength) }

    /// The upper-layer data (for a non-first fragment: the fragment's data).
    @inlinable public var upperLayerPayload: UnsafeRawBufferPointer { bytes.suffix(from: upperLayerOffset) }

    /// The fragment header, when there is one.
    @inlinable
    public var fragment: IPv6FragmentHeader? {
        guard let at = fragmentHeaderOffset else { return nil }
        return IPv6FragmentHeader(bytes.sub(at, IPv6FragmentHeader.length))
    }

    /// True for a real fragment. An atomic fragment (offset 0, no more
    /// fragments; RFC 6946) is a whole datagram and is not one.
    @inlinable
    public var isFragment: Bool {
        guard let f = fragment else { return false }
        return f.isFragment
    }

    /// The pseudo-header sum for an upper layer of `length` bytes (RFC 8200 §8.1).
    @inlinable
    public func pseudoHeader(protocol proto: IPProtocol, length: Int) -> InternetChecksum {
        InternetChecksum.pseudoHeader(source: source, destination: destination, protocol: proto, length: length)
    }

    public var description: String { IPPacketView(self).description }
}

/// The fixed IPv6 header's fields, for building packets and for tests.
public struct IPv6Header: Equatable, Sendable, CustomStringConvertible {
    public var trafficClass: UInt8
    /// 20 bits.
    public var flowLabel: UInt32
    public var payloadLength: Int
    public var nextHeader: IPProtocol
    public var hopLimit: UInt8
    public var source: IPv6Address
    public var destination: IPv6Address

    public init(source: IPv6Address, destination: IPv6Address, nextHeader: IPProtocol, payloadLength: Int,
                hopLimit: UInt8 = 64, trafficClass: UInt8 = 0, flowLabel: UInt32 = 0) {
        self.trafficClass = trafficClass
        self.flowLabel = flowLabel
        self.payloadLength = payloadLength
        self.nextHeader = nextHeader
        self.hopLimit = hopLimit
        self.source = source
        self.destination = destination
    }

    public init(_ view: IPv6View) {
        trafficClass = view.trafficClass
        flowLabel = view.flowLabel
        payloadLength = Int(view.payloadLength)
        nextHeader = view.nextHeader
        hopLimit = view.hopLimit
        source = view.source
        destination = view.destination
    }

    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> IPv6Header {
        IPv6Header(try IPv6View(bytes))
    }

    /// Writes the 40-byte fixed header and returns 40.
    public func emit(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        guard flowLabel <= 0x000f_ffff else { throw .malformed(layer: .ipv6, reason: .fieldRange) }
        guard payloadLength >= 0, payloadLength <= 65535 else { throw .malformed(layer: .ipv6, reason: .payloadLength) }
        try require(IPv6View.headerLength, in: buffer, .ipv6)
        buffer.setU32(0, 6 << 28 | UInt32(trafficClass) << 20 | flowLabel)
        buffer.setU16(4, UInt16(payloadLength))
        buffer.setU8(6, nextHeader.rawValue)
        buffer.setU8(7, hopLimit)
        source.store(buffer, 8)
        destination.store(buffer, 24)
        return IPv6View.headerLength
    }

    /// tcpdump -v's header line: `IP6 (hlim 64, next-header UDP (17) payload length: 41) fd00::1 > fd00::2`
    public var description: String {
        var text = "IP6 ("
        if trafficClass != 0 { text += "class 0x" + String(trafficClass, radix: 16) + ", " }
        if flowLabel != 0 {
            let digits = String(flowLabel, radix: 16)
            text += "flowlabel 0x" + String(repeating: "0", count: max(0, 5 - digits.count)) + digits + ", "
        }
        // tcpdump names ICMPv6 in full here, though it writes "ICMP6" in the one-line form.
        let next = nextHeader == .icmpv6 ? "ICMPv6" : nextHeader.description
        text += "hlim \(hopLimit), next-header \(next) (\(nextHeader.rawValue)) payload length: \(payloadLength))"
        return text + " \(source) > \(destination)"
    }
}

/// The IPv6 fragment header (RFC 8200 §4.5), as a value: it is fixed-size,
/// so reading it copies 8 bytes and no view is needed.
public struct IPv6FragmentHeader: Equatable, Sendable, CustomStringConvertible {
    public static let length = 8

    public var nextHeader: IPProtocol
    /// In units of 8 bytes, as on the wire (13 bits).
    public var fragmentOffset: UInt16
    public var moreFragments: Bool
    public var identification: UInt32

    public init(nextHeader: IPProtocol, fragmentOffset: UInt16, moreFragments: Bool, identification: UInt32) {
        self.nextHeader = nextHeader
        self.fragmentOffset = fragmentOffset
        self.moreFragments = moreFragments
        self.identification = identification
    }

    /// Reads the first 8 bytes of `bytes`, which the caller has checked are there.
    @inlinable
    init(_ bytes: UnsafeRawBufferPointer) {
        nextHeader = IPProtocol(rawValue: bytes.u8(0))
        fragmentOffset = bytes.u16(2) >> 3
        moreFragments = bytes.u8(3) & 1 != 0
        identification = bytes.u32(4)
    }

    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> IPv6FragmentHeader {
        try require(length, in: bytes, .ipv6)
        return IPv6FragmentHeader(bytes)
    }

    /// Where this fragment's data sits in the original payload, in bytes.
    public var fragmentByteOffset: Int { Int(fragmentOffset) * 8 }
    public var isFragment: Bool { moreFragments || fragmentOffset != 0 }

    /// Writes the 8-byte header and returns 8.
    public func emit(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        guard fragmentOffset <= 0x1fff else { throw .malformed(layer: .ipv6, reason: .fieldRange) }
        try require(Self.length, in: buffer, .ipv6)
        buffer.setU8(0, nextHeader.rawValue)
        buffer.setU8(1, 0)
        buffer.setU16(2, fragmentOffset << 3 | (moreFragments ? 1 : 0))
        buffer.setU32(4, identification)
        return Self.length
    }

    /// tcpdump's `frag (0x12345678:1448|1232)` is ident:offset|length; without the length here.
    public var description: String {
        "frag (0x" + String(identification, radix: 16) + ":\(fragmentByteOffset)" + (moreFragments ? "+" : "") + ")"
    }
}
