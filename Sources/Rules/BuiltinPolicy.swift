/// The policies every profile has without defining them. Names are Surge's,
/// spelled in capitals exactly as here.
public enum BuiltinPolicy: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Connect to the destination from Sluice itself.
    case direct = "DIRECT"
    /// HTTP: answer 403 (or the status a `reject` proxy names); other flows: as REJECT-RST for TCP, dropped for UDP.
    case reject = "REJECT"
    /// Refuse with a TCP RST (UDP: ICMP port unreachable).
    case rejectRST = "REJECT-RST"
    /// Drop silently: the client waits for its own timeout.
    case rejectDrop = "REJECT-DROP"
    /// HTTP: answer 200 with a 1x1 transparent GIF, so ad slots collapse quietly.
    case rejectTinyGIF = "REJECT-TINYGIF"
    /// As REJECT, but never escalates to dropping (Surge drops after repeated rejects).
    case rejectNoDrop = "REJECT-NO-DROP"

    public var description: String { rawValue }
}

/// What a policy name in a rule or group refers to, once the profile is loaded.
public enum PolicyTarget: Equatable, Sendable, CustomStringConvertible {
    case builtin(BuiltinPolicy)
    case proxy(ProxyDefinition)
    case group(ProxyGroupDefinition)

    public var name: String {
        switch self {
        case let .builtin(policy): return policy.rawValue
        case let .proxy(proxy): return proxy.name
        case let .group(group): return group.name
        }
    }

    public var description: String {
        switch self {
        case let .builtin(policy): return policy.rawValue
        case let .proxy(proxy): return "\(proxy.name) (\(proxy.kind.name) proxy)"
        case let .group(group): return "\(group.name) (\(group.kind.rawValue) group)"
        }
    }
}
