import Wire

/// RFC 1928 field values shared by the client, the server and UDP ASSOCIATE.
public enum SOCKS5 {
    public static let version: UInt8 = 5
    /// RFC 1929 §2: the username/password sub-negotiation has its own version.
    public static let authVersion: UInt8 = 1

    public enum Method {
        public static let noAuthentication: UInt8 = 0x00
        public static let usernamePassword: UInt8 = 0x02
        public static let noAcceptable: UInt8 = 0xFF
    }

    public enum Command: UInt8, Hashable, Sendable, CustomStringConvertible {
        case connect = 1
        case bind = 2
        case udpAssociate = 3

        public var description: String {
            switch self {
            case .connect: return "CONNECT"
            case .bind: return "BIND"
            case .udpAssociate: return "UDP ASSOCIATE"
            }
        }
    }

    public enum AddressType {
        public static let ipv4: UInt8 = 1
        public static let domain: UInt8 = 3
        public static let ipv6: UInt8 = 4
    }

    /// RFC 1928 §6 REP values.
    public enum Reply {
        public static let succeeded: UInt8 = 0
        public static let generalFailure: UInt8 = 1
        public static let notAllowed: UInt8 = 2
        public static let networkUnreachable: UInt8 = 3
        public static let hostUnreachable: UInt8 = 4
        public static let connectionRefused: UInt8 = 5
        public static let ttlExpired: UInt8 = 6
        public static let commandNotSupported: UInt8 = 7
        public static let addressTypeNotSupported: UInt8 = 8
    }

    /// The error a non-zero REP stands for; nil for success. An unassigned code
    /// is the peer's mistake, not a reason we can name.
    static func error(forReply code: UInt8) -> RelayError? {
        switch code {
        case Reply.succeeded: return nil
        case Reply.generalFailure: return .generalFailure
        case Reply.notAllowed: return .notAllowed
        case Reply.networkUnreachable: return .networkUnreachable
        case Reply.hostUnreachable: return .hostUnreachable
        case Reply.connectionRefused: return .connectionRefused
        case Reply.ttlExpired: return .ttlExpired
        case Reply.commandNotSupported: return .commandNotSupported
        case Reply.addressTypeNotSupported: return .addressTypeNotSupported
        default: return .protocolViolation(.replyCode)
        }
    }

    /// The REP a server sends for an outcome the engine reports as an error.
    static func reply(for error: RelayError) -> UInt8 {
        switch error {
        case .notAllowed: return Reply.notAllowed
        case .networkUnreachable: return Reply.networkUnreachable
        case .hostUnreachable, .timedOut: return Reply.hostUnreachable
        case .connectionRefused: return Reply.connectionRefused
        case .ttlExpired: return Reply.ttlExpired
        case .commandNotSupported: return Reply.commandNotSupported
        case .addressTypeNotSupported: return Reply.addressTypeNotSupported
        case let .httpStatus(code) where code == 504: return Reply.hostUnreachable
        case .generalFailure, .authRejected, .noAcceptableMethod, .httpStatus, .protocolViolation,
             .unexpectedClose, .unrepresentable:
            return Reply.generalFailure
        }
    }
}

/// The ATYP / ADDR / PORT triple that requests, replies and UDP headers share.
enum SOCKS5Address {
    /// Bytes the triple takes for `target`, or nil if a name is too long to say.
    static func encodedLength(_ target: ProxyTarget) -> Int? {
        switch target.host {
        case .ipv4: return 1 + 4 + 2
        case .ipv6: return 1 + 16 + 2
        case let .domain(name):
            let n = name.utf8.count
            return (1 ... ProxyTarget.maximumDomainLength).contains(n) ? 1 + 1 + n + 2 : nil
        }
    }

    /// Writes the triple at `offset`; the caller has checked the room with
    /// `encodedLength`. Returns the offset after the port.
    static func write(_ target: ProxyTarget, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        var i = offset
        switch target.host {
        case let .ipv4(a):
            buffer.setU8(i, SOCKS5.AddressType.ipv4)
            a.store(buffer, i + 1)
            i += 5
        case let .ipv6(a):
            buffer.setU8(i, SOCKS5.AddressType.ipv6)
            a.store(buffer, i + 1)
            i += 17
        case let .domain(name):
            buffer.setU8(i, SOCKS5.AddressType.domain)
            buffer.setU8(i + 1, UInt8(truncatingIfNeeded: name.utf8.count))
            i += 2
            for byte in name.utf8 {
                buffer.setU8(i, byte)
                i += 1
            }
        }
        buffer.setU16(i, target.port)
        return i + 2
    }

    static func bytes(_ target: ProxyTarget) -> [UInt8]? {
        guard let n = encodedLength(target) else { return nil }
        return [UInt8](unsafeUninitializedCapacity: n) { storage, count in
            let raw = UnsafeMutableRawBufferPointer(storage)
            count = write(target, into: raw, at: 0)
        }
    }

    enum Parsed {
        case needMore
        case target(ProxyTarget, end: Int)
    }

    /// Reads the triple at `offset`. `.needMore` if the buffer stops inside it.
    /// A name must be a plausible host name: it ends up in logs and request lines.
    static func parse(_ buffer: UnsafeRawBufferPointer, at offset: Int) throws(RelayError) -> Parsed {
        guard buffer.count > offset else { return .needMore }
        switch buffer.u8(offset) {
        case SOCKS5.AddressType.ipv4:
            guard buffer.count >= offset + 7 else { return .needMore }
            let target = ProxyTarget(host: .ipv4(IPv4Address.load(buffer, offset + 1)), port: buffer.u16(offset + 5))
            return .target(target, end: offset + 7)
        case SOCKS5.AddressType.ipv6:
            guard buffer.count >= offset + 19 else { return .needMore }
            let target = ProxyTarget(host: .ipv6(IPv6Address.load(buffer, offset + 1)), port: buffer.u16(offset + 17))
            return .target(target, end: offset + 19)
        case SOCKS5.AddressType.domain:
            guard buffer.count >= offset + 2 else { return .needMore }
            let n = Int(buffer.u8(offset + 1))
            guard buffer.count >= offset + 2 + n + 2 else { return .needMore }
            let name = buffer.sub(offset + 2, n)
            guard ProxyTarget.Host.isPlausibleName(name) else { throw .protocolViolation(.domainName) }
            let text = String(decoding: name, as: UTF8.self)
            return .target(ProxyTarget(host: .domain(text), port: buffer.u16(offset + 2 + n)), end: offset + 2 + n + 2)
        default:
            throw .protocolViolation(.addressType)
        }
    }
}
