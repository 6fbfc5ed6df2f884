/// One line of [Statistics] (ext): `NAME = "REGEX", key=host|$N, failure-status=RANGE`.
public struct StatisticsDefinition: Equatable, Sendable, CustomStringConvertible {
    public var name: String
    /// Searched in the absolute request URL; only matching requests are counted here.
    public var regex: CompiledRegex
    public var key: StatisticsKey
    /// Response statuses that count as failures (connection errors always do).
    public var failureStatus: ClosedRange<Int>
    public var line: Int

    public static let defaultFailureStatus = 500 ... 599

    public init(name: String, regex: CompiledRegex, key: StatisticsKey = .host,
                failureStatus: ClosedRange<Int> = defaultFailureStatus, line: Int) {
        self.name = name; self.regex = regex; self.key = key; self.failureStatus = failureStatus; self.line = line
    }

    public var description: String {
        "\(name) = \(RuleCondition.quote(regex.source)), key=\(key), failure-status=\(failureStatus.lowerBound)-\(failureStatus.upperBound)"
    }
}

/// What requests are grouped by.
public enum StatisticsKey: Hashable, Sendable, CustomStringConvertible {
    /// The request's host.
    case host
    /// The text of capture group N of the statistics regex.
    case capture(Int)

    public var description: String {
        switch self {
        case .host: return "host"
        case let .capture(n): return "$\(n)"
        }
    }
}
