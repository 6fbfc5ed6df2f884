public import Wire

/// Wraps transport segments in IPv4 or IPv6 headers for the TUN, and builds
/// the ICMP errors the stack answers with.
public enum IPFraming {
    /// IPv4 20 + TCP 60 at most.
    public static let maximumTCPOverhead = 40 + 60

    /// Writes a whole IP datagram carrying `header` and `payload` from `source`
    /// to `destination`; returns its length, or 0 if the buffer is too small.
    public static func writeTCP(into buffer: UnsafeMutableRawBufferPointer, source: IPAddress, destination: IPAddress,
                                header: TCPHeader, payload: UnsafeRawBufferPointer, identification: UInt16) -> Int {
        let tcpLength = header.headerLength + payload.count
        switch (source, destination) {
        case let (.v4(s), .v4(d)):
            let total = 20 + tcpLength
            guard buffer.count >= total else { return 0 }
            buffer.sub(20 + header.headerLength, payload.count).copyMemory(from: payload)
            guard (try? header.emit(into: buffer.sub(20, header.headerLength), source: s, destination: d, payload: payload)) != nil,
                  (try? IPv4Header(source: s, destination: d, protocol: .tcp, payloadLength: tcpLength,
                                   identification: identification).emit(into: buffer.sub(0, 20))) != nil
            else { return 0 }
            return total
        case let (.v6(s), .v6(d)):
            let total = 40 + tcpLength
            guard buffer.count >= total else { return 0 }
            buffer.sub(40 + header.headerLength, payload.count).copyMemory(from: payload)
            guard (try? header.emit(into: buffer.sub(40, header.headerLength), source: s, destination: d, payload: payload)) != nil,
                  (try? IPv6Header(source: s, destination: d, nextHeader: .tcp, payloadLength: tcpLength)
                    .emit(into: buffer.sub(0, 40))) != nil
            else { return 0 }
            return total
        case (.v4, .v6), (.v6, .v4):
            return 0
        }
    }

    /// The ICMP destination-unreachable answer to `packet`: quoting its header and
    /// the first bytes of its payload (RFC 792: 8 bytes; RFC 1812 §4.3.2.3 and
    /// RFC 4443 §2.4: as much as fits in 576 or 1280 bytes).
    public static func writeUnreachable(into buffer: UnsafeMutableRawBufferPointer, replyingTo packet: IPPacketView,
                                        reason: UnreachableReason) -> Int {
        let original = packet.bytes
        switch packet.network {
        case let .v4(v4):
            let quoted = min(original.count, 576 - 28)
            let total = 28 + quoted
            guard buffer.count >= total else { return 0 }
            let code: UInt8
            switch reason {
            case .port: code = 3
            case .host: code = 1
            case .network: code = 0
            case .administrativelyProhibited: code = 13
            }
            buffer.sub(28, quoted).copyMemory(from: UnsafeRawBufferPointer(original.sub(0, quoted)))
            let message = ICMPv4Message(type: 3, code: code, restOfHeader: 0)
            guard (try? message.emit(into: buffer.sub(20, 8 + quoted), payloadLength: quoted)) != nil,
                  (try? IPv4Header(source: v4.destination, destination: v4.source, protocol: .icmp,
                                   payloadLength: 8 + quoted).emit(into: buffer.sub(0, 20))) != nil
            else { return 0 }
            return total
        case let .v6(v6):
            let quoted = min(original.count, 1280 - 48)
            let total = 48 + quoted
            guard buffer.count >= total else { return 0 }
            let code: UInt8
            switch reason {
            case .port: code = 4
            case .host: code = 3
            case .network: code = 0
            case .administrativelyProhibited: code = 1
            }
            buffer.sub(48, quoted).copyMemory(from: UnsafeRawBufferPointer(original.sub(0, quoted)))
            let message = ICMPv6Message(type: 1, code: code, restOfHeader: 0)
            guard (try? message.emit(into: buffer.sub(40, 8 + quoted), payloadLength: quoted,
                                     source: v6.destination, destination: v6.source)) != nil,
                  (try? IPv6Header(source: v6.destination, destination: v6.source, nextHeader: .icmpv6,
                                   payloadLength: 8 + quoted).emit(into: buffer.sub(0, 40))) != nil
            else { return 0 }
            return total
        }
    }
}

/// Why a flow is refused with an ICMP error.
public enum UnreachableReason: Sendable, Equatable {
    case network, host, port, administrativelyProhibited
}
