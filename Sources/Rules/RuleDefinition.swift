/// One line of [Rule] other than FINAL: `TYPE,VALUE,POLICY[,OPTIONS]`.
public struct RuleDefinition: Equatable, Sendable, CustomStringConvertible {
    public var line: Int
    public var condition: RuleCondition
    /// A built-in policy, proxy or group name; checked to exist at load.
    public var policy: String
    public var options: RuleOptions

    public init(line: Int, condition: RuleCondition, policy: String, options: RuleOptions = RuleOptions()) {
        self.line = line; self.condition = condition; self.policy = policy; self.options = options
    }

    /// As it would be written in the profile.
    public var description: String {
        var text = "\(condition),\(policy)"
        if condition.isNoResolve { text += ",no-resolve" }
        if options.extendedMatching { text += ",extended-matching" }
        if options.capture { text += ",capture" }
        return text
    }
}

/// Options after the policy that are not part of the condition itself.
public struct RuleOptions: Equatable, Sendable {
    /// `extended-matching` (Surge): domain rules also test the SNI and the Host
    /// header. Sluice's domain rules always see those, so this changes nothing;
    /// it is accepted so pasted Surge rules load.
    public var extendedMatching: Bool
    /// `capture` (ext): when any rule has it, the packet capture keeps only
    /// the flows such rules decide (docs/capture.md, "Capturing chosen flows").
    public var capture: Bool

    public init(extendedMatching: Bool = false, capture: Bool = false) {
        self.extendedMatching = extendedMatching
        self.capture = capture
    }
}

/// The `FINAL,POLICY` (or `MATCH,POLICY`) line that ends [Rule].
public struct FinalRule: Equatable, Sendable, CustomStringConvertible {
    public var policy: String
    public var line: Int

    public init(policy: String, line: Int) { self.policy = policy; self.line = line }

    public var description: String { "FINAL,\(policy)" }
}

/// What a rule tests. Composite rules nest; the leaves say which part of a flow
/// they need (see `requiresHTTP`).
public indirect enum RuleCondition: Equatable, Sendable, CustomStringConvertible {
    /// DOMAIN: the name equals this (lowercased, no trailing dot).
    case domain(String)
    /// DOMAIN-SUFFIX: the name is this or ends with "." + this.
    case domainSuffix(String)
    /// DOMAIN-KEYWORD: the name contains this.
    case domainKeyword(String)
    /// DOMAIN-REGEX: the regex matches somewhere in the name.
    case domainRegex(CompiledRegex)
    /// DOMAIN-WILDCARD: the whole name matches `pattern` (`*` any run, dots
    /// included; `?` one character; `[...]` a class), case-insensitively;
    /// matched through `regex`, the same pattern as an anchored regex.
    case domainWildcard(pattern: String, regex: CompiledRegex)
    /// IP-CIDR, over the flow's real destination address. Sluice never resolves a
    /// name to test an IP rule, so `noResolve` changes nothing; it is kept so the
    /// rule prints as written.
    case ipCIDR(IPv4Prefix, noResolve: Bool)
    case ipCIDR6(IPv6Prefix, noResolve: Bool)
    /// GEOIP: the destination address is in `country` (ISO 3166-1, upper
    /// case) by the profile's GeoIP database; like IP-CIDR, never resolves.
    case geoIP(country: String, database: MaxMindDatabase, noResolve: Bool)
    /// IP-ASN: the destination address is in autonomous system `number` by
    /// the profile's ASN database; never resolves either.
    case ipASN(number: UInt32, database: MaxMindDatabase, noResolve: Bool)
    /// DEST-PORT (alias DST-PORT).
    case destinationPort(PortRange)
    /// SRC-PORT.
    case sourcePort(PortRange)
    /// SRC-IP: the address the flow comes from (the app's in a tunnel, a
    /// gateway's LAN device in whole-host mode, the client of `sluice proxy`);
    /// one address or a network, IPv4 or IPv6.
    case sourceIP(SourcePrefix)
    /// PROTOCOL.
    case `protocol`(RuleProtocol)
    /// URL-REGEX: over the absolute URL of an HTTP request ("http://host/path?query").
    case urlRegex(CompiledRegex)
    /// METHOD (ext): uppercased; compared exactly.
    case method(String)
    /// HEADER (ext): a request header named `name` (case-insensitive) whose value the regex matches.
    case header(name: String, value: CompiledRegex)
    /// USER-AGENT: a glob (`*`, `?`) over the whole User-Agent header.
    case userAgent(GlobPattern)
    /// PROCESS-NAME, PROCESS-PATH and UID: who opened the flow.
    case owner(OwnerCondition)
    case and([RuleCondition])
    case or([RuleCondition])
    case not(RuleCondition)
    /// RULE-SET and DOMAIN-SET: matches when any of the set's rules does.
    /// `noResolve` as written on the line (Surge passes it to the set's IP rules;
    /// Sluice never resolves, so it changes nothing).
    case ruleSet(RuleSet, noResolve: Bool)

    /// True when the condition needs an HTTP request head to decide: such rules never
    /// match HTTPS without interception, nor any non-HTTP flow.
    public var requiresHTTP: Bool {
        switch self {
        case .urlRegex, .method, .header, .userAgent: return true
        case .domain, .domainSuffix, .domainKeyword, .domainRegex, .domainWildcard, .ipCIDR, .ipCIDR6, .geoIP, .ipASN,
             .destinationPort, .sourcePort, .sourceIP, .protocol, .owner: return false
        case let .and(conditions), let .or(conditions): return conditions.contains { $0.requiresHTTP }
        case let .not(condition): return condition.requiresHTTP
        case let .ruleSet(set, _): return set.requiresHTTP
        }
    }

    /// True when the condition (or a part of it) is an owner test `test`
    /// accepts: the engine then asks the kernel who opened each new flow.
    public func containsOwnerTest(_ test: (OwnerCondition) -> Bool) -> Bool {
        switch self {
        case let .owner(condition): return test(condition)
        case .domain, .domainSuffix, .domainKeyword, .domainRegex, .domainWildcard, .ipCIDR, .ipCIDR6, .geoIP, .ipASN,
             .destinationPort, .sourcePort, .sourceIP, .protocol, .urlRegex, .method, .header, .userAgent: return false
        case let .and(conditions), let .or(conditions): return conditions.contains { $0.containsOwnerTest(test) }
        case let .not(condition): return condition.containsOwnerTest(test)
        case let .ruleSet(set, _): return set.rules.contains { $0.condition.containsOwnerTest(test) }
        }
    }

    var isNoResolve: Bool {
        switch self {
        case let .ipCIDR(_, noResolve), let .ipCIDR6(_, noResolve), let .ruleSet(_, noResolve), let .geoIP(_, _, noResolve),
             let .ipASN(_, _, noResolve): return noResolve
        case .domain, .domainSuffix, .domainKeyword, .domainRegex, .domainWildcard, .destinationPort, .sourcePort, .sourceIP,
             .protocol, .urlRegex, .method, .header, .userAgent, .owner, .and, .or, .not: return false
        }
    }

    /// The rule type as written in a profile.
    public var typeName: String {
        switch self {
        case .domain: return "DOMAIN"
        case .domainSuffix: return "DOMAIN-SUFFIX"
        case .domainKeyword: return "DOMAIN-KEYWORD"
        case .domainRegex: return "DOMAIN-REGEX"
        case .domainWildcard: return "DOMAIN-WILDCARD"
        case .ipCIDR: return "IP-CIDR"
        case .ipCIDR6: return "IP-CIDR6"
        case .geoIP: return "GEOIP"
        case .ipASN: return "IP-ASN"
        case .destinationPort: return "DEST-PORT"
        case .sourcePort: return "SRC-PORT"
        case .sourceIP: return "SRC-IP"
        case .protocol: return "PROTOCOL"
        case .urlRegex: return "URL-REGEX"
        case .method: return "METHOD"
        case .header: return "HEADER"
        case .userAgent: return "USER-AGENT"
        case let .owner(condition): return condition.typeName
        case .and: return "AND"
        case .or: return "OR"
        case .not: return "NOT"
        case let .ruleSet(set, _): return set.kind.rawValue
        }
    }

    /// `TYPE,VALUE` in profile syntax (regexes quoted).
    public var description: String {
        switch self {
        case let .domain(name), let .domainSuffix(name), let .domainKeyword(name): return "\(typeName),\(name)"
        case let .domainRegex(regex), let .urlRegex(regex): return "\(typeName),\(RuleCondition.quote(regex.source))"
        case let .domainWildcard(pattern, _): return "DOMAIN-WILDCARD,\(RuleCondition.quote(pattern))"
        case let .ipCIDR(prefix, _): return "IP-CIDR,\(prefix)"
        case let .ipCIDR6(prefix, _): return "IP-CIDR6,\(prefix)"
        case let .geoIP(country, _, _): return "GEOIP,\(country)"
        case let .ipASN(number, _, _): return "IP-ASN,\(number)"
        case let .destinationPort(range), let .sourcePort(range): return "\(typeName),\(range)"
        case let .sourceIP(prefix): return "SRC-IP,\(prefix)"
        case let .protocol(value): return "PROTOCOL,\(value.rawValue)"
        case let .method(method): return "METHOD,\(method)"
        case let .header(name, value): return "HEADER,\(RuleCondition.quote("\(name): \(value.source)"))"
        case let .userAgent(glob): return "USER-AGENT,\(RuleCondition.quote(glob.pattern))"
        case let .owner(condition): return condition.description
        case let .and(conditions), let .or(conditions):
            return "\(typeName),(\(conditions.map { "(\($0.descriptionWithNoResolve))" }.joined(separator: ",")))"
        case let .not(condition): return "NOT,((\(condition.descriptionWithNoResolve)))"
        case let .ruleSet(set, _): return set.description
        }
    }

    private var descriptionWithNoResolve: String { isNoResolve ? "\(description),no-resolve" : description }

    static func quote(_ text: String) -> String {
        var out = "\""
        for c in text {
            if c == "\"" { out += "\\\"" } else if c == "\\" { out += "\\\\" } else { out.append(c) }
        }
        return out + "\""
    }
}

/// The port test of DEST-PORT and SRC-PORT: "443", "8000-8100", ">=50000", "<1024"...
/// Comparisons become the equivalent closed range.
public struct PortRange: Hashable, Sendable, CustomStringConvertible {
    public var lower: UInt16
    public var upper: UInt16

    public init(_ lower: UInt16, _ upper: UInt16) { self.lower = lower; self.upper = upper }
    public init(_ port: UInt16) { lower = port; upper = port }

    public func contains(_ port: UInt16) -> Bool { lower <= port && port <= upper }

    public var description: String { lower == upper ? "\(lower)" : "\(lower)-\(upper)" }
}

/// PROTOCOL values. HTTP means a plain HTTP/1.x request head was seen; TLS a
/// ClientHello over TCP (HTTPS is accepted as an alias, as Surge spells it);
/// QUIC (ext) a UDP flow whose first datagram is a QUIC client Initial.
public enum RuleProtocol: String, Hashable, Sendable, CaseIterable {
    case tcp = "TCP"
    case udp = "UDP"
    case http = "HTTP"
    case tls = "TLS"
    case quic = "QUIC"
    case icmp = "ICMP"
}
