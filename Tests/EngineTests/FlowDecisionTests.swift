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
}
