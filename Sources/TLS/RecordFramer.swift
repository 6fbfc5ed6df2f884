/// Cuts a TCP byte stream into TLS records (RFC 8446 §5.1). Bytes arrive in
/// whatever pieces TCP delivered; `nextRecord` hands out whole records and
/// keeps the rest. Nil means "need more bytes"; a header no TLS peer would
/// send throws, so a non-TLS stream fails at its first five bytes.
package struct RecordFramer {
    package static let headerSize = 5
    /// §5.2: TLSCiphertext may exceed 2^14 by the AEAD's expansion, at most 256.
    package static let maximumCiphertextLength = 16384 + 256

    private var buffer: [UInt8] = []
    private var start = 0

    package init() {}

    package var bufferedCount: Int { buffer.count - start }

    /// The bytes not yet framed, taken out.
    package mutating func takeBuffered() -> [UInt8] {
        let rest = Array(buffer[start...])
        buffer.removeAll(keepingCapacity: true)
        start = 0
        return rest
    }

    package mutating func append(_ bytes: [UInt8]) {
        // Drop what was handed out before growing, so the buffer holds at most
        // one partial record plus one arrival.
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 4096 {
            buffer.removeSubrange(0 ..< start)
            start = 0
        }
        buffer += bytes
    }

    /// What the header at the start of `bytes` says without framing it:
    /// the whole record's length (header included), and whether
    /// `nextRecord` would take such a header (§5.1: a known type, a TLS 1.x
    /// version, a length a record may have). Nil for fewer than 5 bytes.
    package static func peekHeader(_ bytes: UnsafeRawBufferPointer) -> (count: Int, plausible: Bool)? {
        guard bytes.count >= headerSize else { return nil }
        let length = Int(bytes[3]) << 8 | Int(bytes[4])
        let plausible = ContentType(rawValue: bytes[0]) != nil && bytes[1] == 0x03 && bytes[2] <= 0x04 && length <= maximumCiphertextLength
        return (headerSize + length, plausible)
    }

    /// The next whole record: its type, its 5-byte header (the AEAD's
    /// additional data) and its body.
    package mutating func nextRecord() throws(TLSError) -> TLSRecord? {
        guard buffer.count - start >= Self.headerSize else { return nil }
        guard let type = ContentType(rawValue: buffer[start]) else {
            throw TLSError(.unexpectedMessage, "a record of unknown type \(buffer[start])")
        }
        // §5.1: legacy_record_version is 0x0303, or 0x0301 in a first
        // ClientHello; anything else is not TLS 1.x at all.
        guard buffer[start + 1] == 0x03, buffer[start + 2] <= 0x04 else {
            throw TLSError(.protocolVersion, "a record with version \(buffer[start + 1]).\(buffer[start + 2])")
        }
        let length = Int(buffer[start + 3]) << 8 | Int(buffer[start + 4])
        guard length <= Self.maximumCiphertextLength else {
            throw TLSError(.recordOverflow, "a record of \(length) bytes")
        }
        guard buffer.count - start >= Self.headerSize + length else { return nil }
        let header = Array(buffer[start ..< start + Self.headerSize])
        let body = Array(buffer[start + Self.headerSize ..< start + Self.headerSize + length])
        start += Self.headerSize + length
        return TLSRecord(type: type, header: header, body: body)
    }
}

/// One record as framed, before decryption.
package struct TLSRecord: Sendable, Equatable, CustomStringConvertible {
    package var type: ContentType
    package var header: [UInt8]
    package var body: [UInt8]

    package init(type: ContentType, header: [UInt8], body: [UInt8]) {
        self.type = type
        self.header = header
        self.body = body
    }

    package var description: String { "\(type) record, \(body.count) bytes" }

    /// A record's bytes with its header (§5.1), for plaintext records.
    package static func encode(type: ContentType, body: [UInt8], legacyVersion: UInt16 = ProtocolVersion.tls12) -> [UInt8] {
        var writer = TLSWriter()
        writer.u8(type.rawValue)
        writer.u16(legacyVersion)
        writer.vector(lengthSize: 2, bytes: body)
        return writer.bytes
    }
}
