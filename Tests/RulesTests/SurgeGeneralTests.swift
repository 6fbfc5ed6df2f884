import Testing
import Wire
@testable import Rules

/// A Surge profile's [General] loads: the keys Sluice applies are applied,
/// Surge's own settings that mean nothing here are warnings that say why,
/// and a misspelt key is still an error.
@Suite struct SurgeGeneralTests {
    static let surge = """
    [General]
    loglevel = notify
    dns-server = 10.0.0.53, 10.0.0.54, system
    skip-proxy = 127.0.0.1, 192.168.0.0/16, localhost, *.local
    exclude-simple-hostnames = false
    ipv6 = false
    proxy-test-url = http://health.test/generate_204
    internet-test-url = http://health.test/generate_204
    test-timeout = 3
    always-real-ip = *.stun.test, voice.test, xbox.*.game.test
    encrypted-dns-server = https://10.0.0.53/dns-query
    http-listen = 0.0.0.0:6152
    socks5-listen = [::1]:6153
    [Proxy]
    a = socks5, 10.0.0.1, 1080
    b = socks5, 10.0.0.2, 1080
    [Proxy Group]
    auto = url-test, a, b
    fb = fallback, a, b, url=http://other.test/, timeout=9
    [Rule]
    FINAL,auto
    """

    @Test func itLoadsWithWhatItSays() throws {
        let profile = try loadProfile(Self.surge).get()
        #expect(profile.general.logLevel == .info)
        #expect(profile.general.dnsServers == [IPAddress("10.0.0.53")!, IPAddress("10.0.0.54")!])
        #expect(!profile.general.excludeSimpleHostnames)
        #expect(!profile.general.ipv6)
        #expect(profile.general.realIPNames == ["*.stun.test", "voice.test"])
        #expect(profile.general.httpListen == "0.0.0.0:6152" && profile.general.socksListen == "[::1]:6153")
        let auto = try #require(profile.groups.first { $0.name == "auto" })
        #expect(auto.url == "http://health.test/generate_204" && auto.timeout == 3)
        let fallback = try #require(profile.groups.first { $0.name == "fb" })
        #expect(fallback.url == "http://other.test/" && fallback.timeout == 9, "a group's own url= and timeout= win")
        let warnings = profile.warnings.map { "\($0.line): \($0.message)" }
        #expect(warnings == [
            "3: 'system' among addresses in dns-server is left out: the listed resolvers are asked",
            "4: 'skip-proxy' is Surge's and has no effect in Sluice",
            "8: 'internet-test-url' is Surge's and has no effect in Sluice",
            "10: always-real-ip entry 'xbox.*.game.test' is left out",
            "11: 'encrypted-dns-server' is Surge's and has no effect in Sluice",
        ], "\(warnings)")
        #expect(profile.warnings.allSatisfy { !$0.hint.isEmpty })
    }

    @Test func aMisspeltKeyIsStillAnError() {
        guard case let .failure(failure) = loadProfile("[General]\nskip-proxys = 127.0.0.1\n[Rule]\nFINAL,DIRECT") else {
            Issue.record("loaded")
            return
        }
        #expect(failure.errors.map(\.message) == ["unknown key 'skip-proxys' in [General]"])
    }

    /// Sluice's own `body-rewrite-limit` (ext): bytes, 1 KiB to 64 MiB.
    @Test func theBodyRewriteLimitIsBounded() throws {
        #expect(try loadProfile("[General]\nbody-rewrite-limit = 16777216\n[Rule]\nFINAL,DIRECT").get().general.bodyRewriteLimit == 16 << 20)
        #expect(try loadProfile("[Rule]\nFINAL,DIRECT").get().general.bodyRewriteLimit == 4 << 20)
        for (value, message) in [("1023", "body-rewrite-limit must be from 1024 to 67108864, got 1023"),
                                 ("67108865", "body-rewrite-limit must be from 1024 to 67108864, got 67108865"),
                                 ("4MB", "body-rewrite-limit must be a whole number, got '4MB'")] {
            guard case let .failure(failure) = loadProfile("[General]\nbody-rewrite-limit = \(value)\n[Rule]\nFINAL,DIRECT") else {
                Issue.record("\(value) loaded")
                continue
            }
            #expect(failure.errors.map(\.message) == [message])
        }
    }

    /// Surge's sections Sluice has no use for are skipped with a warning that
    /// says why; [MITM] is read (MITMTests), its Surge-only keys warned about.
    @Test func surgesOwnSectionsAreWarnings() throws {
        let profile = try loadProfile("""
        [MITM]
        hostname = *.test
        ca-p12 = MIIK
        [Script]
        x = type=http-request,pattern=^http://a.test
        [WireGuard home]
        private-key = x
        [Rule]
        FINAL,DIRECT
        """).get()
        #expect(profile.warnings.map { "\($0.line): \($0.message) | \($0.hint)" } == [
            "3: 'ca-p12' is Surge's and has no effect in Sluice | Sluice keeps its own CA: run `sluice ca`",
            "4: section [Script] is Surge's and has no effect in Sluice | Sluice runs no scripts; use [URL Rewrite], [Header Rewrite] and [Map Local]",
            "6: section [WireGuard home] is Surge's and has no effect in Sluice | Sluice relays through socks5 and http proxies only",
        ])
    }

    /// Surge's proxy and rule lines: positional credentials, parameters and
    /// options Sluice has no use for, the SYSTEM rule set, FINAL's dns-failed.
    @Test func surgesProxyAndRuleLinesLoad() throws {
        let profile = try loadProfile("""
        [Proxy]
        p1 = socks5, 10.0.0.1, 1080, alice, "s3cret", udp-relay=true
        p2 = http, 10.0.0.2, 3128, tfo=true, test-url=http://h.test/
        [Proxy Group]
        pick = select, p1, p2, hidden=true, icon-url=http://i.test/x.png
        [Rule]
        DOMAIN-SUFFIX,ads.test,REJECT,pre-matching
        RULE-SET,SYSTEM,DIRECT
        FINAL,p1,dns-failed
        """).get()
        guard case let .socks5(server)? = profile.proxies.first?.kind else {
            Issue.record("\(profile.proxies)")
            return
        }
        #expect(server.username == "alice" && server.password == "s3cret" && server.udpRelay)
        #expect(profile.rules.map(\.description) == ["DOMAIN-SUFFIX,ads.test,REJECT"])
        #expect(profile.groups.first?.members == ["p1", "p2"])
        #expect(profile.finalRule.policy == "p1")
        #expect(profile.warnings.map { "\($0.line): \($0.message)" } == [
            "3: 'tfo' is Surge's and has no effect in Sluice",
            "3: 'test-url' is Surge's and has no effect in Sluice",
            "5: 'hidden' is Surge's and has no effect in Sluice",
            "5: 'icon-url' is Surge's and has no effect in Sluice",
            "8: RULE-SET,SYSTEM is Surge's list of Apple's own system services; the line is skipped",
        ])
    }

    /// Surge's older [Header Rewrite] lines have no direction (requests);
    /// lines that match only https:// URLs load, with a warning that they
    /// apply to no host when [MITM] names none (Surge has them for its [MITM] hosts).
    @Test func surgesRewriteLinesLoad() throws {
        let profile = try loadProfile(#"""
        [URL Rewrite]
        ^https://a\.test/(.*) http://b.test/$1 307
        ^https?://c\.test/ _ reject
        [Header Rewrite]
        ^http://api\.test header-add X-A 1
        http-response ^https://api\.test header-del Set-Cookie
        [Map Local]
        ^https://m\.test/x data-type=text data="{}"
        [Rule]
        FINAL,DIRECT
        """#).get()
        #expect(profile.headerRewrites.map { "\($0.direction.rawValue) \($0.regex.source)" } == [
            #"http-request ^http://api\.test"#, #"http-response ^https://api\.test"#,
        ])
        #expect(profile.warnings.map(\.line) == [2, 6, 8], "\(profile.warnings)")
        #expect(profile.warnings.allSatisfy { $0.message.hasSuffix("which Sluice sees only for hosts in [MITM] hostname, and this profile has none") })
    }

    @Test func verboseIsDebug() throws {
        #expect(try loadProfile("[General]\nloglevel = verbose\n[Rule]\nFINAL,DIRECT").get().general.logLevel == .debug)
    }
}
