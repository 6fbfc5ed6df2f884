/// Rules that can never decide a flow because an earlier rule matches every
/// flow they would: `DOMAIN,api.test` after `DOMAIN-SUFFIX,test`, a network
/// inside an earlier one. `sluice check` names them; pasted lists collect
/// such lines, and a rule that silently never applies is a bug in the
/// profile. Only what can be proved from the rules' values is reported:
/// DOMAIN and DOMAIN-SUFFIX after DOMAIN, DOMAIN-SUFFIX or DOMAIN-KEYWORD,
/// and IP networks after networks that contain them. Regexes, sets and
/// composite rules are not reasoned about, so nothing is reported wrongly.
public enum ShadowedRules {
    public struct Finding: Equatable, Sendable {
        /// Indices into the rules.
        public var rule: Int
        public var shadowedBy: Int
        /// The earlier rule has the same policy and options: the later one is
        /// only redundant, not a decision that never happens.
        public var samePolicy: Bool
    }

    public static func find(_ rules: [RuleDefinition]) -> [Finding] {
        var names = DomainSuffixIndex<Int>()
        var suffixes = DomainSuffixIndex<Int>()
        var networks = PrefixTrie<Int>()
        var keywords = KeywordMatcher()
        for (index, rule) in rules.enumerated() {
            if case let .domainKeyword(keyword) = rule.condition { keywords.insert(keyword, index: index) }
        }
        keywords.build()
        var findings: [Finding] = []
        func report(_ index: Int, _ earlier: Int?) {
            guard let earlier, earlier < index else { return }
            let a = rules[earlier], b = rules[index]
            findings.append(Finding(rule: index, shadowedBy: earlier, samePolicy: a.policy == b.policy && a.options == b.options))
        }
        for (index, rule) in rules.enumerated() {
            switch rule.condition {
            case let .domain(name):
                report(index, [names.lookup(name)?.index, keywords.firstMatch(in: name, below: index)].compactMap { $0 }.min())
                names.insert(name, kind: .exact, index: index, value: index)
            case let .domainSuffix(name):
                // Every name under it contains it, so a keyword it contains covers them all.
                report(index, [suffixes.lookup(name)?.index, keywords.firstMatch(in: name, below: index)].compactMap { $0 }.min())
                names.insert(name, kind: .suffix, index: index, value: index)
                suffixes.insert(name, kind: .suffix, index: index, value: index)
            case let .ipCIDR(prefix, _):
                report(index, networks.covering(.v4(prefix.network), prefixLength: prefix.length)?.index)
                networks.insert(prefix.network, prefixLength: prefix.length, index: index, value: index)
            case let .ipCIDR6(prefix, _):
                report(index, networks.covering(.v6(prefix.network), prefixLength: prefix.length)?.index)
                networks.insert(prefix.network, prefixLength: prefix.length, index: index, value: index)
            case .domainKeyword, .domainRegex, .domainWildcard, .geoIP, .ipASN, .destinationPort, .sourcePort, .sourceIP, .protocol, .urlRegex,
                 .method, .header, .userAgent, .owner, .and, .or, .not, .ruleSet:
                continue
            }
        }
        return findings
    }
}
