import Testing
import Wire

private typealias T = IPTestSupport

/// A v4 datagram carrying `payload` as `proto`, built with our own emit.
private func v4(_ proto: IPProtocol, _ payload: [UInt8], fragmentOffset: UInt16 = 0, more: Bool = false) throws -> [UInt8] {
    let header = IPv4Header(source: IPv4Address(192, 0, 2, 1), destination: IPv4Address(192, 0, 2, 2), protocol: proto,
                            payloadLength: payload.count, identification: 77, moreFragments: more,
                            fragmentOffset: fragmentOffset)
    return try T.poisoned(20) { buffer in _ = try header.emit(into: buffer) } + payload
}

@Suite struct IPPacketTests {
    @Test func theVersionNibbleChoosesTheParser() throws {
        func error(_ bytes: [UInt8]) -> WireError? {
            bytes.withUnsafeBytes { raw in T.error { () throws(WireError) in _ = try IPPacketView(raw) } }
        }
        #expect(error([]) == .truncated(layer: .ipv4, needed: 1, available: 0))
        for version: UInt8 in [0, 1, 5, 7, 15] {
            #expect(error([version << 4 | 5] + [UInt8](repeating: 0, count: 39)) == .unsupported(layer: .ipv4, reason: .version))
        }
        // A 6 in front of 20 bytes is a truncated IPv6 header, not an IPv4 one.
        #expect(error([0x65] + [UInt8](repeating: 0, count: 19)) == .truncated(layer: .ipv6, needed: 40, available: 20))
        let datagram = try v4(.udp, [0, 7, 0, 9, 0, 10, 0, 0, 0xab, 0xcd])
        try T.inMiddle(datagram) { raw in
            let packet = try IPPacketView(raw)
            guard case .v4 = packet.network else { Issue.record("not v4: \(packet)"); return }
            #expect(packet.source == IPAddress("192.0.2.1"))
            #expect(packet.destination == IPAddress("192.0.2.2"))
            #expect(packet.upperLayerProtocol == .udp)
            #expect(packet.payload.count == 10)
            #expect(packet.fragment == nil)
            #expect(packet.description == "IP 192.0.2.1.7 > 192.0.2.2.9: UDP, length 2")
            // The UDP checksum was left zero: "none", which verifies over IPv4.
            #expect(packet.verifyUpperLayerChecksum() == true)
        }
    }

    @Test func theUpperLayerChecksumUsesThePseudoHeader() throws {
        var datagram = try v4(.udp, [0, 7, 0, 9, 0, 10, 0, 0, 0xab, 0xcd])
        try T.inMiddle(datagram) { raw in
            let packet = try IPPacketView(raw)
            var sum = packet.pseudoHeader(length: 10)
            sum.add(packet.payload)
            // Store the value emit would have computed, and the datagram verifies.
            datagram[26] = UInt8(sum.value >> 8)
            datagram[27] = UInt8(sum.value & 0xff)
        }
        try T.inMiddle(datagram) { raw in
            let packet = try IPPacketView(raw)
            #expect(packet.verifyUpperLayerChecksum() == true)
        }
        datagram[28] ^= 1
        try T.inMiddle(datagram) { raw in
            let packet = try IPPacketView(raw)
            #expect(packet.verifyUpperLayerChecksum() == false)
        }
        // Protocols we have no checksum rule for, and fragments, say nothing.
        try T.inMiddle(try v4(IPProtocol(rawValue: 47), [1, 2, 3, 4])) { raw in
            let packet = try IPPacketView(raw)
            #expect(packet.verifyUpperLayerChecksum() == nil)
            #expect(packet.description == "IP 192.0.2.1 > 192.0.2.2: proto-47, length 4")
        }
        try T.inMiddle(try v4(.udp, [0, 7, 0, 9, 0, 200, 0, 0], more: true)) { raw in
            let packet = try IPPacketView(raw)
            #expect(packet.verifyUpperLayerChecksum() == nil)
            #expect(packet.description == "IP 192.0.2.1 > 192.0.2.2: frag (id 77, offset 0+), UDP, length 8")
        }
    }

    @Test func aVouchedForChecksumIsNotSummedButStillNeedsAWholeHeader() throws {
        // A TCP segment and a UDP datagram whose checksum fields hold junk, as a
        // partial sum would look to a summing check, and an ICMP echo likewise.
        var tcp = [UInt8](repeating: 0, count: 24)
        tcp[12] = 0x50
        tcp[16] = 0x12; tcp[17] = 0x34
        let junkUDP: [UInt8] = [0, 7, 0, 9, 0, 10, 0x12, 0x34, 0xab, 0xcd]
        let echo: [UInt8] = [8, 0, 0x12, 0x34, 0, 1, 0, 1]
        for (proto, payload, vouched) in [(IPProtocol.tcp, tcp, true as Bool?), (.udp, junkUDP, true), (.icmp, echo, false)] {
            try T.inMiddle(try v4(proto, payload)) { raw in
                var packet = try IPPacketView(raw)
                #expect(packet.verifyUpperLayerChecksum() == false, "\(proto) unvouched")
                packet.upperLayerChecksumVouchedFor = true
                // No kernel offloads ICMP: its sum is checked whatever the reader says.
                #expect(packet.verifyUpperLayerChecksum() == vouched, "\(proto) vouched")
            }
        }
        // A UDP length field beyond the datagram fails even when vouched for;
        // a fragment's checksum still cannot be judged.
        try T.inMiddle(try v4(.udp, [0, 7, 0, 9, 0, 99, 0, 0])) { raw in
            var packet = try IPPacketView(raw)
            packet.upperLayerChecksumVouchedFor = true
            #expect(packet.verifyUpperLayerChecksum() == false)
        }
        try T.inMiddle(try v4(.udp, [0, 7, 0, 9, 0, 200, 0, 0], more: true)) { raw in
            var packet = try IPPacketView(raw)
            packet.upperLayerChecksumVouchedFor = true
            #expect(packet.verifyUpperLayerChecksum() == nil)
        }
    }

    @Test func describesWhatItCannotParseWithoutTrapping() throws {
        // A UDP length beyond the datagram, a TCP data offset beyond the segment, an ICMP message too short.
        #expect(try T.line(v4(.udp, [0, 7, 0, 9, 0, 99, 0, 0]))
            == "IP 192.0.2.1 > 192.0.2.2: [UDP: truncated: need 99 bytes, have 8]")
        var tcp = [UInt8](repeating: 0, count: 20)
        tcp[12] = 0xf0
        #expect(try T.line(v4(.tcp, tcp)) == "IP 192.0.2.1 > 192.0.2.2: [TCP: truncated: need 60 bytes, have 20]")
        #expect(try T.line(v4(.tcp, [1, 2, 3])) == "IP 192.0.2.1 > 192.0.2.2: [TCP: truncated: need 20 bytes, have 3]")
        #expect(try T.line(v4(.icmp, [8, 0, 0])) == "IP 192.0.2.1 > 192.0.2.2: [ICMP: truncated: need 8 bytes, have 3]")
        // An ICMP error whose quote is not an IP header falls back to the bare message.
        #expect(try T.line(v4(.icmp, [3, 3, 0, 0, 0, 0, 0, 0, 0x99]))
            == "IP 192.0.2.1 > 192.0.2.2: ICMP port unreachable, length 9")
    }
}
