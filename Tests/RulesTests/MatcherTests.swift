import Testing
import Wire
@testable import Rules

@Suite struct DomainSuffixIndexTests {
    func index() -> DomainSuffixIndex<String> {
        var i = DomainSuffixIndex<String>()
        do { let ok = i.insert("api.test", kind: .exact, index: 0, value: "api"); #expect(ok) }
        do { let ok = i.insert("ads.test", kind: .suffix, index: 1, value: "ads"); #expect(ok) }
        do { let ok = i.insert("Deep.Ads.Test.", kind: .exact, index: 5, value: "deep"); #expect(ok) }
        do { let ok = i.insert("test", kind: .suffix, index: 9, value: "tld"); #expect(ok) }
        return i
    }

    @Test func exactAndSuffix() {
        let i = index()
        #expect(i.lookup("api.test")?.value == "api")
        #expect(i.lookup("ads.test")?.value == "ads")
        #expect(i.lookup("x.ads.test")?.value == "ads")
        #expect(i.lookup("a.b.c.ads.test")?.index == 1)
        // Not at a label boundary: only the catch-all suffix "test" matches.
        #expect(i.lookup("badads.test")?.value == "tld")
        #expect(i.lookup("x.api.test")?.value == "tld") // DOMAIN is exact only
        #expect(i.lookup("example.org") == nil)
        #expect(i.lookup("") == nil)
        #expect(i.lookup(".") == nil)
    }

    @Test func caseAndTrailingDotIgnored() {
        let i = index()
        #expect(i.lookup("API.TEST.")?.value == "api")
        #expect(i.lookup("X.aDs.TeSt")?.value == "ads")
    }

    @Test func smallestIndexWins() {
        let i = index()
        // deep.ads.test is DOMAIN at 5, but the suffix ads.test at 1 comes first.
        #expect(i.lookup("deep.ads.test")?.index == 1)
        var j = DomainSuffixIndex<Int>()
        j.insert("a.test", kind: .exact, index: 3, value: 3)
        j.insert("a.test", kind: .exact, index: 7, value: 7) // later duplicate: never decides
        j.insert("a.test", kind: .exact, index: 2, value: 2)
        j.insert("test", kind: .suffix, index: 4, value: 4)
        #expect(j.lookup("a.test")?.value == 2)
        #expect(j.lookup("b.test")?.value == 4)
    }

    @Test func rejectsEmptyLabels() {
        var i = DomainSuffixIndex<Int>()
        do { let ok = i.insert("", kind: .exact, index: 0, value: 0); #expect(!ok) }
        do { let ok = i.insert("a..b", kind: .suffix, index: 0, value: 0); #expect(!ok) }
        do { let ok = i.insert(".a", kind: .suffix, index: 0, value: 0); #expect(!ok) }
        #expect(i.count == 0)
        #expect(i.lookup("a..b") == nil)
    }

    @Test func manyEntries() {
        var i = DomainSuffixIndex<Int>()
        for n in 0 ..< 5000 { i.insert("host\(n).example.test", kind: .suffix, index: n, value: n) }
        #expect(i.lookup("www.host4321.example.test")?.value == 4321)
        #expect(i.lookup("host50000.example.test") == nil)
        #expect(i.lookup("example.test") == nil)
    }
}

@Suite struct PrefixTrieTests {
    @Test func ipv4CoveringPrefixes() {
        var t = PrefixTrie<String>()
        do { let ok = t.insert(IPv4Address(10, 0, 0, 0), prefixLength: 8, index: 4, value: "ten"); #expect(ok) }
        do { let ok = t.insert(IPv4Address(10, 1, 2, 0), prefixLength: 24, index: 2, value: "ten-one-two"); #expect(ok) }
        do { let ok = t.insert(IPv4Address(10, 1, 99, 99), prefixLength: 16, index: 6, value: "ten-one"); #expect(ok) } // host bits ignored
        do { let ok = t.insert(IPv4Address(192, 168, 1, 1), prefixLength: 32, index: 1, value: "host"); #expect(ok) }
        do { let ok = t.insert(IPv4Address(1, 2, 3, 4), prefixLength: 33, index: 0, value: "bad"); #expect(!ok) }
        #expect(t.lookup(IPv4Address(10, 1, 2, 3))?.value == "ten-one-two")
        #expect(t.lookup(IPv4Address(10, 1, 3, 3))?.value == "ten")   // /8 at 4 beats /16 at 6
        #expect(t.lookup(IPv4Address(10, 200, 0, 1))?.value == "ten")
        #expect(t.lookup(IPv4Address(11, 0, 0, 1)) == nil)
        #expect(t.lookup(IPv4Address(192, 168, 1, 1))?.value == "host")
        #expect(t.lookup(IPv4Address(192, 168, 1, 2)) == nil)
    }

    @Test func defaultRouteAndIPv6() throws {
        var t = PrefixTrie<Int>()
        t.insert(IPv4Address.any, prefixLength: 0, index: 9, value: 9)
        t.insert(try #require(IPv6Address("fd00::")), prefixLength: 8, index: 3, value: 3)
        t.insert(try #require(IPv6Address("2001:db8::1")), prefixLength: 128, index: 1, value: 1)
        #expect(t.lookup(IPv4Address(8, 8, 8, 8))?.index == 9)
        #expect(t.lookup(try #require(IPv6Address("fd12:3456::1")))?.index == 3)
        #expect(t.lookup(try #require(IPv6Address("fe00::1"))) == nil)
        #expect(t.lookup(try #require(IPv6Address("2001:db8::1")))?.index == 1)
        #expect(t.lookup(try #require(IPv6Address("2001:db8::2"))) == nil)
        // IPv4-mapped addresses reach the IPv4 trie.
        #expect(t.lookup(.v6(try #require(IPv6Address("::ffff:10.0.0.1"))))?.index == 9)
    }
}

@Suite struct KeywordAndGlobTests {
    @Test func keywords() {
        var k = KeywordMatcher()
        do { let ok = k.insert("tracker", index: 7); #expect(ok) }
        do { let ok = k.insert("ads", index: 3); #expect(ok) }
        do { let ok = k.insert("", index: 1); #expect(!ok) }
        #expect(k.firstMatch(in: "eu.TRACKER.test") == 7)
        #expect(k.firstMatch(in: "trackerads.test") == 3) // both hit; 3 is first
        #expect(k.firstMatch(in: "trackerads.test", below: 3) == nil)
        #expect(k.firstMatch(in: "example.test") == nil)
        #expect(k.firstMatch(in: "ad") == nil)
        // Built into one automaton, the same answers.
        k.build()
        #expect(k.firstMatch(in: "eu.TRACKER.test") == 7)
        #expect(k.firstMatch(in: "trackerads.test") == 3)
        #expect(k.firstMatch(in: "trackerads.test", below: 3) == nil)
        #expect(k.firstMatch(in: "example.test") == nil)
        #expect(k.firstMatch(in: "ad") == nil)
    }

    /// The automaton against the keyword-by-keyword reading, on random
    /// keywords (overlapping, some not ASCII) inserted in any order.
    @Test func builtKeywordsAgreeWithTheLinearReading() {
        var state: UInt64 = 0xbeef
        func next(_ n: Int) -> Int { ByteMatcherTests.next(&state) % n }
        let pieces = ["a", "b", "A", "ab", "é", ".", "x"]
        for _ in 0 ..< 200 {
            var plain = KeywordMatcher(), built = KeywordMatcher()
            var used = Set<Int>()
            for _ in 0 ..< next(10) + 1 {
                let index = next(40)
                guard used.insert(index).inserted else { continue }
                let keyword = (0 ..< next(3) + 1).map { _ in pieces[next(pieces.count)] }.joined()
                plain.insert(keyword, index: index)
                built.insert(keyword, index: index)
            }
            built.build()
            for _ in 0 ..< 20 {
                let host = (0 ..< next(8)).map { _ in pieces[next(pieces.count)] }.joined()
                let limit = next(3) == 0 ? next(40) : .max
                #expect(built.firstMatch(in: host, below: limit) == plain.firstMatch(in: host, below: limit), "\(host) below \(limit)")
            }
        }
    }

    @Test func glob() {
        let g = GlobPattern("LegacyApp/*")
        #expect(g.matches("LegacyApp/2.1"))
        #expect(g.matches("LegacyApp/"))
        #expect(!g.matches("MyLegacyApp/2.1"))
        #expect(!g.matches("legacyapp/2.1"))
        let q = GlobPattern("curl/?.*")
        #expect(q.matches("curl/8.5.0"))
        #expect(!q.matches("curl/10.0"))
        let mid = GlobPattern("*Mozilla*Firefox*")
        #expect(mid.matches("Mozilla/5.0 (X11) Gecko Firefox/120"))
        #expect(!mid.matches("Mozilla/5.0 Chrome"))
        #expect(GlobPattern("*").matches(""))
        #expect(!GlobPattern("?").matches(""))
        #expect(GlobPattern("a*b*c").matches("aXbYbZc"))
        #expect(!GlobPattern("a*b*c").matches("aXbYbZ"))
        #expect(GlobPattern("é?").matches("éx"))
    }
}

@Suite struct URLTemplateTests {
    @Test func expandsGroups() throws {
        let regex = try CompiledRegex(#"^http://api\.test/(v[0-9])/(.*)$"#)
        let match = try #require(regex.firstMatch(in: "http://api.test/v2/users?id=1"))
        #expect(URLTemplate("http://api.staging.test/$1/$2").expand(match) == "http://api.staging.test/v2/users?id=1")
        #expect(URLTemplate("$0#").expand(match) == "http://api.test/v2/users?id=1#")
        #expect(URLTemplate("cost $x $").expand(match) == "cost $x $") // literal dollars
        #expect(URLTemplate("[$7]").expand(match) == "[]")             // no such group
        #expect(URLTemplate("a/$2/$1").highestGroup == 2)
        #expect(URLTemplate("plain").highestGroup == nil)
    }

    @Test func nonParticipatingGroupIsEmpty() throws {
        let regex = try CompiledRegex(#"^(a)|(b)$"#)
        let match = try #require(regex.firstMatch(in: "b"))
        #expect(URLTemplate("<$1|$2>").expand(match) == "<|b>")
    }
}

@Suite struct LocalPathTests {
    @Test func joinsSafely() {
        #expect(LocalPath.resolve(directory: "/srv/cache", relative: "a/b.css") == "/srv/cache/a/b.css")
        #expect(LocalPath.resolve(directory: "/srv/cache/", relative: "./a//b.css") == "/srv/cache/a/b.css")
        #expect(LocalPath.resolve(directory: "/srv/cache", relative: "my%20file.txt") == "/srv/cache/my file.txt")
        #expect(LocalPath.resolve(directory: "/srv/cache", relative: "..foo/x..y") == "/srv/cache/..foo/x..y")
        // A second layer of escapes stays literal, so it cannot become "..".
        #expect(LocalPath.resolve(directory: "/srv", relative: "%252e%252e/etc") == "/srv/%2e%2e/etc")
        #expect(LocalPath.resolve(directory: "/", relative: "etc") == "/etc")
    }

    @Test func refusesEscapes() {
        let nasty = [
            "..", "../etc/passwd", "a/../../etc/passwd", "a/..", "%2e%2e/etc", "%2E%2E%2Fetc",
            "a/%2e%2e/%2e%2e/x", "/etc/passwd", "%2fetc/passwd", "a\\..\\b", "a%5c..%5cb",
            "a%00.png", "a\u{0}b", "%0a", "a/\u{7f}", "", ".", "./", "//", "%", "%4", "%zz", "%c3%28",
            ".%2e/x", "%2e./x",
        ]
        for n in nasty {
            #expect(LocalPath.resolve(directory: "/srv/cache", relative: n) == nil, "\(n)")
        }
        #expect(LocalPath.resolve(directory: "", relative: "a") == nil)
    }
}
