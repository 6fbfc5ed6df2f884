/// A validated ICMP message (RFC 792), read in place. Every message starts
/// with type, code, checksum and four bytes whose meaning depends on the type;
/// the rest is `payload` (echo data, or the quoted datagram of an error).
/// ICMP has no length field: the message is whatever IP carried.
public struct ICMPv4View: CustomStringConvertible {
    public let bytes: UnsafeRawBufferPointer

    public static let headerLength = 8

    @inlinable
    public init(_ buffer: UnsafeRawBufferPointer) throws(WireError) {
        try require(Self.headerLength, in: buffer, .icmpv4)
        bytes = buffer
    }

    @inlinable public var type: UInt8 { bytes.u8(0) }
    @inlinable public var code: UInt8 { bytes.u8(1) }
    @inlinable public var checksum: UInt16 { bytes.u16(2) }
    /// The four type-dependent bytes after the checksum.
    @inlinable public var restOfHeader: UInt32 { bytes.u32(4) }
    /// Meaningful for echo messages only.
    @inlinable public var identifier: UInt16 { bytes.u16(4) }
    /// Meaningful for echo messages only.
    @inlinable public var sequenceNumber: UInt16 { bytes.u16(6) }
    @inlinable public var payload: UnsafeRawBufferPointer { bytes.suffix(from: Self.headerLength) }

    @inlinable
    public var message: ICMPv4Message { ICMPv4Message(type: type, code: code, restOfHeader: restOfHeader) }

    /// Errors quote the datagram that caused them; RFC 1122 §3.2.2 forbids answering them with errors.
    @inlinable public var isError: Bool { message.isError }

    /// The checksum covers the whole message and nothing else.
    @inlinable
    public func verifyChecksum() -> Bool {
        var c = InternetChecksum()
        c.add(bytes)
        return c.folded == 0xffff
    }

    /// `ICMP echo request, id 7, seq 1, length 64`
    public var description: String { "ICMP \(message), length \(bytes.count)" }
}

/// The ICMP messages Sluice understands, and a fallback that keeps the raw
/// fields of all others so that they still print and re-emit exactly.
public enum ICMPv4Message: Equatable, Sendable, CustomStringConvertible {
    case echoReply(identifier: UInt16, sequenceNumber: UInt16)
    /// Every code but 4, which has its own case.
    case destinationUnreachable(code: ICMPv4UnreachableCode)
    /// Type 3 code 4, the message path-MTU discovery listens for (RFC 1191).
    case fragmentationNeeded(nextHopMTU: UInt16)
    case echoRequest(identifier: UInt16, sequenceNumber: UInt16)
    /// Code 0: time to live exceeded in transit; code 1: reassembly time exceeded.
    case timeExceeded(code: UInt8)
    case other(type: UInt8, code: UInt8, restOfHeader: UInt32)

    public static let echoReplyType: UInt8 = 0
    public static let destinationUnreachableType: UInt8 = 3
    public static let echoRequestType: UInt8 = 8
    public static let timeExceededType: UInt8 = 11

    @inlinable
    public init(type: UInt8, code: UInt8, restOfHeader: UInt32) {
        switch (type, code) {
        case (Self.echoReplyType, 0):
            self = .echoReply(identifier: UInt16(restOfHeader >> 16), sequenceNumber: UInt16(restOfHeader & 0xffff))
        case (Self.echoRequestType, 0):
            self = .echoRequest(identifier: UInt16(restOfHeader >> 16), sequenceNumber: UInt16(restOfHeader & 0xffff))
        case (Self.destinationUnreachableType, ICMPv4UnreachableCode.fragmentationNeeded.rawValue):
            self = .fragmentationNeeded(nextHopMTU: UInt16(restOfHeader & 0xffff))
        case (Self.destinationUnreachableType, _):
            self = .destinationUnreachable(code: ICMPv4UnreachableCode(rawValue: code))
        case (Self.timeExceededType, _):
            self = .timeExceeded(code: code)
        default:
            self = .other(type: type, code: code, restOfHeader: restOfHeader)
        }
    }

    public init(_ view: ICMPv4View) { self = view.message }

    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> ICMPv4Message {
        try ICMPv4View(bytes).message
    }

    public var type: UInt8 {
        switch self {
        case .echoReply: return Self.echoReplyType
        case .destinationUnreachable, .fragmentationNeeded: return Self.destinationUnreachableType
        case .echoRequest: return Self.echoRequestType
        case .timeExceeded: return Self.timeExceededType
        case let .other(type, _, _): return type
        }
    }

    public var code: UInt8 {
        switch self {
        case .echoReply, .echoRequest: return 0
        case let .destinationUnreachable(code): return code.rawValue
        case .fragmentationNeeded: return ICMPv4UnreachableCode.fragmentationNeeded.rawValue
        case let .timeExceeded(code): return code
        case let .other(_, code, _): return code
        }
    }

    public var restOfHeader: UInt32 {
        switch self {
        case let .echoReply(id, seq), let .echoRequest(id, seq): return UInt32(id) << 16 | UInt32(seq)
        case .destinationUnreachable, .timeExceeded: return 0
        case let .fragmentationNeeded(mtu): return UInt32(mtu)
        case let .other(_, _, rest): return rest
        }
    }

    /// RFC 1122 §3.2.2: the error types (everything but queries and replies).
    public var isError: Bool {
        switch type {
        case 3, 4, 5, 11, 12: return true
        default: return false
        }
    }

    /// Writes the 8-byte header in front of a payload the caller has already
    /// put at `buffer[8 ..< 8 + payloadLength]`, with the checksum over both.
    /// Returns 8, the bytes written. A value that would read back as another
    /// case (`.other` spelling an echo request, say) is refused.
    public func emit(into buffer: UnsafeMutableRawBufferPointer, payloadLength: Int) throws(WireError) -> Int {
        let (t, c, rest) = (type, code, restOfHeader)
        guard ICMPv4Message(type: t, code: c, restOfHeader: rest) == self else {
            throw .malformed(layer: .icmpv4, reason: .fieldRange)
        }
        guard payloadLength >= 0 else { throw .malformed(layer: .icmpv4, reason: .payloadLength) }
        let length = ICMPv4View.headerLength + payloadLength
        try require(length, in: buffer, .icmpv4)
        buffer.setU8(0, t)
        buffer.setU8(1, c)
        buffer.setU16(2, 0)
        buffer.setU32(4, rest)
        buffer.setU16(2, InternetChecksum.of(UnsafeRawBufferPointer(buffer.sub(0, length))))
        return ICMPv4View.headerLength
    }

    /// tcpdump's wording, without the "ICMP" in front or the length after.
    public var description: String {
        switch self {
        case let .echoReply(id, seq): return "echo reply, id \(id), seq \(seq)"
        case let .echoRequest(id, seq): return "echo request, id \(id), seq \(seq)"
        case let .destinationUnreachable(code): return "\(code) unreachable"
        case let .fragmentationNeeded(mtu): return "unreachable - need to frag (mtu \(mtu))"
        case let .timeExceeded(code):
            switch code {
            case 0: return "time exceeded in-transit"
            case 1: return "ip reassembly time exceeded"
            default: return "time exceeded, code \(code)"
            }
        case let .other(type, code, _): return "type-#\(type), code \(code)"
        }
    }
}

/// Destination-unreachable codes (RFC 792, RFC 1812 §5.2.7.1).
public struct ICMPv4UnreachableCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let network = Self(rawValue: 0)
    public static let host = Self(rawValue: 1)
    public static let `protocol` = Self(rawValue: 2)
    public static let port = Self(rawValue: 3)
    public static let fragmentationNeeded = Self(rawValue: 4)
    public static let sourceRouteFailed = Self(rawValue: 5)
    public static let networkProhibited = Self(rawValue: 9)
    public static let hostProhibited = Self(rawValue: 10)
    public static let administrativelyProhibited = Self(rawValue: 13)

    public var description: String {
        switch rawValue {
        case 0: return "net"
        case 1: return "host"
        case 2: return "protocol"
        case 3: return "port"
        case 4: return "need to frag"
        case 5: return "source route failed"
        case 9: return "net prohibited"
        case 10: return "host prohibited"
        case 13: return "admin prohibited filter"
        default: return "code-#\(rawValue)"
        }
    }
}
