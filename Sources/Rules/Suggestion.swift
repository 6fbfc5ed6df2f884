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
        return distance <= max(2, lowered.count / 3) ? candidate : nil
    }

    /// "did you mean X?" or the full list of what is accepted.
    static func hint(for word: String, in candidates: [String], format: (String) -> String = { $0 }) -> String {
        if let nearest = nearest(word, in: candidates) { return "did you mean \(format(nearest))?" }
        return "expected one of: \(candidates.map(format).joined(separator: ", "))"
    }

    /// Levenshtein distance with one row of memory.
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        var row = Array(0 ... b.count)
        for i in 1 ... a.count {
            var diagonal = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)
                diagonal = row[j]
                row[j] = min(substitution, row[j] + 1, row[j - 1] + 1)
            }
        }
        return row[b.count]
    }
}
