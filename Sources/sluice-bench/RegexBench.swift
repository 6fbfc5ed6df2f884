// The URL-regex benchmark: profile regexes of the usual kinds on URLs of the
// usual kinds, answered over bytes (CompiledRegex.matches and firstMatch,
// through the byte matcher) and by Swift's Regex, for contrast.
import Rules
import Wire

func benchRegexes(rounds: Int) {
    let patterns = [#"^https?://([a-z0-9-]+\.)*ads\.test/"#, #"\.(png|jpe?g|gif)$"#,
                    #"^http://api\.test/(v[0-9])/(.*)$"#, #"/api/v\d+/users/\w+$"#]
    let urls = ["http://10.89.0.2:8080/1k", "http://api.test/v2/users?id=1",
                "http://x.y.ads.test/banner/very/long/path/with/many/segments.png"]
    let compiled = patterns.map { try! CompiledRegex($0) }
    let cases: [(String, (CompiledRegex, String) -> Bool)] = [
        ("matches (yes or no, over bytes)", { $0.matches($1) }),
        ("firstMatch with its groups (over bytes)", { $0.firstMatch(in: $1) != nil }),
        ("for contrast, Swift's Regex.firstMatch", { (try? $0.regex.firstMatch(in: $1)) != nil }),
    ]
    print("regex benchmark: \(patterns.count) patterns on \(urls.count) URLs, median of \(rounds) rounds (ns per call)")
    let clock = ContinuousClock()
    for (name, call) in cases {
        var times: [Double] = []
        var hits = 0
        for _ in 0 ..< rounds {
            let iterations = 20_000
            let start = clock.now
            for _ in 0 ..< iterations {
                for regex in compiled { for url in urls where call(regex, url) { hits += 1 } }
            }
            times.append((clock.now - start).nanosecondsDouble / Double(iterations * compiled.count * urls.count))
        }
        print("  \(name): \(format1(median(times))) ns (\(hits / rounds) matches a round)")
    }
}

/// RuleEngine.evaluate for an HTTP request against profiles of N URL-REGEX
/// lines of the kinds ad-blocking lists hold, none of which matches: the
/// cost an ad-blocking profile puts on every request that it lets through.
func benchURLRules(rounds: Int) {
    let urls = ["http://10.89.0.2:8080/1k", "http://api.example.test/v2/users?id=1&x=2",
                "https://www.news.test/2026/12/01/article-about-something.html"]
    print("URL-REGEX benchmark: RuleEngine.evaluate of \(urls.count) requests that no line matches, median of \(rounds) rounds (ns per evaluation)")
    for count in [10, 500, 2000] {
        var text = "[Rule]\n"
        for i in 0 ..< count {
            switch i % 4 {
            case 0: text += "URL-REGEX,\"^https?://([a-z0-9-]+\\.)*adserver\(i)\\.test/\",REJECT\n"
            case 1: text += "URL-REGEX,\"^https?://[^/]+/ads/\(i)/\",REJECT\n"
            case 2: text += "URL-REGEX,\"\\.tracker\(i)\\.test/pixel\",REJECT\n"
            default: text += "URL-REGEX,\"^http://cdn\(i)\\.test/banner\",REJECT\n"
            }
        }
        text += "FINAL,DIRECT\n"
        guard case let .success(profile) = ProfileParser.parse(text, file: "bench.conf", baseDirectory: "/") else {
            print("  the generated profile does not load"); return
        }
        let engine = RuleEngine(profile)
        let flows = urls.map {
            FlowFacts(transport: .tcp, destination: IPAddress("10.89.0.2"), destinationPort: 80, domain: "x.test",
                      applicationProtocol: .http, request: RequestFacts(method: "GET", url: $0))
        }
        var sink = 0
        let clock = ContinuousClock()
        var times: [Double] = []
        for _ in 0 ..< rounds {
            let iterations = 300
            let start = clock.now
            for _ in 0 ..< iterations { for flow in flows { if case let .matched(d) = engine.evaluate(flow, final: true) { sink &+= d.line } } }
            times.append((clock.now - start).nanosecondsDouble / Double(iterations * flows.count))
        }
        print("  \(count) URL-REGEX lines: \(format1(median(times))) ns")
        if sink == 42 { print("") }
    }
    benchKeywordRules(rounds: rounds)
    benchRejectRewrites(rounds: rounds)
}

/// [URL Rewrite] reject lines as ad-blocking modules write them
/// (`^https?://…`, a prefix that rules nothing out): URLRewriter.rewrite of
/// URLs that no line matches.
func benchRejectRewrites(rounds: Int) {
    let urls = ["http://10.89.0.2:8080/1k", "http://api.example.test/v2/users?id=1&x=2",
                "https://www.news.test/2026/12/01/article-about-something.html"]
    print("URL Rewrite benchmark: URLRewriter.rewrite of \(urls.count) URLs that no reject line matches, median of \(rounds) rounds (ns per URL)")
    for count in [10, 500, 2000] {
        let rewrites = (0 ..< count).map { i in
            URLRewrite(regex: try! CompiledRegex(i % 2 == 0 ? "^https?://([a-z0-9-]+\\.)*adserver\(i)\\.test/" : "^https?://[^/]+/ads/\(i)/"),
                       replacement: "_", mode: .reject, line: i + 1)
        }
        let rewriter = URLRewriter(rewrites: rewrites)
        var sink = 0
        let clock = ContinuousClock()
        var times: [Double] = []
        for _ in 0 ..< rounds {
            let iterations = 300
            let start = clock.now
            for _ in 0 ..< iterations { for url in urls { if case .none = rewriter.rewrite(url: url) { sink &+= 1 } } }
            times.append((clock.now - start).nanosecondsDouble / Double(iterations * urls.count))
        }
        print("  \(count) reject lines: \(format1(median(times))) ns")
        if sink == 42 { print("") }
    }
}

/// The same for DOMAIN-KEYWORD lines and new flows' host names.
func benchKeywordRules(rounds: Int) {
    let hosts = ["www.example.test", "api.service.internal.test", "cdn-123.static.news.test"]
    print("DOMAIN-KEYWORD benchmark: RuleEngine.evaluate of \(hosts.count) TLS flows that no line matches, median of \(rounds) rounds (ns per evaluation)")
    for count in [10, 500, 2000] {
        var text = "[Rule]\n"
        for i in 0 ..< count { text += "DOMAIN-KEYWORD,adkw\(i)x,REJECT\n" }
        text += "FINAL,DIRECT\n"
        guard case let .success(profile) = ProfileParser.parse(text, file: "bench.conf", baseDirectory: "/") else {
            print("  the generated profile does not load"); return
        }
        let engine = RuleEngine(profile)
        let flows = hosts.map { FlowFacts(transport: .tcp, destinationPort: 443, domain: $0, applicationProtocol: .tls) }
        var sink = 0
        let clock = ContinuousClock()
        var times: [Double] = []
        for _ in 0 ..< rounds {
            let iterations = 300
            let start = clock.now
            for _ in 0 ..< iterations { for flow in flows { if case let .matched(d) = engine.evaluate(flow, final: true) { sink &+= d.line } } }
            times.append((clock.now - start).nanosecondsDouble / Double(iterations * flows.count))
        }
        print("  \(count) DOMAIN-KEYWORD lines: \(format1(median(times))) ns")
        if sink == 42 { print("") }
    }
}
