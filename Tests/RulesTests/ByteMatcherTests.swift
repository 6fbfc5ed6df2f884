import Testing
@testable import Rules

/// `ByteMatcher` answers "does the pattern match somewhere" for the subset it
/// compiles; on printable ASCII it must give Swift Regex's answer, and it must
/// turn down what it does not understand.
@Suite struct ByteMatcherTests {
    static func next(_ state: inout UInt64) -> Int {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return Int(state >> 33)
    }

    static func regexMatches(_ pattern: String, _ text: String) throws -> Bool {
        try Regex(pattern).firstMatch(in: text) != nil
    }

    @Test func profilePatterns() throws {
        let cases: [(String, String, Bool)] = [
            (#"^http://[0-9.]+:8080/"#, "http://10.88.0.2:8080/1k", true),
            (#"^http://[0-9.]+:8080/"#, "http://a.test:8080/", false),
            (#"^https?://([a-z0-9-]+\.)*ads\.test/"#, "https://x.y.ads.test/banner", true),
            (#"^https?://([a-z0-9-]+\.)*ads\.test/"#, "http://ads.test.example/", false),
            (#"\.(png|jpe?g|gif)$"#, "http://a.test/x.jpeg", true),
            (#"\.(png|jpe?g|gif)$"#, "http://a.test/x.jpeg?y", false),
            (#"/api/v\d+/users/\w+$"#, "http://a.test/api/v12/users/bob_1", true),
            (#"^http://a\.test/(?:x|y){2,3}$"#, "http://a.test/xyx", true),
            (#"^http://a\.test/(?:x|y){2,3}$"#, "http://a.test/xyxy", false),
            (#"[^/]+\.test"#, "http://b.test", true),
            (#"a|^b"#, "cb", false),
            (#"a|^b"#, "bc", true),
            (#"(?i)^http://API\.test/[a-z]+$"#, "HTTP://api.TEST/Users", true),
            (#"(?i)[^a-c]"#, "ABC", false),
        ]
        for (pattern, text, expected) in cases {
            let matcher = try #require(ByteMatcher(pattern), "\(pattern) should compile")
            #expect(matcher.matches(text) == expected, "\(pattern) on \(text)")
            #expect(try Self.regexMatches(pattern, text) == expected, "Regex: \(pattern) on \(text)")
        }
    }

    @Test func outsideTheSubsetIsLeftToRegex() {
        for pattern in [#"a(?i)b"#, #"(?m)^a"#, #"(?-i)a"#, #"(?i:a)"#, #"(?is)a"#, #"a(?=b)"#, #"(a)\1"#, #"\bword"#, #"a\sb"#, #"[[:alpha:]]"#, #"[a-z--[aeiou]]"#,
                        #"[a&&b]"#, #"a{,3}"#, #"a{3,2}"#, #"a**"#, #"a++"#, #"\Qa.b\E"#, #"\x41"#, #"\t"#, "é", #"(?<n>a)"#,
                        #"a{1000}"#, #"(((a{100}){10}){10})"#, String(repeating: "(", count: 40) + "a" + String(repeating: ")", count: 40), "[]", "[a", "(a", "a)", "*a", #"\"#, "[z-a]"] {
            #expect(ByteMatcher(pattern) == nil, "\(pattern) should be left to Regex")
        }
    }

    @Test func textsThatAreNotPrintableASCIIAreLeftToRegex() throws {
        let matcher = try #require(ByteMatcher("a.b"))
        for text in ["a\nb", "a\rb", "a\u{0B}b", "a\u{0C}b", "aéb", "a\u{212A}b", "a\tb"] {
            #expect(matcher.matches(text) == nil, "\(text.debugDescription)")
        }
        #expect(matcher.matches("axb") == true)
    }

    /// Generated patterns over a small alphabet, against Regex on generated
    /// texts over the same alphabet: every construct of the subset, nested.
    @Test func agreesWithRegexOnGeneratedPatterns() throws {
        let alphabet = ["a", "b", ".", "/", "-", "1", "_", "A", ":", "B", "z", "Z"]
        var state: UInt64 = 0x5eed_b17e
        var compiled = 0, yes = 0, no = 0, failed = 0, refused = 0

        func atom(_ depth: Int) -> String {
            // Groups in groups at most two deep: Regex backtracks, and deeper
            // nests of quantifiers take it exponential time on some texts.
            switch Self.next(&state) % (depth >= 2 ? 6 : 9) {
            case 0:
                let letter = alphabet[Self.next(&state) % alphabet.count]
                return letter == "." ? "\\." : letter
            case 1: return "."
            case 2: return ["\\d", "\\w", "\\D", "\\W", "\\.", "\\/", "\\-"][Self.next(&state) % 7]
            case 3:
                let members = ["a-b", "0-9", "a", ".", "/", "\\d", "\\w", "-", "_", "A-Z", ":", "B", "Z-a", "y-z"]
                var text = Self.next(&state) % 3 == 0 ? "[^" : "["
                for _ in 0 ..< Self.next(&state) % 3 + 1 { text += members[Self.next(&state) % members.count] }
                return text + "]"
            case 4: return "^"
            case 5: return "$"
            case 6: return "(" + pattern(depth + 1) + ")"
            case 7: return "(?:" + pattern(depth + 1) + ")"
            default: return "(" + pattern(depth + 1) + "|" + pattern(depth + 1) + ")"
            }
        }
        func piece(_ depth: Int) -> String {
            let quantifiers = ["", "", "", "*", "+", "?", "{2}", "{1,}", "{0,2}", "*?", "+?", "{1,3}?"]
            let base = atom(depth)
            // Regex refuses a quantified anchor.
            if base == "^" || base == "$" { return base }
            // A group gets bounded quantifiers only: Regex backtracks, and "(a*)*"
            // takes it exponential time (the byte matcher is linear).
            if base.hasPrefix("(") { return base + ["", "?", "{2}", "{0,2}", "{1,3}?"][Self.next(&state) % 5] }
            return base + quantifiers[Self.next(&state) % quantifiers.count]
        }
        func pattern(_ depth: Int) -> String {
            var text = ""
            for _ in 0 ..< Self.next(&state) % (depth == 0 ? 4 : 2) + 1 { text += piece(depth) }
            return text
        }

        for _ in 0 ..< 3_000 {
            let source = (Self.next(&state) % 4 == 0 ? "(?i)" : "") + pattern(0)
            guard let regex = try? Regex(source) else { refused += 1; continue }
            guard let matcher = ByteMatcher(source) else { failed += 1; if failed < 40 { print("NOTCOMPILED \(source)") }; continue }
            compiled += 1
            for _ in 0 ..< 12 {
                var text = ""
                for _ in 0 ..< Self.next(&state) % 7 { text += alphabet[Self.next(&state) % alphabet.count] }
                let expected = try regex.firstMatch(in: text) != nil
                #expect(matcher.matches(text) == expected, "\(source) on \(text.debugDescription)")
                if expected { yes += 1 } else { no += 1 }
            }
        }
        #expect(compiled > 1_000 && failed * 20 < compiled, "\(compiled) generated patterns compiled, \(failed) not, \(refused) refused by Regex")
        #expect(yes > 2_000 && no > 2_000, "\(yes) matches, \(no) misses: too lopsided to tell")
    }

    /// CompiledRegex.matches through the byte path agrees with the regex, the
    /// text not ASCII included (it goes to Regex).
    @Test func compiledRegexAgrees() throws {
        let patterns = [#"^http://[0-9.]+:8080/"#, #"\.png$"#, #"^https?://([a-z]+\.)*test/"#, #"/v\d/"#, #"(?i)^HTTP://"#]
        let texts = ["http://10.0.0.1:8080/", "http://a.test/x.png", "https://a.b.test/", "http://x/v1/", "HTTP://A/",
                     "http://\u{212A}.test/", "http://a.test/x.pn\u{301}g", "http://1.2.3.4:8080"]
        for pattern in patterns {
            let regex = try CompiledRegex(pattern)
            for text in texts {
                #expect(regex.matches(text) == (try regex.regex.firstMatch(in: text) != nil), "\(pattern) on \(text)")
            }
        }
    }
}
