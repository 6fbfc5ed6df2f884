/// A validated ICMPv6 message (RFC 4443), read in place. Same shape as ICMP
/// for IPv4: type, code, checksum, four type-dependent bytes, then `payload`.
/// The checksum includes the IPv6 pseudo-header, so verifying needs the addresses.
public struct ICMPv6View: CustomStringConvertible {
    public let bytes: UnsafeRawBufferPointer

    public static let headerLength = 8

    @inlinable
    public init(_ buffer: UnsafeRawBufferPointer) throws(WireError) {
        try require(Self.headerLength, in: buffer, .icmpv6)
        bytes = buffer
    }

    @inlinable public var type: UInt8 { bytes.u8(0) }
    @inlinable public var code: UInt8 { bytes.u8(1) }
    @inlinable public var checksum: UInt16 { bytes.u16(2) }
    @inlinable public var restOfHeader: UInt32 { bytes.u32(4) }
    /// Meaningful for echo messages only.
    @inlinable public var identifier: UInt16 { bytes.u16(4) }
    /// Meaningful for echo messages only.
    @inlinable public var sequenceNumber: UInt16 { bytes.u16(6) }
    @inlinable public var payload: UnsafeRawBufferPointer { bytes.suffix(from: Self.headerLength) }

    @inlinable
    public var message: ICMPv6Message { ICMPv6Message(type: type, code: code, restOfHeader: restOfHeader) }

    @inlinable public var isError: Bool { message.isError }

    @inlinable
    public func verifyChecksum(source: IPv6Address, destination: IPv6Address) -> Bool {
        var c = InternetChecksum.pseudoHeader(source: source, destination: destination, protocol: .icmpv6,
                                              length: bytes.count)
        c.add(bytes)
        return c.folded == 0xffff
    }

    /// `ICMP6, echo request, id 7, seq 1, length 64`
    public var description: String { "ICMP6, \(message), length \(bytes.count)" }
}

/// The ICMPv6 messages Sluice understands, and a fallback for all others
/// (neighbor discovery among them: its bodies are the payload).
public enum ICMPv6Message: Equatable, Sendable, CustomStringConvertible {
    case destinationUnreachable(code: ICMPv6UnreachableCode)
    case packetTooBig(mtu: UInt32)
    /// Code 0: hop limit exceeded in transit; code 1: reassembly time exceeded.
    case timeExceeded(code: UInt8)
    /// `pointer` is the offset in the quoted packet where the problem lies.
    case parameterProblem(code: UInt8, pointer: UInt32)
    case echoRequest(identifier: UInt16, sequenceNumber: UInt16)
    case echoReply(identifier: UInt16, sequenceNumber: UInt16)
    case other(type: UInt8, code: UInt8, restOfHeader: UInt32)

    public static let destinationUnreachableType: UInt8 = 1
    public static let packetTooBigType: UInt8 = 2
    public static let timeExceededType: UInt8 = 3
    public static let parameterProblemType: UInt8 = 4
    public static let echoRequestType: UInt8 = 128
    public static let echoReplyType: UInt8 = 129

    @inlinable
    public init(type: UInt8, code: UInt8, restOfHeader: UInt32) {
        switch (type, code) {
        case (Self.destinationUnreachableType, _):
            self = .destinationUnreachable(code: ICMPv6UnreachableCode(rawValue: code))
        case (Self.packetTooBigType, 0):
            self = .packetTooBig(mtu: restOfHeader)
        case (Self.timeExceededType, _):
            self = .timeExceeded(code: code)
        case (Self.parameterProblemType, _):
            self = .parameterProblem(code: code, pointer: restOfHeader)
        case (Self.echoRequestType, 0):
            self = .echoRequest(identifier: UInt16(restOfHeader >> 16), sequenceNumber: UInt16(restOfHeader & 0xffff))
        case (Self.echoReplyType, 0):
            self = .echoReply(identifier: UInt16(restOfHeader >> 16), sequenceNumber: UInt16(restOfHeader & 0xffff))
        default:
            self = .other(type: type, code: code, restOfHeader: restOfHeader)
        }
    }

    public init(_ view: ICMPv6View) { self = view.message }

    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> ICMPv6Message {
        try ICMPv6View(bytes).message
    }

    public var type: UInt8 {
        switch self {
        case .destinationUnreachable: return Self.destinationUnreachableType
        case .packetTooBig: return Self.packetTooBigType
        case .timeExceeded: return Self.timeExceededType
        case .parameterProblem: return Self.parameterProblemType
        case .echoRequest: return Self.echoRequestType
        case .echoReply: return Self.echoReplyType
        case let .other(type, _, _): return type
        }
    }

    public var code: UInt8 {
        switch self {
        case let .destinationUnreachable(code): return code.rawValue
        case .packetTooBig, .echoRequest, .echoReply: return 0
        case let .timeExceeded(code): return code
        case let .parameterProblem(code, _): return code
        case let .other(_, code, _): return code
        }
    }

    public var restOfHeader: UInt32 {
        switch self {
        case .destinationUnreachable, .timeExceeded: return 0
        case let .packetTooBig(mtu): return mtu
        case let .parameterProblem(_, pointer): return pointer
        case let .echoRequest(id, seq), let .echoReply(id, seq): return UInt32(id) << 16 | UInt32(seq)
        case let .other(_, _, rest): return rest
        }
    }

    /// RFC 4443 §2.1: types below 128 are errors.
    public var isError: Bool { type < 128 }

    /// Writes the 8-byte header in front of a payload the caller has already
    /// put at `buffer[8 ..< 8 + payloadLength]`, with the checksum over both
    /// and the pseudo-header. Returns 8, the bytes written. A value that would
    /// read back as another case is refused.
    public func emit(into buffer: UnsafeMutableRawBufferPointer, payloadLength: Int,
                     source: IPv6Address, destination: IPv6Address) throws(WireError) -> Int {
        let (t, c, rest) = (type, code, restOfHeader)
        guard ICMPv6Message(type: t, code: c, restOfHeader: rest) == self else {
            throw .malformed(layer: .icmpv6, reason: .fieldRange)
        }
        guard payloadLength >= 0 else { throw .malformed(layer: .icmpv6, reason: .payloadLength) }
        let length = ICMPv6View.headerLength + payloadLength
        try require(length, in: buffer, .icmpv6)
        buffer.setU8(0, t)
        buffer.setU8(1, c)
        buffer.setU16(2, 0)
        buffer.setU32(4, rest)
        var sum = InternetChecksum.pseudoHeader(source: source, destination: destination, protocol: .icmpv6,
                                                length: length)
        sum.add(UnsafeRawBufferPointer(buffer.sub(0, length)))
        buffer.setU16(2, sum.value)
        return ICMPv6View.headerLength
    }

    /// tcpdump's wording, without the "ICMP6, " in front or the length after.
    public var description: String {
        switch self {
        case let .destinationUnreachable(code): return "destination unreachable, \(code)"
        case let .packetTooBig(mtu): return "packet too big, mtu \(mtu)"
        case let .timeExceeded(code):
            switch code {
            case 0: return "time exceeded in-transit"
            case 1: return "ip6 reassembly time exceeded"
            default: return "time exceeded, code \(code)"
            }
        case let .parameterProblem(code, pointer): return "parameter problem, code \(code), pointer \(pointer)"
        case let .echoRequest(id, seq): return "echo request, id \(id), seq \(seq)"
        case let .echoReply(id, seq): return "echo reply, id \(id), seq \(seq)"
        case let .other(type, code, _):
            switch type {
            case 133: return "router solicitation"
            case 134: return "router advertisement"
            case 135: return "neighbor solicitation"
            case 136: return "neighbor advertisement"
            case 137: return "redirect"
            case 143: return "multicast listener report v2"
            default: return "type-#\(type), code \(code)"
            }
        }
    }
}

/// Destination-unreachable codes (RFC 4443 §3.1).
public struct ICMPv6UnreachableCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let noRoute = Self(rawValue: 0)
    public static let administrativelyProhibited = Self(rawValue: 1)
    public static let beyondScope = Self(rawValue: 2)
    public static let address = Self(rawValue: 3)
    public static let port = Self(rawValue: 4)
    public static let sourcePolicyFailed = Self(rawValue: 5)
    public static let rejectRoute = Self(rawValue: 6)

    public var description: String {
        switch rawValue {
        case 0: return "unreachable route"
        case 1: return "unreachable prohibited"
        case 2: return "beyond scope"
        case 3: return "unreachable address"
        case 4: return "unreachable port"
        case 5: return "source address failed policy"
        case 6: return "reject route"
        default: return "code-#\(rawValue)"
        }
    }
}
