import Testing
@testable import Rules

/// The URL-REGEX index rules a line out only when its required literal is
/// absent; that literal must be in every text the regex matches, and the
/// index must find exactly the literals a plain search finds.
@Suite struct RequiredLiteralTests {
    @Test func literalsOfProfilePatterns() {
        let cases: [(String, String?)] = [
            (#"^https?://([a-z0-9-]+\.)*adserver7\.test/"#, "adserver7.test/"),
            (#"^http://cdn\.test/banner"#, "http://cdn.test/banner"),
            (#"\.tracker\.test/pixel"#, ".tracker.test/pixel"),
            (#"(?i)^HTTP://Api\.test/"#, "http://api.test/"),
            (#"/ads/(\d+)/img"#, "/ads/"),
            (#"^https?://[^/]+/"#, nil),
            (#"^http://[^/]+/v1/"#, "/v1/"),
            (#"\.(png|gif)$"#, nil),
            (#"ab(cd|ef)gh"#, nil),
            (#"(?:abc)+d"#, "abc"),
            (#"(?:abc)?d"#, nil),
            (#"a\bc"#, nil),
        ]
        for (pattern, expected) in cases {
            #expect(ByteMatcher.requiredLiteral(pattern).map { String(decoding: $0, as: UTF8.self) } == expected, "\(pattern)")
        }
    }

    /// Generated patterns (every construct of the byte matcher's subset) on
    /// generated texts: whenever Regex matches, the text holds the literal.
    @Test func everyMatchHoldsTheLiteral() throws {
        var generator = ByteMatcherTests.Generator(state: 0x11_7e2a1)
        var withLiteral = 0, matched = 0
        for _ in 0 ..< 3_000 {
            let source = generator.source()
            guard let regex = try? Regex(source), let literal = ByteMatcher.requiredLiteral(source, minimumLength: 1) else { continue }
            withLiteral += 1
            for _ in 0 ..< 12 {
                let text = generator.text(maximumLength: 10)
                guard try regex.firstMatch(in: text) != nil else { continue }
                matched += 1
                let lowered = Array(text.utf8).map(LiteralAutomaton.lower)
                let holds = lowered.count >= literal.count && (0 ... lowered.count - literal.count).contains { Array(lowered[$0 ..< $0 + literal.count]) == literal }
                #expect(holds, "\(source) matched \(text.debugDescription) without \(String(decoding: literal, as: UTF8.self).debugDescription)")
            }
        }
        #expect(withLiteral > 500 && matched > 500, "\(withLiteral) patterns with a literal, \(matched) matches")
    }

    /// The index against a plain case-insensitive search, on random literals and texts.
    @Test func indexFindsWhatAPlainSearchFinds() {
        var state: UInt64 = 0xfeed
        func next(_ n: Int) -> Int { ByteMatcherTests.next(&state) % n }
        let alphabet = Array("abAB./-x".utf8)
        for _ in 0 ..< 200 {
            var index = LiteralAutomaton()
            var literals: [[UInt8]] = []
            var owner = 0
            for _ in 0 ..< next(12) + 1 {
                owner += next(3) // some lines hold two runs: their owner is reported once
                let literal = (0 ..< next(4) + 3).map { _ in alphabet[next(alphabet.count)] }
                index.insert(literal, owner: owner)
                literals.append(literal)
            }
            index.build()
            for _ in 0 ..< 20 {
                let text = String(decoding: (0 ..< next(14)).map { _ in alphabet[next(alphabet.count)] }, as: UTF8.self)
                let lowered = Array(text.utf8).map(LiteralAutomaton.lower)
                var expected: [Int] = []
                for (i, literal) in literals.enumerated() {
                    let low = literal.map(LiteralAutomaton.lower)
                    if lowered.count >= low.count, (0 ... lowered.count - low.count).contains(where: { Array(lowered[$0 ..< $0 + low.count]) == low }),
                       expected.last != index.owners[i] {
                        expected.append(index.owners[i])
                    }
                }
                #expect(index.candidates(in: text) == expected, "\(text) against \(literals.map { String(decoding: $0, as: UTF8.self) })")
            }
        }
        // A text that is not ASCII is for the regexes to judge: no answer from the index.
        var index = LiteralAutomaton()
        index.insert(Array("kelvin".utf8), owner: 0)
        index.build()
        #expect(index.candidates(in: "\u{212A}elvin") == nil)
    }
}
