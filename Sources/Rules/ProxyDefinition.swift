/// One line of [Proxy]: `NAME = KIND, ...`.
public struct ProxyDefinition: Equatable, Sendable, CustomStringConvertible {
    public var name: String
    public var kind: ProxyKind
    public var line: Int

    public init(name: String, kind: ProxyKind, line: Int) {
        self.name = name; self.kind = kind; self.line = line
    }

    /// The upstream server for socks5 and http proxies; nil for the local kinds.
    public var server: ProxyServer? {
        switch kind {
        case let .socks5(server), let .http(server): return server
        case .direct, .reject, .rejectRST, .rejectDrop, .rejectTinyGIF: return nil
        }
    }

    public var description: String { "\(name) = \(kind)" }
}

/// What a proxy does with a flow.
public enum ProxyKind: Equatable, Sendable, CustomStringConvertible {
    /// `socks5, HOST, PORT[, username=, password=, udp-relay=]` (RFC 1928, RFC 1929).
    case socks5(ProxyServer)
    /// `http, HOST, PORT[, username=, password=]`: CONNECT for TLS and raw TCP,
    /// absolute-form requests for plain HTTP; Basic authentication.
    case http(ProxyServer)
    /// `direct`: a named DIRECT, so groups can offer it under another name.
    case direct
    /// `reject[, status-code=N, body="..."]` (ext): an HTTP request gets this
    /// answer; anything else is refused like REJECT.
    case reject(status: Int, body: String)
    /// `reject-rst` (ext)
    case rejectRST
    /// `reject-drop` (ext)
    case rejectDrop
    /// `reject-tinygif` (ext)
    case rejectTinyGIF

    /// The kind as written in the profile.
    public var name: String {
        switch self {
        case .socks5: return "socks5"
        case .http: return "http"
        case .direct: return "direct"
        case .reject: return "reject"
        case .rejectRST: return "reject-rst"
        case .rejectDrop: return "reject-drop"
        case .rejectTinyGIF: return "reject-tinygif"
        }
    }

    public var description: String {
        switch self {
        case let .socks5(server), let .http(server): return "\(name), \(server)"
        case let .reject(status, body): return "reject, status-code=\(status), body=\(body.debugDescription)"
        case .direct, .rejectRST, .rejectDrop, .rejectTinyGIF: return name
        }
    }
}

/// Where an upstream proxy listens and how to log in to it.
public struct ProxyServer: Equatable, Sendable, CustomStringConvertible {
    /// A host name or an address literal, as written (IPv6 without brackets).
    public var host: String
    public var port: UInt16
    public var username: String?
    public var password: String?
    /// socks5 only: relay UDP through the proxy's UDP ASSOCIATE; otherwise UDP goes DIRECT.
    public var udpRelay: Bool

    public init(host: String, port: UInt16, username: String? = nil, password: String? = nil, udpRelay: Bool = false) {
        self.host = host; self.port = port; self.username = username; self.password = password; self.udpRelay = udpRelay
    }

    /// Never prints the password.
    public var description: String {
        var text = "\(host), \(port)"
        if let username { text += ", username=\(username)" }
        if password != nil { text += ", password=***" }
        if udpRelay { text += ", udp-relay=true" }
        return text
    }
}
