import Testing
import Wire
@testable import Rules

/// RULE-SET and DOMAIN-SET: files of rules that take the policy of the line
/// naming them, read through the caller's reader (here, a dictionary).
@Suite struct RuleSetTests {
    /// Parses `profile` as /etc/sluice/sluice.conf with `files` (paths relative to /etc/sluice).
    func load(_ profile: String, files: [String: String] = [:], reads: Counter? = nil) -> Result<Profile, ProfileErrors> {
        ProfileParser.parse(profile, file: "sluice.conf", baseDirectory: "/etc/sluice") { path in
            reads?.paths.append(path)
            guard path.hasPrefix("/etc/sluice/"), let text = files[String(path.dropFirst("/etc/sluice/".count))] else {
                return .unreadable("no such file")
            }
            return .text(text)
        }
    }

    final class Counter: @unchecked Sendable { var paths: [String] = [] }

    func tcp(_ domain: String?, to address: String? = nil, port: UInt16 = 443) -> FlowFacts {
        FlowFacts(transport: .tcp, destination: address.map { IPAddress($0)! }, destinationPort: port, sourcePort: 40000,
                  domain: domain, applicationProtocol: .tls)
    }

    func decide(_ profile: Profile, _ facts: FlowFacts) -> RuleDecision? {
        if case let .matched(decision) = RuleEngine(profile).evaluate(facts, final: true) { return decision }
        return nil
    }

    static let adsList = "# ads, as Surge lists are written\r\nDOMAIN-SUFFIX,ads.test\r\n\r\nDOMAIN,pixel.track.test,extended-matching\r\nIP-CIDR,192.0.2.0/24,no-resolve\r\nDOMAIN-KEYWORD,banner\r\n"

    @Test func aSetsRulesTakeItsPolicyAtItsPlaceInTheOrder() throws {
        let profile = try load("""
        [Rule]
        DOMAIN,keep.ads.test,DIRECT
        RULE-SET,lists/ads.list,REJECT
        DOMAIN-SUFFIX,test,REJECT-DROP
        FINAL,DIRECT
        """, files: ["lists/ads.list": Self.adsList]).get()
        #expect(profile.rules.count == 3)
        // An earlier line wins over the set; the set over a later line.
        #expect(decide(profile, tcp("keep.ads.test"))?.policy == "DIRECT")
        let hit = try #require(decide(profile, tcp("x.ads.test")))
        #expect(hit.policy == "REJECT")
        #expect(hit.line == 3)
        #expect(hit.text == "RULE-SET,lists/ads.list,REJECT")
        #expect(decide(profile, tcp("pixel.track.test"))?.policy == "REJECT")
        #expect(decide(profile, tcp("topbanner.example"))?.policy == "REJECT")
        #expect(decide(profile, tcp(nil, to: "192.0.2.77"))?.policy == "REJECT")
        #expect(decide(profile, tcp("other.track.test"))?.policy == "REJECT-DROP")
        #expect(decide(profile, tcp(nil, to: "198.51.100.1"))?.policy == "DIRECT")
        guard case let .ruleSet(set, noResolve) = profile.rules[1].condition else {
            Issue.record("not a set: \(profile.rules[1].condition)"); return
        }
        #expect(!noResolve)
        #expect(set.path == "/etc/sluice/lists/ads.list")
        #expect(set.rules.map(\.line) == [2, 4, 5, 6])
        #expect(set.rules.map(\.condition.description) == ["DOMAIN-SUFFIX,ads.test", "DOMAIN,pixel.track.test",
                                                           "IP-CIDR,192.0.2.0/24", "DOMAIN-KEYWORD,banner"])
    }

    @Test func aDomainSetsLeadingDotCoversTheNameAndEveryNameUnderIt() throws {
        let profile = try load("""
        [Rule]
        DOMAIN-SET,ads.txt,REJECT,capture
        FINAL,DIRECT
        """, files: ["ads.txt": "# a list\n.ads.test\ntracker.test\nCDN.Example.test.\n_dmarc.mail.test\n"]).get()
        #expect(profile.rules[0].options.capture)
        #expect(decide(profile, tcp("ads.test"))?.policy == "REJECT")
        #expect(decide(profile, tcp("a.b.ads.test"))?.policy == "REJECT")
        #expect(decide(profile, tcp("badads.test"))?.policy == "DIRECT")
        #expect(decide(profile, tcp("tracker.test"))?.policy == "REJECT")
        #expect(decide(profile, tcp("x.tracker.test"))?.policy == "DIRECT")
        #expect(decide(profile, tcp("cdn.example.test"))?.policy == "REJECT")
        #expect(decide(profile, tcp("_dmarc.mail.test"))?.policy == "REJECT")
        #expect(decide(profile, tcp("ads.test"))?.capture == true)
        #expect(profile.rules[0].description == "DOMAIN-SET,ads.txt,REJECT,capture")
        let lines = ProfileExplainer.explain(profile, url: "http://a.b.ADS.test/x")
        #expect(lines.contains("3. Rule: line 2 (DOMAIN-SET,ads.txt,REJECT,capture) matches: /etc/sluice/ads.txt:2 (DOMAIN-SUFFIX,ads.test): the host a.b.ads.test is under ads.test"),
                "\(lines.joined(separator: "\n"))")
    }

    @Test func lanIsBuiltIn() throws {
        let profile = try load("[Rule]\nRULE-SET,LAN,DIRECT\nFINAL,REJECT\n").get()
        for address in ["10.1.2.3", "172.31.0.1", "192.168.1.1", "100.64.0.9", "127.0.0.1", "169.254.1.1",
                        "::1", "fd00::2", "fe80::1"] {
            #expect(decide(profile, tcp(nil, to: address))?.policy == "DIRECT", "\(address)")
        }
        #expect(decide(profile, tcp("printer.local"))?.policy == "DIRECT")
        #expect(decide(profile, tcp("nas.home.arpa"))?.policy == "DIRECT")
        for address in ["172.32.0.1", "192.0.2.1", "2001:db8::1", "8.8.8.8"] {
            #expect(decide(profile, tcp(nil, to: address))?.policy == "REJECT", "\(address)")
        }
        #expect(decide(profile, tcp("local.test"))?.policy == "REJECT")
    }

    /// A set of domain rules cannot say no before the name is known, as the
    /// rules themselves could not: the flow is sniffed first.
    @Test func aSetWaitsForTheNameAsItsDomainRulesWould() throws {
        let profile = try load("[Rule]\nDOMAIN-SET,ads.txt,REJECT\nFINAL,DIRECT\n", files: ["ads.txt": ".ads.test\n"]).get()
        let engine = RuleEngine(profile)
        let unnamed = FlowFacts(transport: .tcp, destination: IPAddress("192.0.2.1"), destinationPort: 443, sourcePort: 40000)
        #expect(engine.evaluate(unnamed) == .needsApplicationData)
        #expect(engine.evaluate(unnamed, final: true).policy == "DIRECT")
        var named = unnamed
        named.domain = "x.ads.test"
        #expect(engine.evaluate(named).policy == "REJECT")
        // A URL rule in a set waits for the request; a match elsewhere in the set does not.
        let mixed = try load("[Rule]\nRULE-SET,mixed.list,REJECT\nFINAL,DIRECT\n",
                             files: ["mixed.list": "URL-REGEX,^http://x\\.test/ad\nDEST-PORT,8443\n"]).get()
        let mixedEngine = RuleEngine(mixed)
        #expect(mixedEngine.evaluate(FlowFacts(transport: .tcp, destination: IPAddress("192.0.2.1"), destinationPort: 80, sourcePort: 1)) == .needsApplicationData)
        #expect(mixedEngine.evaluate(FlowFacts(transport: .tcp, destination: IPAddress("192.0.2.1"), destinationPort: 8443, sourcePort: 1)).policy == "REJECT")
        #expect(mixedEngine.evaluate(httpFlow("http://x.test/ad/1")).policy == "REJECT")
        #expect(mixedEngine.evaluate(httpFlow("http://x.test/page")).policy == "DIRECT")
    }

    @Test func setsWorkInsideLogicalRulesAndAreReadOncePerLoad() throws {
        let reads = Counter()
        let profile = try load("""
        [Rule]
        AND,((RULE-SET,ads.list),(DEST-PORT,443)),REJECT
        NOT,((RULE-SET,ads.list)),DIRECT
        RULE-SET,ads.list,REJECT-DROP,no-resolve
        FINAL,DIRECT
        """, files: ["ads.list": Self.adsList], reads: reads).get()
        #expect(reads.paths == ["/etc/sluice/ads.list"])
        #expect(decide(profile, tcp("x.ads.test", port: 443))?.policy == "REJECT")
        #expect(decide(profile, tcp("other.test", port: 80))?.policy == "DIRECT")
        #expect(decide(profile, tcp("x.ads.test", port: 80))?.policy == "REJECT-DROP")
        #expect(profile.rules[0].description == "AND,((RULE-SET,ads.list),(DEST-PORT,443)),REJECT")
        #expect(profile.rules[2].description == "RULE-SET,ads.list,REJECT-DROP,no-resolve")
    }

    func errors(_ profile: String, files: [String: String]) -> [String] {
        switch load(profile, files: files) {
        case .success: return []
        case let .failure(failure): return failure.errors.map(\.description)
        }
    }

    @Test func mistakesInASetFilePointIntoThatFile() {
        let found = errors("""
        [Rule]
        RULE-SET,bad.list,REJECT
        DOMAN,x.test,DIRECT
        FINAL,DIRECT
        """, files: ["bad.list": """
        DOMAIN-SUFFIX,fine.test
        DOMAN-SUFFIX,ads.test
        DOMAIN,x.test,REJECT
        FINAL,DIRECT
        RULE-SET,other.list
        DOMAIN,y.test,capture
        IP-CIDR,300.1.1.1/8
        DOMAIN-SUFFIX
        """])
        #expect(found == [
            "sluice.conf:3: error: unknown rule type 'DOMAN'\n  hint: did you mean DOMAIN?",
            "/etc/sluice/bad.list:2: error: unknown rule type 'DOMAN-SUFFIX'\n  hint: did you mean DOMAIN-SUFFIX?",
            "/etc/sluice/bad.list:3: error: 'REJECT' after a rule in a set: its rules take no policy\n  hint: remove it; every rule here takes the policy of the line that names the set (options: no-resolve, extended-matching)",
            "/etc/sluice/bad.list:4: error: FINAL has no place in a rule set\n  hint: remove it; FINAL ends the profile's [Rule]",
            "/etc/sluice/bad.list:5: error: a rule set cannot name another set\n  hint: give that set its own RULE-SET line in the profile's [Rule], or copy its lines into this file",
            "/etc/sluice/bad.list:6: error: capture goes on the line that names the set\n  hint: write it after the policy there, as RULE-SET,FILE,POLICY,capture",
            "/etc/sluice/bad.list:7: error: IP-CIDR '300.1.1.1/8' is not an IPv4 network\n  hint: write ADDRESS/LENGTH, e.g. 10.0.0.0/8",
            "/etc/sluice/bad.list:8: error: DOMAIN-SUFFIX needs a value\n  hint: write DOMAIN-SUFFIX,VALUE; the policy is the one on the line that names the set",
        ], "\(found.joined(separator: "\n"))")
    }

    @Test func setsThatCannotBeReadAreErrorsOnTheLineNamingThem() {
        let found = errors("""
        [Rule]
        RULE-SET,missing.list,REJECT
        DOMAIN-SET,https://lists.test/ads.txt,REJECT
        AND,((RULE-SET,SYSTEM),(DEST-PORT,443)),DIRECT
        DOMAIN-SET,ads.txt,REJECT,no-resolve
        FINAL,DIRECT
        """, files: ["ads.txt": ".ads.test\n"])
        #expect(found == [
            "sluice.conf:2: error: cannot read the rule set /etc/sluice/missing.list: no such file\n  hint: check the path; a relative path starts at the profile's folder, /etc/sluice",
            "sluice.conf:3: error: DOMAIN-SET takes a file, not a URL\n  hint: download it once (curl -o ads.list 'https://lists.test/ads.txt') and write DOMAIN-SET,ads.list,POLICY; a relative path starts at the profile's folder",
            "sluice.conf:4: error: RULE-SET,SYSTEM is Surge's list of Apple's own system services\n  hint: remove it; Linux has no such set (LAN is built in)",
            "sluice.conf:5: error: no-resolve applies only to IP-CIDR, IP-CIDR6, GEOIP, IP-ASN and RULE-SET\n  hint: remove it from this DOMAIN-SET rule",
        ], "\(found.joined(separator: "\n"))")
    }

    @Test func aDomainSetSaysWhatItExpects() {
        let found = errors("[Rule]\nDOMAIN-SET,hosts,REJECT\nFINAL,DIRECT\n",
                           files: ["hosts": "0.0.0.0 ads.test\nads test\nhttp://ads.test/\n"])
        #expect(found == [
            "/etc/sluice/hosts:1: error: a domain set holds one name per line, got '0.0.0.0 ads.test'\n  hint: this looks like a hosts file line; keep only the names, one per line",
            "/etc/sluice/hosts:2: error: a domain set holds one name per line, got 'ads test'\n  hint: write one name per line: ads.test for that name, .ads.test for it and every name under it",
            "/etc/sluice/hosts:3: error: 'http://ads.test/' is not a domain name\n  hint: write one name per line: ads.test for that name, .ads.test for it and every name under it",
        ], "\(found.joined(separator: "\n"))")
        let clash = errors("[Rule]\nRULE-SET,provider.yaml,REJECT\nFINAL,DIRECT\n",
                           files: ["provider.yaml": "payload:\n  - DOMAIN-SUFFIX,ads.test\n"])
        #expect(clash == ["/etc/sluice/provider.yaml:1: error: this looks like a Clash rule provider (payload:), not a Surge list\n  hint: write one entry per line, without the payload: line and the '- ' before each entry"])
    }

    /// A file that is not a list at all gives a screenful, not a line per line.
    @Test func aFileThatIsNotAListStopsAfterTwentyErrors() {
        let junk = (1 ... 500).map { "junk line \($0)" }.joined(separator: "\n")
        let found = errors("[Rule]\nDOMAIN-SET,junk.txt,REJECT\nFINAL,DIRECT\n", files: ["junk.txt": junk])
        #expect(found.count == 21)
        #expect(found.last?.hasPrefix("/etc/sluice/junk.txt:21: error: stopped reading after 20 errors") == true)
    }

    @Test func anEmptySetLoadsWithAWarning() throws {
        let profile = try load("[Rule]\nDOMAIN-SET,empty.txt,REJECT\nFINAL,DIRECT\n", files: ["empty.txt": "# nothing yet\n"]).get()
        #expect(profile.warnings.map(\.description) == [
            "sluice.conf:2: warning: the domain set /etc/sluice/empty.txt holds no names\n  hint: this line matches nothing",
        ])
        #expect(decide(profile, tcp("ads.test"))?.policy == "DIRECT")
    }

    /// The set's own engine against reading its rules top to bottom, on seeded
    /// random sets and flows.
    @Test func aSetMatchesExactlyWhenOneOfItsRulesDoes() throws {
        var state: UInt64 = 5
        func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(state >> 33) % n
        }
        let labels = ["a", "ads", "test", "x", "cdn"]
        func name() -> String { (0 ..< 1 + next(3)).map { _ in labels[next(labels.count)] }.joined(separator: ".") }
        for _ in 0 ..< 20 {
            var lines: [String] = []
            for _ in 0 ..< 1 + next(12) {
                switch next(5) {
                case 0: lines.append("DOMAIN,\(name())")
                case 1: lines.append("DOMAIN-SUFFIX,\(name())")
                case 2: lines.append("DOMAIN-KEYWORD,\(labels[next(labels.count)])")
                case 3: lines.append("IP-CIDR,10.\(next(4)).0.0/16")
                default: lines.append("DEST-PORT,\(440 + next(6))")
                }
            }
            let profile = try load("[Rule]\nRULE-SET,r.list,HIT\nFINAL,MISS\n[Proxy]\nHIT = reject\nMISS = reject-rst\n",
                                   files: ["r.list": lines.joined(separator: "\n")]).get()
            guard case let .ruleSet(set, _) = profile.rules[0].condition else { Issue.record("no set"); return }
            for _ in 0 ..< 100 {
                let facts = tcp(next(4) == 0 ? nil : name(), to: "10.\(next(5)).1.1", port: UInt16(440 + next(6)))
                let expected = set.rules.contains { $0.condition.verdict(facts, final: true) == .match }
                #expect(set.verdict(facts, final: true) == (expected ? .match : .noMatch), "\(lines) \(facts)")
                #expect(set.firstMatch(facts, final: true)?.line == set.rules.first { $0.condition.verdict(facts, final: true) == .match }?.line)
            }
        }
    }

    /// Published lists (and Surge since Mac 6.0) write one address without a length.
    @Test func anIPRuleMayNameOneAddress() throws {
        let profile = try load("[Rule]\nRULE-SET,hosts.list,REJECT\nIP-CIDR6,fd00::7,REJECT-DROP\nFINAL,DIRECT\n",
                               files: ["hosts.list": "IP-CIDR,192.0.2.7,no-resolve\n"]).get()
        #expect(profile.warnings.isEmpty)
        #expect(decide(profile, tcp(nil, to: "192.0.2.7"))?.policy == "REJECT")
        #expect(decide(profile, tcp(nil, to: "192.0.2.8"))?.policy == "DIRECT")
        #expect(decide(profile, tcp(nil, to: "fd00::7"))?.policy == "REJECT-DROP")
        #expect(profile.rules[1].condition.description == "IP-CIDR6,fd00::7/128")
    }

    /// DOMAIN-SET's compact table against the plain DOMAIN / DOMAIN-SUFFIX
    /// tests, on seeded random names (duplicates, both kinds of one name,
    /// case, trailing dots, empty labels included).
    @Test func theDomainTableAgreesWithThePlainTests() {
        var state: UInt64 = 9
        func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(state >> 33) % n
        }
        let labels = ["a", "ads", "test", "x", "b-c", "ab", "A", "Test", "_s"]
        func name() -> String { (0 ..< 1 + next(4)).map { _ in labels[next(labels.count)] }.joined(separator: ".") }
        for _ in 0 ..< 30 {
            var entries: [(name: String, suffix: Bool, line: Int)] = []
            for line in 1 ... 1 + next(40) { entries.append((name().lowercased(), next(2) == 0, line)) }
            let table = DomainTable(entries)
            for _ in 0 ..< 200 {
                let host = name() + (next(6) == 0 ? "." : "") + (next(20) == 0 ? ".." : "")
                let expected = entries.filter { entry in
                    entry.suffix ? DomainSuffixIndex<Int>.hasSuffix(host, entry.name) : DomainSuffixIndex<Int>.equalNames(host, entry.name)
                }.min { $0.line < $1.line }
                let hit = table.firstMatch(host)
                // A host with an empty label names nothing (as for the index).
                if host.contains("..") {
                    #expect(hit == nil, "\(host)")
                } else {
                    #expect(hit?.line == expected?.line, "\(host) in \(entries)")
                    #expect(hit.map { "\($0.name) \($0.suffix)" } == expected.map { "\($0.name) \($0.suffix)" })
                }
            }
        }
    }

    @Test func matchExplainsWhichLineOfTheSetMatched() throws {
        let profile = try load("[Rule]\nRULE-SET,ads.list,REJECT\nFINAL,DIRECT\n", files: ["ads.list": Self.adsList]).get()
        let lines = ProfileExplainer.explain(profile, url: "http://img.ads.test/banner.png")
        #expect(lines.contains("3. Rule: line 2 (RULE-SET,ads.list,REJECT) matches: /etc/sluice/ads.list:2 (DOMAIN-SUFFIX,ads.test): the host img.ads.test is under ads.test"),
                "\(lines.joined(separator: "\n"))")
    }

    @Test func theJSONDumpNamesTheFileAndCountsItsEntries() throws {
        let profile = try load("[Rule]\nRULE-SET,ads.list,REJECT\nFINAL,DIRECT\n", files: ["ads.list": Self.adsList]).get()
        let json = ProfileJSON.render(profile, pretty: false)
        #expect(json.contains(#""condition":{"type":"RULE-SET","value":"ads.list","path":"/etc/sluice/ads.list","entries":4,"no-resolve":false}"#), "\(json)")
    }
}
