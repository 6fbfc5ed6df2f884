internal import HTTP
internal import Rules
internal import Stack
internal import Wire

/// What the profile would do with one captured flow, decided by the live
/// engine's own `FlowDirector` in the live engine's order: the flow is
/// decided from its destination, and when the rules (or HTTP mode) want the
/// first bytes, again from what those bytes say (Tunnel.startTCP, sniff);
/// in HTTP mode every request is planned on its own (Tunnel+HTTP's plan).
struct ReplayVerdict {
    /// What happens, in the words of `sluice replay`'s table.
    enum Action: String {
        case forward, redirect, mock, reject, reset, drop
        /// A DNS query to Sluice's own DNS address: Sluice answers it (and the live flow log has no line for it).
        case answered
        /// The flow's first bytes never came (or were no HTTP): nothing to decide per request.
        case none = "-"
    }

    struct Request {
        var exchange: ReplayExchange
        /// The URL as the rules saw it (after a header-mode URL Rewrite).
        var url: String
        var rewrittenFrom: String?
        var rule: String
        var policy: String
        var action: Action
        var mocked: Bool
        /// Where a forwarded request goes: `host:port via POLICY`.
        var upstream: String?
        /// The status Sluice would answer with, for local answers.
        var localStatus: Int?
        /// The whole response Sluice would write itself.
        var localAnswer: [UInt8]?
    }

    var domain: String?
    /// dns, host or sni: where `domain` came from.
    var domainSource: String?
    var applicationProtocol: String?
    /// The flow's own decision, `FILE:LINE: RULE → POLICY` (HTTP mode: the last request's rule).
    var rule: String
    var policy: String
    var action: Action
    /// The flow's route, for the flow log's upstream (HTTP mode: nil).
    var route: FlowRoute?
    var requests: [Request] = []

    /// The address `sluice exec` and `run --netns` give their DNS (NamespaceSetup).
    static let sluiceDNS: Set<IPAddress> = [IPAddress(NamespaceSetup.dnsV4)!, IPAddress(NamespaceSetup.dnsV6)!]
}

extension FlowDirector {
    /// Decides `flow` as the live engine would have. `dnsIsFake` says the
    /// flow's DNS name stands for a fake IP (the live engine's own mapping);
    /// a name learned from a real address in the capture is used only when
    /// the first bytes name nothing.
    func judge(_ flow: ReplayFlow) -> ReplayVerdict {
        if flow.key.transport != .tcp { return judgeDatagrams(flow) }
        if flow.key.destinationPort == 53, ReplayVerdict.sluiceDNS.contains(flow.key.destinationAddress) {
            // DNS over TCP to Sluice: answered there, as live (Tunnel+DNSStream), no rule.
            return ReplayVerdict(domain: nil, domainSource: nil, applicationProtocol: "DNS", rule: "(Sluice's DNS)",
                                 policy: "local", action: .answered, route: nil)
        }
        var facts = FlowFacts(key: flow.key)
        var source: String?
        if flow.dnsNameIsFake, let name = flow.dnsName {
            facts.domain = name
            facts.domainSource = .dns
            source = "dns"
        }
        let now = Instant(nanoseconds: Int64(truncatingIfNeeded: flow.started))
        let firstDecision = decide(facts, final: false)
        if case let .route(route, reason) = firstDecision {
            return verdict(flow, facts: facts, source: source, route: route, reason: reason)
        }
        // Sniffed: the first bytes add the protocol, the first request, the Host or SNI.
        switch flow.guess {
        case .http:
            facts.applicationProtocol = .http
            if let head = flow.exchanges.first?.head {
                let url = head.absoluteURL(defaultScheme: "http") ?? "http://\(facts.domain ?? "unknown")\(head.target)"
                facts.request = SniffedRequest(method: head.method.rawValue, url: url, headers: head.headers)
                // As live (Tunnel+Sniff): an address literal in Host names no domain.
                if facts.domain == nil, let host = head.host.map({ HostPort.hostPart(of: $0) }), IPAddress(host) == nil {
                    facts.domain = host
                    facts.domainSource = .host
                    source = "host"
                }
            }
        case .tls:
            facts.applicationProtocol = .tls
            if facts.domain == nil, let name = flow.serverName {
                facts.domain = name
                facts.domainSource = .sni
                source = "sni"
            }
        case .other, .needMore:
            break
        }
        if facts.domain == nil, let name = flow.dnsName {
            // More than the live engine would offer (fake IPs name its flows; a relayed
            // answer's name only flows that are neither HTTP nor TLS): a tcpdump capture
            // of a host without Sluice has only these names. The real address stays beside it.
            facts.domain = name
            facts.domainSource = .host
            source = "dns"
        }
        if facts.applicationProtocol == .http, usesHTTPMode {
            var result = ReplayVerdict(domain: facts.domain, domainSource: source, applicationProtocol: "HTTP",
                                       rule: "", policy: "", action: .none)
            for exchange in flow.exchanges {
                let planned = plan(exchange.head, facts: facts, now: now)
                result.requests.append(request(exchange, planned))
                // A refusal aborts the connection: nothing after it reaches the server.
                if case .refuse = planned.route { break }
            }
            // The live flow log names what the latest request got; the table's flow rows the first.
            if let first = result.requests.first, let last = result.requests.last {
                result.rule = last.rule
                result.policy = last.policy
                result.action = first.action
            } else {
                result.rule = "(HTTP mode: no complete request)"
                result.policy = "-"
            }
            return result
        }
        guard case .route(var route, let reason) = decide(facts, final: true) else {
            return verdict(flow, facts: facts, source: source, route: .direct, reason: "no rule decided")
        }
        if facts.applicationProtocol != .http { route = route.withoutHTTP }
        return verdict(flow, facts: facts, source: source, route: route, reason: reason)
    }

    /// What a datagram flow shows at its start: its addresses, and the name
    /// a fake IP stands for (the live engine's own mapping).
    private func factsWithFakeName(_ flow: ReplayFlow) -> (FlowFacts, String?) {
        var facts = FlowFacts(key: flow.key)
        guard let name = flow.dnsName, flow.dnsNameIsFake else { return (facts, nil) }
        facts.domain = name
        facts.domainSource = .dns
        return (facts, "dns")
    }

    /// A ping flow, as Tunnel+EchoRules decides it: a rejection keeps it in,
    /// any other policy sends it directly (no proxy carries ICMP).
    private func judgeEcho(_ flow: ReplayFlow) -> ReplayVerdict {
        let (facts, source) = factsWithFakeName(flow)
        var result: ReplayVerdict
        if case let .route(route, reason) = decide(facts, final: true) {
            let rejected: Bool
            switch route {
            case .refuse, .answer: rejected = true
            case .direct, .proxy: rejected = false
            }
            result = verdict(flow, facts: facts, source: source, route: rejected ? route : .direct, reason: reason)
            if rejected { result.action = .drop }
        } else {
            result = verdict(flow, facts: facts, source: source, route: .direct, reason: "no rule decided")
        }
        result.applicationProtocol = "ICMP"
        return result
    }

    /// A UDP session or a ping flow (ReplayDatagrams), as Tunnel.datagramFromApp
    /// treats it: a query to Sluice's DNS is answered there, a ping flow is
    /// `judgeEcho`'s, a UDP session is decided at its first datagram on what is
    /// known (address, port, the name DNS gave the address) and goes as
    /// `forUDP` says; a rejection drops its datagrams.
    private func judgeDatagrams(_ flow: ReplayFlow) -> ReplayVerdict {
        guard flow.key.transport == .udp else { return judgeEcho(flow) }
        let protocolName = flow.key.destinationPort == 53 ? "DNS" : flow.isQUIC ? "QUIC" : "UDP"
        if flow.key.destinationPort == 53, ReplayVerdict.sluiceDNS.contains(flow.key.destinationAddress) {
            return ReplayVerdict(domain: nil, domainSource: nil, applicationProtocol: protocolName, rule: "(Sluice's DNS)",
                                 policy: "local", action: .answered, route: nil)
        }
        var (facts, source) = factsWithFakeName(flow)
        if facts.domain == nil, flow.isQUIC {
            // As Tunnel.newUDPFacts: the name in the Initial packets counts when a rule needs it.
            facts.applicationProtocol = .quic
            if case .sniff = decide(facts, final: false), let name = flow.serverName {
                facts.domain = name
                facts.domainSource = .sni
                source = "sni"
            }
        }
        if facts.domain == nil, let name = flow.dnsName {
            // A real address's name from the capture's DNS: offered when the flow names itself no other way.
            facts.domain = name
            facts.domainSource = .host
            source = "dns"
        }
        var result: ReplayVerdict
        if case let .route(route, reason) = decide(facts, final: true) {
            result = verdict(flow, facts: facts, source: source, route: route.forUDP, reason: reason)
        } else {
            result = verdict(flow, facts: facts, source: source, route: .direct, reason: "no rule decided")
        }
        result.applicationProtocol = protocolName
        switch result.action {
        case .reject, .reset, .drop: result.action = .drop
        case .forward, .redirect, .mock, .none, .answered: break
        }
        return result
    }

    /// One decision for the whole flow; its requests all follow it.
    private func verdict(_ flow: ReplayFlow, facts: FlowFacts, source: String?, route: FlowRoute, reason: String) -> ReplayVerdict {
        let action = Self.action(for: route)
        // The policy as the live flow log names it: the chain after the rule.
        let policy = FlowDecision.split(reason).policy ?? route.identity.description
        var result = ReplayVerdict(domain: facts.domain, domainSource: source, applicationProtocol: facts.applicationProtocol?.rawValue,
                                   rule: reason, policy: policy, action: action, route: route)
        for exchange in flow.exchanges {
            let url = exchange.head.absoluteURL(defaultScheme: "http") ?? "http://\(facts.domain ?? "unknown")\(exchange.head.target)"
            var status: Int?
            var answer: [UInt8]?
            if case let .answer(bytes) = route {
                status = LocalAnswers.status(of: bytes)
                answer = bytes
            }
            result.requests.append(ReplayVerdict.Request(
                exchange: exchange, url: url, rewrittenFrom: nil, rule: reason, policy: policy,
                action: action, mocked: status != nil, upstream: action == .forward ? upstreamText(route, host: facts.domain ?? ReplayReport.hostText(flow.key.destinationAddress), port: flow.key.destinationPort) : nil,
                localStatus: status, localAnswer: answer))
        }
        return result
    }

    private func request(_ exchange: ReplayExchange, _ planned: PlannedRequest) -> ReplayVerdict.Request {
        var action: ReplayVerdict.Action
        var status: Int?
        var answer: [UInt8]?
        switch planned.route {
        case .direct, .proxy:
            action = .forward
        case let .answer(bytes):
            status = LocalAnswers.status(of: bytes)
            answer = bytes
            if planned.exchange.rule.contains(": Map Local") {
                action = .mock
            } else if planned.exchange.rule.contains(": URL Rewrite"), let status, (300 ..< 400).contains(status) {
                action = .redirect
            } else {
                action = .reject
            }
        case let .refuse(refusal):
            action = refusal == .drop ? .drop : .reset
        }
        return ReplayVerdict.Request(
            exchange: exchange, url: planned.exchange.url, rewrittenFrom: planned.exchange.rewrittenFrom,
            rule: planned.exchange.rule, policy: planned.exchange.policy, action: action,
            mocked: planned.exchange.mocked || status != nil,
            upstream: action == .forward ? planned.target.description : nil, localStatus: status, localAnswer: answer)
    }

    static func action(for route: FlowRoute) -> ReplayVerdict.Action {
        switch route {
        case .direct, .proxy: .forward
        case .answer: .reject
        case let .refuse(refusal): refusal == .drop ? .drop : .reset
        }
    }

    private func upstreamText(_ route: FlowRoute, host: String, port: UInt16) -> String {
        UpstreamTarget(route: route.identity, host: host, port: port).description
    }
}
