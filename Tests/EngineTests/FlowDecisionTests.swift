import Testing
@testable import Engine

@Suite struct FlowDecisionTests {
    /// "FILE:LINE: RULE → POLICY[ → MEMBER…]": the rule, then the whole chain.
    @Test func splitsAtTheFirstArrow() {
        #expect(FlowDecision.split("p.conf:3: DOMAIN-SUFFIX,a.test,Proxy → Proxy → hk") == ("p.conf:3: DOMAIN-SUFFIX,a.test,Proxy", "Proxy → hk"))
        #expect(FlowDecision.split("default profile → DIRECT") == ("default profile", "DIRECT"))
        #expect(FlowDecision.split("no rule decided") == ("no rule decided", nil))
        #expect(FlowDecision.split("a →b") == ("a →b", nil))
        #expect(FlowDecision.split("é → ü") == ("é", "ü"))
        #expect(FlowDecision.split(" → ") == ("", ""))
        #expect(FlowDecision.split("") == ("", nil))
    }

    /// The joined form `split` takes apart; no policy leaves the rule alone.
    @Test func joinsRuleAndPolicy() {
        #expect(FlowDecision.reason(rule: "p.conf:3: DOMAIN-SUFFIX,a.test,Proxy", policy: "Proxy → hk") == "p.conf:3: DOMAIN-SUFFIX,a.test,Proxy → Proxy → hk")
        #expect(FlowDecision.reason(rule: "no rule decided", policy: nil) == "no rule decided")
        #expect(FlowDecision.reason(rule: "é", policy: "ü") == "é → ü")
        #expect(FlowDecision.split(FlowDecision.reason(rule: "default profile", policy: "DIRECT")) == ("default profile", "DIRECT"))
    }

    /// HTTP mode takes the two halves apart from `verdict`; flows take them
    /// joined from `decide`. Both name the same rule and chain, through a group.
    @Test func verdictAndDecisionAgree() throws {
        let director = try ReplayFlowTests.director("""
            [Proxy]
            hk = socks5, 127.0.0.1, 1080
            [Proxy Group]
            Proxy = select, hk, DIRECT
            [Rule]
            DOMAIN-SUFFIX,a.test,Proxy
            FINAL,DIRECT

            """)
        var facts = Engine.FlowFacts(key: ReplayFlowTests.key)
        facts.domain = "www.a.test"
        facts.domainSource = .host
        facts.applicationProtocol = .http
        for _ in 0 ..< 2 {
            guard case let .route(_, rule, policy) = director.verdict(facts, final: true) else {
                Issue.record("sniffed a decided flow"); return
            }
            #expect(rule == "p.conf:6: DOMAIN-SUFFIX,a.test,Proxy")
            #expect(policy == "Proxy → hk")
            guard case let .route(_, reason) = director.decide(facts, final: true) else {
                Issue.record("sniffed a decided flow"); return
            }
            #expect(reason == "p.conf:6: DOMAIN-SUFFIX,a.test,Proxy → Proxy → hk")
        }
        facts.domain = "b.test"
        guard case let .route(_, reason) = director.decide(facts, final: true) else {
            Issue.record("sniffed a decided flow"); return
        }
        #expect(reason == "p.conf:7: FINAL,DIRECT → DIRECT")
    }
}
