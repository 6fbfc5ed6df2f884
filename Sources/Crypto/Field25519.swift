/// An element of GF(p), p = 2^255 - 19, the field of curve25519 (RFC 7748 §4.1).
///
/// Representation: five unsigned limbs of radix 2^51, value = l0 + l1·2^51 +
/// l2·2^102 + l3·2^153 + l4·2^204. Five 51-bit limbs rather than ten 25/26-bit
/// ones because the target is 64-bit (x86_64, arm64 Linux): a product of two
/// limbs is one `multipliedFullWidth` (a single 64×64→128 instruction), so a
/// field multiplication is 25 of them instead of 100 32-bit ones, and the
/// 13 spare bits per limb leave room to add before carrying. The limbs are
/// stored properties, not an array, so no operation allocates.
///
/// Invariant ("weakly reduced"): every value this type hands out has limbs
/// below 2^51 + 2^15, i.e. the value is below 2^255 + 2^219 but not
/// necessarily below p. Only `canonicalBytes` fully reduces. All arithmetic
/// is straight-line: no branch and no memory index depends on a limb's value.
struct Field25519 {
    private var l0: UInt64
    private var l1: UInt64
    private var l2: UInt64
    private var l3: UInt64
    private var l4: UInt64

    private static let limbMask: UInt64 = (1 << 51) - 1

    private init(_ l0: UInt64, _ l1: UInt64, _ l2: UInt64, _ l3: UInt64, _ l4: UInt64) {
        self.l0 = l0
        self.l1 = l1
        self.l2 = l2
        self.l3 = l3
        self.l4 = l4
    }

    static let zero = Field25519(0, 0, 0, 0, 0)
    static let one = Field25519(1, 0, 0, 0, 0)

    /// A small integer as a field element (constants such as a24 = 121665, §5).
    init(smallValue: UInt32) {
        self.init(UInt64(smallValue), 0, 0, 0, 0)
    }

    // MARK: - Decoding and encoding (RFC 7748 §5)

    /// Decodes a 32-byte little-endian u-coordinate. Per §5 the most
    /// significant bit of the last byte is masked off; the remaining 255-bit
    /// value is accepted even when it is >= p (non-canonical) and is simply
    /// reduced by the arithmetic that follows. Returns nil unless there are
    /// exactly 32 bytes.
    init?(littleEndianBytes bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        func word(_ index: Int) -> UInt64 {
            var value: UInt64 = 0
            for byteIndex in stride(from: 8 * index + 7, through: 8 * index, by: -1) {
                value = value << 8 | UInt64(bytes[byteIndex])
            }
            return value
        }
        let w0 = word(0), w1 = word(1), w2 = word(2), w3 = word(3)
        let mask = Field25519.limbMask
        // Masking limb 4 to 51 bits drops bit 255, the bit §5 says to ignore.
        self.init(
            w0 & mask,
            (w0 >> 51 | w1 << 13) & mask,
            (w1 >> 38 | w2 << 26) & mask,
            (w2 >> 25 | w3 << 39) & mask,
            (w3 >> 12) & mask
        )
    }

    /// The unique encoding of the element: the value fully reduced into
    /// [0, p), as 32 little-endian bytes (§5, "encodeUCoordinate").
    var canonicalBytes: [UInt8] {
        let reduced = fullyReduced()
        let w0 = reduced.l0 | reduced.l1 << 51
        let w1 = reduced.l1 >> 13 | reduced.l2 << 38
        let w2 = reduced.l2 >> 26 | reduced.l3 << 25
        let w3 = reduced.l3 >> 39 | reduced.l4 << 12
        var bytes = [UInt8](repeating: 0, count: 32)
        for (index, word) in [w0, w1, w2, w3].enumerated() {
            for byteIndex in 0 ..< 8 {
                bytes[8 * index + byteIndex] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(byteIndex)))
            }
        }
        return bytes
    }

    /// Reduces a weakly reduced value (below 2^255 + 2^219 < 2p) into [0, p).
    /// Such a value is >= p exactly when value + 19 >= 2^255, so q =
    /// floor((value + 19) / 2^255) is 0 or 1 and value - q·p is the answer;
    /// it is computed as value + 19q with bit 255 dropped, without a branch.
    private func fullyReduced() -> Field25519 {
        var h = self
        h.carry()
        var q = (h.l0 &+ 19) >> 51
        q = (h.l1 &+ q) >> 51
        q = (h.l2 &+ q) >> 51
        q = (h.l3 &+ q) >> 51
        q = (h.l4 &+ q) >> 51

        let mask = Field25519.limbMask
        h.l0 = h.l0 &+ 19 &* q
        h.l1 = h.l1 &+ h.l0 >> 51
        h.l0 &= mask
        h.l2 = h.l2 &+ h.l1 >> 51
        h.l1 &= mask
        h.l3 = h.l3 &+ h.l2 >> 51
        h.l2 &= mask
        h.l4 = h.l4 &+ h.l3 >> 51
        h.l3 &= mask
        h.l4 &= mask  // drops 2^255, completing the subtraction of p
        return h
    }

    // MARK: - Carry

    /// Brings limbs of up to 2^63 back under 2^51 + 2^15, folding the carry
    /// out of limb 4 (a multiple of 2^255) back in as 19·carry, because
    /// 2^255 ≡ 19 (mod p).
    private mutating func carry() {
        let mask = Field25519.limbMask
        l1 = l1 &+ l0 >> 51
        l0 &= mask
        l2 = l2 &+ l1 >> 51
        l1 &= mask
        l3 = l3 &+ l2 >> 51
        l2 &= mask
        l4 = l4 &+ l3 >> 51
        l3 &= mask
        l0 = l0 &+ 19 &* (l4 >> 51)
        l4 &= mask
        l1 = l1 &+ l0 >> 51
        l0 &= mask
    }

    // MARK: - Addition and subtraction

    static func + (a: Field25519, b: Field25519) -> Field25519 {
        var sum = Field25519(a.l0 &+ b.l0, a.l1 &+ b.l1, a.l2 &+ b.l2, a.l3 &+ b.l3, a.l4 &+ b.l4)
        sum.carry()
        return sum
    }

    /// a - b computed as a + 2p - b so no limb goes negative: the limbs of 2p
    /// (2^52 - 38, then 2^52 - 2) exceed any weakly reduced limb of b.
    static func - (a: Field25519, b: Field25519) -> Field25519 {
        let twoPLow: UInt64 = (1 << 52) - 38
        let twoPHigh: UInt64 = (1 << 52) - 2
        var difference = Field25519(
            (a.l0 &+ twoPLow) &- b.l0,
            (a.l1 &+ twoPHigh) &- b.l1,
            (a.l2 &+ twoPHigh) &- b.l2,
            (a.l3 &+ twoPHigh) &- b.l3,
            (a.l4 &+ twoPHigh) &- b.l4
        )
        difference.carry()
        return difference
    }

    // MARK: - Multiplication

    /// Schoolbook product with the reduction folded in: a limb product
    /// a_i·b_j with i + j >= 5 weighs 2^(51(i+j)) = 2^255·2^(51(i+j-5)),
    /// which is ≡ 19·2^(51(i+j-5)), so it lands in column i + j - 5 times 19.
    /// Bounds: limbs < 2^52, so each column is below 2^111 and fits the
    /// 128-bit accumulator; the column carries are below 2^60.
    static func * (a: Field25519, b: Field25519) -> Field25519 {
        let b1x19 = b.l1 &* 19, b2x19 = b.l2 &* 19, b3x19 = b.l3 &* 19, b4x19 = b.l4 &* 19

        var c0 = WideAccumulator(a.l0, b.l0)
        c0.add(a.l1, b4x19)
        c0.add(a.l2, b3x19)
        c0.add(a.l3, b2x19)
        c0.add(a.l4, b1x19)

        var c1 = WideAccumulator(a.l0, b.l1)
        c1.add(a.l1, b.l0)
        c1.add(a.l2, b4x19)
        c1.add(a.l3, b3x19)
        c1.add(a.l4, b2x19)

        var c2 = WideAccumulator(a.l0, b.l2)
        c2.add(a.l1, b.l1)
        c2.add(a.l2, b.l0)
        c2.add(a.l3, b4x19)
        c2.add(a.l4, b3x19)

        var c3 = WideAccumulator(a.l0, b.l3)
        c3.add(a.l1, b.l2)
        c3.add(a.l2, b.l1)
        c3.add(a.l3, b.l0)
        c3.add(a.l4, b4x19)

        var c4 = WideAccumulator(a.l0, b.l4)
        c4.add(a.l1, b.l3)
        c4.add(a.l2, b.l2)
        c4.add(a.l3, b.l1)
        c4.add(a.l4, b.l0)

        return reduce(c0, c1, c2, c3, c4)
    }

    /// a² with the symmetric products counted once and doubled: 15 limb
    /// products instead of 25. Same column layout and bounds as `*`
    /// (2·19 = 38 for the doubled wrapped terms).
    func squared() -> Field25519 {
        let d0 = l0 &* 2, d1 = l1 &* 2
        let l3x19 = l3 &* 19, l4x19 = l4 &* 19
        let l4x38 = l4 &* 38

        var c0 = WideAccumulator(l0, l0)
        c0.add(d1, l4x19)
        c0.add(l2 &* 2, l3x19)

        var c1 = WideAccumulator(d0, l1)
        c1.add(l2, l4x38)
        c1.add(l3, l3x19)

        var c2 = WideAccumulator(d0, l2)
        c2.add(l1, l1)
        c2.add(l3, l4x38)

        var c3 = WideAccumulator(d0, l3)
        c3.add(d1, l2)
        c3.add(l4, l4x19)

        var c4 = WideAccumulator(d0, l4)
        c4.add(d1, l3)
        c4.add(l2, l2)

        return Field25519.reduce(c0, c1, c2, c3, c4)
    }

    /// Squares `count` times in a row (a^(2^count)), for the inversion chain.
    func squared(times count: Int) -> Field25519 {
        var result = self
        for _ in 0 ..< count { result = result.squared() }
        return result
    }

    /// The product with a constant below 2^32 (a24 = 121665 in the ladder),
    /// five limb products instead of a full multiplication.
    func multiplied(bySmallValue value: UInt32) -> Field25519 {
        let factor = UInt64(value)
        return Field25519.reduce(
            WideAccumulator(l0, factor), WideAccumulator(l1, factor), WideAccumulator(l2, factor),
            WideAccumulator(l3, factor), WideAccumulator(l4, factor)
        )
    }

    /// Turns five 128-bit columns (each below 2^111) into a weakly reduced
    /// element: carry column to column (each carry below 2^60), fold the
    /// carry out of column 4 (below 2^58) back into limb 0 times 19 (below
    /// 2^62), and carry once more out of limb 0.
    private static func reduce(
        _ c0: WideAccumulator, _ c1: WideAccumulator, _ c2: WideAccumulator,
        _ c3: WideAccumulator, _ c4: WideAccumulator
    ) -> Field25519 {
        let mask = limbMask
        var c1 = c1, c2 = c2, c3 = c3, c4 = c4
        var l0 = c0.low & mask
        c1.add(c0.shiftedRight51)
        let l1 = c1.low & mask
        c2.add(c1.shiftedRight51)
        let l2 = c2.low & mask
        c3.add(c2.shiftedRight51)
        let l3 = c3.low & mask
        c4.add(c3.shiftedRight51)
        let l4 = c4.low & mask
        l0 = l0 &+ 19 &* c4.shiftedRight51
        return Field25519(l0 & mask, l1 &+ l0 >> 51, l2, l3, l4)
    }

    // MARK: - Inversion

    /// z^(p-2) = z^-1 by Fermat's little theorem (z^(p-1) = 1 for z ≠ 0), as
    /// §5 prescribes for the ladder's final division; 0 maps to 0, which the
    /// ladder relies on for the low-order-point case (result all zeros).
    /// p - 2 = 2^255 - 21 = (2^250 - 1)·2^5 + 11, so the chain builds
    /// z^(2^k - 1) for k = 5, 10, 20, 40, 50, 100, 200, 250 (each from
    /// smaller ones: z^(2^(m+n) - 1) = (z^(2^m - 1))^(2^n) · z^(2^n - 1)),
    /// then shifts by 5 bits and multiplies in z^11: 254 squarings and 11
    /// multiplications, the same sequence for every input.
    func inverted() -> Field25519 {
        let z = self
        let z2 = z.squared()                            // z^2
        let z9 = z2.squared(times: 2) * z               // z^9
        let z11 = z9 * z2                               // z^11
        let z2_5 = z11.squared() * z9                   // z^(2^5 - 1) = z^31
        let z2_10 = z2_5.squared(times: 5) * z2_5       // z^(2^10 - 1)
        let z2_20 = z2_10.squared(times: 10) * z2_10    // z^(2^20 - 1)
        let z2_40 = z2_20.squared(times: 20) * z2_20    // z^(2^40 - 1)
        let z2_50 = z2_40.squared(times: 10) * z2_10    // z^(2^50 - 1)
        let z2_100 = z2_50.squared(times: 50) * z2_50   // z^(2^100 - 1)
        let z2_200 = z2_100.squared(times: 100) * z2_100 // z^(2^200 - 1)
        let z2_250 = z2_200.squared(times: 50) * z2_50  // z^(2^250 - 1)
        return z2_250.squared(times: 5) * z11           // z^(2^255 - 21)
    }

    // MARK: - Conditional swap

    /// Swaps a and b when `bit` is 1 and leaves them when it is 0, by XOR
    /// under an all-ones/all-zeros mask, so neither the instruction stream nor
    /// the memory accessed depends on `bit` (RFC 7748 §5, cswap).
    static func conditionalSwap(_ a: inout Field25519, _ b: inout Field25519, bit: UInt64) {
        let mask = 0 &- bit
        var t = mask & (a.l0 ^ b.l0)
        a.l0 ^= t
        b.l0 ^= t
        t = mask & (a.l1 ^ b.l1)
        a.l1 ^= t
        b.l1 ^= t
        t = mask & (a.l2 ^ b.l2)
        a.l2 ^= t
        b.l2 ^= t
        t = mask & (a.l3 ^ b.l3)
        a.l3 ^= t
        b.l3 ^= t
        t = mask & (a.l4 ^ b.l4)
        a.l4 ^= t
        b.l4 ^= t
    }
}

/// A 128-bit sum of 64×64-bit products. The carry between the halves is
/// computed with bit operations (the carry out of bit 63 is the majority of
/// the two addends' top bits and the inverted sum's top bit) rather than a
/// `Bool` from `addingReportingOverflow`, so no data-dependent branch can
/// appear.
private struct WideAccumulator {
    var high: UInt64
    var low: UInt64

    @inline(__always)
    init(_ a: UInt64, _ b: UInt64) {
        let product = a.multipliedFullWidth(by: b)
        high = product.high
        low = product.low
    }

    @inline(__always)
    mutating func add(_ a: UInt64, _ b: UInt64) {
        let product = a.multipliedFullWidth(by: b)
        let sum = low &+ product.low
        let carry = ((low & product.low) | ((low | product.low) & ~sum)) >> 63
        low = sum
        high = high &+ product.high &+ carry
    }

    @inline(__always)
    mutating func add(_ value: UInt64) {
        let sum = low &+ value
        let carry = ((low & value) | ((low | value) & ~sum)) >> 63
        low = sum
        high = high &+ carry
    }

    /// The value divided by 2^51; callers keep the value below 2^115 so this
    /// fits 64 bits.
    @inline(__always)
    var shiftedRight51: UInt64 { high << 13 | low >> 51 }
}
