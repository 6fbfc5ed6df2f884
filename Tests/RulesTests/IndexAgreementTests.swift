import Testing
import Wire
@testable import Rules

/// The indexes against the obvious definitions, on seeded random inputs.
@Suite struct IndexAgreementTests {
    struct Seeded {
        var state: UInt64
        mutating func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(state >> 33) % n
        }
    }

    @Test func domainIndexAgreesWithSuffixTest() {
        var r = Seeded(state: 7)
        let labels = ["a", "b", "ads", "test", "x", "A", "Test"]
        func name() -> String { (0 ..< 1 + r.next(4)).map { _ in labels[r.next(labels.count)] }.joined(separator: ".") }
        var entries: [(String, DomainSuffixIndex<Int>.Kind)] = []
        var index = DomainSuffixIndex<Int>()
        for i in 0 ..< 40 {
            let entry = (name(), r.next(2) == 0 ? DomainSuffixIndex<Int>.Kind.exact : .suffix)
            entries.append(entry)
            index.insert(entry.0, kind: entry.1, index: i, value: i)
        }
        for _ in 0 ..< 2000 {
            let host = name() + (r.next(5) == 0 ? "." : "")
            let expected = entries.indices.first { i in
                entries[i].1 == .exact ? DomainSuffixIndex<Int>.equalNames(host, entries[i].0)
                    : DomainSuffixIndex<Int>.hasSuffix(host, entries[i].0)
            }
            #expect(index.lookup(host)?.index == expected, "\(host)")
        }
    }

    @Test func prefixTrieAgreesWithContains() {
        var r = Seeded(state: 11)
        var prefixes: [IPv4Prefix] = []
        var trie = PrefixTrie<Int>()
        for i in 0 ..< 60 {
            let p = IPv4Prefix(network: IPv4Address(10, UInt8(r.next(4)), UInt8(r.next(4)), UInt8(r.next(256))), length: r.next(33))!
            prefixes.append(p)
            trie.insert(p.network, prefixLength: p.length, index: i, value: i)
        }
        for _ in 0 ..< 5000 {
            let a = IPv4Address(UInt8(9 + r.next(3)), UInt8(r.next(4)), UInt8(r.next(4)), UInt8(r.next(256)))
            #expect(trie.lookup(a)?.index == prefixes.firstIndex { $0.contains(a) }, "\(a)")
        }
        var prefixes6: [IPv6Prefix] = []
        var trie6 = PrefixTrie<Int>()
        for i in 0 ..< 60 {
            let p = IPv6Prefix(network: IPv6Address(high: 0xfd00_0000_0000_0000 | UInt64(r.next(4)) << 48, low: UInt64(r.next(8))),
                               length: r.next(129))!
            prefixes6.append(p)
            trie6.insert(p.network, prefixLength: p.length, index: i, value: i)
        }
        for _ in 0 ..< 5000 {
            let a = IPv6Address(high: (r.next(3) == 0 ? 0xfe00_0000_0000_0000 : 0xfd00_0000_0000_0000) | UInt64(r.next(4)) << 48,
                                low: UInt64(r.next(8)))
            #expect(trie6.lookup(a)?.index == prefixes6.firstIndex { $0.contains(a) }, "\(a)")
        }
    }

    /// Whatever the input, a resolved path is the folder, "/", then segments
    /// that are neither empty, "." nor "..", with no NUL or backslash.
    @Test func localPathNeverEscapes() {
        var r = Seeded(state: 13)
        let pieces = [".", "..", "/", "%2e", "%2E", "%2f", "%5c", "\\", "%00", "a", "b%20c", "%", "%25", "é", "\u{301}", "%CC%81", "//", "./"]
        var resolved = 0
        for _ in 0 ..< 20000 {
            let relative = (0 ..< 1 + r.next(6)).map { _ in pieces[r.next(pieces.count)] }.joined()
            guard let path = LocalPath.resolve(directory: "/srv/d", relative: relative) else { continue }
            resolved += 1
            // Bytes, as open(2) sees them: "/" and a combining mark are one Character.
            let bytes = Array(path.utf8), prefix = Array("/srv/d/".utf8)
            #expect(bytes.starts(with: prefix), "\(relative) -> \(path)")
            for segment in bytes[prefix.count...].split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
                #expect(!segment.isEmpty && !segment.elementsEqual([0x2e]) && !segment.elementsEqual([0x2e, 0x2e]),
                        "\(relative) -> \(path)")
            }
            #expect(!bytes.contains(UInt8(ascii: "\\")) && !bytes.contains(0), "\(relative) -> \(path)")
        }
        #expect(resolved > 1000) // the generator does produce acceptable names too
    }
}
