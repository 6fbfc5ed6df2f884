/// HKDF (RFC 5869), and TLS 1.3's HKDF-Expand-Label (RFC 8446 §7.1), which is
/// also how QUIC names its Initial secrets (RFC 9001 §5.2).
package enum HKDF<Hash: HashFunction> {
    package static func extract(salt: [UInt8], inputKeyingMaterial: [UInt8]) -> [UInt8] {
        HMAC<Hash>.authenticationCode(key: salt, message: inputKeyingMaterial)
    }

    /// `length` at most 255 digests (RFC 5869 §2.3); longer asks get that much.
    package static func expand(pseudorandomKey: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        var output: [UInt8] = []
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length, counter != 0 {
            previous = HMAC<Hash>.authenticationCode(key: pseudorandomKey, message: previous + info + [counter])
            output += previous
            counter &+= 1
        }
        return Array(output.prefix(length))
    }

    /// HkdfLabel (RFC 8446 §7.1): length (2 bytes), "tls13 " + label (1-byte
    /// length), context (1-byte length). QUIC's labels have an empty context;
    /// TLS's Derive-Secret passes a transcript hash.
    package static func expandLabel(secret: [UInt8], label: String, context: [UInt8] = [], length: Int) -> [UInt8] {
        let fullLabel = Array("tls13 \(label)".utf8)
        let info = [UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length), UInt8(truncatingIfNeeded: fullLabel.count)]
            + fullLabel + [UInt8(truncatingIfNeeded: context.count)] + context
        return expand(pseudorandomKey: secret, info: info, length: length)
    }
}
