/// DOMAIN-KEYWORD rules: a host matches when it contains the keyword anywhere,
/// ASCII case-insensitively. The keywords are kept in rule order and tried one
/// after another, so the first hit is the smallest index.
///
/// This is linear in the number of keywords (times the host length). Profiles
/// carry tens of keywords, not thousands; if that changes, an Aho-Corasick
/// automaton over the same entries answers in one pass over the host.
public struct KeywordMatcher: Sendable {
    private var keywords: [(index: Int, bytes: [UInt8])] = []

    public init() {}

    public var count: Int { keywords.count }

    /// False (nothing added) for an empty keyword, which would match every host.
    @discardableResult
    public mutating func insert(_ keyword: String, index: Int) -> Bool {
        let bytes = keyword.utf8.map(DomainSuffixIndex<Int>.lower)
        guard !bytes.isEmpty else { return false }
        let at = keywords.firstIndex { $0.index > index } ?? keywords.endIndex
        keywords.insert((index, bytes), at: at)
        return true
    }

    /// The smallest rule index whose keyword `host` contains, considering only
    /// indices below `limit` (the engine's best decision so far).
    public func firstMatch(in host: String, below limit: Int = .max) -> Int? {
        if let hit = host.utf8.withContiguousStorageIfAvailable({ firstMatch(bytes: $0, below: limit) }) { return hit }
        let copy = Array(host.utf8)
        return copy.withUnsafeBufferPointer { firstMatch(bytes: $0, below: limit) }
    }

    private func firstMatch(bytes: UnsafeBufferPointer<UInt8>, below limit: Int) -> Int? {
        for (index, keyword) in keywords {
            if index >= limit { return nil }
            if Self.contains(bytes, keyword) { return index }
        }
        return nil
    }

    /// One keyword against one host, for the rule-by-rule reading.
    static func host(_ host: String, contains keyword: String) -> Bool {
        let needle = keyword.utf8.map(DomainSuffixIndex<Int>.lower)
        guard !needle.isEmpty else { return false }
        let bytes = Array(host.utf8)
        return bytes.withUnsafeBufferPointer { contains($0, needle) }
    }

    static func contains(_ haystack: UnsafeBufferPointer<UInt8>, _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        outer: for start in 0 ... (haystack.count - needle.count) {
            for j in 0 ..< needle.count where DomainSuffixIndex<Int>.lower(haystack[start + j]) != needle[j] {
                continue outer
            }
            return true
        }
        return false
    }
}
