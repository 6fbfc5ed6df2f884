import Testing
import TestSupport
import Wire

/// The SYN curl sent in tcp-http.pcap (10.99.0.1.52992 > 10.99.1.2.8080),
/// copied by hand so these tests do not depend on the fixture file.
private let capturedSyn: [UInt8] = [
    0xcf, 0x00, 0x1f, 0x90, 0x54, 0x86, 0xb0, 0x48, 0x00, 0x00, 0x00, 0x00,
    0xa0, 0x02, 0xfb, 0xe0, 0x27, 0x63, 0x00, 0x00,
    0x02, 0x04, 0x04, 0xd8, 0x04, 0x02, 0x08, 0x0a, 0x8c, 0x05, 0x90, 0x67,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x0a,
]
private let client = IPv4Address(10, 99, 0, 1)
private let server = IPv4Address(10, 99, 1, 2)

private func header(_ bytes: [UInt8]) throws -> TCPHeader {
    try bytes.withUnsafeBytes { raw in try TCPHeader.parse(raw) }
}

private func parseError(_ bytes: [UInt8]) -> WireError? {
    bytes.withUnsafeBytes { raw in
        do throws(WireError) { _ = try TCPView(raw); return nil } catch { return error }
    }
}

/// Emits into a buffer poisoned with `poison`; returns exactly the bytes written.
private func emitted(_ h: TCPHeader, poison: UInt8 = 0xaa) throws -> [UInt8] {
    var buffer = poisonedBytes(80, poison)
    let n = try buffer.withUnsafeMutableBytes { raw in try h.emit(into: raw) }
    #expect(buffer[n...].allSatisfy { $0 == poison }, "emit wrote past the length it returned")
    return Array(buffer[..<n])
}

@Suite struct TCPTests {
    @Test func parsesACapturedSyn() throws {
        let h = try header(capturedSyn)
        #expect(h.sourcePort == 52992)
        #expect(h.destinationPort == 8080)
        #expect(h.sequenceNumber == SequenceNumber(1_418_113_096))
        #expect(h.acknowledgmentNumber == SequenceNumber(0))
        #expect(h.dataOffset == 10)
        #expect(h.flags == .syn)
        #expect(h.windowSize == 64480)
        #expect(h.checksum == 0x2763)
        #expect(h.urgentPointer == 0)
        #expect(h.options == TCPOptions(maximumSegmentSize: 1240, windowScale: 10, sackPermitted: true,
                                        timestamps: TCPTimestamps(value: 2_349_174_887, echoReply: 0)))
        #expect(h.description
            == "Flags [S], seq 1418113096, win 64480, options [mss 1240,sackOK,TS val 2349174887 ecr 0,nop,wscale 10], length 0")
        capturedSyn.withUnsafeBytes { raw in
            let view = try? TCPView(raw)
            #expect(view?.isChecksumValid(source: client, destination: server) == true)
            #expect(view?.isChecksumValid(source: server, destination: client) == true,
                    "swapping the addresses keeps the pseudo-header sum")
            #expect(view?.isChecksumValid(source: client, destination: IPv4Address(10, 99, 1, 3)) == false)
            #expect(view?.payload.count == 0)
            #expect(view?.describe(source: client, destination: server)
                == "10.99.0.1.52992 > 10.99.1.2.8080: Flags [S], seq 1418113096, win 64480, options [mss 1240,sackOK,TS val 2349174887 ecr 0,nop,wscale 10], length 0")
        }
    }

    @Test func everyTruncationThrows() {
        for length in 0 ..< capturedSyn.count {
            let error = parseError(Array(capturedSyn[..<length]))
            let needed = length < 20 ? 20 : 40
            #expect(error == .truncated(layer: .tcp, needed: needed, available: length), "length \(length)")
        }
        #expect(parseError(capturedSyn) == nil)
    }

    @Test func dataOffsetBelowFiveIsMalformed() {
        for words: UInt8 in 0 ..< 5 {
            var bytes = capturedSyn
            bytes[12] = words << 4
            #expect(parseError(bytes) == .malformed(layer: .tcp, reason: .dataOffset), "data offset \(words)")
        }
    }

    @Test func dataOffsetPastTheBufferIsTruncated() {
        for words: UInt8 in 11 ... 15 {
            var bytes = capturedSyn
            bytes[12] = words << 4
            #expect(parseError(bytes) == .truncated(layer: .tcp, needed: Int(words) * 4, available: 40))
        }
    }

    @Test func reservedBitsAreIgnoredOnInputAndZeroOnOutput() throws {
        var bytes = capturedSyn
        bytes[12] |= 0x0f
        let h = try header(bytes)
        #expect(h.dataOffset == 10)
        #expect(try emitted(h)[12] == 0xa0)
    }

    @Test func emitIntoPoisonedBufferRoundTrips() throws {
        let headers = [
            TCPHeader(sourcePort: 40000, destinationPort: 80, sequenceNumber: SequenceNumber(4_294_967_000),
                      flags: .syn, windowSize: 64240, checksum: 0x1234,
                      options: TCPOptions(maximumSegmentSize: 1460, windowScale: 7, sackPermitted: true,
                                          timestamps: TCPTimestamps(value: 1, echoReply: 0))),
            TCPHeader(sourcePort: 1, destinationPort: 65535, sequenceNumber: SequenceNumber(0xffff_ffff),
                      acknowledgmentNumber: SequenceNumber(0x8000_0000), flags: [.ack, .psh, .urg, .ece, .cwr],
                      windowSize: 0xffff, checksum: 0xffff, urgentPointer: 0xbeef),
            TCPHeader(sourcePort: 443, destinationPort: 50000, sequenceNumber: SequenceNumber(7),
                      acknowledgmentNumber: SequenceNumber(9), flags: [.ack],
                      windowSize: 501, options: TCPOptions(timestamps: TCPTimestamps(value: .max, echoReply: 3),
                                                           sackBlocks: TCPSackBlocks([
                                                               TCPSackBlock(left: SequenceNumber(100), right: SequenceNumber(200)),
                                                           ]))),
            TCPHeader(sourcePort: 0, destinationPort: 0, sequenceNumber: SequenceNumber(0), flags: [.rst],
                      windowSize: 0),
        ]
        for h in headers {
            for poison: UInt8 in [0xaa, 0x55, 0x00, 0xff] {
                let bytes = try emitted(h, poison: poison)
                #expect(bytes.count == h.headerLength)
                #expect(bytes.count == Int(h.dataOffset) * 4)
                #expect(try header(bytes) == h, "poison \(poison)")
            }
            #expect(try emitted(h, poison: 0xaa) == emitted(h, poison: 0x55), "every byte is written")
        }
    }

    @Test func emitRejectsASmallBuffer() {
        let h = TCPHeader(sourcePort: 1, destinationPort: 2, sequenceNumber: SequenceNumber(3), flags: .syn,
                          windowSize: 4, options: TCPOptions(maximumSegmentSize: 1460))
        for size in 0 ..< 24 {
            var buffer = poisonedBytes(size)
            let result = buffer.withUnsafeMutableBytes { raw -> WireError? in
                do throws(WireError) { _ = try h.emit(into: raw); return nil } catch { return error }
            }
            #expect(result == .malformed(layer: .tcp, reason: .bufferTooSmall), "size \(size)")
        }
    }

    @Test func parsesFromTheMiddleOfALargerBuffer() throws {
        let payload: [UInt8] = Array("GET / HTTP/1.1\r\n".utf8)
        var big = poisonedBytes(37) + capturedSyn + payload + poisonedBytes(23)
        big[37 + 13] = 0x18 // PSH ACK, so that the payload gets a sequence range
        try big.withUnsafeBytes { raw in
            let view = try TCPView(raw.sub(37, capturedSyn.count + payload.count))
            #expect(view.sourcePort == 52992)
            #expect(view.flags == [.psh, .ack])
            #expect(view.options.maximumSegmentSize == 1240)
            #expect(Array(view.payload) == payload)
            #expect(view.description.hasPrefix("Flags [P.], seq 1418113096:1418113112, ack 0, win 64480,"))
        }
    }

    @Test func sequenceNumbersNearTheWrap() throws {
        let h = TCPHeader(sourcePort: 5, destinationPort: 6, sequenceNumber: SequenceNumber(0xffff_fff0),
                          acknowledgmentNumber: SequenceNumber(0xffff_ffff), flags: [.psh, .ack], windowSize: 100)
        let bytes = try emitted(h)
        let back = try header(bytes)
        #expect(back.sequenceNumber.rawValue == 0xffff_fff0)
        #expect(back.acknowledgmentNumber.rawValue == 0xffff_ffff)
        #expect(back.describe(payloadLength: 32) == "Flags [P.], seq 4294967280:16, ack 4294967295, win 100, length 32")
        #expect(back.sequenceNumber + 32 > back.sequenceNumber)
    }

    @Test func flagsPrintLikeTcpdump() {
        #expect(TCPFlags.syn.description == "[S]")
        #expect(TCPFlags([.syn, .ack]).description == "[S.]")
        #expect(TCPFlags([.psh, .ack]).description == "[P.]")
        #expect(TCPFlags([.fin, .ack]).description == "[F.]")
        #expect(TCPFlags.rst.description == "[R]")
        #expect(TCPFlags([.rst, .ack]).description == "[R.]")
        #expect(TCPFlags.ack.description == "[.]")
        #expect(TCPFlags([.syn, .ece, .cwr]).description == "[SEW]")
        #expect(TCPFlags([.urg, .ack]).description == "[.U]")
        #expect(TCPFlags().description == "[none]")
        #expect(TCPFlags(rawValue: 0xff).description == "[FSRP.UEW]")
    }

    @Test func descriptionFollowsTcpdumpRules() {
        let synAck = TCPHeader(sourcePort: 80, destinationPort: 40000, sequenceNumber: SequenceNumber(1000),
                               acknowledgmentNumber: SequenceNumber(2001), flags: [.syn, .ack], windowSize: 65535,
                               options: TCPOptions(maximumSegmentSize: 1460, windowScale: 7, sackPermitted: true,
                                                   timestamps: TCPTimestamps(value: 1, echoReply: 0)))
        #expect(synAck.description
            == "Flags [S.], seq 1000, ack 2001, win 65535, options [mss 1460,sackOK,TS val 1 ecr 0,nop,wscale 7], length 0")
        #expect(synAck.describe(source: IPv4Address(10, 0, 0, 2), destination: IPv4Address(10, 0, 0, 1), payloadLength: 0)
            == "10.0.0.2.80 > 10.0.0.1.40000: Flags [S.], seq 1000, ack 2001, win 65535, options [mss 1460,sackOK,TS val 1 ecr 0,nop,wscale 7], length 0")
        let v6 = IPv6Address("fd00::1")!
        #expect(synAck.describe(source: v6, destination: IPv6Address("fd00::2")!, payloadLength: 0)
            .hasPrefix("fd00::1.80 > fd00::2.40000: Flags [S.]"))
        // A bare ACK occupies no sequence space: tcpdump prints no seq.
        let ack = TCPHeader(sourcePort: 1, destinationPort: 2, sequenceNumber: SequenceNumber(5),
                            acknowledgmentNumber: SequenceNumber(6), flags: .ack, windowSize: 63)
        #expect(ack.description == "Flags [.], ack 6, win 63, length 0")
        #expect(ack.describe(payloadLength: 10) == "Flags [.], seq 5:15, ack 6, win 63, length 10")
        let rst = TCPHeader(sourcePort: 1, destinationPort: 2, sequenceNumber: SequenceNumber(5), flags: .rst, windowSize: 0)
        #expect(rst.description == "Flags [R], seq 5, win 0, length 0")
        let urgent = TCPHeader(sourcePort: 1, destinationPort: 2, sequenceNumber: SequenceNumber(5),
                               acknowledgmentNumber: SequenceNumber(6), flags: [.ack, .urg], windowSize: 1, urgentPointer: 3)
        #expect(urgent.describe(payloadLength: 4) == "Flags [.U], seq 5:9, ack 6, win 1, urg 3, length 4")
    }

    @Test func checksumWithPayloadOverIPv4AndIPv6() throws {
        let payload: [UInt8] = Array("hello, odd length".utf8)
        #expect(payload.count % 2 == 1)
        let h = TCPHeader(sourcePort: 40000, destinationPort: 80, sequenceNumber: SequenceNumber(1),
                          acknowledgmentNumber: SequenceNumber(2), flags: [.psh, .ack], windowSize: 512,
                          options: TCPOptions(timestamps: TCPTimestamps(value: 10, echoReply: 20)))
        let v6a = IPv6Address("fd00:99::1")!, v6b = IPv6Address("fd00:99:1::2")!

        for family in 0 ..< 2 {
            var segment = poisonedBytes(h.headerLength + payload.count)
            let n = try segment.withUnsafeMutableBytes { raw -> Int in
                try payload.withUnsafeBytes { p -> Int in
                    family == 0
                        ? try h.emit(into: raw, source: client, destination: server, payload: p)
                        : try h.emit(into: raw, source: v6a, destination: v6b, payload: p)
                }
            }
            #expect(n == h.headerLength)
            segment.replaceSubrange(n..., with: payload)
            try segment.withUnsafeBytes { raw in
                let view = try TCPView(raw)
                let valid = family == 0
                    ? view.isChecksumValid(source: client, destination: server)
                    : view.isChecksumValid(source: v6a, destination: v6b)
                #expect(valid, "family \(family)")
                #expect(view.checksum != 0)
            }

            // fillChecksum over the assembled segment gives the same value.
            var filled = segment
            filled[16] = 0x5a; filled[17] = 0xa5
            try filled.withUnsafeMutableBytes { raw in
                family == 0
                    ? try TCPHeader.fillChecksum(raw, source: client, destination: server)
                    : try TCPHeader.fillChecksum(raw, source: v6a, destination: v6b)
            }
            #expect(filled == segment)

            // Any flipped bit is caught.
            for i in [0, 16, 17, n, segment.count - 1] {
                var bad = segment
                bad[i] ^= 0x04
                bad.withUnsafeBytes { raw in
                    let view = try? TCPView(raw)
                    let valid = family == 0
                        ? view?.isChecksumValid(source: client, destination: server)
                        : view?.isChecksumValid(source: v6a, destination: v6b)
                    #expect(valid == false, "flipped byte \(i)")
                }
            }
        }
    }

    @Test func fillChecksumNeedsAHeader() {
        var short = poisonedBytes(19)
        let result = short.withUnsafeMutableBytes { raw -> WireError? in
            do throws(WireError) { try TCPHeader.fillChecksum(raw, source: client, destination: server); return nil } catch { return error }
        }
        #expect(result == .malformed(layer: .tcp, reason: .bufferTooSmall))
    }
}

/// tcp-http.pcap: curl fetching a page over IPv4 then IPv6 (SYN with every
/// SYN option, data, FIN). Every checksum is the kernel's.
@Suite struct TCPFixtureTests {
    /// What tcpdump -nn -S prints for each packet after "IP "/"IP6 ",
    /// up to the payload dissection.
    static let tcpdumpLines = [
        "10.99.0.1.52992 > 10.99.1.2.8080: Flags [S], seq 1418113096, win 64480, options [mss 1240,sackOK,TS val 2349174887 ecr 0,nop,wscale 10], length 0",
        "10.99.1.2.8080 > 10.99.0.1.52992: Flags [S.], seq 2990937981, ack 1418113097, win 65084, options [mss 1240,sackOK,TS val 1861569255 ecr 2349174887,nop,wscale 10], length 0",
        "10.99.0.1.52992 > 10.99.1.2.8080: Flags [.], ack 2990937982, win 63, options [nop,nop,TS val 2349174887 ecr 1861569255], length 0",
        "10.99.0.1.52992 > 10.99.1.2.8080: Flags [P.], seq 1418113097:1418113175, ack 2990937982, win 63, options [nop,nop,TS val 2349174887 ecr 1861569255], length 78",
        "10.99.1.2.8080 > 10.99.0.1.52992: Flags [.], ack 1418113175, win 64, options [nop,nop,TS val 1861569255 ecr 2349174887], length 0",
        "10.99.1.2.8080 > 10.99.0.1.52992: Flags [P.], seq 2990937982:2990938160, ack 1418113175, win 64, options [nop,nop,TS val 1861569255 ecr 2349174887], length 178",
        "10.99.0.1.52992 > 10.99.1.2.8080: Flags [.], ack 2990938160, win 63, options [nop,nop,TS val 2349174887 ecr 1861569255], length 0",
        "10.99.0.1.52992 > 10.99.1.2.8080: Flags [F.], seq 1418113175, ack 2990938160, win 63, options [nop,nop,TS val 2349174888 ecr 1861569255], length 0",
        "10.99.1.2.8080 > 10.99.0.1.52992: Flags [F.], seq 2990938160, ack 1418113176, win 64, options [nop,nop,TS val 1861569257 ecr 2349174888], length 0",
        "10.99.0.1.52992 > 10.99.1.2.8080: Flags [.], ack 2990938161, win 63, options [nop,nop,TS val 2349174889 ecr 1861569257], length 0",
        "fd00:99::1.48446 > fd00:99:1::2.8080: Flags [S], seq 2390896994, win 64660, options [mss 1220,sackOK,TS val 2156318725 ecr 0,nop,wscale 10], length 0",
        "fd00:99:1::2.8080 > fd00:99::1.48446: Flags [S.], seq 2339670490, ack 2390896995, win 65232, options [mss 1220,sackOK,TS val 1465039012 ecr 2156318725,nop,wscale 10], length 0",
        "fd00:99::1.48446 > fd00:99:1::2.8080: Flags [.], ack 2339670491, win 64, options [nop,nop,TS val 2156318725 ecr 1465039012], length 0",
        "fd00:99::1.48446 > fd00:99:1::2.8080: Flags [P.], seq 2390896995:2390897078, ack 2339670491, win 64, options [nop,nop,TS val 2156318725 ecr 1465039012], length 83",
        "fd00:99:1::2.8080 > fd00:99::1.48446: Flags [.], ack 2390897078, win 64, options [nop,nop,TS val 1465039012 ecr 2156318725], length 0",
        "fd00:99:1::2.8080 > fd00:99::1.48446: Flags [P.], seq 2339670491:2339670669, ack 2390897078, win 64, options [nop,nop,TS val 1465039012 ecr 2156318725], length 178",
        "fd00:99::1.48446 > fd00:99:1::2.8080: Flags [.], ack 2339670669, win 64, options [nop,nop,TS val 2156318725 ecr 1465039012], length 0",
        "fd00:99::1.48446 > fd00:99:1::2.8080: Flags [F.], seq 2390897078, ack 2339670669, win 64, options [nop,nop,TS val 2156318725 ecr 1465039012], length 0",
        "fd00:99:1::2.8080 > fd00:99::1.48446: Flags [F.], seq 2339670669, ack 2390897079, win 64, options [nop,nop,TS val 1465039012 ecr 2156318725], length 0",
        "fd00:99::1.48446 > fd00:99:1::2.8080: Flags [.], ack 2339670670, win 64, options [nop,nop,TS val 2156318725 ecr 1465039012], length 0",
    ]

    static func segments() throws -> [TransportFixture] {
        let fixture = try PcapFixture.named("tcp-http.pcap")
        return fixture.packets.compactMap { TransportFixture(datagram: $0.bytes) }.filter(\.isTCP)
    }

    @Test func everySegmentParsesAndPrintsLikeTcpdump() throws {
        let segments = try Self.segments()
        #expect(segments.count == Self.tcpdumpLines.count)
        for (segment, line) in zip(segments, Self.tcpdumpLines) {
            try segment.payload.withUnsafeBytes { raw in
                let view = try TCPView(raw)
                #expect(view.describe(source: segment.source, destination: segment.destination) == line)
            }
        }
    }

    @Test func kernelChecksumsVerify() throws {
        let segments = try Self.segments()
        #expect(segments.count >= 20)
        for (i, segment) in segments.enumerated() {
            try segment.payload.withUnsafeBytes { raw in
                let view = try TCPView(raw)
                let valid: Bool
                switch (segment.source, segment.destination) {
                case let (.v4(s), .v4(d)): valid = view.isChecksumValid(source: s, destination: d)
                case let (.v6(s), .v6(d)): valid = view.isChecksumValid(source: s, destination: d)
                default: valid = false
                }
                #expect(valid, "segment \(i): \(view)")
            }
        }
    }

    /// Our emitter lays options out as Linux does, so re-emitting a captured
    /// header with its payload reproduces the kernel's bytes, checksum included.
    @Test func reEmittingReproducesTheKernelsBytes() throws {
        for (i, segment) in try Self.segments().enumerated() {
            let (h, payload, kernelChecksum) = try segment.payload.withUnsafeBytes { raw in
                let view = try TCPView(raw)
                return (TCPHeader(view), Array(view.payload), view.checksum)
            }
            var out = poisonedBytes(h.headerLength + payload.count)
            let n = try out.withUnsafeMutableBytes { raw -> Int in
                try payload.withUnsafeBytes { p -> Int in
                    switch (segment.source, segment.destination) {
                    case let (.v4(s), .v4(d)): return try h.emit(into: raw, source: s, destination: d, payload: p)
                    case let (.v6(s), .v6(d)): return try h.emit(into: raw, source: s, destination: d, payload: p)
                    default: throw WireError.malformed(layer: .tcp, reason: .fieldRange)
                    }
                }
            }
            out.replaceSubrange(n..., with: payload)
            #expect(out == segment.payload, "segment \(i)")
            #expect(out[16] == UInt8(kernelChecksum >> 8) && out[17] == UInt8(kernelChecksum & 0xff))
        }
    }
}
