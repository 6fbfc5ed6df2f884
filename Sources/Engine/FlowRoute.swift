internal import HTTP
internal import Rules
internal import Stack
internal import Wire

/// What the engine does with one TCP flow, once the rules have spoken. The
/// director decides; the tunnel performs it.
enum FlowRoute: CustomStringConvertible {
    /// Straight to the destination (a fake IP's name is resolved through the host's resolvers).
    case direct
    /// Through an upstream proxy, which receives the name when fake-IP DNS knows it.
    case proxy(UpstreamProxy)
    /// Refused the way a network would: RST, ICMP unreachable, or silence.
    case refuse(TCPFlowTable.Refusal)
    /// Answered by Sluice itself with these bytes (an HTTP response), then closed.
    /// Only for flows already accepted and sniffed as HTTP.
    case answer([UInt8])

    /// What makes two routes the same upstream path (an HTTP session keeps its
    /// upstream while this and the origin stay the same).
    enum Identity: Equatable, CustomStringConvertible {
        case direct
        case proxy(String)
        case local

        var description: String {
            switch self {
            case .direct: "DIRECT"
            case let .proxy(name): name
            case .local: "local"
            }
        }
    }

    var identity: Identity {
        switch self {
        case .direct: .direct
        case let .proxy(proxy): .proxy(proxy.name)
        case .refuse, .answer: .local
        }
    }

    /// The route a UDP flow takes: a proxy carries UDP only when it is socks5
    /// with `udp-relay=true`; through any other the flow goes DIRECT (the
    /// profile dialect's rule).
    var forUDP: FlowRoute {
        if case let .proxy(proxy) = self, !(proxy.kind == .socks5 && proxy.udpRelay) { return .direct }
        return self
    }

    var description: String {
        switch self {
        case .direct: "DIRECT"
        case let .proxy(proxy): "\(proxy.name) (\(proxy.kind) \(proxy.host):\(proxy.port))"
        case let .refuse(refusal): "refuse (\(refusal))"
        case let .answer(bytes): "answer locally (\(bytes.count) bytes)"
        }
    }
}

/// One upstream proxy, as the tunnel needs it to connect and shake hands.
struct UpstreamProxy: Equatable, Sendable {
    enum Kind: Equatable, Sendable { case socks5, http }
    var name: String
    var kind: Kind
    /// An address literal or a name (resolved through the host's resolvers).
    var host: String
    var port: UInt16
    var username: String?
    var password: String?
    /// socks5 only: UDP flows go through the proxy's UDP ASSOCIATE (otherwise DIRECT).
    var udpRelay = false
}

/// What is known of a flow when it is decided.
struct FlowFacts {
    var key: FlowKey
    /// From fake-IP DNS, [Host], the HTTP Host header or the TLS SNI.
    var domain: String?
    var domainSource: DomainSource?
    /// Set once the first bytes were sniffed.
    var applicationProtocol: ApplicationProtocol?
    var request: SniffedRequest?
    /// Who opened the flow; looked up only while a rule tests it.
    var owner: FlowOwner?

    /// `answer`: a DNS answer Sluice relayed named the real address (`DNSAnswerNames`), a fallback.
    enum DomainSource: String { case dns, host, sni, answer }
    enum ApplicationProtocol: String { case http = "HTTP", tls = "TLS", quic = "QUIC" }
}

/// The first request of an HTTP flow, as the rules see it.
struct SniffedRequest {
    var method: String
    /// Absolute: http://host/path?query
    var url: String
    var headers: HTTPHeaders
    /// The URL's host and whether it is an address, when the caller took the
    /// URL apart already (HTTP mode does, per request); nil: the rules do.
    var host: (name: String?, isAddress: Bool)? = nil
}

/// The decision for a new flow, or a request for its first bytes.
enum FlowDecision {
    case route(FlowRoute, reason: String)
    /// Accept the app's connection and call again with what its first bytes say.
    case sniff
}

/// A local answer on its way into the app's connection.
struct PendingAnswer {
    var bytes: [UInt8]
    var offset = 0
}

/// A flow waiting for a name's address: the destination's (DIRECT to a fake
/// IP) or the proxy's.
struct PendingConnect {
    var name: DNSName
    var port: UInt16
    /// Set when the connection is to a proxy that must then be asked for the destination.
    var handshake: ProxyHandshake?
}

extension FlowDecision {
    /// A decision's reason reads "FILE:LINE: RULE → POLICY[ → MEMBER…]": the
    /// rule as written, then the policy chain through groups.
    static let arrowText = " → "
    static let arrow = Array(arrowText.utf8)

    /// "RULE → POLICY", or the rule alone when no policy decided.
    static func reason(rule: String, policy: String?) -> String {
        guard let policy else { return rule }
        var reason = ""
        reason.reserveCapacity(rule.utf8.count + arrow.count + policy.utf8.count)
        reason += rule
        reason += arrowText
        reason += policy
        return reason
    }

    static func split(_ reason: String) -> (rule: String, policy: String?) {
        // A byte search: every HTTP request's decision is split, and the
        // generic `ranges(of:)` cost more than the rest of deciding.
        let arrow = Self.arrow
        let bytes = reason.utf8
        var i = bytes.startIndex
        while i != bytes.endIndex {
            if bytes[i] == arrow[0], bytes[i...].starts(with: arrow) {
                let after = bytes.index(i, offsetBy: arrow.count)
                return (String(reason[..<i]), String(reason[after...]))
            }
            i = bytes.index(after: i)
        }
        return (reason, nil)
    }
}
