public import Wire

/// Answers ICMP and ICMPv6 echo requests locally, as the destination would.
/// `sluice dump` uses it to make ping work with nothing behind the TUN; the
/// engine uses it for destinations a rule answers locally.
public enum EchoResponder {
    /// Writes the echo reply to `packet` into `buffer` and returns its length,
    /// or 0 when `packet` is not an intact echo request (or the buffer is too small).
    public static func reply(to packet: IPPacketView, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard !packet.isFragment, packet.verifyUpperLayerChecksum() == true else { return 0 }
        let identifier: UInt16, sequence: UInt16, data: UnsafeRawBufferPointer
        switch packet.network {
        case let .v4(ip):
            guard ip.protocol == .icmp, let icmp = try? ICMPv4View(ip.payload),
                  case let .echoRequest(id, seq) = icmp.message else { return 0 }
            (identifier, sequence, data) = (id, seq, icmp.payload)
        case let .v6(ip):
            guard ip.upperLayerProtocol == .icmpv6, let icmp = try? ICMPv6View(ip.upperLayerPayload),
                  case let .echoRequest(id, seq) = icmp.message else { return 0 }
            (identifier, sequence, data) = (id, seq, icmp.payload)
        }
        return IPFraming.writeEchoReply(into: buffer, source: packet.destination, destination: packet.source,
                                        identifier: identifier, sequenceNumber: sequence, payload: data)
    }
}
