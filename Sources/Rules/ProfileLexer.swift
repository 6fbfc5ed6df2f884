/// The lexical layer of the profile dialect: lines, comments, section headers,
/// and the two ways a line splits into fields (commas, or runs of blanks).
/// Quotes keep separators; inside them only \" and \\ are escapes, so a regex's
/// backslashes survive as written.
enum ProfileLexer {
    /// One line of the file that is neither blank nor a comment, trimmed.
    struct Line {
        var number: Int
        var text: Substring
        /// 1-based column of `text`'s first character in the original line.
        var column: Int
    }

    /// A field as written (`raw`, quotes included) and where it starts.
    struct Field: Equatable {
        var raw: Substring
        var column: Int

        /// The value with quotes removed and escapes applied.
        var text: String { ProfileLexer.unquote(raw) }
        /// True when the whole field is one quoted string.
        var isQuoted: Bool { raw.count >= 2 && raw.first == "\"" && raw.last == "\"" }
    }

    enum Failure: Error, Equatable {
        case unclosedQuote(column: Int)
        case unbalancedParenthesis(column: Int)
    }

    /// Splits the file into meaningful lines: a BOM is dropped, LF and CRLF end
    /// lines, blank lines and comment lines (#, ; or // first) are skipped.
    static func lines(_ text: String) -> [Line] {
        var out: [Line] = []
        forEachLine(text) { out.append($0); return true }
        return out
    }

    /// The same lines one at a time, without an array of them (a rule list
    /// may have hundreds of thousands); `body` returns false to stop.
    static func forEachLine(_ text: String, _ body: (Line) -> Bool) {
        var rest = Substring(text)
        if rest.unicodeScalars.first == "\u{FEFF}" { rest = Substring(rest.unicodeScalars.dropFirst()) }
        var number = 0
        while true {
            // "\r\n" is a single Character in Swift, so it has to be named as a separator.
            let end = rest.firstIndex { $0 == "\n" || $0 == "\r\n" }
            number += 1
            var line = rest[..<(end ?? rest.endIndex)]
            while let last = line.last, isBlank(last) || last == "\r" { line.removeLast() }
            var column = 1
            while let first = line.first, isBlank(first) { line.removeFirst(); column += 1 }
            if !(line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") || line.hasPrefix("//")) {
                guard body(Line(number: number, text: line, column: column)) else { return }
            }
            guard let end else { return }
            rest = rest[rest.index(after: end)...]
        }
    }

    static func isBlank(_ c: Character) -> Bool { c == " " || c == "\t" }

    /// Comma fields: commas inside quotes or parentheses do not split. Fields are
    /// trimmed of blanks; an empty line gives no fields.
    static func commaFields(_ text: Substring, column: Int) -> Result<[Field], Failure> {
        split(text, column: column, isSeparator: { $0 == "," }, parentheses: true, collapse: false)
    }

    /// Blank-separated fields: runs of spaces and tabs outside quotes split.
    static func blankFields(_ text: Substring, column: Int) -> Result<[Field], Failure> {
        split(text, column: column, isSeparator: isBlank, parentheses: false, collapse: true)
    }

    private static func split(_ text: Substring, column: Int, isSeparator: (Character) -> Bool,
                              parentheses: Bool, collapse: Bool) -> Result<[Field], Failure> {
        var fields: [Field] = []
        var start = text.startIndex
        var startColumn = column
        var current = column
        var quoteColumn: Int?
        var depthColumns: [Int] = []
        var escaped = false
        var index = text.startIndex
        func emit(until end: String.Index) {
            var field = text[start ..< end]
            var c = startColumn
            while let first = field.first, isBlank(first) { field.removeFirst(); c += 1 }
            while let last = field.last, isBlank(last) { field.removeLast() }
            if !(collapse && field.isEmpty) { fields.append(Field(raw: field, column: c)) }
        }
        while index < text.endIndex {
            let ch = text[index]
            if quoteColumn != nil {
                if escaped { escaped = false } else if ch == "\\" { escaped = true } else if ch == "\"" { quoteColumn = nil }
            } else if ch == "\"" {
                quoteColumn = current
            } else if parentheses, ch == "(" {
                depthColumns.append(current)
            } else if parentheses, ch == ")" {
                if depthColumns.popLast() == nil { return .failure(.unbalancedParenthesis(column: current)) }
            } else if depthColumns.isEmpty, isSeparator(ch) {
                emit(until: index)
                start = text.index(after: index)
                startColumn = current + 1
            }
            index = text.index(after: index)
            current += 1
        }
        if let quoteColumn { return .failure(.unclosedQuote(column: quoteColumn)) }
        if let open = depthColumns.last { return .failure(.unbalancedParenthesis(column: open)) }
        emit(until: text.endIndex)
        if fields.count == 1, fields[0].raw.isEmpty { return .success([]) }
        return .success(fields)
    }

    /// Removes quotes; inside them `\"` is a quote and `\\` a backslash, and any
    /// other backslash stays as written.
    static func unquote(_ raw: Substring) -> String {
        guard raw.contains("\"") else { return String(raw) }
        var out = ""
        var inQuote = false
        var index = raw.startIndex
        while index < raw.endIndex {
            let ch = raw[index]
            if inQuote, ch == "\\" {
                let next = raw.index(after: index)
                if next < raw.endIndex, raw[next] == "\"" || raw[next] == "\\" {
                    out.append(raw[next]); index = raw.index(after: next); continue
                }
                out.append(ch)
            } else if ch == "\"" {
                inQuote.toggle()
            } else {
                out.append(ch)
            }
            index = raw.index(after: index)
        }
        return out
    }

    /// The index of the first `=` outside quotes, if any.
    static func firstEquals(_ raw: Substring) -> String.Index? {
        var inQuote = false, escaped = false
        var index = raw.startIndex
        while index < raw.endIndex {
            let ch = raw[index]
            if inQuote {
                if escaped { escaped = false } else if ch == "\\" { escaped = true } else if ch == "\"" { inQuote = false }
            } else if ch == "\"" {
                inQuote = true
            } else if ch == "=" {
                return index
            }
            index = raw.index(after: index)
        }
        return nil
    }

    /// `key=value` of one field: the key trimmed and lowercased as written, the value unquoted.
    static func keyValue(_ field: Field) -> (key: String, value: String, valueColumn: Int)? {
        guard let equals = firstEquals(field.raw) else { return nil }
        let key = field.raw[..<equals].trimmingBlanks()
        var value = field.raw[field.raw.index(after: equals)...]
        var column = field.column + field.raw.distance(from: field.raw.startIndex, to: equals) + 1
        while let first = value.first, isBlank(first) { value.removeFirst(); column += 1 }
        return (unquote(key), unquote(value), column)
    }
}

extension Substring {
    func trimmingBlanks() -> Substring {
        var s = self
        while let first = s.first, ProfileLexer.isBlank(first) { s.removeFirst() }
        while let last = s.last, ProfileLexer.isBlank(last) { s.removeLast() }
        return s
    }
}
