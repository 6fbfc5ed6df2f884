import Testing
import Wire
@testable import Rules

/// DOMAIN-WILDCARD (Surge): a glob over the whole name, case-insensitive,
/// `*` crossing dots; matched as an anchored regex, indexed like DOMAIN-REGEX.
@Suite struct DomainWildcardTests {
    func policy(_ rule: String, _ name: String?) throws -> String? {
        let profile = try ProfileParser.parse("[Rule]\n\(rule),HIT\nFINAL,MISS\n[Proxy]\nHIT = reject\nMISS = reject-rst\n",
                                              file: "w.conf", baseDirectory: "/").get()
        let facts = FlowFacts(transport: .tcp, destination: IPAddress("192.0.2.1"), destinationPort: 443, sourcePort: 40000,
                              domain: name, applicationProtocol: .tls)
        if case let .matched(decision) = RuleEngine(profile).evaluate(facts, final: true) { return decision.policy }
        return nil
    }

    @Test func starQuestionMarkAndClasses() throws {
        #expect(try policy("DOMAIN-WILDCARD,api-*.example.test", "api-eu.example.test") == "HIT")
        #expect(try policy("DOMAIN-WILDCARD,api-*.example.test", "API-EU.Example.Test.") == "HIT")
        #expect(try policy("DOMAIN-WILDCARD,api-*.example.test", "api-.example.test") == "HIT")
        #expect(try policy("DOMAIN-WILDCARD,api-*.example.test", "api-a.b.example.test") == "HIT") // * crosses dots
        #expect(try policy("DOMAIN-WILDCARD,api-*.example.test", "xapi-eu.example.test") == "MISS") // anchored
        #expect(try policy("DOMAIN-WILDCARD,api-*.example.test", "api-eu.example.test.evil") == "MISS")
        #expect(try policy("DOMAIN-WILDCARD,*.example.test", "example.test") == "MISS")
        #expect(try policy("DOMAIN-WILDCARD,*.example.test", "a.example.test") == "HIT")
        #expect(try policy("DOMAIN-WILDCARD,cdn?.example.test", "cdn7.example.test") == "HIT")
        #expect(try policy("DOMAIN-WILDCARD,cdn?.example.test", "cdn12.example.test") == "MISS")
        #expect(try policy("DOMAIN-WILDCARD,node[0-9].test", "node4.test") == "HIT")
        #expect(try policy("DOMAIN-WILDCARD,node[0-9].test", "nodex.test") == "MISS")
        #expect(try policy("DOMAIN-WILDCARD,node[!0-9].test", "nodex.test") == "HIT")
        #expect(try policy("DOMAIN-WILDCARD,node[!0-9].test", "node4.test") == "MISS")
        // A dot is a dot, not "any character".
        #expect(try policy("DOMAIN-WILDCARD,a.test", "abtest") == "MISS")
        #expect(try policy("DOMAIN-WILDCARD,a.test", nil) == "MISS")
    }

    @Test func itPrintsAsWrittenAndIsIndexedByItsLiteralRun() throws {
        let profile = try ProfileParser.parse("[Rule]\nDOMAIN-WILDCARD,Api-*.example.test,REJECT\nFINAL,DIRECT\n",
                                              file: "w.conf", baseDirectory: "/").get()
        #expect(profile.rules[0].description == "DOMAIN-WILDCARD,\"Api-*.example.test\",REJECT")
        guard case let .domainWildcard(pattern, regex) = profile.rules[0].condition else { Issue.record("\(profile.rules[0])"); return }
        #expect(pattern == "Api-*.example.test")
        #expect(regex.source == #"(?i)^Api-.*\.example\.test$"#)
        #expect(regex.byteMatcher != nil)
        #expect(regex.requiredLiteral != nil)
    }

    @Test func mistakes() {
        for (rule, message) in [("DOMAIN-WILDCARD,node[0-9.test", "'node[0-9.test' has a [ without its ]"),
                                ("DOMAIN-WILDCARD,node[].test", "'node[].test' has a [ without its ]"),
                                ("DOMAIN-WILDCARD,http://*.test/", "'http://*.test/' is not a name pattern")] {
            guard case let .failure(failure) = ProfileParser.parse("[Rule]\n\(rule),DIRECT\nFINAL,DIRECT\n", file: "w.conf", baseDirectory: "/") else {
                Issue.record("\(rule) loaded"); continue
            }
            #expect(failure.errors.map(\.message) == [message])
        }
    }
}
