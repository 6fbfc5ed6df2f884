#if canImport(CryptoAVX2) && arch(x86_64)
internal import CryptoAVX2
#endif

/// The ChaCha20 stream cipher of RFC 8439 §2.3-2.4: a 256-bit key, a 96-bit
/// nonce and a 32-bit block counter expanded into 64-byte keystream blocks that
/// are XORed with the data.
///
/// Constant-time by construction (§4): the block function is only 32-bit
/// additions, XORs and fixed rotations, and no branch or memory index depends on
/// the key, the nonce or the data; the only branches are on the (public) length.
///
/// The key and nonce are loaded into words once, at `init`; the state of a block
/// lives in sixteen local words and the keystream of a block in a fixed-size
/// tuple on the stack, so encrypting allocates nothing per block. Runs of 512
/// bytes go eight blocks at a time when the CPU has AVX2
/// (`CryptoAcceleration`), runs of 256 four blocks at a time through SSE2's
/// lanes (ChaCha20+FourBlocks.swift), and the tail one block at a time.
struct ChaCha20 {
    static let keySize = 32
    static let nonceSize = 12
    static let blockSize = 64

    /// A ChaCha state or keystream block as its sixteen 32-bit words (§2.3).
    typealias Words = (
        UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32,
        UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32
    )

    // §2.3: words 0-3 of the state are "expand 32-byte k" read little-endian.
    private static let constant0: UInt32 = 0x6170_7865
    private static let constant1: UInt32 = 0x3320_646e
    private static let constant2: UInt32 = 0x7962_2d32
    private static let constant3: UInt32 = 0x6b20_6574

    // §2.3: words 4-11 are the key and words 13-15 the nonce, little-endian.
    // Internal, not private, for the four-block path in ChaCha20+FourBlocks.swift.
    let key0, key1, key2, key3, key4, key5, key6, key7: UInt32
    let nonce0, nonce1, nonce2: UInt32

    /// nil unless the key is 32 bytes and the nonce 12 bytes (§2.3).
    init?(key: [UInt8], nonce: [UInt8]) {
        guard key.count == Self.keySize, nonce.count == Self.nonceSize else { return nil }
        key0 = Self.littleEndianWord(key, at: 0)
        key1 = Self.littleEndianWord(key, at: 4)
        key2 = Self.littleEndianWord(key, at: 8)
        key3 = Self.littleEndianWord(key, at: 12)
        key4 = Self.littleEndianWord(key, at: 16)
        key5 = Self.littleEndianWord(key, at: 20)
        key6 = Self.littleEndianWord(key, at: 24)
        key7 = Self.littleEndianWord(key, at: 28)
        nonce0 = Self.littleEndianWord(nonce, at: 0)
        nonce1 = Self.littleEndianWord(nonce, at: 4)
        nonce2 = Self.littleEndianWord(nonce, at: 8)
    }

    /// Callers check `offset + 4 <= bytes.count` (both call sites pass fixed sizes validated above).
    private static func littleEndianWord(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }

    @inline(__always)
    private static func rotateLeft(_ word: UInt32, by count: UInt32) -> UInt32 {
        word &<< count | word &>> (32 &- count)
    }

    /// The quarter round of §2.1 on the words a, b, c, d.
    @inline(__always)
    static func quarterRound(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32) -> (UInt32, UInt32, UInt32, UInt32) {
        var (a, b, c, d) = (a, b, c, d)
        a &+= b; d ^= a; d = rotateLeft(d, by: 16)
        c &+= d; b ^= c; b = rotateLeft(b, by: 12)
        a &+= b; d ^= a; d = rotateLeft(d, by: 8)
        c &+= d; b ^= c; b = rotateLeft(b, by: 7)
        return (a, b, c, d)
    }

    /// The block function of §2.3: ten double rounds (a column round, then a
    /// diagonal round) over the state, then the input state added word-wise.
    /// Returns the sixteen output words, not yet serialized.
    @inline(__always)
    func block(counter: UInt32) -> Words {
        var (x0, x1, x2, x3) = (Self.constant0, Self.constant1, Self.constant2, Self.constant3)
        var (x4, x5, x6, x7) = (key0, key1, key2, key3)
        var (x8, x9, x10, x11) = (key4, key5, key6, key7)
        var (x12, x13, x14, x15) = (counter, nonce0, nonce1, nonce2)
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
            x0 &+ Self.constant0, x1 &+ Self.constant1, x2 &+ Self.constant2, x3 &+ Self.constant3,
            x4 &+ key0, x5 &+ key1, x6 &+ key2, x7 &+ key3,
            x8 &+ key4, x9 &+ key5, x10 &+ key6, x11 &+ key7,
            x12 &+ counter, x13 &+ nonce0, x14 &+ nonce1, x15 &+ nonce2
        )
    }

    /// The block of §2.3 serialized: each word in little-endian order. Kept as a
    /// tuple whose memory is exactly the 64 keystream bytes, so the XOR reads it
    /// with plain loads on any host byte order.
    @inline(__always)
    private func serializedBlock(counter: UInt32) -> Words {
        let w = block(counter: counter)
        return (
            w.0.littleEndian, w.1.littleEndian, w.2.littleEndian, w.3.littleEndian,
            w.4.littleEndian, w.5.littleEndian, w.6.littleEndian, w.7.littleEndian,
            w.8.littleEndian, w.9.littleEndian, w.10.littleEndian, w.11.littleEndian,
            w.12.littleEndian, w.13.littleEndian, w.14.littleEndian, w.15.littleEndian
        )
    }

    /// Whether `byteCount` bytes fit in the keystream from `initialCounter` on:
    /// the 32-bit counter must not wrap (§2.3, §2.8 note 1), so at most
    /// 2^32 - initialCounter blocks.
    static func canProcess(byteCount: Int, initialCounter: UInt32) -> Bool {
        guard byteCount >= 0 else { return false }
        let blocks = UInt64(byteCount / blockSize) + (byteCount % blockSize == 0 ? 0 : 1)
        return blocks <= (UInt64(1) << 32) - UInt64(initialCounter)
    }

    /// The encryption of §2.4 (its own inverse): XORs `bytes` in place with the
    /// keystream whose first block has counter `initialCounter` (§2.4.1, with
    /// the blocks taken eight or four at a time while 512 or 256 bytes remain).
    /// The caller has checked `canProcess(byteCount:initialCounter:)`; the
    /// counter wraps rather than traps if it did not. `eightLanes` is for the
    /// tests, which compare the paths.
    func xorKeyStream(_ bytes: UnsafeMutableRawBufferPointer, initialCounter: UInt32,
                      eightLanes: Bool = CryptoAcceleration.avx2) {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        var counter = initialCounter
        var offset = 0
        #if canImport(CryptoAVX2) && arch(x86_64)
        if eightLanes, count >= 8 * Self.blockSize {
            offset = chaCha20XorEightBlockRuns(base, byteCount: count, key: (key0, key1, key2, key3, key4, key5, key6, key7),
                                               nonce: (nonce0, nonce1, nonce2), counter: counter)
            counter &+= UInt32(truncatingIfNeeded: offset / Self.blockSize)
        }
        #endif
        while count - offset >= Self.fourBlockSize {
            xorFourBlocks(base + offset, counter: counter)
            counter &+= 4
            offset += Self.fourBlockSize
        }
        while count - offset >= Self.blockSize {
            var keyStream = serializedBlock(counter: counter)
            withUnsafeBytes(of: &keyStream) { keyStreamBytes in
                var i = 0
                while i < Self.blockSize {
                    let data = (base + offset + i).loadUnaligned(as: UInt64.self)
                    let mask = keyStreamBytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    (base + offset + i).storeBytes(of: data ^ mask, as: UInt64.self)
                    i += 8
                }
            }
            counter &+= 1
            offset += Self.blockSize
        }
        if offset < count {
            // §2.4: the keystream left over after the last partial block is discarded.
            var keyStream = serializedBlock(counter: counter)
            withUnsafeBytes(of: &keyStream) { keyStreamBytes in
                for i in 0 ..< (count - offset) {
                    let target = base + offset + i
                    target.storeBytes(of: target.load(as: UInt8.self) ^ keyStreamBytes[i], as: UInt8.self)
                }
            }
        }
    }
}
