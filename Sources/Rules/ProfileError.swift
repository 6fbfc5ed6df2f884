/// One finding about a profile, printed like a compiler's:
///
///     sluice.conf:12: error: unknown rule type 'DOMAIN-SUFIX'
///       hint: did you mean DOMAIN-SUFFIX?
public struct ProfileError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Severity: String, Equatable, Sendable {
        case error, warning
    }

    public var file: String
    /// 1-based; 0 for findings about the whole file.
    public var line: Int
    /// 1-based character column of the offending field, when one is to blame.
    public var column: Int?
    public var severity: Severity
    public var message: String
    /// What to do about it; empty when there is nothing to add.
    public var hint: String

    public init(file: String, line: Int, column: Int? = nil, severity: Severity = .error, message: String, hint: String = "") {
        self.file = file; self.line = line; self.column = column; self.severity = severity
        self.message = message; self.hint = hint
    }

    public var description: String {
        // Findings about the whole file have no line to point at.
        var text = line > 0 ? "\(file):\(line): \(severity.rawValue): \(message)" : "\(file): \(severity.rawValue): \(message)"
        if !hint.isEmpty { text += "\n  hint: \(hint)" }
        return text
    }
}

/// Every error in a profile that failed to load (it is never half-loaded), and
/// the warnings found on the way, in line order.
public struct ProfileErrors: Error, Equatable, Sendable, CustomStringConvertible {
    public var errors: [ProfileError]
    public var warnings: [ProfileError]

    public init(errors: [ProfileError], warnings: [ProfileError] = []) {
        self.errors = errors; self.warnings = warnings
    }

    /// Errors and warnings interleaved by line, one finding per paragraph; a
    /// rule set's findings together, after those of the file that comes first.
    public var description: String {
        var rank: [String: Int] = [:]
        for finding in errors + warnings where rank[finding.file] == nil { rank[finding.file] = rank.count }
        let key = { (f: ProfileError) in (rank[f.file] ?? 0, f.line, f.severity == .warning ? 1 : 0) }
        return (errors + warnings).sorted { key($0) < key($1) }.map(\.description).joined(separator: "\n")
    }
}
