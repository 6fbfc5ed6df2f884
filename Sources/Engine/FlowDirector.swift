internal import HTTP
internal import Relay
internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// Decides each flow's route, and each HTTP request's plan, from the loaded
/// profile. The tunnel asks once per new TCP flow (and again with the sniffed
/// first bytes when the rules need them); a reload swaps the director, and open
/// flows keep the routes they were given.
final class FlowDirector {
    let profile: Profile?
    let rules: RuleEngine?
    let urlRewriter: URLRewriter?
    let headerRewriter: HeaderRewriter?
    /// [Body Rewrite]; nil without a profile.
    let bodyRewriter: BodyRewriter?
    let mapLocal: MapLocalResolver?
    /// One book per [Statistics] line, kept across reloads when the line's name stays.
    var books: [StatisticsBook]
    /// Each [Proxy Group]'s state: its current member and its members' health.
    var groups: [String: ProxyGroup] = [:]
    /// `label(of:in:)`'s, by rule index (-1: FINAL); a reload makes a new director.
    private var ruleLabels: [Int: String] = [:]
    /// The profile has something to do with HTTP requests themselves: TCP
    /// flows are sniffed, and HTTP ones relayed request by request.
    let usesHTTPMode: Bool
    /// HAR is being written: HTTP flows are relayed request by request even without a profile.
    var recordsHTTP = false
    /// A rule tests who opened a flow (PROCESS-NAME, PROCESS-PATH, UID): each
    /// new flow's owner is looked up before the rules are asked.
    let requiresOwner: Bool
    /// One of them tests the program, not only the user: /proc is searched too.
    let requiresProcess: Bool
    /// [MITM] names hosts and auto-quic-block is on: QUIC to them is refused.
    var blocksQUIC: Bool { profile.map { !$0.mitm.isEmpty && $0.mitm.blocksQUIC } ?? false }

    /// The built-in default profile: everything DIRECT, nothing sniffed.
    init() {
        profile = nil
        rules = nil
        urlRewriter = nil
        headerRewriter = nil
        bodyRewriter = nil
        mapLocal = nil
        books = []
        usesHTTPMode = false
        requiresOwner = false
        requiresProcess = false
    }

    init(profile: Profile, previous: FlowDirector?) {
        self.profile = profile
        rules = RuleEngine(profile)
        requiresOwner = profile.requiresOwner
        requiresProcess = profile.requiresProcess
        urlRewriter = URLRewriter(profile)
        headerRewriter = HeaderRewriter(profile)
        bodyRewriter = profile.bodyRewrites.isEmpty ? nil : BodyRewriter(profile)
        mapLocal = MapLocalResolver(profile)
        books = profile.statistics.map { definition in
            previous?.books.first { $0.name == definition.name && $0.failureStatus == definition.failureStatus } ?? StatisticsBook(definition)
        }
        for definition in profile.groups {
            let kind: ProxyGroup.Kind
            switch definition.kind {
            case .select: kind = .select
            case .fallback: kind = .fallback
            case .urlTest: kind = .urlTest(toleranceNs: UInt64(max(definition.tolerance, 0)) * 1_000_000)
            }
            guard var group = try? ProxyGroup(name: definition.name, kind: kind, members: definition.members,
                                              checkIntervalNs: UInt64(max(definition.interval, 1)) * 1_000_000_000) else { continue }
            // A reload keeps what a select group was switched to.
            if case .select = kind, let kept = previous?.groups[definition.name]?.current, kept != group.current {
                _ = try? group.select(kept)
            }
            groups[definition.name] = group
        }
        usesHTTPMode = !profile.urlRewrites.isEmpty || !profile.headerRewrites.isEmpty || !profile.bodyRewrites.isEmpty
            || !profile.mapLocals.isEmpty
            || !profile.statistics.isEmpty || profile.capture.harPath != nil
    }

    // MARK: Flows

    /// Ports whose protocol has the server speak first (FTP, SSH, Telnet,
    /// SMTP and submission, POP3, IMAP, MySQL, VNC): a flow to one is decided
    /// on what is known at once (its address, and a name from fake-IP DNS,
    /// [Host] or a relayed answer) instead of after the sniff timeout.
    static let serverSpeaksFirst: Set<UInt16> = [21, 22, 23, 25, 110, 143, 587, 3306, 5900]

    /// `forHTTP` false (the proxy's CONNECT and SOCKS5 tunnels, whose bytes
    /// are never rewritten): sniff only when a rule needs the first bytes.
    func decide(_ facts: FlowFacts, final: Bool, forHTTP: Bool = true) -> FlowDecision {
        switch verdict(facts, final: final, forHTTP: forHTTP) {
        case .sniff: .sniff
        case let .route(route, rule, policy): .route(route, reason: FlowDecision.reason(rule: rule, policy: policy))
        }
    }

    /// `decide`'s answer with its reason in the halves HTTP mode records
    /// apart (the rule, the policy chain): splitting a joined reason again
    /// cost each request more than deciding did.
    enum Verdict {
        case route(FlowRoute, rule: String, policy: String?)
        case sniff
    }

    func verdict(_ facts: FlowFacts, final: Bool, forHTTP: Bool = true) -> Verdict {
        let isTCP = facts.key.transport == .tcp
        // Server-speaks-first protocols send nothing until the server greets:
        // waiting for their first bytes would only cost the sniff timeout.
        let final = final || isTCP && Self.serverSpeaksFirst.contains(facts.key.destinationPort)
        guard let profile, let rules else {
            if recordsHTTP, forHTTP, isTCP, facts.applicationProtocol == nil, !final { return .sniff }
            return .route(.direct, rule: "default profile", policy: "DIRECT")
        }
        // Rewrites, mocks and statistics need the request: every TCP flow shows its first bytes.
        if usesHTTPMode || recordsHTTP, forHTTP, isTCP, facts.applicationProtocol == nil, !final { return .sniff }
        // A QUIC flow to a [MITM] host is refused: its name is read from its Initial packets.
        if blocksQUIC, facts.applicationProtocol == .quic, facts.domain == nil, !final { return .sniff }
        // [MITM] hosts are known by their ClientHello's name: a flow that may be one shows its first bytes.
        if !profile.mitm.isEmpty, forHTTP, isTCP, facts.applicationProtocol == nil, !final,
           facts.domain.map({ profile.mitm.intercepts(host: $0, port: facts.key.destinationPort) }) ?? true
        {
            return .sniff
        }
        // TCP flows show their first bytes; a QUIC flow's first datagrams hold a ClientHello.
        let sniffable = isTCP || facts.applicationProtocol == .quic
        let decision: RuleDecision
        switch rules.evaluate(ruleFacts(facts), final: final || !sniffable) {
        case .needsApplicationData:
            if !final, sniffable { return .sniff }
            guard case let .matched(forced) = rules.evaluate(ruleFacts(facts), final: true) else {
                return .route(.direct, rule: "no rule decided", policy: nil)
            }
            decision = forced
        case let .matched(matched):
            decision = matched
        }
        let route = self.route(forPolicy: decision.policy, profile: profile, isHTTP: facts.applicationProtocol == .http)
        if case .answer = route.route, forHTTP, facts.applicationProtocol == nil, !final, isTCP {
            // A rejection with an HTTP answer: only an HTTP request can receive it.
            return .sniff
        }
        return .route(route.route, rule: label(of: decision, in: profile), policy: route.chain)
    }

    /// "FILE:LINE: RULE", made once per rule: every HTTP request asks for one.
    private func label(of decision: RuleDecision, in profile: Profile) -> String {
        let key = decision.ruleIndex ?? -1
        if let label = ruleLabels[key] { return label }
        let label = "\(profile.file):\(decision.line): \(decision.text)"
        ruleLabels[key] = label
        return label
    }

    /// Whether the rule that decides `facts` has the `capture` option.
    func capturesFlow(_ facts: FlowFacts) -> Bool {
        guard let rules else { return false }
        guard case let .matched(decision) = rules.evaluate(ruleFacts(facts), final: true) else { return false }
        return decision.capture
    }

    /// The rule engine's view of a flow.
    func ruleFacts(_ facts: FlowFacts) -> Rules.FlowFacts {
        var result = Rules.FlowFacts(transport: .tcp, destinationPort: facts.key.destinationPort, sourcePort: facts.key.appPort)
        result.source = facts.key.appAddress
        switch facts.key.transport {
        case .udp: result.transport = .udp
        case .icmp, .icmpv6: result.transport = .icmp
        default: result.transport = .tcp
        }
        // A fake IP is no address the rules should see: its name stands for it.
        if facts.domainSource != .dns { result.destination = facts.key.destinationAddress }
        result.domain = facts.domain
        result.owner = facts.owner
        switch facts.applicationProtocol {
        case .http?: result.applicationProtocol = .http
        case .tls?: result.applicationProtocol = .tls
        case .quic?: result.applicationProtocol = .quic
        case nil: result.applicationProtocol = nil
        }
        if let request = facts.request {
            if let host = request.host {
                result.request = RequestFacts(method: request.method, url: request.url, headers: request.headers,
                                              host: host.name, hostIsAddress: host.isAddress)
            } else {
                result.request = RequestFacts(method: request.method, url: request.url, headers: request.headers)
            }
        }
        return result
    }

    /// A policy name, resolved through groups to what the tunnel does.
    func route(forPolicy name: String, profile: Profile, isHTTP: Bool) -> (route: FlowRoute, chain: String) {
        // A policy that is no group is its own chain: no string is made.
        var chain = name
        var current = name
        // Groups nest; the parser rejects cycles, and the bound keeps a bad one harmless.
        for _ in 0 ..< 16 {
            guard let target = profile.policy(named: current) else { break }
            switch target {
            case let .builtin(builtin):
                return (Self.route(for: builtin, isHTTP: isHTTP), chain)
            case let .proxy(proxy):
                return (Self.route(for: proxy, isHTTP: isHTTP), chain)
            case let .group(group):
                guard let member = groups[group.name]?.current ?? group.members.first else { break }
                chain += FlowDecision.arrowText + member
                current = member
            }
        }
        return (.refuse(.reset), chain + " (unresolved)")
    }

    static func route(for builtin: BuiltinPolicy, isHTTP: Bool) -> FlowRoute {
        route(for: builtin.action) ?? .direct
    }

    static func route(for proxy: ProxyDefinition, isHTTP: Bool) -> FlowRoute {
        switch proxy.kind {
        case let .socks5(server):
            .proxy(UpstreamProxy(name: proxy.name, kind: .socks5, host: server.host, port: server.port,
                                 username: server.username, password: server.password, udpRelay: server.udpRelay))
        case let .http(server):
            .proxy(UpstreamProxy(name: proxy.name, kind: .http, host: server.host, port: server.port,
                                 username: server.username, password: server.password))
        case .direct, .reject, .rejectRST, .rejectDrop, .rejectTinyGIF:
            route(for: proxy.kind.action) ?? .direct
        }
    }

    /// A policy's action as the tunnel performs it; nil for `.forward`,
    /// whose route the caller knows (DIRECT, or which proxy).
    static func route(for action: PolicyAction) -> FlowRoute? {
        switch action {
        case .forward: nil
        case let .answer(status, body): .answer(LocalAnswers.rejected(status: status, body: body))
        case .answerTinyGIF: .answer(LocalAnswers.tinyGIF())
        case .reset: .refuse(.reset)
        case .drop: .refuse(.drop)
        }
    }

    /// A [Host] entry's address for a name Sluice connects to itself (a
    /// rewritten host, a proxy's name).
    func staticAddress(for host: String) -> IPAddress? {
        // `srv.test.` is `srv.test`, as the rules already took it (a CONNECT to it missed its [Host] line).
        profile?.hostAddress(for: HostsFile.key(host))
    }
}

/// Flows answered without an HTTP request get the non-HTTP form of their rejection.
extension FlowRoute {
    /// What a rejection becomes when the flow turned out not to be HTTP.
    var withoutHTTP: FlowRoute {
        if case .answer = self { return .refuse(.reset) }
        return self
    }
}
