import Testing
import Stack
import Wire

/// What relayed DNS answers teach (DNSAnswerNames): each A and AAAA answer
/// names its address with the question's name, for the answer's TTL held
/// between a minute and an hour; the latest answer wins; the map is bounded.
@Suite struct DNSAnswerNamesTests {
    static let second: Int64 = 1_000_000_000

    func response(_ name: String, _ answers: [(DNSResourceData, UInt32)], isResponse: Bool = true) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 512)
        let length = bytes.withUnsafeMutableBytes { buffer in
            var writer = try! DNSMessageWriter(into: buffer, header: DNSHeader(id: 7, isResponse: isResponse))
            try! writer.appendQuestion(DNSName(name)!, type: .a)
            for (data, ttl) in answers { try! writer.appendAnswer(data, timeToLive: ttl) }
            return writer.bytes.count
        }
        return Array(bytes[..<length])
    }

    func learn(_ names: inout DNSAnswerNames, _ message: [UInt8], at seconds: Int64) {
        message.withUnsafeBytes { names.learn(message: $0, now: Instant(nanoseconds: seconds * Self.second)) }
    }

    func name(_ names: DNSAnswerNames, _ address: IPAddress, at seconds: Int64) -> String? {
        names.name(for: address, now: Instant(nanoseconds: seconds * Self.second))
    }

    let a = IPAddress.v4(IPv4Address(10, 88, 0, 2)), b = IPAddress.v4(IPv4Address(10, 88, 0, 3))

    @Test func answersNameTheirAddressesForTheirTTL() {
        var names = DNSAnswerNames()
        learn(&names, response("SSH.Test.", [(.a(IPv4Address(10, 88, 0, 2)), 300), (.a(IPv4Address(10, 88, 0, 3)), 300)]), at: 0)
        #expect(name(names, a, at: 1) == "ssh.test" && name(names, b, at: 1) == "ssh.test")
        #expect(name(names, a, at: 299) == "ssh.test")
        #expect(name(names, a, at: 300) == nil)
        #expect(name(names, .v4(IPv4Address(10, 88, 0, 9)), at: 1) == nil)
    }

    @Test func shortTTLsLastAMinuteAndLongOnesAnHour() {
        var names = DNSAnswerNames()
        learn(&names, response("short.test", [(.a(IPv4Address(10, 88, 0, 2)), 1)]), at: 0)
        learn(&names, response("long.test", [(.a(IPv4Address(10, 88, 0, 3)), 86400)]), at: 0)
        #expect(name(names, a, at: 59) == "short.test" && name(names, a, at: 60) == nil)
        #expect(name(names, b, at: 3599) == "long.test" && name(names, b, at: 3600) == nil)
    }

    /// One address, two names (a CDN, or [Host] entries): the latest answer wins.
    @Test func theLatestAnswerWins() {
        var names = DNSAnswerNames()
        learn(&names, response("one.test", [(.a(IPv4Address(10, 88, 0, 2)), 300)]), at: 0)
        learn(&names, response("two.test", [(.aaaa(IPv6Address(high: 0xfd00_0088_0000_0000, low: 2)), 300), (.a(IPv4Address(10, 88, 0, 2)), 300)]), at: 1)
        #expect(name(names, a, at: 2) == "two.test")
        #expect(name(names, .v6(IPv6Address(high: 0xfd00_0088_0000_0000, low: 2)), at: 2) == "two.test")
    }

    @Test func queriesCNAMEsAndGarbageTeachNothing() {
        var names = DNSAnswerNames()
        learn(&names, response("q.test", [], isResponse: false), at: 0)
        learn(&names, response("c.test", [(.cname(DNSName("a.test")!), 300)]), at: 0)
        learn(&names, [0x12, 0x34, 0x81], at: 0)
        #expect(names.count == 0)
    }

    /// Full of live names, a new address goes without; expired ones make room.
    @Test func theMapIsBounded() {
        var names = DNSAnswerNames(capacity: 2)
        learn(&names, response("one.test", [(.a(IPv4Address(10, 0, 0, 1)), 60), (.a(IPv4Address(10, 0, 0, 2)), 600)]), at: 0)
        learn(&names, response("two.test", [(.a(IPv4Address(10, 0, 0, 3)), 600)]), at: 10)
        #expect(names.count == 2 && name(names, .v4(IPv4Address(10, 0, 0, 3)), at: 11) == nil)
        // A known address is renamed even when full.
        learn(&names, response("three.test", [(.a(IPv4Address(10, 0, 0, 2)), 600)]), at: 20)
        #expect(name(names, .v4(IPv4Address(10, 0, 0, 2)), at: 21) == "three.test")
        learn(&names, response("two.test", [(.a(IPv4Address(10, 0, 0, 3)), 600)]), at: 61)
        #expect(name(names, .v4(IPv4Address(10, 0, 0, 3)), at: 62) == "two.test" && names.count == 2)
    }
}
