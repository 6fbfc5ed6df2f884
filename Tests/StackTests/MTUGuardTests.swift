import Testing
@testable import Stack
import Wire

/// Too-big datagrams get the answer RFC 1191 / RFC 8201 ask for, well formed
/// and checksummed; fragmentable ones and ICMP errors get none.
@Suite struct MTUGuardTests {
    func check(_ bytes: [UInt8], mtu: Int, capacity: Int = MTUGuard.replyCapacity) throws -> (MTUGuard.Verdict, [UInt8]) {
        var reply = [UInt8](repeating: 0xAA, count: capacity)
        let verdict = try withPacket(bytes) { packet in
            reply.withUnsafeMutableBytes { MTUGuard.check(packet, mtu: mtu, reply: $0) }
        }
        if case let .tooBig(n) = verdict { return (verdict, Array(reply.prefix(n))) }
        return (verdict, [])
    }

    @Test func ipv4WithDontFragmentGetsFragmentationNeeded() throws {
        let whole = Frag.udp4(Frag.payload(1500), dontFragment: true)
        let (verdict, reply) = try check(whole, mtu: 1400)
        #expect(verdict == .tooBig(replyLength: 576))
        try withPacket(reply) { packet in
            guard case let .v4(ip) = packet.network else { Issue.record("not IPv4"); return }
            #expect(ip.verifyChecksum())
            #expect(packet.verifyUpperLayerChecksum() == true)
            #expect(ip.source == Frag.server4 && ip.destination == Frag.app4)
            let icmp = try ICMPv4View(ip.payload)
            #expect(icmp.message == .fragmentationNeeded(nextHopMTU: 1400))
            // The header and as much as fits in 576 bytes.
            #expect(Array(icmp.payload) == Array(whole.prefix(548)))
            #expect(packet.description == "IP 198.18.0.5 > 10.7.0.2: ICMP 198.18.0.5 unreachable - need to frag (mtu 1400), length 556")
        }
        // Through a sink: the same packet.
        var sink = CollectingSink()
        let viaSink = try withPacket(whole) { MTUGuard.check($0, mtu: 1400, sink: &sink) }
        #expect(viaSink == verdict)
        #expect(sink.packets == [reply])
    }

    @Test func ipv4WithoutDontFragmentIsFragmentable() throws {
        let whole = Frag.udp4(Frag.payload(1500))
        #expect(try check(whole, mtu: 1400).0 == .fragmentable)
        var sink = CollectingSink()
        #expect(try withPacket(whole) { MTUGuard.check($0, mtu: 1400, sink: &sink) } == .fragmentable)
        #expect(sink.packets.isEmpty)
        // What the caller then does when it forwards whole datagrams:
        var fragments = CollectingSink()
        let outcome = try withPacket(whole) { IPFragmenter.fragment($0, mtu: 1400, identification: 0, sink: &fragments) }
        #expect(outcome == .fragments(2))
    }

    @Test func datagramsThatFitPass() throws {
        #expect(try check(Frag.udp4(Frag.payload(1372), dontFragment: true), mtu: 1400).0 == .fits)
        #expect(try check(Frag.udp6(Frag.payload(1352)), mtu: 1400).0 == .fits)
        // IPv6 links carry 1280 bytes whatever the MTU says.
        #expect(try check(Frag.udp6(Frag.payload(1232)), mtu: 1000).0 == .fits)
    }

    @Test func ipv6GetsPacketTooBig() throws {
        let whole = Frag.udp6(Frag.payload(1500))
        let (verdict, reply) = try check(whole, mtu: 1400)
        #expect(verdict == .tooBig(replyLength: 1280))
        try withPacket(reply) { packet in
            guard case let .v6(ip) = packet.network else { Issue.record("not IPv6"); return }
            #expect(packet.verifyUpperLayerChecksum() == true)
            #expect(ip.source == Frag.server6 && ip.destination == Frag.app6)
            let icmp = try ICMPv6View(ip.upperLayerPayload)
            #expect(icmp.message == .packetTooBig(mtu: 1400))
            #expect(Array(icmp.payload) == Array(whole.prefix(1232)))
            #expect(packet.description == "IP6 fd00:99::5 > fd00:7::2: ICMP6, packet too big, mtu 1400, length 1240")
        }
        // Below 1280 the answer says 1280.
        let (small, smallReply) = try check(whole, mtu: 1000)
        #expect(small == .tooBig(replyLength: 1280))
        let message = try withPacket(smallReply) { packet throws -> ICMPv6Message in try ICMPv6View(packet.payload).message }
        #expect(message == .packetTooBig(mtu: 1280))
    }

    /// The kernel answered one captured fragment with packet too big (mtu 1280):
    /// ours, for the same datagram, says the same and quotes the same bytes.
    @Test func packetTooBigMatchesTheKernels() throws {
        let packets = try Frag.capturedFragments()
        let kernel = try #require(packets.firstIndex { bytes in
            (try? withPacket(bytes) { p in
                guard case .v6 = p.network, let icmp = try? ICMPv6View(p.payload) else { return false }
                return icmp.message == .packetTooBig(mtu: 1280)
            }) == true
        })
        let trigger = packets[kernel - 1]
        let (verdict, reply) = try check(trigger, mtu: 1280)
        #expect(verdict == .tooBig(replyLength: packets[kernel].count))
        // Everything after the checksum (the MTU and the quote) is the kernel's.
        #expect(reply.count == packets[kernel].count)
        #expect(Array(reply[44...]) == Array(packets[kernel][44...]))
        #expect(reply[40] == packets[kernel][40] && reply[41] == packets[kernel][41])
        try withPacket(reply) { #expect($0.verifyUpperLayerChecksum() == true) }
    }

    @Test func noAnswerWhereRFC1122Forbids() throws {
        // An ICMP error is never answered with one.
        var error = [UInt8](repeating: 0, count: 28 + 1500)
        error.withUnsafeMutableBytes { out in
            _ = try! ICMPv4Message.destinationUnreachable(code: .port).emit(into: out.sub(20, 1508), payloadLength: 1500)
            _ = try! IPv4Header(source: Frag.app4, destination: Frag.server4, protocol: .icmp, payloadLength: 1508)
                .emit(into: out.sub(0, 20))
        }
        #expect(try check(error, mtu: 1400) == (.tooBig(replyLength: 0), []))
        // Nor a datagram to a multicast group.
        var multicast = Frag.udp4(Frag.payload(1500), dontFragment: true)
        multicast.withUnsafeMutableBytes { out in
            IPv4Address(224, 0, 0, 9).store(out, 16)
            out.setU16(10, 0)
            out.setU16(10, InternetChecksum.of(UnsafeRawBufferPointer(out.sub(0, 20))))
        }
        #expect(try check(multicast, mtu: 1400) == (.tooBig(replyLength: 0), []))
        // IPv6: packet too big may answer a multicast destination (RFC 4443 §2.4(e.2)), not a multicast source.
        var toGroup = Frag.udp6(Frag.payload(1500))
        toGroup.withUnsafeMutableBytes { IPv6Address("ff02::1")!.store($0, 24) }
        #expect(try check(toGroup, mtu: 1400).0 == .tooBig(replyLength: 1280))
        var fromGroup = Frag.udp6(Frag.payload(1500))
        fromGroup.withUnsafeMutableBytes { IPv6Address("ff02::1")!.store($0, 8) }
        #expect(try check(fromGroup, mtu: 1400) == (.tooBig(replyLength: 0), []))
    }

    @Test func aSmallBufferGetsNothing() throws {
        #expect(try check(Frag.udp6(Frag.payload(1500)), mtu: 1400, capacity: 1279) == (.tooBig(replyLength: 0), []))
    }
}

func == (a: (MTUGuard.Verdict, [UInt8]), b: (MTUGuard.Verdict, [UInt8])) -> Bool {
    a.0 == b.0 && a.1 == b.1
}
