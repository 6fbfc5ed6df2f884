import Testing
@testable import Rules

/// One kind of mistake: a profile that has it, and the exact findings it must give.
struct ErrorCase: Sendable, CustomTestStringConvertible {
    var kind: String
    var profile: String
    /// (line, message, hint) of each error, in order.
    var errors: [(Int, String, String)]

    var testDescription: String { kind }
}

/// Wraps lines in a minimal valid profile: `[Rule]` with FINAL comes last unless the case brings its own.
func withFinal(_ body: String) -> String {
    body.contains("FINAL") ? body : body + "\n[Rule]\nFINAL,DIRECT\n"
}

let errorCases: [ErrorCase] = [
    ErrorCase(kind: "unknown section", profile: withFinal("[Rules]\nDOMAIN,a.test,DIRECT"),
              errors: [(1, "unknown section [Rules]", "did you mean [Rule]?")]),
    ErrorCase(kind: "section-less line", profile: withFinal("loglevel = info\n[General]"),
              errors: [(1, "line outside any section", "put it under a section header such as [General] or [Rule]")]),
    ErrorCase(kind: "section header not closed", profile: withFinal("[General\nloglevel = info"),
              errors: [(1, "section header '[General' is not closed", "write it as [General]")]),
    ErrorCase(kind: "section twice", profile: "[Rule]\nFINAL,DIRECT\n[General]\n[Rule]\n",
              errors: [(4, "section [Rule] appears twice (first at line 1)", "move these lines into the first [Rule]")]),
    ErrorCase(kind: "unknown key", profile: withFinal("[General]\nlog-level = info"),
              errors: [(2, "unknown key 'log-level' in [General]", "did you mean loglevel?")]),
    ErrorCase(kind: "key set twice", profile: withFinal("[General]\nmtu = 1500\nmtu = 9000"),
              errors: [(3, "'mtu' is set twice in [General] (first at line 2)", "keep one of them")]),
    ErrorCase(kind: "not KEY = VALUE", profile: withFinal("[General]\nloglevel info"),
              errors: [(2, "expected KEY = VALUE, got 'loglevel info'", "for example: loglevel = info")]),
    ErrorCase(kind: "unknown enumerated value", profile: withFinal("[General]\nloglevel = chatty"),
              errors: [(2, "unknown loglevel 'chatty'", "expected one of: error, warning, info, debug")]),
    ErrorCase(kind: "not a number", profile: withFinal("[General]\nmtu = 1.5k"),
              errors: [(2, "mtu must be a whole number, got '1.5k'", "write it in decimal digits, from 1280 to 65535")]),
    ErrorCase(kind: "number out of range", profile: withFinal("[General]\nmtu = 576"),
              errors: [(2, "mtu must be from 1280 to 65535, got 576", "write a number from 1280 to 65535")]),
    ErrorCase(kind: "bad address", profile: withFinal("[General]\ndns-server = 10.0.0.300"),
              errors: [(2, "dns-server '10.0.0.300' is not an IP address",
                        "write addresses such as 10.0.0.53 or fd00::53, separated by commas, or system")]),
    ErrorCase(kind: "fake-ip range too big", profile: withFinal("[General]\nfake-ip-range = 10.0.0.0/8"),
              errors: [(2, "fake-ip-range must be a /12 to a /30, got /8", "198.18.0.0/15 (RFC 2544's benchmarking range) is the default")]),
    ErrorCase(kind: "bad routing mark", profile: withFinal("[General]\nrouting-mark = 0xZZ"),
              errors: [(2, "routing-mark must be a 32-bit number, got '0xZZ'", "write it in decimal or as 0x hex, e.g. 0x2a")]),
    ErrorCase(kind: "unknown proxy kind", profile: withFinal("[Proxy]\np = sock5, proxy.test, 1080"),
              errors: [(2, "unknown proxy kind 'sock5'", "did you mean socks5?")]),
    ErrorCase(kind: "unsupported proxy kind", profile: withFinal("[Proxy]\np = ss, proxy.test, 8388, encrypt-method=aes-128-gcm"),
              errors: [(2, "proxy kind 'ss' is not supported",
                        "Sluice relays through socks5 and http proxies; kinds: socks5, http, direct, reject, reject-rst, reject-drop, reject-tinygif")]),
    ErrorCase(kind: "proxy without port", profile: withFinal("[Proxy]\np = http, proxy.test"),
              errors: [(2, "http proxy 'p' needs a server and a port", "write p = http, HOST, PORT")]),
    ErrorCase(kind: "bad port", profile: withFinal("[Proxy]\np = socks5, proxy.test, 70000"),
              errors: [(2, "port must be from 1 to 65535, got 70000", "write a number from 1 to 65535")]),
    ErrorCase(kind: "unknown proxy parameter", profile: withFinal("[Proxy]\np = socks5, proxy.test, 1080, udp-relays=true"),
              errors: [(2, "unknown parameter 'udp-relays' for a socks5 proxy", "did you mean udp-relay?")]),
    ErrorCase(kind: "udp-relay on http", profile: withFinal("[Proxy]\np = http, proxy.test, 3128, udp-relay=true"),
              errors: [(2, "udp-relay applies only to socks5 proxies", "http proxies carry TCP only; UDP goes DIRECT")]),
    ErrorCase(kind: "bad boolean", profile: withFinal("[Proxy]\np = socks5, proxy.test, 1080, udp-relay=maybe"),
              errors: [(2, "udp-relay must be true or false, got 'maybe'", "write udp-relay = true or udp-relay = false")]),
    ErrorCase(kind: "username without password", profile: withFinal("[Proxy]\np = socks5, proxy.test, 1080, username=alice"),
              errors: [(2, "proxy 'p' has a username but no password", "give both username= and password=, or neither")]),
    ErrorCase(kind: "duplicate name", profile: withFinal("[Proxy]\np = reject-rst\n[Proxy Group]\np = select, DIRECT"),
              errors: [(4, "'p' is already defined at line 2", "proxy and group names share one namespace; rename one of them")]),
    ErrorCase(kind: "built-in redefined", profile: withFinal("[Proxy]\nDirect = socks5, proxy.test, 1080"),
              errors: [(2, "'Direct' is a built-in policy and cannot be redefined", "pick another name; DIRECT can be used as it is")]),
    ErrorCase(kind: "parameters on a local kind", profile: withFinal("[Proxy]\nr = reject-rst, status-code=403"),
              errors: [(2, "proxy kind reject-rst takes no parameters", "write r = reject-rst")]),
    ErrorCase(kind: "unknown group kind", profile: withFinal("[Proxy Group]\ng = selct, DIRECT"),
              errors: [(2, "unknown group kind 'selct'", "did you mean select?")]),
    ErrorCase(kind: "group without members", profile: withFinal("[Proxy Group]\ng = select"),
              errors: [(2, "group 'g' has no members", "list proxies, groups or built-in policies after select,")]),
    ErrorCase(kind: "fallback without url", profile: withFinal("[Proxy Group]\ng = fallback, DIRECT, REJECT"),
              errors: [(2, "fallback group 'g' needs url=", "add url=http://HOST/PATH for its health checks (or proxy-test-url in [General])")]),
    ErrorCase(kind: "select with url", profile: withFinal("[Proxy Group]\ng = select, DIRECT, url=http://h.test/"),
              errors: [(2, "a select group has no url", "select groups are not health-checked; use fallback or url-test for that")]),
    ErrorCase(kind: "group lists itself", profile: withFinal("[Proxy Group]\npick = select, pick, DIRECT"),
              errors: [(2, "group 'pick' lists itself as a member", "a group's members are proxies, other groups or built-in policies")]),
    ErrorCase(kind: "group cycle", profile: withFinal("[Proxy Group]\na = select, b\nb = select, c, DIRECT\nc = select, a"),
              errors: [(2, "group 'a' contains itself: a -> b -> c -> a", "break the cycle by removing one of these members")]),
    ErrorCase(kind: "unknown member", profile: withFinal("[Proxy Group]\ng = select, corp, DIRECT"),
              errors: [(2, "unknown policy 'corp' in group 'g'",
                        "define it in [Proxy] or [Proxy Group], or use a built-in: DIRECT, REJECT, REJECT-RST, REJECT-DROP, REJECT-TINYGIF, REJECT-NO-DROP")]),
    ErrorCase(kind: "unknown rule type", profile: "[Rule]\nDOMAIN-SUFIX,ads.test,REJECT\nFINAL,DIRECT",
              errors: [(2, "unknown rule type 'DOMAIN-SUFIX'", "did you mean DOMAIN-SUFFIX?")]),
    ErrorCase(kind: "unsupported rule type", profile: "[Rule]\nIN-PORT,1080,DIRECT\nFINAL,DIRECT",
              errors: [(2, "rule type IN-PORT is not supported", "Sluice has no inbound proxy ports")]),
    ErrorCase(kind: "SRC-IP not an address", profile: "[Rule]\nSRC-IP,lan.test,DIRECT\nFINAL,DIRECT",
              errors: [(2, "SRC-IP 'lan.test' is not an IPv4 network", "write ADDRESS/LENGTH, e.g. 10.0.0.0/8")]),
    ErrorCase(kind: "SRC-IP IPv6 prefix too long", profile: "[Rule]\nSRC-IP,fd00::/129,DIRECT\nFINAL,DIRECT",
              errors: [(2, "SRC-IP 'fd00::/129' is not an IPv6 network", "write ADDRESS/LENGTH, e.g. fd00::/8")]),
    ErrorCase(kind: "rule without policy", profile: "[Rule]\nDOMAIN,api.test\nFINAL,DIRECT",
              errors: [(2, "rule DOMAIN has no policy", "write DOMAIN,api.test,POLICY, e.g. DOMAIN,api.test,DIRECT")]),
    ErrorCase(kind: "rule without value", profile: "[Rule]\nDOMAIN,,DIRECT\nFINAL,DIRECT",
              errors: [(2, "DOMAIN needs a value", "write DOMAIN,VALUE,POLICY")]),
    ErrorCase(kind: "unknown policy", profile: "[Rule]\nDOMAIN,api.test,corp-sock\nFINAL,DIRECT\n[Proxy]\ncorp-socks = socks5, p.test, 1080",
              errors: [(2, "unknown policy 'corp-sock' in rule DOMAIN,api.test", "did you mean corp-socks?")]),
    ErrorCase(kind: "built-in in lower case", profile: "[Rule]\nFINAL,direct",
              errors: [(2, "unknown policy 'direct' in FINAL", "did you mean DIRECT?")]),
    ErrorCase(kind: "URL as a domain", profile: "[Rule]\nDOMAIN-SUFFIX,http://ads.test/,REJECT\nFINAL,DIRECT",
              errors: [(2, "'http://ads.test/' is not a domain name", "DOMAIN-SUFFIX takes a bare name like api.test; match URLs with URL-REGEX")]),
    ErrorCase(kind: "bad CIDR", profile: "[Rule]\nIP-CIDR,10.0.0.0/33,DIRECT\nFINAL,DIRECT",
              errors: [(2, "IP-CIDR '10.0.0.0/33' is not an IPv4 network", "write ADDRESS/LENGTH, e.g. 10.0.0.0/8")]),
    ErrorCase(kind: "IPv6 in IP-CIDR", profile: "[Rule]\nIP-CIDR,fd00::/8,DIRECT\nFINAL,DIRECT",
              errors: [(2, "IP-CIDR 'fd00::/8' is IPv6", "use IP-CIDR6 for IPv6 networks")]),
    ErrorCase(kind: "range without length", profile: withFinal("[General]\nfake-ip-range = 198.18.0.1"),
              errors: [(2, "fake-ip-range '198.18.0.1' has no prefix length", "write 198.18.0.1/32 for one address")]),
    ErrorCase(kind: "bad port spec", profile: "[Rule]\nDEST-PORT,http,DIRECT\nFINAL,DIRECT",
              errors: [(2, "bad port 'http'", "write a port (443), a range (8000-8100) or a comparison (>=50000, <1024), each 0 to 65535")]),
    ErrorCase(kind: "backwards port range", profile: "[Rule]\nSRC-PORT,9000-8000,DIRECT\nFINAL,DIRECT",
              errors: [(2, "port range '9000-8000' is backwards", "write 8000-9000")]),
    ErrorCase(kind: "empty port comparison", profile: "[Rule]\nDEST-PORT,<0,DIRECT\nFINAL,DIRECT",
              errors: [(2, "port comparison '<0' matches no port", "ports are 0 to 65535")]),
    ErrorCase(kind: "unknown protocol", profile: "[Rule]\nPROTOCOL,UPD,DIRECT\nFINAL,DIRECT",
              errors: [(2, "unknown protocol 'UPD'", "did you mean UDP?")]),
    ErrorCase(kind: "regex does not compile", profile: "[Rule]\nURL-REGEX,\"^http://(api\\.test\",DIRECT\nFINAL,DIRECT",
              errors: [(2, #"regex "^http://(api\\.test" does not compile"#, "expected ')'")]),
    ErrorCase(kind: "HEADER without colon", profile: "[Rule]\nHEADER,X-Route,DIRECT\nFINAL,DIRECT",
              errors: [(2, "HEADER value 'X-Route' has no ':'",
                        #"write HEADER,"NAME: REGEX",POLICY, e.g. HEADER,"X-Route: ^canary$",DIRECT"#)]),
    ErrorCase(kind: "quote not closed", profile: "[Rule]\nDOMAIN-REGEX,\"^a\\.test$,DIRECT\nFINAL,DIRECT",
              errors: [(2, "quote not closed", #"end the value with "; inside quotes write \" for a quote and \\ for a backslash"#)]),
    ErrorCase(kind: "parentheses unbalanced", profile: "[Rule]\nAND,((METHOD,POST),(DOMAIN,a.test),DIRECT\nFINAL,DIRECT",
              errors: [(2, "parentheses do not balance", "each ( needs a ); quote a regex that has unbalanced parentheses")]),
    ErrorCase(kind: "NOT with two sub-rules", profile: "[Rule]\nNOT,((DOMAIN,a.test),(DOMAIN,b.test)),DIRECT\nFINAL,DIRECT",
              errors: [(2, "NOT takes exactly one sub-rule, got 2", "write NOT,((DOMAIN,api.test)),DIRECT")]),
    ErrorCase(kind: "sub-rule without parentheses", profile: "[Rule]\nAND,(METHOD,POST),DIRECT\nFINAL,DIRECT",
              errors: [(2, "sub-rule 'METHOD' is not in parentheses", "write AND,((METHOD,POST),(DOMAIN,upload.test)),DIRECT")]),
    ErrorCase(kind: "no-resolve on a domain rule", profile: "[Rule]\nDOMAIN,a.test,DIRECT,no-resolve\nFINAL,DIRECT",
              errors: [(2, "no-resolve applies only to IP-CIDR, IP-CIDR6, GEOIP, IP-ASN and RULE-SET", "remove it from this DOMAIN rule")]),
    ErrorCase(kind: "unknown rule option", profile: "[Rule]\nIP-CIDR,10.0.0.0/8,DIRECT,no-reslove\nFINAL,DIRECT",
              errors: [(2, "unknown rule option 'no-reslove'", "did you mean no-resolve?")]),
    ErrorCase(kind: "misspelt capture", profile: "[Rule]\nDEST-PORT,80,DIRECT,captrue\nFINAL,DIRECT",
              errors: [(2, "unknown rule option 'captrue'", "did you mean capture?")]),
    ErrorCase(kind: "capture on FINAL", profile: "[Rule]\nDOMAIN,a.test,REJECT\nFINAL,DIRECT,capture",
              errors: [(1, "[Rule] has no FINAL rule", "end [Rule] with FINAL,DIRECT (or the policy for everything else)"),
                       (3, "FINAL takes only a policy, got 'capture'",
                        "capture everything by leaving capture off every rule; to keep all but some flows, give those rules their own policy line above")]),
    ErrorCase(kind: "rule after FINAL", profile: "[Rule]\nFINAL,DIRECT\nDOMAIN,a.test,REJECT",
              errors: [(3, "rule after FINAL can never match", "move it above FINAL,DIRECT at line 2")]),
    ErrorCase(kind: "FINAL missing", profile: "[General]\nloglevel = info\n[Rule]\nDOMAIN,a.test,REJECT\n",
              errors: [(3, "[Rule] has no FINAL rule", "end [Rule] with FINAL,DIRECT (or the policy for everything else)")]),
    ErrorCase(kind: "no [Rule] section", profile: "[General]\nloglevel = info\n",
              errors: [(0, "the profile has no [Rule] section", "add [Rule] with at least FINAL,DIRECT")]),
    ErrorCase(kind: "host value neither address, name nor server", profile: withFinal("[Host]\napi.test = 10.0.0.1 10.0.0.2"),
              errors: [(2, "'10.0.0.1 10.0.0.2' is not an IP address, a host name or server:ADDRESS",
                        "[Host] maps a name to an address (origin.test = 10.0.0.2), to another name it answers as "
                        + "(alias.test = origin.test), or to the DNS server that resolves it (*.corp.test = server:10.0.0.53)")]),
    ErrorCase(kind: "host address list with a name", profile: withFinal("[Host]\napi.test = 10.0.0.1, origin.test"),
              errors: [(2, "'origin.test' is not an IP address",
                        "a name's addresses are separated by commas (dual.test = 10.0.0.2, fd00::2); an alias or server: line takes one value")]),
    ErrorCase(kind: "host address list with an empty item", profile: withFinal("[Host]\napi.test = 10.0.0.1,"),
              errors: [(2, "'' is not an IP address",
                        "a name's addresses are separated by commas (dual.test = 10.0.0.2, fd00::2); an alias or server: line takes one value")]),
    ErrorCase(kind: "host server not an address", profile: withFinal("[Host]\n*.corp.test = server:dns.corp.test"),
              errors: [(2, "'dns.corp.test' is not a DNS server",
                        "write server:ADDRESS (port 53), server:ADDRESS:PORT ([ADDRESS]:PORT for IPv6), or server:system for the host's resolvers")]),
    ErrorCase(kind: "host server port out of range", profile: withFinal("[Host]\n*.corp.test = server:10.0.0.53:70000"),
              errors: [(2, "'10.0.0.53:70000' is not a DNS server",
                        "write server:ADDRESS (port 53), server:ADDRESS:PORT ([ADDRESS]:PORT for IPv6), or server:system for the host's resolvers")]),
    ErrorCase(kind: "host address mistyped", profile: withFinal("[Host]\ntypo.test = 10.231.7.300\nshort.test = 10.0.1"),
              errors: [(2, "'10.231.7.300' is not an IP address",
                        "an IPv4 address is four numbers from 0 to 255, such as 10.0.0.2; an IPv6 one is written as fd00::2"),
                       (3, "'10.0.1' is not an IP address",
                        "an IPv4 address is four numbers from 0 to 255, such as 10.0.0.2; an IPv6 one is written as fd00::2")]),
    ErrorCase(kind: "host alias of itself", profile: withFinal("[Host]\nloop.test = LOOP.test."),
              errors: [(2, "'loop.test' is an alias of itself", "map it to an address or to another name")]),
    ErrorCase(kind: "host alias loop", profile: withFinal("[Host]\na.test = b.test\nb.test = x.c.test\n*.c.test = a.test"),
              errors: [(2, "the alias chain from 'a.test' loops (a.test → b.test → *.c.test → a.test)",
                        "end the chain at an address, a server: line, or a name [Host] does not map"),
                       (3, "the alias chain from 'b.test' loops (b.test → *.c.test → a.test → b.test)",
                        "end the chain at an address, a server: line, or a name [Host] does not map"),
                       (4, "the alias chain from '*.c.test' loops (*.c.test → a.test → b.test → *.c.test)",
                        "end the chain at an address, a server: line, or a name [Host] does not map")]),
    ErrorCase(kind: "host mapped twice", profile: withFinal("[Host]\napi.test = 10.0.0.1\nAPI.test. = 10.0.0.2"),
              errors: [(3, "host 'api.test' is already mapped at line 2", "keep one of the two lines")]),
    ErrorCase(kind: "unknown rewrite mode", profile: withFinal("[URL Rewrite]\n^http://a\\.test/(.*) http://b.test/$1 301"),
              errors: [(2, "unknown URL rewrite mode '301'", "did you mean 302?")]),
    ErrorCase(kind: "rewrite field count", profile: withFinal("[URL Rewrite]\n^http://a\\.test/ http://b.test/ 307 extra"),
              errors: [(2, "[URL Rewrite] lines have 3 fields (REGEX REPLACEMENT MODE), got 4", "quote a regex or URL that contains blanks")]),
    ErrorCase(kind: "replacement refers to a missing group", profile: withFinal("[URL Rewrite]\n^http://a\\.test/(.*) http://b.test/$2 307"),
              errors: [(2, "'http://b.test/$2' refers to $2 but the regex has 1 capture group",
                        #"add parentheses around the part of "^http://a\\.test/(.*)" to reuse, or use $1...$1"#)]),
    ErrorCase(kind: "unknown header operation", profile: withFinal("[Header Rewrite]\nhttp-request ^http:// header-remove X-A"),
              errors: [(2, "unknown header operation 'header-remove'", "did you mean header-replace?")]),
    ErrorCase(kind: "header operation arity", profile: withFinal("[Header Rewrite]\nhttp-request ^http:// header-add X-Env two words"),
              errors: [(2, "header-add takes NAME VALUE, got 3 fields", "quote a value that contains blanks")]),
    ErrorCase(kind: "unknown direction", profile: withFinal("[Header Rewrite]\nhttp-requests ^http:// header-del X-A"),
              errors: [(2, "unknown header rewrite direction 'http-requests'", "did you mean http-request?")]),
    ErrorCase(kind: "unknown data-type", profile: withFinal("[Map Local]\n^http://a\\.test/ data-type=json data=\"{}\""),
              errors: [(2, "unknown data-type 'json'", "expected one of: text, base64, file, dir, tiny-gif")]),
    ErrorCase(kind: "dir without capture group", profile: withFinal("[Map Local]\n^http://a\\.test/.*$ data-type=dir data=cache"),
              errors: [(2, "data-type=dir needs a capture group in the regex",
                        #"the first group names the file inside the folder, e.g. ^http://static\.test/(.*)$"#)]),
    ErrorCase(kind: "map local from a URL", profile: withFinal("[Map Local]\n^http://a\\.test/ data=\"http://mock.test/a.json\""),
              errors: [(2, "data-type=file reads local files, not URLs like 'http://mock.test/a.json'",
                        "to answer from another server, use a header-mode [URL Rewrite]")]),
    ErrorCase(kind: "bad base64", profile: withFinal("[Map Local]\n^http://a\\.test/ data-type=base64 data=\"R0lG*\""),
              errors: [(2, "data is not valid base64", "use the standard alphabet (A-Z a-z 0-9 + /) with = padding")]),
    ErrorCase(kind: "map local without data", profile: withFinal("[Map Local]\n^http://a\\.test/ data-type=text status-code=204"),
              errors: [(2, "[Map Local] entry has no data=", #"write data="BODY" (data="" for an empty body)"#)]),
    ErrorCase(kind: "unknown map local key", profile: withFinal("[Map Local]\n^http://a\\.test/ data-type=text data=x status=404"),
              errors: [(2, "unknown key 'status' in [Map Local]", "did you mean status-code?")]),
    ErrorCase(kind: "bad status code", profile: withFinal("[Map Local]\n^http://a\\.test/ data-type=text data=x status-code=99"),
              errors: [(2, "status-code must be from 100 to 599, got 99", "write a number from 100 to 599")]),
    ErrorCase(kind: "statistics key without group", profile: withFinal("[Statistics]\napi = \"^http://api\\.test/\", key=$1"),
              errors: [(2, "key=$1 but the regex has 0 capture groups", "put parentheses around the part of the URL to count by")]),
    ErrorCase(kind: "control character in a header value", profile: withFinal("[Header Rewrite]\nhttp-request ^http:// header-add X-A \"a\rSet-Cookie: x=1\""),
              errors: [(2, "header value contains the control character U+000D", "remove it; header values and URLs are printable text")]),
    ErrorCase(kind: "capture unknown key", profile: withFinal("[Capture]\nsnap-len = 65535"),
              errors: [(2, "unknown key 'snap-len' in [Capture]", "did you mean snaplen?")]),
    ErrorCase(kind: "capture per-flow without a folder", profile: withFinal("[Capture]\nper-flow = \"\""),
              errors: [(2, "per-flow needs a folder", "a relative path is taken from the profile's folder")]),
]

@Suite struct ProfileErrorTests {
    @Test(arguments: errorCases)
    func eachMistakeIsReportedExactly(_ item: ErrorCase) {
        guard case let .failure(failure) = loadProfile(item.profile) else {
            Issue.record("\(item.kind): the profile loaded")
            return
        }
        let got = failure.errors.map { "\($0.line) | \($0.message) | \($0.hint)" }
        let expected = item.errors.map { "\($0.0) | \($0.1) | \($0.2)" }
        #expect(got == expected, "\(item.kind)")
        #expect(failure.errors.allSatisfy { $0.file == "sluice.conf" && $0.severity == .error })
    }

    @Test func thereAreAtLeastTwentyKinds() {
        #expect(Set(errorCases.map(\.kind)).count == errorCases.count)
        #expect(errorCases.count >= 20)
    }

    @Test func errorsPrintLikeACompiler() {
        guard case let .failure(failure) = loadProfile("[Rule]\nDOMAIN-SUFIX,ads.test,REJECT\nFINAL,DIRECT\n") else {
            Issue.record("loaded"); return
        }
        #expect(failure.description == "sluice.conf:2: error: unknown rule type 'DOMAIN-SUFIX'\n  hint: did you mean DOMAIN-SUFFIX?")
        #expect(failure.errors[0].column == 1)
    }

    /// A profile with many mistakes reports all of them, in line order, and
    /// still reports names that are never defined.
    @Test func everyErrorIsCollected() {
        let text = """
        [General]
        loglevel = loud
        mtu = 10

        [Proxy]
        corp = socks5, proxy.test, 99999

        [Rule]
        DOMAIN,api.test,corp
        DOMAIN-SUFFIX,ads.test,REJCT
        IP-CIDR,10.0.0.0/99,DIRECT
        URL-REGEX,"(",DIRECT
        FINAL,nowhere
        DOMAIN,late.test,DIRECT
        """
        guard case let .failure(failure) = loadProfile(text) else { Issue.record("loaded"); return }
        #expect(failure.errors.map { "\($0.line): \($0.message)" } == [
            "2: unknown loglevel 'loud'",
            "3: mtu must be from 1280 to 65535, got 10",
            "6: port must be from 1 to 65535, got 99999",
            // corp failed to load, so its use is an error too: nothing half-loads.
            "9: unknown policy 'corp' in rule DOMAIN,api.test",
            "10: unknown policy 'REJCT' in rule DOMAIN-SUFFIX,ads.test",
            "11: IP-CIDR '10.0.0.0/99' is not an IPv4 network",
            #"12: regex "(" does not compile"#,
            "13: unknown policy 'nowhere' in FINAL",
            "14: rule after FINAL can never match",
        ])
    }

    /// Big rule lists (pasted ad lists) load, and duplicate checks stay linear.
    @Test func tenThousandRulesLoad() throws {
        var text = "[Rule]\n"
        for i in 0 ..< 10_000 { text += "DOMAIN-SUFFIX,ads\(i).test,REJECT\n" }
        text += "FINAL,DIRECT\n[Host]\n"
        for i in 0 ..< 2_000 { text += "h\(i).test = 10.0.\(i / 256).\(i % 256)\n" }
        let profile = try loadProfile(text).get()
        #expect(profile.rules.count == 10_000)
        #expect(profile.rules.last?.condition == .domainSuffix("ads9999.test"))
        #expect(profile.hosts.count == 2_000)
    }

    /// The spec's annotated example, pasted as printed: every annotated line fails,
    /// and the hint says why.
    @Test func trailingCommentsGetTheirOwnHint() {
        let text = """
        [General]
        loglevel = info                      # error | warning | info | debug
        [Rule]                               # TYPE,VALUE,POLICY[,options]
        DEST-PORT,5432,DIRECT                // DST-PORT accepted as an alias
        FINAL,DIRECT
        [URL Rewrite]
        ^http://api\\.test/(.*) http://api.staging.test/$1 header     # transparent
        """
        guard case let .failure(failure) = loadProfile(text) else { Issue.record("loaded"); return }
        let comment = "a '#' or '//' after a value is part of the value; comments go on their own line"
        #expect(failure.errors.map { "\($0.line) | \($0.message) | \($0.hint)" } == [
            "2 | unknown loglevel 'info                      # error | warning | info | debug' | \(comment)",
            "3 | text after the section header [Rule] | comments go on their own line, starting with #, ; or //",
            "4 | unknown policy 'DIRECT                // DST-PORT accepted as an alias' in rule DEST-PORT,5432 | \(comment)",
            "7 | [URL Rewrite] lines have 3 fields (REGEX REPLACEMENT MODE), got 5 | \(comment)",
        ])
    }

    @Test func columnsPointAtTheField() {
        guard case let .failure(failure) = loadProfile("[Rule]\nDOMAIN,a.test,DIRECT\n  IP-CIDR, 10.0.0.0/40 ,DIRECT\nFINAL,DIRECT\n") else {
            Issue.record("loaded"); return
        }
        #expect(failure.errors.map(\.column) == [12])
    }
}

@Suite struct ProfileWarningTests {
    @Test func warningsDoNotStopTheLoad() throws {
        let text = """
        [General]
        fake-ip-range = 198.18.1.0/15
        [Rule]
        IP-CIDR,10.1.2.3/8,DIRECT
        IP-CIDR6,fd00::1/8,DIRECT
        FINAL,DIRECT
        [URL Rewrite]
        ^http://a\\.test/(.*) http://b.test/$1 302
        """
        let profile = try loadProfile(text).get()
        #expect(profile.general.fakeIPRange.description == "198.18.0.0/15")
        #expect(profile.warnings.map(\.description) == [
            "sluice.conf:2: warning: fake-ip-range '198.18.1.0/15' has host bits set; it means 198.18.0.0/15\n  hint: write 198.18.0.0/15",
            "sluice.conf:4: warning: IP-CIDR '10.1.2.3/8' has host bits set; it means 10.0.0.0/8\n  hint: write 10.0.0.0/8",
            "sluice.conf:5: warning: IP-CIDR6 'fd00::1/8' has host bits set; it means fd00::/8\n  hint: write fd00::/8",
            "sluice.conf:8: warning: 302 makes clients repeat a POST, PUT or DELETE as a GET without its body\n  hint: this rewrite matches requests of any method; use 307 to keep the method and body",
        ])
    }

    /// Nested repetition is warned about only where Swift's Regex runs it:
    /// outside the linear subset (here because of \b or a lookahead).
    @Test func nestedRepetitionOutsideTheLinearSubsetIsWarnedAbout() throws {
        let text = """
        [Rule]
        URL-REGEX,"^http://(\\w+\\.)+test\\b",DIRECT
        URL-REGEX,"^http://(\\w+\\.)+test/",DIRECT
        URL-REGEX,"(a+)+$",REJECT
        URL-REGEX,"(?=x)(a|b*){2,}",REJECT
        URL-REGEX,"(?=x)(a{2}b)+[(]+",REJECT
        FINAL,DIRECT
        [Header Rewrite]
        http-response ^http://a\\.test/ header-replace-regex Set-Cookie "(?:(?!x)[^;]*;?)*" "y"
        """
        let profile = try loadProfile(text).get()
        #expect(profile.warnings.map(\.line) == [2, 5, 9], "\(profile.warnings)")
        #expect(profile.warnings.first?.description.hasPrefix(#"sluice.conf:2: warning: regex '^http://(\w+\.)+test\b' repeats a group that itself repeats"#) == true,
                "\(profile.warnings)")
    }

    @Test func nestedRepetitionIsFoundInTheText() {
        for (pattern, expected) in [("(a+)+", 4), ("(a*)*", 4), ("(?:x|y*){3,}", 8), ("((a)+)+", 6), ("(a{2,})*?", 7), ("(a\\+)+", nil),
                                    ("[(a+)]+", nil), ("(a+){2}", nil), ("(a?)+", nil), ("(a+)", nil), ("\\Q(a+)+\\E", nil), ("a{,3}(b+)+", 9)] as [(String, Int?)] {
            #expect(NestedRepetition.find(in: pattern) == expected, "\(pattern)")
        }
    }

    @Test func warningsTravelWithErrors() {
        guard case let .failure(failure) = loadProfile("[Rule]\nIP-CIDR,10.1.0.0/8,DIRECT\nFINAL,NOPE\n") else { Issue.record("loaded"); return }
        #expect(failure.errors.count == 1)
        #expect(failure.warnings.count == 1)
        #expect(failure.description.hasPrefix("sluice.conf:2: warning: IP-CIDR '10.1.0.0/8' has host bits set"))
    }
}
