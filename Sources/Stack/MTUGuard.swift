public import Wire

/// Decides what happens to a datagram the app sent that is longer than the
/// MTU Sluice can carry it on, in the spirit of `EchoResponder`: the answer,
/// when there is one, is written into the caller's buffer.
///
/// - IPv4 with DF set: ICMP fragmentation needed (type 3 code 4) with the MTU
///   as next-hop MTU (RFC 1191 §4), so the app's path-MTU discovery shrinks.
/// - IPv4 without DF: the sender allowed fragmentation, so nothing is answered.
///   The engine relays the payload through a socket, and that socket's kernel
///   fragments as it needs; a caller that forwards whole datagrams onto a link
///   of this MTU splits it with `IPFragmenter` instead.
/// - IPv6: ICMPv6 packet too big with the MTU (RFC 4443 §3.2, RFC 8201),
///   quoting as much of the datagram as fits in 1280 bytes. IPv6 routers
///   never fragment, so there is no fragmentable case.
public enum MTUGuard {
    /// RFC 791: every IPv4 link carries 68 bytes.
    public static let minimumIPv4MTU = 68
    /// RFC 8200 §5: every IPv6 link carries 1280 bytes. A smaller MTU is
    /// treated as 1280: what lies between is for the carrier to fragment.
    public static let minimumIPv6MTU = 1280
    /// Enough for any answer `check` writes.
    public static let replyCapacity = 1280

    public enum Verdict: Sendable, Equatable, CustomStringConvertible {
        /// Not longer than the MTU.
        case fits
        /// IPv4 without DF and too long: pass it on to be fragmented (see above).
        case fragmentable
        /// Too long and not to be fragmented: drop it. The answer is the first
        /// `replyLength` bytes of the buffer; 0 when RFC 1122 §3.2.2 or RFC 4443
        /// §2.4(e) forbid one (the datagram is itself an ICMP error, say) or the
        /// buffer was too small.
        case tooBig(replyLength: Int)

        public var description: String {
            switch self {
            case .fits: return "fits"
            case .fragmentable: return "fragmentable"
            case let .tooBig(replyLength): return "too big, reply length \(replyLength)"
            }
        }
    }

    /// Checks `packet` against `mtu`, writing the ICMP answer into `reply` when one is due.
    public static func check(_ packet: IPPacketView, mtu: Int, reply buffer: UnsafeMutableRawBufferPointer) -> Verdict {
        let length = packet.bytes.count
        switch packet.network {
        case let .v4(ip):
            let limit = min(max(mtu, minimumIPv4MTU), 65535)
            guard length > limit else { return .fits }
            guard ip.dontFragment else { return .fragmentable }
            guard IPFraming.mayAnswerWithError(packet) else { return .tooBig(replyLength: 0) }
            return .tooBig(replyLength: IPFraming.writeFragmentationNeeded(into: buffer, replyingTo: packet,
                                                                           nextHopMTU: UInt16(limit)))
        case .v6:
            let limit = max(mtu, minimumIPv6MTU)
            guard length > limit else { return .fits }
            guard IPFraming.mayAnswerWithError(packet, packetTooBig: true) else { return .tooBig(replyLength: 0) }
            return .tooBig(replyLength: IPFraming.writePacketTooBig(into: buffer, replyingTo: packet,
                                                                    mtu: UInt32(clamping: limit)))
        }
    }

    /// As `check(_:mtu:reply:)`, sending the answer to `sink`.
    public static func check(_ packet: IPPacketView, mtu: Int, sink: inout some PacketSink) -> Verdict {
        let verdict = check(packet, mtu: mtu, reply: UnsafeMutableRawBufferPointer(start: nil, count: 0))
        guard case .tooBig = verdict else { return verdict }
        var result = verdict
        sink.send(capacity: replyCapacity) { buffer in
            result = check(packet, mtu: mtu, reply: buffer)
            guard case let .tooBig(length) = result else { return 0 }
            return length
        }
        return result
    }
}
