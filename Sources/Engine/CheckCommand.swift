public import Rules

/// `sluice check FILE [--dump json]`: loads a profile exactly as a run would
/// and reports every error (exit 1), or a one-line summary and the warnings
/// (exit 0). With --dump json the loaded model goes to standard output.
public struct CheckCommand {
    public struct Options: Sendable, Equatable {
        public var file: String
        public var dumpJSON: Bool

        public init(file: String, dumpJSON: Bool = false) {
            self.file = file; self.dumpJSON = dumpJSON
        }
    }

    public let options: Options

    public init(options: Options) { self.options = options }

    /// The options from `check`'s arguments, or a usage message.
    public static func parse(_ arguments: ArraySlice<String>) -> Result<Options, UsageError> {
        var file: String?
        var dump = false
        var rest = arguments
        while let first = rest.popFirst() {
            switch first {
            case "--dump":
                guard rest.popFirst() == "json" else { return .failure(UsageError("sluice check: --dump takes json")) }
                dump = true
            case "--dump=json":
                dump = true
            default:
                if first.hasPrefix("-"), first != "-" { return .failure(UsageError("sluice check: unknown option '\(first)'")) }
                guard file == nil else { return .failure(UsageError("sluice check: one profile at a time, got '\(file!)' and '\(first)'")) }
                file = first
            }
        }
        guard let file else { return .failure(UsageError("sluice check: which profile? for example: sluice check sluice.conf")) }
        return .success(Options(file: file, dumpJSON: dump))
    }

    /// Writes the model or the summary to `output` and findings to `diagnostics`;
    /// returns the exit status.
    public func run(output: (String) -> Void, diagnostics: (String) -> Void) -> Int32 {
        switch ProfileLoader.load(options.file) {
        case let .failure(failure):
            diagnostics(failure.description)
            let count = failure.errors.count
            diagnostics("\(options.file): \(count) error\(count == 1 ? "" : "s"); the profile was not loaded")
            return 1
        case let .success(profile):
            let warnings = profile.warnings + ProfileLoader.fileWarnings(profile)
            for warning in warnings { diagnostics(warning.description) }
            // Rules that can never match are warnings too: the summary counts them
            // (it said "0 warnings" under the warnings it had just printed).
            let shadowed = ShadowedRules.find(profile.rules).filter { !$0.samePolicy }.count
            let summary = Self.summary(profile, warnings: warnings.count + shadowed)
            if let note = Self.unindexedNote(profile) { diagnostics(note) }
            Self.shadowNotes(profile).forEach(diagnostics)
            if let note = Self.captureNote(profile) { diagnostics(note) }
            if let note = Self.ownerNote(profile) { diagnostics(note) }
            if options.dumpJSON {
                output(ProfileJSON.render(profile))
                diagnostics(summary)
            } else {
                output(summary)
            }
            return 0
        }
    }

    /// The URL patterns that run on every request, by line, when there are
    /// any: an ad-blocking list's author can see which lines cost the most.
    public static func unindexedNote(_ profile: Profile) -> String? {
        var lines: [Int] = []
        for rule in profile.rules {
            if case let .urlRegex(regex) = rule.condition, regex.runsOnEveryURL { lines.append(rule.line) }
        }
        lines += profile.urlRewrites.filter(\.regex.runsOnEveryURL).map(\.line)
        lines += profile.mapLocals.filter(\.regex.runsOnEveryURL).map(\.line)
        lines += profile.headerRewrites.filter(\.regex.runsOnEveryURL).map(\.line)
        // Rule sets' lines, named by file and line.
        var setLines: [String] = []
        for set in profile.ruleSets {
            for rule in set.rules {
                if case let .urlRegex(regex) = rule.condition, regex.runsOnEveryURL { setLines.append("\(set.path ?? set.name):\(rule.line)") }
            }
        }
        let count = lines.count + setLines.count
        guard count > 0 else { return nil }
        lines.sort()
        let all = lines.map(String.init) + setLines
        let shown = all.prefix(10).joined(separator: ", ") + (count > 10 ? " and \(count - 10) more" : "")
        return "\(profile.file): note: \(count == 1 ? "1 URL pattern runs" : "\(count) URL patterns run") on every HTTP request "
            + "(line\(count == 1 ? "" : "s") \(shown)): no literal text of three bytes or more outside \"http(s)://\" "
            + "lets Sluice pass \(count == 1 ? "it" : "them") over; the other URL patterns are indexed"
    }

    /// Rules an earlier rule always beats (ShadowedRules): the first ten, then a count.
    public static func shadowNotes(_ profile: Profile, limit: Int = 10) -> [String] {
        let findings = ShadowedRules.find(profile.rules)
        var notes: [String] = findings.prefix(limit).map { finding in
            let rule = profile.rules[finding.rule], earlier = profile.rules[finding.shadowedBy]
            if finding.samePolicy {
                return "\(profile.file):\(rule.line): note: \(rule) is redundant: line \(earlier.line) (\(earlier)) already decides every flow it would, the same way"
                    + "\n  hint: remove it"
            }
            return "\(profile.file):\(rule.line): warning: \(rule) can never match: line \(earlier.line) (\(earlier)) comes first and matches every flow it would"
                + "\n  hint: move it above line \(earlier.line), or remove it"
        }
        if findings.count > limit {
            notes.append("\(profile.file): note: \(findings.count - limit) more rules that an earlier rule always beats")
        }
        return notes
    }

    /// Which lines choose the flows a packet capture keeps, when any do: the
    /// option changes what every capture holds, so `check` says so.
    public static func captureNote(_ profile: Profile) -> String? {
        let lines = profile.rules.filter(\.options.capture).map(\.line)
        guard !lines.isEmpty else { return nil }
        let shown = lines.prefix(10).map(String.init).joined(separator: ", ") + (lines.count > 10 ? " and \(lines.count - 10) more" : "")
        return "\(profile.file): note: a packet capture keeps only the flows decided by the rule\(lines.count == 1 ? "" : "s") "
            + "with the capture option (line\(lines.count == 1 ? "" : "s") \(shown)); every other flow is left out of it"
    }

    /// What owner rules make Sluice do for each new flow, when there are any:
    /// a cost the profile's reader would not guess from the rules.
    public static func ownerNote(_ profile: Profile) -> String? {
        let lines = profile.rules.filter { $0.condition.containsOwnerTest { _ in true } }.map(\.line)
        guard !lines.isEmpty else { return nil }
        let shown = lines.prefix(10).map(String.init).joined(separator: ", ") + (lines.count > 10 ? " and \(lines.count - 10) more" : "")
        let what = profile.requiresProcess
            ? "its socket is asked of the kernel and its program searched for in /proc (off the loop: about half a millisecond before a new program's first connection goes on)"
            : "its socket's owner is asked of the kernel (a few µs)"
        return "\(profile.file): note: the rule\(lines.count == 1 ? "" : "s") at line\(lines.count == 1 ? "" : "s") \(shown) \(lines.count == 1 ? "tests" : "test") who opened a flow: "
            + "for each new flow, \(what); a flow whose program or socket is gone by then matches none of them"
    }

    /// `FILE: ok (N rules and FINAL, M proxies, ...)`.
    public static func summary(_ profile: Profile, warnings: Int) -> String {
        func count(_ n: Int, _ one: String, _ many: String) -> String { "\(n) \(n == 1 ? one : many)" }
        // [MITM] is named only when it intercepts something, so other profiles' summaries stay as they were.
        let mitm = profile.mitm.hostnames.filter { !$0.excludes }.count
        let parts = [
            count(profile.rules.count, "rule", "rules") + setSummary(profile.ruleSets) + " and FINAL",
            count(profile.proxies.count, "proxy", "proxies"),
            count(profile.groups.count, "group", "groups"),
            count(profile.hosts.count, "host", "hosts"),
            count(profile.urlRewrites.count, "URL rewrite", "URL rewrites"),
            count(profile.headerRewrites.count, "header rewrite", "header rewrites"),
            count(profile.bodyRewrites.count, "body rewrite", "body rewrites"),
            count(profile.mapLocals.count, "map local", "map locals"),
            count(profile.statistics.count, "statistic", "statistics"),
        ] + (mitm == 0 ? [] : [count(mitm, "MITM hostname", "MITM hostnames")]) + [
            count(warnings, "warning", "warnings"),
        ]
        return "\(profile.file): ok (\(parts.joined(separator: ", ")))"
    }

    /// " (N entries from K rule sets)" when the rules name sets.
    static func setSummary(_ sets: [RuleSet]) -> String {
        guard !sets.isEmpty else { return "" }
        let entries = sets.reduce(0) { $0 + $1.count }
        return " (\(entries) \(entries == 1 ? "entry" : "entries") from \(sets.count) \(sets.count == 1 ? "set" : "sets"))"
    }
}

/// A command line that cannot be run, with the message to print (exit 2).
public struct UsageError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
