import Testing
import Relay

@Suite struct ProxyGroupTests {
    let ms: UInt64 = 1_000_000
    let second: UInt64 = 1_000_000_000

    @Test func fallbackMovesToTheNextHealthyMemberAndBack() throws {
        var g = try ProxyGroup(name: "egress", kind: .fallback, members: ["corp-socks", "corp-http", "direct"], checkIntervalNs: 30 * second)
        #expect(g.current == "corp-socks")
        #expect(g.dueChecks(now: 0) == ["corp-socks", "corp-http", "direct"])
        #expect(g.dueChecks(now: 1) == [], "not due again before the interval")
        #expect(g.record(member: "corp-socks", result: .success(latencyNs: 12 * ms), at: 10 * ms) == nil)
        #expect(g.record(member: "corp-http", result: .failure, at: 11 * ms) == nil)
        #expect(g.description == "egress: fallback → corp-socks (healthy 12 ms), corp-http (down), direct (unchecked)")
        // The active proxy dies: the next check moves the group.
        let change = g.record(member: "corp-socks", result: .failure, at: 30 * second)
        #expect(change?.description == "egress: corp-socks → direct", "corp-http is down, direct unchecked")
        #expect(g.record(member: "corp-http", result: .success(latencyNs: 40 * ms), at: 30 * second)?.to == "corp-http")
        // corp-socks comes back: fallback prefers the first member again.
        #expect(g.record(member: "corp-socks", result: .success(latencyNs: 15 * ms), at: 60 * second)?.to == "corp-socks")
    }

    @Test func fallbackWithEverythingDownKeepsTheFirst() throws {
        var g = try ProxyGroup(name: "g", kind: .fallback, members: ["a", "b"])
        g.record(member: "a", result: .failure, at: 1)
        #expect(g.current == "b")
        #expect(g.record(member: "b", result: .failure, at: 2)?.to == "a")
    }

    @Test func urlTestSwitchesOnlyBeyondTheTolerance() throws {
        var g = try ProxyGroup(name: "fast", kind: .urlTest(toleranceNs: 50 * ms), members: ["a", "b", "c"])
        g.record(member: "a", result: .success(latencyNs: 200 * ms), at: 1)
        #expect(g.current == "a")
        #expect(g.record(member: "b", result: .success(latencyNs: 160 * ms), at: 2) == nil, "40 ms better: within tolerance")
        #expect(g.record(member: "c", result: .success(latencyNs: 149 * ms), at: 3)?.to == "c", "51 ms better")
        #expect(g.record(member: "c", result: .success(latencyNs: 150 * ms), at: 4) == nil)
        // The current member goes down: the fastest healthy one wins at once.
        #expect(g.record(member: "c", result: .failure, at: 5)?.to == "b")
        #expect(g.description == "fast: url-test → b (healthy 160 ms), a (healthy 200 ms), c (down)")
    }

    @Test func urlTestBeforeAnyResultAndWhenAllFail() throws {
        var g = try ProxyGroup(name: "t", kind: .urlTest(toleranceNs: 0), members: ["a", "b"])
        #expect(g.current == "a")
        #expect(g.record(member: "a", result: .failure, at: 1)?.to == "b")
        #expect(g.record(member: "b", result: .failure, at: 2)?.to == "a")
        #expect(g.record(member: "b", result: .success(latencyNs: 900_000), at: 3)?.to == "b")
        #expect(g.description == "t: url-test → b (healthy 1 ms), a (down)")
    }

    @Test func selectSwitchesByHandOnly() throws {
        var g = try ProxyGroup(name: "manual", kind: .select, members: ["a", "b"])
        #expect(try g.select("b")?.description == "manual: a → b")
        #expect(try g.select("b") == nil)
        #expect(g.record(member: "b", result: .failure, at: 1) == nil, "select does not act on health")
        #expect(g.current == "b")
        #expect(throws: ProxyGroupError.unknownMember(group: "manual", member: "z")) { try g.select("z") }
        var f = try ProxyGroup(name: "auto", kind: .fallback, members: ["a"])
        #expect(throws: ProxyGroupError.notSelectable(group: "auto")) { try f.select("a") }
    }

    @Test func checksComeDueEachInterval() throws {
        var g = try ProxyGroup(name: "g", kind: .fallback, members: ["a", "b"], checkIntervalNs: 10 * second)
        #expect(g.nextCheckNs == 0)
        #expect(g.dueChecks(now: 5) == ["a", "b"])
        #expect(g.nextCheckNs == 10 * second + 5)
        g.record(member: "a", result: .success(latencyNs: ms), at: 2 * second)
        #expect(g.dueChecks(now: 10 * second + 5) == ["b"], "a was checked at 2 s, due at 12 s")
        #expect(g.dueChecks(now: 12 * second) == ["a"])
    }

    @Test func badConfigurations() {
        #expect(throws: ProxyGroupError.empty(group: "g")) { try ProxyGroup(name: "g", kind: .select, members: []) }
        #expect(throws: ProxyGroupError.duplicateMember(group: "g", member: "a")) {
            try ProxyGroup(name: "g", kind: .select, members: ["a", "a"])
        }
        #expect(throws: ProxyGroupError.cycle(["g", "g"])) { try ProxyGroup(name: "g", kind: .select, members: ["g"]) }
    }

    @Test func nestedGroupsResolveAndCyclesAreFound() throws {
        var egress = try ProxyGroup(name: "egress", kind: .select, members: ["corp", "home"])
        let corp = try ProxyGroup(name: "corp", kind: .fallback, members: ["corp-socks", "corp-http"])
        let home = try ProxyGroup(name: "home", kind: .select, members: ["home-socks", "egress"])
        var groups = ["egress": egress, "corp": corp, "home": home]
        #expect(try ProxyGroup.resolve("egress") { groups[$0] } == ["egress", "corp", "corp-socks"])
        #expect(try ProxyGroup.resolve("corp-http") { groups[$0] } == ["corp-http"])
        // home can reach egress again: validation sees it even while no current choice loops.
        #expect(throws: ProxyGroupError.cycle(["egress", "home", "egress"])) { try ProxyGroup.validate([egress, corp, home]) }
        // And resolution catches a loop that the current choices make.
        try egress.select("home")
        var looping = home
        try looping.select("egress")
        groups["egress"] = egress
        groups["home"] = looping
        #expect(throws: ProxyGroupError.cycle(["egress", "home", "egress"])) { try ProxyGroup.resolve("egress") { groups[$0] } }
        try ProxyGroup.validate([corp, try ProxyGroup(name: "top", kind: .fallback, members: ["corp", "direct"])])
    }
}

@Suite struct HandshakeDeadlinesTests {
    @Test func defaultsAndLookup() {
        let d = HandshakeDeadlines.default
        #expect(d.limit(for: .connect) == .seconds(5))
        #expect(d.limit(for: .reply) == .seconds(10))
        #expect(d.limitNs(for: .greeting) == 5_000_000_000)
        let custom = HandshakeDeadlines(connect: .milliseconds(1500), greeting: .seconds(1), auth: .seconds(2), reply: .seconds(3))
        #expect(custom.limitNs(for: .connect) == 1_500_000_000)
        #expect(custom.limit(for: .auth) == .seconds(2))
    }
}
