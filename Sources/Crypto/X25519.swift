/// X25519 Diffie-Hellman (RFC 7748 §5, §6.1), the key-share group x25519 of
/// TLS 1.3 (RFC 8446 §4.2.8.2, §7.4.2). Keys and shared secrets are the
/// 32-byte little-endian strings of §5; the private key is any 32 random
/// bytes supplied by the caller, clamped here.
package enum X25519 {
    package static let keySize = 32

    /// The public key for a 32-byte private scalar: X25519(k, 9), the
    /// u-coordinate of k times the base point (§6.1). The scalar is clamped
    /// per §5. Returns nil if `privateKey` is not 32 bytes.
    package static func publicKey(privateKey: [UInt8]) -> [UInt8]? {
        guard let scalar = ClampedScalar(privateKey) else { return nil }
        return ladder(scalar: scalar, u: basePointU).canonicalBytes
    }

    /// The shared secret X25519(k, peer u-coordinate) (§6.1). Returns nil if
    /// either input is not 32 bytes, or if the result is all zeros: a peer
    /// that sends a low-order point forces that value, and RFC 8446 §7.4.2
    /// requires the abort (RFC 7748 §6.1 explains why). The peer's
    /// u-coordinate is decoded as §5 says: its top bit is ignored and values
    /// >= p are accepted and reduced.
    package static func sharedSecret(privateKey: [UInt8], peerPublicKey: [UInt8]) -> [UInt8]? {
        guard let scalar = ClampedScalar(privateKey),
              let u = Field25519(littleEndianBytes: peerPublicKey) else { return nil }
        let secret = ladder(scalar: scalar, u: u).canonicalBytes
        // OR every byte together rather than stopping at the first non-zero
        // one, so the time taken does not reveal where the secret's first
        // non-zero byte is.
        var accumulated: UInt8 = 0
        for byte in secret { accumulated |= byte }
        guard accumulated != 0 else { return nil }
        return secret
    }

    /// The base point's u-coordinate, 9 (§4.1).
    private static let basePointU = Field25519(smallValue: 9)

    /// (A - 2) / 4 for A = 486662, the constant of the ladder's doubling (§5).
    private static let a24: UInt32 = 121665

    /// The Montgomery ladder of §5: computes the u-coordinate of scalar·(u, ·)
    /// from projective (X : Z) pairs, with one constant-time conditional swap
    /// per scalar bit and the same field operations for every bit value.
    /// Works on stored-limb field elements only, so nothing allocates. Bit 255
    /// of the clamped scalar is 0, so the loop starts at bit 254 as in §5.
    private static func ladder(scalar: ClampedScalar, u: Field25519) -> Field25519 {
        let x1 = u
        var x2 = Field25519.one
        var z2 = Field25519.zero
        var x3 = u
        var z3 = Field25519.one
        var swap: UInt64 = 0

        for bitIndex in stride(from: 254, through: 0, by: -1) {
            let bit = scalar.bit(bitIndex)
            swap ^= bit
            Field25519.conditionalSwap(&x2, &x3, bit: swap)
            Field25519.conditionalSwap(&z2, &z3, bit: swap)
            swap = bit

            let a = x2 + z2
            let aa = a.squared()
            let b = x2 - z2
            let bb = b.squared()
            let e = aa - bb
            let c = x3 + z3
            let d = x3 - z3
            let da = d * a
            let cb = c * b
            x3 = (da + cb).squared()
            z3 = x1 * (da - cb).squared()
            x2 = aa * bb
            z2 = e * (aa + e.multiplied(bySmallValue: a24))
        }
        Field25519.conditionalSwap(&x2, &x3, bit: swap)
        Field25519.conditionalSwap(&z2, &z3, bit: swap)

        // x2 / z2. If z2 = 0 (low-order input point) the inverse is 0 and the
        // result is 0, which sharedSecret rejects.
        return x2 * z2.inverted()
    }
}

/// A private key decoded and clamped per §5 ("decodeScalar25519"): clear the
/// three low bits (the scalar becomes a multiple of the cofactor 8, so
/// small-subgroup components of the peer's point vanish), clear bit 255 and
/// set bit 254 (a fixed ladder length). Held as four 64-bit words so the
/// ladder reads bits without touching an array.
private struct ClampedScalar {
    private let w0: UInt64
    private let w1: UInt64
    private let w2: UInt64
    private let w3: UInt64

    /// Nil unless there are exactly 32 bytes.
    init?(_ bytes: [UInt8]) {
        guard bytes.count == X25519.keySize else { return nil }
        func word(_ index: Int) -> UInt64 {
            var value: UInt64 = 0
            for byteIndex in stride(from: 8 * index + 7, through: 8 * index, by: -1) {
                value = value << 8 | UInt64(bytes[byteIndex])
            }
            return value
        }
        w0 = word(0) & ~7
        w1 = word(1)
        w2 = word(2)
        w3 = word(3) & ~(1 << 63) | (1 << 62)
    }

    /// Bit `index` (0...255) as 0 or 1. The word is chosen by the bit's
    /// position, which is public (the loop counter), never by its value.
    @inline(__always)
    func bit(_ index: Int) -> UInt64 {
        let word: UInt64
        switch index >> 6 {
        case 0: word = w0
        case 1: word = w1
        case 2: word = w2
        default: word = w3
        }
        return (word >> UInt64(index & 63)) & 1
    }
}
