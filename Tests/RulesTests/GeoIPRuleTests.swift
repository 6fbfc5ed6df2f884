import Testing
import TestSupport
import Wire
@testable import Rules

/// GEOIP rules against a MaxMind DB named by [General]'s geoip-database.
@Suite struct GeoIPRuleTests {
    static let database = MaxMindTestDatabase.build([("192.0.2.0/24", "NL"), ("198.51.100.0/24", "JP"), ("2001:db8::/32", "DE")])

    func load(_ text: String, database: [UInt8]? = GeoIPRuleTests.database, files: [String: String] = [:]) -> Result<Profile, ProfileErrors> {
        ProfileParser.parse(text, file: "g.conf", baseDirectory: "/etc/sluice") { path in
            if path == "/etc/sluice/country.mmdb", let database { return .bytes(database) }
            if let text = files[path] { return .text(text) }
            return .unreadable("no such file")
        }
    }

    func policy(_ profile: Profile, to address: String?, domain: String? = nil) -> String? {
        let facts = FlowFacts(transport: .tcp, destination: address.map { IPAddress($0)! }, destinationPort: 443, sourcePort: 40000,
                              domain: domain, applicationProtocol: .tls)
        if case let .matched(decision) = RuleEngine(profile).evaluate(facts, final: true) { return decision.policy }
        return nil
    }

    @Test func countriesDecideByTheDestinationAddress() throws {
        // [General] after [Rule]: the database is read first wherever it is.
        let profile = try load("""
        [Rule]
        GEOIP,nl,REJECT
        GEOIP,DE,REJECT-DROP,no-resolve
        FINAL,DIRECT
        [General]
        geoip-database = country.mmdb
        """).get()
        #expect(profile.general.geoIPDatabase == "/etc/sluice/country.mmdb")
        #expect(profile.rules.map(\.description) == ["GEOIP,NL,REJECT", "GEOIP,DE,REJECT-DROP,no-resolve"])
        #expect(policy(profile, to: "192.0.2.7") == "REJECT")
        #expect(policy(profile, to: "::ffff:192.0.2.7") == "REJECT")
        #expect(policy(profile, to: "2001:db8::5") == "REJECT-DROP")
        #expect(policy(profile, to: "198.51.100.1") == "DIRECT")
        #expect(policy(profile, to: "203.0.113.1") == "DIRECT")
        // A flow known by name only (a fake IP) is never resolved for it, as for IP-CIDR.
        #expect(policy(profile, to: nil, domain: "nl.example") == "DIRECT")
        let lines = ProfileExplainer.explain(profile, url: "http://192.0.2.7/")
        #expect(lines.contains { $0.contains("line 2 (GEOIP,NL,REJECT) matches: the destination 192.0.2.7 is in NL (GeoIP database)") },
                "\(lines.joined(separator: "\n"))")
        #expect(ProfileJSON.render(profile, pretty: false).contains(#""geoip-database":"/etc/sluice/country.mmdb""#))
    }

    @Test func inARuleSetToo() throws {
        let profile = try load("[General]\ngeoip-database = country.mmdb\n[Rule]\nRULE-SET,asia.list,REJECT\nFINAL,DIRECT\n",
                               files: ["/etc/sluice/asia.list": "GEOIP,JP\nGEOIP,KR,no-resolve\n"]).get()
        #expect(policy(profile, to: "198.51.100.9") == "REJECT")
        #expect(policy(profile, to: "192.0.2.9") == "DIRECT")
    }

    /// IP-ASN with an ASN database (as GeoLite2-ASN), beside GEOIP.
    @Test func autonomousSystemsDecideToo() throws {
        let asn = MaxMindTestDatabase.buildASN([("192.0.2.0/24", 64500), ("2001:db8::/32", 4_200_000_000)])
        let profile = try ProfileParser.parse("""
        [General]
        asn-database = asn.mmdb
        geoip-database = country.mmdb
        [Rule]
        IP-ASN,AS64500,REJECT
        IP-ASN,4200000000,REJECT-DROP,no-resolve
        GEOIP,JP,REJECT-TINYGIF
        FINAL,DIRECT
        """, file: "g.conf", baseDirectory: "/etc/sluice") { path in
            path == "/etc/sluice/asn.mmdb" ? .bytes(asn) : path == "/etc/sluice/country.mmdb" ? .bytes(Self.database) : .unreadable("no such file")
        }.get()
        #expect(profile.rules.map(\.description) == ["IP-ASN,64500,REJECT", "IP-ASN,4200000000,REJECT-DROP,no-resolve", "GEOIP,JP,REJECT-TINYGIF"])
        #expect(policy(profile, to: "192.0.2.9") == "REJECT")
        #expect(policy(profile, to: "2001:db8::9") == "REJECT-DROP")
        #expect(policy(profile, to: "198.51.100.9") == "REJECT-TINYGIF")
        #expect(policy(profile, to: "203.0.113.9") == "DIRECT")
        #expect(errors("[Rule]\nIP-ASN,13335,DIRECT\nFINAL,DIRECT\n") == [
            "g.conf:2: error: IP-ASN needs an ASN database\n  hint: set asn-database = GeoLite2-ASN.mmdb in [General] (a MaxMind DB file); or list the networks in a RULE-SET file",
        ])
        #expect(errors("[General]\nasn-database = country.mmdb\n[Rule]\nIP-ASN,cloudflare,DIRECT\nFINAL,DIRECT\n") == [
            "g.conf:4: error: IP-ASN takes an autonomous system number, got 'cloudflare'\n  hint: write the number, e.g. IP-ASN,13335,DIRECT",
        ])
    }

    func errors(_ text: String, database: [UInt8]? = GeoIPRuleTests.database) -> [String] {
        guard case let .failure(failure) = load(text, database: database) else { return [] }
        return failure.errors.map(\.description)
    }

    @Test func mistakes() {
        #expect(errors("[Rule]\nGEOIP,NL,DIRECT\nFINAL,DIRECT\n") == [
            "g.conf:2: error: GEOIP needs a GeoIP database\n  hint: set geoip-database = GeoLite2-Country.mmdb in [General] (a MaxMind DB file); or list the networks in a RULE-SET file",
        ])
        #expect(errors("[General]\ngeoip-database = country.mmdb\n[Rule]\nGEOIP,Netherlands,DIRECT\nFINAL,DIRECT\n") == [
            "g.conf:4: error: GEOIP takes a two-letter country code, got 'Netherlands'\n  hint: write an ISO 3166-1 code, e.g. GEOIP,NL,DIRECT",
        ])
        // A database that cannot be read or is not one: one error, at its line.
        let hint = "name a MaxMind DB file (.mmdb), such as GeoLite2-Country.mmdb; a relative path starts at the profile's folder"
        #expect(errors("[General]\ngeoip-database = missing.mmdb\n[Rule]\nGEOIP,NL,DIRECT\nFINAL,DIRECT\n") == [
            "g.conf:2: error: cannot read the GeoIP database /etc/sluice/missing.mmdb: no such file\n  hint: \(hint)",
        ])
        #expect(errors("[General]\ngeoip-database = country.mmdb\n[Rule]\nGEOIP,NL,DIRECT\nFINAL,DIRECT\n", database: Array("hello".utf8)) == [
            "g.conf:2: error: /etc/sluice/country.mmdb is not a MaxMind DB file: no MaxMind DB metadata marker: not a .mmdb file\n  hint: \(hint)",
        ])
    }
}
