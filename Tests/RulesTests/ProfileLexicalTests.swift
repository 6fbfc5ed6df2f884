import Testing
import Wire
@testable import Rules

@Suite struct ProfileLexicalTests {
    @Test func byteOrderMarkAndCRLFAreAccepted() throws {
        let text = "\u{FEFF}[General]\r\nloglevel = debug\r\n\r\n[Rule]\r\nDOMAIN,a.test,REJECT\r\nFINAL,DIRECT\r\n"
        let profile = try loadProfile(text).get()
        #expect(profile.general.logLevel == .debug)
        #expect(profile.rules == [RuleDefinition(line: 5, condition: .domain("a.test"), policy: "REJECT")])
        #expect(profile.finalRule == FinalRule(policy: "DIRECT", line: 6))
    }

    @Test func mixedLineEndsCountLinesAlike() throws {
        let text = "[Rule]\nDOMAIN,a.test,REJECT\r\nDOMAIN,b.test,REJECT\nFINAL,DIRECT"
        let profile = try loadProfile(text).get()
        #expect(profile.rules.map(\.line) == [2, 3])
        #expect(profile.finalRule.line == 4)
    }

    @Test func theByteOrderMarkIsNotPartOfTheFirstColumn() {
        guard case let .failure(failure) = loadProfile("\u{FEFF}[Rules]\n[Rule]\nFINAL,DIRECT\n") else { Issue.record("loaded"); return }
        #expect(failure.errors.map(\.message) == ["unknown section [Rules]"])
        #expect(failure.errors[0].column == 1)
    }

    @Test func commentsStartALineOnly() throws {
        let text = """
        # hash comment
        ; semicolon comment
        // slashes comment
        [Rule]
            # indented comment
        \t; tab-indented comment
        URL-REGEX,^http://a\\.test/#fragment;x//y,REJECT
        FINAL,DIRECT
        """
        let profile = try loadProfile(text).get()
        // '#', ';' and '//' inside the line are part of the regex.
        #expect(profile.rules.map(\.condition) == [.urlRegex(try compiledRegex("^http://a\\.test/#fragment;x//y"))])
    }

    @Test func quotesKeepOnlyTwoEscapes() throws {
        let text = #"""
        [Proxy]
        p = http, proxy.test, 3128, username=u, password="a\"b\\c\d,e"
        [Rule]
        DOMAIN-REGEX,"^a\.test\\?$",p
        FINAL,DIRECT
        """#
        let profile = try loadProfile(text).get()
        // \" is a quote, \\ a backslash, \d stays as written.
        #expect(profile.proxies[0].server?.password == #"a"b\c\d,e"#)
        #expect(profile.rules[0].condition == .domainRegex(try compiledRegex(#"^a\.test\?$"#)))
    }

    @Test func quotedCommasAndParenthesesDoNotSplit() throws {
        let text = #"""
        [Proxy]
        deny = reject, status-code=451, body="No, not here (legal)"
        [Rule]
        URL-REGEX,"^http://a\.test/(x,y)",deny
        URL-REGEX,^http://b\.test/(x|y),deny
        OR,((DOMAIN,a.test),(AND,((METHOD,PUT),(DEST-PORT,8000-8100)))),deny
        FINAL,DIRECT
        """#
        let profile = try loadProfile(text).get()
        #expect(profile.proxies[0].kind == .reject(status: 451, body: "No, not here (legal)"))
        #expect(profile.rules.map(\.condition) == [
            .urlRegex(try compiledRegex(#"^http://a\.test/(x,y)"#)),
            .urlRegex(try compiledRegex(#"^http://b\.test/(x|y)"#)),
            .or([.domain("a.test"), .and([.method("PUT"), .destinationPort(PortRange(8000, 8100))])]),
        ])
    }

    @Test func blankSectionsSplitOnRunsOfBlanks() throws {
        let text = "[Header Rewrite]\nhttp-request \t  ^http://a\\.test/   header-add\tX-Note  \"two  words\"\n[Rule]\nFINAL,DIRECT\n"
        let profile = try loadProfile(text).get()
        #expect(profile.headerRewrites == [
            HeaderRewrite(direction: .request, regex: try compiledRegex("^http://a\\.test/"), operation: .add(name: "X-Note", value: "two  words"), line: 2),
        ])
    }

    @Test func blanksAroundCommasAndEqualsAreIgnored() throws {
        let text = "[Proxy]\n  p   =   socks5 ,  proxy.test ,1080 ,  username = u , password= \"p w\"  \n[Rule]\nFINAL , p\n"
        let profile = try loadProfile(text).get()
        #expect(profile.proxies[0].server == ProxyServer(host: "proxy.test", port: 1080, username: "u", password: "p w"))
        #expect(profile.finalRule.policy == "p")
    }

    @Test func namesMayBeUsedBeforeTheyAreDefined() throws {
        let text = """
        [Rule]
        DOMAIN,a.test,late-group
        FINAL,late-proxy
        [Proxy Group]
        late-group = select, late-proxy, DIRECT
        [Proxy]
        late-proxy = socks5, 10.0.0.1, 1080
        """
        let profile = try loadProfile(text).get()
        #expect(profile.policy(named: "late-group") != nil)
        #expect(profile.policy(named: "late-proxy") != nil)
    }

    @Test func ruleTypesAreCaseInsensitiveAndAliasesWork() throws {
        let text = "[Rule]\ndomain-suffix,Ads.Test.,REJECT\nDST-PORT,<1024,DIRECT\nSRC-PORT,>1023,DIRECT\nDEST-PORT,<=80,DIRECT\nPROTOCOL,https,DIRECT\nMATCH,DIRECT\n"
        let profile = try loadProfile(text).get()
        #expect(profile.rules.map(\.condition) == [
            .domainSuffix("ads.test"),
            .destinationPort(PortRange(0, 1023)),
            .sourcePort(PortRange(1024, 65535)),
            .destinationPort(PortRange(0, 80)),
            .protocol(.tls),
        ])
        #expect(profile.finalRule.policy == "DIRECT")
    }

    @Test func relativePathsResolveAgainstTheProfilesFolder() throws {
        let text = """
        [Map Local]
        ^http://a\\.test/(.*)$ data-type=dir data=./mocks/../cache
        ^http://b\\.test/$ data=/srv/b.json
        ^http://c\\.test/$ data=c.json
        [Capture]
        har = logs/flows.har
        [Rule]
        FINAL,DIRECT
        """
        let profile = try loadProfile(text).get()
        #expect(profile.mapLocals.map(\.data) == [.directory("/etc/sluice/cache"), .file("/srv/b.json"), .file("/etc/sluice/c.json")])
        #expect(profile.capture.harPath == "/etc/sluice/logs/flows.har")
    }

    /// `$N` is one digit, as in Surge: `$12` is group 1 then "2", and `$0` the whole match.
    @Test func replacementReferencesAreOneDigit() throws {
        let text = "[URL Rewrite]\n^http://a\\.test/(.*) http://b.test/$12?from=$0 307\n[Rule]\nFINAL,DIRECT\n"
        let profile = try loadProfile(text).get()
        #expect(profile.urlRewrites.map(\.replacement) == ["http://b.test/$12?from=$0"])
    }

    @Test func base64AndTinyGIF() throws {
        let text = "[Map Local]\n^http://a\\.test/$ data-type=base64 data=\"aGVs bG8=\"\n^http://b\\.test/$ data-type=tiny-gif\n[Rule]\nFINAL,DIRECT\n"
        let profile = try loadProfile(text).get()
        #expect(profile.mapLocals.map(\.data) == [.base64(Array("hello".utf8)), .tinyGIF])
    }

    @Test func fieldsKnowTheirColumns() throws {
        let fields = try ProfileLexer.commaFields(#"A, "b,c" ,(d,e)"#[...], column: 5).get()
        #expect(fields.map(\.raw) == ["A", #""b,c""#, "(d,e)"])
        #expect(fields.map(\.text) == ["A", "b,c", "(d,e)"])
        #expect(fields.map(\.column) == [5, 8, 15])
        let blanks = try ProfileLexer.blankFields("x  \"y  z\"\tw"[...], column: 1).get()
        #expect(blanks.map(\.text) == ["x", "y  z", "w"])
        #expect(blanks.map(\.column) == [1, 4, 11])
        #expect(ProfileLexer.commaFields(#"a,"b"#[...], column: 1) == .failure(.unclosedQuote(column: 3)))
        #expect(ProfileLexer.commaFields("a,(b", column: 1) == .failure(.unbalancedParenthesis(column: 3)))
        #expect(ProfileLexer.commaFields("a),b", column: 1) == .failure(.unbalancedParenthesis(column: 2)))
    }

    @Test func suggestionsAreNearMissesOnly() {
        let types = ProfileBuilder.ruleTypes
        #expect(Suggestion.nearest("DOMAIN-SUFIX", in: types) == "DOMAIN-SUFFIX")
        #expect(Suggestion.nearest("domain-keywrod", in: types) == "DOMAIN-KEYWORD")
        #expect(Suggestion.nearest("UPD", in: ["TCP", "UDP", "HTTP"]) == "UDP")
        #expect(Suggestion.nearest("FOO", in: types) == nil)
        #expect(Suggestion.nearest("GEOSITE", in: types) == nil)
        #expect(Suggestion.editDistance(Array("ab".unicodeScalars), Array("ba".unicodeScalars)) == 1)
        #expect(Suggestion.editDistance(Array("kitten".unicodeScalars), Array("sitting".unicodeScalars)) == 3)
        #expect(Suggestion.editDistance([], Array("abc".unicodeScalars)) == 3)
    }

    @Test func globsMatchWholeValues() {
        let glob = GlobPattern("LegacyApp/*")
        #expect(glob.matches("LegacyApp/1.2 (Linux)"))
        #expect(glob.matches("LegacyApp/"))
        #expect(!glob.matches("NewApp LegacyApp/1.2"))
        #expect(GlobPattern("*curl/?.*").matches("x curl/8.5.0"))
        #expect(!GlobPattern("a?c").matches("ac"))
        // No exponential backtracking on adversarial patterns.
        #expect(!GlobPattern(String(repeating: "*a", count: 40) + "b").matches(String(repeating: "a", count: 2000)))
    }

    @Test func prefixesClearHostBitsAndContain() throws {
        let v4 = try #require(IPv4Prefix("10.1.2.3/8"))
        #expect(v4.description == "10.0.0.0/8")
        #expect(v4.contains(IPv4Address(10, 255, 0, 1)))
        #expect(!v4.contains(IPv4Address(11, 0, 0, 0)))
        #expect(try #require(IPv4Prefix("0.0.0.0/0")).contains(IPv4Address(1, 2, 3, 4)))
        let v6 = try #require(IPv6Prefix("fd00:1::5/72"))
        #expect(v6.description == "fd00:1::/72")
        #expect(v6.contains(try #require(IPv6Address("fd00:1::ff:1"))))
        #expect(!v6.contains(try #require(IPv6Address("fd00:1:0:0:100::1"))))
        #expect(IPv4Prefix("10.0.0.0/33") == nil)
        #expect(IPv6Prefix("::/129") == nil)
    }

    @Test func captureGroupsAreCounted() {
        #expect(CompiledRegex.countCaptures(#"^http://a\.test/(.*)$"#) == 1)
        #expect(CompiledRegex.countCaptures(#"(?:x)(?<name>y)(?i)\(not\)[(]"#) == 1)
        #expect(CompiledRegex.countCaptures(#"((a)(b))(?=c)(?'q'd)(?P<r>e)"#) == 5)
        #expect(CompiledRegex.countCaptures(#"[]()](x)"#) == 1)
    }
}
