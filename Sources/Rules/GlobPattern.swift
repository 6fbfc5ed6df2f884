/// USER-AGENT's wildcard: `*` is any run of characters (empty too), `?` is one
/// character; everything else is literal and case-sensitive, and the pattern
/// must cover the whole value ("LegacyApp/*" matches "LegacyApp/2.1", not
/// "MyLegacyApp/2.1").
public struct GlobPattern: Sendable, Hashable, CustomStringConvertible {
    enum Token: Sendable, Hashable {
        case literal(Unicode.Scalar)
        case one
        case any
    }

    public let pattern: String
    private let tokens: [Token]

    public init(_ pattern: String) {
        self.pattern = pattern
        tokens = pattern.unicodeScalars.map { $0 == "*" ? .any : $0 == "?" ? .one : .literal($0) }
    }

    /// Greedy matching with one backtrack point (the last `*`): linear in
    /// practice, quadratic at worst, and never recursive.
    public func matches(_ value: String) -> Bool {
        let text = value.unicodeScalars
        var t = text.startIndex
        var p = 0
        var star: (pattern: Int, text: String.UnicodeScalarView.Index)?
        while t < text.endIndex {
            if p < tokens.count {
                switch tokens[p] {
                case .any:
                    star = (p, t)
                    p += 1
                    continue
                case .one:
                    p += 1
                    t = text.index(after: t)
                    continue
                case let .literal(c) where c == text[t]:
                    p += 1
                    t = text.index(after: t)
                    continue
                case .literal:
                    break
                }
            }
            guard let s = star else { return false }
            // Let the last `*` swallow one more character and retry from there.
            let next = text.index(after: s.text)
            star = (s.pattern, next)
            p = s.pattern + 1
            t = next
        }
        while p < tokens.count, tokens[p] == .any { p += 1 }
        return p == tokens.count
    }

    public var description: String { pattern }
}
