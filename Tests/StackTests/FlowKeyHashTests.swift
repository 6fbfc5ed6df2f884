import Testing
@testable import Stack
import Wire

/// FlowKey's own hash (what Dictionary and Set call): equal keys hash alike
/// under every seed, the seed changes the result, and keys that differ in one
/// port or one address byte spread over the low bits that pick a bucket.
@Suite struct FlowKeyHashTests {
    func key(_ port: UInt16, _ last: UInt8 = 5, v6: Bool = false, transport: IPProtocol = .tcp) -> FlowKey {
        v6 ? FlowKey(transport: transport, appAddress: .v6(IPv6Address("fd00:7::2")!), appPort: port,
                     destinationAddress: .v6(IPv6Address("fd00:99::\(last)")!), destinationPort: 443)
            : FlowKey(transport: transport, appAddress: .v4(IPv4Address(10, 7, 0, 2)), appPort: port,
                      destinationAddress: .v4(IPv4Address(198, 18, 0, last)), destinationPort: 443)
    }

    @Test func equalKeysHashAlikeAndTheSeedMatters() {
        for v6 in [false, true] {
            let a = key(40000, v6: v6), b = key(40000, v6: v6)
            for seed in [0, 1, -1, 0x5eed_1234] { #expect(a._rawHashValue(seed: seed) == b._rawHashValue(seed: seed)) }
            #expect(a._rawHashValue(seed: 1) != a._rawHashValue(seed: 2))
        }
        #expect(key(1, transport: .tcp)._rawHashValue(seed: 0) != key(1, transport: .udp)._rawHashValue(seed: 0))
    }

    /// Sequential ports (how an app's connections look) and sequential
    /// destinations fill a 4096-bucket table about as a random function would.
    @Test(arguments: [false, true])
    func nearbyKeysSpreadOverTheBuckets(v6: Bool) {
        var ports = Set<Int>(), hosts = Set<Int>()
        for port in 0 ..< 4096 { ports.insert(key(UInt16(30000 + port), v6: v6)._rawHashValue(seed: 7) & 4095) }
        for last in 0 ..< 256 { hosts.insert(key(40000, UInt8(last), v6: v6)._rawHashValue(seed: 7) & 4095) }
        // A random function fills 1 - 1/e ≈ 63% of 4096 buckets with 4096 keys (~2589), and 256 keys nearly all.
        #expect(ports.count > 2400, "\(ports.count) of 4096 buckets")
        #expect(hosts.count > 240, "\(hosts.count) buckets for 256 keys")
    }

    @Test func dictionariesFindEveryKey() {
        var map: [FlowKey: Int] = [:]
        for port in 0 ..< 20000 { map[key(UInt16(port), UInt8(port % 7), v6: port % 3 == 0)] = port }
        #expect(map.count == 20000)
        #expect((0 ..< 20000).allSatisfy { map[key(UInt16($0), UInt8($0 % 7), v6: $0 % 3 == 0)] == $0 })
        #expect(map[key(20001)] == nil)
    }
}
