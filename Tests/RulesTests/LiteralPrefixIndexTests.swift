import Testing
@testable import Rules

/// `LiteralPrefixIndex` must name exactly the lines that comparing each
/// line's prefix in turn (`CompiledRegex.cannotStart`) would leave, in
/// profile order; and the rewriters built on it must answer as a walk over
/// every line does.
@Suite struct LiteralPrefixIndexTests {
    static func next(_ state: inout UInt64) -> Int {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return Int(state >> 33)
    }

    /// What the index replaces: every line, each prefix compared in turn.
    static func oneByOne(_ prefixes: [[UInt8]], _ text: String) -> [Int] {
        prefixes.indices.filter { prefixes[$0].isEmpty || !CompiledRegex.cannotStart(text, with: prefixes[$0]) }
    }

    @Test func knownCases() {
        let prefixes: [[UInt8]] = ["http://a.test/", "", "http://a.test/v1/", "http://b.test/", "http://a.test/", "http://K.test/"].map { Array($0.utf8) }
        let index = LiteralPrefixIndex(prefixes: prefixes)
        #expect(index.candidates(for: "http://a.test/v1/x") == [0, 1, 2, 4])
        #expect(index.candidates(for: "http://a.test/") == [0, 1, 4])
        #expect(index.candidates(for: "http://a.test") == [1])
        #expect(index.candidates(for: "http://c.test/") == [1])
        #expect(index.candidates(for: "") == [1])
        // Not ASCII where prefixes go on: each of them is the regex's to decide.
        #expect(index.candidates(for: "http://\u{212A}.test/") == [0, 1, 2, 3, 4, 5])
        #expect(index.candidates(for: "http://a.test/\u{212A}") == [0, 1, 2, 4])
        let none = LiteralPrefixIndex(prefixes: [Array("http://x/".utf8)])
        #expect(none.candidates(for: "http://10.0.0.1/").isEmpty)
        #expect(LiteralPrefixIndex(prefixes: []).candidates(for: "http://a/").isEmpty)
    }

    /// Random prefixes from a few shared pieces (so they nest and branch), and
    /// texts built from the same pieces plus non-ASCII ones.
    @Test func agreesWithComparingEveryPrefix() {
        let pieces = ["http", "s", "://", "a", "b", ".test", "/", "v1", "K", "\u{212A}", "é", "e\u{301}", ""]
        var state: UInt64 = 0x5eed_1d3
        var nonEmptyAnswers = 0
        for _ in 0 ..< 300 {
            let count = Self.next(&state) % 12
            var prefixes: [[UInt8]] = []
            for _ in 0 ..< count {
                var prefix = ""
                for _ in 0 ..< Self.next(&state) % 5 { prefix += pieces[Self.next(&state) % pieces.count] }
                // Required prefixes are ASCII (CompiledRegex.literalPrefix stops before anything else).
                prefixes.append(Array(prefix.utf8.filter { $0 < 0x80 }))
            }
            let index = LiteralPrefixIndex(prefixes: prefixes)
            for _ in 0 ..< 40 {
                var text = ""
                if !prefixes.isEmpty, Self.next(&state) % 2 == 0 {
                    let base = prefixes[Self.next(&state) % prefixes.count]
                    text = String(decoding: base.prefix(Self.next(&state) % (base.count + 1)), as: UTF8.self)
                }
                for _ in 0 ..< Self.next(&state) % 4 { text += pieces[Self.next(&state) % pieces.count] }
                let expected = Self.oneByOne(prefixes, text)
                #expect(index.candidates(for: text) == expected, "\(prefixes.map { String(decoding: $0, as: UTF8.self) }) on \(text)")
                if !expected.isEmpty { nonEmptyAnswers += 1 }
            }
        }
        #expect(nonEmptyAnswers > 3_000, "only \(nonEmptyAnswers) texts had candidates: too few to tell")
    }

    static let patterns = [
        #"^http://svc1\.test/(.*)"#, #"^http://svc2\.test/(.*)"#, #"^http://svc\d+\.test/"#, #"^http://svc1\.test/v1/(.*)"#,
        #"^http://K\.test/"#, #"\.png$"#, #"^https?://a\.test/"#, #"^http://a\.test/x"#, #"^http://([a-z]+\.)*test/"#,
        // Ad-blocking lines, whose prefix rules nothing out: the required literal does.
        #"^https?://([a-z]+\.)*ads\.test/"#, #"(?i)/BANNER/"#, #"^https?://[^/]+/v1/x"#,
    ]
    static let urlPieces = ["svc1.test/", "svc2.test/", "a.test/", "K.test/", "\u{212A}.test/", "svc1.test/v1/", "svc1", "svc2", "svc12", ".test/", "v1/", "a", "x", "K", "\u{212A}", "y.png", "é", "b.",
                            "ads.test/", "x.ads.test/", "banner/", "BaNNer/", "/"]

    static func randomURL(_ state: inout UInt64) -> String {
        // Mostly a scheme first, or few URLs would match anything.
        var url = ["", "http://", "http://", "http://", "https://"][Self.next(&state) % 5]
        for _ in 0 ..< Self.next(&state) % 4 + 1 { url += urlPieces[Self.next(&state) % urlPieces.count] }
        return url
    }

    /// The first line whose regex matches, found without the index.
    @Test func urlRewriterAndMapLocalAnswerAsAWalkOverEveryLine() throws {
        let rewrites = try Self.patterns.enumerated().map { i, pattern in
            URLRewrite(regex: try CompiledRegex(pattern), replacement: "http://to\(i).test/$1", mode: .header, line: i + 1)
        }
        let mapLocals = try Self.patterns.enumerated().map { i, pattern in
            MapLocal(regex: try CompiledRegex(pattern), data: .text("\(i)"), statusCode: 200, headers: [], line: i + 1)
        }
        let rewriter = URLRewriter(rewrites: rewrites)
        let resolver = MapLocalResolver(entries: mapLocals)
        var state: UInt64 = 0x5eed_77
        var matched = 0
        for _ in 0 ..< 3_000 {
            let url = Self.randomURL(&state)
            let first = try rewrites.first { try $0.regex.regex.firstMatch(in: url) != nil }
            #expect(rewriter.rewrite(url: url).line == first?.line, "\(url)")
            #expect(resolver.resolve(url: url)?.line == first?.line, "\(url)")
            if first != nil { matched += 1 }
        }
        #expect(matched > 500, "only \(matched) URLs matched a line: too few to tell")
    }

    /// Every line that matches applies, in profile order, for its direction only.
    @Test func headerRewriterAppliesTheSameLinesInTheSameOrder() throws {
        let rewrites = try Self.patterns.enumerated().map { i, pattern in
            HeaderRewrite(direction: i % 3 == 0 ? .response : .request, regex: try CompiledRegex(pattern),
                          operation: .add(name: "X-Line", value: "\(i + 1)"), line: i + 1)
        }
        let rewriter = HeaderRewriter(rewrites: rewrites)
        var state: UInt64 = 0x5eed_78
        for _ in 0 ..< 2_000 {
            let url = Self.randomURL(&state)
            for direction in [HeaderRewriteDirection.request, .response] {
                let expected = try rewrites.filter { try $0.direction == direction && $0.regex.regex.firstMatch(in: url) != nil }.map(\.line)
                #expect(rewriter.matching(direction, url: url).map { rewrites[$0].line } == expected, "\(url)")
                var headers: [HeaderField] = []
                #expect(rewriter.apply(direction, url: url, to: &headers) == expected, "\(url)")
                #expect(headers.map(\.value) == expected.map(String.init), "\(url)")
            }
        }
    }

    /// A profile without lines for a direction matches none there.
    @Test func aDirectionWithoutLinesMatchesNothing() throws {
        let rewriter = HeaderRewriter(rewrites: [HeaderRewrite(direction: .request, regex: try CompiledRegex(".*"),
                                                               operation: .delete(name: "X-A"), line: 3)])
        #expect(rewriter.matching(.response, url: "http://a.test/").isEmpty)
        #expect(rewriter.matching(.request, url: "http://a.test/") == [0])
    }

    /// `matchesEverything` skips the regex only for spellings that match any text.
    @Test func thePatternsThatMatchEverythingDo() throws {
        let texts = ["", "a", "\n", "a\nb", "\r\n", "http://a.test/é", "\u{212A}", "e\u{301}", " "]
        for source in CompiledRegex.everywhere {
            let regex = try CompiledRegex(source)
            #expect(regex.matchesEverything, "\(source)")
            for text in texts {
                #expect(try regex.regex.firstMatch(in: text) != nil, "\(source) on \(text.debugDescription)")
            }
        }
        for source in [".+", "^.*$", "^$", "a*", "(.*)$", "^.", ".*x"] {
            #expect(!(try CompiledRegex(source)).matchesEverything, "\(source)")
        }
    }

    @Test func statisticsByHostCountEveryRequestForDotStar() throws {
        let all = StatisticsDefinition(name: "all", regex: try CompiledRegex(".*"), key: .host, line: 1)
        #expect(StatisticsBook.key(for: all, url: "http://a.test/x", host: "a.test") == "a.test")
        #expect(StatisticsBook.key(for: all, url: "", host: "") == "")
        let some = StatisticsDefinition(name: "v1", regex: try CompiledRegex(#"^http://a\.test/v1/"#), key: .host, line: 1)
        #expect(StatisticsBook.key(for: some, url: "http://a.test/v1/x", host: "a.test") == "a.test")
        #expect(StatisticsBook.key(for: some, url: "http://a.test/v2/x", host: "a.test") == nil)
        let captured = StatisticsDefinition(name: "api", regex: try CompiledRegex(#"^http://a\.test/(\w+)"#), key: .capture(1), line: 1)
        #expect(StatisticsBook.key(for: captured, url: "http://a.test/users/1", host: "a.test") == "users")
        #expect(StatisticsBook.key(for: captured, url: "http://b.test/users/1", host: "b.test") == nil)
    }
}
