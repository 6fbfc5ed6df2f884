import Testing
import Wire

private typealias T = IPTestSupport

/// An echo request the kernel sent (ping -c 2 from namespace 10.99.0.1), from ipv4-icmp-udp.pcap.
private let kernelEchoRequest = T.hex("""
    450000542ac340004001fa1d0a6300010a6301020800fa57141a0001757a0d6b
    00000000a1d4060000000000101112131415161718191a1b1c1d1e1f20212223
    2425262728292a2b2c2d2e2f3031323334353637
    """)

/// A 20-byte header with the given first byte, total length and fragment word, and a zero checksum.
private func header(versionIHL: UInt8 = 0x45, totalLength: UInt16, flagsFragment: UInt16 = 0) -> [UInt8] {
    [versionIHL, 0, UInt8(totalLength >> 8), UInt8(totalLength & 0xff), 0x12, 0x34,
     UInt8(flagsFragment >> 8), UInt8(flagsFragment & 0xff), 64, 17, 0, 0,
     10, 0, 0, 1, 10, 0, 0, 2]
}

@Suite struct IPv4Tests {
    @Test func readsEveryFieldOfAKernelPacket() throws {
        try T.inMiddle(kernelEchoRequest) { bytes in
            let ip = try IPv4View(bytes)
            #expect(ip.version == 4)
            #expect(ip.internetHeaderLength == 5)
            #expect(ip.headerLength == 20)
            #expect(ip.typeOfService == 0)
            #expect(ip.totalLength == 84)
            #expect(ip.identification == 10947)
            #expect(ip.dontFragment && !ip.moreFragments && !ip.reservedFlag)
            #expect(ip.fragmentOffset == 0 && !ip.isFragment)
            #expect(ip.timeToLive == 64)
            #expect(ip.protocol == .icmp)
            #expect(ip.headerChecksum == 0xfa1d)
            #expect(ip.source == IPv4Address(10, 99, 0, 1))
            #expect(ip.destination == IPv4Address(10, 99, 1, 2))
            #expect(ip.options.count == 0)
            #expect(ip.payload.count == 64)
            #expect(ip.payload.first == 0x08)
            #expect(ip.verifyChecksum())
            #expect(ip.description == "IP 10.99.0.1 > 10.99.1.2: ICMP echo request, id 5146, seq 1, length 64")
            #expect(IPv4Header(ip).description
                == "IP (tos 0x0, ttl 64, id 10947, offset 0, flags [DF], proto ICMP (1), length 84) 10.99.0.1 > 10.99.1.2")
        }
    }

    @Test func everyTruncationThrows() {
        T.expectEveryTruncationThrows(kernelEchoRequest) { b throws(WireError) in _ = try IPv4View(b) }
    }

    @Test func trailingBytesAreNotPayload() throws {
        // Ethernet pads short frames to 60 bytes; the total length says where the datagram ends.
        try T.withPadding(kernelEchoRequest, extra: 9) { bytes in
            let ip = try IPv4View(bytes)
            #expect(ip.bytes.count == 84)
            #expect(ip.payload.count == 64)
            #expect(ip.payload.last == 0x37)
        }
    }

    @Test func rejectsImpossibleLengthsAndVersions() {
        func parse(_ bytes: [UInt8]) -> WireError? {
            bytes.withUnsafeBytes { b in T.error { () throws(WireError) in _ = try IPv4View(b) } }
        }
        #expect(parse(header(totalLength: 20)) == nil)
        for version: UInt8 in [0, 5, 6, 15] {
            #expect(parse(header(versionIHL: version << 4 | 5, totalLength: 20)) == .malformed(layer: .ipv4, reason: .version))
        }
        for ihl: UInt8 in 0 ..< 5 {
            #expect(parse(header(versionIHL: 0x40 | ihl, totalLength: 20)) == .malformed(layer: .ipv4, reason: .headerLength))
        }
        // IHL 15 says 60 bytes of header; 20 are there.
        #expect(parse(header(versionIHL: 0x4f, totalLength: 60)) == .truncated(layer: .ipv4, needed: 60, available: 20))
        for total: UInt16 in [0, 1, 19] {
            #expect(parse(header(totalLength: total)) == .malformed(layer: .ipv4, reason: .totalLength))
        }
        // IHL 6 with a total length of 20 puts the end inside the header.
        #expect(parse(header(versionIHL: 0x46, totalLength: 20) + [1, 1, 1, 1]) == .malformed(layer: .ipv4, reason: .totalLength))
        #expect(parse(header(totalLength: 21)) == .truncated(layer: .ipv4, needed: 21, available: 20))
        #expect(parse(header(totalLength: 65535)) == .truncated(layer: .ipv4, needed: 65535, available: 20))
        // The last fragment may end at 65535 bytes of payload and not one byte later.
        let lastOffset: UInt16 = 0x1fff  // data from byte 65528
        #expect(parse(header(totalLength: 27, flagsFragment: lastOffset) + [UInt8](repeating: 0, count: 7)) == nil)
        #expect(parse(header(totalLength: 28, flagsFragment: lastOffset) + [UInt8](repeating: 0, count: 8))
            == .malformed(layer: .ipv4, reason: .fieldRange))
    }

    @Test func optionsAreExposedAndValidated() throws {
        // Router alert (RFC 2113): 148, length 4, value 0; then a NOP and end of list.
        var bytes = header(versionIHL: 0x47, totalLength: 30)
        bytes += [148, 4, 0, 0, 1, 0, 0, 0, 0xde, 0xad]
        try bytes.withUnsafeBytes { b in
            let ip = try IPv4View(b)
            #expect(ip.headerLength == 28)
            #expect(Array(ip.options) == [148, 4, 0, 0, 1, 0, 0, 0])
            #expect(Array(ip.payload) == [0xde, 0xad])
            let options = Array(ip.optionList)
            #expect(options.map(\.type) == [148, 1])
            #expect(options.map(\.data.count) == [2, 0])
            #expect(ip.optionList.description == "[RA,nop]")
        }
        // An option whose length is below 2, runs past the area, or is missing.
        for bad: [UInt8] in [[148, 1, 0, 0], [148, 0, 0, 0], [7, 5, 0, 0], [1, 1, 1, 7]] {
            let packet = header(versionIHL: 0x46, totalLength: 24) + bad
            let error = packet.withUnsafeBytes { b in T.error { () throws(WireError) in _ = try IPv4View(b) } }
            #expect(error == .malformed(layer: .ipv4, reason: .optionLength), "\(bad)")
        }
    }

    @Test func emitReproducesTheKernelsHeaderByteForByte() throws {
        let parsed = try kernelEchoRequest.withUnsafeBytes { b throws(WireError) in try IPv4Header.parse(b) }
        let out = try T.poisoned(20) { buffer in
            let written = try parsed.emit(into: buffer)
            #expect(written == 20)
        }
        #expect(out == Array(kernelEchoRequest[0 ..< 20]))
    }

    @Test func emitIntoPoisonThenParseRoundTrips() throws {
        let cases = [
            IPv4Header(source: IPv4Address(192, 0, 2, 1), destination: IPv4Address(198, 51, 100, 7),
                       protocol: .udp, payloadLength: 13),
            IPv4Header(source: .any, destination: .broadcast, protocol: .tcp, payloadLength: 0,
                       timeToLive: 1, identification: 0xffff, dontFragment: false, moreFragments: true,
                       fragmentOffset: 0x1fff - 1, typeOfService: 0xb9),
            IPv4Header(source: IPv4Address(10, 0, 0, 1), destination: IPv4Address(10, 0, 0, 2),
                       protocol: IPProtocol(rawValue: 253), payloadLength: 3, timeToLive: 255,
                       identification: 7, optionsLength: 40),
        ]
        for value in cases {
            let out = try T.poisoned(value.totalLength) { buffer in
                let written = try value.emit(into: buffer)
                #expect(written == value.headerLength)
            }
            try T.inMiddle(out) { b in
                let view = try IPv4View(b)
                #expect(IPv4Header(view) == value)
                #expect(view.verifyChecksum())
                // The options area nobody filled is end-of-list padding, not poison.
                #expect(view.options.allSatisfy { $0 == 0 })
                #expect(view.payload.allSatisfy { $0 == T.poison })
            }
        }
    }

    @Test func emitWritesCallerOptionsAndPadsThem() throws {
        let value = IPv4Header(source: IPv4Address(10, 0, 0, 1), destination: IPv4Address(10, 0, 0, 2),
                               protocol: .udp, payloadLength: 0, optionsLength: 8)
        let options: [UInt8] = [148, 4, 0, 0, 1]
        let out = try T.poisoned(28) { buffer in
            _ = try options.withUnsafeBytes { o throws(WireError) in try value.emit(into: buffer, options: o) }
        }
        #expect(Array(out[20 ..< 28]) == [148, 4, 0, 0, 1, 0, 0, 0])
        try out.withUnsafeBytes { b in
            let view = try IPv4View(b)
            #expect(IPv4Header(view) == value)
            #expect(view.verifyChecksum())
        }
    }

    @Test func emitRefusesValuesNoHeaderCanHold() {
        let good = IPv4Header(source: .any, destination: .any, protocol: .udp, payloadLength: 0)
        func emit(_ value: IPv4Header, capacity: Int = 100, options: [UInt8] = []) -> WireError? {
            var out = [UInt8](repeating: T.poison, count: capacity)
            return out.withUnsafeMutableBytes { buffer in
                options.withUnsafeBytes { o in
                    T.error { () throws(WireError) in _ = try value.emit(into: buffer, options: o) }
                }
            }
        }
        #expect(emit(good) == nil)
        var v = good; v.headerLength = 22
        #expect(emit(v) == .malformed(layer: .ipv4, reason: .headerLength))
        v = good; v.headerLength = 64
        #expect(emit(v) == .malformed(layer: .ipv4, reason: .headerLength))
        v = good; v.headerLength = 16
        #expect(emit(v) == .malformed(layer: .ipv4, reason: .headerLength))
        v = good; v.totalLength = 19
        #expect(emit(v) == .malformed(layer: .ipv4, reason: .totalLength))
        v = good; v.totalLength = 65536
        #expect(emit(v) == .malformed(layer: .ipv4, reason: .totalLength))
        v = good; v.fragmentOffset = 0x2000
        #expect(emit(v) == .malformed(layer: .ipv4, reason: .fieldRange))
        #expect(emit(good, options: [1]) == .malformed(layer: .ipv4, reason: .optionLength))
        #expect(emit(good, capacity: 19) == .malformed(layer: .ipv4, reason: .bufferTooSmall))
    }

    @Test func fragmentFieldsAndHelpers() throws {
        // The second fragment of a 1500-byte-MTU ping of 3000 bytes: offset 1480, more to come.
        let first = header(totalLength: 20, flagsFragment: 0x2000 | 185)
        try first.withUnsafeBytes { b in
            let ip = try IPv4View(b)
            #expect(ip.isFragment && ip.moreFragments && !ip.dontFragment)
            #expect(ip.fragmentOffset == 185)
            #expect(ip.fragmentByteOffset == 1480)
            #expect(IPv4Header(ip).description.contains("offset 1480, flags [+]"))
            #expect(IPPacketView(ip).fragment == IPFragmentInfo(identification: 0x1234, byteOffset: 1480, moreFragments: true))
        }
        // The last fragment: offset set, no more fragments.
        try header(totalLength: 20, flagsFragment: 370).withUnsafeBytes { b in
            let ip = try IPv4View(b)
            #expect(ip.isFragment && !ip.moreFragments)
        }
    }

    @Test func aQuotedDatagramMayBeShorterThanItsTotalLength() throws {
        // What an ICMP error quotes: the header and the first 8 bytes of a 1408-byte datagram.
        let quote = Array(kernelEchoRequest[0 ..< 28])
        try quote.withUnsafeBytes { b in
            let ip = try IPv4View(quoted: b)
            #expect(ip.totalLength == 84)
            #expect(ip.payload.count == 8)
        }
        let strict = quote.withUnsafeBytes { b in T.error { () throws(WireError) in _ = try IPv4View(b) } }
        #expect(strict == .truncated(layer: .ipv4, needed: 84, available: 28))
        // The header itself must still be whole.
        let cut = Array(kernelEchoRequest[0 ..< 19]).withUnsafeBytes { b in
            T.error { () throws(WireError) in _ = try IPv4View(quoted: b) }
        }
        #expect(cut == .truncated(layer: .ipv4, needed: 20, available: 19))
    }
}
