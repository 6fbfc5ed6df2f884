/// HMAC (RFC 2104) over SHA-256.
enum HMACSHA256 {
    static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > SHA256.blockSize ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: SHA256.blockSize - block.count)
        let inner = SHA256.hash(block.map { $0 ^ 0x36 } + message)
        return SHA256.hash(block.map { $0 ^ 0x5c } + inner)
    }
}

/// HKDF (RFC 5869) with SHA-256, and TLS 1.3's HKDF-Expand-Label (RFC 8446
/// §7.1), which is how QUIC names its Initial secrets (RFC 9001 §5.2).
enum HKDF {
    static func extract(salt: [UInt8], inputKeyingMaterial: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticationCode(key: salt, message: inputKeyingMaterial)
    }

    /// `length` at most 255 × 32 bytes (RFC 5869 §2.3); longer asks get that much.
    static func expand(pseudorandomKey: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        var output: [UInt8] = []
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length, counter != 0 {
            previous = HMACSHA256.authenticationCode(key: pseudorandomKey, message: previous + info + [counter])
            output += previous
            counter &+= 1
        }
        return Array(output.prefix(length))
    }

    /// HkdfLabel: length (2 bytes), "tls13 " + label (1-byte length), an empty context.
    static func expandLabel(secret: [UInt8], label: String, length: Int) -> [UInt8] {
        let fullLabel = Array("tls13 \(label)".utf8)
        let info = [UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length), UInt8(truncatingIfNeeded: fullLabel.count)]
            + fullLabel + [0]
        return expand(pseudorandomKey: secret, info: info, length: length)
    }
}
