// The URL-regex benchmarks: profile regexes of the usual kinds on URLs of the
// usual kinds, answered over bytes (CompiledRegex.matches and firstMatch,
// through the byte matcher) and by Swift's Regex, for contrast; then the
// rule engine and the URL rewriter against ad-blocking lists of growing size.
import Rules
import Wire

/// The median over `rounds` of the ns per call of `body`, which makes
/// `calls` calls each time it runs; `body` runs `iterations` times a round.
func nanosecondsPerCall(rounds: Int, iterations: Int, calls: Int, _ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    var times: [Double] = []
    for _ in 0 ..< rounds {
        let start = clock.now
        for _ in 0 ..< iterations { body() }
        times.append((clock.now - start).nanosecondsDouble / Double(iterations * calls))
    }
    return median(times)
}

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
    for (name, call) in cases {
        var hits = 0
        let ns = nanosecondsPerCall(rounds: rounds, iterations: 20_000, calls: compiled.count * urls.count) {
            for regex in compiled { for url in urls where call(regex, url) { hits += 1 } }
        }
        print("  \(name): \(format1(ns)) ns (\(hits / rounds) matches a round)")
    }
    benchListRules(rounds: rounds)
}

/// Ad-blocking lists of 10, 500 and 2,000 lines, none of which matches the
/// requests: RuleEngine.evaluate against URL-REGEX lines (each HTTP request)
/// and DOMAIN-KEYWORD and DOMAIN-REGEX lines (each new flow), and URLRewriter.rewrite against
/// [URL Rewrite] reject lines.
func benchListRules(rounds: Int) {
    let urls = ["http://10.89.0.2:8080/1k", "http://api.example.test/v2/users?id=1&x=2",
                "https://www.news.test/2026/12/01/article-about-something.html"]
    let hosts = ["www.example.test", "api.service.internal.test", "cdn-123.static.news.test"]
    let requests = urls.map {
        FlowFacts(transport: .tcp, destination: IPAddress("10.89.0.2"), destinationPort: 80, domain: "x.test",
                  applicationProtocol: .http, request: RequestFacts(method: "GET", url: $0))
    }
    let flows = hosts.map { FlowFacts(transport: .tcp, destinationPort: 443, domain: $0, applicationProtocol: .tls) }
    func engine(_ lines: (Int) -> String, count: Int) -> RuleEngine? {
        let text = "[Rule]\n" + (0 ..< count).map(lines).joined(separator: "\n") + "\nFINAL,DIRECT\n"
        guard case let .success(profile) = ProfileParser.parse(text, file: "bench.conf", baseDirectory: "/") else { return nil }
        return RuleEngine(profile)
    }
    func evaluate(_ engine: RuleEngine, _ facts: [FlowFacts], into sink: inout Int) {
        for fact in facts { if case let .matched(d) = engine.evaluate(fact, final: true) { sink &+= d.line } }
    }
    var sink = 0
    print("ad-blocking lists, none of whose lines matches, median of \(rounds) rounds (ns per request, flow or URL)")
    for count in [10, 500, 2000] {
        guard let urlRules = engine({ i in
            ["URL-REGEX,\"^https?://([a-z0-9-]+\\.)*adserver\(i)\\.test/\",REJECT", "URL-REGEX,\"^https?://[^/]+/ads/\(i)/\",REJECT",
             "URL-REGEX,\"\\.tracker\(i)\\.test/pixel\",REJECT", "URL-REGEX,\"^http://cdn\(i)\\.test/banner\",REJECT"][i % 4]
        }, count: count), let keywordRules = engine({ "DOMAIN-KEYWORD,adkw\($0)x,REJECT" }, count: count),
              let domainRegexRules = engine({ i in
                  ["DOMAIN-REGEX,\"(^|\\.)adserver\(i)\\.test$\",REJECT", "DOMAIN-REGEX,\"^track[0-9]*\\.pixel\(i)\\.\",REJECT"][i % 2]
              }, count: count) else {
            print("  the generated profiles do not load"); return
        }
        let rewriter = URLRewriter(rewrites: (0 ..< count).map { i in
            URLRewrite(regex: try! CompiledRegex(i % 2 == 0 ? "^https?://([a-z0-9-]+\\.)*adserver\(i)\\.test/" : "^https?://[^/]+/ads/\(i)/"),
                       replacement: "_", mode: .reject, line: i + 1)
        })
        let urlNs = nanosecondsPerCall(rounds: rounds, iterations: 300, calls: requests.count) { evaluate(urlRules, requests, into: &sink) }
        let keywordNs = nanosecondsPerCall(rounds: rounds, iterations: 300, calls: flows.count) { evaluate(keywordRules, flows, into: &sink) }
        let domainRegexNs = nanosecondsPerCall(rounds: rounds, iterations: 300, calls: flows.count) { evaluate(domainRegexRules, flows, into: &sink) }
        let rewriteNs = nanosecondsPerCall(rounds: rounds, iterations: 300, calls: urls.count) {
            for url in urls { if case .none = rewriter.rewrite(url: url) { sink &+= 1 } }
        }
        print("  \(count) lines: URL-REGEX \(format1(urlNs)) ns, DOMAIN-KEYWORD \(format1(keywordNs)) ns, DOMAIN-REGEX \(format1(domainRegexNs)) ns, "
            + "URL Rewrite reject \(format1(rewriteNs)) ns")
    }
    if sink == 42 { print("") }
}
