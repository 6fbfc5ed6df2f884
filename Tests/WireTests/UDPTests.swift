import Testing
import Wire

private typealias T = IPTestSupport

/// A UDP datagram from 10.99.0.1 to 10.99.1.2 port 5353, IPv4 header first (ipv4-icmp-udp.pcap).
private let kernelV4 = T.hex("""
    45000034c1094000401163e70a6300010a630102a79a14e90020adc1736c7569
    6365206669787475726520646174616772616d0a
    """)
private let v4Source = IPv4Address(10, 99, 0, 1), v4Destination = IPv4Address(10, 99, 1, 2)

/// The same payload over IPv6 from fd00:99::1 (ipv6-icmp-udp.pcap).
private let kernelV6 = T.hex("""
    60052bf600201140fd000099000000000000000000000001fd00009900010000
    0000000000000002d6ed14e9002098ff736c7569636520666978747572652064
    6174616772616d0a
    """)
private let v6Source = IPv6Address("fd00:99::1")!, v6Destination = IPv6Address("fd00:99:1::2")!

private func parse(_ bytes: [UInt8]) -> WireError? {
    bytes.withUnsafeBytes { raw in T.error { () throws(WireError) in _ = try UDPView(raw) } }
}

/// Builds a datagram in a poisoned buffer: payload first, then the header in front of it.
private func build(_ header: UDPHeader, payload: [UInt8],
                   _ emit: (UDPHeader, UnsafeMutableRawBufferPointer) throws(WireError) -> Int) throws -> [UInt8] {
    try T.poisoned(header.length) { buffer in
        for (i, byte) in payload.enumerated() { buffer[8 + i] = byte }
        let written = try emit(header, buffer)
        #expect(written == 8)
    }
}

@Suite struct UDPTests {
    @Test func readsAndVerifiesKernelDatagrams() throws {
        try T.inMiddle(Array(kernelV4[20...])) { raw in
            let udp = try UDPView(raw)
            #expect(udp.sourcePort == 42906)
            #expect(udp.destinationPort == 5353)
            #expect(udp.length == 32)
            #expect(udp.checksum == 0xadc1)
            #expect(String(decoding: udp.payload, as: UTF8.self) == "sluice fixture datagram\n")
            #expect(udp.verifyChecksum(source: v4Source, destination: v4Destination))
            // The pseudo-header counts: the same bytes between other hosts do not verify.
            #expect(!udp.verifyChecksum(source: v4Destination, destination: v4Source.successor))
            #expect(udp.description == "42906 > 5353: UDP, length 24")
        }
        try T.inMiddle(Array(kernelV6[40...])) { raw in
            let udp = try UDPView(raw)
            #expect(udp.sourcePort == 55021)
            #expect(udp.checksum == 0x98ff)
            #expect(udp.verifyChecksum(source: v6Source, destination: v6Destination))
            // Swapping the addresses would not show anything: the sum commutes.
            #expect(!udp.verifyChecksum(source: v6Source, destination: IPv6Address("fd00:99:1::3")!))
        }
    }

    @Test func emitComputesTheKernelsChecksum() throws {
        let v4 = Array(kernelV4[20...]), v6 = Array(kernelV6[40...])
        let h4 = try v4.withUnsafeBytes { raw throws(WireError) in try UDPHeader.parse(raw) }
        let h6 = try v6.withUnsafeBytes { raw throws(WireError) in try UDPHeader.parse(raw) }
        #expect(try build(h4, payload: Array(v4[8...])) { h, b throws(WireError) in
            try h.emit(into: b, source: v4Source, destination: v4Destination)
        } == v4)
        #expect(try build(h6, payload: Array(v6[8...])) { h, b throws(WireError) in
            try h.emit(into: b, source: v6Source, destination: v6Destination)
        } == v6)
    }

    @Test func everyTruncationThrows() {
        T.expectEveryTruncationThrows(Array(kernelV4[20...])) { b throws(WireError) in _ = try UDPView(b) }
    }

    @Test func lengthFieldIsChecked() throws {
        for length: UInt8 in 0 ..< 8 {
            #expect(parse([0, 1, 0, 2, 0, length, 0, 0]) == .malformed(layer: .udp, reason: .totalLength))
        }
        #expect(parse([0, 1, 0, 2, 0, 8, 0, 0]) == nil)
        #expect(parse([0, 1, 0, 2, 0, 10, 0, 0, 1]) == .truncated(layer: .udp, needed: 10, available: 9))
        #expect(parse([0, 1, 0, 2, 0xff, 0xff, 0, 0]) == .truncated(layer: .udp, needed: 65535, available: 8))
        // Bytes after the length are not payload.
        try T.withPadding([0, 1, 0, 2, 0, 9, 0, 0, 7], extra: 5) { raw in
            let udp = try UDPView(raw)
            #expect(Array(udp.payload) == [7])
        }
    }

    @Test func zeroChecksumMeansNoneOverIPv4Only() throws {
        var bytes = Array(kernelV4[20...])
        bytes[6] = 0; bytes[7] = 0
        try bytes.withUnsafeBytes { raw in
            let udp = try UDPView(raw)
            #expect(udp.verifyChecksum(source: v4Source, destination: v4Destination))
            #expect(!udp.verifyChecksum(source: v6Source, destination: v6Destination))
        }
        // A flipped payload bit fails.
        var damaged = Array(kernelV4[20...])
        damaged[12] ^= 0x10
        try damaged.withUnsafeBytes { raw in
            let udp = try UDPView(raw)
            #expect(!udp.verifyChecksum(source: v4Source, destination: v4Destination))
        }
        // And emit can leave it out on request.
        let header = UDPHeader(sourcePort: 1, destinationPort: 2, payloadLength: 2)
        let out = try build(header, payload: [0x12, 0x34]) { h, b throws(WireError) in
            try h.emit(into: b, source: v4Source, destination: v4Destination, checksum: false)
        }
        #expect(out == [0, 1, 0, 2, 0, 10, 0, 0, 0x12, 0x34])
    }

    @Test func aComputedZeroIsSentAsAllOnes() throws {
        // Emit once with a zero payload word; the checksum C it finds is the word that makes the sum 0xffff,
        // so the second emit computes 0 and must send 0xffff instead.
        let header = UDPHeader(sourcePort: 1000, destinationPort: 2000, payloadLength: 2)
        for family in 0 ..< 2 {
            func emit(_ payload: [UInt8]) throws -> [UInt8] {
                try build(header, payload: payload) { h, b throws(WireError) in
                    family == 0 ? try h.emit(into: b, source: v4Source, destination: v4Destination)
                        : try h.emit(into: b, source: v6Source, destination: v6Destination)
                }
            }
            let first = try emit([0, 0])
            let second = try emit([first[6], first[7]])
            #expect(second[6] == 0xff && second[7] == 0xff)
            try second.withUnsafeBytes { raw in
                let udp = try UDPView(raw)
                #expect(family == 0 ? udp.verifyChecksum(source: v4Source, destination: v4Destination)
                    : udp.verifyChecksum(source: v6Source, destination: v6Destination))
            }
        }
    }

    @Test func emitIntoPoisonThenParseRoundTrips() throws {
        for header in [UDPHeader(sourcePort: 0, destinationPort: 65535, payloadLength: 0),
                       UDPHeader(sourcePort: 53, destinationPort: 40000, payloadLength: 33)] {
            let payload = (0 ..< header.payloadLength).map { UInt8(truncatingIfNeeded: $0 &* 37) }
            let out = try build(header, payload: payload) { h, b throws(WireError) in
                try h.emit(into: b, source: v6Source, destination: v6Destination)
            }
            try T.inMiddle(out) { raw in
                let udp = try UDPView(raw)
                #expect(UDPHeader(udp) == header)
                #expect(Array(udp.payload) == payload)
                #expect(udp.verifyChecksum(source: v6Source, destination: v6Destination))
            }
        }
    }

    @Test func emitRefusesImpossibleLengths() {
        func emit(_ header: UDPHeader, capacity: Int) -> WireError? {
            var out = [UInt8](repeating: T.poison, count: capacity)
            return out.withUnsafeMutableBytes { b in
                T.error { () throws(WireError) in _ = try header.emit(into: b, source: v4Source, destination: v4Destination) }
            }
        }
        var h = UDPHeader(sourcePort: 1, destinationPort: 2, payloadLength: 4)
        #expect(emit(h, capacity: 12) == nil)
        // The checksum covers the payload, so the buffer must hold it.
        #expect(emit(h, capacity: 11) == .malformed(layer: .udp, reason: .bufferTooSmall))
        h.length = 7
        #expect(emit(h, capacity: 12) == .malformed(layer: .udp, reason: .totalLength))
        h.length = 65536
        #expect(emit(h, capacity: 12) == .malformed(layer: .udp, reason: .totalLength))
    }
}

extension IPv4Address {
    fileprivate var successor: IPv4Address { IPv4Address(value &+ 1) }
}
