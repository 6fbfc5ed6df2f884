/// AES-128-GCM (NIST SP 800-38D) with a 96-bit nonce and a 16-byte tag,
/// QUIC's Initial AEAD (RFC 9001 §5.3). `open` checks the tag before it
/// returns anything: a datagram that only looks like a QUIC Initial fails
/// here instead of being read as one.
package enum AESGCM {
    package static let tagSize = 16
    package static let nonceSize = 12

    package static func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8], additionalData: [UInt8]) -> (ciphertext: [UInt8], tag: [UInt8])? {
        guard let cipher = AES128(key: key), nonce.count == nonceSize else { return nil }
        let ciphertext = counterMode(cipher, nonce: nonce, plaintext)
        return (ciphertext, tag(cipher, nonce: nonce, ciphertext: ciphertext, additionalData: additionalData))
    }

    /// Nil when the tag does not verify (or a size is wrong).
    package static func open(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], tag expected: [UInt8], additionalData: [UInt8]) -> [UInt8]? {
        guard let cipher = AES128(key: key), nonce.count == nonceSize, expected.count == tagSize else { return nil }
        let computed = tag(cipher, nonce: nonce, ciphertext: ciphertext, additionalData: additionalData)
        var difference: UInt8 = 0
        for i in 0 ..< tagSize { difference |= computed[i] ^ expected[i] }
        guard difference == 0 else { return nil }
        return counterMode(cipher, nonce: nonce, ciphertext)
    }

    /// GCTR from inc32(J0), J0 = nonce || 0^31 || 1 (§7.1).
    private static func counterMode(_ cipher: AES128, nonce: [UInt8], _ input: [UInt8]) -> [UInt8] {
        var output = input
        func word(_ i: Int) -> UInt32 {
            UInt32(nonce[i]) << 24 | UInt32(nonce[i + 1]) << 16 | UInt32(nonce[i + 2]) << 8 | UInt32(nonce[i + 3])
        }
        let (n0, n1, n2) = (word(0), word(4), word(8))
        var counter: UInt32 = 1
        var offset = 0
        while offset < input.count {
            counter &+= 1
            let stream = cipher.encrypt((n0, n1, n2, counter))
            for w in 0 ..< 4 {
                let value = w == 0 ? stream.0 : w == 1 ? stream.1 : w == 2 ? stream.2 : stream.3
                for b in 0 ..< 4 where offset + 4 * w + b < input.count {
                    output[offset + 4 * w + b] ^= UInt8(truncatingIfNeeded: value >> UInt32(24 - 8 * b))
                }
            }
            offset += 16
        }
        return output
    }

    /// E(K, J0) xor GHASH(H, A || C || len(A) || len(C)).
    private static func tag(_ cipher: AES128, nonce: [UInt8], ciphertext: [UInt8], additionalData: [UInt8]) -> [UInt8] {
        let h = cipher.encryptBlock([UInt8](repeating: 0, count: 16))
        let hash = GHash(h)
        var x: (UInt64, UInt64) = (0, 0)
        hash.absorb(additionalData, into: &x)
        hash.absorb(ciphertext, into: &x)
        x = hash.multiply((x.0 ^ UInt64(additionalData.count) &* 8, x.1 ^ UInt64(ciphertext.count) &* 8))
        let mask = cipher.encryptBlock(nonce + [0, 0, 0, 1])
        var tag = [UInt8](repeating: 0, count: 16)
        for i in 0 ..< 8 {
            tag[i] = UInt8(truncatingIfNeeded: x.0 >> UInt64(56 - 8 * i)) ^ mask[i]
            tag[8 + i] = UInt8(truncatingIfNeeded: x.1 >> UInt64(56 - 8 * i)) ^ mask[8 + i]
        }
        return tag
    }
}

/// GHASH's multiplication by H in GF(2^128) (SP 800-38D §6.3), four bits
/// at a time: 16 multiples of H, made once per key, and Horner's rule over
/// the block's 32 nibbles, last to first. GCM's bit order puts x^0 at the
/// top of the first byte, so multiplying by x is a right shift.
private struct GHash {
    /// i·H for each 4-bit i: high words, then low words. A nibble's top bit is its lowest power.
    private var high = [UInt64](repeating: 0, count: 16)
    private var low = [UInt64](repeating: 0, count: 16)

    /// What four shifted-out bits reduce to (x^128 = x^7 + x^2 + x + 1), in the high word:
    /// bit t leaves at step t and moves 3 - t more.
    private static let reduction: [UInt64] = (0 ..< 16).map { bits in
        var r: UInt64 = 0
        for t in 0 ..< 4 where bits >> t & 1 == 1 { r ^= 0xe100_0000_0000_0000 >> UInt64(3 - t) }
        return r
    }

    init(_ key: [UInt8]) {
        var v = GHash.load(key, 0)
        for bit in [8, 4, 2, 1] {
            (high[bit], low[bit]) = v
            // v·x
            let carry = v.1 & 1
            v = (v.0 >> 1, v.1 >> 1 | v.0 << 63)
            if carry == 1 { v.0 ^= 0xe100_0000_0000_0000 }
        }
        for i in 1 ..< 16 where i & (i - 1) != 0 {
            let top = 1 << (Int.bitWidth - 1 - i.leadingZeroBitCount)
            high[i] = high[top] ^ high[i ^ top]
            low[i] = low[top] ^ low[i ^ top]
        }
    }

    /// X = (X xor block) · H for each 16-byte block of `bytes`, the last zero-padded.
    func absorb(_ bytes: [UInt8], into x: inout (UInt64, UInt64)) {
        var offset = 0
        while offset < bytes.count {
            let block = GHash.load(bytes, offset)
            x = multiply((x.0 ^ block.0, x.1 ^ block.1))
            offset += 16
        }
    }

    func multiply(_ x: (UInt64, UInt64)) -> (UInt64, UInt64) {
        var z: (UInt64, UInt64) = (0, 0)
        for k in stride(from: 31, through: 0, by: -1) {
            let word = k < 16 ? x.0 : x.1
            let nibble = Int(word >> UInt64(60 - 4 * (k % 16)) & 0xf)
            // z·x^4, then + nibble·H.
            let out = Int(z.1 & 0xf)
            z = (z.0 >> 4 ^ GHash.reduction[out], z.1 >> 4 | z.0 << 60)
            z = (z.0 ^ high[nibble], z.1 ^ low[nibble])
        }
        return z
    }

    /// 16 bytes from `offset` as two big-endian words; missing bytes are zeros.
    static func load(_ bytes: [UInt8], _ offset: Int) -> (UInt64, UInt64) {
        var words: (UInt64, UInt64) = (0, 0)
        for i in 0 ..< 16 {
            let byte = offset + i < bytes.count ? UInt64(bytes[offset + i]) : 0
            if i < 8 { words.0 |= byte << UInt64(56 - 8 * i) } else { words.1 |= byte << UInt64(120 - 8 * i) }
        }
        return words
    }
}
