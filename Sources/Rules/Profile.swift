public import Wire

/// A loaded profile: every section of /work/shared/spec/profile-dialect.md, every
/// name resolved and every regex compiled. Only `ProfileParser` makes one from
/// text; a profile that exists has no errors (its warnings are kept here).
public struct Profile: Equatable, Sendable {
    /// The path the profile was read from, as given (for messages).
    public var file: String
    /// The folder relative paths were resolved against.
    public var baseDirectory: String
    public var general: GeneralSettings
    public var proxies: [ProxyDefinition]
    public var groups: [ProxyGroupDefinition]
    /// [Rule] in order, without FINAL; first match wins.
    public var rules: [RuleDefinition]
    /// The FINAL (or MATCH) line: the policy when no rule matches.
    public var finalRule: FinalRule
    public var hosts: [HostEntry]
    public var urlRewrites: [URLRewrite]
    public var headerRewrites: [HeaderRewrite]
    /// [Body Rewrite] in order; every matching line applies.
    public var bodyRewrites: [BodyRewrite]
    public var mapLocals: [MapLocal]
    public var statistics: [StatisticsDefinition]
    public var capture: CaptureSettings
    /// [MITM]: the HTTPS flows Sluice decrypts; empty, none.
    public var mitm: MITMSettings
    /// Some rule has the `capture` option: the packet capture keeps only their flows.
    public var selectsCapturedFlows: Bool { rules.contains { $0.options.capture } }
    /// Non-fatal findings (a 302 that may see a POST, host bits in a CIDR...).
    public var warnings: [ProfileError]

    public init(file: String, baseDirectory: String, general: GeneralSettings = GeneralSettings(),
                proxies: [ProxyDefinition] = [], groups: [ProxyGroupDefinition] = [],
                rules: [RuleDefinition] = [], finalRule: FinalRule, hosts: [HostEntry] = [],
                urlRewrites: [URLRewrite] = [], headerRewrites: [HeaderRewrite] = [], bodyRewrites: [BodyRewrite] = [],
                mapLocals: [MapLocal] = [], statistics: [StatisticsDefinition] = [],
                capture: CaptureSettings = CaptureSettings(), mitm: MITMSettings = MITMSettings(),
                warnings: [ProfileError] = []) {
        self.file = file; self.baseDirectory = baseDirectory; self.general = general
        self.proxies = proxies; self.groups = groups; self.rules = rules; self.finalRule = finalRule
        self.hosts = hosts; self.urlRewrites = urlRewrites; self.headerRewrites = headerRewrites
        self.bodyRewrites = bodyRewrites
        self.mapLocals = mapLocals; self.statistics = statistics; self.capture = capture; self.mitm = mitm
        self.warnings = warnings
    }

    /// What a policy name refers to: a built-in, a proxy or a group. Every name a
    /// loaded profile uses resolves.
    public func policy(named name: String) -> PolicyTarget? {
        if let builtin = BuiltinPolicy(rawValue: name) { return .builtin(builtin) }
        if let proxy = proxies.first(where: { $0.name == name }) { return .proxy(proxy) }
        if let group = groups.first(where: { $0.name == name }) { return .group(group) }
        return nil
    }

    /// The [Host] entry for a name (lowercased, no trailing dot): an exact
    /// entry first, then the longest wildcard.
    public func hostEntry(for name: String) -> HostEntry? { hosts.entry(for: name) }

    /// The [Host] address Sluice connects to for a name, through its
    /// aliases: the first IPv4 one, as names it resolves itself go IPv4
    /// first, else the first; nil when the chain ends at a name without
    /// addresses (or at a `server:` line, or loops).
    public func hostAddress(for name: String) -> IPAddress? {
        guard let list = hostAddresses(for: name) else { return nil }
        return list.first { if case .v4 = $0 { true } else { false } } ?? list.first
    }

    /// Every [Host] address of a name, through its aliases.
    public func hostAddresses(for name: String) -> [IPAddress]? {
        var name = name
        for _ in 0 ... Self.maximumAliasChain {
            guard let entry = hostEntry(for: name) else { return nil }
            switch entry.value {
            case let .addresses(list): return list
            case let .alias(target): name = target
            case .server: return nil
            }
        }
        return nil
    }

    /// Longer alias chains are loops (DNSHostTable's limit too).
    public static let maximumAliasChain = 8
}
