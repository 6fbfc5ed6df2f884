internal import HTTP
internal import Rules
internal import Stack
internal import Wire

/// Sniffing: what an accepted flow's first bytes tell the rules.
extension Tunnel {
    /// The facts the first bytes add (HTTP request head, TLS SNI); nil while
    /// more bytes are needed and may still come.
    func sniffedFacts(_ key: FlowKey, connection: TCPConnection, final: Bool) -> FlowFacts? {
        facts(for: key).sniffing(connection.peekReadable(maxLength: FlowFacts.sniffLimit), final: final)
    }
}

/// What an accepted flow's sniffing waits for, and until when.
struct SniffWait {
    enum Stage {
        /// The app's handshake to end (the ACK of our SYN-ACK): a flow's
        /// silence counts from then, so an app whose handshake takes long
        /// (a lost SYN-ACK costs it a second; a client 400 ms away, 800 ms)
        /// is not decided without the bytes it sends right after.
        case handshake
        /// Its first bytes, `sniffTimeout` after the handshake.
        case firstBytes
        /// The rest of a ClientHello that arrived in part, `partialHelloTimeout`.
        case restOfHello
    }

    var stage: Stage
    var deadline: Instant
}

extension FlowFacts {
    /// How many of a flow's first bytes the rules look at, and how long a
    /// silent flow waits before it is decided without them (server-speaks-
    /// first protocols such as SSH or SMTP send nothing first): the
    /// tunnel's (counted from the end of the app's handshake), the proxy's
    /// (`--sniff`) and replay's.
    static let sniffLimit = 16384
    static let sniffTimeout: Duration = .milliseconds(300)
    /// How much longer a flow whose first bytes are part of a TLS record
    /// waits for the rest: over a lossy link the segment that completes a
    /// ClientHello comes after the app's retransmission timeout (1 s, then 2).
    static let partialHelloTimeout: Duration = .seconds(4)
    /// How long a flow that a TLS client opens waits for its first bytes: one
    /// to a name [MITM] intercepts (or to port 443 when no name is known).
    /// TLS clients speak first, so silence there is a slow app, not a
    /// server-first protocol: with 300 ms, 18 of 50 curls started at once on
    /// a loaded 2-core machine sent their ClientHello too late and passed
    /// through unintercepted, rules and records unapplied.
    static let clientHelloTimeout: Duration = .seconds(5)
    /// Keepalive for a client (an app, or `sluice proxy`'s) whose FIN came
    /// while its request waits: seconds of silence, seconds between probes,
    /// probes. A half-closed socket answers them; a closed one's orphan stops
    /// answering once its kernel drops it, and the exchange then ends.
    static let closedClientProbe = (idleSeconds: 5, intervalSeconds: 5, count: 3)

    /// Whether `data` is the start of a TLS handshake record whose ClientHello
    /// has not all arrived. When the sniff timeout passes on such bytes, a
    /// lost segment holds the rest back (the sender resends only after its
    /// retransmission timeout, a second at first), and the tunnel and the
    /// proxy both give it `partialHelloTimeout` more, once, rather than decide
    /// without the name.
    func awaitsRestOfHello(_ data: UnsafeRawBufferPointer) -> Bool {
        data.first == 0x16 && sniffing(data, final: false) == nil
    }

    /// These facts with what a flow's first bytes add (an HTTP request head,
    /// a TLS SNI); nil while more bytes are needed and may still come. The
    /// tunnel's accepted flows and the proxy's tunnels both sniff with it.
    func sniffing(_ data: UnsafeRawBufferPointer, final: Bool) -> FlowFacts? {
        var facts = self
        switch ProtocolGuess.guess(data) {
        case .needMore:
            return final ? facts : nil
        case .other:
            return facts
        case .http:
            facts.applicationProtocol = .http
            // Re-parsed from the start as bytes arrive: at most sniffLimit bytes, a few times.
            var parser = HTTPRequestParser()
            let step: HTTPParseStep<HTTPRequestHead>?
            do { step = try parser.parse(data) } catch { return facts }
            guard case let .head(head, _)? = step else { return final ? facts : nil }
            let url = head.absoluteURL(defaultScheme: "http") ?? "http://\(facts.domain ?? "unknown")\(head.target)"
            facts.request = SniffedRequest(method: head.method.rawValue, url: url, headers: head.headers)
            // An address literal in Host names no domain.
            if facts.domain == nil, let host = head.host.map({ HostPort.hostPart(of: $0) }), IPAddress(host) == nil {
                facts.domain = host
                facts.domainSource = .host
            }
            return facts
        case .tls:
            facts.applicationProtocol = .tls
            var sniffer = TLSClientHelloSniffer()
            switch sniffer.feed(data) {
            case .needMore:
                return final ? facts : nil
            case let .serverName(name):
                if facts.domain == nil {
                    facts.domain = name
                    facts.domainSource = .sni
                }
                return facts
            case .noServerName, .notTLS:
                return facts
            }
        }
    }
}

/// `host[:port]` as in a Host header or a URL's authority, IPv6 in brackets.
enum HostPort {
    static func hostPart(of authority: String) -> String {
        split(authority).host
    }

    static func split(_ authority: String) -> (host: String, port: UInt16?) {
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            let host = String(authority[authority.index(after: authority.startIndex) ..< close])
            let rest = authority[authority.index(after: close)...]
            return (host, rest.hasPrefix(":") ? UInt16(rest.dropFirst()) : nil)
        }
        if let colon = authority.lastIndex(of: ":"), authority.firstIndex(of: ":") == colon {
            return (String(authority[..<colon]).lowercased(), UInt16(authority[authority.index(after: colon)...]))
        }
        return (authority.lowercased(), nil)
    }
}
