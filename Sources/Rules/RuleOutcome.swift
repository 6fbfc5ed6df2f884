/// The rule that decided a flow.
public struct RuleDecision: Sendable, Equatable, CustomStringConvertible {
    /// Position in `Profile.rules`; nil when FINAL decided.
    public var ruleIndex: Int?
    /// Line in the profile.
    public var line: Int
    /// The rule as written (`DOMAIN-SUFFIX,ads.test,REJECT`), for logs.
    public var text: String
    public var policy: String
    /// The rule has the `capture` option.
    public var capture: Bool

    public init(ruleIndex: Int?, line: Int, text: String, policy: String, capture: Bool = false) {
        self.ruleIndex = ruleIndex; self.line = line; self.text = text; self.policy = policy; self.capture = capture
    }

    public var description: String { "line \(line): \(text) -> \(policy)" }
}

public enum RuleOutcome: Sendable, Equatable, CustomStringConvertible {
    case matched(RuleDecision)
    /// A rule before the first decisive match could still match once the first
    /// bytes (SNI, the request head) are known: sniff, then ask again.
    case needsApplicationData

    public var description: String {
        switch self {
        case let .matched(decision): return decision.description
        case .needsApplicationData: return "needs application data"
        }
    }
}

/// A condition's answer for what is known so far.
public enum RuleVerdict: Sendable, Equatable, CustomStringConvertible {
    case match
    case noMatch
    /// Could go either way once more of the flow is seen.
    case unknown

    public var description: String {
        switch self {
        case .match: return "match"
        case .noMatch: return "no match"
        case .unknown: return "unknown"
        }
    }
}
