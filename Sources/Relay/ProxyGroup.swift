/// A named set of proxies (or other groups) behind one choice, pure and
/// clocked from outside (`UInt64` nanoseconds). The engine runs the health
/// checks `dueChecks(now:)` asks for, through each member, and reports each
/// result with `record`; the group answers with a `Switch` when its choice
/// moves, which the engine logs.
///
/// - `select`: the member chosen at run time (`select(_:)`); health is shown, not acted on.
/// - `fallback`: the first member, in order, whose last check passed.
/// - `urlTest`: the member with the lowest latency; moves off a healthy member
///   only for one faster by more than `tolerance`, so near-ties do not flap.
///
/// Before any check has passed, fallback and url-test pick the first member not
/// known to be down (unchecked counts as possibly up), and if all are down the
/// first member: a flow then fails fast with that proxy's error instead of
/// finding no route at all.
public struct ProxyGroup: Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable, CustomStringConvertible {
        case select
        case fallback
        case urlTest(toleranceNs: UInt64)

        public var description: String {
            switch self {
            case .select: return "select"
            case .fallback: return "fallback"
            case .urlTest: return "url-test"
            }
        }
    }

    public enum CheckResult: Hashable, Sendable {
        case success(latencyNs: UInt64)
        case failure
    }

    public enum Health: Hashable, Sendable, CustomStringConvertible {
        case unchecked
        case healthy(latencyNs: UInt64)
        case down

        public var description: String {
            switch self {
            case .unchecked: return "unchecked"
            case let .healthy(ns): return "healthy \(ProxyGroup.milliseconds(ns))"
            case .down: return "down"
            }
        }
    }

    public struct Member: Hashable, Sendable {
        public let name: String
        public internal(set) var health: Health = .unchecked
        public internal(set) var lastCheckedNs: UInt64?
        var nextCheckNs: UInt64 = 0
    }

    /// The group's choice moved; the engine logs it and routes new flows to `to`.
    public struct Switch: Hashable, Sendable, CustomStringConvertible {
        public let group: String
        public let from: String
        public let to: String
        public var description: String { "\(group): \(from) → \(to)" }
    }

    public let name: String
    public let kind: Kind
    public let checkIntervalNs: UInt64
    public private(set) var members: [Member]
    public private(set) var current: String

    /// Default health-check interval: 5 minutes, as common proxy clients use.
    public static let defaultCheckIntervalNs: UInt64 = 300_000_000_000

    public init(name: String, kind: Kind, members: [String], checkIntervalNs: UInt64 = defaultCheckIntervalNs) throws(ProxyGroupError) {
        guard let first = members.first else { throw .empty(group: name) }
        var seen = Set<String>()
        for member in members {
            guard seen.insert(member).inserted else { throw .duplicateMember(group: name, member: member) }
            if member == name { throw .cycle([name, name]) }
        }
        self.name = name
        self.kind = kind
        self.checkIntervalNs = max(checkIntervalNs, 1)
        self.members = members.map { Member(name: $0) }
        current = first
    }

    public func health(of member: String) -> Health? {
        members.first { $0.name == member }?.health
    }

    /// Switches a `select` group by hand.
    @discardableResult
    public mutating func select(_ member: String) throws(ProxyGroupError) -> Switch? {
        switch kind {
        case .select: break
        case .fallback, .urlTest: throw .notSelectable(group: name)
        }
        guard members.contains(where: { $0.name == member }) else { throw .unknownMember(group: name, member: member) }
        return move(to: member)
    }

    /// Records a health check's result (run through `member` at time `at`).
    /// Results for names that are not members are ignored.
    @discardableResult
    public mutating func record(member: String, result: CheckResult, at now: UInt64) -> Switch? {
        guard let i = members.firstIndex(where: { $0.name == member }) else { return nil }
        switch result {
        case let .success(latency): members[i].health = .healthy(latencyNs: latency)
        case .failure: members[i].health = .down
        }
        members[i].lastCheckedNs = now
        members[i].nextCheckNs = now &+ checkIntervalNs
        return reconsider()
    }

    /// Members whose check is due at `now`. Each is then not due again for an
    /// interval, so a check that never reports does not pile up.
    public mutating func dueChecks(now: UInt64) -> [String] {
        var due: [String] = []
        for i in members.indices where members[i].nextCheckNs <= now {
            due.append(members[i].name)
            members[i].nextCheckNs = now &+ checkIntervalNs
        }
        return due
    }

    /// When `dueChecks` will next return something: the engine's timer.
    public var nextCheckNs: UInt64 {
        members.lazy.map(\.nextCheckNs).min() ?? 0
    }

    private mutating func reconsider() -> Switch? {
        switch kind {
        case .select:
            return nil
        case .fallback:
            return move(to: firstUsable())
        case let .urlTest(tolerance):
            let fastest = members.reduce(nil as Member?) { best, m in
                guard case let .healthy(latency) = m.health else { return best }
                guard let best, case let .healthy(bestLatency) = best.health else { return m }
                return latency < bestLatency ? m : best
            }
            guard let fastest, case let .healthy(fastestLatency) = fastest.health else { return move(to: firstUsable()) }
            if case let .healthy(currentLatency)? = health(of: current) {
                // Stay unless the other is faster by more than the tolerance.
                return currentLatency > fastestLatency &+ tolerance ? move(to: fastest.name) : nil
            }
            return move(to: fastest.name)
        }
    }

    private func firstUsable() -> String {
        if let healthy = members.first(where: { if case .healthy = $0.health { return true } else { return false } }) {
            return healthy.name
        }
        if let unchecked = members.first(where: { $0.health == .unchecked }) { return unchecked.name }
        return members[0].name
    }

    private mutating func move(to member: String) -> Switch? {
        guard member != current else { return nil }
        let change = Switch(group: name, from: current, to: member)
        current = member
        return change
    }

    /// `egress: fallback → corp-socks (healthy 12 ms), corp-http (down)`: the
    /// current member first, then the others in their configured order.
    public var description: String {
        let ordered = members.filter { $0.name == current } + members.filter { $0.name != current }
        let list = ordered.map { "\($0.name) (\($0.health))" }.joined(separator: ", ")
        return "\(name): \(kind) → \(list)"
    }

    static func milliseconds(_ ns: UInt64) -> String {
        if ns < 500_000 { return "<1 ms" }
        return "\((ns + 500_000) / 1_000_000) ms"
    }

    // MARK: Nesting

    /// The chain from `name` to the proxy it currently means, following each
    /// group's current member: `["egress", "corp", "corp-socks"]`. The last
    /// element is the first name `lookup` does not know as a group (a proxy).
    public static func resolve(_ name: String, lookup: (String) -> ProxyGroup?) throws(ProxyGroupError) -> [String] {
        var path = [name]
        var next = name
        while let group = lookup(next) {
            next = group.current
            if path.contains(next) { throw .cycle(path + [next]) }
            path.append(next)
            if path.count > maximumNesting { throw .tooDeep(path) }
        }
        return path
    }

    public static let maximumNesting = 16

    /// Checks a configuration once: no group reaches itself through any member
    /// (not only through the current ones), so no later switch can make a loop.
    public static func validate(_ groups: [ProxyGroup]) throws(ProxyGroupError) {
        var byName: [String: ProxyGroup] = [:]
        for group in groups { byName[group.name] = group }
        var finished = Set<String>()
        for group in groups {
            try visit(group.name, stack: [], byName: byName, finished: &finished)
        }
    }

    private static func visit(_ name: String, stack: [String], byName: [String: ProxyGroup],
                              finished: inout Set<String>) throws(ProxyGroupError) {
        if let start = stack.firstIndex(of: name) { throw .cycle(Array(stack[start...]) + [name]) }
        guard !finished.contains(name), let group = byName[name] else { return }
        if stack.count >= maximumNesting { throw .tooDeep(stack + [name]) }
        for member in group.members {
            try visit(member.name, stack: stack + [name], byName: byName, finished: &finished)
        }
        finished.insert(name)
    }
}

public enum ProxyGroupError: Error, Hashable, Sendable, CustomStringConvertible {
    case empty(group: String)
    case duplicateMember(group: String, member: String)
    case unknownMember(group: String, member: String)
    case notSelectable(group: String)
    case cycle([String])
    case tooDeep([String])

    public var description: String {
        switch self {
        case let .empty(group): return "group \(group) has no members"
        case let .duplicateMember(group, member): return "group \(group) lists \(member) twice"
        case let .unknownMember(group, member): return "group \(group) has no member \(member)"
        case let .notSelectable(group): return "group \(group) chooses by itself; only select groups switch by hand"
        case let .cycle(path): return "proxy groups form a loop: \(path.joined(separator: " → "))"
        case let .tooDeep(path): return "proxy groups nest deeper than \(ProxyGroup.maximumNesting): \(path.joined(separator: " → "))"
        }
    }
}
