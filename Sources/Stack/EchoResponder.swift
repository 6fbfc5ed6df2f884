public import Wire

/// Answers ICMP and ICMPv6 echo requests locally, as the destination would.
/// `sluice dump` uses it to make ping work with nothing behind the TUN; the
/// engine uses it for destinations a rule answers locally.
public enum EchoResponder {
    /// Writes the echo reply to `packet` into `buffer` and returns its length,
    /// or 0 when `packet` is not an intact echo request (or the buffer is too small).
    public static func reply(to packet: IPPacketView, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard !packet.isFragment else { return 0 }
        switch packet.network {
        case let .v4(ip):
            guard ip.protocol == .icmp, let icmp = try? ICMPv4View(ip.payload), icmp.verifyChecksum(),
                  case let .echoRequest(identifier, sequence) = icmp.message else { return 0 }
            let data = icmp.payload
            let total = 20 + 8 + data.count
            guard buffer.count >= total else { return 0 }
            buffer.sub(28, data.count).copyMemory(from: data)
            let message = ICMPv4Message.echoReply(identifier: identifier, sequenceNumber: sequence)
            guard (try? message.emit(into: buffer.sub(20, 8 + data.count), payloadLength: data.count)) != nil,
                  (try? IPv4Header(source: ip.destination, destination: ip.source, protocol: .icmp,
                                   payloadLength: 8 + data.count, dontFragment: false).emit(into: buffer.sub(0, 20))) != nil
            else { return 0 }
            return total
        case let .v6(ip):
            guard ip.upperLayerProtocol == .icmpv6, let icmp = try? ICMPv6View(ip.upperLayerPayload),
                  icmp.verifyChecksum(source: ip.source, destination: ip.destination),
                  case let .echoRequest(identifier, sequence) = icmp.message else { return 0 }
            let data = icmp.payload
            let total = 40 + 8 + data.count
            guard buffer.count >= total else { return 0 }
            buffer.sub(48, data.count).copyMemory(from: data)
            let message = ICMPv6Message.echoReply(identifier: identifier, sequenceNumber: sequence)
            guard (try? message.emit(into: buffer.sub(40, 8 + data.count), payloadLength: data.count,
                                     source: ip.destination, destination: ip.source)) != nil,
                  (try? IPv6Header(source: ip.destination, destination: ip.source, nextHeader: .icmpv6,
                                   payloadLength: 8 + data.count).emit(into: buffer.sub(0, 40))) != nil
            else { return 0 }
            return total
        }
    }
}
