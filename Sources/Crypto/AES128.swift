/// The AES-128 block cipher, encryption only (FIPS 197): QUIC's Initial
/// packets use it in GCM for their payload and alone, on one block, for
/// header protection (RFC 9001 §5.4.3). Decrypting GCM needs only the
/// forward cipher. Not constant-time (table lookups by state bytes): the
/// keys it sees are derived from a connection ID on the wire, public by
/// design (RFC 9001 §5.2), so there is no secret to leak.
package struct AES128 {
    package static let blockSize = 16
    /// 11 round keys of 4 big-endian column words.
    private let roundKeys: [UInt32]

    /// Nil unless `key` holds 16 bytes.
    package init?(key: [UInt8]) {
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
    package func encryptBlock(_ block: [UInt8]) -> [UInt8] {
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
                p = p ^ AES128.double(p)
                q ^= q << 1
                q ^= q << 2
                q ^= q << 4
                if q & 0x80 != 0 { q ^= 0x09 }
                table[Int(p)] = q ^ rotateLeft(q, 1) ^ rotateLeft(q, 2) ^ rotateLeft(q, 3) ^ rotateLeft(q, 4) ^ 0x63
            } while p != 1
            table[0] = 0x63
            sbox = table
            let first = table.map { s -> UInt32 in
                let twice = AES128.double(s)
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
