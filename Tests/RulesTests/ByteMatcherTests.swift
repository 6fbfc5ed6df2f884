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
        for pattern in [#"a(?i)b"#, #"(?m)^a"#, #"(?-i)a"#, #"(?i:a)"#, #"(?is)a"#, #"a(?=b)"#, #"(a)\1"#, #"\bword"#, #"[\S]"#, #"[\s-z]"#, #"[[:alpha:]]"#, #"[a-z--[aeiou]]"#,
                        #"[a&&b]"#, #"a{,3}"#, #"a{3,2}"#, #"a**"#, #"a++"#, #"\Qa.b\E"#, #"\x41"#, "é", #"(?<n>a)"#,
                        #"a{1000}"#, #"(((a{100}){10}){10})"#, String(repeating: "(", count: 40) + "a" + String(repeating: ")", count: 40), "[]", "[a", "(a", "a)", "*a", #"\"#, "[z-a]"] {
            #expect(ByteMatcher(pattern) == nil, "\(pattern) should be left to Regex")
        }
    }

    /// CompiledRegex makes no Regex at load for a pattern the byte matcher
    /// takes, so the byte matcher must take only what Regex accepts. Junk
    /// built from metacharacters, escapes and class syntax finds the corners
    /// (quantified anchors, "--" in a class, "[:...:]", "<{...}>").
    @Test func acceptsOnlyWhatRegexAccepts() {
        let pieces = ["a", "b", ".", "^", "$", "*", "+", "?", "{", "}", "{2}", "{1,3}", "{,2}", "{2,}", "{0}", "{0,0}", "{3,1}",
                      "(", ")", "(?:", "(?i)", "[", "]", "[^", "-", "\\", "\\d", "\\.", "\\w", "\\s", "\\S", "\\t", "\\b",
                      "\\-", "\\]", "\\[", "\\/", "\\Q", "\\E", "\\x41", "\\p{L}", "[:alpha:]", "|", "0", "9", ",", " ",
                      "/", ":", "a-z", "&", "&&", "--", "~", "~~", "#", "'", "=", "!", "<", ">", "@", "%", "_"]
        var state: UInt64 = 0xacce_97
        var accepted = 0
        for _ in 0 ..< 60_000 {
            var pattern = ""
            for _ in 0 ..< Self.next(&state) % 7 + 1 { pattern += pieces[Self.next(&state) % pieces.count] }
            guard ByteMatcher(pattern) != nil else { continue }
            accepted += 1
            #expect((try? Regex(pattern)) != nil, "the byte matcher took \(pattern.debugDescription), which Regex refuses")
        }
        #expect(accepted > 10_000, "only \(accepted) patterns taken: too few to tell")
    }

    @Test func textsThatAreNotPrintableASCIIAreLeftToRegex() throws {
        let matcher = try #require(ByteMatcher("a.b"))
        for text in ["a\nb", "a\rb", "a\u{0B}b", "a\u{0C}b", "aéb", "a\u{212A}b", "a\tb"] {
            #expect(matcher.matches(text) == nil, "\(text.debugDescription)")
        }
        #expect(matcher.matches("axb") == true)
    }

    /// Patterns over a small alphabet with every construct of the subset,
    /// nested, and texts over the same alphabet.
    struct Generator {
        static let alphabet = ["a", "b", ".", "/", "-", "1", "_", "A", ":", "B", "z", "Z", " "]
        var state: UInt64

        mutating func next() -> Int { ByteMatcherTests.next(&state) }

        mutating func atom(_ depth: Int) -> String {
            // Groups in groups at most two deep: Regex backtracks, and deeper
            // nests of quantifiers take it exponential time on some texts.
            switch next() % (depth >= 2 ? 6 : 9) {
            case 0:
                let letter = Self.alphabet[next() % Self.alphabet.count]
                return letter == "." ? "\\." : letter
            case 1: return "."
            case 2: return ["\\d", "\\w", "\\D", "\\W", "\\.", "\\/", "\\-", "\\s", "\\S", "\\h", "\\t"][next() % 11]
            case 3:
                let members = ["a-b", "0-9", "a", ".", "/", "\\d", "\\w", "-", "_", "A-Z", ":", "B", "Z-a", "y-z", "\\s", " ", "\\n"]
                var text = next() % 3 == 0 ? "[^" : "["
                for _ in 0 ..< next() % 3 + 1 { text += members[next() % members.count] }
                return text + "]"
            case 4: return "^"
            case 5: return "$"
            case 6: return "(" + pattern(depth + 1) + ")"
            case 7: return "(?:" + pattern(depth + 1) + ")"
            default: return "(" + pattern(depth + 1) + "|" + pattern(depth + 1) + ")"
            }
        }

        mutating func piece(_ depth: Int) -> String {
            let quantifiers = ["", "", "", "*", "+", "?", "{2}", "{1,}", "{0,2}", "*?", "+?", "{1,3}?", "??"]
            let base = atom(depth)
            // Regex refuses a quantified anchor.
            if base == "^" || base == "$" { return base }
            // A group gets bounded quantifiers only: Regex backtracks, and "(a*)*"
            // takes it exponential time (the byte matcher is linear).
            if base.hasPrefix("(") { return base + ["", "?", "{2}", "{0,2}", "{1,3}?", "??"][next() % 6] }
            return base + quantifiers[next() % quantifiers.count]
        }

        mutating func pattern(_ depth: Int = 0) -> String {
            var text = ""
            for _ in 0 ..< next() % (depth == 0 ? 4 : 2) + 1 { text += piece(depth) }
            return text
        }

        mutating func source() -> String { (next() % 4 == 0 ? "(?i)" : "") + pattern() }

        mutating func text(maximumLength: Int = 7) -> String {
            var text = ""
            for _ in 0 ..< next() % maximumLength { text += Self.alphabet[next() % Self.alphabet.count] }
            return text
        }
    }

    /// Generated patterns against Regex on generated texts: the same yes or no.
    @Test func agreesWithRegexOnGeneratedPatterns() throws {
        var generator = Generator(state: 0x5eed_b17e)
        var compiled = 0, yes = 0, no = 0, failed = 0, refused = 0
        for _ in 0 ..< 3_000 {
            let source = generator.source()
            guard let regex = try? Regex(source) else { refused += 1; continue }
            guard let matcher = ByteMatcher(source) else { failed += 1; if failed < 40 { print("NOTCOMPILED \(source)") }; continue }
            compiled += 1
            for _ in 0 ..< 12 {
                let text = generator.text()
                let expected = try regex.firstMatch(in: text) != nil
                #expect(matcher.matches(text) == expected, "\(source) on \(text.debugDescription)")
                if expected { yes += 1 } else { no += 1 }
            }
        }
        #expect(compiled > 1_000 && failed * 20 < compiled, "\(compiled) generated patterns compiled, \(failed) not, \(refused) refused by Regex")
        #expect(yes > 2_000 && no > 2_000, "\(yes) matches, \(no) misses: too lopsided to tell")
    }

    /// The same generated patterns: the match Regex finds first, every group
    /// of it, and every match of `matches(of:)` (Header Rewrite's replace),
    /// found over bytes.
    @Test func findsRegexsMatchesAndGroupsOnGeneratedPatterns() throws {
        var generator = Generator(state: 0x9a7_c0de)
        var compared = 0, withGroups = 0, several = 0
        func offsets(_ match: PatternMatch, in text: String) -> [String] {
            match.groups.map { group in
                group.map { "\(text.utf8.distance(from: text.startIndex, to: $0.startIndex))..<\(text.utf8.distance(from: text.startIndex, to: $0.endIndex))" } ?? "none"
            }
        }
        for _ in 0 ..< 3_000 {
            let source = generator.source()
            guard (try? Regex(source)) != nil, let compiled = try? CompiledRegex(source), let matcher = compiled.byteMatcher else { continue }
            #expect(matcher.capturesAreExact, "\(source): no unbounded repetition over a group is generated")
            for _ in 0 ..< 12 {
                let text = generator.text(maximumLength: 9)
                let expected = try compiled.regex.firstMatch(in: text).map(PatternMatch.init)
                let search = text.utf8.withContiguousStorageIfAvailable { matcher.firstMatch(bytes: $0) }
                let found: PatternMatch? = switch search {
                case let .match(slots)?: PatternMatch(slots: slots, in: text)
                case .noMatch?, .notForBytes?, nil: nil
                }
                #expect(search != .notForBytes)
                #expect(expected.map { offsets($0, in: text) } == found.map { offsets($0, in: text) }, "\(source) on \(text.debugDescription)")
                let all = text.matches(of: compiled.regex).map { offsets(PatternMatch($0), in: text) }
                #expect(compiled.allMatches(in: text).map { offsets($0, in: text) } == all, "all of \(source) on \(text.debugDescription)")
                compared += 1
                if let expected, expected.groups.dropFirst().contains(where: { $0 != nil }) { withGroups += 1 }
                if all.count > 1 { several += 1 }
            }
        }
        #expect(compared > 10_000 && withGroups > 2_000 && several > 2_000, "\(compared) compared, \(withGroups) with groups, \(several) with several matches")
    }

    /// Unbounded repetition over a group that can match nothing: Regex may
    /// run the body once more on nothing, which lock step cannot follow, so
    /// those groups come from Regex; the match is still found over bytes.
    @Test func groupsInLoopsOverNothingAreLeftToRegex() throws {
        let cases: [(String, String)] = [("(a*)*", "b"), ("(a|)*", "ab"), ("(a|b*)*c", "abbc"), ("x(?:(a)?)+", "xa"), ("(a*)+$", "aa")]
        for (source, text) in cases {
            let compiled = try CompiledRegex(source)
            let matcher = try #require(compiled.byteMatcher)
            #expect(!matcher.capturesAreExact, "\(source)")
            let expected = try #require(try compiled.regex.firstMatch(in: text))
            let found = try #require(compiled.firstMatch(in: text))
            #expect(found.range == expected.range && found.groups == PatternMatch(expected).groups, "\(source) on \(text)")
            #expect(compiled.allMatches(in: text).map(\.groups) == text.matches(of: compiled.regex).map { PatternMatch($0).groups })
        }
        // No match at all is known from bytes, so Regex is not asked.
        #expect(try CompiledRegex("(a|)*x").allMatches(in: "bbb").isEmpty)
        #expect(try CompiledRegex("(a|)*x").firstMatch(in: "bbb") == nil)
        for source in ["(a+)*", "(?:a*)*", "(a)*", "(a*)?", "(a*){2}", "((a)|b)+"] {
            #expect(try #require(ByteMatcher(source)).capturesAreExact, "\(source)")
        }
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
