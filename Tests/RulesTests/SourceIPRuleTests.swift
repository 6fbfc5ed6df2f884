import Testing
import Wire
@testable import Rules

/// SRC-IP: where a flow comes from. In a tunnel that is the app's address;
/// through a gateway in whole-host mode, the LAN device's; for `sluice
/// proxy`, the client's.
@Suite struct SourceIPRuleTests {
    let profile: Profile

    init() throws {
        profile = try loadProfile("""
        [Rule]
        SRC-IP,192.168.1.20,REJECT
        SRC-IP,192.168.1.0/24,DIRECT
        SRC-IP,fd00:1::/64,REJECT-DROP
        SRC-IP,fd00:2::7,REJECT-RST
        AND,((SRC-IP,10.0.0.0/8),(DEST-PORT,22)),REJECT
        FINAL,REJECT-TINYGIF
        """).get()
    }

    func policy(from source: String?, port: UInt16 = 443) -> String? {
        var facts = FlowFacts(transport: .tcp, destination: IPAddress("203.0.113.9"), destinationPort: port, sourcePort: 40000)
        facts.source = source.flatMap { IPAddress($0) }
        guard case let .matched(decision) = RuleEngine(profile).evaluate(facts, final: true) else { return nil }
        return decision.policy
    }

    @Test func addressesAndNetworksOfBothFamilies() {
        #expect(policy(from: "192.168.1.20") == "REJECT")
        #expect(policy(from: "192.168.1.21") == "DIRECT")
        #expect(policy(from: "192.168.2.1") == "REJECT-TINYGIF")
        #expect(policy(from: "fd00:1::99") == "REJECT-DROP")
        #expect(policy(from: "fd00:2::7") == "REJECT-RST")
        #expect(policy(from: "fd00:2::8") == "REJECT-TINYGIF")
        #expect(policy(from: "10.1.2.3", port: 22) == "REJECT")
        #expect(policy(from: "10.1.2.3") == "REJECT-TINYGIF")
        // A flow whose source is unknown meets no SRC-IP rule.
        #expect(policy(from: nil) == "REJECT-TINYGIF")
    }

    @Test func rulesPrintAsWritten() {
        #expect(profile.rules.map(\.description) == [
            "SRC-IP,192.168.1.20,REJECT", "SRC-IP,192.168.1.0/24,DIRECT", "SRC-IP,fd00:1::/64,REJECT-DROP", "SRC-IP,fd00:2::7,REJECT-RST",
            "AND,((SRC-IP,10.0.0.0/8),(DEST-PORT,22)),REJECT",
        ])
        let json = ProfileJSON.render(profile, pretty: false)
        #expect(json.contains(#"{"line":2,"condition":{"type":"SRC-IP","value":"192.168.1.20"},"policy":"REJECT""#), "\(json)")
    }

    @Test func matchExplainsIt() {
        let lines = ProfileExplainer.explain(profile, url: "http://api.test/", source: IPAddress("192.168.1.20"))
        #expect(lines.contains { $0.contains("SRC-IP,192.168.1.20") && $0.contains("the source 192.168.1.20 is in 192.168.1.20") }, "\(lines)")
    }
}
