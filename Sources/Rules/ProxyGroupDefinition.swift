/// One line of [Proxy Group]: `NAME = KIND, MEMBER, ..., key=value, ...`.
public struct ProxyGroupDefinition: Equatable, Sendable, CustomStringConvertible {
    public var name: String
    public var kind: ProxyGroupKind
    /// Policy names (proxies, other groups, built-ins) in the order written:
    /// select starts on the first; fallback tries them in this order.
    public var members: [String]
    /// The health-check URL (fallback and url-test; nil for select).
    public var url: String?
    /// Seconds between health checks.
    public var interval: Int
    /// Seconds a health check may take before the member counts as down.
    public var timeout: Int
    /// url-test only: milliseconds by which a member must beat the current one to replace it.
    public var tolerance: Int
    public var line: Int

    public static let defaultInterval = 600
    public static let defaultTimeout = 5
    public static let defaultTolerance = 100

    public init(name: String, kind: ProxyGroupKind, members: [String], url: String? = nil,
                interval: Int = defaultInterval, timeout: Int = defaultTimeout,
                tolerance: Int = defaultTolerance, line: Int) {
        self.name = name; self.kind = kind; self.members = members; self.url = url
        self.interval = interval; self.timeout = timeout; self.tolerance = tolerance; self.line = line
    }

    public var description: String {
        var text = "\(name) = \(kind.rawValue), \(members.joined(separator: ", "))"
        if let url { text += ", url=\(url), interval=\(interval), timeout=\(timeout)" }
        if kind == .urlTest { text += ", tolerance=\(tolerance)" }
        return text
    }
}

public enum ProxyGroupKind: String, Equatable, Sendable, CaseIterable {
    /// The user picks a member (the control API); the first one until then.
    case select
    /// The first member whose health check passes.
    case fallback
    /// The member with the lowest health-check latency, within the tolerance.
    case urlTest = "url-test"
}
