import Testing
import Wire
@testable import Rules

/// Rules an earlier rule always beats, as `sluice check` reports them.
@Suite struct ShadowedRulesTests {
    func findings(_ lines: String) throws -> [String] {
        let profile = try ProfileParser.parse("[Rule]\n\(lines)\nFINAL,DIRECT\n", file: "s.conf", baseDirectory: "/").get()
        return ShadowedRules.find(profile.rules).map {
            "\(profile.rules[$0.rule].line) by \(profile.rules[$0.shadowedBy].line)\($0.samePolicy ? " same" : "")"
        }
    }

    @Test func namesUnderAnEarlierSuffixOrKeyword() throws {
        #expect(try findings("""
        DOMAIN-SUFFIX,test,DIRECT
        DOMAIN,api.test,REJECT
        DOMAIN-SUFFIX,ads.test,REJECT
        DOMAIN-SUFFIX,test,DIRECT
        DOMAIN,other.example,REJECT
        """) == ["3 by 2", "4 by 2", "5 by 2 same"])
        // A DOMAIN line covers one name, never the names under it.
        #expect(try findings("DOMAIN,ads.test,REJECT\nDOMAIN-SUFFIX,ads.test,DIRECT\nDOMAIN,ads.test,DIRECT") == ["4 by 2"])
        // Keywords: every name under a suffix that contains the keyword contains it too.
        #expect(try findings("DOMAIN-KEYWORD,track,REJECT\nDOMAIN-SUFFIX,tracker.test,DIRECT\nDOMAIN,x.TRACK.example,REJECT\nDOMAIN,trac.test,DIRECT")
                == ["3 by 2", "4 by 2 same"])
        // Not provable: a later broader rule, regexes, options that differ.
        #expect(try findings("DOMAIN,api.test,REJECT\nDOMAIN-SUFFIX,test,DIRECT\nDOMAIN-REGEX,^a,DIRECT\nDOMAIN,ab.test,DIRECT").map { $0 } == ["5 by 3 same"])
        #expect(try findings("DOMAIN-SUFFIX,test,DIRECT\nDOMAIN,api.test,DIRECT,capture") == ["3 by 2"])
    }

    @Test func networksInsideEarlierOnes() throws {
        #expect(try findings("""
        IP-CIDR,10.0.0.0/8,DIRECT
        IP-CIDR,10.1.0.0/16,REJECT
        IP-CIDR,11.0.0.0/8,REJECT
        IP-CIDR,10.0.0.0/8,DIRECT
        IP-CIDR6,fd00::/8,DIRECT
        IP-CIDR6,fd00:1::/32,REJECT
        """) == ["3 by 2", "5 by 2 same", "7 by 6"])
        // A longer prefix first does not cover a shorter one after it.
        #expect(try findings("IP-CIDR,10.0.0.0/24,DIRECT\nIP-CIDR,10.0.0.0/8,REJECT") == [])
    }
}
