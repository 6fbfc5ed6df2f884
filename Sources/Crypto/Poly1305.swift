#if canImport(CryptoAVX2) && arch(x86_64)
internal import CryptoAVX2
#endif

/// The Poly1305 one-time authenticator of RFC 8439 §2.5: the message, read as
/// 16-byte little-endian blocks each with a bit set above its last byte, is
/// evaluated as a polynomial at the clamped key half `r` modulo p = 2^130 - 5,
/// and the other key half `s` is added modulo 2^128.
///
/// Representation: the accumulator is three 64-bit limbs (h0 + h1·2^64 + h2·2^128,
/// h2 a few bits) and `r` two 64-bit limbs, multiplied with full 64×64→128-bit
/// products (`UInt128`, one `mul` instruction on x86-64 and `mul`/`umulh` on
/// arm64). That is six multiplications per block where 26-bit limbs need
/// twenty-five, and the carries are 128-bit additions (add/adc), so there is no
/// data-dependent branch or index anywhere: constant time by construction (§4).
/// The clamping of §2.5 is what makes it fit: r0, r1 < 2^60 and r1 ≡ 0 (mod 4),
/// so the term h1·r1·2^128 = h1·(r1/4)·2^130 folds to h1·(5·r1/4) without a
/// division, and no 128-bit sum below can overflow (bounds at each step).
struct Poly1305 {
    static let keySize = 32
    static let tagSize = 16
    static let blockSize = 16

    /// The clamped `r` of §2.5, low and high 64 bits.
    private let r0, r1: UInt64
    /// 5·r1/4 = r1 + r1/4 (exact, since clamping clears r1's two low bits): the
    /// multiplier of a limb that lands at or above 2^130, because 2^130 ≡ 5 (mod p).
    private let r1TimesFiveQuarters: UInt64
    /// The `s` of §2.5, low and high 64 bits.
    private let s0, s1: UInt64
    /// The accumulator, kept below 2^130 + 2^65 (< 2p) between blocks: h2 ≤ 4.
    private var h0: UInt64 = 0, h1: UInt64 = 0, h2: UInt64 = 0

    /// The key as four little-endian 64-bit words: r (r0, r1) then s (s0, s1).
    /// Clamps r as §2.5 requires.
    init(r0: UInt64, r1: UInt64, s0: UInt64, s1: UInt64) {
        // §2.5: r &= 0x0ffffffc0ffffffc0ffffffc0fffffff
        self.r0 = r0 & 0x0fff_fffc_0fff_ffff
        self.r1 = r1 & 0x0fff_fffc_0fff_fffc
        self.r1TimesFiveQuarters = self.r1 &+ (self.r1 &>> 2)
        self.s0 = s0
        self.s1 = s1
    }

    /// nil unless the one-time key is 32 bytes.
    init?(key: [UInt8]) {
        guard key.count == Self.keySize else { return nil }
        let words = key.withUnsafeBytes { bytes in
            (
                UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
                UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
            )
        }
        self.init(r0: words.0, r1: words.1, s0: words.2, s1: words.3)
    }

    /// One step of §2.5: Acc = ((Acc + block) · r) mod p, only partially reduced.
    /// `block` is the 128-bit little-endian number read from 16 bytes and
    /// `highBit` is 1 when the 2^128 bit of a full block is added, 0 when the
    /// caller has already placed the 0x01 byte of a short final block.
    @inline(__always)
    mutating func absorbBlock(low: UInt64, high: UInt64, highBit: UInt64) {
        // Acc += block. h2 ≤ 4 before, so h2 ≤ 6 after.
        let sum0 = UInt128(h0) &+ UInt128(low)
        let sum1 = UInt128(h1) &+ UInt128(high) &+ (sum0 &>> 64)
        let a0 = UInt64(truncatingIfNeeded: sum0)
        let a1 = UInt64(truncatingIfNeeded: sum1)
        let a2 = h2 &+ highBit &+ UInt64(truncatingIfNeeded: sum1 &>> 64)

        // (a0 + a1·2^64 + a2·2^128)(r0 + r1·2^64), with every product at or above
        // 2^130 folded down by 2^130 ≡ 5: a1·r1·2^128 → a1·(5r1/4) at 2^0 and
        // a2·r1·2^192 → a2·(5r1/4) at 2^64.
        // d0 < 2^124 + 2^125, d1 < 2^125 + 2^64, d2 < 6·2^60: no wrap.
        let d0 = UInt128(a0) &* UInt128(r0) &+ UInt128(a1) &* UInt128(r1TimesFiveQuarters)
        let d1 = UInt128(a0) &* UInt128(r1) &+ UInt128(a1) &* UInt128(r0) &+ UInt128(a2 &* r1TimesFiveQuarters)
        let d2 = a2 &* r0

        // Carry d0 into d1 and d1 into the limb at 2^128 (top < 6·2^60 + 2^61 + 2 = 2^63 + 2).
        let t1 = d1 &+ (d0 &>> 64)
        let top = d2 &+ UInt64(truncatingIfNeeded: t1 &>> 64)

        // Partial reduction: the bits of `top` at 2^130 and above, times 5, go back
        // to the bottom ((top >> 2)·5 < 2^64).
        let folded = UInt128(UInt64(truncatingIfNeeded: d0)) &+ UInt128((top &>> 2) &* 5)
        let carried = UInt128(UInt64(truncatingIfNeeded: t1)) &+ (folded &>> 64)
        h0 = UInt64(truncatingIfNeeded: folded)
        h1 = UInt64(truncatingIfNeeded: carried)
        h2 = (top & 3) &+ UInt64(truncatingIfNeeded: carried &>> 64)
    }

    /// The accumulator's limbs and the clamped r, for the four-lane path
    /// (and the fuzz harness that compares it with this one).
    var accumulatorWords: (UInt64, UInt64, UInt64) {
        get { (h0, h1, h2) }
        set { (h0, h1, h2) = newValue }
    }

    var clampedR: (UInt64, UInt64) { (r0, r1) }

    /// The 16 bytes at `offset`, as the little-endian number of §2.5.
    @inline(__always)
    private static func block(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> (low: UInt64, high: UInt64) {
        (
            UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
            UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
        )
    }

    /// Fewer than 16 trailing bytes, zero-filled to 16, with an optional 0x01
    /// byte right after them (the "one bit beyond the number of octets" of §2.5).
    private static func partialBlock(_ bytes: UnsafeRawBufferPointer, from offset: Int, appendingOne: Bool) -> (low: UInt64, high: UInt64) {
        var words: (UInt64, UInt64) = (0, 0)
        let length = bytes.count - offset
        withUnsafeMutableBytes(of: &words) { block in
            for i in 0 ..< length { block[i] = bytes[offset + i] }
            if appendingOne { block[length] = 1 }
        }
        return (UInt64(littleEndian: words.0), UInt64(littleEndian: words.1))
    }

    /// §2.5 over a whole message: full blocks with 2^128 added, then a short
    /// final block with a 0x01 byte appended and no 2^128.
    mutating func absorb(message bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while bytes.count - offset >= Self.blockSize {
            let m = Self.block(bytes, at: offset)
            absorbBlock(low: m.low, high: m.high, highBit: 1)
            offset += Self.blockSize
        }
        if offset < bytes.count {
            let m = Self.partialBlock(bytes, from: offset, appendingOne: true)
            absorbBlock(low: m.low, high: m.high, highBit: 0)
        }
    }

    /// The bytes followed by pad16 (§2.8): zeros up to a multiple of 16. A padded
    /// short block is then an ordinary full block, 2^128 bit included. A long
    /// message's 64-byte chunks go four blocks at a time when the CPU has AVX2
    /// (CryptoAVX2's `poly1305AbsorbFourLaneRuns`; `fourLanes` is for the
    /// tests, which compare the paths).
    mutating func absorbZeroPadded(_ bytes: UnsafeRawBufferPointer, fourLanes: Bool = CryptoAcceleration.avx2) {
        var offset = 0
        #if canImport(CryptoAVX2) && arch(x86_64)
        if fourLanes, bytes.count >= poly1305LaneMinimum, let base = bytes.baseAddress {
            offset = poly1305AbsorbFourLaneRuns(&accumulatorWords, r: clampedR, base, byteCount: bytes.count)
        }
        #endif
        while bytes.count - offset >= Self.blockSize {
            let m = Self.block(bytes, at: offset)
            absorbBlock(low: m.low, high: m.high, highBit: 1)
            offset += Self.blockSize
        }
        if offset < bytes.count {
            let m = Self.partialBlock(bytes, from: offset, appendingOne: false)
            absorbBlock(low: m.low, high: m.high, highBit: 1)
        }
    }

    /// The tag of §2.5: Acc fully reduced mod p, plus s, mod 2^128; as the low and
    /// high little-endian 64-bit words of the 16 tag bytes.
    func tagWords() -> (low: UInt64, high: UInt64) {
        // Acc < 2^130 + 2^65 < 2p, so one conditional subtraction of p reduces it:
        // Acc ≥ p exactly when Acc + 5 reaches 2^130. Selected by mask, not branch.
        let g0 = UInt128(h0) &+ 5
        let g1 = UInt128(h1) &+ (g0 &>> 64)
        let g2 = h2 &+ UInt64(truncatingIfNeeded: g1 &>> 64)
        let useReduced = 0 &- (g2 &>> 2)
        let f0 = (UInt64(truncatingIfNeeded: g0) & useReduced) | (h0 & ~useReduced)
        let f1 = (UInt64(truncatingIfNeeded: g1) & useReduced) | (h1 & ~useReduced)

        let t0 = UInt128(f0) &+ UInt128(s0)
        let t1 = f1 &+ s1 &+ UInt64(truncatingIfNeeded: t0 &>> 64)
        return (UInt64(truncatingIfNeeded: t0), t1)
    }

    /// The 16 tag bytes, little-endian (§2.5).
    func tag() -> [UInt8] {
        let words = tagWords()
        var tag = [UInt8](repeating: 0, count: Self.tagSize)
        for i in 0 ..< 8 {
            tag[i] = UInt8(truncatingIfNeeded: words.low &>> UInt64(8 * i))
            tag[8 + i] = UInt8(truncatingIfNeeded: words.high &>> UInt64(8 * i))
        }
        return tag
    }

    /// poly1305_mac of §2.5.1. nil unless the key is 32 bytes.
    static func authenticate(message: [UInt8], key: [UInt8]) -> [UInt8]? {
        guard var authenticator = Poly1305(key: key) else { return nil }
        message.withUnsafeBytes { authenticator.absorb(message: $0) }
        return authenticator.tag()
    }
}
