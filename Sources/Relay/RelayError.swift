/// Why a proxy handshake failed. SOCKS5 reply codes (RFC 1928 §6) have a case
/// each; the engine builds the same cases from errno when it connects directly,
/// so one table (`appFacing`) decides what the app sees either way.
public enum RelayError: Error, Hashable, Sendable, CustomStringConvertible {
    /// SOCKS5 reply 1.
    case generalFailure
    /// SOCKS5 reply 2; HTTP 403.
    case notAllowed
    /// SOCKS5 reply 3.
    case networkUnreachable
    /// SOCKS5 reply 4.
    case hostUnreachable
    /// SOCKS5 reply 5.
    case connectionRefused
    /// SOCKS5 reply 6.
    case ttlExpired
    /// SOCKS5 reply 7: the proxy does not do CONNECT or UDP ASSOCIATE.
    case commandNotSupported
    /// SOCKS5 reply 8: the proxy does not take this kind of address (often: no names).
    case addressTypeNotSupported
    /// RFC 1929 status ≠ 0, or HTTP 407.
    case authRejected
    /// The SOCKS5 server chose X'FF': none of the methods we offered.
    case noAcceptableMethod
    /// An HTTP proxy answered CONNECT with a status we have no better name for.
    case httpStatus(UInt16)
    /// The peer broke the protocol.
    case protocolViolation(Violation)
    /// The peer closed before the handshake finished.
    case unexpectedClose
    /// A stage took longer than its `HandshakeDeadlines` entry (the engine raises it).
    case timedOut(HandshakeStage)
    /// Our own input cannot be said in this protocol (a 300-byte name for SOCKS5…).
    case unrepresentable(Unrepresentable)

    /// A closed set of reasons keeps the error path free of string building.
    public enum Violation: String, Hashable, Sendable {
        case version = "wrong version"
        case method = "a method we did not offer"
        case reserved = "reserved field not zero"
        case addressType = "unknown address type"
        case domainName = "bad domain name"
        case authVersion = "wrong authentication version"
        case replyCode = "unassigned reply code"
        case command = "unknown command"
        case fragment = "fragmented datagram"
        case truncated = "truncated datagram"
        case statusLine = "bad status line"
        case requestLine = "bad request line"
        case headerSyntax = "bad header line"
        case headTooLarge = "head larger than 16 KiB"
        case tooManyHeaders = "too many header lines"
        case requestTarget = "bad request target"
        case unexpectedBytes = "bytes the protocol does not expect here"
        case authentication = "bad authentication message"
    }

    public enum Unrepresentable: String, Hashable, Sendable {
        case credentialLength = "username or password not 1…255 bytes"
        case domainLength = "domain name longer than 255 bytes"
        case headerValue = "header value with a control character"
        case bufferTooSmall = "output buffer too small"
    }

    /// What the app should see, so a proxied flow fails the way a real network would.
    public var appFacing: AppFacingFailure {
        switch self {
        case .connectionRefused: return .reset
        case .hostUnreachable, .ttlExpired: return .unreachable(.host)
        case .networkUnreachable: return .unreachable(.network)
        case .notAllowed: return .unreachable(.administrativelyProhibited)
        case let .timedOut(stage):
            switch stage {
            // Nothing answered at all, or the proxy could not reach the target in time:
            // a real network would leave the app waiting; we fail it fast instead.
            case .connect, .reply: return .unreachable(.host)
            case .greeting, .auth: return .badGateway
            }
        case let .httpStatus(code):
            return code == 504 ? .unreachable(.host) : .badGateway
        case .generalFailure, .commandNotSupported, .addressTypeNotSupported, .authRejected,
             .noAcceptableMethod, .protocolViolation, .unexpectedClose, .unrepresentable:
            return .badGateway
        }
    }

    public var description: String {
        switch self {
        case .generalFailure: return "general SOCKS server failure (reply 1)"
        case .notAllowed: return "connection not allowed by ruleset"
        case .networkUnreachable: return "network unreachable"
        case .hostUnreachable: return "host unreachable"
        case .connectionRefused: return "connection refused"
        case .ttlExpired: return "TTL expired"
        case .commandNotSupported: return "command not supported (reply 7)"
        case .addressTypeNotSupported: return "address type not supported (reply 8)"
        case .authRejected: return "proxy rejected the credentials"
        case .noAcceptableMethod: return "no acceptable authentication method"
        case let .httpStatus(code): return "proxy answered HTTP \(code)"
        case let .protocolViolation(v): return "protocol violation: \(v.rawValue)"
        case .unexpectedClose: return "proxy closed during the handshake"
        case let .timedOut(stage): return "timed out in the \(stage) stage"
        case let .unrepresentable(u): return "cannot encode: \(u.rawValue)"
        }
    }
}

/// How the engine answers the app when a relayed flow fails.
public enum AppFacingFailure: Hashable, Sendable, CustomStringConvertible {
    /// A TCP RST, as from a closed port.
    case reset
    /// An ICMP / ICMPv6 destination unreachable with this code.
    case unreachable(Unreachable)
    /// The proxy itself failed: a 502 for a flow parsed as HTTP, a RST otherwise.
    case badGateway

    public enum Unreachable: Hashable, Sendable {
        /// ICMP code 0 / ICMPv6 code 0 (no route).
        case network
        /// ICMP code 1 / ICMPv6 code 3 (address unreachable).
        case host
        /// ICMP code 13 / ICMPv6 code 1.
        case administrativelyProhibited

        public var icmpv4Code: UInt8 {
            switch self {
            case .network: return 0
            case .host: return 1
            case .administrativelyProhibited: return 13
            }
        }

        public var icmpv6Code: UInt8 {
            switch self {
            case .network: return 0
            case .host: return 3
            case .administrativelyProhibited: return 1
            }
        }
    }

    public var description: String {
        switch self {
        case .reset: return "RST"
        case let .unreachable(u): return "ICMP unreachable (\(u))"
        case .badGateway: return "502 / RST"
        }
    }
}

/// The stages of a proxy handshake, each with its own deadline.
public enum HandshakeStage: String, Hashable, Sendable, CustomStringConvertible {
    /// TCP connect to the proxy.
    case connect
    /// SOCKS5 method selection; for HTTP, unused.
    case greeting
    /// RFC 1929 username/password exchange.
    case auth
    /// The answer to CONNECT / UDP ASSOCIATE: the proxy's own connect to the target.
    case reply

    public var description: String { rawValue }
}
