// TCP segments (RFC 9293 §3.1).
//
// Checksums cover a pseudo-header, the TCP header and the payload, so the
// header alone cannot compute one. Two ways to get it right:
//  - `TCPHeader.emit(into:source:destination:payload:)` when the payload is
//    at hand (it need not follow the header in memory);
//  - `TCPHeader.emit(into:)`, which writes `checksum` verbatim, then
//    `TCPHeader.fillChecksum(_:source:destination:)` over the whole segment
//    once the payload has been copied in behind the header.

/// A zero-copy view of a TCP segment: the bytes from the TCP header to the
/// end of the IP payload. `init` validates the data offset and every option;
/// afterwards no accessor can trap.
public struct TCPView: CustomStringConvertible {
    public static let minimumHeaderLength = 20

    /// The whole segment, header and payload.
    public let bytes: UnsafeRawBufferPointer
    /// The options, decoded once by `init`.
    public let options: TCPOptions

    public init(_ bytes: UnsafeRawBufferPointer) throws(WireError) {
        try require(Self.minimumHeaderLength, in: bytes, .tcp)
        let words = Int(bytes.u8(12) >> 4)
        guard words >= 5 else { throw .malformed(layer: .tcp, reason: .dataOffset) }
        try require(words * 4, in: bytes, .tcp)
        options = try TCPOptions(parsing: bytes.sub(Self.minimumHeaderLength, words * 4 - Self.minimumHeaderLength))
        self.bytes = bytes
    }

    @inlinable public var sourcePort: UInt16 { bytes.u16(0) }
    @inlinable public var destinationPort: UInt16 { bytes.u16(2) }
    @inlinable public var sequenceNumber: SequenceNumber { SequenceNumber(bytes.u32(4)) }
    @inlinable public var acknowledgmentNumber: SequenceNumber { SequenceNumber(bytes.u32(8)) }
    /// The header length in 32-bit words, 5 through 15.
    @inlinable public var dataOffset: UInt8 { bytes.u8(12) >> 4 }
    /// The header length in bytes, options included.
    @inlinable public var headerLength: Int { Int(dataOffset) * 4 }
    @inlinable public var flags: TCPFlags { TCPFlags(rawValue: bytes.u8(13)) }
    @inlinable public var windowSize: UInt16 { bytes.u16(14) }
    @inlinable public var checksum: UInt16 { bytes.u16(16) }
    @inlinable public var urgentPointer: UInt16 { bytes.u16(18) }

    /// The raw option area, padding included.
    @inlinable public var optionBytes: UnsafeRawBufferPointer {
        bytes.sub(Self.minimumHeaderLength, headerLength - Self.minimumHeaderLength)
    }

    /// The options in wire order, NOPs and unknown kinds included.
    @inlinable public var optionList: TCPOptionSequence { TCPOptionSequence(optionBytes) }

    @inlinable public var payload: UnsafeRawBufferPointer { bytes.suffix(from: headerLength) }

    /// True when the checksum verifies against the IPv4 pseudo-header.
    @inlinable
    public func isChecksumValid(source: IPv4Address, destination: IPv4Address) -> Bool {
        var sum = InternetChecksum.pseudoHeader(source: source, destination: destination,
                                                protocol: .tcp, length: bytes.count)
        sum.add(bytes)
        return sum.folded == 0xffff
    }

    /// True when the checksum verifies against the IPv6 pseudo-header.
    @inlinable
    public func isChecksumValid(source: IPv6Address, destination: IPv6Address) -> Bool {
        var sum = InternetChecksum.pseudoHeader(source: source, destination: destination,
                                                protocol: .tcp, length: bytes.count)
        sum.add(bytes)
        return sum.folded == 0xffff
    }

    /// The TCP part of a tcpdump line, options in wire order:
    /// `Flags [P.], seq 1:79, ack 1, win 63, options [nop,nop,TS val 5 ecr 3], length 78`.
    public var description: String {
        TCPHeader.describe(flags: flags, sequenceNumber: sequenceNumber, acknowledgmentNumber: acknowledgmentNumber,
                           windowSize: windowSize, urgentPointer: urgentPointer, options: optionList,
                           payloadLength: payload.count)
    }

    /// The line after tcpdump's "IP " / "IP6 ": `10.0.0.1.40000 > 10.0.0.2.80: Flags [S], ...`.
    /// The IP layer's description calls this with its own addresses.
    public func describe(source: some CustomStringConvertible, destination: some CustomStringConvertible) -> String {
        "\(source).\(sourcePort) > \(destination).\(destinationPort): \(description)"
    }
}

/// A TCP header as a value. `options` holds the options Sluice understands;
/// `emit` lays them out as Linux does, so `dataOffset` follows from them and
/// unknown options of a parsed header are not carried over.
public struct TCPHeader: Hashable, Sendable, CustomStringConvertible {
    public var sourcePort: UInt16
    public var destinationPort: UInt16
    public var sequenceNumber: SequenceNumber
    public var acknowledgmentNumber: SequenceNumber
    public var flags: TCPFlags
    public var windowSize: UInt16
    public var checksum: UInt16
    public var urgentPointer: UInt16
    public var options: TCPOptions

    @inlinable
    public init(sourcePort: UInt16, destinationPort: UInt16, sequenceNumber: SequenceNumber,
                acknowledgmentNumber: SequenceNumber = SequenceNumber(0), flags: TCPFlags, windowSize: UInt16,
                checksum: UInt16 = 0, urgentPointer: UInt16 = 0, options: TCPOptions = TCPOptions()) {
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
        self.sequenceNumber = sequenceNumber
        self.acknowledgmentNumber = acknowledgmentNumber
        self.flags = flags
        self.windowSize = windowSize
        self.checksum = checksum
        self.urgentPointer = urgentPointer
        self.options = options
    }

    public init(_ view: TCPView) {
        self.init(sourcePort: view.sourcePort, destinationPort: view.destinationPort,
                  sequenceNumber: view.sequenceNumber, acknowledgmentNumber: view.acknowledgmentNumber,
                  flags: view.flags, windowSize: view.windowSize, checksum: view.checksum,
                  urgentPointer: view.urgentPointer, options: view.options)
    }

    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> TCPHeader {
        TCPHeader(try TCPView(bytes))
    }

    /// The header length `emit` writes, in 32-bit words.
    public var dataOffset: UInt8 { UInt8(truncatingIfNeeded: headerLength / 4) }
    /// The header length `emit` writes, in bytes.
    public var headerLength: Int { TCPView.minimumHeaderLength + options.encodedLength }

    /// Writes the header with `checksum` as it is and returns its length.
    /// Throws when the options exceed 40 bytes or the buffer is too small.
    public func emit(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        let optionLength = options.encodedLength
        guard optionLength <= TCPOptions.maximumLength else { throw .malformed(layer: .tcp, reason: .optionLength) }
        let length = TCPView.minimumHeaderLength + optionLength
        try require(length, in: buffer, .tcp)
        buffer.setU16(0, sourcePort)
        buffer.setU16(2, destinationPort)
        buffer.setU32(4, sequenceNumber.rawValue)
        buffer.setU32(8, acknowledgmentNumber.rawValue)
        // The three reserved bits and the experimental AE/NS bit go out as zero.
        buffer.setU8(12, UInt8(length / 4) << 4)
        buffer.setU8(13, flags.rawValue)
        buffer.setU16(14, windowSize)
        buffer.setU16(16, checksum)
        buffer.setU16(18, urgentPointer)
        _ = try options.emit(into: buffer.sub(TCPView.minimumHeaderLength, optionLength))
        return length
    }

    /// Writes the header with the checksum over the IPv4 pseudo-header, the
    /// header and `payload`, which may live anywhere. With `partialChecksum`,
    /// the field holds only the pseudo-header's sum, for a device that adds
    /// the rest (`InternetChecksum.completePartial`, checksum offload).
    public func emit(into buffer: UnsafeMutableRawBufferPointer, source: IPv4Address, destination: IPv4Address,
                     payload: UnsafeRawBufferPointer, partialChecksum: Bool = false) throws(WireError) -> Int {
        let pseudo = InternetChecksum.pseudoHeader(source: source, destination: destination, protocol: .tcp,
                                                   length: headerLength + payload.count)
        return try emit(into: buffer, pseudoHeader: pseudo, payload: payload, partialChecksum: partialChecksum)
    }

    /// Writes the header with the checksum over the IPv6 pseudo-header, the
    /// header and `payload`, which may live anywhere (or only the
    /// pseudo-header's sum, with `partialChecksum`).
    public func emit(into buffer: UnsafeMutableRawBufferPointer, source: IPv6Address, destination: IPv6Address,
                     payload: UnsafeRawBufferPointer, partialChecksum: Bool = false) throws(WireError) -> Int {
        let pseudo = InternetChecksum.pseudoHeader(source: source, destination: destination, protocol: .tcp,
                                                   length: headerLength + payload.count)
        return try emit(into: buffer, pseudoHeader: pseudo, payload: payload, partialChecksum: partialChecksum)
    }

    func emit(into buffer: UnsafeMutableRawBufferPointer, pseudoHeader: InternetChecksum,
              payload: UnsafeRawBufferPointer, partialChecksum: Bool = false) throws(WireError) -> Int {
        var header = self
        header.checksum = 0
        let length = try header.emit(into: buffer)
        if partialChecksum {
            buffer.setU16(16, pseudoHeader.folded)
            return length
        }
        var sum = pseudoHeader
        // The header is a whole number of words, so the payload starts on a word boundary.
        sum.add(UnsafeRawBufferPointer(buffer.sub(0, length)))
        sum.add(payload)
        buffer.setU16(16, sum.value)
        return length
    }

    /// Computes and stores the checksum of a complete segment (header then
    /// payload, `segment.count` bytes in all) sent over IPv4.
    public static func fillChecksum(_ segment: UnsafeMutableRawBufferPointer,
                                    source: IPv4Address, destination: IPv4Address) throws(WireError) {
        try fillChecksum(segment, pseudoHeader: InternetChecksum.pseudoHeader(
            source: source, destination: destination, protocol: .tcp, length: segment.count))
    }

    /// Computes and stores the checksum of a complete segment sent over IPv6.
    public static func fillChecksum(_ segment: UnsafeMutableRawBufferPointer,
                                    source: IPv6Address, destination: IPv6Address) throws(WireError) {
        try fillChecksum(segment, pseudoHeader: InternetChecksum.pseudoHeader(
            source: source, destination: destination, protocol: .tcp, length: segment.count))
    }

    static func fillChecksum(_ segment: UnsafeMutableRawBufferPointer,
                             pseudoHeader: InternetChecksum) throws(WireError) {
        try require(TCPView.minimumHeaderLength, in: segment, .tcp)
        segment.setU16(16, 0)
        var sum = pseudoHeader
        sum.add(UnsafeRawBufferPointer(segment))
        segment.setU16(16, sum.value)
    }

    /// The TCP part of a tcpdump line for a segment without payload.
    public var description: String { describe(payloadLength: 0) }

    /// The TCP part of a tcpdump line for a segment carrying `payloadLength` bytes.
    public func describe(payloadLength: Int) -> String {
        var list: [TCPOption] = []
        options.forEachOption { list.append($0) }
        return Self.describe(flags: flags, sequenceNumber: sequenceNumber, acknowledgmentNumber: acknowledgmentNumber,
                             windowSize: windowSize, urgentPointer: urgentPointer, options: list,
                             payloadLength: payloadLength)
    }

    /// The line after tcpdump's "IP " / "IP6 ": `10.0.0.1.40000 > 10.0.0.2.80: Flags [S], ...`.
    public func describe(source: some CustomStringConvertible, destination: some CustomStringConvertible,
                         payloadLength: Int) -> String {
        "\(source).\(sourcePort) > \(destination).\(destinationPort): \(describe(payloadLength: payloadLength))"
    }

    /// tcpdump -S's rules: seq only when the segment occupies sequence space
    /// or is a RST, as a range when it carries data; ack only with ACK; urg only with URG.
    static func describe(flags: TCPFlags, sequenceNumber: SequenceNumber, acknowledgmentNumber: SequenceNumber,
                         windowSize: UInt16, urgentPointer: UInt16, options: some Sequence<TCPOption>,
                         payloadLength: Int) -> String {
        var text = "Flags \(flags)"
        if payloadLength > 0 || !flags.isDisjoint(with: [.syn, .fin, .rst]) {
            text += ", seq \(sequenceNumber)"
            if payloadLength > 0 { text += ":\(sequenceNumber + payloadLength)" }
        }
        if flags.contains(.ack) { text += ", ack \(acknowledgmentNumber)" }
        text += ", win \(windowSize)"
        if flags.contains(.urg) { text += ", urg \(urgentPointer)" }
        var list = ""
        for option in options {
            if !list.isEmpty { list += "," }
            list += option.description
        }
        if !list.isEmpty { text += ", options [\(list)]" }
        text += ", length \(payloadLength)"
        return text
    }
}
