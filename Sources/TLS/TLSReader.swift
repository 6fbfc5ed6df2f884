/// A cursor over bytes from the peer, in TLS's presentation language (RFC
/// 8446 §3): big-endian integers and vectors with 1-, 2- or 3-byte lengths.
/// Every read checks what is left and throws `decode_error` instead of
/// trapping, so a message is validated as it is read, once.
package struct TLSReader {
    private let bytes: [UInt8]
    private var position: Int
    private let end: Int

    package init(_ bytes: [UInt8]) {
        self.init(bytes, from: 0, to: bytes.count)
    }

    private init(_ bytes: [UInt8], from start: Int, to end: Int) {
        self.bytes = bytes
        self.position = start
        self.end = end
    }

    package var isAtEnd: Bool { position == end }
    package var remainingCount: Int { end - position }

    package mutating func u8() throws(TLSError) -> UInt8 {
        guard position < end else { throw TLSError(.decodeError, "a message ends early") }
        defer { position += 1 }
        return bytes[position]
    }

    package mutating func u16() throws(TLSError) -> UInt16 {
        UInt16(try u8()) << 8 | UInt16(try u8())
    }

    package mutating func u24() throws(TLSError) -> Int {
        Int(try u8()) << 16 | Int(try u8()) << 8 | Int(try u8())
    }

    package mutating func u32() throws(TLSError) -> UInt32 {
        UInt32(try u16()) << 16 | UInt32(try u16())
    }

    package mutating func bytes(_ count: Int) throws(TLSError) -> [UInt8] {
        guard count >= 0, count <= end - position else { throw TLSError(.decodeError, "a field runs past its message") }
        defer { position += count }
        return Array(bytes[position ..< position + count])
    }

    /// A vector's contents as a reader of their own (`<0..2^8-1>` and kin).
    package mutating func vector(lengthSize: Int) throws(TLSError) -> TLSReader {
        let count: Int
        switch lengthSize {
        case 1: count = Int(try u8())
        case 2: count = Int(try u16())
        case 3: count = try u24()
        default: throw TLSError(.internalError, "no vector has a \(lengthSize)-byte length")
        }
        guard count <= end - position else { throw TLSError(.decodeError, "a vector runs past its message") }
        defer { position += count }
        return TLSReader(bytes, from: position, to: position + count)
    }

    package mutating func vectorBytes(lengthSize: Int) throws(TLSError) -> [UInt8] {
        var inner = try vector(lengthSize: lengthSize)
        return try inner.bytes(inner.remainingCount)
    }

    /// Messages and extensions have no room for trailing bytes (§4.2: "decode_error").
    package func expectEnd(_ what: String) throws(TLSError) {
        guard isAtEnd else { throw TLSError(.decodeError, "\(what) has \(remainingCount) bytes too many") }
    }
}

/// The writing side of `TLSReader`.
package struct TLSWriter {
    package private(set) var bytes: [UInt8] = []

    package init() {}

    package mutating func u8(_ value: UInt8) { bytes.append(value) }

    package mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    package mutating func u24(_ value: Int) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 16))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    package mutating func u32(_ value: UInt32) {
        u16(UInt16(truncatingIfNeeded: value >> 16))
        u16(UInt16(truncatingIfNeeded: value))
    }

    package mutating func append(_ more: [UInt8]) { bytes += more }

    /// A vector: what `body` writes, preceded by its length in `lengthSize` bytes.
    package mutating func vector(lengthSize: Int, _ body: (inout TLSWriter) -> Void) {
        let start = bytes.count
        bytes += [UInt8](repeating: 0, count: lengthSize)
        body(&self)
        let count = bytes.count - start - lengthSize
        for i in 0 ..< lengthSize {
            bytes[start + i] = UInt8(truncatingIfNeeded: count >> (8 * (lengthSize - 1 - i)))
        }
    }

    package mutating func vector(lengthSize: Int, bytes more: [UInt8]) {
        vector(lengthSize: lengthSize) { $0.append(more) }
    }
}
