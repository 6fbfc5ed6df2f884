import Testing
import Wire
@testable import Rules

/// PROCESS-NAME, PROCESS-PATH and UID: rules over who opened a flow. The
/// engine supplies `FlowFacts.owner`; a flow without one matches none.
@Suite struct OwnerRuleTests {
    static let curl = FlowOwner(userID: 1000, processID: 4242, processName: "curl", processPath: "/usr/bin/curl")

    func policy(_ rules: String, _ owner: FlowOwner?, transport: FlowFacts.Transport = .tcp) throws -> String? {
        let profile = try ProfileParser.parse("[Rule]\n\(rules)\nFINAL,MISS\n[Proxy]\nHIT = reject\nMISS = reject-rst\n",
                                              file: "o.conf", baseDirectory: "/").get()
        let facts = FlowFacts(transport: transport, destination: IPAddress("192.0.2.1"), destinationPort: 443, sourcePort: 40000,
                              domain: "api.test", owner: owner)
        if case let .matched(decision) = RuleEngine(profile).evaluate(facts, final: false) { return decision.policy }
        return nil
    }

    @Test func namesPathsAndUsersMatch() throws {
        #expect(try policy("PROCESS-NAME,curl,HIT", Self.curl) == "HIT")
        #expect(try policy("PROCESS-NAME,Curl,HIT", Self.curl) == "MISS") // case-sensitive, as file names are
        #expect(try policy("PROCESS-NAME,cu?l,HIT", Self.curl) == "HIT")
        #expect(try policy("PROCESS-NAME,python3*,HIT", FlowOwner(userID: 0, processName: "python3.11")) == "HIT")
        #expect(try policy("PROCESS-NAME,wget,HIT", Self.curl) == "MISS")
        #expect(try policy("PROCESS-PATH,/usr/bin/curl,HIT", Self.curl) == "HIT")
        #expect(try policy("PROCESS-PATH,/usr/*,HIT", Self.curl) == "HIT")
        #expect(try policy("PROCESS-PATH,*/curl,HIT", Self.curl) == "HIT")
        #expect(try policy("PROCESS-PATH,/opt/*,HIT", Self.curl) == "MISS")
        #expect(try policy("UID,1000,HIT", Self.curl) == "HIT")
        #expect(try policy("UID,0,HIT", Self.curl) == "MISS")
        #expect(try policy("UID,1000-1999,HIT", Self.curl) == "HIT")
        #expect(try policy("UID,1001-1999,HIT", Self.curl) == "MISS")
        // Inside AND/OR/NOT, with the rest of the flow.
        #expect(try policy("AND,((PROCESS-NAME,curl),(DOMAIN,api.test)),HIT", Self.curl) == "HIT")
        #expect(try policy("AND,((PROCESS-NAME,curl),(PROTOCOL,UDP)),HIT", Self.curl) == "MISS")
        #expect(try policy("NOT,((UID,0)),HIT", Self.curl) == "HIT")
        // Decided at once: an owner rule never waits for a TCP flow's first bytes.
        #expect(try policy("PROCESS-NAME,wget,HIT\nDOMAIN,api.test,MISS", Self.curl) == "MISS")
    }

    @Test func aFlowWhoseOwnerIsUnknownMatchesNone() throws {
        #expect(try policy("PROCESS-NAME,*,HIT", nil) == "MISS")
        #expect(try policy("UID,0-4294967295,HIT", nil) == "MISS")
        #expect(try policy("NOT,((PROCESS-NAME,curl)),HIT", nil) == "HIT")
        // The socket's owner was found, its process not (it had exited).
        let userOnly = FlowOwner(userID: 1000)
        #expect(try policy("UID,1000,HIT", userOnly) == "HIT")
        #expect(try policy("PROCESS-NAME,*,HIT", userOnly) == "MISS")
        #expect(try policy("PROCESS-PATH,*,HIT", userOnly) == "MISS")
    }

    @Test func theProfileSaysWhenItNeedsOwners() throws {
        func requires(_ rules: String, files: [String: String] = [:]) throws -> Bool {
            try ProfileParser.parse("[Rule]\n\(rules)\nFINAL,DIRECT\n", file: "o.conf", baseDirectory: "/",
                                    readFile: { path in files[path].map { ProfileFile.text($0) } ?? .unreadable("no such file") }).get().requiresOwner
        }
        #expect(try requires("DOMAIN,api.test,DIRECT") == false)
        #expect(try requires("PROCESS-NAME,curl,DIRECT") == true)
        #expect(try requires("OR,((DOMAIN,a.test),(NOT,((UID,0)))),DIRECT") == true)
        #expect(try requires("RULE-SET,/sets/apps.list,DIRECT", files: ["/sets/apps.list": "PROCESS-PATH,/usr/bin/curl\n"]) == true)
        #expect(try requires("RULE-SET,/sets/apps.list,DIRECT", files: ["/sets/apps.list": "DOMAIN,a.test\n"]) == false)
    }

    @Test func theyPrintAsWritten() throws {
        let profile = try ProfileParser.parse("[Rule]\nPROCESS-NAME,curl,DIRECT\nPROCESS-PATH,\"/opt/My App/bin/app\",DIRECT\nUID,1000-1999,DIRECT\nFINAL,DIRECT\n",
                                              file: "o.conf", baseDirectory: "/").get()
        #expect(profile.rules.map(\.description) == ["PROCESS-NAME,curl,DIRECT", "PROCESS-PATH,\"/opt/My App/bin/app\",DIRECT", "UID,1000-1999,DIRECT"])
        // What was printed reads back to the same rules.
        let again = try ProfileParser.parse("[Rule]\n" + profile.rules.map(\.description).joined(separator: "\n") + "\nFINAL,DIRECT\n",
                                            file: "o.conf", baseDirectory: "/").get()
        #expect(again.rules.map(\.condition) == profile.rules.map(\.condition))
    }

    @Test func mistakesSayWhatToWrite() {
        for (rule, message, hint) in [
            ("PROCESS-NAME,/usr/bin/curl", "PROCESS-NAME takes a program's file name, not a path",
             "write PROCESS-NAME,curl, or PROCESS-PATH,/usr/bin/curl for the full path"),
            ("PROCESS-PATH,curl", "PROCESS-PATH takes the program's absolute path",
             "write PROCESS-PATH,/usr/bin/curl, or PROCESS-NAME,curl for the file name alone"),
            ("UID,alice", "'alice' is not a user id", "UID takes a number: `id -u alice` prints it"),
            ("UID,-1", "'-1' is not a user id", "write a number like 1000, or a range like 1000-1999"),
            ("UID,2000-1000", "UID range 2000-1000 is empty", "write the lower number first: UID,1000-2000"),
            ("UID,4294967296", "'4294967296' is not a user id", "write a number like 1000, or a range like 1000-1999"),
            ("PROCESS-NAME,curl,DIRECT,no-resolve", "no-resolve applies only to IP-CIDR, IP-CIDR6, GEOIP, IP-ASN and RULE-SET",
             "remove it from this PROCESS-NAME rule"),
        ] {
            let text = rule.hasSuffix("no-resolve") ? rule : rule + ",DIRECT"
            guard case let .failure(failure) = ProfileParser.parse("[Rule]\n\(text)\nFINAL,DIRECT\n", file: "o.conf", baseDirectory: "/") else {
                Issue.record("\(rule) loaded"); continue
            }
            #expect(failure.errors.map(\.message) == [message], "\(rule)")
            #expect(failure.errors.map(\.hint) == [hint], "\(rule)")
        }
    }
}
