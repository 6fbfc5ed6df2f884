/// "Did you mean ...": the closest known word by edit distance, so a typo gets
/// the fix and not just a list.
enum Suggestion {
    /// The candidate nearest `word` (case-insensitively), if it is near enough to
    /// be a plausible typo.
    static func nearest(_ word: String, in candidates: [String]) -> String? {
        let lowered = Array(word.lowercased().unicodeScalars)
        guard !lowered.isEmpty, lowered.count <= 64 else { return nil }
        // A shortened key ("status" for "status-code") is far by edit distance but obvious to a reader.
        let word = word.lowercased()
        if word.count >= 3, let candidate = candidates.first(where: { $0.lowercased().hasPrefix(word) }) { return candidate }
        var best: (String, Int)?
        for candidate in candidates {
            let distance = editDistance(lowered, Array(candidate.lowercased().unicodeScalars))
            if distance < best?.1 ?? .max { best = (candidate, distance) }
        }
        guard let (candidate, distance) = best else { return nil }
        // Short words tolerate one slip; longer ones about one in three characters.
        return distance <= (lowered.count <= 4 ? 1 : max(2, lowered.count / 3)) ? candidate : nil
    }

    /// "did you mean X?" or the full list of what is accepted.
    static func hint(for word: String, in candidates: [String], format: (String) -> String = { $0 }) -> String {
        if let nearest = nearest(word, in: candidates) { return "did you mean \(format(nearest))?" }
        return "expected one of: \(candidates.map(format).joined(separator: ", "))"
    }

    /// Edit distance counting a swap of neighbours as one edit (optimal string
    /// alignment), since "UPD" for "UDP" is one slip of the fingers, not two.
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0 ... b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1 ... a.count {
            current[0] = i
            for j in 1 ... b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}
