/// DOMAIN-KEYWORD rules: a host matches when it contains the keyword anywhere,
/// ASCII case-insensitively (other bytes compare as they are). The first hit
/// is the smallest rule index.
///
/// Once built, the keywords are one `LiteralAutomaton`, and a host is read
/// once whatever their number (ad-blocking lists carry hundreds). Until
/// `build`, they are tried one after another, in rule order.
public struct KeywordMatcher: Sendable {
    private var keywords: [(index: Int, bytes: [UInt8])] = []
    private var automaton = LiteralAutomaton()
    private var built = false

    public init() {}

    public var count: Int { keywords.count }

    /// False (nothing added) for an empty keyword, which would match every host.
    @discardableResult
    public mutating func insert(_ keyword: String, index: Int) -> Bool {
        let bytes = keyword.utf8.map(DomainSuffixIndex<Int>.lower)
        guard !bytes.isEmpty else { return false }
        let at = keywords.firstIndex { $0.index > index } ?? keywords.endIndex
        keywords.insert((index, bytes), at: at)
        automaton.insert(bytes, owner: index)
        built = false
        return true
    }

    /// Makes `firstMatch` one pass over the host; call it after the last insert.
    public mutating func build() {
        automaton.build()
        built = true
    }

    /// The smallest rule index whose keyword `host` contains, considering only
    /// indices below `limit` (the engine's best decision so far).
    public func firstMatch(in host: String, below limit: Int = .max) -> Int? {
        if let hit = host.utf8.withContiguousStorageIfAvailable({ firstMatch(bytes: $0, below: limit) }) { return hit }
        let copy = Array(host.utf8)
        return copy.withUnsafeBufferPointer { firstMatch(bytes: $0, below: limit) }
    }

    private func firstMatch(bytes: UnsafeBufferPointer<UInt8>, below limit: Int) -> Int? {
        guard let first = keywords.first, first.index < limit else { return nil }
        if built {
            guard let hit = automaton.firstOwner(occurringIn: bytes), hit < limit else { return nil }
            return hit
        }
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
