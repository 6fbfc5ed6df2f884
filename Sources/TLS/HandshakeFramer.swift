/// Cuts handshake records' contents into handshake messages (RFC 8446 §4):
/// a message may span records and a record may hold several. The raw bytes
/// of each message go into the transcript exactly as they came.
package struct HandshakeFramer {
    /// A certificate chain is the largest message; 64 KiB holds any real one
    /// with room to spare, and bounds what a peer can make Sluice buffer.
    package static let maximumMessageSize = 65536

    private var buffer: [UInt8] = []

    package init() {}

    /// Whether a message is partly read: a change of keys must not come
    /// in the middle of one (§5.1: "MUST NOT span key changes").
    package var isEmpty: Bool { buffer.isEmpty }

    package mutating func append(_ bytes: [UInt8]) { buffer += bytes }

    package mutating func nextMessage() throws(TLSError) -> HandshakeMessage? {
        guard buffer.count >= 4 else { return nil }
        let length = Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
        guard length <= Self.maximumMessageSize else { throw TLSError(.decodeError, "a handshake message of \(length) bytes") }
        guard buffer.count >= 4 + length else { return nil }
        guard let type = HandshakeType(rawValue: buffer[0]) else {
            throw TLSError(.unexpectedMessage, "a handshake message of unknown type \(buffer[0])")
        }
        let raw = Array(buffer[0 ..< 4 + length])
        buffer.removeSubrange(0 ..< 4 + length)
        return HandshakeMessage(type: type, raw: raw)
    }
}

/// One handshake message: its type and its whole encoding, header included
/// (what the transcript hashes); `body` is what follows the 4-byte header.
package struct HandshakeMessage: Sendable, Equatable, CustomStringConvertible {
    package var type: HandshakeType
    package var raw: [UInt8]

    package var body: [UInt8] { Array(raw.dropFirst(4)) }

    package var description: String { "\(type), \(raw.count - 4) bytes" }

    package static func encode(type: HandshakeType, body: [UInt8]) -> [UInt8] {
        var writer = TLSWriter()
        writer.u8(type.rawValue)
        writer.vector(lengthSize: 3, bytes: body)
        return writer.bytes
    }
}
