import Stack
import Testing
import Wire
import TestSupport

private func name(_ text: String) -> DNSName { DNSName(text)! }
private func v4(_ text: String) -> IPv4Address { IPv4Address(text)! }
private func v6(_ text: String) -> IPv6Address { IPv6Address(text)! }
private func at(_ seconds: Int64) -> Instant { .milliseconds(seconds * 1000) }

/// The pool behind a reference, so that #expect can call its mutating methods.
final class PoolBox {
    var value: FakeIPPool
    init(_ value: FakeIPPool) { self.value = value }
    var configuration: FakeIPPoolConfiguration { value.configuration }
    var capacity: Int { value.capacity }
    var count: Int { value.count }
    var counters: FakeIPPool.Counters { value.counters }
    var mappings: [FakeIPMapping] { value.mappings }
    func allocate(_ name: DNSName, now: Instant) -> FakeIPAddresses? { value.allocate(name, now: now) }
    func addresses(for name: DNSName, now: Instant) -> FakeIPAddresses? { value.addresses(for: name, now: now) }
    func name(for address: IPAddress, now: Instant) -> DNSName? { value.name(for: address, now: now) }
    func lookup(_ address: IPAddress, now: Instant) -> DNSName? { value.lookup(address, now: now) }
    func contains(_ address: IPAddress) -> Bool { value.contains(address) }
    func pin(_ address: IPAddress, now: Instant) -> DNSName? { value.pin(address, now: now) }
    @discardableResult func unpin(_ address: IPAddress, now: Instant) -> Bool { value.unpin(address, now: now) }
    func pinCount(of address: IPAddress) -> Int { value.pinCount(of: address) }
    func expire(now: Instant) -> Int { value.expire(now: now) }
}

/// 198.18.0.0/29: eight addresses, .0 .1 .2 and .7 reserved, so four names fit.
private func tinyPool(idle: Duration = .seconds(3600)) -> PoolBox {
    PoolBox(FakeIPPool(FakeIPPoolConfiguration(prefixLength: 29, idleLifetime: idle)))
}

@Suite struct FakeIPTests {
    @Test func sameNameSameAddress() throws {
        let pool = tinyPool()
        let first = try #require(pool.allocate(name("api.example.test"), now: at(0)))
        let again = try #require(pool.allocate(name("api.example.test"), now: at(5)))
        #expect(first == again)
        #expect(first == FakeIPAddresses(v4: v4("198.18.0.3"), v6: v6("fd73:6c75:6963::3")))
        let other = try #require(pool.allocate(name("www.example.test"), now: at(6)))
        #expect(other.v4 == v4("198.18.0.4"))
        #expect(pool.count == 2)
        #expect(pool.counters.allocated == 2)
    }

    @Test func caseAndFinalDotAreIgnoredAndTheNameIsKeptInLowerCase() throws {
        let pool = tinyPool()
        let mixed = try #require(pool.allocate(name("Api.EXAMPLE.Test."), now: at(0)))
        #expect(pool.allocate(name("api.example.test"), now: at(1)) == mixed)
        #expect(pool.addresses(for: name("API.example.TEST"), now: at(1)) == mixed)
        #expect(pool.count == 1)
        #expect(pool.name(for: .v4(mixed.v4), now: at(1))?.description == "api.example.test.")
    }

    @Test func reverseLookupInBothFamilies() throws {
        let pool = tinyPool()
        let addresses = try #require(pool.allocate(name("a.test"), now: at(0)))
        #expect(pool.name(for: .v4(addresses.v4), now: at(1)) == name("a.test"))
        #expect(pool.name(for: .v6(addresses.v6), now: at(1)) == name("a.test"))
        // In the pool but unmapped, reserved, or outside the pool: nothing.
        #expect(pool.name(for: .v4(v4("198.18.0.5")), now: at(1)) == nil)
        #expect(pool.name(for: .v4(v4("198.18.0.1")), now: at(1)) == nil)
        #expect(pool.name(for: .v4(v4("10.0.0.3")), now: at(1)) == nil)
        #expect(pool.name(for: .v6(v6("fd73:6c75:6963:1::3")), now: at(1)) == nil)
        #expect(pool.name(for: .v6(v6("fd73:6c75:6963::8")), now: at(1)) == nil)
        #expect(pool.contains(.v4(v4("198.18.0.7"))))
        #expect(!pool.contains(.v4(v4("198.18.0.8"))))
        #expect(pool.contains(.v6(v6("fd73:6c75:6963::7"))))
        #expect(!pool.contains(.v6(v6("fd73:6c75:6963::8"))))
        #expect(pool.lookup(.v6(addresses.v6), now: at(2)) == name("a.test"))
    }

    @Test func reservedAddressesAreNeverHandedOut() {
        let pool = PoolBox(FakeIPPool(FakeIPPoolConfiguration(prefixLength: 29, reserved: [v4("198.18.0.0"), v4("198.18.0.5")])))
        #expect(pool.capacity == 6)
        var handed: [IPv4Address] = []
        for i in 0 ..< 6 { handed.append(pool.allocate(name("n\(i).test"), now: at(Int64(i)))!.v4) }
        #expect(handed.map(\.description) == ["198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4", "198.18.0.6",
                                              "198.18.0.7"])
        // Full: the seventh name takes the oldest mapping's address, never a reserved one.
        #expect(pool.allocate(name("n6.test"), now: at(6))?.v4 == v4("198.18.0.1"))
    }

    @Test func defaultPoolIsTheBenchmarkingSlash15() {
        let pool = FakeIPPool()
        #expect(pool.configuration.network == v4("198.18.0.0"))
        #expect(pool.configuration.size == 131_072)
        #expect(pool.capacity == 131_072 - 4)
        #expect(pool.configuration.reserved.map(\.description) == ["198.18.0.0", "198.18.0.1", "198.18.0.2", "198.19.255.255"])
    }

    @Test func fullPoolRecyclesTheLeastRecentlyUsed() throws {
        let pool = tinyPool()
        for (i, n) in ["a", "b", "c", "d"].enumerated() { _ = pool.allocate(name("\(n).test"), now: at(Int64(i))) }
        let b = try #require(pool.addresses(for: name("b.test"), now: at(4)))
        // A DNS query for a and a reverse lookup of c make b the least recently used.
        _ = pool.allocate(name("a.test"), now: at(5))
        #expect(pool.lookup(.v4(v4("198.18.0.5")), now: at(6)) == name("c.test"))
        let e = try #require(pool.allocate(name("e.test"), now: at(7)))
        #expect(e.v4 == b.v4)
        #expect(pool.addresses(for: name("b.test"), now: at(7)) == nil)
        #expect(pool.name(for: .v4(b.v4), now: at(7)) == name("e.test"))
        #expect(pool.counters.recycled == 1)
        #expect(pool.count == 4)
        #expect(pool.value.description
            == "fake-ip 198.18.0.0/29: 4/4 mapped, 0 pinned; allocated 5 recycled 1 expired 0 exhausted 0")
        // Next in line is d (used at 3), then a (5).
        #expect(pool.allocate(name("f.test"), now: at(8))?.v4 == v4("198.18.0.6"))
        #expect(pool.allocate(name("g.test"), now: at(9))?.v4 == v4("198.18.0.3"))
    }

    @Test func pinnedMappingsAreNeverRecycled() throws {
        let pool = tinyPool()
        for n in ["a", "b", "c", "d"] { _ = pool.allocate(name("\(n).test"), now: at(0)) }
        let pinned = ["198.18.0.3", "198.18.0.4", "198.18.0.5"].map { IPAddress.v4(v4($0)) }
        for address in pinned { #expect(pool.pin(address, now: at(1)) != nil) }
        #expect(pool.pin(pinned[0], now: at(1)) == name("a.test"))
        #expect(pool.pinCount(of: pinned[0]) == 2)
        // Only d's address is free to take, again and again.
        for (i, n) in ["e", "f", "g"].enumerated() {
            #expect(pool.allocate(name("\(n).test"), now: at(Int64(2 + i)))?.v4 == v4("198.18.0.6"))
        }
        for (address, n) in zip(pinned, ["a", "b", "c"]) { #expect(pool.name(for: address, now: at(9)) == name("\(n).test")) }
    }

    @Test func everyAddressPinnedRefusesNewNamesAndKeepsTheOld() throws {
        let pool = tinyPool()
        for n in ["a", "b", "c", "d"] {
            let addresses = try #require(pool.allocate(name("\(n).test"), now: at(0)))
            #expect(pool.pin(.v6(addresses.v6), now: at(0)) == name("\(n).test"))
        }
        #expect(pool.allocate(name("e.test"), now: at(1)) == nil)
        #expect(pool.counters.exhausted == 1)
        // Names that have an address still get it.
        #expect(pool.allocate(name("c.test"), now: at(1))?.v4 == v4("198.18.0.5"))
        #expect(pool.unpin(.v4(v4("198.18.0.4")), now: at(2)))
        #expect(pool.unpin(.v4(v4("198.18.0.6")), now: at(2)))
        // One pin, one unpin: a second unpin does nothing.
        #expect(pool.pinCount(of: .v4(v4("198.18.0.6"))) == 0)
        #expect(!pool.unpin(.v4(v4("198.18.0.6")), now: at(2)))
        #expect(pool.allocate(name("e.test"), now: at(3)) != nil)
        #expect(pool.addresses(for: name("e.test"), now: at(3))?.v4 == v4("198.18.0.4"))
        #expect(pool.addresses(for: name("d.test"), now: at(3))?.v4 == v4("198.18.0.6"))
    }

    @Test func pinningAnUnmappedAddressPinsNothing() {
        let pool = tinyPool()
        #expect(pool.pin(.v4(v4("198.18.0.3")), now: at(0)) == nil)
        #expect(pool.pin(.v4(v4("8.8.8.8")), now: at(0)) == nil)
        #expect(pool.pinCount(of: .v4(v4("198.18.0.3"))) == 0)
        #expect(!pool.unpin(.v4(v4("198.18.0.3")), now: at(0)))
    }

    @Test func idleMappingsExpire() throws {
        let pool = tinyPool(idle: .seconds(10))
        let a = try #require(pool.allocate(name("a.test"), now: at(0)))
        let b = try #require(pool.allocate(name("b.test"), now: at(0)))
        #expect(pool.pin(.v4(b.v4), now: at(1)) != nil)
        #expect(pool.name(for: .v4(a.v4), now: .milliseconds(9_999)) == name("a.test"))
        #expect(pool.name(for: .v4(a.v4), now: at(10)) == nil)
        #expect(pool.addresses(for: name("a.test"), now: at(10)) == nil)
        #expect(pool.expire(now: at(10)) == 1)
        #expect(pool.count == 1)
        // Pinned: alive an hour later; unpinned: ten more seconds.
        #expect(pool.name(for: .v4(b.v4), now: at(3600)) == name("b.test"))
        #expect(pool.addresses(for: name("b.test"), now: at(3600)) == b)
        #expect(pool.lookup(.v4(b.v4), now: at(3600)) == name("b.test"))
        pool.unpin(.v4(b.v4), now: at(3600))
        #expect(pool.name(for: .v4(b.v4), now: at(3609)) == name("b.test"))
        #expect(pool.name(for: .v4(b.v4), now: at(3610)) == nil)
        #expect(pool.counters.expired == 1)
        // A mutating call purges on its own; a is asked again and gets an address anew.
        #expect(pool.allocate(name("a.test"), now: at(3610)) != nil)
        #expect(pool.counters.expired == 2)
        #expect(pool.count == 1)
    }

    @Test func lookupsKeepAMappingAlive() throws {
        let pool = tinyPool(idle: .seconds(10))
        let a = try #require(pool.allocate(name("a.test"), now: at(0)))
        for t in stride(from: 8, through: 80, by: 8) { #expect(pool.lookup(.v4(a.v4), now: at(Int64(t))) == name("a.test")) }
        #expect(pool.name(for: .v4(a.v4), now: at(89)) == name("a.test"))
        #expect(pool.name(for: .v4(a.v4), now: at(90)) == nil)
    }

    @Test func freshAddressesFirstThenExpiredOnesOldestFirst() throws {
        let pool = tinyPool(idle: .seconds(10))
        _ = pool.allocate(name("a.test"), now: at(0)) // .3
        _ = pool.allocate(name("b.test"), now: at(1)) // .4
        // Both expire; c still gets a never-used address.
        #expect(pool.allocate(name("c.test"), now: at(20))?.v4 == v4("198.18.0.5"))
        #expect(pool.allocate(name("d.test"), now: at(20))?.v4 == v4("198.18.0.6"))
        #expect(pool.allocate(name("e.test"), now: at(20))?.v4 == v4("198.18.0.3"))
        #expect(pool.allocate(name("f.test"), now: at(20))?.v4 == v4("198.18.0.4"))
        #expect(pool.counters.recycled == 0)
        #expect(pool.counters.expired == 2)
    }

    @Test func theWholeDefaultPoolFillsThenRecycles() throws {
        let pool = PoolBox(FakeIPPool())
        var last = FakeIPAddresses(v4: .any, v6: .any)
        for i in 0 ..< pool.capacity { last = try #require(pool.allocate(name("h\(i).test"), now: at(0))) }
        #expect(last.v4 == v4("198.19.255.254"))
        #expect(last.v6 == v6("fd73:6c75:6963::1:fffe"))
        #expect(pool.count == pool.capacity)
        let overflow = try #require(pool.allocate(name("one-more.test"), now: at(1)))
        #expect(overflow.v4 == v4("198.18.0.3"))
        #expect(pool.addresses(for: name("h0.test"), now: at(1)) == nil)
        #expect(pool.count == pool.capacity)
    }

    /// Random allocations, lookups, pins, unpins and waits on a 14-name pool,
    /// checked against the invariants after every step.
    @Test(arguments: [1, 2, 3, 4, 5, 0xfeed] as [UInt64])
    func randomOperationsKeepTheInvariants(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let configuration = FakeIPPoolConfiguration(prefixLength: 28, idleLifetime: .seconds(30))
        let pool = PoolBox(FakeIPPool(configuration))
        let names = (0 ..< 40).map { name("host\($0).example.test") }
        var now = at(0)
        // The model: what each pinned name must keep.
        var pinned: [DNSName: (address: IPv4Address, count: Int)] = [:]
        for step in 0 ..< 3000 {
            let pick = names[Int(random.next() % UInt64(names.count))]
            switch random.next() % 6 {
            case 0, 1:
                let before = pool.addresses(for: pick, now: now)
                let got = pool.allocate(pick, now: now)
                if let before { #expect(got == before, "step \(step): \(pick) moved") }
                if got == nil { #expect(pinned.count == pool.capacity, "step \(step): refused with a free address") }
            case 2:
                if let addresses = pool.addresses(for: pick, now: now) {
                    #expect(pool.lookup(.v4(addresses.v4), now: now) == pick)
                }
            case 3:
                if let addresses = pool.addresses(for: pick, now: now) {
                    #expect(pool.pin(.v6(addresses.v6), now: now) == pick)
                    pinned[pick, default: (addresses.v4, 0)].count += 1
                }
            case 4:
                if let entry = pinned[pick] {
                    #expect(pool.unpin(.v4(entry.address), now: now))
                    pinned[pick] = entry.count == 1 ? nil : (entry.address, entry.count - 1)
                }
            default:
                now = now + .milliseconds(Int64(random.next() % 20_000))
            }
            try checkInvariants(pool, now: now, pinned: pinned, step: step)
        }
        #expect(pool.counters.recycled > 0 && pool.counters.expired > 0, "the run never filled or idled the pool")
    }

    private func checkInvariants(_ pool: PoolBox, now: Instant, pinned: [DNSName: (address: IPv4Address, count: Int)],
                                 step: Int) throws {
        let mappings = pool.mappings
        #expect(mappings.count == pool.count)
        #expect(mappings.count <= pool.capacity, "step \(step)")
        #expect(Set(mappings.map(\.name)).count == mappings.count, "step \(step): a name holds two addresses")
        #expect(Set(mappings.map(\.addresses.v4)).count == mappings.count, "step \(step): an address holds two names")
        let reserved = Set(pool.configuration.reserved)
        for mapping in mappings {
            #expect(pool.contains(.v4(mapping.addresses.v4)) && pool.contains(.v6(mapping.addresses.v6)))
            #expect(!reserved.contains(mapping.addresses.v4), "step \(step): reserved \(mapping)")
            #expect(mapping.addresses.v6.low == UInt64(mapping.addresses.v4.value - pool.configuration.network.value))
            let live = mapping.pinCount > 0 || mapping.lastUsed + pool.configuration.idleLifetime > now
            if live {
                #expect(pool.addresses(for: mapping.name, now: now) == mapping.addresses)
                #expect(pool.name(for: .v4(mapping.addresses.v4), now: now) == mapping.name)
                #expect(pool.name(for: .v6(mapping.addresses.v6), now: now) == mapping.name)
            }
        }
        for (name, entry) in pinned {
            let mapping = try #require(mappings.first { $0.name == name }, "step \(step): pinned \(name) lost")
            #expect(mapping.addresses.v4 == entry.address && mapping.pinCount == entry.count, "step \(step)")
        }
    }
}
