// The rule-matching benchmark: RuleEngine.evaluate over DOMAIN-SUFFIX and
// IP-CIDR rule sets of growing size, to show the cost does not grow with them.
import Rules
import Wire

/// Half DOMAIN-SUFFIX (host<i>.example.test), half IP-CIDR (10.a.b.0/24), then
/// two port rules scanned in order, then FINAL.
func makeRuleSet(_ count: Int) -> [RuleDefinition] {
    var rules: [RuleDefinition] = []
    rules.reserveCapacity(count + 2)
    for i in 0 ..< count / 2 {
        rules.append(RuleDefinition(line: rules.count + 1, condition: .domainSuffix("host\(i).example.test"), policy: "DIRECT"))
    }
    for i in 0 ..< count - count / 2 {
        let prefix = IPv4Prefix(network: IPv4Address(10, UInt8(i >> 8 & 0xff), UInt8(i & 0xff), 0), length: 24)!
        rules.append(RuleDefinition(line: rules.count + 1, condition: .ipCIDR(prefix, noResolve: true), policy: "DIRECT"))
    }
    rules.append(RuleDefinition(line: rules.count + 1, condition: .destinationPort(PortRange(5432)), policy: "DIRECT"))
    rules.append(RuleDefinition(line: rules.count + 1, condition: .sourcePort(PortRange(50000, 65535)), policy: "DIRECT"))
    return rules
}

/// 1024 flows, a quarter each: a domain that hits (deep in the set), a domain
/// that misses, an address that hits, an address that misses; TLS with the
/// name from SNI, so no rule waits for more data.
func makeFlows(ruleCount: Int) -> [FlowFacts] {
    var seed: UInt64 = 0x5eed
    func next(_ n: Int) -> Int {
        seed = seed &* 6364136223846793005 &+ 1442695040888963407
        return Int(seed >> 33) % max(n, 1)
    }
    let domains = max(ruleCount / 2, 1), prefixes = max(ruleCount - ruleCount / 2, 1)
    return (0 ..< 1024).map { i in
        switch i % 4 {
        case 0:
            return FlowFacts(transport: .tcp, destinationPort: 443, sourcePort: 40000,
                             domain: "cdn.www.host\(next(domains)).example.test", applicationProtocol: .tls)
        case 1:
            return FlowFacts(transport: .tcp, destinationPort: 443, sourcePort: 40000,
                             domain: "cdn.www.other\(next(domains)).example.test", applicationProtocol: .tls)
        case 2:
            let k = next(prefixes)
            return FlowFacts(transport: .tcp, destination: .v4(IPv4Address(10, UInt8(k >> 8 & 0xff), UInt8(k & 0xff), 9)),
                             destinationPort: 443, sourcePort: 40000, applicationProtocol: .tls)
        default:
            return FlowFacts(transport: .tcp, destination: .v4(IPv4Address(172, 16, UInt8(next(256)), 9)),
                             destinationPort: 443, sourcePort: 40000, applicationProtocol: .tls)
        }
    }
}

@inline(never)
func evaluateAll(_ engine: RuleEngine, _ flows: [FlowFacts]) -> Int {
    var sink = 0
    for flow in flows {
        if case let .matched(decision) = engine.evaluate(flow) { sink &+= decision.ruleIndex ?? -1 }
    }
    return sink
}

/// The plain top-to-bottom reading, for contrast: what the indexes save.
@inline(never)
func evaluateLinearly(_ rules: [RuleDefinition], _ flows: [FlowFacts]) -> Int {
    var sink = 0
    for flow in flows {
        for (i, rule) in rules.enumerated() where rule.condition.verdict(flow) == .match {
            sink &+= i
            break
        }
    }
    return sink
}

func benchRules(rounds: Int) {
    let clock = ContinuousClock()
    print("rules benchmark: RuleEngine.evaluate, 1024 flows (domain hit, domain miss, address hit, address miss), median of \(rounds) rounds")
    var sink = 0
    for count in [10, 10_000, 100_000] {
        let rules = makeRuleSet(count)
        let buildStart = clock.now
        let engine = RuleEngine(rules: rules, final: FinalRule(policy: "DIRECT", line: rules.count + 1))
        let build = clock.now - buildStart
        let flows = makeFlows(ruleCount: count)
        let perEvaluation = timeEvaluations(engine, flows, rounds: rounds, sink: &sink)
        print("  \(count) DOMAIN-SUFFIX + IP-CIDR rules: \(format1(perEvaluation)) ns per evaluation (compiled in \(format1(build.nanosecondsDouble / 1e6)) ms)")
        if count == 10_000 {
            let t0 = clock.now
            sink &+= evaluateLinearly(rules, flows)
            let linear = (clock.now - t0).nanosecondsDouble / Double(flows.count)
            print("    for contrast, reading the same \(count) rules top to bottom: \(format1(linear / 1000)) µs per evaluation")
        }
    }
    benchDomainSet(rounds: rounds, sink: &sink)
    if sink == 42 { print("") }
}

/// ns per evaluation, the median of `rounds` rounds of 200 passes over `flows`, after one warm-up pass.
func timeEvaluations(_ engine: RuleEngine, _ flows: [FlowFacts], rounds: Int, sink: inout Int) -> Double {
    let clock = ContinuousClock()
    sink &+= evaluateAll(engine, flows)
    var times: [Double] = []
    let passes = 200
    for _ in 0 ..< rounds {
        let t0 = clock.now
        for _ in 0 ..< passes { sink &+= evaluateAll(engine, flows) }
        times.append((clock.now - t0).nanosecondsDouble / Double(passes * flows.count))
    }
    return median(times)
}

/// A DOMAIN-SET of 100,000 names (`.host<i>.example.test`), as a list file is
/// read: parsed from text, then one rule of the profile with an engine inside.
func benchDomainSet(rounds: Int, sink: inout Int) {
    let clock = ContinuousClock()
    let count = 100_000
    var list = "# a generated list\n"
    for i in 0 ..< count { list += ".host\(i).example.test\n" }
    let profileText = "[Rule]\nDOMAIN-SET,big.txt,REJECT\nFINAL,DIRECT\n"
    let parseStart = clock.now
    guard case let .success(profile) = ProfileParser.parse(profileText, file: "bench.conf", baseDirectory: "/",
                                                           readFile: { _ in .text(list) }) else {
        print("  DOMAIN-SET: the generated list did not load"); return
    }
    let parse = clock.now - parseStart
    let perEvaluation = timeEvaluations(RuleEngine(profile), makeFlows(ruleCount: 2 * count), rounds: rounds, sink: &sink)
    print("  a DOMAIN-SET of \(count) names: \(format1(perEvaluation)) ns per evaluation (list of \(list.utf8.count >> 10) KiB read and compiled in \(format1(parse.nanosecondsDouble / 1e6)) ms)")
}

/// N evaluations against 10,000 rules, untimed, for valgrind's allocation count.
func rulesLoop(_ n: Int) {
    let rules = makeRuleSet(10_000)
    let engine = RuleEngine(rules: rules, final: FinalRule(policy: "DIRECT", line: rules.count + 1))
    let flows = makeFlows(ruleCount: 10_000)
    var sink = 0
    for i in 0 ..< n {
        if case let .matched(decision) = engine.evaluate(flows[i % flows.count]) { sink &+= decision.ruleIndex ?? -1 }
    }
    print("rules-loop: \(n) evaluations, checksum \(sink)")
}
