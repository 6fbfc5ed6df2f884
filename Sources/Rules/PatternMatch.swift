/// Where a profile regex matched a text, and its groups: what URL Rewrite,
/// Map Local, [Statistics] and Header Rewrite take from a match. It comes
/// from `ByteMatcher` when the pattern and text allow it, from Swift's `Regex`
/// otherwise, and reads the same either way.
public struct PatternMatch: Sendable {
    /// The whole match, in the text it was found in.
    public let range: Range<String.Index>
    /// `groups[0]` is the whole match, `groups[n]` group n; nil for a group
    /// that took no part.
    public let groups: [Substring?]

    init(_ match: Regex<AnyRegexOutput>.Match) {
        range = match.range
        groups = (0 ..< match.output.count).map { match.output[$0].substring }
    }

    /// From `ByteMatcher`'s slots, UTF-8 offsets into `text`.
    init(slots: [Int], in text: String) {
        let utf8 = text.utf8
        func index(_ offset: Int) -> String.Index { utf8.index(utf8.startIndex, offsetBy: offset) }
        range = index(slots[0]) ..< index(slots[1])
        groups = stride(from: 0, to: slots.count, by: 2).map { slot in
            slots[slot] < 0 || slots[slot + 1] < 0 ? nil : text[index(slots[slot]) ..< index(slots[slot + 1])]
        }
    }
}
