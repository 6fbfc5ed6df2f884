/// Reading an RSAPublicKey from its DER form (RFC 8017 Appendix A.1.1):
///
///     RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }
///
/// which is what an X.509 SubjectPublicKeyInfo's BIT STRING holds for
/// rsaEncryption (RFC 3279 §2.3.1). Parsing is strict DER (X.690 §10):
/// definite, minimal lengths; minimal, non-negative INTEGERs; nothing after
/// the last INTEGER or after the SEQUENCE. A signature verifier has no reason
/// to accept more, and every accepted variant is one more way for two parsers
/// to disagree about a key.
extension RSAPublicKey {
    package init?(pkcs1DERRepresentation der: [UInt8]) {
        var outer = PKCS1DERReader(der)
        guard var sequence = outer.read(tag: 0x30), outer.isAtEnd else { return nil }
        guard let modulus = sequence.readNonNegativeInteger(),
              let publicExponent = sequence.readNonNegativeInteger(),
              sequence.isAtEnd else { return nil }
        self.init(modulus: modulus, publicExponent: publicExponent)
    }
}

/// A cursor over DER bytes that only ever moves forward and fails (nil)
/// rather than reading past its end.
private struct PKCS1DERReader {
    private let bytes: [UInt8]
    private var position: Int
    private let end: Int

    init(_ bytes: [UInt8]) {
        self.init(bytes, from: 0, to: bytes.count)
    }

    private init(_ bytes: [UInt8], from start: Int, to end: Int) {
        self.bytes = bytes
        self.position = start
        self.end = end
    }

    var isAtEnd: Bool { position == end }

    /// The contents of the next element if its (single-octet) tag is `tag`;
    /// the reader moves past the element.
    mutating func read(tag: UInt8) -> PKCS1DERReader? {
        guard position < end, bytes[position] == tag else { return nil }
        var cursor = position + 1
        guard let length = readLength(at: &cursor), length <= end - cursor else { return nil }
        let contents = PKCS1DERReader(bytes, from: cursor, to: cursor + length)
        position = cursor + length
        return contents
    }

    /// An INTEGER's magnitude, big-endian, for a non-negative value in its
    /// minimal encoding (X.690 §8.3.2: no leading 0x00 unless the next octet's
    /// high bit is set); nil for a negative or non-minimal INTEGER.
    mutating func readNonNegativeInteger() -> [UInt8]? {
        guard let contents = read(tag: 0x02) else { return nil }
        let value = Array(contents.bytes[contents.position ..< contents.end])
        guard let first = value.first else { return nil }
        if first & 0x80 != 0 { return nil }
        if first == 0, value.count > 1, value[1] & 0x80 == 0 { return nil }
        return value
    }

    /// X.690 §10.1: the short form for lengths below 128, otherwise the long
    /// form with as few octets as possible (at most four here: no RSA key
    /// comes near 2^32 bytes).
    private func readLength(at cursor: inout Int) -> Int? {
        guard cursor < end else { return nil }
        let first = bytes[cursor]
        cursor += 1
        if first < 0x80 { return Int(first) }
        let octetCount = Int(first & 0x7f)
        guard (1 ... 4).contains(octetCount), octetCount <= end - cursor else { return nil }
        guard bytes[cursor] != 0 else { return nil }
        var length = 0
        for _ in 0 ..< octetCount {
            length = length << 8 | Int(bytes[cursor])
            cursor += 1
        }
        guard length >= 0x80 else { return nil }
        return length
    }
}
