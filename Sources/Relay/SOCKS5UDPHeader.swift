import Wire

/// The header in front of every datagram relayed through a UDP ASSOCIATE
/// (RFC 1928 §7):
///
///     +----+------+------+----------+----------+----------+
///     |RSV | FRAG | ATYP | DST.ADDR | DST.PORT |   DATA   |
///     | 2  |  1   |  1   | Variable |    2     | Variable |
///
/// The same header goes both ways: towards the proxy it names the destination,
/// from the proxy the source. Fragmentation (FRAG ≠ 0) is optional in the RFC,
/// and no server we relay through uses it, so such datagrams are refused.
public struct SOCKS5UDPHeader: Hashable, Sendable, CustomStringConvertible {
    public var target: ProxyTarget

    @inlinable public init(target: ProxyTarget) { self.target = target }

    /// Bytes the header takes, or nil for a name longer than 255 bytes.
    public var length: Int? {
        SOCKS5Address.encodedLength(target).map { 3 + $0 }
    }

    /// Writes the header at the start of `buffer` (the caller puts the payload
    /// after it) and returns its length. No allocation.
    public func emit(into buffer: UnsafeMutableRawBufferPointer) throws(RelayError) -> Int {
        guard let length else { throw .unrepresentable(.domainLength) }
        guard buffer.count >= length else { throw .unrepresentable(.bufferTooSmall) }
        buffer.setU16(0, 0)
        buffer.setU8(2, 0)
        return SOCKS5Address.write(target, into: buffer, at: 3)
    }

    /// Parses a whole datagram's header; the payload starts at `payloadOffset`.
    /// A datagram is complete or nothing, so a short one is an error, not "need more".
    /// Allocates only for a domain name (its String).
    public static func parse(_ datagram: UnsafeRawBufferPointer) throws(RelayError) -> (header: SOCKS5UDPHeader, payloadOffset: Int) {
        guard datagram.count >= 4 else { throw .protocolViolation(.truncated) }
        guard datagram.u16(0) == 0 else { throw .protocolViolation(.reserved) }
        guard datagram.u8(2) == 0 else { throw .protocolViolation(.fragment) }
        switch try SOCKS5Address.parse(datagram, at: 3) {
        case .needMore:
            throw .protocolViolation(.truncated)
        case let .target(target, end):
            return (SOCKS5UDPHeader(target: target), end)
        }
    }

    public var description: String { "SOCKS5 UDP \(target)" }
}
