/// The AES-128 block cipher, encryption only (FIPS 197). It carries
/// AES-128-GCM (QUIC Initials, RFC 9001 §5.3, and TLS 1.3 records,
/// RFC 8446 §5.2) and, alone on one block, QUIC header protection
/// (RFC 9001 §5.4.3). GCM decrypts with the forward cipher, so there is no
/// inverse cipher.
///
/// Not constant-time: each round looks tables up by state bytes, so a
/// process sharing the CPU's caches could learn key bits from timing. For
/// QUIC Initials the keys are public by design (derived from a connection ID
/// on the wire, RFC 9001 §5.2); for TLS the server prefers
/// ChaCha20-Poly1305, which has no secret-dependent lookups, and AES-GCM
/// serves only peers that insist on it.
package struct AES128: Sendable {
    package static let blockSize = 16
    /// Nk = 4 words of key, Nr = 10 rounds, Nb·(Nr + 1) = 44 words of key schedule (§5.2).
    private static let keyScheduleWordCount = 44
    /// 11 round keys of 4 big-endian column words, expanded once per key.
    private let roundKeys: [UInt32]

    /// Nil unless `key` holds 16 bytes.
    package init?(key: [UInt8]) {
        guard key.count == 16 else { return nil }
        // §5.2 KeyExpansion: each word is the one four back xored with the
        // previous word, which at the start of each round key is rotated,
        // substituted and xored with the round constant.
        let sbox = Tables.shared.sbox
        func subWord(_ w: UInt32) -> UInt32 {
            UInt32(sbox[Int(w >> 24)]) << 24 | UInt32(sbox[Int(w >> 16 & 0xff)]) << 16
                | UInt32(sbox[Int(w >> 8 & 0xff)]) << 8 | UInt32(sbox[Int(w & 0xff)])
        }
        var words = [UInt32](repeating: 0, count: Self.keyScheduleWordCount)
        for i in 0 ..< 4 {
            words[i] = UInt32(key[4 * i]) << 24 | UInt32(key[4 * i + 1]) << 16 | UInt32(key[4 * i + 2]) << 8 | UInt32(key[4 * i + 3])
        }
        var roundConstant: UInt8 = 1
        for i in 4 ..< Self.keyScheduleWordCount {
            var word = words[i - 1]
            if i % 4 == 0 {
                word = subWord(word << 8 | word >> 24) ^ UInt32(roundConstant) << 24
                roundConstant = Self.double(roundConstant)
            }
            words[i] = words[i - 4] ^ word
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

    /// One block as four big-endian column words.
    func encrypt(_ block: (UInt32, UInt32, UInt32, UInt32)) -> (UInt32, UInt32, UInt32, UInt32) {
        withEncryptor { $0.encrypt(block) }
    }

    /// Runs `body` with the round keys and tables pinned, so a caller that
    /// encrypts many blocks (GCM's counter mode) pays for reaching the arrays
    /// once per call, not per block. The encryptor must not escape `body`.
    func withEncryptor<Result>(_ body: (Encryptor) -> Result) -> Result {
        roundKeys.withUnsafeBufferPointer { keys in
            Tables.shared.mixed.withUnsafeBufferPointer { mixed in
                Tables.shared.sbox.withUnsafeBufferPointer { sbox in
                    // The arrays are never empty (44, 1024 and 256 elements).
                    body(Encryptor(roundKeys: keys.baseAddress!, mixed: mixed.baseAddress!, sbox: sbox.baseAddress!))
                }
            }
        }
    }

    /// The cipher of §5.1 over pointers to the key schedule and the tables,
    /// valid only inside `withEncryptor`. Each middle round is SubBytes,
    /// ShiftRows, MixColumns and AddRoundKey at once: a column of the result
    /// is four lookups, one per row, from the columns ShiftRows brings there,
    /// xored with the round key; the last round skips MixColumns (§5.1).
    struct Encryptor {
        let roundKeys: UnsafePointer<UInt32>
        let mixed: UnsafePointer<UInt32>
        let sbox: UnsafePointer<UInt8>

        @inline(__always)
        func encrypt(_ block: (UInt32, UInt32, UInt32, UInt32)) -> (UInt32, UInt32, UInt32, UInt32) {
            rounds((block.0 ^ roundKeys[0], block.1 ^ roundKeys[1], block.2 ^ roundKeys[2], block.3 ^ roundKeys[3]), from: 1)
        }

        /// Rounds `first` through 9, then the final round, on a state that
        /// has been through the rounds before `first`.
        @inline(__always)
        private func rounds(_ state: (UInt32, UInt32, UInt32, UInt32), from first: Int) -> (UInt32, UInt32, UInt32, UInt32) {
            var (s0, s1, s2, s3) = state
            var k = 4 * first
            for _ in first ..< 10 {
                let n0 = column(s0, s1, s2, s3) ^ roundKeys[k]
                let n1 = column(s1, s2, s3, s0) ^ roundKeys[k + 1]
                let n2 = column(s2, s3, s0, s1) ^ roundKeys[k + 2]
                let n3 = column(s3, s0, s1, s2) ^ roundKeys[k + 3]
                (s0, s1, s2, s3) = (n0, n1, n2, n3)
                k += 4
            }
            return (lastColumn(s0, s1, s2, s3) ^ roundKeys[40], lastColumn(s1, s2, s3, s0) ^ roundKeys[41],
                    lastColumn(s2, s3, s0, s1) ^ roundKeys[42], lastColumn(s3, s0, s1, s2) ^ roundKeys[43])
        }

        /// What rounds 1 and 2 of the counter blocks (IV words, counter)
        /// share while only the counter's low byte changes, as GCM's counter
        /// does from block to block. In round 1 that byte reaches only
        /// column 0 (one lookup); in round 2 that column reaches each column
        /// through one lookup. Caching the other lookups saves 27 of a
        /// block's 160 (the counter-mode caching of Bernstein and Schwabe,
        /// "New AES software speed records", 2008).
        struct CounterBlockPrefix {
            /// Round 1's column 0 without the lookup of the counter's low byte.
            let firstRoundColumn0: UInt32
            /// Round 2's columns without their lookup of round 1's column 0.
            let secondRound: (UInt32, UInt32, UInt32, UInt32)
        }

        /// The prefix for the 256 counters that share `counter`'s upper 24 bits.
        @inline(__always)
        func counterBlockPrefix(nonce: (UInt32, UInt32, UInt32), counter: UInt32) -> CounterBlockPrefix {
            let s0 = nonce.0 ^ roundKeys[0], s1 = nonce.1 ^ roundKeys[1], s2 = nonce.2 ^ roundKeys[2], s3 = counter ^ roundKeys[3]
            let m0 = mixed[Int(s0 >> 24)] ^ mixed[256 + Int(s1 >> 16 & 0xff)] ^ mixed[512 + Int(s2 >> 8 & 0xff)] ^ roundKeys[4]
            let m1 = column(s1, s2, s3, s0) ^ roundKeys[5]
            let m2 = column(s2, s3, s0, s1) ^ roundKeys[6]
            let m3 = column(s3, s0, s1, s2) ^ roundKeys[7]
            return CounterBlockPrefix(
                firstRoundColumn0: m0,
                secondRound: (
                    mixed[256 + Int(m1 >> 16 & 0xff)] ^ mixed[512 + Int(m2 >> 8 & 0xff)] ^ mixed[768 + Int(m3 & 0xff)] ^ roundKeys[8],
                    mixed[Int(m1 >> 24)] ^ mixed[256 + Int(m2 >> 16 & 0xff)] ^ mixed[512 + Int(m3 >> 8 & 0xff)] ^ roundKeys[9],
                    mixed[Int(m2 >> 24)] ^ mixed[256 + Int(m3 >> 16 & 0xff)] ^ mixed[768 + Int(m1 & 0xff)] ^ roundKeys[10],
                    mixed[Int(m3 >> 24)] ^ mixed[512 + Int(m1 >> 8 & 0xff)] ^ mixed[768 + Int(m2 & 0xff)] ^ roundKeys[11]
                )
            )
        }

        /// CIPH_K(IV || counter), for a counter whose upper 24 bits are
        /// those `prefix` was made for: equal to `encrypt`.
        @inline(__always)
        func encryptCounterBlock(_ prefix: CounterBlockPrefix, counter: UInt32) -> (UInt32, UInt32, UInt32, UInt32) {
            let m0 = prefix.firstRoundColumn0 ^ mixed[768 + Int((counter ^ roundKeys[3]) & 0xff)]
            return rounds((
                prefix.secondRound.0 ^ mixed[Int(m0 >> 24)],
                prefix.secondRound.1 ^ mixed[768 + Int(m0 & 0xff)],
                prefix.secondRound.2 ^ mixed[512 + Int(m0 >> 8 & 0xff)],
                prefix.secondRound.3 ^ mixed[256 + Int(m0 >> 16 & 0xff)]
            ), from: 3)
        }

        /// A middle round's output column: row r's byte comes from column
        /// (c + r) mod 4 after ShiftRows (§5.1.2).
        @inline(__always)
        private func column(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32) -> UInt32 {
            mixed[Int(a >> 24)] ^ mixed[256 + Int(b >> 16 & 0xff)]
                ^ mixed[512 + Int(c >> 8 & 0xff)] ^ mixed[768 + Int(d & 0xff)]
        }

        @inline(__always)
        private func lastColumn(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32) -> UInt32 {
            UInt32(sbox[Int(a >> 24)]) << 24 | UInt32(sbox[Int(b >> 16 & 0xff)]) << 16
                | UInt32(sbox[Int(c >> 8 & 0xff)]) << 8 | UInt32(sbox[Int(d & 0xff)])
        }
    }

    /// Multiplication by x in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1 (§4.2.1, xtime).
    static func double(_ b: UInt8) -> UInt8 { b << 1 ^ (b & 0x80 != 0 ? 0x1b : 0) }

    /// The S-box and, for each byte value x, the column MixColumns makes of
    /// S(x) in each row: (2·S, S, S, 3·S) rotated by the row (§5.1.1, §5.1.3).
    /// Built once per process, on first use.
    private struct Tables: Sendable {
        let sbox: [UInt8]
        /// Four tables of 256, one per row, one after the other (4 KiB).
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
    }
}
