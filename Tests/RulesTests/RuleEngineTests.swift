import HTTP
import Testing
import Wire
@testable import Rules

/// Builds rules without the parser: line numbers are 10, 11, 12...
func makeEngine(_ conditions: [(RuleCondition, String)], final: String = "DIRECT") -> RuleEngine {
    let rules = conditions.enumerated().map { RuleDefinition(line: 10 + $0.offset, condition: $0.element.0, policy: $0.element.1) }
    return RuleEngine(rules: rules, final: FinalRule(policy: final, line: 10 + rules.count))
}

func rx(_ s: String) -> CompiledRegex { try! CompiledRegex(s) }
func v4(_ s: String) -> IPAddress { IPAddress(s)! }

extension RuleOutcome {
    var policy: String? { if case let .matched(d) = self { return d.policy } else { return nil } }
    var index: Int?? { if case let .matched(d) = self { return .some(d.ruleIndex) } else { return nil } }
}

/// A TCP flow with a complete HTTP request.
func httpFlow(_ url: String, method: String = "GET", headers: [HeaderField] = [], destination: String = "10.231.1.2",
              port: UInt16 = 80, sourcePort: UInt16 = 40000) -> FlowFacts {
    FlowFacts(transport: .tcp, destination: v4(destination), destinationPort: port, sourcePort: sourcePort,
              applicationProtocol: .http, request: RequestFacts(method: method, url: url, headers: HTTPHeaders(headers)))
}

@Suite struct RuleTypeTests {
    func decide(_ condition: RuleCondition, _ facts: FlowFacts) -> String? {
        makeEngine([(condition, "HIT")], final: "MISS").evaluate(facts, final: true).policy
    }

    func tcp(domain: String? = nil, to dst: String? = "192.0.2.1", port: UInt16 = 443, sourcePort: UInt16 = 40000) -> FlowFacts {
        FlowFacts(transport: .tcp, destination: dst.map(v4), destinationPort: port, sourcePort: sourcePort, domain: domain,
                  applicationProtocol: .tls)
    }

    @Test func domainRules() {
        #expect(decide(.domain("api.test"), tcp(domain: "API.test.")) == "HIT")
        #expect(decide(.domain("api.test"), tcp(domain: "x.api.test")) == "MISS")
        #expect(decide(.domainSuffix("ads.test"), tcp(domain: "x.ads.test")) == "HIT")
        #expect(decide(.domainSuffix("ads.test"), tcp(domain: "ads.test")) == "HIT")
        #expect(decide(.domainSuffix("ads.test"), tcp(domain: "badads.test")) == "MISS")
        #expect(decide(.domainKeyword("tracker"), tcp(domain: "eu-tracker.test")) == "HIT")
        #expect(decide(.domainKeyword("tracker"), tcp(domain: "track.test")) == "MISS")
        #expect(decide(.domainRegex(rx(#"^cdn[0-9]+\.example\.test$"#)), tcp(domain: "cdn12.example.test")) == "HIT")
        #expect(decide(.domainRegex(rx(#"^cdn[0-9]+\.example\.test$"#)), tcp(domain: "cdnx.example.test")) == "MISS")
        #expect(decide(.domain("api.test"), tcp(domain: nil)) == "MISS")
        // The request's host wins over the flow's domain (the request as rewritten).
        #expect(decide(.domain("api.test"), httpFlow("http://api.test:8080/x")) == "HIT")
        #expect(decide(.domain("api.test"), httpFlow("http://10.1.1.1/x")) == "MISS")
    }

    @Test func ipRules() {
        let ten = IPv4Prefix("10.0.0.0/8")!, fd = IPv6Prefix("fd00::/8")!
        #expect(decide(.ipCIDR(ten, noResolve: true), tcp(to: "10.9.8.7")) == "HIT")
        #expect(decide(.ipCIDR(ten, noResolve: false), tcp(to: "11.0.0.1")) == "MISS")
        #expect(decide(.ipCIDR(ten, noResolve: false), tcp(domain: "ten.test", to: nil)) == "MISS") // never resolved
        #expect(decide(.ipCIDR(ten, noResolve: true), tcp(to: "::ffff:10.1.2.3")) == "HIT")
        #expect(decide(.ipCIDR6(fd, noResolve: false), tcp(to: "fd00::2")) == "HIT")
        #expect(decide(.ipCIDR6(fd, noResolve: false), tcp(to: "fe80::2")) == "MISS")
        #expect(decide(.ipCIDR6(fd, noResolve: false), tcp(to: "10.0.0.1")) == "MISS")
    }

    @Test func portAndProtocolRules() {
        #expect(decide(.destinationPort(PortRange(5432)), tcp(port: 5432)) == "HIT")
        #expect(decide(.destinationPort(PortRange(8000, 8100)), tcp(port: 8101)) == "MISS")
        #expect(decide(.sourcePort(PortRange(50000, 65535)), tcp(sourcePort: 50001)) == "HIT")
        #expect(decide(.sourcePort(PortRange(50000, 65535)), tcp(sourcePort: 49999)) == "MISS")
        let udp = FlowFacts(transport: .udp, destination: v4("10.0.0.53"), destinationPort: 53, sourcePort: 5353)
        #expect(decide(.protocol(.udp), udp) == "HIT")
        #expect(decide(.protocol(.tcp), udp) == "MISS")
        #expect(decide(.protocol(.icmp), FlowFacts(transport: .icmp, destination: v4("10.0.0.1"))) == "HIT")
        #expect(decide(.protocol(.tls), tcp()) == "HIT")
        #expect(decide(.protocol(.http), tcp()) == "MISS")
        #expect(decide(.protocol(.http), httpFlow("http://a.test/")) == "HIT")
        #expect(decide(.protocol(.tls), httpFlow("http://a.test/")) == "MISS")
    }

    @Test func httpRules() {
        let upload = RuleCondition.urlRegex(rx(#"^http://api\.test/v2/upload"#))
        #expect(decide(upload, httpFlow("http://api.test/v2/upload?x=1")) == "HIT")
        #expect(decide(upload, httpFlow("http://api.test/v1/upload")) == "MISS")
        #expect(decide(.method("POST"), httpFlow("http://a.test/", method: "POST")) == "HIT")
        #expect(decide(.method("POST"), httpFlow("http://a.test/", method: "GET")) == "MISS")
        let route = RuleCondition.header(name: "X-Route", value: rx("^via-socks$"))
        #expect(decide(route, httpFlow("http://a.test/", headers: [HeaderField(name: "x-route", value: "via-socks")])) == "HIT")
        #expect(decide(route, httpFlow("http://a.test/", headers: [HeaderField(name: "X-Route", value: "via-socks2")])) == "MISS")
        #expect(decide(route, httpFlow("http://a.test/")) == "MISS")
        let legacy = RuleCondition.userAgent(GlobPattern("LegacyApp/*"))
        #expect(decide(legacy, httpFlow("http://a.test/", headers: [HeaderField(name: "User-Agent", value: "LegacyApp/3")])) == "HIT")
        #expect(decide(legacy, httpFlow("http://a.test/", headers: [HeaderField(name: "User-Agent", value: "curl/8")])) == "MISS")
        #expect(decide(legacy, httpFlow("http://a.test/")) == "MISS")
        // HTTPS without interception never shows a request: HTTP rules do not match.
        #expect(decide(upload, tcp(domain: "api.test")) == "MISS")
    }

    @Test func logicalRules() {
        let and = RuleCondition.and([.method("POST"), .domain("upload.test")])
        #expect(decide(and, httpFlow("http://upload.test/f", method: "POST")) == "HIT")
        #expect(decide(and, httpFlow("http://upload.test/f", method: "GET")) == "MISS")
        #expect(decide(and, httpFlow("http://other.test/f", method: "POST")) == "MISS")
        let or = RuleCondition.or([.domain("a.test"), .destinationPort(PortRange(22))])
        #expect(decide(or, tcp(domain: "a.test")) == "HIT")
        #expect(decide(or, tcp(domain: "b.test", port: 22)) == "HIT")
        #expect(decide(or, tcp(domain: "b.test")) == "MISS")
        let not = RuleCondition.not(.domainSuffix("internal.test"))
        #expect(decide(not, tcp(domain: "x.internal.test")) == "MISS")
        #expect(decide(not, tcp(domain: "public.test")) == "HIT")
    }
}

@Suite struct FirstMatchTests {
    @Test func earlierLinearRuleBeatsLaterIndexHit() {
        let engine = makeEngine([
            (.destinationPort(PortRange(443)), "port"),   // 0, linear
            (.domainSuffix("ads.test"), "ads"),           // 1, indexed
        ])
        let flow = FlowFacts(transport: .tcp, destinationPort: 443, domain: "x.ads.test", applicationProtocol: .tls)
        #expect(engine.evaluate(flow).policy == "port")
        var other = flow
        other.destinationPort = 80
        #expect(engine.evaluate(other).policy == "ads")
    }

    @Test func earlierIndexHitBeatsLaterLinearRule() {
        let engine = makeEngine([
            (.domainSuffix("ads.test"), "ads"),           // 0, indexed
            (.ipCIDR(IPv4Prefix("10.0.0.0/8")!, noResolve: true), "ten"), // 1, indexed
            (.destinationPort(PortRange(443)), "port"),   // 2, linear: never reached for ads
        ])
        let flow = FlowFacts(transport: .tcp, destination: v4("10.0.0.1"), destinationPort: 443, domain: "ads.test",
                             applicationProtocol: .tls)
        let outcome = engine.evaluate(flow)
        #expect(outcome == .matched(RuleDecision(ruleIndex: 0, line: 10, text: "DOMAIN-SUFFIX,ads.test,ads", policy: "ads")))
        var noName = flow
        noName.domain = nil
        #expect(engine.evaluate(noName).policy == "ten")
        noName.destination = v4("11.0.0.1")
        #expect(engine.evaluate(noName).policy == "port")
        noName.destinationPort = 80
        #expect(engine.evaluate(noName) == .matched(RuleDecision(ruleIndex: nil, line: 13, text: "FINAL,DIRECT", policy: "DIRECT")))
    }

    @Test func cidrBeatsLaterDomain() {
        let engine = makeEngine([
            (.ipCIDR6(IPv6Prefix("fd00::/8")!, noResolve: false), "v6"),
            (.domain("api.test"), "api"),
        ])
        let flow = FlowFacts(transport: .tcp, destination: v4("fd00::2"), destinationPort: 443, domain: "api.test",
                             applicationProtocol: .tls)
        #expect(engine.evaluate(flow).policy == "v6")
    }

    /// The engine against the plain top-to-bottom reading of the rules, on a
    /// seeded mix of rules and flows.
    @Test func agreesWithLinearReading() {
        var seed: UInt64 = 0x5eed
        func next(_ n: Int) -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int(seed >> 33) % n
        }
        let names = ["a.test", "b.a.test", "ads.test", "x.ads.test", "c.example", "tracker.example", "api.test"]
        var conditions: [(RuleCondition, String)] = []
        for i in 0 ..< 60 {
            let c: RuleCondition
            switch next(12) {
            case 0: c = .domain(names[next(names.count)])
            case 1: c = .domainSuffix(names[next(names.count)])
            case 2: c = .domainKeyword(["track", "ads", "zz"][next(3)])
            case 3: c = .ipCIDR(IPv4Prefix(network: IPv4Address(10, UInt8(next(4)), 0, 0), length: 8 + next(9))!, noResolve: false)
            case 4: c = .destinationPort(PortRange(UInt16([80, 443, 22][next(3)])))
            case 5: c = .method(["GET", "POST"][next(2)])
            // DOMAIN-REGEX lines: one without a run of three bytes (scanned in order), the others indexed by theirs.
            case 6: c = .domainRegex(rx(["^[ab]\\.", #"(^|\.)ads\.test$"#, #"track"#, #"(?i)EXAMPLE$"#, #"^api\.te"#][next(5)]))
            case 7: c = .and([.protocol(.http), .domainSuffix(names[next(names.count)])])
            // URL-REGEX lines, most with a literal the index keys on, some without.
            case 9, 10, 11:
                c = .urlRegex(rx([#"^https?://([a-z]+\.)*ads\.test/"#, #"/track/pixel"#, #"(?i)BANNER"#, #"^http://api\.test/v2"#,
                                  #"\.(png|gif)$"#, #"^http://[a-z.]+/$"#, #"x{2}yz"#][next(7)]))
            default: c = .not(.destinationPort(PortRange(UInt16(next(3)))))
            }
            conditions.append((c, "p\(i)"))
        }
        let engine = makeEngine(conditions)
        for _ in 0 ..< 400 {
            let hasRequest = next(3) == 0
            let domain = next(4) == 0 ? nil : names[next(names.count)]
            let flow = FlowFacts(
                transport: next(5) == 0 ? .udp : .tcp,
                destination: next(4) == 0 ? nil : .v4(IPv4Address(10, UInt8(next(5)), UInt8(next(3)), 1)),
                destinationPort: UInt16([80, 443, 22, 0][next(4)]), sourcePort: 40000, domain: domain,
                applicationProtocol: hasRequest ? .http : [nil, .tls][next(2)],
                request: hasRequest ? RequestFacts(method: ["GET", "POST"][next(2)],
                                                   url: "http://\(domain ?? "10.0.0.1")/" + ["", "track/pixel", "Banner.png", "v2/x", "a.gif", "xxyz", "\u{212A}"][next(7)]) : nil)
            for final in [false, true] {
                var expected = RuleOutcome.matched(RuleDecision(ruleIndex: nil, line: 70, text: "FINAL,DIRECT", policy: "DIRECT"))
                for (i, (c, p)) in conditions.enumerated() {
                    let v = c.verdict(flow, final: final)
                    if v == .unknown { expected = .needsApplicationData; break }
                    if v == .match {
                        expected = .matched(RuleDecision(ruleIndex: i, line: 10 + i, text: "\(c),\(p)", policy: p)); break
                    }
                }
                #expect(engine.evaluate(flow, final: final) == expected, "\(flow) final=\(final)")
            }
        }
    }
}

@Suite struct NeedsApplicationDataTests {
    let engine = makeEngine([
        (.ipCIDR(IPv4Prefix("10.0.0.0/8")!, noResolve: true), "lan"),  // 0
        (.domainSuffix("ads.test"), "REJECT"),                          // 1
        (.urlRegex(rx(#"^http://api\.test/v2/upload"#)), "upload"),  // 2
        (.destinationPort(PortRange(5432)), "db"),                      // 3
    ])

    @Test func ipDecidesBeforeAnyUnknownRule() {
        let flow = FlowFacts(transport: .tcp, destination: v4("10.1.1.1"), destinationPort: 80)
        #expect(engine.evaluate(flow).policy == "lan")
    }

    @Test func unknownNameWaitsForSNIOrHost() {
        let flow = FlowFacts(transport: .tcp, destination: v4("192.0.2.1"), destinationPort: 5432)
        #expect(engine.evaluate(flow) == .needsApplicationData)
        // Nothing more will come: decide with what is known.
        #expect(engine.evaluate(flow, final: true).policy == "db")
        // UDP gets no name from its payload, unless it is QUIC: its Initial packets carry a ClientHello.
        var udp = flow
        udp.transport = .udp
        #expect(engine.evaluate(udp).policy == "db")
        udp.applicationProtocol = .quic
        #expect(engine.evaluate(udp) == .needsApplicationData)
        #expect(engine.evaluate(udp, final: true).policy == "db")
        udp.domain = "x.ads.test"
        #expect(engine.evaluate(udp).policy == "REJECT")
    }

    /// PROTOCOL,QUIC (ext): a UDP flow whose first datagram is a QUIC client
    /// Initial, known before anything is decrypted; never TLS, never TCP.
    @Test func protocolQUICMatchesQUICFlowsOnly() throws {
        let parsed = try loadProfile("[Rule]\nPROTOCOL,quic,DIRECT\nFINAL,DIRECT\n").get()
        #expect(parsed.rules.map(\.description) == ["PROTOCOL,QUIC,DIRECT"])
        let e = makeEngine([(.protocol(.quic), "h3"), (.protocol(.tls), "tls"), (.protocol(.udp), "udp")])
        var flow = FlowFacts(transport: .udp, destination: v4("192.0.2.1"), destinationPort: 443, applicationProtocol: .quic)
        #expect(e.evaluate(flow).policy == "h3")
        flow.applicationProtocol = nil
        #expect(e.evaluate(flow).policy == "udp")
        let tls = FlowFacts(transport: .tcp, destination: v4("192.0.2.1"), destinationPort: 443, applicationProtocol: .tls)
        #expect(e.evaluate(tls).policy == "tls")
    }

    @Test func knownNameStillWaitsForTheRequest() {
        var flow = FlowFacts(transport: .tcp, destination: v4("192.0.2.1"), destinationPort: 5432, domain: "api.test")
        #expect(engine.evaluate(flow) == .needsApplicationData)   // URL-REGEX at 2 comes before port 5432 at 3
        flow.applicationProtocol = .tls                            // HTTPS without interception: no request will come
        #expect(engine.evaluate(flow).policy == "db")
        flow.applicationProtocol = .http                           // the head is not complete yet
        #expect(engine.evaluate(flow) == .needsApplicationData)
        flow.request = RequestFacts(method: "POST", url: "http://api.test/v2/upload")
        #expect(engine.evaluate(flow).policy == "upload")
    }

    @Test func decidedMatchBeforeUnknownRulesNeedsNothing() {
        let flow = FlowFacts(transport: .tcp, destination: v4("192.0.2.1"), destinationPort: 443, domain: "x.ads.test")
        #expect(engine.evaluate(flow).policy == "REJECT")
    }

    @Test func logicalRuleWithHTTPPartWaits() {
        let e = makeEngine([(.and([.method("POST"), .domain("upload.test")]), "up"), (.destinationPort(PortRange(80)), "web")])
        var flow = FlowFacts(transport: .tcp, destination: v4("192.0.2.1"), destinationPort: 80, domain: "upload.test")
        #expect(e.evaluate(flow) == .needsApplicationData)
        flow.domain = "other.test"   // the AND is already false: no need to wait
        #expect(e.evaluate(flow).policy == "web")
        let n = makeEngine([(.not(.userAgent(GlobPattern("curl/*"))), "not-curl")])
        #expect(n.evaluate(FlowFacts(transport: .tcp, destinationPort: 80, domain: "a.test")) == .needsApplicationData)
        // Final: the missing User-Agent does not match, so its NOT does (leaves decide, as in Surge).
        #expect(n.evaluate(FlowFacts(transport: .tcp, destinationPort: 80, domain: "a.test"), final: true).policy == "not-curl")
        #expect(n.evaluate(httpFlow("http://a.test/", headers: [HeaderField(name: "User-Agent", value: "wget")])).policy == "not-curl")
    }
}
