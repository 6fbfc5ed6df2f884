/// Finds, in a regex's text, a group repeated without bound that itself holds
/// a repetition without bound: `(\w+\.)+`, `(a*)*`. Those are the patterns
/// on which a backtracking engine such as Swift's `Regex` can take time
/// exponential in the text. `ByteMatcher` runs them in linear time, so the
/// profile warns only about patterns outside its subset that have one.
///
/// It reads the text, not a parse: escapes and bracket classes are skipped,
/// groups are tracked, and any `*`, `+` or `{n,}` counts. Not every nesting
/// is slow (`(\w+\.)+` is not: the dot separates the rounds); the warning says
/// "can".
enum NestedRepetition {
    /// The UTF-8 offset of the outer quantifier of the first such group; nil when there is none.
    static func find(in pattern: String) -> Int? {
        let p = Array(pattern.utf8)
        // Per open group: whether a repetition without bound is inside it.
        var open: [Bool] = []
        // The atom before the current position is a group that holds one.
        var afterRepeatingGroup = false
        var i = 0
        while i < p.count {
            let byte = p[i]
            var groupJustClosed = false
            switch byte {
            case UInt8(ascii: "\\"):
                if i + 1 < p.count, p[i + 1] == UInt8(ascii: "Q") {
                    // \Q...\E: literal text.
                    i += 2
                    while i < p.count, !(p[i] == UInt8(ascii: "\\") && i + 1 < p.count && p[i + 1] == UInt8(ascii: "E")) { i += 1 }
                }
                i += 2
            case UInt8(ascii: "["):
                i = Self.endOfClass(p, from: i)
            case UInt8(ascii: "("):
                open.append(false)
                i += 1
            case UInt8(ascii: ")"):
                let held = open.popLast() ?? false
                if held, !open.isEmpty { open[open.count - 1] = true }
                afterRepeatingGroup = held
                groupJustClosed = true
                i += 1
            case UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "{"):
                let (unbounded, end) = Self.quantifier(p, at: i)
                if unbounded {
                    if afterRepeatingGroup { return i }
                    if !open.isEmpty { open[open.count - 1] = true }
                }
                i = end
            default:
                i += 1
            }
            if !groupJustClosed { afterRepeatingGroup = false }
        }
        return nil
    }

    /// Whether the quantifier at `i` has no upper bound, and where it ends
    /// (a lazy "?" or possessive "+" after it included). A "{" that is not a
    /// quantifier is a literal: bounded, one byte.
    static func quantifier(_ p: [UInt8], at i: Int) -> (unbounded: Bool, end: Int) {
        var end = i + 1
        var unbounded = p[i] != UInt8(ascii: "{")
        if p[i] == UInt8(ascii: "{") {
            var j = i + 1
            while j < p.count, p[j] >= UInt8(ascii: "0"), p[j] <= UInt8(ascii: "9") { j += 1 }
            guard j > i + 1, j < p.count else { return (false, i + 1) }
            if p[j] == UInt8(ascii: "}") { return (false, j + 1) }
            guard p[j] == UInt8(ascii: ",") else { return (false, i + 1) }
            j += 1
            let digits = j
            while j < p.count, p[j] >= UInt8(ascii: "0"), p[j] <= UInt8(ascii: "9") { j += 1 }
            guard j < p.count, p[j] == UInt8(ascii: "}") else { return (false, i + 1) }
            unbounded = j == digits
            end = j + 1
        }
        if end < p.count, p[end] == UInt8(ascii: "?") || p[end] == UInt8(ascii: "+") { end += 1 }
        return (unbounded, end)
    }

    /// The offset just past the bracket class that opens at `i` (Swift's
    /// classes nest; a "]" first, or after "^", is a member).
    static func endOfClass(_ p: [UInt8], from i: Int) -> Int {
        var j = i + 1
        if j < p.count, p[j] == UInt8(ascii: "^") { j += 1 }
        if j < p.count, p[j] == UInt8(ascii: "]") { j += 1 }
        var depth = 1
        while j < p.count, depth > 0 {
            switch p[j] {
            case UInt8(ascii: "\\"): j += 1
            case UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "]"): depth -= 1
            default: break
            }
            j += 1
        }
        return j
    }
}
