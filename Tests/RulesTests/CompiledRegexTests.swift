import Testing
@testable import Rules

/// `CompiledRegex` skips the regex when a text cannot begin with the
/// pattern's literal prefix; that must never change an answer.
@Suite struct CompiledRegexTests {
    /// A pattern the byte matcher answers lets its Regex go at load; a text
    /// that is not ASCII makes it again, once, whichever thread asks first.
    @Test func aRegexLetGoAtLoadIsMadeAgainWhenNeeded() async throws {
        let regex = try CompiledRegex(#"^http://a\.test/(\w+)"#)
        #expect(regex.byteMatcher?.capturesAreExact == true)
        let answers = await withTaskGroup(of: String?.self) { group in
            for _ in 0 ..< 8 { group.addTask { regex.firstMatch(in: "http://a.test/café").flatMap { $0.groups[1].map(String.init) } } }
            var all: [String?] = []
            for await answer in group { all.append(answer) }
            return all
        }
        #expect(answers == Array(repeating: "café", count: 8))
        #expect(regex.matches("http://a.test/x") && !regex.matches("http://b.test/x"))
    }

    @Test func literalPrefixes() {
        let cases: [(String, String)] = [
            (#"^http://api\.test/v1/config$"#, "http://api.test/v1/config"),
            (#"^http://([a-z0-9-]+\.)*test/"#, "http://"),
            (#"^https?://a\.test/"#, "http"),
            (#"^http://ab*c"#, "http://a"),
            (#"^http://ab+c"#, "http://ab"),
            (#"^http://a{2}"#, "http://"),
            (#"^http://a\d"#, "http://a"),
            (#"^http://a|^https://b"#, ""),
            (#"^(?i)http://a"#, ""),
            (#"^http://a(?=b)"#, ""),
            (#"http://a"#, ""),
            (#".*"#, ""),
            (#"^\Qa.b\E"#, ""),
            (#"^http://é"#, "http://"),
            (#"^http://a\.test/x\-y\/z"#, "http://a.test/x-y/z"),
        ]
        for (pattern, prefix) in cases {
            #expect(CompiledRegex.literalPrefix(pattern) == Array(prefix.utf8), "\(pattern)")
        }
    }

    @Test func aTextThatIsNotASCIIWhereItDiffersGoesToTheRegex() throws {
        // U+212A KELVIN SIGN is canonically equivalent to "K": only the regex may say.
        let regex = try CompiledRegex(#"^http://K\.test/"#)
        #expect(!CompiledRegex.cannotStart("http://\u{212A}.test/", with: regex.requiredPrefix))
        #expect(CompiledRegex.cannotStart("http://L.test/", with: regex.requiredPrefix))
        #expect(CompiledRegex.cannotStart("http://", with: regex.requiredPrefix))
        #expect(regex.matches("http://K.test/x"))
    }

    /// The shortcut against the regex alone, on URLs that share more or less
    /// of each pattern's prefix.
    @Test func theShortcutNeverChangesAnAnswer() throws {
        let patterns = [
            #"^http://api\.test/v1/([a-z]+)"#, #"^http://([a-z0-9-]+\.)*test/"#, #"^https?://a\.test/"#, #"^http://ab*c"#,
            #"^http://ab+c"#, #"^http://a{2}x"#, #"^http://a\d"#, #"^http://a\.test/x\-y"#, #"^http://K\.test/"#,
        ]
        let pieces = ["http", "s", "://", "api", ".test", "/v1/", "x", "a", "b", "c", "aa", "K", "\u{212A}", "-y", "1", "é", "e\u{301}", "/",
                      "v1/abc", "aax", "a.test/", "bc", "bbc", "ax", "a1", "x-y", "K.test/", "\u{212A}.test/", "://a.test/"]
        var state: UInt64 = 0x5eed_0002
        for pattern in patterns {
            let regex = try CompiledRegex(pattern)
            #expect(!regex.requiredPrefix.isEmpty, "\(pattern)")
            var matched = 0
            for _ in 0 ..< 2_000 {
                // Some of the prefix, then anything: the texts that nearly match are the ones that matter.
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let kept = state >> 63 == 0 ? regex.requiredPrefix.count : Int(state >> 33) % (regex.requiredPrefix.count + 1)
                var text = String(decoding: regex.requiredPrefix.prefix(kept), as: UTF8.self)
                state = state &* 6364136223846793005 &+ 1442695040888963407
                for _ in 0 ..< Int(state >> 62) + 1 {
                    state = state &* 6364136223846793005 &+ 1442695040888963407
                    text += pieces[Int(state >> 33) % pieces.count]
                }
                let plain = try regex.regex.firstMatch(in: text)
                let fast = regex.firstMatch(in: text)
                #expect(plain?.range == fast?.range, "\(pattern) on \(text)")
                if plain != nil { matched += 1 }
            }
            #expect(matched > 20, "\(pattern) matched \(matched) texts: too few to tell")
        }
    }

    /// A pattern that is "^" and a literal answers `matches` from its bytes;
    /// that must be the regex's answer, also where Characters straddle the
    /// literal's end (a combining mark) or stand in for it (KELVIN SIGN).
    @Test func aPrefixOnlyPatternAnswersAsItsRegex() throws {
        let prefixOnly = [#"^http://api\.test/"#, #"^http://K\.test"#, #"^http://a\.test/x\-y"#, #"^a"#]
        let notPrefixOnly = [#"^http://a\.test/$"#, #"^http://ab+"#, #"^http://a\d"#, #"http://a"#, #"^http://ab?"#, #"^"#, #"^http://a(b)"#]
        for pattern in notPrefixOnly { #expect(!(try CompiledRegex(pattern)).isPrefixOnly, "\(pattern)") }
        let pieces = ["http://", "api", ".test/", "K", "\u{212A}", ".test", "a", "\u{301}", "x-y", "/", "é", "\r\n", "\n", "q"]
        var state: UInt64 = 0x5eed_0003
        for pattern in prefixOnly {
            let regex = try CompiledRegex(pattern)
            #expect(regex.isPrefixOnly, "\(pattern)")
            var matched = 0, straddled = 0
            for _ in 0 ..< 2_000 {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                var text = state >> 63 == 0 ? String(decoding: regex.requiredPrefix, as: UTF8.self) : ""
                state = state &* 6364136223846793005 &+ 1442695040888963407
                for _ in 0 ..< Int(state >> 62) + 1 {
                    state = state &* 6364136223846793005 &+ 1442695040888963407
                    text += pieces[Int(state >> 33) % pieces.count]
                }
                let plain = try regex.regex.firstMatch(in: text) != nil
                #expect(regex.matches(text) == plain, "\(pattern) on \(text.debugDescription)")
                if plain { matched += 1 }
                if text.utf8.starts(with: regex.requiredPrefix), !plain { straddled += 1 }
            }
            #expect(matched > 200, "\(pattern) matched \(matched) texts: too few to tell")
            // Texts that begin with the bytes yet do not match (a mark joined the last Character): the case that needs care.
            #expect(straddled > 20, "\(pattern): only \(straddled) straddling texts")
        }
    }
}
