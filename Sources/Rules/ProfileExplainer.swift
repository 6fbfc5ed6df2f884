internal import HTTP
public import Wire

/// What `sluice match` prints: how a profile would treat one HTTP request,
/// step by step in the order of the dialect's "Evaluation order" (URL Rewrite,
/// Map Local, Rule, Header Rewrite, then Statistics), naming the profile line
/// behind each decision and why.
///
/// The request is taken as a plain-HTTP request whose head Sluice reads. An
/// https:// URL to a host in [MITM] hostname is intercepted, so it is
/// explained the same way (its flow being TLS); any other is HTTPS without
/// interception: no rewrite, no mapping, and only the rules that can see a
/// TLS flow (domain from SNI, port, protocol). The source port is unknown
/// here, so SRC-PORT rules see 0.
public enum ProfileExplainer {
    public static func explain(_ profile: Profile, url: String, method: String = "GET",
                               headers: [HeaderField] = [], owner: FlowOwner? = nil, source: IPAddress? = nil) -> [String] {
        var out: [String] = []
        guard let parts = RequestURL(url) else {
            return ["error: '\(url)' is not an absolute URL (want http://host/path)"]
        }
        // As HTTP mode does: the patterns see one spelling of the URL (RequestURL.normalized).
        let url = parts.normalized
        var requestHeaders = headers
        if !requestHeaders.contains(where: { HTTPHeader.namesEqual($0.name, "Host") }) {
            requestHeaders.insert(HeaderField(name: "Host", value: parts.hostHeader), at: 0)
        }
        out.append("request: \(method) \(url)")
        let isTLS = parts.scheme == "https"
        var sealed = false
        if isTLS {
            let port = parts.port ?? 443
            let line = profile.mitm.line.map { ", line \($0)" } ?? ""
            switch profile.mitm.verdict(host: parts.host, port: port) {
            case let .intercepted(pattern):
                out.append("HTTPS intercepted: \(parts.host):\(port) matches \(pattern) in [MITM] hostname\(line), so its requests are seen as plain HTTP's are")
            case let .excluded(pattern):
                out.append("HTTPS not intercepted: [MITM] hostname excludes \(parts.host):\(port) (\(pattern)\(line))")
                sealed = true
            case .notListed:
                out.append("HTTPS not intercepted: \(parts.host):\(port) is not in [MITM] hostname")
                sealed = true
            }
        }
        var current = url
        var step = 1

        if sealed {
            out.append("\(step). URL Rewrite and Map Local: skipped, HTTPS is not intercepted (Sluice sees only the SNI)")
            step += 1
        } else {
            switch URLRewriter(profile).rewrite(url: url) {
            case .none:
                out.append("\(step). URL Rewrite: no line matches")
            case let .header(newURL, line):
                current = newURL
                let host = RequestURL(newURL)?.hostHeader ?? "?"
                for i in requestHeaders.indices where HTTPHeader.namesEqual(requestHeaders[i].name, "Host") { requestHeaders[i].value = host }
                out.append("\(step). URL Rewrite: line \(line) (\(rewriteText(profile, line))) matches: forwarded as \(newURL), Host: \(host); method and body kept")
            case let .redirect(status, location, line):
                out.append("\(step). URL Rewrite: line \(line) (\(rewriteText(profile, line))) matches: answered at once with \(status), Location: \(location)")
                if status == 302, method != "GET", method != "HEAD" {
                    out.append("   note: clients usually repeat a 302 as GET without the body; 307 keeps \(method) and its body")
                }
                out.append("   stops here: no rule is consulted")
                out.append(statistics(profile, url: url, step: step + 1))
                return out
            case let .reject(kind, line):
                out.append("\(step). URL Rewrite: line \(line) (\(rewriteText(profile, line))) matches: answered at once with \(kind.status) (\(kind), \(kind.body.count) bytes)")
                out.append("   stops here: no rule is consulted")
                out.append(statistics(profile, url: url, step: step + 1))
                return out
            }
            step += 1

            if let answer = MapLocalResolver(profile).resolve(url: current) {
                let body: String
                switch answer.body {
                case let .bytes(b): body = "\(b.count) bytes from the profile"
                case let .file(path): body = "the file \(path)"
                case let .directoryFile(path): body = "the file \(path)"
                }
                if answer.status == 404, case .bytes([]) = answer.body,
                   let entry = profile.mapLocals.first(where: { $0.line == answer.line }), case .directory = entry.data {
                    out.append("\(step). Map Local: line \(answer.line) matches, but the name would leave its folder: answered 404")
                } else {
                    out.append("\(step). Map Local: line \(answer.line) matches: answered at once with \(answer.status), \(body)")
                }
                out.append("   stops here: no rule is consulted")
                out.append(statistics(profile, url: current, step: step + 1))
                return out
            }
            out.append("\(step). Map Local: no entry matches \(current)")
            step += 1
        }

        let currentParts = RequestURL(current) ?? parts
        let port = currentParts.port ?? (currentParts.scheme == "https" ? 443 : 80)
        var destination = IPAddress(currentParts.host)
        var destinationNote = ""
        if destination == nil, let fixed = profile.hostAddress(for: currentParts.host) {
            destination = fixed
            destinationNote = " ([Host] gives \(fixed))"
        }
        var facts = FlowFacts(
            transport: .tcp, destination: destination, destinationPort: port, sourcePort: 0,
            domain: IPAddress(currentParts.host) == nil ? currentParts.host : nil,
            applicationProtocol: isTLS ? .tls : .http,
            request: sealed ? nil : RequestFacts(method: method, url: current, headers: HTTPHeaders(requestHeaders)), owner: owner)
        facts.source = source
        let outcome = RuleEngine(profile).evaluate(facts, final: true)
        guard case let .matched(decision) = outcome else {
            out.append("\(step). Rule: undecided (\(outcome))")
            return out
        }
        let target = profile.policy(named: decision.policy).map { "\($0)" } ?? decision.policy
        if let index = decision.ruleIndex {
            let rule = profile.rules[index]
            out.append("\(step). Rule: line \(decision.line) (\(decision.text)) matches: \(reason(rule.condition, facts))\(destinationNote)")
            let skipped = index
            if skipped > 0 { out.append("   \(skipped) rule\(skipped == 1 ? "" : "s") before it did not match") }
        } else {
            out.append("\(step). Rule: no rule matches; line \(decision.line) (\(decision.text)) decides\(destinationNote)")
        }
        if destination == nil, profile.rules.contains(where: { $0.condition.mentionsIP }) {
            out.append("   IP-CIDR rules were skipped: the destination is known by name, and rules never resolve names")
        }
        out.append("   policy: \(target)")
        step += 1

        if sealed {
            out.append("\(step). Header Rewrite: skipped, HTTPS is not intercepted")
            return out
        }
        // HTTP mode ends a request whose policy answers or refuses it where
        // the rule decided: no header rewrite, nothing upstream.
        func refused(_ how: String) {
            out.append("\(step). Header Rewrite: skipped, the policy \(how); nothing goes upstream")
            // No response to count (the flow log has the request).
            out.append("\(step + 1). Statistics: not counted, a refused request gets no response")
        }
        func answered(_ how: String) {
            out.append("\(step). Header Rewrite: skipped, the policy answers the request itself (\(how)); nothing goes upstream")
            out.append(statistics(profile, url: current, step: step + 1))
        }
        // A group's member is chosen while Sluice runs: explained as sent on.
        let action: PolicyAction = switch profile.policy(named: decision.policy) {
        case let .builtin(builtin)?: builtin.action
        case let .proxy(proxy)?: proxy.kind.action
        case .group?, nil: .forward
        }
        switch action {
        case .reset: refused("refuses it with a reset (an HTTP/2 request: its stream's)")
        case .drop: refused("drops it unanswered")
        case let .answer(status, _): answered("\(status)")
        case .answerTinyGIF: answered("200, a 1x1 GIF")
        case .forward:
            var rewritten = requestHeaders
            let requestLines = HeaderRewriter(profile).apply(.request, url: current, to: &rewritten)
            if requestLines.isEmpty {
                out.append("\(step). Header Rewrite (request): no line matches")
            } else {
                out.append("\(step). Header Rewrite (request): " + requestLines.map { "line \($0) (\(headerText(profile, $0)))" }.joined(separator: ", "))
                out.append("   request headers sent: " + rewritten.map { "\($0.name): \($0.value)" }.joined(separator: " | "))
            }
            step += 1
            let responseLines = profile.headerRewrites.filter { $0.direction == .response && $0.regex.matches(current) }
            if responseLines.isEmpty {
                out.append("\(step). Header Rewrite (response): no line matches")
            } else {
                out.append("\(step). Header Rewrite (response): on the way back, " +
                    responseLines.map { "line \($0.line) (\($0.operation))" }.joined(separator: ", "))
            }
            if !profile.bodyRewrites.isEmpty {
                step += 1
                let bodyLines = profile.bodyRewrites.filter { $0.regex.matches(current) }
                if bodyLines.isEmpty {
                    out.append("\(step). Body Rewrite: no line matches")
                } else {
                    out.append("\(step). Body Rewrite: " + bodyLines.map { "line \($0.line) (\($0.direction.rawValue), "
                        + "\($0.replacements.count) replacement\($0.replacements.count == 1 ? "" : "s"))" }.joined(separator: ", ")
                        + "; a UTF-8 body up to \(BodyRewriter(profile).bodyLimitText)")
                }
            }
            out.append(statistics(profile, url: current, step: step + 1))
        }
        return out
    }

    /// The [Statistics] entries that count a request to `url` that gets a
    /// response, Sluice's own answers included (HTTP mode records those too).
    static func statistics(_ profile: Profile, url: String, step: Int) -> String {
        let host = RequestURL(url)?.host ?? ""
        let counted = profile.statistics.compactMap { definition -> String? in
            guard let key = StatisticsBook.key(for: definition, url: url, host: host) else { return nil }
            return "\(definition.name) (line \(definition.line)) under key \"\(key)\""
        }
        return "\(step). Statistics: " + (counted.isEmpty ? "not counted" : "counted by " + counted.joined(separator: ", "))
    }

    static func rewriteText(_ profile: Profile, _ line: Int) -> String {
        profile.urlRewrites.first { $0.line == line }.map(\.description) ?? "?"
    }

    static func headerText(_ profile: Profile, _ line: Int) -> String {
        profile.headerRewrites.first { $0.line == line }.map { "\($0.operation)" } ?? "?"
    }

    /// Why a condition that matched did, in words.
    static func reason(_ condition: RuleCondition, _ facts: FlowFacts) -> String {
        let name = facts.nameForRules ?? "?"
        switch condition {
        case let .domain(d): return "the host \(name) is \(d)"
        case let .domainSuffix(d): return name == d ? "the host is \(d)" : "the host \(name) is under \(d)"
        case let .domainKeyword(k): return "the host \(name) contains \"\(k)\""
        case let .domainRegex(r): return "the host \(name) matches \(r.source)"
        case let .domainWildcard(pattern, _): return "the host \(name) matches \(pattern)"
        case let .ipCIDR(p, _): return "the destination \(facts.destination.map { "\($0)" } ?? "?") is in \(p)"
        case let .ipCIDR6(p, _): return "the destination \(facts.destination.map { "\($0)" } ?? "?") is in \(p)"
        case let .geoIP(country, _, _): return "the destination \(facts.destination.map { "\($0)" } ?? "?") is in \(country) (GeoIP database)"
        case let .ipASN(number, _, _): return "the destination \(facts.destination.map { "\($0)" } ?? "?") is in AS\(number) (ASN database)"
        case let .destinationPort(r): return "the destination port \(facts.destinationPort) is in \(r)"
        case let .sourcePort(r): return "the source port \(facts.sourcePort) is in \(r)"
        case let .sourceIP(p): return "the source \(facts.source.map { "\($0)" } ?? "?") is in \(p)"
        case let .protocol(p): return "the flow is \(p.rawValue)"
        case let .urlRegex(r): return "the URL matches \(r.source)"
        case let .method(m): return "the method is \(m)"
        case let .header(n, r): return "a \(n) header matches \(r.source)"
        case let .userAgent(g): return "the User-Agent matches \(g.pattern)"
        case let .owner(o): return o.reason(facts.owner)
        case let .and(cs): return "all of: " + cs.map { reason($0, facts) }.joined(separator: "; ")
        case let .or(cs):
            let hit = cs.first { $0.verdict(facts, final: true) == .match }
            return "one of them: " + (hit.map { reason($0, facts) } ?? "?")
        case let .not(c): return "not (\(c))"
        case let .ruleSet(set, _):
            let place = set.path ?? set.name
            guard let hit = set.firstMatch(facts, final: true) else { return "a rule of \(place)" }
            return "\(place):\(hit.line) (\(hit.condition)): \(reason(hit.condition, facts))"
        }
    }
}

extension RuleCondition {
    var mentionsIP: Bool {
        switch self {
        case .ipCIDR, .ipCIDR6, .geoIP, .ipASN: return true
        case .domain, .domainSuffix, .domainKeyword, .domainRegex, .domainWildcard, .destinationPort, .sourcePort, .sourceIP, .protocol,
             .urlRegex, .method, .header, .userAgent, .owner: return false
        case let .and(cs), let .or(cs): return cs.contains { $0.mentionsIP }
        case let .not(c): return c.mentionsIP
        case let .ruleSet(set, _): return set.rules.contains { $0.condition.mentionsIP }
        }
    }
}
