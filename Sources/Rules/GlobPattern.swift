/// A shell-style pattern for USER-AGENT: `*` is any run of characters, `?` one
/// character, everything else itself (case-sensitive, over the whole value).
public struct GlobPattern: Hashable, Sendable, CustomStringConvertible {
    public let pattern: String

    public init(_ pattern: String) { self.pattern = pattern }

    /// Iterative wildcard matching with one backtrack point: linear in practice,
    /// never exponential, whatever the pattern.
    public func matches(_ text: String) -> Bool {
        let p = Array(pattern.unicodeScalars), t = Array(text.unicodeScalars)
        var i = 0, j = 0, star = -1, resume = 0
        while j < t.count {
            if i < p.count, p[i] == "?" || p[i] == t[j], p[i] != "*" {
                i += 1; j += 1
            } else if i < p.count, p[i] == "*" {
                star = i; resume = j; i += 1
            } else if star >= 0 {
                i = star + 1; resume += 1; j = resume
            } else {
                return false
            }
        }
        while i < p.count, p[i] == "*" { i += 1 }
        return i == p.count
    }

    public var description: String { pattern }
}

extension GlobPattern {
    /// DOMAIN-WILDCARD's pattern as an anchored, case-insensitive regex in the
    /// byte matcher's subset (so it is matched in linear time, and indexed by
    /// its literal runs like DOMAIN-REGEX): `*` → `.*`, `?` → `.`, `[...]`
    /// (`[!...]` negated) → a class, everything else literal. Nil for an
    /// unclosed `[` or an empty class.
    static func domainRegexSource(_ glob: String) -> String? {
        var out = "(?i)^"
        var chars = glob.unicodeScalars.makeIterator()
        while let c = chars.next() {
            switch c {
            case "*": out += ".*"
            case "?": out += "."
            case "[":
                var body = ""
                var closed = false
                var first = true
                while let d = chars.next() {
                    if d == "]", !body.isEmpty { closed = true; break }
                    if first, d == "!" || d == "^" { out += "[^"; first = false; continue }
                    if first { out += "[" }
                    first = false
                    body += d == "\\" || d == "[" || d == "]" ? "\\\(d)" : String(d)
                }
                guard closed else { return nil }
                out += body + "]"
            default:
                out += "\\^$.|?*+()[]{}/".unicodeScalars.contains(c) ? "\\\(c)" : String(c)
            }
        }
        return out + "$"
    }
}
