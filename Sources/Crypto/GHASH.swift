/// GHASH_H (NIST SP 800-38D §6.4): Y = (Y xor X_i) · H over the blocks X_i,
/// in GF(2^128) modulo x^128 + x^7 + x^2 + x + 1 (§6.3).
///
/// Constant-time: no table is indexed and no branch is taken by a secret
/// (H and the data), unlike the 4-bit table method (§6.3's note on
/// tables), whose lookups by data nibbles leak through the cache. The
/// carry-less products are made with ordinary integer multiplication, which
/// runs in constant time on the CPUs Swift targets: keep only every fifth bit
/// of each factor ("holes" of four zero bits between them), and the integer
/// product's column sums, at most 13 terms, fit in the holes without
/// reaching the next kept bit; masking the product to the right bit class
/// then leaves exactly the carry-less (xor) sum. Five classes per factor make
/// 25 64×64→128-bit multiplications per 64-bit carry-less product, and
/// Karatsuba's three of those make one 128-bit product. H's classes are
/// split once per key.
///
/// GCM's bit order (§6.3) puts x^0 at the most significant bit of the first
/// byte. Loading a block as a big-endian 128-bit integer therefore stores the
/// polynomial bit-reversed, and the integer carry-less product of two such
/// values is the reversed 255-bit product: one left shift aligns it to 256
/// bits, and reduction folds the low half (x^128 and up) into the high half.
struct GHASH: Sendable {
    /// H as a big-endian integer: high and low 64-bit words, and their xor,
    /// each pre-split into the five bit classes.
    private let highClasses: BitClasses
    private let lowClasses: BitClasses
    private let middleClasses: BitClasses

    /// Bits 0, 5, 10, ..., 60 of a word; class c is this shifted left by c.
    static let classMask: UInt64 = 0x1084_2108_4210_8421

    /// A 64-bit factor's five classes: class c keeps the bits whose index is c mod 5.
    struct BitClasses: Sendable {
        let c0, c1, c2, c3, c4: UInt64

        @inline(__always)
        init(_ word: UInt64) {
            let m = GHASH.classMask
            c0 = word & m
            c1 = word & m << 1
            c2 = word & m << 2
            c3 = word & m << 3
            c4 = word & m << 4
        }
    }

    /// `hashSubkey` is H = CIPH_K(0^128) (§7.1 step 1) as big-endian words.
    init(hashSubkey: (high: UInt64, low: UInt64)) {
        highClasses = BitClasses(hashSubkey.high)
        lowClasses = BitClasses(hashSubkey.low)
        middleClasses = BitClasses(hashSubkey.high ^ hashSubkey.low)
    }

    /// Folds `bytes` into `y` block by block (§6.4), the last block
    /// zero-padded as §7.1 steps 5-6 pad A and C.
    func absorb(_ bytes: UnsafeRawBufferPointer, into y: inout (high: UInt64, low: UInt64)) {
        let count = bytes.count
        var offset = 0
        while count - offset >= 16 {
            let high = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            let low = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
            y = multiply((y.high ^ high, y.low ^ low))
            offset += 16
        }
        if offset < count {
            var high: UInt64 = 0, low: UInt64 = 0
            for i in 0 ..< count - offset {
                let byte = UInt64(bytes[offset + i])
                if i < 8 { high |= byte << UInt64(56 - 8 * i) } else { low |= byte << UInt64(120 - 8 * i) }
            }
            y = multiply((y.high ^ high, y.low ^ low))
        }
    }

    /// X · H (§6.3), with X as big-endian words.
    @inline(__always)
    func multiply(_ x: (high: UInt64, low: UInt64)) -> (high: UInt64, low: UInt64) {
        // Karatsuba on the integer representation: high·high at 2^128,
        // low·low at 2^0, and the middle term at 2^64.
        let top = Self.carrylessMultiply(BitClasses(x.high), highClasses)
        let bottom = Self.carrylessMultiply(BitClasses(x.low), lowClasses)
        let cross = Self.carrylessMultiply(BitClasses(x.high ^ x.low), middleClasses)
        let middleHigh = cross.high ^ top.high ^ bottom.high
        let middleLow = cross.low ^ top.low ^ bottom.low
        var z3 = top.high, z2 = top.low ^ middleHigh, z1 = bottom.high ^ middleLow, z0 = bottom.low
        // The reversed product has 255 bits; shift it to put x^0 at bit 255.
        z3 = z3 << 1 | z2 >> 63
        z2 = z2 << 1 | z1 >> 63
        z1 = z1 << 1 | z0 >> 63
        z0 <<= 1
        // (z1, z0) holds x^128 · L; x^128 = x^7 + x^2 + x + 1, and multiplying
        // by x^k is a right shift by k. The bits the shifts push out of the
        // bottom are x^128 and up again: gather them first (they come from
        // z0's low 7 bits and land in z1's top 7), then shift once.
        z1 ^= z0 << 63 ^ z0 << 62 ^ z0 << 57
        let high = z3 ^ z1 ^ z1 >> 1 ^ z1 >> 2 ^ z1 >> 7
        let low = z2 ^ z0 ^ (z0 >> 1 | z1 << 63) ^ (z0 >> 2 | z1 << 62) ^ (z0 >> 7 | z1 << 57)
        return (high, low)
    }

    /// The 128-bit carry-less product of two 64-bit words given as bit
    /// classes: class c of the result collects the products of classes a
    /// and b with a + b = c mod 5, and its integer carries stay in the holes.
    @inline(__always)
    static func carrylessMultiply(_ x: BitClasses, _ y: BitClasses) -> (high: UInt64, low: UInt64) {
        // Each term is one 64×64→128-bit integer multiplication. The classes
        // are summed one at a time and masked at once, so only one pair of
        // accumulators is live (the register-starved x86-64 otherwise spills).
        @inline(__always)
        func classSum(_ p0: (UInt64, UInt64), _ p1: (UInt64, UInt64), _ p2: (UInt64, UInt64),
                      _ p3: (UInt64, UInt64), _ p4: (UInt64, UInt64)) -> (high: UInt64, low: UInt64) {
            var r = p0.0.multipliedFullWidth(by: p0.1)
            var t = p1.0.multipliedFullWidth(by: p1.1)
            r = (r.high ^ t.high, r.low ^ t.low)
            t = p2.0.multipliedFullWidth(by: p2.1)
            r = (r.high ^ t.high, r.low ^ t.low)
            t = p3.0.multipliedFullWidth(by: p3.1)
            r = (r.high ^ t.high, r.low ^ t.low)
            t = p4.0.multipliedFullWidth(by: p4.1)
            return (r.high ^ t.high, r.low ^ t.low)
        }
        // Bit 64 + i of the product has index i + 64 ≡ i + 4 (mod 5), so the
        // high word's class-c bits are at the low word's positions of class c + 1.
        let m = classMask
        let r0 = classSum((x.c0, y.c0), (x.c1, y.c4), (x.c2, y.c3), (x.c3, y.c2), (x.c4, y.c1))
        var low = r0.low & m, high = r0.high & m << 1
        let r1 = classSum((x.c0, y.c1), (x.c1, y.c0), (x.c2, y.c4), (x.c3, y.c3), (x.c4, y.c2))
        low |= r1.low & m << 1
        high |= r1.high & m << 2
        let r2 = classSum((x.c0, y.c2), (x.c1, y.c1), (x.c2, y.c0), (x.c3, y.c4), (x.c4, y.c3))
        low |= r2.low & m << 2
        high |= r2.high & m << 3
        let r3 = classSum((x.c0, y.c3), (x.c1, y.c2), (x.c2, y.c1), (x.c3, y.c0), (x.c4, y.c4))
        low |= r3.low & m << 3
        high |= r3.high & m << 4
        let r4 = classSum((x.c0, y.c4), (x.c1, y.c3), (x.c2, y.c2), (x.c3, y.c1), (x.c4, y.c0))
        low |= r4.low & m << 4
        high |= r4.high & m
        return (high, low)
    }
}
