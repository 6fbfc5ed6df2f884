import Testing
import Wire

private typealias T = IPTestSupport

/// ping's echo request from 10.99.0.1 (ipv4-icmp-udp.pcap), IPv4 header first.
private let kernelEchoRequest = T.hex("""
    450000542ac340004001fa1d0a6300010a6301020800fa57141a0001757a0d6b
    00000000a1d4060000000000101112131415161718191a1b1c1d1e1f20212223
    2425262728292a2b2c2d2e2f3031323334353637
    """)

/// 10.99.1.2's port unreachable for a 5-byte UDP datagram to port 5353, quoting all of it (ipv4-icmp-udp.pcap).
private let kernelPortUnreachable = T.hex("""
    45c0003d4b3500003f011a030a6301020a630001030312e40000000045000021
    a49b40003f1181680a6300010a630102bddc14e9000d39c06f6464210a
    """)

/// ping -6's echo request from fd00:99::1 (ipv6-icmp-udp.pcap).
private let kernelEchoRequest6 = T.hex("""
    6007f34b00403a40fd000099000000000000000000000001fd00009900010000
    00000000000000028000d4d314260001767a0d6b00000000549a040000000000
    101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f
    3031323334353637
    """)

/// fd00:99:1::2's port unreachable for a UDP datagram to port 9 (unreachable.pcap).
private let kernelPortUnreachable6 = T.hex("""
    600021e1003a3a3ffd000099000100000000000000000002fd00009900000000
    00000000000000010104abb6000000006004e666000a113ffd00009900000000
    0000000000000001fd000099000100000000000000000002a90d0009000ae381
    780a
    """)

private let six1 = IPv6Address("fd00:99::1")!, six2 = IPv6Address("fd00:99:1::2")!

@Suite struct ICMPv4Tests {
    @Test func readsAndVerifiesAKernelEchoRequest() throws {
        try T.inMiddle(Array(kernelEchoRequest[20...])) { raw in
            let icmp = try ICMPv4View(raw)
            #expect(icmp.type == 8 && icmp.code == 0)
            #expect(icmp.checksum == 0xfa57)
            #expect(icmp.identifier == 5146 && icmp.sequenceNumber == 1)
            #expect(icmp.payload.count == 56)
            #expect(icmp.message == .echoRequest(identifier: 5146, sequenceNumber: 1))
            #expect(!icmp.isError)
            #expect(icmp.verifyChecksum())
            #expect(icmp.description == "ICMP echo request, id 5146, seq 1, length 64")
        }
    }

    @Test func readsAKernelPortUnreachableAndItsQuote() throws {
        try kernelPortUnreachable.withUnsafeBytes { raw in
            let packet = try IPPacketView(raw)
            #expect(packet.description == "IP 10.99.1.2 > 10.99.0.1: ICMP 10.99.1.2 udp port 5353 unreachable, length 41")
            let icmp = try ICMPv4View(packet.payload)
            #expect(icmp.message == .destinationUnreachable(code: .port))
            #expect(icmp.isError)
            #expect(icmp.verifyChecksum())
            let quoted = try IPv4View(quoted: icmp.payload)
            #expect(quoted.protocol == .udp)
            #expect(quoted.destination == IPv4Address(10, 99, 1, 2))
            let udp = try UDPView(quoted.payload)
            #expect(udp.destinationPort == 5353)
            #expect(String(decoding: udp.payload, as: UTF8.self) == "odd!\n")
        }
    }

    @Test func emitComputesTheKernelsChecksum() throws {
        for packet in [kernelEchoRequest, kernelPortUnreachable] {
            let icmp = Array(packet[20...])
            let message = try icmp.withUnsafeBytes { raw throws(WireError) in try ICMPv4Message.parse(raw) }
            let out = try T.poisoned(icmp.count) { buffer in
                for i in 8 ..< icmp.count { buffer[i] = icmp[i] }
                let written = try message.emit(into: buffer, payloadLength: icmp.count - 8)
                #expect(written == 8)
            }
            #expect(out == icmp)
        }
    }

    @Test func everyTruncationThrows() {
        // ICMP has no length field: any 8 bytes or more is a message; IP's length protects the rest.
        T.expectEveryTruncationThrows(Array(kernelEchoRequest[20...]), below: 8) { b throws(WireError) in
            _ = try ICMPv4View(b)
        }
        T.expectEveryTruncationThrows(kernelEchoRequest) { b throws(WireError) in _ = try IPPacketView(b) }
    }

    @Test func typesAndCodesMapToCases() {
        let cases: [(UInt8, UInt8, UInt32, ICMPv4Message)] = [
            (0, 0, 0x0001_0002, .echoReply(identifier: 1, sequenceNumber: 2)),
            (8, 0, 0xffff_0000, .echoRequest(identifier: 0xffff, sequenceNumber: 0)),
            (3, 3, 0, .destinationUnreachable(code: .port)),
            (3, 13, 0, .destinationUnreachable(code: .administrativelyProhibited)),
            (3, 4, 0x0000_0500, .fragmentationNeeded(nextHopMTU: 1280)),
            (11, 0, 0, .timeExceeded(code: 0)),
            (11, 1, 0, .timeExceeded(code: 1)),
            // Unknown kinds, and known types with codes they cannot have, keep their raw fields.
            (13, 0, 0x1234_5678, .other(type: 13, code: 0, restOfHeader: 0x1234_5678)),
            (8, 1, 7, .other(type: 8, code: 1, restOfHeader: 7)),
        ]
        for (type, code, rest, expected) in cases {
            let message = ICMPv4Message(type: type, code: code, restOfHeader: rest)
            #expect(message == expected)
            #expect(message.type == type && message.code == code)
        }
        #expect(ICMPv4Message.fragmentationNeeded(nextHopMTU: 1280).restOfHeader == 1280)
        #expect(ICMPv4Message.echoRequest(identifier: 1, sequenceNumber: 2).restOfHeader == 0x0001_0002)
    }

    @Test func emitIntoPoisonThenParseRoundTrips() throws {
        let messages: [ICMPv4Message] = [
            .echoRequest(identifier: 7, sequenceNumber: 1), .echoReply(identifier: 0xffff, sequenceNumber: 0xffff),
            .destinationUnreachable(code: .host), .fragmentationNeeded(nextHopMTU: 576), .timeExceeded(code: 1),
            .other(type: 13, code: 0, restOfHeader: 0xdead_beef),
        ]
        for (i, message) in messages.enumerated() {
            let payloadLength = i * 7
            let out = try T.poisoned(8 + payloadLength) { buffer in
                let written = try message.emit(into: buffer, payloadLength: payloadLength)
                #expect(written == 8)
            }
            try T.inMiddle(out) { raw in
                let icmp = try ICMPv4View(raw)
                #expect(ICMPv4Message(icmp) == message)
                // The poisoned payload is part of what the checksum covers.
                #expect(icmp.verifyChecksum())
                #expect(icmp.payload.count == payloadLength)
            }
        }
    }

    @Test func emitRefusesValuesThatWouldReadBackAsOthers() {
        func emit(_ message: ICMPv4Message, payloadLength: Int = 0, capacity: Int = 8) -> WireError? {
            var out = [UInt8](repeating: T.poison, count: capacity)
            return out.withUnsafeMutableBytes { b in
                T.error { () throws(WireError) in _ = try message.emit(into: b, payloadLength: payloadLength) }
            }
        }
        #expect(emit(.other(type: 8, code: 0, restOfHeader: 0)) == .malformed(layer: .icmpv4, reason: .fieldRange))
        #expect(emit(.destinationUnreachable(code: .fragmentationNeeded)) == .malformed(layer: .icmpv4, reason: .fieldRange))
        #expect(emit(.echoRequest(identifier: 1, sequenceNumber: 1), payloadLength: 1)
            == .malformed(layer: .icmpv4, reason: .bufferTooSmall))
        #expect(emit(.echoRequest(identifier: 1, sequenceNumber: 1), payloadLength: -1)
            == .malformed(layer: .icmpv4, reason: .payloadLength))
    }

    @Test func describesLikeTcpdump() {
        #expect(ICMPv4Message.echoReply(identifier: 5146, sequenceNumber: 2).description == "echo reply, id 5146, seq 2")
        #expect(ICMPv4Message.fragmentationNeeded(nextHopMTU: 1280).description == "unreachable - need to frag (mtu 1280)")
        #expect(ICMPv4Message.timeExceeded(code: 0).description == "time exceeded in-transit")
        #expect(ICMPv4Message.other(type: 13, code: 0, restOfHeader: 0).description == "type-#13, code 0")
    }
}

@Suite struct ICMPv6Tests {
    @Test func readsAndVerifiesAKernelEchoRequest() throws {
        try T.inMiddle(Array(kernelEchoRequest6[40...])) { raw in
            let icmp = try ICMPv6View(raw)
            #expect(icmp.type == 128 && icmp.code == 0)
            #expect(icmp.checksum == 0xd4d3)
            #expect(icmp.message == .echoRequest(identifier: 5158, sequenceNumber: 1))
            #expect(!icmp.isError)
            #expect(icmp.verifyChecksum(source: six1, destination: six2))
            // The pseudo-header counts.
            #expect(!icmp.verifyChecksum(source: six1, destination: IPv6Address("fd00:99:1::3")!))
            #expect(icmp.description == "ICMP6, echo request, id 5158, seq 1, length 64")
        }
    }

    @Test func readsAKernelPortUnreachableAndItsQuote() throws {
        try kernelPortUnreachable6.withUnsafeBytes { raw in
            let packet = try IPPacketView(raw)
            #expect(packet.description
                == "IP6 fd00:99:1::2 > fd00:99::1: ICMP6, destination unreachable, unreachable port, fd00:99:1::2 udp port 9, length 58")
            let icmp = try ICMPv6View(packet.payload)
            #expect(icmp.message == .destinationUnreachable(code: .port))
            #expect(icmp.isError)
            #expect(icmp.verifyChecksum(source: six2, destination: six1))
            let quoted = try IPv6View(quoted: icmp.payload)
            #expect(quoted.upperLayerProtocol == .udp)
            let udp = try UDPView(quoted.upperLayerPayload)
            #expect(udp.destinationPort == 9)
            #expect(udp.verifyChecksum(source: quoted.source, destination: quoted.destination))
        }
    }

    @Test func emitComputesTheKernelsChecksum() throws {
        for (packet, source, destination) in [(kernelEchoRequest6, six1, six2), (kernelPortUnreachable6, six2, six1)] {
            let icmp = Array(packet[40...])
            let message = try icmp.withUnsafeBytes { raw throws(WireError) in try ICMPv6Message.parse(raw) }
            let out = try T.poisoned(icmp.count) { buffer in
                for i in 8 ..< icmp.count { buffer[i] = icmp[i] }
                let written = try message.emit(into: buffer, payloadLength: icmp.count - 8,
                                               source: source, destination: destination)
                #expect(written == 8)
            }
            #expect(out == icmp)
        }
    }

    @Test func everyTruncationThrows() {
        T.expectEveryTruncationThrows(Array(kernelEchoRequest6[40...]), below: 8) { b throws(WireError) in
            _ = try ICMPv6View(b)
        }
        T.expectEveryTruncationThrows(kernelEchoRequest6) { b throws(WireError) in _ = try IPPacketView(b) }
    }

    @Test func typesAndCodesMapToCases() {
        let cases: [(UInt8, UInt8, UInt32, ICMPv6Message)] = [
            (1, 4, 0, .destinationUnreachable(code: .port)),
            (1, 3, 0, .destinationUnreachable(code: .address)),
            (2, 0, 1280, .packetTooBig(mtu: 1280)),
            (3, 0, 0, .timeExceeded(code: 0)),
            (3, 1, 0, .timeExceeded(code: 1)),
            (4, 1, 40, .parameterProblem(code: 1, pointer: 40)),
            (128, 0, 0x0001_0002, .echoRequest(identifier: 1, sequenceNumber: 2)),
            (129, 0, 0x0003_0004, .echoReply(identifier: 3, sequenceNumber: 4)),
            (135, 0, 0, .other(type: 135, code: 0, restOfHeader: 0)),
            (2, 1, 1280, .other(type: 2, code: 1, restOfHeader: 1280)),
        ]
        for (type, code, rest, expected) in cases {
            let message = ICMPv6Message(type: type, code: code, restOfHeader: rest)
            #expect(message == expected)
            #expect(message.type == type && message.code == code && message.restOfHeader == rest)
            #expect(message.isError == (type < 128))
        }
    }

    @Test func emitIntoPoisonThenParseRoundTrips() throws {
        let messages: [ICMPv6Message] = [
            .echoRequest(identifier: 7, sequenceNumber: 1), .echoReply(identifier: 1, sequenceNumber: 0xffff),
            .destinationUnreachable(code: .noRoute), .packetTooBig(mtu: 1280), .timeExceeded(code: 0),
            .parameterProblem(code: 0, pointer: 6), .other(type: 135, code: 0, restOfHeader: 0),
        ]
        for (i, message) in messages.enumerated() {
            let payloadLength = i * 5
            let out = try T.poisoned(8 + payloadLength) { buffer in
                let written = try message.emit(into: buffer, payloadLength: payloadLength, source: six1, destination: six2)
                #expect(written == 8)
            }
            try T.inMiddle(out) { raw in
                let icmp = try ICMPv6View(raw)
                #expect(ICMPv6Message(icmp) == message)
                #expect(icmp.verifyChecksum(source: six1, destination: six2))
            }
        }
    }

    @Test func emitRefusesValuesThatWouldReadBackAsOthers() {
        var out = [UInt8](repeating: T.poison, count: 8)
        let error = out.withUnsafeMutableBytes { b in
            T.error { () throws(WireError) in
                _ = try ICMPv6Message.other(type: 128, code: 0, restOfHeader: 0)
                    .emit(into: b, payloadLength: 0, source: six1, destination: six2)
            }
        }
        #expect(error == .malformed(layer: .icmpv6, reason: .fieldRange))
    }

    @Test func describesLikeTcpdump() {
        #expect(ICMPv6Message.packetTooBig(mtu: 1280).description == "packet too big, mtu 1280")
        #expect(ICMPv6Message.echoReply(identifier: 5158, sequenceNumber: 1).description == "echo reply, id 5158, seq 1")
        #expect(ICMPv6Message.other(type: 133, code: 0, restOfHeader: 0).description == "router solicitation")
    }
}
