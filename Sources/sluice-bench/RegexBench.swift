// The URL-regex benchmark: profile regexes of the usual kinds on URLs of the
// usual kinds, answered over bytes (CompiledRegex.matches and firstMatch,
// through the byte matcher) and by Swift's Regex, for contrast.
import Rules

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
