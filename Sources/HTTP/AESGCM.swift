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
        var counter = nonce + [0, 0, 0, 1]
        var offset = 0
        while offset < input.count {
            increment(&counter)
            let stream = cipher.encryptBlock(counter)
            for i in 0 ..< min(16, input.count - offset) { output[offset + i] ^= stream[i] }
            offset += 16
        }
        return output
    }

    private static func increment(_ counter: inout [UInt8]) {
        for i in stride(from: 15, through: 12, by: -1) {
            counter[i] &+= 1
            if counter[i] != 0 { return }
        }
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

/// GHASH's multiplication in GF(2^128) (SP 800-38D §6.3), bit by bit: a few
/// hundred blocks per new QUIC flow do not need tables.
private struct GHash {
    let h: (UInt64, UInt64)

    init(_ key: [UInt8]) { h = GHash.load(key, 0) }

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
        var v = h
        for i in 0 ..< 128 {
            let word = i < 64 ? x.0 : x.1
            if word >> UInt64(63 - i % 64) & 1 == 1 { z = (z.0 ^ v.0, z.1 ^ v.1) }
            let carry = v.1 & 1
            v = (v.0 >> 1, v.1 >> 1 | v.0 << 63)
            if carry == 1 { v.0 ^= 0xe100_0000_0000_0000 }
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
