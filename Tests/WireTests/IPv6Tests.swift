import Testing
import Wire

private typealias T = IPTestSupport

/// A UDP datagram the kernel sent from fd00:99::1, from ipv6-icmp-udp.pcap.
private let kernelUDP = T.hex("""
    60052bf600201140fd000099000000000000000000000001fd00009900010000
    0000000000000002d6ed14e9002098ff736c7569636520666978747572652064
    6174616772616d0a
    """)

private let a = IPv6Address("fd00::1")!
private let b = IPv6Address("fd00::2")!

/// A datagram whose fixed header says `next` and whose payload is `payload`.
private func datagram(_ next: UInt8, _ payload: [UInt8], payloadLength: Int? = nil) -> [UInt8] {
    let header = IPv6Header(source: a, destination: b, nextHeader: IPProtocol(rawValue: next),
                            payloadLength: payloadLength ?? payload.count, hopLimit: 9)
    return T.poisoned(40) { buffer in _ = try? header.emit(into: buffer) } + payload
}

/// An options-style extension header (hop-by-hop, routing, destination options) of `units` × 8 bytes.
private func optionsHeader(next: UInt8, units: Int) -> [UInt8] {
    [next, UInt8(units - 1)] + [UInt8](repeating: 0, count: units * 8 - 2)
}

private func fragmentHeader(next: UInt8, offsetUnits: UInt16, more: Bool, id: UInt32) -> [UInt8] {
    let word = offsetUnits << 3 | (more ? 1 : 0)
    return [next, 0, UInt8(word >> 8), UInt8(word & 0xff),
            UInt8(id >> 24), UInt8(id >> 16 & 0xff), UInt8(id >> 8 & 0xff), UInt8(id & 0xff)]
}

private func parse(_ bytes: [UInt8]) -> WireError? {
    bytes.withUnsafeBytes { raw in T.error { () throws(WireError) in _ = try IPv6View(raw) } }
}

@Suite struct IPv6Tests {
    @Test func readsEveryFieldOfAKernelPacket() throws {
        try T.inMiddle(kernelUDP) { bytes in
            let ip = try IPv6View(bytes)
            #expect(ip.version == 6)
            #expect(ip.trafficClass == 0)
            #expect(ip.flowLabel == 0x52bf6)
            #expect(ip.payloadLength == 32)
            #expect(ip.nextHeader == .udp)
            #expect(ip.hopLimit == 64)
            #expect(ip.source == IPv6Address("fd00:99::1"))
            #expect(ip.destination == IPv6Address("fd00:99:1::2"))
            #expect(ip.upperLayerProtocol == .udp)
            #expect(ip.upperLayerOffset == 40)
            #expect(ip.extensionHeaderCount == 0)
            #expect(ip.fragment == nil && !ip.isFragment)
            #expect(ip.upperLayerPayload.count == 32)
            #expect(ip.description == "IP6 fd00:99::1.55021 > fd00:99:1::2.5353: UDP, length 24")
            #expect(IPv6Header(ip).description
                == "IP6 (flowlabel 0x52bf6, hlim 64, next-header UDP (17) payload length: 32) fd00:99::1 > fd00:99:1::2")
        }
    }

    @Test func everyTruncationThrows() {
        T.expectEveryTruncationThrows(kernelUDP) { b throws(WireError) in _ = try IPv6View(b) }
        let chained = datagram(0, optionsHeader(next: 60, units: 1) + optionsHeader(next: 17, units: 2) + [1, 2, 3])
        T.expectEveryTruncationThrows(chained) { b throws(WireError) in _ = try IPv6View(b) }
    }

    @Test func rejectsImpossibleLengthsAndVersions() {
        var bytes = kernelUDP
        for version: UInt8 in [0, 4, 7, 15] {
            bytes[0] = version << 4
            #expect(parse(bytes) == .malformed(layer: .ipv6, reason: .version))
        }
        #expect(parse(datagram(17, [0, 0], payloadLength: 3)) == .truncated(layer: .ipv6, needed: 43, available: 42))
        #expect(parse(datagram(17, [], payloadLength: 65535)) == .truncated(layer: .ipv6, needed: 65575, available: 40))
        // A zero payload length with hop-by-hop options first is a jumbogram, which we do not speak.
        #expect(parse(datagram(0, optionsHeader(next: 59, units: 1), payloadLength: 0))
            == .unsupported(layer: .ipv6, reason: .payloadLength))
        // A zero payload length is otherwise fine: nothing follows.
        #expect(parse(datagram(59, [], payloadLength: 0)) == nil)
    }

    @Test func trailingBytesAreNotPayload() throws {
        try T.withPadding(kernelUDP, extra: 13) { bytes in
            let ip = try IPv6View(bytes)
            #expect(ip.bytes.count == 72)
            #expect(ip.upperLayerPayload.count == 32)
        }
    }

    @Test func walksEveryKindOfExtensionHeader() throws {
        // Hop-by-hop (8) → destination options (16) → routing (8) → fragment (8, first) → AH ((4+2)×4 = 24) → UDP.
        let ah: [UInt8] = [17, 4] + [UInt8](repeating: 0, count: 22)
        let chain = optionsHeader(next: 60, units: 1) + optionsHeader(next: 43, units: 2)
            + optionsHeader(next: 44, units: 1) + fragmentHeader(next: 51, offsetUnits: 0, more: true, id: 0xdead_beef)
            + ah
        let udp: [UInt8] = [0, 53, 0, 54, 0, 9, 0, 0, 0x77]
        try T.inMiddle(datagram(0, chain + udp)) { bytes in
            let ip = try IPv6View(bytes)
            #expect(ip.extensionHeaderCount == 5)
            #expect(ip.upperLayerProtocol == .udp)
            #expect(ip.upperLayerOffset == 40 + 8 + 16 + 8 + 8 + 24)
            #expect(Array(ip.upperLayerPayload) == udp)
            #expect(ip.fragmentHeaderOffset == 40 + 32)
            #expect(ip.fragment == IPv6FragmentHeader(nextHeader: .ah, fragmentOffset: 0, moreFragments: true,
                                                      identification: 0xdead_beef))
            #expect(ip.isFragment)
            #expect(IPPacketView(ip).fragment
                == IPFragmentInfo(identification: 0xdead_beef, byteOffset: 0, moreFragments: true))
        }
    }

    @Test func stopsAtALaterFragmentsData() throws {
        // What follows a non-first fragment header is data; here it looks like a hop-by-hop header but is not one.
        let data: [UInt8] = [0, 200, 1, 2, 3, 4, 5, 6]
        try datagram(44, fragmentHeader(next: 0, offsetUnits: 181, more: false, id: 7) + data).withUnsafeBytes { raw in
            let ip = try IPv6View(raw)
            #expect(ip.upperLayerProtocol == .hopByHop)
            #expect(ip.upperLayerOffset == 48)
            #expect(Array(ip.upperLayerPayload) == data)
            #expect(ip.fragment?.fragmentByteOffset == 1448)
            #expect(ip.isFragment)
            #expect(ip.description == "IP6 fd00::1 > fd00::2: frag (id 7, offset 1448), proto-0, length 8")
        }
    }

    @Test func anAtomicFragmentIsAWholeDatagram() throws {
        let udp: [UInt8] = [0, 1, 0, 2, 0, 8, 0, 0]
        try datagram(44, fragmentHeader(next: 17, offsetUnits: 0, more: false, id: 1) + udp).withUnsafeBytes { raw in
            let ip = try IPv6View(raw)
            #expect(ip.fragment != nil)
            #expect(!ip.isFragment)
            #expect(IPPacketView(ip).fragment == nil)
            #expect(ip.upperLayerProtocol == .udp)
            #expect(ip.upperLayerOffset == 48)
        }
    }

    @Test func stopsAtNoNextHeaderAndESP() throws {
        for next: UInt8 in [59, 50] {
            let bytes = datagram(60, optionsHeader(next: next, units: 1) + [9, 9, 9, 9])
            try bytes.withUnsafeBytes { raw in
                let ip = try IPv6View(raw)
                #expect(ip.upperLayerProtocol.rawValue == next)
                #expect(ip.upperLayerOffset == 48)
                #expect(ip.upperLayerPayload.count == 4)
            }
        }
    }

    @Test func refusesBadChains() {
        // Hop-by-hop anywhere but first (RFC 8200 §4.1).
        #expect(parse(datagram(60, optionsHeader(next: 0, units: 1) + optionsHeader(next: 59, units: 1)))
            == .malformed(layer: .ipv6, reason: .extensionHeader))
        // Two fragment headers.
        #expect(parse(datagram(44, fragmentHeader(next: 44, offsetUnits: 0, more: true, id: 1)
                + fragmentHeader(next: 17, offsetUnits: 0, more: true, id: 1)))
            == .malformed(layer: .ipv6, reason: .extensionHeader))
        // A header whose length runs past the payload.
        #expect(parse(datagram(60, [17, 1] + [UInt8](repeating: 0, count: 6)))
            == .truncated(layer: .ipv6, needed: 56, available: 48))
        // A header whose length byte is missing.
        #expect(parse(datagram(43, [17])) == .truncated(layer: .ipv6, needed: 42, available: 41))
        #expect(parse(datagram(44, [17, 0, 0, 0])) == .truncated(layer: .ipv6, needed: 48, available: 44))
        #expect(parse(datagram(51, [17, 4, 0, 0, 0, 0, 0, 0])) == .truncated(layer: .ipv6, needed: 64, available: 48))
    }

    @Test func boundsHowManyHeadersItWalks() {
        func chain(_ n: Int) -> [UInt8] {
            var bytes: [UInt8] = []
            for i in 0 ..< n { bytes += optionsHeader(next: i == n - 1 ? 17 : 60, units: 1) }
            return datagram(60, bytes + [0, 1, 0, 2, 0, 8, 0, 0])
        }
        #expect(parse(chain(IPv6View.maximumExtensionHeaders)) == nil)
        #expect(parse(chain(IPv6View.maximumExtensionHeaders + 1)) == .unsupported(layer: .ipv6, reason: .extensionHeader))
    }

    @Test func emitReproducesTheKernelsHeaderByteForByte() throws {
        let parsed = try kernelUDP.withUnsafeBytes { raw throws(WireError) in try IPv6Header.parse(raw) }
        let out = try T.poisoned(40) { buffer in
            let written = try parsed.emit(into: buffer)
            #expect(written == 40)
        }
        #expect(out == Array(kernelUDP[0 ..< 40]))
    }

    @Test func emitIntoPoisonThenParseRoundTrips() throws {
        let cases = [
            IPv6Header(source: a, destination: b, nextHeader: .udp, payloadLength: 5),
            IPv6Header(source: .loopback, destination: IPv6Address(high: .max, low: .max), nextHeader: .ipv6NoNext,
                       payloadLength: 0, hopLimit: 255, trafficClass: 0xff, flowLabel: 0xfffff),
        ]
        for value in cases {
            let out = try T.poisoned(40 + value.payloadLength) { buffer in
                let written = try value.emit(into: buffer)
                #expect(written == 40)
            }
            try T.inMiddle(out) { raw in
                let view = try IPv6View(raw)
                #expect(IPv6Header(view) == value)
            }
        }
        let fragment = IPv6FragmentHeader(nextHeader: .icmpv6, fragmentOffset: 0x1fff, moreFragments: true,
                                          identification: 0x0102_0304)
        let out = try T.poisoned(8) { buffer in
            let written = try fragment.emit(into: buffer)
            #expect(written == 8)
        }
        #expect(out == [58, 0, 0xff, 0xf9, 1, 2, 3, 4])
        try out.withUnsafeBytes { raw in
            let parsed = try IPv6FragmentHeader.parse(raw)
            #expect(parsed == fragment)
        }
        #expect(fragment.description == "frag (0x1020304:65528+)")
    }

    @Test func emitRefusesValuesNoHeaderCanHold() {
        func emit(_ value: IPv6Header, capacity: Int = 40) -> WireError? {
            var out = [UInt8](repeating: T.poison, count: capacity)
            return out.withUnsafeMutableBytes { buffer in T.error { () throws(WireError) in _ = try value.emit(into: buffer) } }
        }
        let good = IPv6Header(source: a, destination: b, nextHeader: .udp, payloadLength: 0)
        #expect(emit(good) == nil)
        var v = good; v.flowLabel = 0x100000
        #expect(emit(v) == .malformed(layer: .ipv6, reason: .fieldRange))
        v = good; v.payloadLength = 65536
        #expect(emit(v) == .malformed(layer: .ipv6, reason: .payloadLength))
        #expect(emit(good, capacity: 39) == .malformed(layer: .ipv6, reason: .bufferTooSmall))
        var f = IPv6FragmentHeader(nextHeader: .udp, fragmentOffset: 0x2000, moreFragments: false, identification: 0)
        var out = [UInt8](repeating: 0, count: 8)
        let error = out.withUnsafeMutableBytes { buffer in T.error { () throws(WireError) in _ = try f.emit(into: buffer) } }
        #expect(error == .malformed(layer: .ipv6, reason: .fieldRange))
        f.fragmentOffset = 0
        let short = out.withUnsafeMutableBytes { buffer in
            T.error { () throws(WireError) in _ = try f.emit(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0 ..< 7])) }
        }
        #expect(short == .malformed(layer: .ipv6, reason: .bufferTooSmall))
    }

    @Test func aQuotedDatagramMayBeShorterThanItsPayloadLength() throws {
        let quote = Array(kernelUDP[0 ..< 48])
        try quote.withUnsafeBytes { raw in
            let ip = try IPv6View(quoted: raw)
            #expect(ip.payloadLength == 32)
            #expect(ip.upperLayerPayload.count == 8)
        }
        #expect(parse(quote) == .truncated(layer: .ipv6, needed: 72, available: 48))
    }
}
