import HTTP
import Wire

/// The three-valued test of one condition against a flow. The engine uses it
/// for the rules it scans in order, and `ProfileExplainer` for every rule, so
/// the indexed path and the plain reading of the profile agree by construction
/// (a test checks that they do).
extension RuleCondition {
    /// `final`: no more data will come, so whatever is unknown now never matches.
    public func verdict(_ facts: FlowFacts, final: Bool = false) -> RuleVerdict {
        switch self {
        case let .domain(name):
            return facts.domainVerdict(final: final) { DomainSuffixIndex<Int>.equalNames($0, name) }
        case let .domainSuffix(suffix):
            return facts.domainVerdict(final: final) { DomainSuffixIndex<Int>.hasSuffix($0, suffix) }
        case let .domainKeyword(keyword):
            return facts.domainVerdict(final: final) { KeywordMatcher.host($0, contains: keyword) }
        case let .domainRegex(regex), let .domainWildcard(_, regex):
            return facts.domainVerdict(final: final) { regex.matches($0) }
        case let .ipCIDR(prefix, _):
            switch facts.destination {
            case let .v4(a)?: return prefix.contains(a) ? .match : .noMatch
            case let .v6(a)?:
                guard let mapped = a.ipv4Mapped else { return .noMatch }
                return prefix.contains(mapped) ? .match : .noMatch
            case nil: return .noMatch
            }
        case let .ipCIDR6(prefix, _):
            guard case let .v6(a)? = facts.destination else { return .noMatch }
            return prefix.contains(a) ? .match : .noMatch
        case let .geoIP(country, database, _):
            guard let destination = facts.destination else { return .noMatch }
            return database.country(of: destination) == country ? .match : .noMatch
        case let .ipASN(number, database, _):
            guard let destination = facts.destination else { return .noMatch }
            return database.autonomousSystemNumber(of: destination) == number ? .match : .noMatch
        case let .destinationPort(range):
            return range.contains(facts.destinationPort) ? .match : .noMatch
        case let .sourcePort(range):
            return range.contains(facts.sourcePort) ? .match : .noMatch
        case let .sourceIP(prefix):
            guard let source = facts.source else { return .noMatch }
            return prefix.contains(source) ? .match : .noMatch
        case let .protocol(p):
            switch p {
            case .tcp: return facts.transport == .tcp ? .match : .noMatch
            case .udp: return facts.transport == .udp ? .match : .noMatch
            case .icmp: return facts.transport == .icmp ? .match : .noMatch
            // Known from the first datagram, before any decision.
            case .quic: return facts.applicationProtocol == .quic ? .match : .noMatch
            case .http, .tls:
                let want: FlowFacts.ApplicationProtocol = p == .http ? .http : .tls
                if let seen = facts.applicationProtocol { return seen == want ? .match : .noMatch }
                if facts.request != nil { return want == .http ? .match : .noMatch }
                return facts.mayLearnMore(final: final) ? .unknown : .noMatch
            }
        case let .urlRegex(regex):
            return facts.requestVerdict(final: final) { regex.matches($0.url) }
        case let .method(method):
            return facts.requestVerdict(final: final) { $0.method == method }
        case let .header(name, value):
            return facts.requestVerdict(final: final) { request in
                request.headers.contains { HTTPHeader.namesEqual($0.name, name) && value.matches($0.value) }
            }
        case let .userAgent(glob):
            return facts.requestVerdict(final: final) { request in request.header("User-Agent").map(glob.matches) ?? false }
        case let .owner(condition):
            // Known from the flow's first packet, or never: nothing to wait for.
            return condition.matches(facts.owner) ? .match : .noMatch
        case let .and(conditions):
            var sawUnknown = false
            for c in conditions {
                switch c.verdict(facts, final: final) {
                case .noMatch: return .noMatch
                case .unknown: sawUnknown = true
                case .match: continue
                }
            }
            return sawUnknown ? .unknown : .match
        case let .or(conditions):
            var sawUnknown = false
            for c in conditions {
                switch c.verdict(facts, final: final) {
                case .match: return .match
                case .unknown: sawUnknown = true
                case .noMatch: continue
                }
            }
            return sawUnknown ? .unknown : .noMatch
        case let .not(condition):
            switch condition.verdict(facts, final: final) {
            case .match: return .noMatch
            case .noMatch: return .match
            case .unknown: return .unknown
            }
        case let .ruleSet(set, _):
            return set.verdict(facts, final: final)
        }
    }

    /// True for the types the engine answers from an index (DOMAIN,
    /// DOMAIN-SUFFIX, DOMAIN-KEYWORD, IP-CIDR, IP-CIDR6).
    var isIndexed: Bool {
        switch self {
        case .domain, .domainSuffix, .domainKeyword, .ipCIDR, .ipCIDR6: return true
        case .domainRegex, .domainWildcard, .destinationPort, .sourcePort, .sourceIP, .protocol, .urlRegex, .method, .header, .userAgent, .owner,
             .and, .or, .not, .ruleSet, .geoIP, .ipASN: return false
        }
    }

    /// True for conditions on the flow's name.
    var isDomainCondition: Bool {
        switch self {
        case .domain, .domainSuffix, .domainKeyword, .domainRegex, .domainWildcard: return true
        case .ipCIDR, .ipCIDR6, .geoIP, .ipASN, .destinationPort, .sourcePort, .sourceIP, .protocol, .urlRegex, .method, .header, .userAgent, .owner,
             .and, .or, .not, .ruleSet: return false
        }
    }
}

extension FlowFacts {
    /// Whether sniffing the first bytes could still tell us something: a TCP
    /// flow whose request head has not been read, and which is not known to be
    /// TLS (HTTPS without interception never shows a request).
    func mayLearnMore(final: Bool) -> Bool {
        !final && transport == .tcp && request == nil && applicationProtocol != .tls
    }

    /// The name domain rules test. With a request, its URL's host (the
    /// request as rewritten, which may differ from what DNS saw), unless that
    /// host is an address literal; otherwise the flow's domain.
    var nameForRules: String? {
        if let request, let host = request.host, !request.hostIsAddress { return host }
        guard var d = domain, !d.isEmpty else { return nil }
        if d.hasSuffix(".") { d.removeLast() }
        return d
    }

    func domainVerdict(final: Bool, _ test: (String) -> Bool) -> RuleVerdict {
        if let name = nameForRules { return test(name) ? .match : .noMatch }
        return nameMayArrive(final: final) ? .unknown : .noMatch
    }

    /// No name yet, but SNI or the Host header may bring one. A TLS flow whose
    /// ClientHello was read without SNI, or a request without a name, will not;
    /// nor will UDP other than QUIC (whose Initial packets carry a ClientHello)
    /// or ICMP, whose names come from DNS or nowhere.
    func nameMayArrive(final: Bool) -> Bool {
        guard nameForRules == nil, !final, request == nil else { return false }
        switch transport {
        case .tcp: return applicationProtocol != .tls
        case .udp: return applicationProtocol == .quic
        case .icmp: return false
        }
    }

    func requestVerdict(final: Bool, _ test: (RequestFacts) -> Bool) -> RuleVerdict {
        if let request { return test(request) ? .match : .noMatch }
        return mayLearnMore(final: final) ? .unknown : .noMatch
    }
}

extension IPv6Address {
    /// The IPv4 address inside ::ffff:a.b.c.d, which dual-stack sockets report for IPv4 peers.
    var ipv4Mapped: IPv4Address? {
        high == 0 && low >> 32 == 0xffff ? IPv4Address(UInt32(truncatingIfNeeded: low)) : nil
    }
}

extension DomainSuffixIndex where Value == Int {
    static func equalNames(_ host: String, _ name: String) -> Bool {
        var a = Substring(host), b = Substring(name)
        if a.hasSuffix(".") { a = a.dropLast() }
        if b.hasSuffix(".") { b = b.dropLast() }
        return a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { lower($0) == lower($1) }
    }

    /// `host` is `suffix` or ends with "." + `suffix`.
    static func hasSuffix(_ host: String, _ suffix: String) -> Bool {
        var a = Array(Substring(host).utf8), b = Array(Substring(suffix).utf8)
        if a.last == UInt8(ascii: ".") { a.removeLast() }
        if b.last == UInt8(ascii: ".") { b.removeLast() }
        guard !b.isEmpty, a.count >= b.count else { return false }
        let offset = a.count - b.count
        for i in 0 ..< b.count where lower(a[offset + i]) != lower(b[i]) { return false }
        return offset == 0 || a[offset - 1] == UInt8(ascii: ".")
    }
}
