internal import Crypto
internal import HTTP

/// [URL Rewrite], [Header Rewrite], [Map Local] (blank-separated) and [Statistics].
extension ProfileBuilder {
    mutating func blankFields(_ line: ProfileLexer.Line) -> [ProfileLexer.Field]? {
        switch ProfileLexer.blankFields(line.text, column: line.column) {
        case let .success(list): return list
        case let .failure(failure): report(failure, line: line.number); return nil
        }
    }

    // MARK: [URL Rewrite]

    mutating func readURLRewrite(_ line: ProfileLexer.Line) {
        guard let fields = blankFields(line) else { return }
        let n = line.number
        let modes = URLRewriteMode.allCases.map(\.rawValue)
        guard fields.count == 3 else {
            error(n, fields.count > 3 ? fields[3].column : line.column,
                  "[URL Rewrite] lines have 3 fields (REGEX REPLACEMENT MODE), got \(fields.count)",
                  hint: fields.count > 3 ? "quote a regex or URL that contains blanks" : "for example: ^http://old\\.test/(.*) http://new.test/$1 307")
            return
        }
        guard let mode = URLRewriteMode(rawValue: fields[2].text.lowercased()) else {
            error(n, fields[2].column, "unknown URL rewrite mode '\(fields[2].text)'", hint: Suggestion.hint(for: fields[2].text, in: modes))
            return
        }
        guard let regex = regex(fields[0].text, line: n, column: fields[0].column) else { return }
        warnIfOnlyHTTPS(regex, line: n, column: fields[0].column)
        let replacement = fields[1].text
        if !mode.isReject {
            let lowered = replacement.lowercased()
            guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") || replacement.hasPrefix("$") else {
                error(n, fields[1].column, "replacement '\(replacement)' is not an absolute URL",
                      hint: "write the whole new URL, e.g. http://new.test/$1")
                return
            }
            guard checkHeaderText(replacement, what: "replacement", line: n, column: fields[1].column) else { return }
            checkReferences(replacement, regex: regex, line: n, column: fields[1].column)
        }
        if mode == .found {
            warning(n, fields[2].column, "302 makes clients repeat a POST, PUT or DELETE as a GET without its body",
                    hint: "this rewrite matches requests of any method; use 307 to keep the method and body")
        }
        urlRewrites.append(URLRewrite(regex: regex, replacement: replacement, mode: mode, line: n))
    }

    /// A pattern that can only match https:// URLs applies only to hosts in
    /// [MITM] hostname (Surge profiles have them for theirs); whether the
    /// profile has any is known once the whole file is read (`finish`).
    mutating func warnIfOnlyHTTPS(_ regex: CompiledRegex, line: Int, column: Int) {
        let source = regex.source.lowercased()
        guard source.hasPrefix("^https:") || source.hasPrefix("^https\\:") else { return }
        let warning = ProfileError(
            file: file, line: line, column: column, severity: .warning,
            message: "'\(regex.source)' matches only https:// URLs, which Sluice sees only for hosts in [MITM] hostname, and this profile has none",
            hint: "add the host to [MITM] hostname")
        httpsOnlyWarnings.append((warnings.count, warning))
    }

    // MARK: [Header Rewrite]

    static let headerOperations = ["header-add", "header-replace", "header-del", "header-replace-regex"]

    mutating func readHeaderRewrite(_ line: ProfileLexer.Line) {
        guard var fields = blankFields(line) else { return }
        let n = line.number
        // Surge's older form has no direction: `REGEX OP NAME ...` rewrites requests.
        if fields.count >= 2, HeaderRewriteDirection(rawValue: fields[0].text.lowercased()) == nil,
           Self.headerOperations.contains(fields[1].text.lowercased()) {
            fields.insert(ProfileLexer.Field(raw: "http-request", column: fields[0].column), at: 0)
        }
        guard let directionField = fields.first else { return }
        guard let direction = HeaderRewriteDirection(rawValue: directionField.text.lowercased()) else {
            error(n, directionField.column, "unknown header rewrite direction '\(directionField.text)'",
                  hint: Suggestion.hint(for: directionField.text, in: HeaderRewriteDirection.allCases.map(\.rawValue)))
            return
        }
        guard fields.count >= 4 else {
            error(n, line.column, "[Header Rewrite] line is missing fields",
                  hint: "write DIRECTION REGEX OP NAME [VALUE [REPLACEMENT]], e.g. http-request ^http://api\\.test/ header-add X-Env staging")
            return
        }
        let op = fields[2].text.lowercased()
        guard Self.headerOperations.contains(op) else {
            error(n, fields[2].column, "unknown header operation '\(fields[2].text)'", hint: Suggestion.hint(for: op, in: Self.headerOperations))
            return
        }
        let expected = op == "header-del" ? 4 : op == "header-replace-regex" ? 6 : 5
        let shape = op == "header-del" ? "NAME" : op == "header-replace-regex" ? "NAME REGEX REPLACEMENT" : "NAME VALUE"
        guard fields.count == expected else {
            error(n, fields.count > expected ? fields[expected].column : line.column,
                  "\(op) takes \(shape), got \(fields.count - 3) field\(fields.count - 3 == 1 ? "" : "s")",
                  hint: fields.count > expected ? "quote a value that contains blanks" : "write \(direction.rawValue) REGEX \(op) \(shape)")
            return
        }
        let name = fields[3].text
        guard Self.isToken(name) else {
            error(n, fields[3].column, "'\(name)' is not a header name", hint: "header names are letters, digits and -, e.g. X-Env")
            return
        }
        guard let regex = regex(fields[1].text, line: n, column: fields[1].column) else { return }
        warnIfOnlyHTTPS(regex, line: n, column: fields[1].column)
        let operation: HeaderOperation
        switch op {
        case "header-add": operation = .add(name: name, value: fields[4].text)
        case "header-replace": operation = .replace(name: name, value: fields[4].text)
        case "header-del": operation = .delete(name: name)
        default:
            guard let pattern = self.regex(fields[4].text, line: n, column: fields[4].column) else { return }
            checkReferences(fields[5].text, regex: pattern, line: n, column: fields[5].column)
            operation = .replaceRegex(name: name, pattern: pattern, replacement: fields[5].text)
        }
        for field in fields.dropFirst(4) {
            guard checkHeaderText(field.text, what: "header value", line: n, column: field.column) else { return }
        }
        headerRewrites.append(HeaderRewrite(direction: direction, regex: regex, operation: operation, line: n))
    }

    // MARK: [Body Rewrite]

    mutating func readBodyRewrite(_ line: ProfileLexer.Line) {
        guard let fields = blankFields(line), let directionField = fields.first else { return }
        let n = line.number
        let keyword = directionField.text.lowercased()
        if keyword == "http-request-jq" || keyword == "http-response-jq" {
            // A pasted Surge profile loads; the line is skipped.
            warning(n, directionField.column, "\(keyword) lines have no effect in Sluice: it runs no jq",
                    hint: "write regex pairs instead: \(keyword.dropLast(3)) URLREGEX REGEX REPLACEMENT")
            return
        }
        guard let direction = HeaderRewriteDirection(rawValue: keyword) else {
            error(n, directionField.column, "unknown body rewrite direction '\(directionField.text)'",
                  hint: Suggestion.hint(for: directionField.text, in: HeaderRewriteDirection.allCases.map(\.rawValue)))
            return
        }
        guard fields.count >= 4 else {
            error(n, line.column, "[Body Rewrite] line is missing fields",
                  hint: "write DIRECTION URLREGEX REGEX REPLACEMENT [REGEX REPLACEMENT ...], e.g. http-response ^http://api\\.test/v1/config false true")
            return
        }
        guard fields.count % 2 == 0 else {
            error(n, fields[fields.count - 1].column, "regex '\(fields[fields.count - 1].text)' has no replacement",
                  hint: "each REGEX takes a REPLACEMENT after it; write \"\" to delete what it matches, and quote one that contains blanks")
            return
        }
        guard let regex = regex(fields[1].text, line: n, column: fields[1].column) else { return }
        warnIfOnlyHTTPS(regex, line: n, column: fields[1].column)
        var replacements: [BodyReplacement] = []
        var ok = true
        for pair in stride(from: 2, to: fields.count, by: 2) {
            let (patternField, replacementField) = (fields[pair], fields[pair + 1])
            // Compiled here too, for the messages: the same text as written.
            guard let plain = self.regex(patternField.text, line: n, column: patternField.column) else { ok = false; continue }
            checkReferences(replacementField.text, regex: plain, line: n, column: replacementField.column)
            do {
                replacements.append(try BodyReplacement(source: patternField.text, replacement: replacementField.text))
            } catch {
                self.error(n, patternField.column, "regex \(RuleCondition.quote(patternField.text)) does not compile", hint: "\(error)")
                ok = false
            }
        }
        guard ok else { return }
        bodyRewrites.append(BodyRewrite(direction: direction, regex: regex, replacements: replacements, line: n))
    }

    // MARK: [Map Local]

    static let mapLocalKeys = ["data-type", "data", "status-code", "header"]

    mutating func readMapLocal(_ line: ProfileLexer.Line) {
        guard let fields = blankFields(line), let regexField = fields.first else { return }
        let n = line.number
        var values: [String: (value: String, column: Int)] = [:]
        var ok = true
        for field in fields.dropFirst() {
            guard let (key, value, valueColumn) = ProfileLexer.keyValue(field) else {
                error(n, field.column, "expected key=value, got '\(field.text)'",
                      hint: "keys: \(Self.mapLocalKeys.joined(separator: ", ")); quote a value that contains blanks")
                ok = false; continue
            }
            guard Self.mapLocalKeys.contains(key) else {
                error(n, field.column, "unknown key '\(key)' in [Map Local]", hint: Suggestion.hint(for: key, in: Self.mapLocalKeys))
                ok = false; continue
            }
            guard values[key] == nil else { error(n, field.column, "'\(key)' is given twice", hint: "keep one of them"); ok = false; continue }
            values[key] = (value, valueColumn)
        }
        guard let regex = regex(regexField.text, line: n, column: regexField.column), ok else { return }
        warnIfOnlyHTTPS(regex, line: n, column: regexField.column)
        // Surge's default: data names a file.
        var dataType = MapLocalDataType.file
        if let (text, column) = values["data-type"] {
            guard let parsed = MapLocalDataType(rawValue: text.lowercased()) else {
                error(n, column, "unknown data-type '\(text)'", hint: Suggestion.hint(for: text, in: MapLocalDataType.allCases.map(\.rawValue)))
                return
            }
            dataType = parsed
        }
        if dataType == .tinyGIF, let data = values["data"] {
            error(n, data.column, "data-type=tiny-gif takes no data", hint: "remove data=; the GIF is built in")
            return
        }
        // tiny-gif has no data; every other type must have it.
        guard let data = values["data"] ?? (dataType == .tinyGIF ? ("", 0) : nil) else {
            error(n, regexField.column, "[Map Local] entry has no data=",
                  hint: dataType == .text ? "write data=\"BODY\" (data=\"\" for an empty body)" : "write data=\"PATH\"")
            return
        }
        let body: MapLocalData
        switch dataType {
        case .text:
            body = .text(data.value)
        case .base64:
            // Blanks are allowed inside (long bodies get wrapped); HTTP's decoder refuses them.
            guard let bytes = Base64.decode(String(data.value.filter { !$0.isWhitespace })) else {
                error(n, data.column, "data is not valid base64", hint: "use the standard alphabet (A-Z a-z 0-9 + /) with = padding")
                return
            }
            body = .base64(bytes)
        case .file, .directory:
            guard !data.value.isEmpty else {
                error(n, data.column, "data-type=\(dataType.rawValue) needs a path in data=", hint: "a relative path is taken from the profile's folder")
                return
            }
            if data.value.contains("://") {
                error(n, data.column, "data-type=\(dataType.rawValue) reads local files, not URLs like '\(data.value)'",
                      hint: "to answer from another server, use a header-mode [URL Rewrite]")
                return
            }
            if dataType == .directory, regex.captureCount == 0 {
                error(n, regexField.column, "data-type=dir needs a capture group in the regex",
                      hint: "the first group names the file inside the folder, e.g. ^http://static\\.test/(.*)$")
                return
            }
            let path = resolvePath(data.value)
            body = dataType == .file ? .file(path) : .directory(path)
        case .tinyGIF:
            body = .tinyGIF
        }
        var status = 200
        if let (text, column) = values["status-code"] {
            guard let value = integer(text, 100 ... 599, what: "status-code", line: n, column: column) else { return }
            status = value
        }
        var headers: [HeaderField] = []
        if let (text, column) = values["header"] {
            for item in text.split(separator: "|", omittingEmptySubsequences: false) {
                guard let colon = item.firstIndex(of: ":") else {
                    error(n, column, "header '\(item)' has no ':'", hint: "write header=\"Name:Value|Name:Value\"")
                    return
                }
                let name = String(item[..<colon].trimmingBlanks())
                let value = String(item[item.index(after: colon)...].trimmingBlanks())
                guard Self.isToken(name) else {
                    error(n, column, "'\(name)' is not a header name", hint: "write header=\"Name:Value|Name:Value\"")
                    return
                }
                guard checkHeaderText(value, what: "header value", line: n, column: column) else { return }
                headers.append(HeaderField(name: name, value: value))
            }
        }
        mapLocals.append(MapLocal(regex: regex, data: body, statusCode: status, headers: headers, line: n))
    }

    // MARK: [Statistics]

    mutating func readStatistics(_ line: ProfileLexer.Line) {
        guard let (name, nameColumn, raw, column) = keyValueLine(line, example: "api = \"^http://api\\.test/([a-z]+)\", key=$1") else { return }
        let n = line.number
        let fields: [ProfileLexer.Field]
        switch ProfileLexer.commaFields(raw, column: column) {
        case let .success(list): fields = list
        case let .failure(failure): report(failure, line: n); return
        }
        guard !name.isEmpty else { error(n, nameColumn, "missing name before '='", hint: "write NAME = \"REGEX\", key=host"); return }
        if let first = statistics.first(where: { $0.name == name }) {
            error(n, nameColumn, "statistics '\(name)' is already defined at line \(first.line)", hint: "rename one of them")
            return
        }
        guard let regexField = fields.first, ProfileLexer.keyValue(regexField) == nil || regexField.isQuoted else {
            error(n, column, "statistics '\(name)' needs a regex first", hint: "write \(name) = \"REGEX\", key=host")
            return
        }
        guard let regex = regex(regexField.text, line: n, column: regexField.column) else { return }
        var definition = StatisticsDefinition(name: name, regex: regex, line: n)
        var seen = Set<String>()
        for field in fields.dropFirst() {
            guard let (key, value, valueColumn) = ProfileLexer.keyValue(field) else {
                error(n, field.column, "expected key=value, got '\(field.text)'", hint: "keys: key, failure-status")
                return
            }
            guard seen.insert(key).inserted else { error(n, field.column, "'\(key)' is given twice", hint: "keep one of them"); return }
            switch key {
            case "key":
                if value.lowercased() == "host" {
                    definition.key = .host
                } else if value.hasPrefix("$"), let group = Int(value.dropFirst()), group >= 1, value.dropFirst().allSatisfy(\.isASCII) {
                    guard group <= regex.captureCount else {
                        error(n, valueColumn, "key=$\(group) but the regex has \(regex.captureCount) capture group\(regex.captureCount == 1 ? "" : "s")",
                              hint: "put parentheses around the part of the URL to count by")
                        return
                    }
                    definition.key = .capture(group)
                } else {
                    error(n, valueColumn, "key must be host or $N, got '\(value)'", hint: "host counts per host; $1 per first capture group")
                    return
                }
            case "failure-status":
                let parts = value.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                guard let low = integer(parts[0], 100 ... 599, what: "failure-status", line: n, column: valueColumn) else { return }
                var high = low
                if parts.count == 2 {
                    guard let h = integer(parts[1], 100 ... 599, what: "failure-status", line: n, column: valueColumn) else { return }
                    guard low <= h else { error(n, valueColumn, "failure-status range '\(value)' is backwards", hint: "write \(h)-\(low)"); return }
                    high = h
                }
                definition.failureStatus = low ... high
            default:
                error(n, field.column, "unknown key '\(key)' in [Statistics]", hint: Suggestion.hint(for: key, in: ["key", "failure-status"]))
                return
            }
        }
        statistics.append(definition)
    }
}
