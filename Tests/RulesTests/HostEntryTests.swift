import Testing
import Wire
@testable import Rules

/// [Host] in Surge's forms: an address, an alias, or the DNS server that
/// resolves the name (split DNS).
@Suite struct HostEntryTests {
    let profile: Profile

    init() throws {
        profile = try loadProfile("""
        [Host]
        origin.test = 10.0.0.2
        v6.test = fd00::2
        alias.test = origin.test
        chain.test = ALIAS.test.
        *.corp.test = server:10.0.0.53
        ldap.corp.test = 10.9.9.9
        *.lab.test = server:[fd00::53]:5353
        legacy.test = server:10.0.0.54:5353
        home.test = server:system
        out.test = www.corp.test
        dual.test = fd00::7, 10.0.0.7,10.0.0.8
        dual-alias.test = dual.test
        [Rule]
        FINAL,DIRECT
        """).get()
    }

    @Test func eachFormParses() throws {
        #expect(profile.hosts.map(\.description) == [
            "origin.test = 10.0.0.2", "v6.test = fd00::2", "alias.test = origin.test", "chain.test = alias.test",
            "*.corp.test = server:10.0.0.53", "ldap.corp.test = 10.9.9.9", "*.lab.test = server:[fd00::53]:5353",
            "legacy.test = server:10.0.0.54:5353", "home.test = server:system", "out.test = www.corp.test",
            "dual.test = fd00::7, 10.0.0.7, 10.0.0.8", "dual-alias.test = dual.test",
        ])
        #expect(profile.hosts[6].value == .server(.address(try #require(IPAddress("fd00::53")), port: 5353)))
        #expect(profile.hosts[8].value == .server(.system))
    }

    /// Aliases are followed to an address; a chain that ends at a `server:`
    /// name or outside the table has none here (it is resolved).
    @Test func addressesFollowAliases() {
        #expect(profile.hostAddress(for: "chain.test") == IPAddress("10.0.0.2"))
        #expect(profile.hostAddress(for: "ldap.corp.test") == IPAddress("10.9.9.9"))
        #expect(profile.hostAddress(for: "www.corp.test") == nil)
        #expect(profile.hostAddress(for: "out.test") == nil)
        #expect(profile.hostEntry(for: "a.b.corp.test")?.name == "*.corp.test")
        #expect(profile.hostEntry(for: "corp.test") == nil, "a wildcard covers the names under it, not the name itself")
    }

    /// A dual-stack name lists its addresses: DNS answers each family with
    /// its own, and Sluice connects to the first IPv4 one, as it goes IPv4
    /// first for names it resolves.
    @Test func aNameMayHaveSeveralAddresses() {
        let all = ["fd00::7", "10.0.0.7", "10.0.0.8"].compactMap { IPAddress($0) }
        #expect(profile.hostAddresses(for: "dual-alias.test") == all)
        #expect(profile.hostAddress(for: "dual.test") == IPAddress("10.0.0.7"))
        #expect(profile.hostAddress(for: "v6.test") == IPAddress("fd00::2"))
    }

    @Test func serverTextsParse() throws {
        #expect(HostServer("10.0.0.53") == .address(try #require(IPAddress("10.0.0.53")), port: 53))
        #expect(HostServer("10.0.0.53:5353") == .address(try #require(IPAddress("10.0.0.53")), port: 5353))
        #expect(HostServer("fd00::53") == .address(try #require(IPAddress("fd00::53")), port: 53))
        #expect(HostServer("[fd00::53]:53") == .address(try #require(IPAddress("fd00::53")), port: 53))
        for bad in ["", "dns.test", "10.0.0.53:", "10.0.0.53:0", "10.0.0.53:65536", "[fd00::53]", "[fd00::53]5353", "10.0.0.53:+53", "Système"] {
            #expect(HostServer(bad) == nil, "\(bad)")
        }
    }

    @Test func theJSONDumpSaysWhichForm() {
        let json = ProfileJSON.render(profile, pretty: false)
        #expect(json.contains(#"{"line":2,"name":"origin.test","address":"10.0.0.2","addresses":["10.0.0.2"]}"#), "\(json)")
        #expect(json.contains(#"{"line":12,"name":"dual.test","address":"fd00::7","addresses":["fd00::7","10.0.0.7","10.0.0.8"]}"#), "\(json)")
        #expect(json.contains(#"{"line":4,"name":"alias.test","alias":"origin.test"}"#))
        #expect(json.contains(#"{"line":8,"name":"*.lab.test","server":"[fd00::53]:5353"}"#))
        #expect(json.contains(#"{"line":10,"name":"home.test","server":"system"}"#))
    }
}
