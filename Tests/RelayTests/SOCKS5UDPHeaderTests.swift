import Testing
import Relay
import Wire

@Suite struct SOCKS5UDPHeaderTests {
    static let cases: [(ProxyTarget, [UInt8])] = [
        (ProxyTarget(host: .ipv4(IPv4Address(192, 0, 2, 53)), port: 53), [0, 0, 0, 0x01, 192, 0, 2, 53, 0x00, 0x35]),
        (ProxyTarget(host: .ipv6(IPv6Address("fd00::35")!), port: 5353),
         [0, 0, 0, 0x04, 0xfd] + Array(repeating: 0, count: 14) + [0x35, 0x14, 0xe9]),
        (ProxyTarget(host: .domain("dns.test"), port: 53), [0, 0, 0, 0x03, 0x08] + Array("dns.test".utf8) + [0x00, 0x35]),
    ]

    @Test func encodesExactlyPerRFC() throws {
        for (target, expected) in Self.cases {
            let header = SOCKS5UDPHeader(target: target)
            #expect(header.length == expected.count)
            var buffer = [UInt8](repeating: 0xAA, count: 300)
            let n = try buffer.withUnsafeMutableBytes { try header.emit(into: $0) }
            #expect(n == expected.count)
            #expect(Array(buffer.prefix(n)) == expected, "\(header)")
            #expect(buffer[n] == 0xAA, "writes no further than it says")
        }
    }

    @Test func parsesFromTheMiddleOfAPoisonedBuffer() throws {
        for (target, header) in Self.cases {
            let payload: [UInt8] = [1, 2, 3]
            let big = [UInt8](repeating: 0xAA, count: 7) + header + payload + [UInt8](repeating: 0xAA, count: 5)
            let parsed = try big.withUnsafeBytes { raw in
                try SOCKS5UDPHeader.parse(raw.sub(7, header.count + payload.count))
            }
            #expect(parsed.header.target == target)
            #expect(parsed.payloadOffset == header.count)
        }
    }

    @Test func everyTruncationThrows() {
        for (_, header) in Self.cases {
            for cut in 0 ..< header.count {
                let short = Array(header.prefix(cut))
                #expect(throws: RelayError.self) { try short.withUnsafeBytes { try SOCKS5UDPHeader.parse($0) } }
            }
        }
    }

    @Test func rejectsFragmentsAndReservedBits() {
        let fragment: [UInt8] = [0, 0, 1, 0x01, 1, 2, 3, 4, 0, 53]
        #expect(throws: RelayError.protocolViolation(.fragment)) { try fragment.withUnsafeBytes { try SOCKS5UDPHeader.parse($0) } }
        let reserved: [UInt8] = [0, 1, 0, 0x01, 1, 2, 3, 4, 0, 53]
        #expect(throws: RelayError.protocolViolation(.reserved)) { try reserved.withUnsafeBytes { try SOCKS5UDPHeader.parse($0) } }
        let atyp: [UInt8] = [0, 0, 0, 0x05, 1, 2, 3, 4, 0, 53]
        #expect(throws: RelayError.protocolViolation(.addressType)) { try atyp.withUnsafeBytes { try SOCKS5UDPHeader.parse($0) } }
    }

    @Test func emitIntoATooSmallBufferThrows() {
        var buffer = [UInt8](repeating: 0, count: 9)
        #expect(throws: RelayError.unrepresentable(.bufferTooSmall)) {
            try buffer.withUnsafeMutableBytes { try SOCKS5UDPHeader(target: Self.cases[0].0).emit(into: $0) }
        }
    }
}
