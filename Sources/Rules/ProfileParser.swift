/// Reads profile text into a `Profile`. Pure: the caller reads the file, so
/// tests (and the fuzzer) hand it strings.
public enum ProfileParser {
    /// Profiles larger than this are refused before parsing, so a mistaken path
    /// (a disk image, a log) fails fast instead of compiling a million regexes.
    public static let maximumSize = 4 << 20

    /// Parses `text` (the contents of `file`); relative paths resolve against
    /// `baseDirectory`. Every error is collected; any error means no profile.
    /// `readFile` reads a file the profile names (an absolute path): a
    /// RULE-SET or DOMAIN-SET list, the GeoIP database; once per file and load.
    public static func parse(_ text: String, file: String, baseDirectory: String,
                             readFile: @escaping (String) -> ProfileFile = { _ in .unreadable("no such file") }) -> Result<Profile, ProfileErrors> {
        guard text.utf8.count <= maximumSize else {
            return .failure(ProfileErrors(errors: [ProfileError(
                file: file, line: 0, message: "the profile is \(text.utf8.count) bytes, more than \(maximumSize)",
                hint: "a profile is a text file of sections and rules; check the path")]))
        }
        var builder = ProfileBuilder(file: file, baseDirectory: baseDirectory, readFile: readFile)
        builder.read(text)
        return builder.finish()
    }
}

/// The parser's working state: one pass over the lines, each section's reader
/// filling its part of the profile and appending errors; names used before
/// they are defined are checked at the end.
struct ProfileBuilder {
    let file: String
    let baseDirectory: String
    var errors: [ProfileError] = []
    var warnings: [ProfileError] = []

    var general = GeneralSettings()
    var proxies: [ProxyDefinition] = []
    var groups: [ProxyGroupDefinition] = []
    /// Health-checked groups without url= (line, column), and those without timeout=.
    var groupsWithoutURL: [String: (Int, Int)] = [:]
    var groupsWithDefaultTimeout: Set<String> = []
    var rules: [RuleDefinition] = []
    var finalRule: FinalRule?
    var hosts: [HostEntry] = []
    var urlRewrites: [URLRewrite] = []
    var headerRewrites: [HeaderRewrite] = []
    var bodyRewrites: [BodyRewrite] = []
    var mapLocals: [MapLocal] = []
    var statistics: [StatisticsDefinition] = []
    var capture = CaptureSettings()
    var mitm = MITMSettings()
    /// Warnings for rewrite lines that match only https:// URLs, with the
    /// place each belongs in `warnings`: they hold only if [MITM], which may
    /// come later in the file, names no host.
    var httpsOnlyWarnings: [(index: Int, warning: ProfileError)] = []

    /// Policy names as used, to check once every definition is known.
    var policyUses: [(name: String, line: Int, column: Int, context: String)] = []
    /// Where each proxy or group name was defined.
    var definedNames: [String: Int] = [:]
    /// Where each key of a key = value section was first set, per section.
    var seenKeys: [String: Int] = [:]
    var seenSections: [ProfileSection: Int] = [:]
    /// [Host] names already mapped, and where.
    var hostLines: [String: Int] = [:]

    let readFile: (String) -> ProfileFile
    /// [General]'s geoip-database and asn-database, read before any rule
    /// (GEOIP and IP-ASN rules need them).
    var geoIP: MaxMindDatabase?
    var asn: MaxMindDatabase?
    /// The sets read so far, by kind and path: nil for one that failed (reported once).
    var ruleSets: [String: RuleSet?] = [:]
    /// This builder reads a rule set's file, not a profile.
    var insideRuleSet = false

    init(file: String, baseDirectory: String, readFile: @escaping (String) -> ProfileFile) {
        self.file = file
        self.baseDirectory = baseDirectory
        self.readFile = readFile
    }

    mutating func error(_ line: Int, _ column: Int? = nil, _ message: String, hint: String = "") {
        var hint = hint
        // Profiles copied from annotated examples carry "value   # note": that is
        // the likelier cause than whatever the value's own hint would suggest.
        if trailingCommentLines.contains(line) {
            hint = "a '#' or '//' after a value is part of the value; comments go on their own line"
        }
        errors.append(ProfileError(file: file, line: line, column: column, message: message, hint: hint))
    }

    /// Lines that look like they end in a comment (a blank, then # or //).
    var trailingCommentLines = Set<Int>()

    static func looksLikeTrailingComment(_ text: Substring) -> Bool {
        // Most lines have neither character: a byte scan says so without walking Characters.
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "#") || $0 == UInt8(ascii: "/") }) else { return false }
        var previousBlank = false
        var index = text.startIndex
        while index < text.endIndex {
            let c = text[index]
            let next = text.index(after: index)
            if previousBlank, c == "#" || c == "/" && next < text.endIndex && text[next] == "/" { return true }
            previousBlank = ProfileLexer.isBlank(c)
            index = next
        }
        return false
    }

    /// A Surge setting (key, parameter) Sluice skips: said with why, so a pasted profile loads.
    mutating func surgeOnly(_ key: String, line: Int, column: Int, reason: String) {
        warning(line, column, "'\(key)' is Surge's and has no effect in Sluice", hint: reason)
    }

    mutating func warning(_ line: Int, _ column: Int? = nil, _ message: String, hint: String = "") {
        warnings.append(ProfileError(file: file, line: line, column: column, severity: .warning, message: message, hint: hint))
    }

    mutating func read(_ text: String) {
        let lines = ProfileLexer.lines(text)
        for line in lines where Self.looksLikeTrailingComment(line.text) { trailingCommentLines.insert(line.number) }
        // [General] first, wherever it is: its settings (the GeoIP database)
        // are needed by the rules. Its header's mistakes are reported below.
        var inGeneral = false
        for line in lines {
            if line.text.hasPrefix("[") {
                inGeneral = line.text.dropFirst().prefix { $0 != "]" }.trimmingBlanks() == ProfileSection.general.rawValue
                    && line.text.contains("]")
            } else if inGeneral {
                readGeneral(line)
            }
        }
        // nil before any header; .none inside an unknown section (already reported).
        var section: ProfileSection?? = nil
        for line in lines {
            if line.text.hasPrefix("[") {
                section = .some(readHeader(line))
                continue
            }
            switch section {
            case .none:
                error(line.number, line.column, "line outside any section",
                      hint: "put it under a section header such as [General] or [Rule]")
            case .some(.none), .some(.some(.general)):
                continue
            case let .some(.some(current)):
                readLine(line, in: current)
            }
        }
    }

    /// A `[Name]` line: the section, or nil (reported) when it is not one of ours.
    mutating func readHeader(_ line: ProfileLexer.Line) -> ProfileSection? {
        guard let close = line.text.firstIndex(of: "]") else {
            error(line.number, line.column, "section header '\(line.text)' is not closed", hint: "write it as [\(line.text.dropFirst())]")
            return nil
        }
        let name = String(line.text[line.text.index(after: line.text.startIndex) ..< close].trimmingBlanks())
        let rest = line.text[line.text.index(after: close)...]
        if !rest.isEmpty {
            trailingCommentLines.remove(line.number)
            error(line.number, line.column + line.text.distance(from: line.text.startIndex, to: close) + 1,
                  "text after the section header [\(name)]",
                  hint: "comments go on their own line, starting with #, ; or //")
        }
        guard let section = ProfileSection(rawValue: name) else {
            // Surge names each WireGuard section: [WireGuard home].
            if let reason = ProfileSection.unsupported[name.hasPrefix("WireGuard ") ? "WireGuard" : name] {
                // A pasted Surge profile loads; the section's lines are skipped.
                warning(line.number, line.column, "section [\(name)] is Surge's and has no effect in Sluice", hint: reason)
            } else {
                error(line.number, line.column, "unknown section [\(name)]",
                      hint: Suggestion.hint(for: name, in: ProfileSection.allCases.map(\.rawValue)) { "[\($0)]" })
            }
            return nil
        }
        if let first = seenSections[section] {
            error(line.number, line.column, "section [\(name)] appears twice (first at line \(first))",
                  hint: "move these lines into the first [\(name)]")
        } else {
            seenSections[section] = line.number
        }
        return section
    }

    mutating func readLine(_ line: ProfileLexer.Line, in section: ProfileSection) {
        switch section {
        case .general: readGeneral(line)
        case .proxy: readProxy(line)
        case .proxyGroup: readGroup(line)
        case .rule: readRule(line)
        case .host: readHost(line)
        case .urlRewrite: readURLRewrite(line)
        case .headerRewrite: readHeaderRewrite(line)
        case .bodyRewrite: readBodyRewrite(line)
        case .mapLocal: readMapLocal(line)
        case .statistics: readStatistics(line)
        case .capture: readCapture(line)
        case .mitm: readMITM(line)
        }
    }

    mutating func finish() -> Result<Profile, ProfileErrors> {
        checkPolicies()
        checkGroupCycles()
        checkHostAliases()
        applyGroupDefaults()
        if mitm.isEmpty {
            // From the last, so each earlier index still points where its warning belongs.
            for pending in httpsOnlyWarnings.reversed() { warnings.insert(pending.warning, at: pending.index) }
        }
        if finalRule == nil {
            if let ruleLine = seenSections[.rule] {
                error(ruleLine, nil, "[Rule] has no FINAL rule", hint: "end [Rule] with FINAL,DIRECT (or the policy for everything else)")
            } else {
                error(0, nil, "the profile has no [Rule] section", hint: "add [Rule] with at least FINAL,DIRECT")
            }
        }
        // The profile's findings first, then each rule set's, each by line.
        let byLine: (ProfileError, ProfileError) -> Bool = { a, b in
            a.file == b.file ? a.line < b.line : a.file == file || b.file != file && a.file < b.file
        }
        let sortedErrors = stableSorted(errors, by: byLine)
        let sortedWarnings = stableSorted(warnings, by: byLine)
        guard sortedErrors.isEmpty, let finalRule else {
            return .failure(ProfileErrors(errors: sortedErrors, warnings: sortedWarnings))
        }
        return .success(Profile(
            file: file, baseDirectory: baseDirectory, general: general, proxies: proxies, groups: groups,
            rules: rules, finalRule: finalRule, hosts: hosts, urlRewrites: urlRewrites,
            headerRewrites: headerRewrites, bodyRewrites: bodyRewrites, mapLocals: mapLocals, statistics: statistics,
            capture: capture, mitm: mitm, warnings: sortedWarnings))
    }

    private func stableSorted(_ list: [ProfileError], by less: (ProfileError, ProfileError) -> Bool) -> [ProfileError] {
        list.enumerated().sorted { less($0.element, $1.element) || !less($1.element, $0.element) && $0.offset < $1.offset }.map(\.element)
    }

    // MARK: Names

    /// Records a proxy or group name; false (reported) when it cannot be one.
    mutating func define(_ name: String, line: Int, column: Int) -> Bool {
        if name.isEmpty {
            error(line, column, "missing name before '='", hint: "write NAME = ...")
            return false
        }
        if let builtin = BuiltinPolicy.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) {
            error(line, column, "'\(name)' is a built-in policy and cannot be redefined",
                  hint: "pick another name; \(builtin.rawValue) can be used as it is")
            return false
        }
        if let first = definedNames[name] {
            error(line, column, "'\(name)' is already defined at line \(first)",
                  hint: "proxy and group names share one namespace; rename one of them")
            return false
        }
        definedNames[name] = line
        return true
    }

    mutating func usePolicy(_ name: String, line: Int, column: Int, context: String) {
        policyUses.append((name, line, column, context))
    }

    mutating func checkPolicies() {
        let known = BuiltinPolicy.allCases.map(\.rawValue) + proxies.map(\.name) + groups.map(\.name)
        let knownSet = Set(known)
        for use in policyUses where !knownSet.contains(use.name) {
            if use.name.isEmpty {
                error(use.line, use.column, "\(use.context) is empty", hint: "name a policy: DIRECT, REJECT, a proxy or a group")
                continue
            }
            let hint: String
            if let nearest = Suggestion.nearest(use.name, in: known) {
                hint = "did you mean \(nearest)?"
            } else {
                hint = "define it in [Proxy] or [Proxy Group], or use a built-in: \(BuiltinPolicy.allCases.map(\.rawValue).joined(separator: ", "))"
            }
            error(use.line, use.column, "unknown policy '\(use.name)' in \(use.context)", hint: hint)
        }
    }

    /// A group that reaches itself through its members would loop forever when
    /// choosing a proxy; each cycle is reported once, at its first group's line.
    mutating func checkGroupCycles() {
        var byName: [String: ProxyGroupDefinition] = [:]
        for group in groups { byName[group.name] = group }
        var reported = Set<String>()
        for group in groups {
            if group.members.contains(group.name) {
                error(group.line, nil, "group '\(group.name)' lists itself as a member",
                      hint: "a group's members are proxies, other groups or built-in policies")
                reported.insert(group.name)
                continue
            }
            guard !reported.contains(group.name), let path = cycle(from: group.name, groups: byName) else { continue }
            // A self-member was reported above; longer cycles once per set of groups.
            if path.contains(where: reported.contains) { continue }
            for name in path { reported.insert(name) }
            error(group.line, nil, "group '\(group.name)' contains itself: \((path + [group.name]).joined(separator: " -> "))",
                  hint: "break the cycle by removing one of these members")
        }
    }

    /// The groups on a path from `start` back to `start`, if there is one.
    private func cycle(from start: String, groups: [String: ProxyGroupDefinition]) -> [String]? {
        var path = [start]
        var onPath: Set<String> = [start]
        var visited: Set<String> = []
        func visit(_ name: String) -> Bool {
            guard let group = groups[name] else { return false }
            for member in group.members where groups[member] != nil {
                if member == start { return true }
                if onPath.contains(member) || visited.contains(member) { continue }
                path.append(member); onPath.insert(member)
                if visit(member) { return true }
                path.removeLast(); onPath.remove(member); visited.insert(member)
            }
            return false
        }
        return visit(start) ? path : nil
    }

    // MARK: Shared value readers

    /// A `key = value` line split at its first '=' outside quotes.
    mutating func keyValueLine(_ line: ProfileLexer.Line, example: String) -> (key: String, keyColumn: Int, value: Substring, valueColumn: Int)? {
        guard let equals = ProfileLexer.firstEquals(line.text) else {
            error(line.number, line.column, "expected KEY = VALUE, got '\(line.text)'", hint: "for example: \(example)")
            return nil
        }
        let key = ProfileLexer.unquote(line.text[..<equals].trimmingBlanks())
        var value = line.text[line.text.index(after: equals)...]
        var column = line.column + line.text.distance(from: line.text.startIndex, to: equals) + 1
        while let first = value.first, ProfileLexer.isBlank(first) { value.removeFirst(); column += 1 }
        return (key, line.column, value, column)
    }

    /// A key seen twice in one section is a mistake: only one value could win.
    mutating func firstTime(_ key: String, section: ProfileSection, line: Int, column: Int) -> Bool {
        let id = "\(section.rawValue)\u{0}\(key)"
        if let first = seenKeys[id] {
            error(line, column, "'\(key)' is set twice in [\(section.rawValue)] (first at line \(first))", hint: "keep one of them")
            return false
        }
        seenKeys[id] = line
        return true
    }

    mutating func integer(_ text: String, _ range: ClosedRange<Int>, what: String, line: Int, column: Int) -> Int? {
        let isDigits: (Substring) -> Bool = { !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        let body = Substring(text)
        guard isDigits(body) || body.hasPrefix("-") && isDigits(body.dropFirst()) else {
            error(line, column, "\(what) must be a whole number, got '\(text)'",
                  hint: "write it in decimal digits, from \(range.lowerBound) to \(range.upperBound)")
            return nil
        }
        guard let value = Int(text), range.contains(value) else {
            error(line, column, "\(what) must be from \(range.lowerBound) to \(range.upperBound), got \(text)",
                  hint: "write a number from \(range.lowerBound) to \(range.upperBound)")
            return nil
        }
        return value
    }

    mutating func boolean(_ text: String, what: String, line: Int, column: Int) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default:
            error(line, column, "\(what) must be true or false, got '\(text)'", hint: "write \(what) = true or \(what) = false")
            return nil
        }
    }

    /// Compiles a profile regex, or reports it (with the compiler's reason) and returns nil.
    mutating func regex(_ source: String, line: Int, column: Int) -> CompiledRegex? {
        if source.isEmpty {
            error(line, column, "empty regex", hint: "write a pattern such as ^http://api\\.test/")
            return nil
        }
        do {
            let compiled = try CompiledRegex(source)
            if compiled.byteMatcher == nil, NestedRepetition.find(in: source) != nil {
                warning(line, column, "regex '\(source)' repeats a group that itself repeats, and is outside the forms Sluice matches in linear time: Swift's Regex, which matches it, can take exponential time on some texts, and every flow waits meanwhile",
                        hint: "keep to literals, ., classes, \\d \\w \\s, groups, |, quantifiers, ^ $ and a leading (?i), which are matched in linear time, or repeat one level only")
            }
            return compiled
        } catch {
            self.error(line, column, "regex \(RuleCondition.quote(source)) does not compile", hint: "\(error)")
            return nil
        }
    }

    /// `$N` references in a replacement must name capture groups of the regex.
    /// N is one digit, as in Surge: `$12` is group 1 and then a literal "2".
    mutating func checkReferences(_ replacement: String, regex: CompiledRegex, line: Int, column: Int) {
        let scalars = Array(replacement.unicodeScalars)
        for i in scalars.indices.dropLast() where scalars[i] == "$" {
            guard let n = Int(String(scalars[i + 1])), (0 ... 9).contains(n), n > regex.captureCount else { continue }
            let groups = regex.captureCount == 1 ? "1 capture group" : "\(regex.captureCount) capture groups"
            error(line, column, "'\(replacement)' refers to $\(n) but the regex has \(groups)",
                  hint: "add parentheses around the part of \(RuleCondition.quote(regex.source)) to reuse, or use $1...$\(max(regex.captureCount, 1))")
            return
        }
    }

    /// An absolute path: relative ones are taken from the profile's folder, and
    /// "." and ".." segments are resolved lexically.
    func resolvePath(_ path: String) -> String {
        let joined = path.hasPrefix("/") ? path : baseDirectory + "/" + path
        var parts: [Substring] = []
        for part in joined.split(separator: "/") {
            if part == "." { continue }
            if part == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Text that will be sent in a header (a value, a Location) must not carry
    /// control characters: a lone CR in a profile line would split the header.
    mutating func checkHeaderText(_ text: String, what: String, line: Int, column: Int) -> Bool {
        guard let bad = text.unicodeScalars.first(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) else { return true }
        error(line, column, "\(what) contains the control character U+\(String(bad.value, radix: 16, uppercase: true).leftPadded(4))",
              hint: "remove it; header values and URLs are printable text")
        return false
    }

    /// RFC 9110 §5.6.2 token: what header names and methods are made of.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || "!#$%&'*+-.^_`|~".utf8.contains(c)
        }
    }

    /// The lexer's complaint about a line, as an error.
    mutating func report(_ failure: ProfileLexer.Failure, line: Int) {
        switch failure {
        case let .unclosedQuote(column):
            error(line, column, "quote not closed", hint: "end the value with \"; inside quotes write \\\" for a quote and \\\\ for a backslash")
        case let .unbalancedParenthesis(column):
            error(line, column, "parentheses do not balance", hint: "each ( needs a ); quote a regex that has unbalanced parentheses")
        }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
