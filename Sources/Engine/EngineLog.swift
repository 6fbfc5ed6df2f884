internal import Sys
internal import Rules

/// How much Sluice says on stderr: `-q` errors only, the default adds
/// warnings, per-flow failures and the exit summary, `-v` adds every flow's
/// life (as SLUICE_DEBUG=1 does). The profile's `loglevel` applies when the
/// command line gave none.
public enum LogLevel: Int, Comparable, Sendable {
    case quiet = 0, normal = 1, verbose = 2

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

public enum EngineLog {
    /// Set once by the command line before anything runs, read by the loop's thread only.
    nonisolated(unsafe) public static var level: LogLevel = .normal
    nonisolated(unsafe) public static var setByCommandLine = false

    /// A warning or a per-flow failure: said unless -q.
    static func warning(_ text: String) {
        if level >= .normal { ProcessControl.writeStandardError("sluice: \(text)\n") }
    }

    /// A (re)loaded profile's `loglevel`, unless the command line said -v or -q.
    static func follow(_ profileLevel: Rules.LogLevel) {
        guard !setByCommandLine else { return }
        switch profileLevel {
        case .error: level = .quiet
        case .warning, .info: level = .normal
        case .debug: level = .verbose
        }
    }

    static let debugEnvironment = ProcessControl.environment("SLUICE_DEBUG") != nil

    /// Read on every trace call: no environment lookup here.
    static var verbose: Bool { level >= .verbose || debugEnvironment }
}
