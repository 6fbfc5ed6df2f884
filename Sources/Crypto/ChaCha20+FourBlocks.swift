/// Four ChaCha20 blocks at once (RFC 8439 §2.3 unchanged): word i of blocks
/// counter, counter+1, counter+2, counter+3 share one `SIMD4<UInt32>`, so each
/// quarter round does four blocks' work in 128-bit vector instructions (SSE2 on
/// every x86-64, NEON on arm64). The operations are those of the scalar block
/// (wrapping add, XOR, fixed rotation), so it stays constant-time; only the
/// (public) length decides how many bytes take this path.
extension ChaCha20 {
    static let fourBlockSize = 4 * blockSize

    typealias FourWords = (
        SIMD4<UInt32>, SIMD4<UInt32>, SIMD4<UInt32>, SIMD4<UInt32>,
        SIMD4<UInt32>, SIMD4<UInt32>, SIMD4<UInt32>, SIMD4<UInt32>,
        SIMD4<UInt32>, SIMD4<UInt32>, SIMD4<UInt32>, SIMD4<UInt32>,
        SIMD4<UInt32>, SIMD4<UInt32>, SIMD4<UInt32>, SIMD4<UInt32>
    )

    /// A lane-wise rotation. Written with `&+` (the two shifted halves share no
    /// bit, so it equals `|`) because the `|` form is matched as a rotate per
    /// lane and, SSE2 having no vector rotate, split into four scalar `rol`s;
    /// this form stays two vector shifts and an add.
    @inline(__always)
    private static func rotateLeft(_ words: SIMD4<UInt32>, by count: UInt32) -> SIMD4<UInt32> {
        (words &<< count) &+ (words &>> (32 &- count))
    }

    /// §2.1's quarter round, lane-wise.
    @inline(__always)
    private static func quarterRound(_ a: SIMD4<UInt32>, _ b: SIMD4<UInt32>, _ c: SIMD4<UInt32>, _ d: SIMD4<UInt32>)
        -> (SIMD4<UInt32>, SIMD4<UInt32>, SIMD4<UInt32>, SIMD4<UInt32>) {
        var (a, b, c, d) = (a, b, c, d)
        a &+= b; d ^= a; d = rotateLeft(d, by: 16)
        c &+= d; b ^= c; b = rotateLeft(b, by: 12)
        a &+= b; d ^= a; d = rotateLeft(d, by: 8)
        c &+= d; b ^= c; b = rotateLeft(b, by: 7)
        return (a, b, c, d)
    }

    /// The §2.3 block function for counters counter ... counter + 3 (wrapping,
    /// as the caller has made sure the counter does not pass 2^32 - 1).
    @inline(__always)
    private func fourBlocks(counter: UInt32) -> FourWords {
        let input: FourWords = (
            SIMD4(repeating: 0x6170_7865), SIMD4(repeating: 0x3320_646e), SIMD4(repeating: 0x7962_2d32), SIMD4(repeating: 0x6b20_6574),
            SIMD4(repeating: key0), SIMD4(repeating: key1), SIMD4(repeating: key2), SIMD4(repeating: key3),
            SIMD4(repeating: key4), SIMD4(repeating: key5), SIMD4(repeating: key6), SIMD4(repeating: key7),
            SIMD4(repeating: counter) &+ SIMD4(0, 1, 2, 3), SIMD4(repeating: nonce0), SIMD4(repeating: nonce1), SIMD4(repeating: nonce2)
        )
        var (x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15) = input
        for _ in 0 ..< 10 {
            (x0, x4, x8, x12) = Self.quarterRound(x0, x4, x8, x12)
            (x1, x5, x9, x13) = Self.quarterRound(x1, x5, x9, x13)
            (x2, x6, x10, x14) = Self.quarterRound(x2, x6, x10, x14)
            (x3, x7, x11, x15) = Self.quarterRound(x3, x7, x11, x15)
            (x0, x5, x10, x15) = Self.quarterRound(x0, x5, x10, x15)
            (x1, x6, x11, x12) = Self.quarterRound(x1, x6, x11, x12)
            (x2, x7, x8, x13) = Self.quarterRound(x2, x7, x8, x13)
            (x3, x4, x9, x14) = Self.quarterRound(x3, x4, x9, x14)
        }
        return (
            x0 &+ input.0, x1 &+ input.1, x2 &+ input.2, x3 &+ input.3,
            x4 &+ input.4, x5 &+ input.5, x6 &+ input.6, x7 &+ input.7,
            x8 &+ input.8, x9 &+ input.9, x10 &+ input.10, x11 &+ input.11,
            x12 &+ input.12, x13 &+ input.13, x14 &+ input.14, x15 &+ input.15
        )
    }

    /// XORs the 256 bytes at `base` with the keystream blocks counter ... counter + 3.
    /// The sixteen vectors sit on the stack; word i of block j is lane j of vector i.
    @inline(__always)
    func xorFourBlocks(_ base: UnsafeMutableRawPointer, counter: UInt32) {
        var keyStream = fourBlocks(counter: counter)
        withUnsafeBytes(of: &keyStream) { words in
            for block in 0 ..< 4 {
                let target = base + block * Self.blockSize
                for word in 0 ..< 16 {
                    let mask = words.load(fromByteOffset: word * 16 + block * 4, as: UInt32.self)
                    let data = (target + word * 4).loadUnaligned(as: UInt32.self)
                    // §2.3 serializes each word little-endian.
                    (target + word * 4).storeBytes(of: data ^ mask.littleEndian, as: UInt32.self)
                }
            }
        }
    }
}
