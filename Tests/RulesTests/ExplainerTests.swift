import Testing
import Wire
@testable import Rules

/// The example profile of the dialect's spec, with its trailing comments
/// (which the dialect does not allow) taken off.
let specProfile = """
[General]
loglevel = info
dns-mode = fake-ip
fake-ip-range = 198.18.0.0/15

[Proxy]
corp-socks = socks5, proxy.test, 1080, username=alice, password="s3cr3t,with a comma", udp-relay=true
corp-http  = http, 10.9.0.2, 3128, username=bob, password=hunter2
reset      = reject-rst

[Proxy Group]
egress = fallback, corp-socks, corp-http, url=http://health.test/generate_204, interval=60, timeout=5

[Rule]
DOMAIN,api.test,DIRECT
DOMAIN-SUFFIX,ads.test,REJECT
DOMAIN-KEYWORD,tracker,reset
DOMAIN-REGEX,"^cdn[0-9]+\\.example\\.test$",DIRECT
IP-CIDR,10.0.0.0/8,DIRECT,no-resolve
IP-CIDR6,fd00::/8,DIRECT
DEST-PORT,5432,DIRECT
URL-REGEX,"^http://api\\.staging\\.test/v2/upload",corp-http
METHOD,POST,corp-http
HEADER,"X-Route: ^via-socks$",corp-socks
USER-AGENT,"LegacyApp/*",REJECT-DROP
AND,((METHOD,PUT),(DOMAIN,upload.test)),corp-http
NOT,((DOMAIN-SUFFIX,internal.test)),egress
FINAL,DIRECT

[Host]
origin.test = 10.231.1.2

[URL Rewrite]
^http://api\\.test/(.*) http://api.staging.test/$1 header
^http://old\\.test/(.*) http://new.test/$1 307
^http://legacy\\.test/(.*) http://new.test/$1 302
^http://ads\\.test/ _ reject

[Header Rewrite]
http-request ^http://api\\.staging\\.test/ header-add X-Env staging
http-request ^http://([a-z0-9-]+\\.)*test/ header-del X-Debug-Token
http-response ^http://api\\.staging\\.test/ header-replace-regex Set-Cookie "(?i)domain=\\.?api\\.staging\\.test" "Domain=api.test"

[Map Local]
^http://api\\.staging\\.test/v1/config$ data-type=text data="{\\"feature\\":true}" status-code=200 header="Content-Type:application/json"
^http://static\\.test/assets/(.*)$ data-type=dir data="cache/static"

[Statistics]
api-v1 = "^http://api\\.staging\\.test/v1/([a-z]+)", key=$1, failure-status=500-599
"""

func loadSpecProfile() throws -> Profile {
    switch ProfileParser.parse(specProfile, file: "spec.conf", baseDirectory: "/etc/sluice") {
    case let .success(profile): return profile
    case let .failure(errors): Issue.record("\(errors)"); throw errors
    }
}

@Suite struct ExplainerTests {
    @Test func headerModeThenRuleThenHeaders() throws {
        let lines = ProfileExplainer.explain(try loadSpecProfile(), url: "http://api.test/v1/users", method: "GET",
                                             headers: [HeaderField(name: "X-Debug-Token", value: "t")])
        #expect(lines == [
            "request: GET http://api.test/v1/users",
            #"1. URL Rewrite: line 34 (^http://api\.test/(.*) http://api.staging.test/$1 header) matches: forwarded as http://api.staging.test/v1/users, Host: api.staging.test; method and body kept"#,
            "2. Map Local: no entry matches http://api.staging.test/v1/users",
            // DOMAIN,api.test (line 15) does not match: rules see the request as rewritten.
            "3. Rule: line 27 (NOT,((DOMAIN-SUFFIX,internal.test)),egress) matches: not (DOMAIN-SUFFIX,internal.test)",
            "   12 rules before it did not match",
            "   IP-CIDR rules were skipped: the destination is known by name, and rules never resolve names",
            "   policy: egress (fallback group)",
            #"4. Header Rewrite (request): line 40 (header-add X-Env "staging"), line 41 (header-del X-Debug-Token)"#,
            "   request headers sent: Host: api.staging.test | X-Env: staging",
            #"5. Header Rewrite (response): on the way back, line 42 (header-replace-regex Set-Cookie "(?i)domain=\\.?api\\.staging\\.test" "Domain=api.test")"#,
            #"6. Statistics: counted by api-v1 (line 49) under key "users""#,
        ])
    }

    /// With [Body Rewrite] lines, the request's path says which apply (after the headers).
    @Test func bodyRewritesAreAStepOfTheirOwn() throws {
        let text = "[Body Rewrite]\nhttp-response ^http://a\\.test/v1 x y\nhttp-request ^http://a\\.test/ x y x z\n[Rule]\nFINAL,DIRECT\n"
        guard case let .success(profile) = ProfileParser.parse(text, file: "t.conf", baseDirectory: "/tmp") else {
            Issue.record("did not load"); return
        }
        #expect(ProfileExplainer.explain(profile, url: "http://a.test/v1/x").suffix(2) == [
            "6. Body Rewrite: line 2 (http-response, 1 replacement), line 3 (http-request, 2 replacements); a UTF-8 body up to 4 MiB",
            "7. Statistics: not counted",
        ])
        #expect(ProfileExplainer.explain(profile, url: "http://b.test/").suffix(2) == ["6. Body Rewrite: no line matches", "7. Statistics: not counted"])
    }

    @Test func answeredAtOnce() throws {
        let profile = try loadSpecProfile()
        let redirect = ProfileExplainer.explain(profile, url: "http://legacy.test/x", method: "POST")
        #expect(redirect[1] == #"1. URL Rewrite: line 36 (^http://legacy\.test/(.*) http://new.test/$1 302) matches: answered at once with 302, Location: http://new.test/x"#)
        #expect(redirect[2].contains("307 keeps POST"))
        #expect(redirect.suffix(2) == ["   stops here: no rule is consulted", "2. Statistics: not counted"])
        let reject = ProfileExplainer.explain(profile, url: "http://ads.test/b")
        #expect(reject[1].hasSuffix("answered at once with 404 (reject, 0 bytes)"))
        // However the host is spelled (URL-REGEX and [URL Rewrite] lines were dodged so).
        for spelling in ["http://ADS.test./b", "http://ads.test:80/b"] {
            #expect(ProfileExplainer.explain(profile, url: spelling)[1].hasSuffix("answered at once with 404 (reject, 0 bytes)"), "\(spelling)")
        }
        let mock = ProfileExplainer.explain(profile, url: "http://api.test/v1/config")
        #expect(mock[2] == "2. Map Local: line 45 matches: answered at once with 200, 16 bytes from the profile")
        // Counted as HTTP mode counts it: by the URL as rewritten, with the answer's status.
        #expect(mock.last == #"3. Statistics: counted by api-v1 (line 49) under key "config""#)
        let file = ProfileExplainer.explain(profile, url: "http://static.test/assets/a.css")
        #expect(file[2] == "2. Map Local: line 46 matches: answered at once with 200, the file /etc/sluice/cache/static/a.css")
        let escape = ProfileExplainer.explain(profile, url: "http://static.test/assets/../../x")
        #expect(escape[2] == "2. Map Local: line 46 matches, but the name would leave its folder: answered 404")
    }

    /// A policy that answers or refuses the request ends it where the rule
    /// decided, as HTTP mode does: no header rewrite (x.ads.test's URL
    /// matches a header-del line) and nothing upstream; a refusal gets no
    /// response, so no statistics (ProfileTests.statisticsCountAnsweredRejectionsNotRefusedOnes).
    @Test func rejectingPoliciesSkipTheRewrites() throws {
        let profile = try loadSpecProfile()
        #expect(Array(ProfileExplainer.explain(profile, url: "http://x.ads.test/").suffix(2)) == [
            "4. Header Rewrite: skipped, the policy answers the request itself (403); nothing goes upstream",
            "5. Statistics: not counted",
        ])
        #expect(Array(ProfileExplainer.explain(profile, url: "http://a.tracker.test/").suffix(3)) == [
            "   policy: reset (reject-rst proxy)",
            "4. Header Rewrite: skipped, the policy refuses it with a reset (an HTTP/2 request: its stream's); nothing goes upstream",
            "5. Statistics: not counted, a refused request gets no response",
        ])
        let dropped = ProfileExplainer.explain(profile, url: "http://a.test/", headers: [HeaderField(name: "User-Agent", value: "LegacyApp/1")])
        #expect(Array(dropped.suffix(2)) == [
            "4. Header Rewrite: skipped, the policy drops it unanswered; nothing goes upstream",
            "5. Statistics: not counted, a refused request gets no response",
        ])
        // A policy that forwards still shows the rewrites.
        #expect(ProfileExplainer.explain(profile, url: "http://a.test/").contains("4. Header Rewrite (request): line 41 (header-del X-Debug-Token)"))
    }

    @Test func rulesAndWhy() throws {
        let profile = try loadSpecProfile()
        #expect(ProfileExplainer.explain(profile, url: "http://x.ads.test/")[3] ==
            "3. Rule: line 16 (DOMAIN-SUFFIX,ads.test,REJECT) matches: the host x.ads.test is under ads.test")
        #expect(ProfileExplainer.explain(profile, url: "http://10.1.2.3:5432/")[3] ==
            "3. Rule: line 19 (IP-CIDR,10.0.0.0/8,DIRECT,no-resolve) matches: the destination 10.1.2.3 is in 10.0.0.0/8")
        #expect(ProfileExplainer.explain(profile, url: "http://origin.test/", method: "PUT")[3].hasSuffix("([Host] gives 10.231.1.2)"))
        #expect(ProfileExplainer.explain(profile, url: "http://upload.test/", method: "PUT")[3] ==
            "3. Rule: line 26 (AND,((METHOD,PUT),(DOMAIN,upload.test)),corp-http) matches: all of: the method is PUT; the host upload.test is upload.test")
        #expect(ProfileExplainer.explain(profile, url: "http://a.test/", method: "POST")[3].hasPrefix("3. Rule: line 23 (METHOD,POST,corp-http)"))
        let ua = ProfileExplainer.explain(profile, url: "http://a.test/", headers: [HeaderField(name: "User-Agent", value: "LegacyApp/1")])
        #expect(ua[3].hasPrefix("3. Rule: line 25 (USER-AGENT,\"LegacyApp/*\",REJECT-DROP)"))
        let tls = ProfileExplainer.explain(profile, url: "https://x.internal.test/")
        #expect(tls == [
            "request: GET https://x.internal.test/",
            "HTTPS not intercepted: x.internal.test:443 is not in [MITM] hostname",
            "1. URL Rewrite and Map Local: skipped, HTTPS is not intercepted (Sluice sees only the SNI)",
            "2. Rule: no rule matches; line 28 (FINAL,DIRECT) decides",
            "   IP-CIDR rules were skipped: the destination is known by name, and rules never resolve names",
            "   policy: DIRECT",
            "3. Header Rewrite: skipped, HTTPS is not intercepted",
        ])
        #expect(ProfileExplainer.explain(profile, url: "not a url") == ["error: 'not a url' is not an absolute URL (want http://host/path)"])
    }

    /// The engine built from a parsed profile agrees with the explainer's story.
    @Test func engineFromParsedProfile() throws {
        let profile = try loadSpecProfile()
        let engine = RuleEngine(profile)
        let flow = FlowFacts(transport: .tcp, destinationPort: 443, domain: "cdn7.example.test", applicationProtocol: .tls)
        #expect(engine.evaluate(flow) == .matched(RuleDecision(ruleIndex: 3, line: 18, text: profile.rules[3].description, policy: "DIRECT")))
        let sniffing = FlowFacts(transport: .tcp, destination: IPAddress("192.0.2.9"), destinationPort: 80)
        #expect(engine.evaluate(sniffing) == .needsApplicationData)
        #expect(engine.evaluate(sniffing, final: true).policy == "egress")
    }
}
