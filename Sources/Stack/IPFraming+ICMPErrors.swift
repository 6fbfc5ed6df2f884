public import Wire

/// The ICMP errors that fragmentation and MTUs call for, in the shape of
/// `writeUnreachable`: the answer comes from the datagram's destination (Sluice
/// stands in for it) and quotes as much of the datagram as fits in 576 bytes
/// for IPv4 (RFC 1812 §4.3.2.3; RFC 792 asks for the header and 8 bytes) or
/// 1280 for IPv6 (RFC 4443 §2.4(c)).
extension IPFraming {
    /// ICMP destination unreachable, fragmentation needed and DF set (type 3
    /// code 4), with the next-hop MTU (RFC 1191 §4). IPv4 only: 0 for IPv6.
    public static func writeFragmentationNeeded(into buffer: UnsafeMutableRawBufferPointer,
                                                replyingTo packet: IPPacketView, nextHopMTU: UInt16) -> Int {
        guard case .v4 = packet.network else { return 0 }
        return writeError(into: buffer, replyingTo: packet, v4: .fragmentationNeeded(nextHopMTU: nextHopMTU),
                          v6: .packetTooBig(mtu: UInt32(nextHopMTU)))
    }

    /// ICMPv6 packet too big (type 2) with the MTU (RFC 4443 §3.2, RFC 8201).
    /// IPv6 only: 0 for IPv4.
    public static func writePacketTooBig(into buffer: UnsafeMutableRawBufferPointer,
                                         replyingTo packet: IPPacketView, mtu: UInt32) -> Int {
        guard case .v6 = packet.network else { return 0 }
        return writeError(into: buffer, replyingTo: packet, v4: .fragmentationNeeded(nextHopMTU: 0),
                          v6: .packetTooBig(mtu: mtu))
    }

    /// Time exceeded, code 1: fragment reassembly time exceeded (RFC 792,
    /// RFC 4443 §3.3). `packet` is the first fragment, usually a quote of it.
    public static func writeReassemblyTimeExceeded(into buffer: UnsafeMutableRawBufferPointer,
                                                   replyingTo packet: IPPacketView) -> Int {
        writeError(into: buffer, replyingTo: packet, v4: .timeExceeded(code: 1), v6: .timeExceeded(code: 1))
    }

    /// Frames `v4` or `v6`, by `packet`'s version, around the quote of `packet`:
    /// from `sender` when it is of the packet's family (a router on the way),
    /// else from the packet's destination.
    public static func writeError(into buffer: UnsafeMutableRawBufferPointer, replyingTo packet: IPPacketView,
                                  v4 message4: ICMPv4Message, v6 message6: ICMPv6Message, from sender: IPAddress? = nil) -> Int {
        let original = packet.bytes
        switch packet.network {
        case let .v4(ip):
            var source = ip.destination
            if case let .v4(router)? = sender { source = router }
            let quoted = min(original.count, 576 - 28)
            let total = 28 + quoted
            guard buffer.count >= total else { return 0 }
            buffer.sub(28, quoted).copyMemory(from: original.sub(0, quoted))
            guard (try? message4.emit(into: buffer.sub(20, 8 + quoted), payloadLength: quoted)) != nil,
                  (try? IPv4Header(source: source, destination: ip.source, protocol: .icmp,
                                   payloadLength: 8 + quoted).emit(into: buffer.sub(0, 20))) != nil
            else { return 0 }
            return total
        case let .v6(ip):
            var source = ip.destination
            if case let .v6(router)? = sender { source = router }
            let quoted = min(original.count, 1280 - 48)
            let total = 48 + quoted
            guard buffer.count >= total else { return 0 }
            buffer.sub(48, quoted).copyMemory(from: original.sub(0, quoted))
            guard (try? message6.emit(into: buffer.sub(40, 8 + quoted), payloadLength: quoted,
                                      source: source, destination: ip.source)) != nil,
                  (try? IPv6Header(source: source, destination: ip.source, nextHeader: .icmpv6,
                                   payloadLength: 8 + quoted).emit(into: buffer.sub(0, 40))) != nil
            else { return 0 }
            return total
        }
    }
}

extension IPFraming {
    /// Whether an ICMP error may answer `packet` at all. RFC 1122 §3.2.2: not
    /// about an ICMP error, a non-first IPv4 fragment, a datagram to a multicast
    /// or broadcast address, or one whose source names no single host. RFC 4443
    /// §2.4(e) says the same for IPv6, except that packet too big may answer a
    /// multicast destination (`packetTooBig`).
    static func mayAnswerWithError(_ packet: IPPacketView, packetTooBig: Bool = false) -> Bool {
        let payload = packet.payload
        switch packet.network {
        case let .v4(ip):
            if ip.fragmentOffset != 0 { return false }
            // 0.0.0.0/8 is "this host", 224/4 multicast, 240/4 reserved and the broadcast address.
            let source = ip.source.value >> 24, destination = ip.destination.value >> 24
            if source == 0 || source >= 224 || destination >= 224 { return false }
            if ip.protocol == .icmp, payload.count >= 1 {
                switch payload.u8(0) {
                case 3, 4, 5, 11, 12: return false
                default: break
                }
            }
            return true
        case let .v6(ip):
            if ip.source == .any || ip.source.high >> 56 == 0xff { return false }
            if ip.destination.high >> 56 == 0xff, !packetTooBig { return false }
            let isFirst = ip.fragment.map { $0.fragmentOffset == 0 } ?? true
            if isFirst, ip.upperLayerProtocol == .icmpv6, payload.count >= 1, payload.u8(0) < 128 { return false }
            return true
        }
    }
}
