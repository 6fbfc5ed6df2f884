/// A regex from the profile, compiled once at load. Swift's `Regex` is neither
/// Equatable nor Sendable; the profile needs both (reloads compare profiles, the
/// engine hands them between threads), so equality is the source text's and the
/// compiled value is only ever read.
public final class CompiledRegex: @unchecked Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The pattern as written in the profile, after unquoting.
    public let source: String
    public let regex: Regex<AnyRegexOutput>
    /// How many capture groups the pattern declares ($1...$N may refer to them).
    public let captureCount: Int

    /// Compiles `source`; the thrown error's description says what is wrong.
    public init(_ source: String) throws {
        self.source = source
        regex = try Regex(source)
        captureCount = CompiledRegex.countCaptures(source)
    }

    public static func == (a: CompiledRegex, b: CompiledRegex) -> Bool { a.source == b.source }
    public func hash(into hasher: inout Hasher) { hasher.combine(source) }
    public var description: String { source }

    /// The first match anywhere in `text` (profile regexes are searches, as in Surge:
    /// anchor with ^ and $ to match a whole URL).
    public func firstMatch(in text: String) -> Regex<AnyRegexOutput>.Match? {
        try? regex.firstMatch(in: text)
    }

    public func matches(_ text: String) -> Bool { firstMatch(in: text) != nil }

    /// Counts capturing groups in the pattern text: an unescaped "(" outside a
    /// bracket expression that is not "(?" — except the named forms "(?<name>",
    /// "(?P<name>" and "(?'name'", which capture.
    static func countCaptures(_ pattern: String) -> Int {
        let chars = Array(pattern.unicodeScalars)
        var count = 0, i = 0, inClass = false
        while i < chars.count {
            let c = chars[i]
            if c == "\\" { i += 2; continue }
            if inClass {
                if c == "]" { inClass = false }
            } else if c == "[" {
                inClass = true
                // A "]" right after "[" or "[^" is a literal member, not the end.
                if i + 1 < chars.count, chars[i + 1] == "^" { i += 1 }
                if i + 1 < chars.count, chars[i + 1] == "]" { i += 1 }
            } else if c == "(" {
                if i + 1 < chars.count, chars[i + 1] == "?" {
                    if i + 2 < chars.count {
                        let n = chars[i + 2]
                        if n == "'" || n == "P" && i + 3 < chars.count && chars[i + 3] == "<" { count += 1 }
                        if n == "<", i + 3 < chars.count, chars[i + 3] != "=", chars[i + 3] != "!" { count += 1 }
                    }
                } else if i + 1 < chars.count, chars[i + 1] == "*" {
                    // (*VERB) is a control verb, not a group.
                } else {
                    count += 1
                }
            }
            i += 1
        }
        return count
    }
}
