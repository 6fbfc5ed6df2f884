/// [Rule] compiled once from a profile. First match wins, in rule order; the
/// engine gets the same answer as reading the rules top to bottom, faster:
///
/// - DOMAIN and DOMAIN-SUFFIX rules live in a `DomainSuffixIndex`, IP-CIDR and
///   IP-CIDR6 in a `PrefixTrie`: each answers "the smallest matching rule index"
///   at a cost set by the host's label count or the address width, never by the
///   number of such rules. DOMAIN-KEYWORD goes through `KeywordMatcher`, one
///   pass over the host whatever the number of keywords.
/// - URL-REGEX and DOMAIN-REGEX rules whose regex has a run of bytes every
///   match contains go through a `LiteralAutomaton` each: one pass over the
///   URL (or the name) names the few whose run it holds, and only those run
///   their regex.
/// - Every other rule (the regexes without such a run, ports, PROTOCOL, the HTTP-level rules and
///   AND/OR/NOT) is scanned in order, but only up to the best index found so
///   far: a rule after a decided match cannot change the decision.
///
/// Rules never trigger name resolution. IP-CIDR tests the flow's real
/// destination when there is one; a flow known by name only (a fake IP) skips
/// IP rules, with or without `no-resolve`. Surge resolves the name for rules
/// without `no-resolve`; Sluice does not, so `no-resolve` changes nothing here.
///
/// A rule that could match once more of the flow is seen (a domain rule before
/// the SNI is read, a URL-REGEX before the request head) and that comes before
/// the first decided match makes the answer `.needsApplicationData`: the
/// engine sniffs and asks again, with `final: true` when nothing more will come.
public struct RuleEngine: Sendable {
    private let rules: [RuleDefinition]
    private let finalRule: FinalRule
    /// Each rule as written, made once: a decision hands out a reference, not a new string.
    private let texts: [String]
    private let finalText: String
    private var domains = DomainSuffixIndex<Int>()
    private var keywords = KeywordMatcher()
    private var prefixes = PrefixTrie<Int>()
    private var urlLiterals = LiteralAutomaton()
    private var domainLiterals = LiteralAutomaton()
    /// Indices of the rules scanned in order, ascending.
    private var linear: [Int] = []
    /// The first indexed domain rule (DOMAIN, -SUFFIX, -KEYWORD): while the name
    /// is unknown, every one of them is undecided, so the earliest bounds the answer.
    private var firstIndexedDomainRule = Int.max

    public init(_ profile: Profile) {
        self.init(rules: profile.rules, final: profile.finalRule)
    }

    public init(rules: [RuleDefinition], final: FinalRule) {
        self.init(rules: rules, final: final, describing: true)
    }

    /// `describing: false` for a rule set's own engine, which answers "does the
    /// set match" and never hands out a decision: its rules' texts (one string
    /// per line of a list that may hold a hundred thousand) are not made.
    init(rules: [RuleDefinition], final: FinalRule, describing: Bool) {
        self.rules = rules
        finalRule = final
        texts = describing ? rules.map(\.description) : []
        finalText = final.description
        for (index, rule) in rules.enumerated() {
            var indexed = true
            switch rule.condition {
            case let .domain(name): indexed = domains.insert(name, kind: .exact, index: index, value: index)
            case let .domainSuffix(name): indexed = domains.insert(name, kind: .suffix, index: index, value: index)
            case let .domainKeyword(keyword): indexed = keywords.insert(keyword, index: index)
            case let .ipCIDR(prefix, _):
                prefixes.insert(prefix.network, prefixLength: prefix.length, index: index, value: index)
            case let .ipCIDR6(prefix, _):
                prefixes.insert(prefix.network, prefixLength: prefix.length, index: index, value: index)
            case let .urlRegex(regex):
                if let literal = regex.requiredLiteral { urlLiterals.insert(literal, owner: index) } else { indexed = false }
            case let .domainRegex(regex), let .domainWildcard(_, regex):
                if let literal = regex.requiredLiteral { domainLiterals.insert(literal, owner: index) } else { indexed = false }
            case .destinationPort, .sourcePort, .sourceIP, .protocol, .method, .header, .userAgent, .owner,
                 .and, .or, .not, .ruleSet, .geoIP, .ipASN:
                indexed = false
            }
            // A name the index refuses (an empty label) is still tested, plainly.
            if !indexed { linear.append(index) }
            if indexed, rule.condition.isDomainCondition, firstIndexedDomainRule == .max { firstIndexedDomainRule = index }
        }
        urlLiterals.build()
        domainLiterals.build()
        keywords.build()
    }

    public var ruleCount: Int { rules.count }

    public func evaluate(_ facts: FlowFacts, final: Bool = false) -> RuleOutcome {
        let (best, firstUnknown) = scan(facts, final: final)
        if firstUnknown < best { return .needsApplicationData }
        return .matched(decision(for: best == .max ? nil : best))
    }

    /// The first rule found to match (`best`), and the first that may match
    /// once more is seen if it comes before (`firstUnknown`); `Int.max` for none.
    /// `anyMatch` (a rule set, whose rules share one policy): a match after an
    /// undecided rule counts too, so the scan goes past undecided rules.
    func scan(_ facts: FlowFacts, final: Bool, anyMatch: Bool = false) -> (best: Int, firstUnknown: Int) {
        var best = Int.max
        var firstUnknown = Int.max
        if let name = facts.nameForRules {
            if let hit = domains.lookup(name) { best = hit.index }
            if let hit = keywords.firstMatch(in: name, below: best) { best = hit }
            if !domainLiterals.isEmpty {
                // The first candidate whose regex matches; nil candidates (a name not ASCII): try them all.
                for index in domainLiterals.candidates(in: name) ?? domainLiterals.owners {
                    if index >= best { break }
                    if rules[index].condition.verdict(facts, final: final) == .match { best = index; break }
                }
            }
        } else if facts.nameMayArrive(final: final) {
            firstUnknown = firstIndexedDomainRule
        }
        if let destination = facts.destination, let hit = prefixes.lookup(destination), hit.index < best {
            best = hit.index
        }
        if !urlLiterals.isEmpty {
            if let request = facts.request {
                // The first candidate whose regex matches; nil candidates: try them all.
                for index in urlLiterals.candidates(in: request.url) ?? urlLiterals.owners {
                    if index >= best { break }
                    if rules[index].condition.verdict(facts, final: final) == .match { best = index; break }
                }
            } else if facts.mayLearnMore(final: final) {
                // Every indexed URL-REGEX waits for the request; the first bounds the answer.
                firstUnknown = min(firstUnknown, urlLiterals.owners[0])
            }
        }
        for index in linear {
            if index >= best || !anyMatch && index >= firstUnknown { break }
            switch rules[index].condition.verdict(facts, final: final) {
            case .match: best = index
            case .unknown:
                firstUnknown = min(firstUnknown, index)
                if anyMatch { continue }
            case .noMatch: continue
            }
            break
        }
        return (best, firstUnknown)
    }

    func decision(for index: Int?) -> RuleDecision {
        guard let index else {
            return RuleDecision(ruleIndex: nil, line: finalRule.line, text: finalText, policy: finalRule.policy)
        }
        let rule = rules[index]
        return RuleDecision(ruleIndex: index, line: rule.line, text: texts[index], policy: rule.policy, capture: rule.options.capture)
    }
}
