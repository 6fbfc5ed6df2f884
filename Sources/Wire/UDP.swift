/// A validated UDP datagram (RFC 768), read in place. `bytes` is cut at the
/// length field, which may be shorter than what IP carried (the rest is
/// padding RFC 768 does not define, and is ignored as Linux does).
public struct UDPView: CustomStringConvertible {
    /// The datagram, exactly `length` bytes.
    public let bytes: UnsafeRawBufferPointer

    public static let headerLength = 8

    @inlinable
    public init(_ buffer: UnsafeRawBufferPointer) throws(WireError) {
        try require(Self.headerLength, in: buffer, .udp)
        let length = Int(buffer.u16(4))
        guard length >= Self.headerLength else { throw .malformed(layer: .udp, reason: .totalLength) }
        try require(length, in: buffer, .udp)
        bytes = buffer.sub(0, length)
    }

    @inlinable public var sourcePort: UInt16 { bytes.u16(0) }
    @inlinable public var destinationPort: UInt16 { bytes.u16(2) }
    /// Header plus payload, in bytes.
    @inlinable public var length: UInt16 { bytes.u16(4) }
    @inlinable public var checksum: UInt16 { bytes.u16(6) }
    @inlinable public var payload: UnsafeRawBufferPointer { bytes.suffix(from: Self.headerLength) }

    /// Over IPv4 a zero checksum means the sender computed none (RFC 768), which verifies.
    @inlinable
    public func verifyChecksum(source: IPv4Address, destination: IPv4Address) -> Bool {
        if checksum == 0 { return true }
        var c = InternetChecksum.pseudoHeader(source: source, destination: destination, protocol: .udp, length: bytes.count)
        c.add(bytes)
        return c.folded == 0xffff
    }

    /// Over IPv6 the checksum is mandatory (RFC 8200 §8.1): zero never verifies.
    @inlinable
    public func verifyChecksum(source: IPv6Address, destination: IPv6Address) -> Bool {
        if checksum == 0 { return false }
        var c = InternetChecksum.pseudoHeader(source: source, destination: destination, protocol: .udp, length: bytes.count)
        c.add(bytes)
        return c.folded == 0xffff
    }

    public var description: String { UDPHeader(self).description }
}

/// A UDP header's fields. The checksum is not stored: `emit` computes it.
public struct UDPHeader: Equatable, Sendable, CustomStringConvertible {
    public var sourcePort: UInt16
    public var destinationPort: UInt16
    /// The length field: 8 plus the payload length.
    public var length: Int

    public init(sourcePort: UInt16, destinationPort: UInt16, payloadLength: Int) {
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
        self.length = UDPView.headerLength + payloadLength
    }

    public init(_ view: UDPView) {
        sourcePort = view.sourcePort
        destinationPort = view.destinationPort
        length = Int(view.length)
    }

    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> UDPHeader {
        UDPHeader(try UDPView(bytes))
    }

    public var payloadLength: Int { length - UDPView.headerLength }

    /// Writes the 8-byte header in front of a payload the caller has already
    /// put at `buffer[8 ..< length]`, with the checksum over both and the
    /// IPv4 pseudo-header (or zero, "none", when `checksum` is false).
    /// Returns 8, the bytes written.
    public func emit(into buffer: UnsafeMutableRawBufferPointer, source: IPv4Address, destination: IPv4Address,
                     checksum: Bool = true) throws(WireError) -> Int {
        try emit(into: buffer, pseudoHeader: checksum
            ? InternetChecksum.pseudoHeader(source: source, destination: destination, protocol: .udp, length: length)
            : nil)
    }

    /// As the IPv4 form, with the IPv6 pseudo-header; the checksum is mandatory.
    public func emit(into buffer: UnsafeMutableRawBufferPointer, source: IPv6Address, destination: IPv6Address)
        throws(WireError) -> Int
    {
        try emit(into: buffer, pseudoHeader:
            InternetChecksum.pseudoHeader(source: source, destination: destination, protocol: .udp, length: length))
    }

    func emit(into buffer: UnsafeMutableRawBufferPointer, pseudoHeader: InternetChecksum?) throws(WireError) -> Int {
        guard length >= UDPView.headerLength, length <= 65535 else { throw .malformed(layer: .udp, reason: .totalLength) }
        try require(length, in: buffer, .udp)
        buffer.setU16(0, sourcePort)
        buffer.setU16(2, destinationPort)
        buffer.setU16(4, UInt16(length))
        buffer.setU16(6, 0)
        if var c = pseudoHeader {
            c.add(UnsafeRawBufferPointer(buffer.sub(0, length)))
            // A computed zero is sent as all ones: zero on the wire means "no checksum".
            let value = c.value
            buffer.setU16(6, value == 0 ? 0xffff : value)
        }
        return UDPView.headerLength
    }

    /// `40000 > 53: UDP, length 33` (tcpdump prints the payload length).
    public var description: String { "\(sourcePort) > \(destinationPort): UDP, length \(payloadLength)" }
}
