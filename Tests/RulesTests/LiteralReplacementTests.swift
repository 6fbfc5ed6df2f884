import Testing
@testable import Rules

/// Plain-text [Body Rewrite] pairs, replaced over bytes: which regexes are
/// plain text, and the same answer as `Regex` on any body.
struct LiteralReplacementTests {
    func literal(_ source: String, _ replacement: String = "X") -> LiteralReplacement? {
        LiteralReplacement(source: source, template: URLTemplate(replacement))
    }

    @Test func plainTextIsRecognized() {
        #expect(literal("false")?.needle == Array("false".utf8))
        #expect(literal(#"https://www\.example\.test/"#)?.needle == Array("https://www.example.test/".utf8))
        #expect(literal(#"\"debug\":false"#)?.needle == Array(#""debug":false"#.utf8))
        #expect(literal("a b")?.needle == Array("a b".utf8))
        for regex in ["a.b", #"\d"#, #"\n"#, "^x", "x$", "a*", "(a)", "[ab]", "a|b", "a{2}", "(?i)a", "é", "a\\", "", "tab\there"] {
            #expect(literal(regex) == nil, "\(regex)")
        }
        #expect(literal("abc", "<$0>")?.replacement == Array("<abc>".utf8))
    }

    /// Against `Regex` (through the pair's compiled pattern) on texts built
    /// from pieces where bytes and Characters part ways: accents, combining
    /// marks, CRLF, CJK. A seeded generator; each text is a few pieces.
    @Test func agreesWithRegex() throws {
        let pieces = ["false", "fal", "se", "a", " ", "\n", "\r\n", "é", "e", "\u{301}", "中", "\u{600}", "\"", "falsefalse"]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        for source in ["false", "e", "a", #"\""#, "se"] {
            let pair = try BodyReplacement(source: source, replacement: "<$0>")
            let template = URLTemplate(pair.replacement)
            let bytes = try #require(LiteralReplacement(source: source, template: template))
            var fastAnswers = 0
            for _ in 0 ..< 400 {
                let text = (0 ..< 1 + next(8)).map { _ in pieces[next(pieces.count)] }.joined()
                let byRegex = Array(HeaderRewriter.replaceAll(in: text, pattern: pair.pattern, with: template).utf8)
                guard let fast = bytes.replaceAll(in: Array(text.utf8)) else { continue }
                fastAnswers += 1
                #expect(fast == byRegex, "\(source) in \(text.debugDescription)")
            }
            #expect(fastAnswers > 100, "\(source)")
        }
    }
}
