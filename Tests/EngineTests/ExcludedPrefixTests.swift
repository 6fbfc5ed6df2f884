import Testing
@testable import Engine

/// `run --tun --exclude PREFIX`.
@Suite struct ExcludedPrefixTests {
    @Test func parsesAddressesAndPrefixes() throws {
        #expect(try ExcludedPrefix.parse("192.168.1.0/24").get().description == "192.168.1.0/24")
        #expect(try ExcludedPrefix.parse("192.0.2.7").get().description == "192.0.2.7/32")
        #expect(try ExcludedPrefix.parse("fd00::/8").get().description == "fd00::/8")
        #expect(try ExcludedPrefix.parse("2001:db8::1").get().description == "2001:db8::1/128")
        #expect(try ExcludedPrefix.parse("0.0.0.0/0").get().description == "0.0.0.0/0")
        #expect(try ExcludedPrefix.parse("fd00:0:0:1::/64").get().length == 64)
        #expect(try ExcludedPrefix.parse("fd00::8000:0:0:0/65").get().length == 65)
    }

    @Test func refusesWithAReason() {
        func message(_ text: String) -> String {
            guard case let .failure(error) = ExcludedPrefix.parse(text) else { return "accepted" }
            return error.description
        }
        #expect(message("10.1.2.3/8").contains("did you mean 10.0.0.0/8?"))
        #expect(message("fd00::1/64").contains("did you mean fd00::/64?"))
        #expect(message("fd00::8000:0:0:0/64").contains("did you mean fd00::/64?"))
        #expect(message("10.0.0.0/33").contains("0 to 32"))
        #expect(message("fd00::/129").contains("0 to 128"))
        for bad in ["", "lan", "10.0.0.0/", "10.0.0.0/8/8", "10.0.0/8", "/8", "host.test"] {
            #expect(message(bad) != "accepted", "\(bad)")
        }
    }
}
