import Testing
@testable import Rules

/// [MITM] in Surge's syntax: which HTTPS flows Sluice intercepts, every
/// mistake and Surge-only key, how names, addresses and ports match, and what
/// it changes for the rewrite sections' https:// lines.
@Suite struct MITMTests {
    /// The findings of a profile, as "line:column | message | hint".
    static func findings(_ list: [ProfileError]) -> [String] {
        list.map { "\($0.line):\($0.column.map(String.init) ?? "-") | \($0.message) | \($0.hint)" }
    }

    static func errors(_ text: String) -> [String] {
        guard case let .failure(failure) = loadProfile(text) else { return ["loaded"] }
        return findings(failure.errors)
    }

    static func mitm(_ hostname: String) throws -> MITMSettings {
        try loadProfile(withFinal("[MITM]\nhostname = \(hostname)")).get().mitm
    }

    // MARK: Parsing

    @Test func theSectionIsRead() throws {
        let profile = try loadProfile(withFinal("""
        [MITM]
        hostname = %APPEND% *.example.test, -pay.example.test, API.Other.Test., api.alt.test:8443, any.test:0, [FD00:0::1]:443, 10.0.0.?, [fd00::2]:0
        skip-server-cert-verify = true
        auto-quic-block = false
        h2 = true
        """)).get()
        #expect(profile.mitm.hostnames.map(\.description) == [
            "*.example.test", "-pay.example.test", "api.other.test", "api.alt.test:8443", "any.test:0", "[fd00::1]", "10.0.0.?", "[fd00::2]:0",
        ])
        #expect(profile.mitm.hostnames.map(\.port) == [443, 443, 443, 8443, nil, 443, 443, nil])
        #expect(profile.mitm.hostnames.map(\.excludes) == [false, true, false, false, false, false, false, false])
        #expect(profile.mitm.skipServerCertificateVerification)
        #expect(!profile.mitm.blocksQUIC)
        #expect(profile.mitm.prefersHTTP2)
        #expect(profile.mitm.line == 2)
        #expect(!profile.mitm.isEmpty)
        #expect(profile.warnings.isEmpty, "\(profile.warnings)")
    }

    @Test func theDefaultsInterceptNothing() throws {
        let none = try loadProfile("[Rule]\nFINAL,DIRECT").get().mitm
        #expect(none == MITMSettings())
        #expect(none.isEmpty && none.hostnames.isEmpty && none.line == nil)
        #expect(!none.skipServerCertificateVerification && none.blocksQUIC && !none.prefersHTTP2)
        #expect(!none.intercepts(host: "api.test", port: 443))
        let flagsOnly = try loadProfile(withFinal("[MITM]\nskip-server-cert-verify = false\nauto-quic-block = true")).get().mitm
        #expect(flagsOnly == MITMSettings())
    }

    @Test func modulesMarkersAreStripped() throws {
        #expect(try Self.mitm("%INSERT%a.test, b.test").hostnames.map(\.description) == ["a.test", "b.test"])
        #expect(try Self.mitm("%APPEND%").hostnames.isEmpty)
        #expect(try Self.mitm("").isEmpty)
        #expect(try Self.mitm(#""a.test", b.test"#).hostnames.map(\.description) == ["a.test", "b.test"])
    }

    /// Only exclusions intercept nothing, and say so through isEmpty.
    @Test func exclusionsAloneInterceptNothing() throws {
        let settings = try Self.mitm("-a.test, -*.b.test")
        #expect(settings.isEmpty)
        #expect(settings.hostnames.count == 2)
        #expect(!settings.intercepts(host: "a.test", port: 443))
    }

    // MARK: Matching

    @Test func wildcardsSpanDotsAndQuestionMarksOneCharacter() throws {
        let settings = try Self.mitm("*.example.test, ?.short.test, api-*.test, 10.0.0.?")
        for host in ["a.example.test", "a.b.example.test", "x.short.test", "api-v2.test", "api-.test", "10.0.0.7"] {
            #expect(settings.intercepts(host: host, port: 443), "\(host)")
        }
        for host in ["example.test", "aexample.test", "ab.short.test", "short.test", "api.test", "10.0.0.17", "10.0.0.", "other.test"] {
            #expect(!settings.intercepts(host: host, port: 443), "\(host)")
        }
        #expect(try Self.mitm("*").intercepts(host: "anything.at.all", port: 443))
    }

    @Test func exclusionsWinWhereverTheyAre() throws {
        for list in ["-pay.example.test, *.example.test", "*.example.test, -pay.example.test", "-*.pay.example.test, *.example.test, pay.example.test"] {
            let settings = try Self.mitm(list)
            #expect(settings.intercepts(host: "api.example.test", port: 443), "\(list)")
            #expect(!settings.intercepts(host: list.hasPrefix("-*") ? "x.pay.example.test" : "pay.example.test", port: 443), "\(list)")
        }
        let settings = try Self.mitm("*.example.test, -pay.example.test")
        #expect(settings.verdict(host: "pay.example.test", port: 443) == .excluded(by: MITMHostPattern(host: "pay.example.test", excludes: true)))
        #expect(settings.verdict(host: "a.example.test", port: 443) == .intercepted(by: MITMHostPattern(host: "*.example.test")))
        #expect(settings.verdict(host: "a.other.test", port: 443) == .notListed)
        // An exclusion holds on its own port only.
        let ported = try Self.mitm("a.test:0, -a.test:8443")
        #expect(ported.intercepts(host: "a.test", port: 443) && !ported.intercepts(host: "a.test", port: 8443))
    }

    @Test func portsAre443UnlessWrittenAndZeroIsEvery() throws {
        let settings = try Self.mitm("plain.test, alt.test:8443, any.test:0")
        #expect(settings.intercepts(host: "plain.test", port: 443))
        #expect(!settings.intercepts(host: "plain.test", port: 8443))
        #expect(settings.intercepts(host: "alt.test", port: 8443))
        #expect(!settings.intercepts(host: "alt.test", port: 443))
        for port: UInt16 in [1, 80, 443, 8443, 65535] { #expect(settings.intercepts(host: "any.test", port: port), "\(port)") }
    }

    @Test func caseAndATrailingDotDoNotMatter() throws {
        let settings = try Self.mitm("API.Example.Test., *.Wild.TEST")
        for host in ["api.example.test", "API.EXAMPLE.TEST", "api.example.test.", "x.wild.test", "X.WILD.test."] {
            #expect(settings.intercepts(host: host, port: 443), "\(host)")
        }
        #expect(settings.hostnames.map(\.host) == ["api.example.test", "*.wild.test"])
    }

    /// Addresses are matched as the destination's canonical text, however
    /// either side spells them.
    @Test func addressLiteralsMatchAsCanonicalText() throws {
        let settings = try Self.mitm("[FD00:0:0::1], [fd00::2]:8443, 192.0.2.10, [fd00::a:*]")
        #expect(settings.intercepts(host: "fd00::1", port: 443))
        #expect(settings.intercepts(host: "FD00:0000::0001", port: 443))
        #expect(settings.intercepts(host: "[fd00::1]", port: 443))
        #expect(!settings.intercepts(host: "fd00::1", port: 8443))
        #expect(settings.intercepts(host: "fd00::2", port: 8443))
        #expect(!settings.intercepts(host: "fd00::3", port: 443))
        #expect(settings.intercepts(host: "192.0.2.10", port: 443))
        #expect(!settings.intercepts(host: "192.0.2.1", port: 443))
        #expect(settings.intercepts(host: "fd00::a:5", port: 443))
    }

    @Test func aPatternMatchesOnItsOwn() {
        let pattern = MITMHostPattern(host: "*.Test.", port: nil, excludes: true)
        #expect(pattern.host == "*.test" && pattern.description == "-*.test:0")
        #expect(pattern.matches(host: "A.TEST", port: 80))
        #expect(!pattern.matches(host: "test", port: 80))
        // One backtrack point: a pattern full of stars against a long name stays quick.
        let stars = MITMHostPattern(host: String(repeating: "*a", count: 30) + "*b")
        #expect(!stars.matches(host: String(repeating: "a", count: 250), port: 443))
    }

    // MARK: Mistakes

    @Test func eachMistakeIsReportedWithItsColumn() {
        let cases: [(String, String)] = [
            ("hostname = a.test, , b.test",
             "2:20 | hostname has an empty item | remove the extra comma; patterns are separated by single commas"),
            ("hostname = a.test,",
             "2:18 | hostname has an empty item | remove the extra comma; patterns are separated by single commas"),
            ("hostname = a b.test",
             "2:13 | hostname pattern 'a b.test' contains a blank | separate patterns with commas"),
            ("hostname = a.test, bad/name.test",
             "2:23 | hostname pattern 'bad/name.test' contains '/' | a pattern is a name or an address, * for any run of characters and ? for one, -PATTERN to exclude, :PORT for a port other than 443 (:0 for every port)"),
            ("hostname = café.test",
             "2:15 | hostname pattern 'café.test' contains 'é' | write an international name in its ASCII (xn--) form"),
            ("hostname = fd00::1",
             "2:12 | IPv6 address 'fd00::1' in hostname needs brackets | write [ADDRESS] for port 443, or [ADDRESS]:PORT, e.g. [fd00::1]:8443"),
            ("hostname = -[fd00::1",
             "2:13 | '[' in hostname pattern '-[fd00::1' is not closed | write [ADDRESS] or [ADDRESS]:PORT, e.g. [fd00::1]:8443"),
            ("hostname = [a.test]:443",
             "2:12 | '[a.test]' in hostname is not an IPv6 address | brackets are for IPv6 addresses, such as [fd00::1]; write names without them"),
            ("hostname = [fd00::1]x",
             "2:21 | text after ']' in hostname pattern '[fd00::1]x' | write [ADDRESS]:PORT, e.g. [fd00::1]:8443"),
            ("hostname = a.test:99999",
             "2:19 | port '99999' in hostname pattern 'a.test:99999' is not a number from 0 to 65535 | write NAME:PORT, e.g. api.example.test:8443; :0 is every port"),
            ("hostname = a.test:",
             "2:19 | port '' in hostname pattern 'a.test:' is not a number from 0 to 65535 | write NAME:PORT, e.g. api.example.test:8443; :0 is every port"),
            ("hostname = -",
             "2:12 | hostname pattern '-' names no host | write -NAME to exclude a name, e.g. -pay.example.test"),
            ("hostname = :8443",
             "2:12 | hostname pattern ':8443' names no host | write a name or an address, e.g. api.example.test or *.example.test"),
            ("hostname = .example.test",
             "2:12 | hostname pattern '.example.test' starts with a dot | write *.example.test for the names under example.test, and example.test for itself"),
            ("hostname = a..test",
             "2:13 | hostname pattern 'a..test' has an empty label | write names such as api.example.test or *.example.test"),
            ("hostname = a.test\nhostname = b.test",
             "3:1 | 'hostname' is set twice in [MITM] (first at line 2) | put all names on one line, separated by commas"),
            ("host-name = a.test",
             "2:1 | unknown key 'host-name' in [MITM] | did you mean hostname?"),
            ("decrypt = true",
             "2:1 | unknown key 'decrypt' in [MITM] | expected one of: hostname, skip-server-cert-verify, auto-quic-block, h2"),
            ("skip-server-cert-verify = maybe",
             "2:27 | skip-server-cert-verify must be true or false, got 'maybe' | write skip-server-cert-verify = true or skip-server-cert-verify = false"),
            ("auto-quic-block = yes\nauto-quic-block = no",
             "3:1 | 'auto-quic-block' is set twice in [MITM] (first at line 2) | keep one of them"),
            ("hostname a.test",
             "2:1 | expected KEY = VALUE, got 'hostname a.test' | for example: hostname = *.example.test, -pay.example.test"),
            ("hostname = a.test # mine",
             "2:18 | hostname pattern 'a.test # mine' contains a blank | a '#' or '//' after a value is part of the value; comments go on their own line"),
        ]
        for (body, expected) in cases {
            #expect(Self.errors(withFinal("[MITM]\n" + body)) == [expected], "\(body)")
        }
    }

    /// Every mistake on the line is reported, and the good items are not lost.
    @Test func severalMistakesOnOneLine() {
        #expect(Self.errors(withFinal("[MITM]\nhostname = ok.test, a b, , x:y")) == [
            "2:22 | hostname pattern 'a b' contains a blank | separate patterns with commas",
            "2:26 | hostname has an empty item | remove the extra comma; patterns are separated by single commas",
            "2:30 | port 'y' in hostname pattern 'x:y' is not a number from 0 to 65535 | write NAME:PORT, e.g. api.example.test:8443; :0 is every port",
        ])
    }

    @Test func surgesOtherKeysAreWarningsThatSayWhy() throws {
        let profile = try loadProfile(withFinal("""
        [MITM]
        ca-passphrase = secret
        ca-p12 = MIIKPAIBAzCCCgYGCSqGSIb3DQEHAaCCCfcEggnzMIIJ7zCCBF8GCSqGSIb3DQEHBqCCBFAwggRMAgEAMIIERQYJKoZIhvcNAQcB
        tcp-connection = true
        hostname-disabled = a.test
        client-source-address = 192.168.1.0/24
        hostname = api.test
        """)).get()
        let ca = "Sluice keeps its own CA: run `sluice ca`"
        #expect(Self.findings(profile.warnings) == [
            "2:1 | 'ca-passphrase' is Surge's and has no effect in Sluice | \(ca)",
            "3:1 | 'ca-p12' is Surge's and has no effect in Sluice | \(ca)",
            "4:1 | 'tcp-connection' is Surge's and has no effect in Sluice | Sluice intercepts HTTPS only",
            "5:1 | 'hostname-disabled' is Surge's and has no effect in Sluice | it lists the names switched off in Surge's app, which has no use here; exclude a name with -NAME in hostname",
            "6:1 | 'client-source-address' is Surge's and has no effect in Sluice | Sluice intercepts the names in hostname for every client",
        ])
        #expect(profile.mitm.hostnames.map(\.description) == ["api.test"])
        #expect(profile.warnings.allSatisfy { $0.severity == .warning })
    }

    // MARK: The rewrite sections' https:// lines

    static let httpsOnlyLines = #"""
    [URL Rewrite]
    ^https://a\.test/(.*) http://b.test/$1 302
    [Header Rewrite]
    http-request ^https://api\.test/ header-add X-A 1
    [Map Local]
    ^https:\/\/m\.test/x data-type=text data="{}"
    [Rule]
    FINAL,DIRECT
    """#

    @Test func httpsOnlyLinesAreWarnedAboutWithoutMITMHosts() throws {
        let hint = "add the host to [MITM] hostname"
        let tail = "matches only https:// URLs, which Sluice sees only for hosts in [MITM] hostname, and this profile has none"
        let expected = [
            #"2:1 | '^https://a\.test/(.*)' "# + tail + " | " + hint,
            "2:40 | 302 makes clients repeat a POST, PUT or DELETE as a GET without its body | this rewrite matches requests of any method; use 307 to keep the method and body",
            #"4:14 | '^https://api\.test/' "# + tail + " | " + hint,
            #"6:1 | '^https:\/\/m\.test/x' "# + tail + " | " + hint,
        ]
        #expect(Self.findings(try loadProfile(Self.httpsOnlyLines).get().warnings) == expected)
        // [MITM] without inclusions intercepts nothing: the warnings stand.
        for mitm in ["[MITM]\nhostname = -a.test\n", "[MITM]\nskip-server-cert-verify = true\n", "[MITM]\nhostname =\n"] {
            let profile = try loadProfile(Self.httpsOnlyLines + "\n" + mitm).get()
            #expect(Self.findings(profile.warnings) == expected, "\(mitm)")
        }
        let printed = try loadProfile(Self.httpsOnlyLines).get().warnings[0].description
        #expect(printed == #"sluice.conf:2: warning: '^https://a\.test/(.*)' "# + tail + "\n  hint: " + hint)
    }

    @Test func httpsOnlyLinesApplyWithMITMHostsWhereverTheSectionIs() throws {
        let after = try loadProfile(Self.httpsOnlyLines + "\n[MITM]\nhostname = a.test, api.test, m.test\n").get()
        #expect(after.warnings.map(\.line) == [2], "only the 302 warning: \(after.warnings)")
        let before = try loadProfile("[MITM]\nhostname = *.test\n" + Self.httpsOnlyLines).get()
        #expect(before.warnings.map(\.line) == [4])
        #expect(before.urlRewrites.count == 1 && before.headerRewrites.count == 1 && before.mapLocals.count == 1)
    }

    /// Header mode may forward to an https:// URL: the engine connects with TLS.
    @Test func headerModeMayForwardToHTTPS() throws {
        let profile = try loadProfile(withFinal(#"[URL Rewrite]\#n^http://a\.test/(.*) https://b.test/$1 header"#)).get()
        #expect(profile.urlRewrites.map(\.description) == [#"^http://a\.test/(.*) https://b.test/$1 header"#])
        #expect(profile.warnings.isEmpty)
        #expect(URLRewriter(profile).rewrite(url: "http://a.test/v1?x=1") == .header(url: "https://b.test/v1?x=1", line: 2))
    }

    // MARK: What check and match say

    @Test func theJSONDumpListsTheSection() throws {
        let profile = try loadProfile(withFinal("[MITM]\nhostname = *.api.test, -pay.api.test, [fd00::1]:0\nskip-server-cert-verify = true")).get()
        let json = ProfileJSON.render(profile, pretty: false)
        #expect(json.contains(#""mitm":{"line":2,"hostname":[{"host":"*.api.test","port":443,"exclude":false},"#
            + #"{"host":"pay.api.test","port":443,"exclude":true},{"host":"fd00::1","port":null,"exclude":false}],"#
            + #""skip-server-cert-verify":true,"auto-quic-block":true,"h2":false}"#), "\(json)")
    }

    @Test func matchExplainsInterceptedHTTPSAsHTTP() throws {
        let profile = try loadProfile(#"""
        [MITM]
        hostname = *.api.test, -pay.api.test
        [URL Rewrite]
        ^https://v1\.api\.test/(.*) https://v2.api.test/$1 header
        [Map Local]
        ^https://v2\.api\.test/mock$ data-type=text data="{}"
        [Rule]
        AND,((PROTOCOL,TLS),(URL-REGEX,"^https://v2\.api\.test/")),REJECT
        FINAL,DIRECT
        """#).get()
        #expect(ProfileExplainer.explain(profile, url: "https://v1.api.test/users") == [
            "request: GET https://v1.api.test/users",
            "HTTPS intercepted: v1.api.test:443 matches *.api.test in [MITM] hostname, line 2, so its requests are seen as plain HTTP's are",
            #"1. URL Rewrite: line 4 (^https://v1\.api\.test/(.*) https://v2.api.test/$1 header) matches: forwarded as https://v2.api.test/users, Host: v2.api.test; method and body kept"#,
            "2. Map Local: no entry matches https://v2.api.test/users",
            #"3. Rule: line 8 (AND,((PROTOCOL,TLS),(URL-REGEX,"^https://v2\\.api\\.test/")),REJECT) matches: all of: the flow is TLS; the URL matches ^https://v2\.api\.test/"#,
            "   policy: REJECT",
            "4. Header Rewrite: skipped, the policy answers the request itself (403); nothing goes upstream",
            "5. Statistics: not counted",
        ])
        #expect(ProfileExplainer.explain(profile, url: "https://v2.api.test/mock")[2] == "1. URL Rewrite: no line matches")
        #expect(ProfileExplainer.explain(profile, url: "https://v2.api.test/mock")[3] ==
            "2. Map Local: line 6 matches: answered at once with 200, 2 bytes from the profile")
        #expect(ProfileExplainer.explain(profile, url: "https://pay.api.test/")[1...2] == [
            "HTTPS not intercepted: [MITM] hostname excludes pay.api.test:443 (-pay.api.test, line 2)",
            "1. URL Rewrite and Map Local: skipped, HTTPS is not intercepted (Sluice sees only the SNI)",
        ])
        #expect(ProfileExplainer.explain(profile, url: "https://v1.api.test:8443/")[1] ==
            "HTTPS not intercepted: v1.api.test:8443 is not in [MITM] hostname")
    }
}
