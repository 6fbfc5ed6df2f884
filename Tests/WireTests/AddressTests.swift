import Testing
import Wire

@Suite struct AddressTests {
    @Test func ipv4RoundTripsThroughText() {
        #expect(IPv4Address("10.99.1.2") == IPv4Address(10, 99, 1, 2))
        #expect(IPv4Address(10, 99, 1, 2).description == "10.99.1.2")
        #expect(IPv4Address(255, 255, 255, 255).description == "255.255.255.255")
        #expect(IPv4Address("0.0.0.0") == IPv4Address(0))
        #expect(IPv4Address("255.255.255.255") == IPv4Address(0xffff_ffff))
        #expect(IPv4Address("010.1.1.1") == IPv4Address(10, 1, 1, 1))
        for bad in ["", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1..2.3", "a.b.c.d", "1.2.3.-4", "01234.1.1.1",
                    "+1.2.3.4", "1.2.3.4.", ".1.2.3", "1.2.3.4 ", " 1.2.3.4", "1.2.3.999", "1.2.3.4a", "１.2.3.4", "api.test"] {
            #expect(IPv4Address(bad) == nil, "\(bad)")
        }
    }

    @Test func ipv6PrintsCanonically() {
        // RFC 5952 §4: lower case, the longest zero run compressed, the first on a tie, not a single group.
        let cases: [(String, String)] = [
            ("fd00:0:0:0:0:0:0:1", "fd00::1"),
            ("0:0:0:0:0:0:0:0", "::"),
            ("0:0:0:0:0:0:0:1", "::1"),
            ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
            ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
            ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"),
            ("FD00:99:1::2", "fd00:99:1::2"),
            ("::ffff:10.0.0.1", "::ffff:a00:1"),
        ]
        for (text, canonical) in cases {
            #expect(IPv6Address(text)?.description == canonical, "\(text)")
        }
    }

    @Test func ipv6RejectsNonsense() {
        for bad in ["", ":", ":::", "1::2::3", "1:2:3:4:5:6:7:8:9", "12345::", "g::1", "1:2:3:4:5:6:7::8:9"] {
            #expect(IPv6Address(bad) == nil, "\(bad)")
        }
    }

    @Test func loadAndStoreAreNetworkOrder() {
        var buffer = [UInt8](repeating: 0xaa, count: 24)
        buffer.withUnsafeMutableBytes { raw in
            IPv4Address(1, 2, 3, 4).store(raw, 1)
            IPv6Address("fd00::1:2")!.store(raw, 5)
        }
        #expect(Array(buffer[0 ..< 5]) == [0xaa, 1, 2, 3, 4])
        #expect(Array(buffer[5 ..< 21]) == [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2])
        buffer.withUnsafeBytes { raw in
            #expect(IPv4Address.load(raw, 1) == IPv4Address(1, 2, 3, 4))
            #expect(IPv6Address.load(raw, 5) == IPv6Address("fd00::1:2"))
        }
    }
}
