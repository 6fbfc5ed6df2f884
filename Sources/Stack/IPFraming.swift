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
        guard let headers = tcpHeadersLength(source: source, destination: destination, header: header),
              buffer.count >= headers + payload.count else { return 0 }
        buffer.sub(headers, payload.count).copyMemory(from: payload)
        return writeTCPHeaders(into: buffer, source: source, destination: destination, header: header, payload: payload,
                               identification: identification) > 0 ? headers + payload.count : 0
    }

    /// Writes only the IP and TCP headers of that datagram, with checksums
    /// that cover `payload` (which is not copied: it follows the headers in
    /// a gather write). Returns the headers' length, or 0.
    public static func writeTCPHeaders(into buffer: UnsafeMutableRawBufferPointer, source: IPAddress, destination: IPAddress,
                                       header: TCPHeader, payload: UnsafeRawBufferPointer, identification: UInt16,
                                       partialChecksum: Bool = false) -> Int {
        guard let headers = tcpHeadersLength(source: source, destination: destination, header: header),
              buffer.count >= headers else { return 0 }
        let tcpLength = header.headerLength + payload.count
        switch (source, destination) {
        case let (.v4(s), .v4(d)):
            guard (try? header.emit(into: buffer.sub(20, header.headerLength), source: s, destination: d, payload: payload,
                                    partialChecksum: partialChecksum)) != nil,
                  (try? IPv4Header(source: s, destination: d, protocol: .tcp, payloadLength: tcpLength,
                                   identification: identification).emit(into: buffer.sub(0, 20))) != nil
            else { return 0 }
        case let (.v6(s), .v6(d)):
            guard (try? header.emit(into: buffer.sub(40, header.headerLength), source: s, destination: d, payload: payload,
                                    partialChecksum: partialChecksum)) != nil,
                  (try? IPv6Header(source: s, destination: d, nextHeader: .tcp, payloadLength: tcpLength)
                    .emit(into: buffer.sub(0, 40))) != nil
            else { return 0 }
        case (.v4, .v6), (.v6, .v4):
            return 0
        }
        return headers
    }

    /// The IP and TCP headers' length, or nil for mixed address families.
    static func tcpHeadersLength(source: IPAddress, destination: IPAddress, header: TCPHeader) -> Int? {
        switch (source, destination) {
        case (.v4, .v4): return 20 + header.headerLength
        case (.v6, .v6): return 40 + header.headerLength
        case (.v4, .v6), (.v6, .v4): return nil
        }
    }

    /// Writes a UDP datagram from `source` to `destination`; returns its length, or 0.
    public static func writeUDP(into buffer: UnsafeMutableRawBufferPointer, source: IPAddress, sourcePort: UInt16,
                                destination: IPAddress, destinationPort: UInt16, payload: UnsafeRawBufferPointer,
                                identification: UInt16) -> Int {
        let udp = UDPHeader(sourcePort: sourcePort, destinationPort: destinationPort, payloadLength: payload.count)
        switch (source, destination) {
        case let (.v4(s), .v4(d)):
            guard buffer.count >= 28 + payload.count else { return 0 }
            buffer.sub(28, payload.count).copyMemory(from: payload)
            guard (try? udp.emit(into: buffer.sub(20, 8 + payload.count), source: s, destination: d)) != nil,
                  (try? IPv4Header(source: s, destination: d, protocol: .udp, payloadLength: 8 + payload.count,
                                   identification: identification, dontFragment: false).emit(into: buffer.sub(0, 20))) != nil
            else { return 0 }
            return 28 + payload.count
        case let (.v6(s), .v6(d)):
            guard buffer.count >= 48 + payload.count else { return 0 }
            buffer.sub(48, payload.count).copyMemory(from: payload)
            guard (try? udp.emit(into: buffer.sub(40, 8 + payload.count), source: s, destination: d)) != nil,
                  (try? IPv6Header(source: s, destination: d, nextHeader: .udp, payloadLength: 8 + payload.count)
                    .emit(into: buffer.sub(0, 40))) != nil
            else { return 0 }
            return 48 + payload.count
        case (.v4, .v6), (.v6, .v4):
            return 0
        }
    }

    /// Writes an ICMP or ICMPv6 echo reply from `source` to `destination`; returns its length, or 0.
    public static func writeEchoReply(into buffer: UnsafeMutableRawBufferPointer, source: IPAddress, destination: IPAddress,
                                      identifier: UInt16, sequenceNumber: UInt16, payload: UnsafeRawBufferPointer) -> Int {
        writeEcho(into: buffer, request: false, source: source, destination: destination, identifier: identifier,
                  sequenceNumber: sequenceNumber, payload: payload)
    }

    /// Writes an echo request or reply; returns its length, or 0.
    public static func writeEcho(into buffer: UnsafeMutableRawBufferPointer, request: Bool, source: IPAddress, destination: IPAddress,
                                 identifier: UInt16, sequenceNumber: UInt16, payload: UnsafeRawBufferPointer) -> Int {
        switch (source, destination) {
        case let (.v4(s), .v4(d)):
            guard buffer.count >= 28 + payload.count else { return 0 }
            buffer.sub(28, payload.count).copyMemory(from: payload)
            let message = request ? ICMPv4Message.echoRequest(identifier: identifier, sequenceNumber: sequenceNumber)
                : .echoReply(identifier: identifier, sequenceNumber: sequenceNumber)
            guard (try? message.emit(into: buffer.sub(20, 8 + payload.count), payloadLength: payload.count)) != nil,
                  (try? IPv4Header(source: s, destination: d, protocol: .icmp, payloadLength: 8 + payload.count,
                                   dontFragment: false).emit(into: buffer.sub(0, 20))) != nil
            else { return 0 }
            return 28 + payload.count
        case let (.v6(s), .v6(d)):
            guard buffer.count >= 48 + payload.count else { return 0 }
            buffer.sub(48, payload.count).copyMemory(from: payload)
            let message = request ? ICMPv6Message.echoRequest(identifier: identifier, sequenceNumber: sequenceNumber)
                : .echoReply(identifier: identifier, sequenceNumber: sequenceNumber)
            guard (try? message.emit(into: buffer.sub(40, 8 + payload.count), payloadLength: payload.count,
                                     source: s, destination: d)) != nil,
                  (try? IPv6Header(source: s, destination: d, nextHeader: .icmpv6, payloadLength: 8 + payload.count)
                    .emit(into: buffer.sub(0, 40))) != nil
            else { return 0 }
            return 48 + payload.count
        case (.v4, .v6), (.v6, .v4):
            return 0
        }
    }

    /// The ICMP destination-unreachable answer to `packet`: quoting its header and
    /// the first bytes of its payload (RFC 792: 8 bytes; RFC 1812 §4.3.2.3 and
    /// RFC 4443 §2.4: as much as fits in 576 or 1280 bytes).
    public static func writeUnreachable(into buffer: UnsafeMutableRawBufferPointer, replyingTo packet: IPPacketView,
                                        reason: UnreachableReason) -> Int {
        let error = UpstreamICMPError(reason)
        return writeError(into: buffer, replyingTo: packet, v4: error.v4, v6: error.v6)
    }
}

/// Why a flow is refused with an ICMP error.
public enum UnreachableReason: Sendable, Equatable {
    case network, host, port, administrativelyProhibited
}
