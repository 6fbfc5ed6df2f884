/// Who opened a flow: the user that owns the app's socket and, when it
/// could be found, the process holding it. The engine learns it from the
/// kernel when a flow starts, and only when a rule asks (PROCESS-NAME,
/// PROCESS-PATH, UID).
public struct FlowOwner: Sendable, Equatable, CustomStringConvertible {
    public var userID: UInt32
    public var processID: Int32?
    /// The executable's file name ("curl").
    public var processName: String?
    /// The executable's full path ("/usr/bin/curl").
    public var processPath: String?

    public init(userID: UInt32, processID: Int32? = nil, processName: String? = nil, processPath: String? = nil) {
        self.userID = userID; self.processID = processID; self.processName = processName; self.processPath = processPath
    }

    /// `curl[4242]`, or `uid 1000` when the process was not found.
    public var label: String {
        guard let processName else { return "uid \(userID)" }
        return processName + (processID.map { "[\($0)]" } ?? "")
    }

    public var description: String { processName == nil ? label : "\(label) uid \(userID)" }
}

/// The rules over a flow's owner. A flow whose owner is unknown (the
/// process had exited, or the flow did not come through a TUN) matches none.
public enum OwnerCondition: Hashable, Sendable, CustomStringConvertible {
    /// PROCESS-NAME: a glob (`*`, `?`) over the executable's file name, case-sensitive.
    case processName(GlobPattern)
    /// PROCESS-PATH: a glob over the executable's full path.
    case processPath(GlobPattern)
    /// UID: the socket's owner is in this range.
    case userID(ClosedRange<UInt32>)

    /// PROCESS-NAME and PROCESS-PATH need the process; UID the socket alone.
    public var needsProcess: Bool {
        switch self {
        case .processName, .processPath: return true
        case .userID: return false
        }
    }

    public func matches(_ owner: FlowOwner?) -> Bool {
        guard let owner else { return false }
        switch self {
        case let .processName(glob): return owner.processName.map(glob.matches) ?? false
        case let .processPath(glob): return owner.processPath.map(glob.matches) ?? false
        case let .userID(range): return range.contains(owner.userID)
        }
    }

    public var typeName: String {
        switch self {
        case .processName: return "PROCESS-NAME"
        case .processPath: return "PROCESS-PATH"
        case .userID: return "UID"
        }
    }

    public var valueText: String {
        switch self {
        case let .processName(glob), let .processPath(glob): return glob.pattern
        case let .userID(range): return range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)-\(range.upperBound)"
        }
    }

    public var description: String {
        switch self {
        case .processName, .processPath:
            let plain = !valueText.contains { $0 == "," || $0 == "\"" || $0 == "(" || $0 == ")" || $0 == " " || $0 == "\t" }
            return "\(typeName),\(plain ? valueText : RuleCondition.quote(valueText))"
        case .userID: return "\(typeName),\(valueText)"
        }
    }

    /// Why it matched, in words (`sluice match`).
    func reason(_ owner: FlowOwner?) -> String {
        switch self {
        case .processName: return "the program \(owner?.processName ?? "?") matches \(valueText)"
        case .processPath: return "the program \(owner?.processPath ?? "?") matches \(valueText)"
        case .userID: return "the socket's owner, uid \(owner.map { "\($0.userID)" } ?? "?"), is in \(valueText)"
        }
    }
}

extension Profile {
    /// Whether a rule (in a set or a composite too) asks who opened a flow.
    public var requiresOwner: Bool { rules.contains { $0.condition.containsOwnerTest { _ in true } } }
    /// Whether one asks which program did (not only which user).
    public var requiresProcess: Bool { rules.contains { $0.condition.containsOwnerTest(\.needsProcess) } }
}
