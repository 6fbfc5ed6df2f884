import Testing
@testable import Rules

/// [Body Rewrite]: Surge's lines, read and applied.
struct BodyRewriteTests {
    func rewriter(_ lines: String) throws -> (Profile, BodyRewriter) {
        let profile = try loadProfile("[Body Rewrite]\n" + lines + "\n[Rule]\nFINAL,DIRECT\n").get()
        return (profile, BodyRewriter(profile))
    }

    func apply(_ rewriter: BodyRewriter, _ direction: HeaderRewriteDirection, url: String, to body: String) -> String? {
        rewriter.apply(rewriter.matching(direction, url: url), to: Array(body.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func linesAreReadWithTheirPairsInOrder() throws {
        let (profile, _) = try rewriter("""
        http-response ^http://api\\.test/ "\\"debug\\":false" "\\"debug\\":true" ^x$ ""
        http-request ^http://api\\.test/upload token=([0-9]+) secret=$1
        """)
        #expect(profile.bodyRewrites.map(\.description) == [
            #"http-response ^http://api\.test/ "\"debug\":false" "\"debug\":true" "^x$" """#,
            #"http-request ^http://api\.test/upload "token=([0-9]+)" "secret=$1""#,
        ])
        #expect(profile.bodyRewrites.map(\.line) == [2, 3])
        #expect(profile.warnings.isEmpty)
    }

    /// Pairs apply in order, every match of each, and every matching line after the one before.
    @Test func everyMatchingLineAppliesInProfileOrder() throws {
        let (_, rewriter) = try rewriter("""
        http-response ^http://api\\.test/ a b b c
        http-response ^http://api\\.test/v1 c d
        http-response ^http://other\\.test/ d e
        """)
        #expect(apply(rewriter, .response, url: "http://api.test/v1/x", to: "aaxb") == "ddxd")
        #expect(apply(rewriter, .response, url: "http://api.test/v2", to: "aaxb") == "ccxc")
        #expect(apply(rewriter, .request, url: "http://api.test/v1/x", to: "aaxb") == nil)
    }

    /// Surge: ^ and $ match at each line of the body; $1 names a group.
    @Test func anchorsMatchAtEveryLineAndGroupsAreReplaced() throws {
        let (_, rewriter) = try rewriter(#"http-response ^http://a\.test/ "^(\w+)=on$" "$1=off""#)
        #expect(apply(rewriter, .response, url: "http://a.test/", to: "x=on\ny=on\nz=one\n") == "x=off\ny=off\nz=one\n")
    }

    /// An empty body can get content (Surge's ^$ example).
    @Test func anEmptyBodyCanBeGivenOne() throws {
        let (_, rewriter) = try rewriter(#"http-response ^http://a\.test/ ^$ "{}""#)
        #expect(apply(rewriter, .response, url: "http://a.test/", to: "") == "{}")
    }

    /// Nothing changed, or not text: nil, so the body goes on as it came.
    @Test func anUnchangedOrBinaryBodyIsLeftAlone() throws {
        let (_, rewriter) = try self.rewriter(#"http-response ^http://a\.test/ a b"#)
        #expect(apply(rewriter, .response, url: "http://a.test/", to: "xyz") == nil)
        let binary: [UInt8] = [0x61, 0xFF, 0xFE, 0x61]
        #expect(rewriter.apply(rewriter.matching(.response, url: "http://a.test/"), to: binary) == nil)
        // Canonically equivalent is not the same bytes: é composed, then decomposed.
        let (_, decomposer) = try self.rewriter("http-response ^http://a\\.test/ \u{E9} e\u{301}")
        #expect(decomposer.apply(decomposer.matching(.response, url: "http://a.test/"), to: Array("\u{E9}".utf8)) == Array("e\u{301}".utf8))
    }

    /// A body held across a reload is rewritten by the profile that matched
    /// it: the selection keeps its rewriter (its indices mean nothing to the
    /// new one, which here has a single line).
    @Test func aSelectionKeepsTheRewriterThatMadeIt() throws {
        let (_, old) = try rewriter("http-response ^http://b\\.test/ x y\nhttp-response ^http://a\\.test/ a b")
        let selection = try #require(old.select(.response, url: "http://a.test/"))
        #expect(selection.matched == [1])
        _ = try rewriter("http-response ^http://a\\.test/ a c")
        #expect(selection.apply(to: Array("a".utf8)) == Array("b".utf8))
        #expect(old.select(.request, url: "http://a.test/") == nil)
    }

    @Test func surgesJQLinesAreWarnings() throws {
        let (profile, rewriter) = try rewriter("""
        http-response-jq ^http://a\\.test/ '.debug = true'
        http-response ^http://a\\.test/ a b
        """)
        #expect(profile.warnings.map { "\($0.line): \($0.message) | \($0.hint)" } == [
            "2: http-response-jq lines have no effect in Sluice: it runs no jq | write regex pairs instead: http-response URLREGEX REGEX REPLACEMENT",
        ])
        #expect(profile.bodyRewrites.count == 1)
        #expect(!rewriter.matching(.response, url: "http://a.test/").isEmpty)
    }

    static let mistakes: [ErrorCase] = [
        ErrorCase(kind: "unknown body rewrite direction", profile: withFinal("[Body Rewrite]\nhttp-respones ^http://a\\.test/ a b"),
                  errors: [(2, "unknown body rewrite direction 'http-respones'", "did you mean http-response?")]),
        ErrorCase(kind: "body rewrite without a pair", profile: withFinal("[Body Rewrite]\nhttp-response ^http://a\\.test/"),
                  errors: [(2, "[Body Rewrite] line is missing fields",
                            "write DIRECTION URLREGEX REGEX REPLACEMENT [REGEX REPLACEMENT ...], e.g. http-response ^http://api\\.test/v1/config false true")]),
        ErrorCase(kind: "body regex without a replacement", profile: withFinal("[Body Rewrite]\nhttp-response ^http://a\\.test/ a b c"),
                  errors: [(2, "regex 'c' has no replacement",
                            "each REGEX takes a REPLACEMENT after it; write \"\" to delete what it matches, and quote one that contains blanks")]),
        ErrorCase(kind: "body regex that does not compile", profile: withFinal("[Body Rewrite]\nhttp-response ^http://a\\.test/ (a b"),
                  errors: [(2, "regex \"(a\" does not compile", "expected ')'")]),
        ErrorCase(kind: "body replacement naming a missing group", profile: withFinal("[Body Rewrite]\nhttp-response ^http://a\\.test/ (a) $2"),
                  errors: [(2, "'$2' refers to $2 but the regex has 1 capture group", "add parentheses around the part of \"(a)\" to reuse, or use $1...$1")]),
    ]

    @Test(arguments: mistakes)
    func eachMistakeIsReportedExactly(_ item: ErrorCase) {
        guard case let .failure(failure) = loadProfile(item.profile) else {
            Issue.record("\(item.kind): the profile loaded")
            return
        }
        #expect(failure.errors.map { "\($0.line) | \($0.message) | \($0.hint)" } == item.errors.map { "\($0.0) | \($0.1) | \($0.2)" }, "\(item.kind)")
    }
}
