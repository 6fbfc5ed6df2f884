import Wire

/// A file a profile names (a rule set, the GeoIP database) as the caller
/// read it: the parser does no I/O.
public enum ProfileFile: Sendable {
    case bytes([UInt8])
    case text(String)
    /// Why it could not be read, in a few words ("no such file").
    case unreadable(String)
}

/// RULE-SET and DOMAIN-SET: the lines that name a set, and the set's file.
/// A set file's findings are reported against that file and its lines, as the
/// profile's are (`ads.list:12: error: ...`); one error in it fails the load.
extension ProfileBuilder {
    /// Past this many errors in one set file, the rest of it is not read: it
    /// is likely not a list of rules at all.
    static let ruleSetErrorLimit = 20

    /// The set `field` names; nil when reported.
    mutating func ruleSet(_ kind: RuleSet.Kind, _ field: ProfileLexer.Field, line n: Int) -> RuleSet? {
        let value = field.text
        if insideRuleSet {
            error(n, field.column, "a rule set cannot name another set",
                  hint: "give that set its own \(kind.rawValue) line in the profile's [Rule], or copy its lines into this file")
            return nil
        }
        if kind == .rules, let builtin = RuleSet.builtin(value) { return builtin }
        if kind == .rules, value == "SYSTEM" {
            // A top-level line is skipped with a warning (readRule); inside AND/OR/NOT it cannot be.
            error(n, field.column, "RULE-SET,SYSTEM is Surge's list of Apple's own system services",
                  hint: "remove it; Linux has no such set (LAN is built in)")
            return nil
        }
        let lower = value.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") {
            error(n, field.column, "\(kind.rawValue) takes a file, not a URL",
                  hint: "download it once (curl -o ads.list '\(value)') and write \(kind.rawValue),ads.list,POLICY; a relative path starts at the profile's folder")
            return nil
        }
        let path = resolvePath(value)
        let key = "\(kind.rawValue) \(path)"
        if let known = ruleSets[key] { return known }
        let set = readSet(kind, name: value, path: path, line: n, column: field.column)
        ruleSets[key] = .some(set)
        return set
    }

    private mutating func readSet(_ kind: RuleSet.Kind, name: String, path: String, line n: Int, column: Int) -> RuleSet? {
        let what = kind == .rules ? "rule set" : "domain set"
        let text: String
        switch readFile(path) {
        case let .text(contents): text = contents
        case let .bytes(bytes):
            guard let contents = String(validating: bytes, as: UTF8.self) else {
                error(n, column, "the \(what) \(path) is not UTF-8 text", hint: "save it as UTF-8; a rule list is text")
                return nil
            }
            text = contents
        case let .unreadable(reason):
            error(n, column, "cannot read the \(what) \(path): \(reason)",
                  hint: "check the path; a relative path starts at the profile's folder, \(baseDirectory)")
            return nil
        }
        guard text.utf8.count <= RuleSet.maximumFileSize else {
            error(n, column, "the \(what) \(path) is \(text.utf8.count) bytes, more than \(RuleSet.maximumFileSize)",
                  hint: "check the path, or split the list")
            return nil
        }
        var reader = ProfileBuilder(file: path, baseDirectory: baseDirectory, readFile: readFile)
        reader.insideRuleSet = true
        reader.geoIP = geoIP
        reader.asn = asn
        reader.general.geoIPDatabase = general.geoIPDatabase
        reader.general.asnDatabase = general.asnDatabase
        let set: RuleSet
        switch kind {
        case .rules: set = RuleSet(kind: kind, name: name, path: path, rules: reader.readRuleSetFile(text))
        case .domains: set = RuleSet(domains: reader.readDomainSetFile(text), name: name, path: path)
        }
        errors += reader.errors
        warnings += reader.warnings
        guard reader.errors.isEmpty else { return nil }
        if set.count == 0 {
            warning(n, column, "the \(what) \(path) holds no \(kind == .rules ? "rules" : "names")", hint: "this line matches nothing")
        }
        return set
    }

    /// The lines of a set's file, each through `entry` until too many errors.
    private mutating func readSetLines<Entry>(_ text: String, _ entry: (inout ProfileBuilder, ProfileLexer.Line) -> Entry?) -> [Entry] {
        var rules: [Entry] = []
        ProfileLexer.forEachLine(text) { line in
            if rules.isEmpty, errors.isEmpty, line.text.hasPrefix("payload:") {
                error(line.number, line.column, "this looks like a Clash rule provider (payload:), not a Surge list",
                      hint: "write one entry per line, without the payload: line and the '- ' before each entry")
                return false
            }
            if errors.count >= Self.ruleSetErrorLimit {
                error(line.number, line.column, "stopped reading after \(errors.count) errors",
                      hint: "is this a list of one entry per line? Lines starting with # are comments")
                return false
            }
            if Self.looksLikeTrailingComment(line.text) { trailingCommentLines.insert(line.number) }
            if let rule = entry(&self, line) { rules.append(rule) }
            return true
        }
        return rules
    }

    /// RULE-SET: `TYPE,VALUE[,no-resolve]` per line; the policy is the set's.
    mutating func readRuleSetFile(_ text: String) -> [RuleDefinition] {
        readSetLines(text) { builder, line in builder.readRuleSetEntry(line) }
    }

    mutating func readRuleSetEntry(_ line: ProfileLexer.Line) -> RuleDefinition? {
        let n = line.number
        let fields: [ProfileLexer.Field]
        switch ProfileLexer.commaFields(line.text, column: line.column) {
        case let .success(list): fields = list
        case let .failure(failure): report(failure, line: n); return nil
        }
        guard let typeField = fields.first else { return nil }
        let type = typeField.text.uppercased()
        if type == "FINAL" || type == "MATCH" {
            error(n, typeField.column, "\(type) has no place in a rule set", hint: "remove it; FINAL ends the profile's [Rule]")
            return nil
        }
        guard Self.ruleTypes.contains(type) else {
            reportUnknownRuleType(typeField, line: n)
            return nil
        }
        guard fields.count >= 2 else {
            error(n, typeField.column + typeField.raw.count, "\(type) needs a value",
                  hint: "write \(type),VALUE; the policy is the one on the line that names the set")
            return nil
        }
        var options: [ProfileLexer.Field] = []
        for field in fields.dropFirst(2) {
            switch field.text.lowercased() {
            case "no-resolve":
                options.append(field)
            case "extended-matching" where type.hasPrefix("DOMAIN"):
                // Accepted as in [Rule]: Sluice's domain rules always see SNI and Host.
                continue
            case "capture":
                error(n, field.column, "capture goes on the line that names the set",
                      hint: "write it after the policy there, as RULE-SET,FILE,POLICY,capture")
                return nil
            default:
                error(n, field.column, "'\(field.text)' after a rule in a set: its rules take no policy",
                      hint: "remove it; every rule here takes the policy of the line that names the set (options: no-resolve, extended-matching)")
                return nil
            }
        }
        guard let condition = condition(type: type, typeField: typeField, value: fields[1], options: options, line: n, depth: 0) else {
            return nil
        }
        return RuleDefinition(line: n, condition: condition, policy: "")
    }

    /// DOMAIN-SET: a name per line; `.ads.test` is the name and every name
    /// under it. Names go straight into the table's buffer: a list of
    /// hundreds of thousands makes no String per name.
    mutating func readDomainSetFile(_ text: String) -> DomainTable {
        var table = DomainTable.Builder()
        _ = readSetLines(text) { builder, line in builder.readDomainSetEntry(line, into: &table) ? true : nil }
        return table.build()
    }

    /// False when the line was reported.
    mutating func readDomainSetEntry(_ line: ProfileLexer.Line, into table: inout DomainTable.Builder) -> Bool {
        let n = line.number
        let text = line.text
        if text.utf8.contains(where: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) {
            let first = text.prefix { !ProfileLexer.isBlank($0) }
            let hint = IPAddress(String(first)) != nil
                ? "this looks like a hosts file line; keep only the names, one per line"
                : "write one name per line: ads.test for that name, .ads.test for it and every name under it"
            error(n, line.column, "a domain set holds one name per line, got '\(text)'", hint: hint)
            return false
        }
        let suffix = text.hasPrefix(".")
        var name = suffix ? text.dropFirst() : text
        if name.hasSuffix(".") { name = name.dropLast() }
        // Letters, digits, '-' and '_' only: the table lowers ASCII itself.
        guard Self.isHostName(name, wildcard: false) else {
            error(n, line.column, "'\(text)' is not a domain name",
                  hint: "write one name per line: ads.test for that name, .ads.test for it and every name under it")
            return false
        }
        table.add(name.utf8, suffix: suffix, line: n)
        return true
    }
}
