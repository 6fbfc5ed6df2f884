/// An ECDSA signature (r, s).
///
/// `r` and `s` are big-endian unsigned integers in minimal form: no leading
/// zero bytes (so zero is the empty array). `init(r:s:)` and the DER parser
/// normalise to that form, and signing produces it; verification also accepts
/// leading zeros if a caller sets the properties directly, e.g. to the fixed
/// 32-byte halves of a JWS/P1363 signature.
package struct ECDSASignature: Sendable, Equatable {
    package var r: [UInt8]
    package var s: [UInt8]

    package init(r: [UInt8], s: [UInt8]) {
        self.r = Self.minimal(r)
        self.s = Self.minimal(s)
    }

    private static func minimal(_ integer: [UInt8]) -> [UInt8] { Array(integer.drop { $0 == 0 }) }

    /// Ecdsa-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER } (RFC 3279
    /// §2.2.3), as in X.509 signatureValue and TLS 1.3 CertificateVerify
    /// (RFC 8446 §4.2.3). Strict DER (X.690 §10 and §8.3): definite, minimal
    /// lengths; each INTEGER minimal and non-negative; nothing after s inside
    /// the SEQUENCE and nothing after the SEQUENCE.
    package init?(derRepresentation bytes: [UInt8]) {
        var reader = SignatureDERReader(bytes[...])
        guard let sequence = reader.read(tag: 0x30), reader.isAtEnd else { return nil }
        var fields = SignatureDERReader(sequence)
        guard let r = fields.readUnsignedInteger(), let s = fields.readUnsignedInteger(), fields.isAtEnd else {
            return nil
        }
        self.r = r
        self.s = s
    }

    package var derRepresentation: [UInt8] {
        let body = Self.integerElement(r) + Self.integerElement(s)
        return [0x30] + Self.lengthOctets(body.count) + body
    }

    /// INTEGER with the minimal two's-complement content of a non-negative
    /// value: a 0x00 prefix when the top bit is set, a single 0x00 for zero.
    private static func integerElement(_ magnitude: [UInt8]) -> [UInt8] {
        let digits = minimal(magnitude)
        let needsZeroPrefix = digits.first.map { $0 & 0x80 != 0 } ?? true
        let content = needsZeroPrefix ? [0x00] + digits : digits
        return [0x02] + lengthOctets(content.count) + content
    }

    /// X.690 §8.1.3: short form below 128, else the fewest length bytes.
    private static func lengthOctets(_ length: Int) -> [UInt8] {
        if length < 0x80 { return [UInt8(length)] }
        var octets: [UInt8] = []
        var remaining = length
        while remaining > 0 {
            octets.insert(UInt8(truncatingIfNeeded: remaining), at: 0)
            remaining >>= 8
        }
        return [0x80 | UInt8(octets.count)] + octets
    }
}

/// A strict reader of the few DER elements of an ECDSA signature. Every
/// read checks the remaining length first, so truncated input returns nil.
private struct SignatureDERReader {
    private var remaining: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { remaining = bytes }

    var isAtEnd: Bool { remaining.isEmpty }

    /// The contents of the next element if it has this tag.
    mutating func read(tag: UInt8) -> ArraySlice<UInt8>? {
        guard remaining.first == tag else { return nil }
        var cursor = remaining.dropFirst()
        guard let first = cursor.first else { return nil }
        cursor = cursor.dropFirst()
        let length: Int
        if first < 0x80 {
            length = Int(first)
        } else {
            // Long form: 1 or 2 length bytes are plenty (a signature is far
            // below 64 KiB); 0x80 is the indefinite form, banned in DER.
            let count = Int(first & 0x7F)
            guard count == 1 || count == 2, cursor.count >= count else { return nil }
            var value = 0
            for byte in cursor.prefix(count) { value = value << 8 | Int(byte) }
            cursor = cursor.dropFirst(count)
            // Minimal: the long form only from 128, and no leading zero byte.
            guard value >= (count == 2 ? 0x100 : 0x80) else { return nil }
            length = value
        }
        guard cursor.count >= length else { return nil }
        let contents = cursor.prefix(length)
        remaining = cursor.dropFirst(length)
        return contents
    }

    /// A non-negative INTEGER in minimal form (X.690 §8.3.2), returned as its
    /// magnitude without the sign byte.
    mutating func readUnsignedInteger() -> [UInt8]? {
        guard let contents = read(tag: 0x02), let first = contents.first else { return nil }
        if first & 0x80 != 0 { return nil }  // negative
        if first == 0x00 {
            guard contents.count >= 2 else { return [] }  // zero
            // A leading 0x00 is allowed only before a byte with the top bit set.
            guard let second = contents.dropFirst().first, second & 0x80 != 0 else { return nil }
            return Array(contents.dropFirst())
        }
        return Array(contents)
    }
}
