/// A validated IPv4 datagram (RFC 791), read in place.
///
/// `bytes` is cut at the total length, so link-layer padding after the
/// datagram never reaches the payload. The header checksum is not checked at
/// init: a packet with a bad checksum is still a well-formed packet that a
/// caller may want to log; ask `verifyChecksum()`.
public struct IPv4View: CustomStringConvertible {
    /// The datagram, exactly `totalLength` bytes.
    public let bytes: UnsafeRawBufferPointer

    public static let minimumHeaderLength = 20

    /// Validates a datagram that must be whole.
    @inlinable
    public init(_ buffer: UnsafeRawBufferPointer) throws(WireError) {
        try self.init(buffer, quoted: false)
    }

    /// Validates the datagram an ICMP error quotes: the header must be whole,
    /// but the payload may stop short of the total length (RFC 792 quotes only
    /// 8 bytes of it, RFC 1812 §4.3.2.3 as much as fits in 576).
    @inlinable
    public init(quoted buffer: UnsafeRawBufferPointer) throws(WireError) {
        try self.init(buffer, quoted: true)
    }

    @inlinable
    init(_ buffer: UnsafeRawBufferPointer, quoted: Bool) throws(WireError) {
        try require(Self.minimumHeaderLength, in: buffer, .ipv4)
        let versionAndIHL = buffer.u8(0)
        guard versionAndIHL >> 4 == 4 else { throw .malformed(layer: .ipv4, reason: .version) }
        let headerLength = Int(versionAndIHL & 0x0f) * 4
        guard headerLength >= Self.minimumHeaderLength else { throw .malformed(layer: .ipv4, reason: .headerLength) }
        try require(headerLength, in: buffer, .ipv4)
        let totalLength = Int(buffer.u16(2))
        guard totalLength >= headerLength else { throw .malformed(layer: .ipv4, reason: .totalLength) }
        // A fragment whose end lies past 65535 bytes can only be an attack
        // (the "ping of death"): no reassembled datagram can be that long.
        let fragmentByteOffset = Int(buffer.u16(6) & 0x1fff) * 8
        guard fragmentByteOffset + totalLength - headerLength <= 65535 else {
            throw .malformed(layer: .ipv4, reason: .fieldRange)
        }
        try IPv4Options.validate(buffer.sub(Self.minimumHeaderLength, headerLength - Self.minimumHeaderLength))
        if quoted {
            bytes = buffer.sub(0, min(totalLength, buffer.count))
        } else {
            try require(totalLength, in: buffer, .ipv4)
            bytes = buffer.sub(0, totalLength)
        }
    }

    @inlinable public var version: UInt8 { bytes.u8(0) >> 4 }
    /// The IHL field: the header length in 32-bit words.
    @inlinable public var internetHeaderLength: UInt8 { bytes.u8(0) & 0x0f }
    /// The header length in bytes, options included.
    @inlinable public var headerLength: Int { Int(internetHeaderLength) * 4 }
    @inlinable public var typeOfService: UInt8 { bytes.u8(1) }
    @inlinable public var dscp: UInt8 { typeOfService >> 2 }
    @inlinable public var ecn: UInt8 { typeOfService & 0x03 }
    /// The total-length field. Equals `bytes.count` unless the view was made from a quote.
    @inlinable public var totalLength: UInt16 { bytes.u16(2) }
    @inlinable public var identification: UInt16 { bytes.u16(4) }
    /// The reserved flag bit, which RFC 791 says must be zero; kept so it can be seen.
    @inlinable public var reservedFlag: Bool { bytes.u8(6) & 0x80 != 0 }
    @inlinable public var dontFragment: Bool { bytes.u8(6) & 0x40 != 0 }
    @inlinable public var moreFragments: Bool { bytes.u8(6) & 0x20 != 0 }
    /// The fragment-offset field, in units of 8 bytes as on the wire.
    @inlinable public var fragmentOffset: UInt16 { bytes.u16(6) & 0x1fff }
    /// Where this fragment's data sits in the original payload, in bytes.
    @inlinable public var fragmentByteOffset: Int { Int(fragmentOffset) * 8 }
    @inlinable public var isFragment: Bool { moreFragments || fragmentOffset != 0 }
    @inlinable public var timeToLive: UInt8 { bytes.u8(8) }
    @inlinable public var `protocol`: IPProtocol { IPProtocol(rawValue: bytes.u8(9)) }
    @inlinable public var headerChecksum: UInt16 { bytes.u16(10) }
    @inlinable public var source: IPv4Address { IPv4Address.load(bytes, 12) }
    @inlinable public var destination: IPv4Address { IPv4Address.load(bytes, 16) }

    /// The options area, padding included (empty when IHL is 5).
    @inlinable public var options: UnsafeRawBufferPointer {
        bytes.sub(Self.minimumHeaderLength, headerLength - Self.minimumHeaderLength)
    }

    /// The options one by one, already known to be well formed.
    @inlinable public var optionList: IPv4Options { IPv4Options(options) }

    @inlinable public var header: UnsafeRawBufferPointer { bytes.sub(0, headerLength) }

    /// The data after the header, up to the total length.
    @inlinable public var payload: UnsafeRawBufferPointer { bytes.suffix(from: headerLength) }

    /// True when the header sums to 0xffff with its checksum included.
    @inlinable
    public func verifyChecksum() -> Bool {
        var c = InternetChecksum()
        c.add(header)
        return c.folded == 0xffff
    }

    /// The pseudo-header sum an upper layer of `length` bytes adds to its checksum.
    @inlinable
    public func pseudoHeader(length: Int) -> InternetChecksum {
        InternetChecksum.pseudoHeader(source: source, destination: destination, protocol: self.protocol, length: length)
    }

    public var description: String { IPPacketView(self).description }
}

/// The IPv4 options area, walked without copying. RFC 791: type 0 ends the
/// list, type 1 is a one-byte no-op, every other option is type, length
/// (counting both), data.
public struct IPv4Options: Sequence, CustomStringConvertible {
    public let bytes: UnsafeRawBufferPointer

    @inlinable public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    public struct Option: CustomStringConvertible {
        public var type: UInt8
        /// The option's data, after its type and length bytes.
        public var data: UnsafeRawBufferPointer

        @inlinable
        public init(type: UInt8, data: UnsafeRawBufferPointer) {
            self.type = type
            self.data = data
        }

        public static let endOfList: UInt8 = 0
        public static let noOperation: UInt8 = 1
        public static let recordRoute: UInt8 = 7
        public static let timestamp: UInt8 = 68
        public static let looseSourceRoute: UInt8 = 131
        public static let strictSourceRoute: UInt8 = 137
        public static let routerAlert: UInt8 = 148

        public var description: String {
            switch type {
            case Self.noOperation: return "nop"
            case Self.recordRoute: return "rr"
            case Self.timestamp: return "ts"
            case Self.looseSourceRoute: return "lsrr"
            case Self.strictSourceRoute: return "ssrr"
            case Self.routerAlert: return "RA"
            default: return "opt-\(type)"
            }
        }
    }

    /// Throws unless every option's length byte is present, at least 2 and
    /// inside the area; the iterator relies on this.
    @inlinable
    static func validate(_ area: UnsafeRawBufferPointer) throws(WireError) {
        var i = 0
        while i < area.count {
            let type = area.u8(i)
            if type == Option.endOfList { return }
            if type == Option.noOperation { i += 1; continue }
            guard i + 1 < area.count else { throw .malformed(layer: .ipv4, reason: .optionLength) }
            let length = Int(area.u8(i + 1))
            guard length >= 2, i + length <= area.count else { throw .malformed(layer: .ipv4, reason: .optionLength) }
            i += length
        }
    }

    public struct Iterator: IteratorProtocol {
        @usableFromInline let area: UnsafeRawBufferPointer
        @usableFromInline var index = 0

        @inlinable init(_ area: UnsafeRawBufferPointer) { self.area = area }

        @inlinable
        public mutating func next() -> Option? {
            guard index < area.count else { return nil }
            let type = area.u8(index)
            if type == Option.endOfList { index = area.count; return nil }
            if type == Option.noOperation {
                index += 1
                return Option(type: type, data: area.sub(index, 0))
            }
            // Validated at init, but an iterator over caller-made bytes must not trap either.
            guard index + 1 < area.count else { index = area.count; return nil }
            let length = Int(area.u8(index + 1))
            guard length >= 2, index + length <= area.count else { index = area.count; return nil }
            let option = Option(type: type, data: area.sub(index + 2, length - 2))
            index += length
            return option
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(bytes) }

    public var description: String { "[" + map(\.description).joined(separator: ",") + "]" }
}

/// The fields of an IPv4 header, for building packets and for tests.
///
/// Options are not stored (that would mean an allocation per packet): the
/// value keeps only how long the header is, and `emit` takes the option bytes
/// from the caller. The checksum is not stored either; `emit` computes it.
/// Nor is the reserved flag: it must be zero, so emit writes zero.
public struct IPv4Header: Equatable, Sendable, CustomStringConvertible {
    /// The header length in bytes: 20 plus the options area, a multiple of 4, at most 60.
    public var headerLength: Int
    public var typeOfService: UInt8
    /// The total-length field: header plus payload.
    public var totalLength: Int
    public var identification: UInt16
    public var dontFragment: Bool
    public var moreFragments: Bool
    /// In units of 8 bytes, as on the wire (13 bits).
    public var fragmentOffset: UInt16
    public var timeToLive: UInt8
    public var `protocol`: IPProtocol
    public var source: IPv4Address
    public var destination: IPv4Address

    public init(source: IPv4Address, destination: IPv4Address, protocol proto: IPProtocol,
                payloadLength: Int, timeToLive: UInt8 = 64, identification: UInt16 = 0,
                dontFragment: Bool = true, moreFragments: Bool = false, fragmentOffset: UInt16 = 0,
                typeOfService: UInt8 = 0, optionsLength: Int = 0) {
        self.headerLength = IPv4View.minimumHeaderLength + optionsLength
        self.typeOfService = typeOfService
        self.totalLength = headerLength + payloadLength
        self.identification = identification
        self.dontFragment = dontFragment
        self.moreFragments = moreFragments
        self.fragmentOffset = fragmentOffset
        self.timeToLive = timeToLive
        self.protocol = proto
        self.source = source
        self.destination = destination
    }

    public init(_ view: IPv4View) {
        headerLength = view.headerLength
        typeOfService = view.typeOfService
        totalLength = Int(view.totalLength)
        identification = view.identification
        dontFragment = view.dontFragment
        moreFragments = view.moreFragments
        fragmentOffset = view.fragmentOffset
        timeToLive = view.timeToLive
        self.protocol = view.protocol
        source = view.source
        destination = view.destination
    }

    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> IPv4Header {
        IPv4Header(try IPv4View(bytes))
    }

    public var payloadLength: Int { totalLength - headerLength }
    public var fragmentByteOffset: Int { Int(fragmentOffset) * 8 }
    public var isFragment: Bool { moreFragments || fragmentOffset != 0 }

    /// Writes the `headerLength`-byte header with its checksum and returns
    /// that length. `options` fill the options area from its start; the rest
    /// is padded with end-of-list bytes (zeros).
    public func emit(into buffer: UnsafeMutableRawBufferPointer,
                     options: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0))
        throws(WireError) -> Int
    {
        let minimum = IPv4View.minimumHeaderLength
        guard headerLength >= minimum, headerLength <= 60, headerLength % 4 == 0 else {
            throw .malformed(layer: .ipv4, reason: .headerLength)
        }
        guard totalLength >= headerLength, totalLength <= 65535 else { throw .malformed(layer: .ipv4, reason: .totalLength) }
        guard fragmentOffset <= 0x1fff else { throw .malformed(layer: .ipv4, reason: .fieldRange) }
        guard options.count <= headerLength - minimum else { throw .malformed(layer: .ipv4, reason: .optionLength) }
        try require(headerLength, in: buffer, .ipv4)
        buffer.setU8(0, 0x40 | UInt8(headerLength / 4))
        buffer.setU8(1, typeOfService)
        buffer.setU16(2, UInt16(totalLength))
        buffer.setU16(4, identification)
        buffer.setU16(6, (dontFragment ? 0x4000 : 0) | (moreFragments ? 0x2000 : 0) | fragmentOffset)
        buffer.setU8(8, timeToLive)
        buffer.setU8(9, self.protocol.rawValue)
        buffer.setU16(10, 0)
        source.store(buffer, 12)
        destination.store(buffer, 16)
        let area = buffer.sub(minimum, headerLength - minimum)
        if options.count > 0 { area.copyMemory(from: options) }
        for i in options.count ..< area.count { area[i] = IPv4Options.Option.endOfList }
        buffer.setU16(10, InternetChecksum.of(UnsafeRawBufferPointer(buffer.sub(0, headerLength))))
        return headerLength
    }

    /// tcpdump -v's header line: `IP (tos 0x0, ttl 64, id 1, offset 0, flags [DF], proto UDP (17), length 84) 10.0.0.1 > 10.0.0.2`
    public var description: String {
        IPv4Header.describe(typeOfService: typeOfService, timeToLive: timeToLive, identification: identification,
                            fragmentByteOffset: fragmentByteOffset, dontFragment: dontFragment,
                            moreFragments: moreFragments, protocol: self.protocol, totalLength: totalLength,
                            optionsLength: headerLength - IPv4View.minimumHeaderLength)
            + " \(source) > \(destination)"
    }

    static func describe(typeOfService: UInt8, timeToLive: UInt8, identification: UInt16, fragmentByteOffset: Int,
                         dontFragment: Bool, moreFragments: Bool, protocol proto: IPProtocol, totalLength: Int,
                         optionsLength: Int) -> String {
        var flags: [String] = []
        if dontFragment { flags.append("DF") }
        if moreFragments { flags.append("+") }
        let tos = "0x" + String(typeOfService, radix: 16)
        var text = "IP (tos \(tos), ttl \(timeToLive), id \(identification), offset \(fragmentByteOffset), "
        text += "flags [\(flags.isEmpty ? "none" : flags.joined(separator: ","))], "
        text += "proto \(proto) (\(proto.rawValue)), length \(totalLength)"
        if optionsLength > 0 { text += ", options length \(optionsLength)" }
        return text + ")"
    }
}
