/// A replacement such as `http://api.staging.test/$1`: literal text with `$0`
/// (the whole match) to `$9` (capture groups) spliced in. A `$` not followed
/// by a digit is literal, and a group that took no part in the match expands
/// to nothing, as in Surge.
public struct URLTemplate: Sendable, Hashable, CustomStringConvertible {
    enum Part: Sendable, Hashable {
        case literal(String)
        case group(Int)
    }

    public let text: String
    private let parts: [Part]

    public init(_ text: String) {
        self.text = text
        var parts: [Part] = []
        var literal = ""
        var scalars = text.unicodeScalars.makeIterator()
        var pending = scalars.next()
        while let c = pending {
            pending = scalars.next()
            if c == "$", let d = pending, let digit = d.properties.numericType == .decimal ? Int(String(d)) : nil,
               (0 ... 9).contains(digit) {
                if !literal.isEmpty { parts.append(.literal(literal)); literal = "" }
                parts.append(.group(digit))
                pending = scalars.next()
            } else {
                literal.unicodeScalars.append(c)
            }
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self.parts = parts
    }

    /// The largest group number used, so a loader can reject `$3` against a
    /// regex with two groups. Nil when the template uses none.
    public var highestGroup: Int? {
        parts.compactMap { if case let .group(n) = $0 { return n } else { return nil } }.max()
    }

    /// Expands against `groups[n]` = group n (`groups[0]` the whole match);
    /// missing or non-participating groups give "".
    public func expand(groups: [Substring?]) -> String {
        var out = ""
        for part in parts {
            switch part {
            case let .literal(s): out += s
            case let .group(n): if n < groups.count, let g = groups[n] { out += g }
            }
        }
        return out
    }

    public func expand(_ match: PatternMatch) -> String {
        expand(groups: match.groups)
    }

    public var description: String { text }
}
