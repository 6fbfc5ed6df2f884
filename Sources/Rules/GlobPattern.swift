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
