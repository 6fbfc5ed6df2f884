public import Wire

/// Where a relayed connection goes: an address or a name, and a port. A name is
/// kept as a name (fake-IP DNS knows it) so the proxy resolves it, not us.
public struct ProxyTarget: Hashable, Sendable, CustomStringConvertible {
    public enum Host: Hashable, Sendable, CustomStringConvertible {
        case ipv4(IPv4Address)
        case ipv6(IPv6Address)
        case domain(String)

        public var description: String {
            switch self {
            case let .ipv4(a): return a.description
            case let .ipv6(a): return a.description
            case let .domain(name): return name
            }
        }
    }

    public var host: Host
    public var port: UInt16

    @inlinable public init(host: Host, port: UInt16) { self.host = host; self.port = port }

    public init(_ address: IPAddress, port: UInt16) {
        switch address {
        case let .v4(a): host = .ipv4(a)
        case let .v6(a): host = .ipv6(a)
        }
        self.port = port
    }

    /// The longest name SOCKS5 can carry (a one-byte length) and the longest
    /// we accept anywhere, so a target valid on one side is valid on the other.
    public static let maximumDomainLength = 255

    /// `host:port` as written in HTTP CONNECT and in logs; IPv6 in brackets.
    public var description: String {
        switch host {
        case let .ipv6(a): return "[\(a)]:\(port)"
        case .ipv4, .domain: return "\(host):\(port)"
        }
    }

    /// `host` as an HTTP authority writes it (brackets around IPv6), without the port.
    public var authorityHost: String {
        switch host {
        case let .ipv6(a): return "[\(a)]"
        case .ipv4, .domain: return host.description
        }
    }

    /// True for 0.0.0.0 and ::, which a SOCKS5 server uses to mean "the address
    /// you already reach me at" in a UDP ASSOCIATE reply.
    public var isUnspecified: Bool {
        switch host {
        case let .ipv4(a): return a == .any
        case let .ipv6(a): return a == .any
        case .domain: return false
        }
    }

    /// Parses `host:port`, `[v6]:port` (the CONNECT request-target, RFC 9110 §9.3.6).
    /// A bare IPv4 or IPv6 literal becomes an address, anything else must be a
    /// plausible host name. Nil for anything else, including a missing port.
    public init?(authority text: some StringProtocol) {
        let s = Substring(text)
        let hostPart: Substring, portPart: Substring
        if s.first == "[" {
            guard let close = s.firstIndex(of: "]") else { return nil }
            hostPart = s[s.index(after: s.startIndex) ..< close]
            let rest = s[s.index(after: close)...]
            guard rest.first == ":" else { return nil }
            portPart = rest.dropFirst()
            guard let a = IPv6Address(hostPart) else { return nil }
            guard let port = ProxyTarget.port(portPart) else { return nil }
            self.init(host: .ipv6(a), port: port)
            return
        }
        guard let colon = s.lastIndex(of: ":") else { return nil }
        hostPart = s[..<colon]
        portPart = s[s.index(after: colon)...]
        guard let port = ProxyTarget.port(portPart), let host = Host(name: hostPart) else { return nil }
        if case .ipv6 = host { return nil } // an IPv6 literal needs its brackets
        self.init(host: host, port: port)
    }

    static func port(_ text: Substring) -> UInt16? {
        guard !text.isEmpty, text.count <= 5, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let p = UInt16(text), p != 0 else { return nil }
        return p
    }
}

extension ProxyTarget.Host {
    /// An address literal, or a host name made of letters, digits, '-', '_' and '.'
    /// (no spaces or control bytes: a name ends up in request lines and logs).
    public init?(name text: some StringProtocol) {
        if let a = IPv4Address(text) { self = .ipv4(a); return }
        if text.contains(":") {
            guard let a = IPv6Address(text) else { return nil }
            self = .ipv6(a); return
        }
        guard ProxyTarget.Host.isPlausibleName(text.utf8) else { return nil }
        self = .domain(String(text))
    }

    static func isPlausibleName(_ bytes: some Collection<UInt8>) -> Bool {
        guard !bytes.isEmpty, bytes.count <= ProxyTarget.maximumDomainLength else { return false }
        for b in bytes {
            switch b {
            case UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "A") ... UInt8(ascii: "Z"),
                 UInt8(ascii: "0") ... UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                continue
            default:
                return false
            }
        }
        return true
    }
}

/// A username and password, as SOCKS5 (RFC 1929) and HTTP Basic both take them.
/// Prints without the password, so it can go into logs.
public struct ProxyCredentials: Hashable, Sendable, CustomStringConvertible {
    public var username: String
    public var password: String

    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    /// RFC 1929 gives each field a one-byte length, and forbids an empty one.
    public var fitsSOCKS5: Bool {
        (1 ... 255).contains(username.utf8.count) && (1 ... 255).contains(password.utf8.count)
    }

    public var description: String { "\(username):***" }
}
