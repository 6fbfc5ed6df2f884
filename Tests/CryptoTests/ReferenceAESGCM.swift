import TestSupport
// The project's previous AES-128 and AES-128-GCM (Sources/Crypto/AES128.swift
// and AESGCM.swift before the rewrite), renamed and kept in the test target
// only, as a slow, independently written reference: it builds its tables
// and multiplies in GF(2^128) by 4-bit tables (Shoup), where the new code
// uses bit-class integer multiplication, so agreement between the two on
// every length is evidence for both.

/// The AES-128 block cipher, encryption only (FIPS 197): QUIC's Initial
/// packets use it in GCM for their payload and alone, on one block, for
/// header protection (RFC 9001 §5.4.3). Decrypting GCM needs only the
/// forward cipher. Not constant-time (table lookups by state bytes): the
/// keys it sees are derived from a connection ID on the wire, public by
/// design (RFC 9001 §5.2), so there is no secret to leak.
struct ReferenceAES128 {
    static let blockSize = 16
    /// 11 round keys of 4 big-endian column words.
    private let roundKeys: [UInt32]

    /// Nil unless `key` holds 16 bytes.
    init?(key: [UInt8]) {
        guard key.count == 16 else { return nil }
        // §5.2 KeyExpansion: each word is the one four back xored with the
        // previous word, which at the start of each round key is rotated,
        // substituted and xored with the round constant.
        var words: [UInt32] = []
        for i in 0 ..< 4 {
            let high = UInt32(key[4 * i]) << 24 | UInt32(key[4 * i + 1]) << 16
            words.append(high | UInt32(key[4 * i + 2]) << 8 | UInt32(key[4 * i + 3]))
        }
        words.reserveCapacity(44)
        var roundConstant: UInt8 = 1
        for i in 4 ..< 44 {
            var word = words[i - 1]
            if i % 4 == 0 {
                word = Self.substitute(word << 8 | word >> 24) ^ UInt32(roundConstant) << 24
                roundConstant = Self.double(roundConstant)
            }
            words.append(words[i - 4] ^ word)
        }
        roundKeys = words
    }

    /// One 16-byte block (fewer or more bytes: the first 16, zero-padded).
    func encryptBlock(_ block: [UInt8]) -> [UInt8] {
        func word(_ i: Int) -> UInt32 {
            var w: UInt32 = 0
            for j in 0 ..< 4 { w = w << 8 | UInt32(4 * i + j < block.count ? block[4 * i + j] : 0) }
            return w
        }
        let out = encrypt((word(0), word(1), word(2), word(3)))
        var bytes = [UInt8](repeating: 0, count: 16)
        for (i, w) in [out.0, out.1, out.2, out.3].enumerated() {
            bytes[4 * i] = UInt8(w >> 24)
            bytes[4 * i + 1] = UInt8(w >> 16 & 0xff)
            bytes[4 * i + 2] = UInt8(w >> 8 & 0xff)
            bytes[4 * i + 3] = UInt8(w & 0xff)
        }
        return bytes
    }

    /// One block as four big-endian column words. Each middle round is
    /// SubBytes, ShiftRows and MixColumns at once through `Tables` (a
    /// column of the result is four lookups, one per row, from the columns
    /// ShiftRows brings there); the last round skips MixColumns.
    func encrypt(_ block: (UInt32, UInt32, UInt32, UInt32)) -> (UInt32, UInt32, UInt32, UInt32) {
        let t = Tables.shared
        var s0 = block.0 ^ roundKeys[0], s1 = block.1 ^ roundKeys[1], s2 = block.2 ^ roundKeys[2], s3 = block.3 ^ roundKeys[3]
        for round in 1 ..< 10 {
            let k = 4 * round
            let n0 = t.column(s0, s1, s2, s3) ^ roundKeys[k]
            let n1 = t.column(s1, s2, s3, s0) ^ roundKeys[k + 1]
            let n2 = t.column(s2, s3, s0, s1) ^ roundKeys[k + 2]
            let n3 = t.column(s3, s0, s1, s2) ^ roundKeys[k + 3]
            (s0, s1, s2, s3) = (n0, n1, n2, n3)
        }
        return (t.lastColumn(s0, s1, s2, s3) ^ roundKeys[40], t.lastColumn(s1, s2, s3, s0) ^ roundKeys[41],
                t.lastColumn(s2, s3, s0, s1) ^ roundKeys[42], t.lastColumn(s3, s0, s1, s2) ^ roundKeys[43])
    }

    /// Multiplication by x in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1.
    static func double(_ b: UInt8) -> UInt8 { b << 1 ^ (b & 0x80 != 0 ? 0x1b : 0) }

    private static func substitute(_ w: UInt32) -> UInt32 {
        Tables.shared.lastColumn(w, w, w, w)
    }

    /// The S-box and, for each byte value x, the column MixColumns makes of
    /// S(x) in each row: (2·S, S, S, 3·S) rotated by the row.
    private struct Tables: Sendable {
        let sbox: [UInt8]
        /// Four tables of 256, one per row, one after the other.
        let mixed: [UInt32]

        static let shared = Tables()

        init() {
            // §5.1.1: the multiplicative inverse in GF(2^8), then the affine
            // map. The field's elements are walked as powers of 3 (a
            // generator): p runs through 3^k and q through 3^-k, so q is p's
            // inverse.
            var table = [UInt8](repeating: 0, count: 256)
            var p: UInt8 = 1, q: UInt8 = 1
            func rotateLeft(_ x: UInt8, _ n: UInt8) -> UInt8 { x << n | x >> (8 - n) }
            repeat {
                p = p ^ ReferenceAES128.double(p)
                q ^= q << 1
                q ^= q << 2
                q ^= q << 4
                if q & 0x80 != 0 { q ^= 0x09 }
                table[Int(p)] = q ^ rotateLeft(q, 1) ^ rotateLeft(q, 2) ^ rotateLeft(q, 3) ^ rotateLeft(q, 4) ^ 0x63
            } while p != 1
            table[0] = 0x63
            sbox = table
            let first = table.map { s -> UInt32 in
                let twice = ReferenceAES128.double(s)
                return UInt32(twice) << 24 | UInt32(s) << 16 | UInt32(s) << 8 | UInt32(twice ^ s)
            }
            var rows: [UInt32] = first
            for row in 1 ..< 4 {
                let shift = UInt32(8 * row)
                rows += first.map { $0 >> shift | $0 << (32 - shift) }
            }
            mixed = rows
        }

        /// A middle round's output column from the columns whose bytes ShiftRows brings to it.
        @inline(__always)
        func column(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32) -> UInt32 {
            let high = mixed[Int(a >> 24)] ^ mixed[256 + Int(b >> 16 & 0xff)]
            return high ^ mixed[512 + Int(c >> 8 & 0xff)] ^ mixed[768 + Int(d & 0xff)]
        }

        @inline(__always)
        func lastColumn(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32) -> UInt32 {
            let high = UInt32(sbox[Int(a >> 24)]) << 24 | UInt32(sbox[Int(b >> 16 & 0xff)]) << 16
            return high | UInt32(sbox[Int(c >> 8 & 0xff)]) << 8 | UInt32(sbox[Int(d & 0xff)])
        }
    }
}
/// AES-128-GCM (NIST SP 800-38D) with a 96-bit nonce and a 16-byte tag,
/// QUIC's Initial AEAD (RFC 9001 §5.3). `open` checks the tag before it
/// returns anything: a datagram that only looks like a QUIC Initial fails
/// here instead of being read as one.
enum ReferenceAESGCM {
    static let tagSize = 16
    static let nonceSize = 12

    static func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8], additionalData: [UInt8]) -> (ciphertext: [UInt8], tag: [UInt8])? {
        guard let cipher = ReferenceAES128(key: key), nonce.count == nonceSize else { return nil }
        let ciphertext = counterMode(cipher, nonce: nonce, plaintext)
        return (ciphertext, tag(cipher, nonce: nonce, ciphertext: ciphertext, additionalData: additionalData))
    }

    /// Nil when the tag does not verify (or a size is wrong).
    static func open(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], tag expected: [UInt8], additionalData: [UInt8]) -> [UInt8]? {
        guard let cipher = ReferenceAES128(key: key), nonce.count == nonceSize, expected.count == tagSize else { return nil }
        let computed = tag(cipher, nonce: nonce, ciphertext: ciphertext, additionalData: additionalData)
        var difference: UInt8 = 0
        for i in 0 ..< tagSize { difference |= computed[i] ^ expected[i] }
        guard difference == 0 else { return nil }
        return counterMode(cipher, nonce: nonce, ciphertext)
    }

    /// GCTR from inc32(J0), J0 = nonce || 0^31 || 1 (§7.1).
    private static func counterMode(_ cipher: ReferenceAES128, nonce: [UInt8], _ input: [UInt8]) -> [UInt8] {
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
    private static func tag(_ cipher: ReferenceAES128, nonce: [UInt8], ciphertext: [UInt8], additionalData: [UInt8]) -> [UInt8] {
        let h = cipher.encryptBlock([UInt8](repeating: 0, count: 16))
        let hash = ReferenceGHash(h)
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
struct ReferenceGHash {
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
        var v = ReferenceGHash.load(key, 0)
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
            let block = ReferenceGHash.load(bytes, offset)
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
            z = (z.0 >> 4 ^ ReferenceGHash.reduction[out], z.1 >> 4 | z.0 << 60)
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
