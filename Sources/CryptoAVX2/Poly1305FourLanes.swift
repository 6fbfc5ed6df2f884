// Built for AVX2 with the rest of this module (ChaCha20EightBlocks.swift
// says why, and why its interface passes no SIMD values).
#if arch(x86_64)

/// Poly1305 (RFC 8439 §2.5, unchanged) four blocks at a time in AVX2, for
/// messages of `poly1305LaneMinimum` bytes or more. The polynomial is split
/// by block number mod 4: lane j accumulates blocks j, j+4, j+8 ... and is
/// multiplied by r^4 after each of them, so the four lanes' sum, after the
/// last chunk multiplies lane j by r^(4-j) instead, is the §2.5 accumulator.
/// Numbers are five 26-bit limbs (radix 2^26), so every product of a limb
/// (below 2^27) and a multiplier limb (below 2^29, five times one below
/// 2^26) fits in 56 bits, and five of them summed in 59: each is one lane
/// of `vpmuludq`, a 32×32→64-bit multiply, 25 per four blocks where the
/// scalar path's 64-bit limbs take six 128-bit products per block, one
/// after the other. Only additions, multiplies, shifts and masks: constant
/// time (§4), as the scalar path.
///
/// `accumulator` is the scalar path's (three 64-bit limbs, the top one at
/// most 4) and comes back in the same form; `r` is the clamped key half.
/// Takes the message's whole 64-byte chunks (full blocks: 2^128 added to
/// each) and returns how many bytes that was; the caller absorbs the rest.
@inline(never)
public func poly1305AbsorbFourLaneRuns(
    _ accumulator: inout (UInt64, UInt64, UInt64), r: (UInt64, UInt64),
    _ message: UnsafeRawPointer, byteCount: Int
) -> Int {
    guard byteCount >= poly1305LaneMinimum else { return 0 }
    let chunks = byteCount / 64
    let r1 = Limbs26(r.0, r.1, 0)
    let r2 = r1.times(r1)
    let r3 = r2.times(r1)
    let r4 = r3.times(r1)
    let step = LaneMultiplier(r4, r4, r4, r4)
    let start = Limbs26(accumulator.0, accumulator.1, accumulator.2)
    // The accumulator so far joins the first block, in lane 0.
    var lanes = (SIMD4<UInt64>(start.l0, 0, 0, 0), SIMD4<UInt64>(start.l1, 0, 0, 0), SIMD4<UInt64>(start.l2, 0, 0, 0),
                 SIMD4<UInt64>(start.l3, 0, 0, 0), SIMD4<UInt64>(start.l4, 0, 0, 0))
    for chunk in 0 ..< chunks - 1 {
        lanes = step.multiply(addingChunk: message + chunk * 64, to: lanes)
    }
    lanes = LaneMultiplier(r4, r3, r2, r1).multiply(addingChunk: message + (chunks - 1) * 64, to: lanes)
    var total = Limbs26(l0: lanes.0.wrappedSum(), l1: lanes.1.wrappedSum(), l2: lanes.2.wrappedSum(),
                        l3: lanes.3.wrappedSum(), l4: lanes.4.wrappedSum())
    total.carry()
    accumulator = total.words()
    return chunks * 64
}

/// Below four chunks the powers of r cost more than the lanes save.
public let poly1305LaneMinimum = 256

typealias Lanes = (SIMD4<UInt64>, SIMD4<UInt64>, SIMD4<UInt64>, SIMD4<UInt64>, SIMD4<UInt64>)

/// A number mod 2^130 - 5 in five 26-bit limbs (radix 2^26).
struct Limbs26 {
    var l0, l1, l2, l3, l4: UInt64

    init(l0: UInt64, l1: UInt64, l2: UInt64, l3: UInt64, l4: UInt64) {
        (self.l0, self.l1, self.l2, self.l3, self.l4) = (l0, l1, l2, l3, l4)
    }

    /// From three 64-bit limbs (the scalar accumulator: below 2^131).
    init(_ w0: UInt64, _ w1: UInt64, _ w2: UInt64) {
        l0 = w0 & 0x3ff_ffff
        l1 = (w0 >> 26) & 0x3ff_ffff
        l2 = ((w0 >> 52) | (w1 << 12)) & 0x3ff_ffff
        l3 = (w1 >> 14) & 0x3ff_ffff
        l4 = (w1 >> 40) | (w2 << 24)
    }

    /// Carries every limb into the next, the top one's excess times 5 into the bottom.
    mutating func carry() {
        var c: UInt64
        c = l0 >> 26; l0 &= 0x3ff_ffff; l1 &+= c
        c = l1 >> 26; l1 &= 0x3ff_ffff; l2 &+= c
        c = l2 >> 26; l2 &= 0x3ff_ffff; l3 &+= c
        c = l3 >> 26; l3 &= 0x3ff_ffff; l4 &+= c
        c = l4 >> 26; l4 &= 0x3ff_ffff; l0 &+= c &* 5
        c = l0 >> 26; l0 &= 0x3ff_ffff; l1 &+= c
    }

    /// self · other mod p, limbs carried (each below 2^26 but l1, a little above).
    func times(_ o: Limbs26) -> Limbs26 {
        let s1 = o.l1 &* 5, s2 = o.l2 &* 5, s3 = o.l3 &* 5, s4 = o.l4 &* 5
        var result = Limbs26(
            l0: l0 &* o.l0 &+ l1 &* s4 &+ l2 &* s3 &+ l3 &* s2 &+ l4 &* s1,
            l1: l0 &* o.l1 &+ l1 &* o.l0 &+ l2 &* s4 &+ l3 &* s3 &+ l4 &* s2,
            l2: l0 &* o.l2 &+ l1 &* o.l1 &+ l2 &* o.l0 &+ l3 &* s4 &+ l4 &* s3,
            l3: l0 &* o.l3 &+ l1 &* o.l2 &+ l2 &* o.l1 &+ l3 &* o.l0 &+ l4 &* s4,
            l4: l0 &* o.l4 &+ l1 &* o.l3 &+ l2 &* o.l2 &+ l3 &* o.l1 &+ l4 &* o.l0)
        result.carry()
        return result
    }

    /// Back to three 64-bit limbs, after `carry`: below 2^130 + 2^105, so the
    /// top limb is at most 4, as the scalar accumulator keeps it.
    func words() -> (UInt64, UInt64, UInt64) {
        // `carry` leaves l1 a little above 2^26; the limbs below the top must
        // be below 2^26 for their bits not to overlap.
        var (l1, l2, l3, l4) = (l1, l2, l3, l4)
        var c = l1 >> 26; l1 &= 0x3ff_ffff; l2 &+= c
        c = l2 >> 26; l2 &= 0x3ff_ffff; l3 &+= c
        c = l3 >> 26; l3 &= 0x3ff_ffff; l4 &+= c
        let w0 = l0 | (l1 << 26) | (l2 << 52)
        let w1 = (l2 >> 12) | (l3 << 14) | (l4 << 40)
        let w2 = l4 >> 24
        return (w0, w1, w2)
    }
}

/// The lanes' multipliers: lane j's r-power in radix 2^26, and 5 times its limbs 1-4.
struct LaneMultiplier {
    let r0, r1, r2, r3, r4: SIMD4<UInt64>
    let s1, s2, s3, s4: SIMD4<UInt64>

    init(_ a: Limbs26, _ b: Limbs26, _ c: Limbs26, _ d: Limbs26) {
        r0 = SIMD4(a.l0, b.l0, c.l0, d.l0)
        r1 = SIMD4(a.l1, b.l1, c.l1, d.l1)
        r2 = SIMD4(a.l2, b.l2, c.l2, d.l2)
        r3 = SIMD4(a.l3, b.l3, c.l3, d.l3)
        r4 = SIMD4(a.l4, b.l4, c.l4, d.l4)
        s1 = r1 &* 5; s2 = r2 &* 5; s3 = r3 &* 5; s4 = r4 &* 5
    }

    /// 32×32→64-bit products (`vpmuludq`): both sides are below 2^32.
    @inline(__always)
    private static func mul(_ a: SIMD4<UInt64>, _ b: SIMD4<UInt64>) -> SIMD4<UInt64> {
        let low = SIMD4<UInt64>(repeating: 0xffff_ffff)
        return (a & low) &* (b & low)
    }

    /// (lanes + the chunk's four blocks, one per lane) times the lanes' multipliers, carried.
    @inline(__always)
    func multiply(addingChunk base: UnsafeRawPointer, to lanes: Lanes) -> Lanes {
        // Block j's two little-endian words go to lane j, then into 26-bit limbs, 2^128 set (bit 24 of limb 4).
        let low = SIMD4<UInt64>(
            UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
            UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
            UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 32, as: UInt64.self)),
            UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 48, as: UInt64.self)))
        let high = SIMD4<UInt64>(
            UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
            UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 24, as: UInt64.self)),
            UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 40, as: UInt64.self)),
            UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 56, as: UInt64.self)))
        let mask = SIMD4<UInt64>(repeating: 0x3ff_ffff)
        let h0 = lanes.0 &+ (low & mask)
        let h1 = lanes.1 &+ ((low &>> 26) & mask)
        let h2 = lanes.2 &+ (((low &>> 52) | (high &<< 12)) & mask)
        let h3 = lanes.3 &+ ((high &>> 14) & mask)
        let h4 = lanes.4 &+ ((high &>> 40) | SIMD4(repeating: 1 << 24))
        var d0 = Self.mul(h0, r0) &+ Self.mul(h1, s4) &+ Self.mul(h2, s3) &+ Self.mul(h3, s2) &+ Self.mul(h4, s1)
        var d1 = Self.mul(h0, r1) &+ Self.mul(h1, r0) &+ Self.mul(h2, s4) &+ Self.mul(h3, s3) &+ Self.mul(h4, s2)
        var d2 = Self.mul(h0, r2) &+ Self.mul(h1, r1) &+ Self.mul(h2, r0) &+ Self.mul(h3, s4) &+ Self.mul(h4, s3)
        var d3 = Self.mul(h0, r3) &+ Self.mul(h1, r2) &+ Self.mul(h2, r1) &+ Self.mul(h3, r0) &+ Self.mul(h4, s4)
        var d4 = Self.mul(h0, r4) &+ Self.mul(h1, r3) &+ Self.mul(h2, r2) &+ Self.mul(h3, r1) &+ Self.mul(h4, r0)
        var c = d0 &>> 26; d0 &= mask; d1 &+= c
        c = d1 &>> 26; d1 &= mask; d2 &+= c
        c = d2 &>> 26; d2 &= mask; d3 &+= c
        c = d3 &>> 26; d3 &= mask; d4 &+= c
        c = d4 &>> 26; d4 &= mask; d0 &+= c &* 5
        c = d0 &>> 26; d0 &= mask; d1 &+= c
        return (d0, d1, d2, d3, d4)
    }
}

#endif
