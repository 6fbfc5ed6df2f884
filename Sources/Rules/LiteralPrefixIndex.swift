/// Which of a list of URL patterns may match a text, found in one walk over
/// the text's first bytes instead of one prefix comparison per pattern.
///
/// An environment-switching profile has tens of [URL Rewrite] and [Map Local]
/// lines, each anchored by "^" to a literal (`CompiledRegex.requiredPrefix`),
/// and most requests match none. Comparing each line's prefix in turn cost
/// about 4% of a kept-alive request's CPU with 51 lines; this trie makes the
/// cost depend on the URL's length, not on the number of lines.
///
/// The answer is exactly the lines that `CompiledRegex.cannotStart` does not
/// rule out, in profile order: lines without a known prefix always, lines
/// whose prefix the text begins with, and, where the text has a non-ASCII byte
/// before a prefix ends, every line below that point (canonical equivalence
/// is left to the regex, as `cannotStart` leaves it).
///
/// Ad-blocking modules write thousands of `^https?://…` lines, whose prefix
/// ("http") rules nothing out. So a line may also give the run of bytes every
/// match of its regex contains (`CompiledRegex.requiredLiteral`); the runs
/// form a `LiteralAutomaton`, and a line whose run an ASCII text lacks is no
/// candidate either. Such lines stay out of the trie: the automaton names
/// the few whose run the text holds, and their prefixes are compared one by
/// one, so the cost does not grow with their number.
struct LiteralPrefixIndex: Sendable {
    private struct Node: Sendable {
        var bytes: [UInt8] = []
        var children: [Int32] = []
        /// The lines whose prefix ends at this node.
        var ending: [Int] = []
        /// The lines whose prefix ends strictly below this node, ascending.
        var below: [Int] = []
    }

    private var nodes: [Node] = [Node()]
    /// Lines with no known prefix: always candidates, ascending.
    private var unprefixed: [Int] = []
    private var literals = LiteralAutomaton()
    /// The lines with a run, ascending, and every line's prefix.
    private var literalLines: [Int] = []
    private var prefixes: [[UInt8]] = []

    /// `prefixes[i]` is line i's required prefix (empty when unknown);
    /// `literals[i]`, if given, a run every match of line i contains.
    init(prefixes: [[UInt8]], literals lineLiterals: [[UInt8]?] = []) {
        self.prefixes = prefixes
        for (line, literal) in lineLiterals.enumerated() {
            guard let literal, !literal.isEmpty else { continue }
            literals.insert(literal, owner: line)
            literalLines.append(line)
        }
        literals.build()
        var next = 0
        for (line, prefix) in prefixes.enumerated() {
            if next < literalLines.count, literalLines[next] == line { next += 1; continue }
            guard !prefix.isEmpty else { unprefixed.append(line); continue }
            var node = 0
            for byte in prefix {
                nodes[node].below.append(line)
                if let i = nodes[node].bytes.firstIndex(of: byte) {
                    node = Int(nodes[node].children[i])
                } else {
                    nodes.append(Node())
                    nodes[node].bytes.append(byte)
                    nodes[node].children.append(Int32(nodes.count - 1))
                    node = nodes.count - 1
                }
            }
            nodes[node].ending.append(line)
        }
    }

    /// The lines that may match `text`, ascending. Allocates nothing when
    /// there are none and no line has a run.
    func candidates(for text: String) -> [Int] {
        var found = unprefixed
        var node = 0
        var gathered = false
        for byte in text.utf8 {
            if !nodes[node].ending.isEmpty { found += nodes[node].ending; gathered = true }
            if byte >= 0x80 {
                // Not ASCII where some prefixes go on: the regex decides for all of them.
                if !nodes[node].below.isEmpty { found += nodes[node].below; gathered = true }
                node = -1
                break
            }
            guard let i = nodes[node].bytes.firstIndex(of: byte) else { node = -1; break }
            node = Int(nodes[node].children[i])
        }
        // The text ended: a line ending exactly here still may match.
        if node >= 0, !nodes[node].ending.isEmpty { found += nodes[node].ending; gathered = true }
        // Each node's lines are ascending, but lines of different nodes interleave.
        if gathered { found.sort() }
        guard !literals.isEmpty else { return found }
        // The lines with a run: those whose run the text holds (all of them
        // when it is not ASCII), less those whose prefix it cannot start with.
        // Filtered in place: the automaton's answer is this call's own array.
        var holding = literals.candidates(in: text) ?? literalLines
        holding.removeAll { !prefixes[$0].isEmpty && CompiledRegex.cannotStart(text, with: prefixes[$0]) }
        if holding.isEmpty { return found }
        if found.isEmpty { return holding }
        return (found + holding).sorted()
    }
}
