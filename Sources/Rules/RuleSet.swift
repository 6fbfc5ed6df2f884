import Wire

/// RULE-SET and DOMAIN-SET: rules kept in a file of their own (or built in:
/// LAN) that all take the policy of the one [Rule] line naming the set, at
/// that line's place in the first-match order.
///
/// The set is one rule to the profile's engine (scanned in order like AND/OR).
/// A RULE-SET has an engine of its own inside, with the same indexes; a
/// DOMAIN-SET's names are a compact sorted table (DomainTable). Either way a
/// list of a hundred thousand entries costs a flow a few lookups, not a
/// hundred thousand comparisons. Its verdict is the OR of its rules': a match as soon
/// as any rule matches (they share a policy, so which one does not change
/// the decision), unknown while an earlier rule may still match.
public final class RuleSet: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// One rule per line, without a policy: `DOMAIN-SUFFIX,ads.test`.
        case rules = "RULE-SET"
        /// One name per line: `ads.test` is that name, `.ads.test` it and every name under it.
        case domains = "DOMAIN-SET"
    }

    /// Files larger than this are refused before parsing (a mistaken path).
    public static let maximumFileSize = 64 << 20

    public let kind: Kind
    /// As written on the rule line: a path, or the name of a built-in set.
    public let name: String
    /// The file read (absolute); nil for a built-in set.
    public let path: String?
    /// A RULE-SET's rules, each with its line in the file (their policy is
    /// empty); empty for a DOMAIN-SET, whose names are in `names`.
    public let rules: [RuleDefinition]
    /// A DOMAIN-SET's names, compactly (DomainTable).
    let names: DomainTable?
    /// Whether any rule needs an HTTP request head (as for OR).
    public let requiresHTTP: Bool
    private let engine: RuleEngine

    /// A RULE-SET (or a built-in set).
    public init(kind: Kind, name: String, path: String?, rules: [RuleDefinition]) {
        self.kind = kind
        self.name = name
        self.path = path
        self.rules = rules
        names = nil
        requiresHTTP = rules.contains { $0.condition.requiresHTTP }
        engine = RuleEngine(rules: rules, final: FinalRule(policy: "", line: 0), describing: false)
    }

    /// A DOMAIN-SET: names that cover themselves, or themselves and every
    /// name under them.
    init(domains: DomainTable, name: String, path: String?) {
        kind = .domains
        self.name = name
        self.path = path
        rules = []
        names = domains
        requiresHTTP = false
        engine = RuleEngine(rules: [], final: FinalRule(policy: "", line: 0), describing: false)
    }

    /// Entries: rules, or names.
    public var count: Int { names?.count ?? rules.count }

    public static func == (a: RuleSet, b: RuleSet) -> Bool {
        a === b || a.kind == b.kind && a.name == b.name && a.path == b.path && a.rules == b.rules && a.names == b.names
    }

    /// `RULE-SET,NAME` as written on the rule line.
    public var description: String {
        let plain = !name.isEmpty && !name.contains { $0 == "," || $0 == "\"" || $0 == "(" || $0 == ")" || ProfileLexer.isBlank($0) }
        return "\(kind.rawValue),\(plain ? name : RuleCondition.quote(name))"
    }

    public func verdict(_ facts: FlowFacts, final: Bool) -> RuleVerdict {
        if let names { return facts.domainVerdict(final: final) { names.contains($0) } }
        let (best, firstUnknown) = engine.scan(facts, final: final, anyMatch: true)
        if best != .max { return .match }
        return firstUnknown != .max ? .unknown : .noMatch
    }

    /// The earliest of the set's rules that matches, for `sluice match`.
    public func firstMatch(_ facts: FlowFacts, final: Bool) -> RuleDefinition? {
        if let names {
            guard let host = facts.nameForRules, let hit = names.firstMatch(host) else { return nil }
            return RuleDefinition(line: hit.line, condition: hit.suffix ? .domainSuffix(hit.name) : .domain(hit.name), policy: "")
        }
        let best = engine.scan(facts, final: final).best
        return best == .max ? nil : rules[best]
    }

    /// The set a profile names by a word rather than a path.
    public static func builtin(_ name: String) -> RuleSet? {
        name == "LAN" ? lan() : nil
    }

    /// LAN: names and addresses that stay on the local network. Private and
    /// shared address space (RFC 1918, RFC 6598), loopback, link-local (RFC
    /// 3927, RFC 4291), unique local IPv6 (RFC 4193), and the names of mDNS
    /// (.local, RFC 6762) and home networks (home.arpa, RFC 8375). Made anew
    /// for each profile (ten rules): a global would be a lazily made object
    /// that lives forever, which the fuzzer's leak check reports.
    static func lan() -> RuleSet {
        var rules: [RuleDefinition] = []
        func add(_ condition: RuleCondition) { rules.append(RuleDefinition(line: rules.count + 1, condition: condition, policy: "")) }
        add(.domainSuffix("local"))
        add(.domainSuffix("home.arpa"))
        for network in ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16"] {
            add(.ipCIDR(IPv4Prefix(network)!, noResolve: true))
        }
        for network in ["::1/128", "fc00::/7", "fe80::/10"] {
            add(.ipCIDR6(IPv6Prefix(network)!, noResolve: true))
        }
        return RuleSet(kind: .rules, name: "LAN", path: nil, rules: rules)
    }
}

extension Profile {
    /// Every set the rules name, nested in AND/OR/NOT too, each once.
    public var ruleSets: [RuleSet] {
        var sets: [RuleSet] = []
        func visit(_ condition: RuleCondition) {
            switch condition {
            case let .ruleSet(set, _): if !sets.contains(where: { $0 === set }) { sets.append(set) }
            case let .and(conditions), let .or(conditions): conditions.forEach(visit)
            case let .not(inner): visit(inner)
            case .domain, .domainSuffix, .domainKeyword, .domainRegex, .domainWildcard, .ipCIDR, .ipCIDR6, .geoIP, .ipASN, .destinationPort,
                 .sourcePort, .sourceIP, .protocol, .urlRegex, .method, .header, .userAgent, .owner: return
            }
        }
        for rule in rules { visit(rule.condition) }
        return sets
    }
}
