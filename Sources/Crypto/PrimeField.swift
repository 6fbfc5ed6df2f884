/// A multi-precision integer of `count` 64-bit words, least significant word
/// first. Fixed-size and stored inline, so the arithmetic below never touches
/// the heap.
typealias Limbs<let count: Int> = InlineArray<count, UInt64>

/// Arithmetic modulo an odd modulus `m` of `limbCount` words, in Montgomery
/// form (x·R mod m with R = 2^(64·limbCount)), used for both the field prime p
/// and the group order n of a curve.
///
/// Every operation except `power` (whose exponent is public) runs in time
/// independent of the values: carries are propagated arithmetically and the
/// final conditional subtraction is a masked select, so secret scalars and
/// coordinates can go through it. Inputs are expected fully reduced (< m) and
/// outputs are fully reduced.
struct PrimeField<let limbCount: Int>: Sendable {
    let modulus: Limbs<limbCount>
    /// -m⁻¹ mod 2^64, the per-word factor of the Montgomery reduction.
    private let negatedInverse: UInt64
    /// R mod m: the Montgomery form of 1.
    let one: Limbs<limbCount>
    /// R² mod m: multiplying by it converts into Montgomery form.
    private let rSquared: Limbs<limbCount>
    /// m − 2: by Fermat's little theorem a^(m−2) = a⁻¹ for a prime m.
    private let inverseExponent: Limbs<limbCount>

    /// `modulus` must be an odd prime with its top word non-zero.
    ///
    /// Kept out of line on purpose: with Swift 6.3.1 `-O -wmo`, inlining this
    /// initialiser into the `static let curve` initialisers of P256/P384
    /// produced a wrong R mod n for the group order (all zero; the field's
    /// constants came out right), while `-Onone` and `-O` without WMO were
    /// correct. Every release test run checks the RFC vectors, which catch
    /// a regression.
    @inline(never)
    init(modulus: Limbs<limbCount>) {
        self.modulus = modulus
        // Newton iteration doubles the correct low bits each step: 1 → 64 in 6 steps.
        var inverse: UInt64 = 1
        for _ in 0 ..< 6 { inverse = inverse &* (2 &- modulus[0] &* inverse) }
        negatedInverse = 0 &- inverse

        // 1 doubled 64·limbCount times is R mod m; as many more give R² mod m.
        var power = Limbs<limbCount>(repeating: 0)
        power[0] = 1
        for _ in 0 ..< 64 * limbCount { power = Self.add(power, power, modulus: modulus) }
        one = power
        for _ in 0 ..< 64 * limbCount { power = Self.add(power, power, modulus: modulus) }
        rSquared = power
        var two = Limbs<limbCount>(repeating: 0)
        two[0] = 2
        inverseExponent = Self.subtractRaw(modulus, two).difference
    }

    static var zero: Limbs<limbCount> { Limbs(repeating: 0) }

    // MARK: Conversions

    func toMontgomery(_ a: Limbs<limbCount>) -> Limbs<limbCount> { multiply(a, rSquared) }

    func fromMontgomery(_ a: Limbs<limbCount>) -> Limbs<limbCount> {
        var unit = Self.zero
        unit[0] = 1
        return multiply(a, unit)
    }

    // MARK: Modular operations

    func add(_ a: Limbs<limbCount>, _ b: Limbs<limbCount>) -> Limbs<limbCount> {
        Self.add(a, b, modulus: modulus)
    }

    private static func add(_ a: Limbs<limbCount>, _ b: Limbs<limbCount>, modulus: Limbs<limbCount>) -> Limbs<limbCount> {
        var sum = zero
        var carry: UInt64 = 0
        for i in 0 ..< limbCount {
            let (partial, overflow1) = a[i].addingReportingOverflow(b[i])
            let (total, overflow2) = partial.addingReportingOverflow(carry)
            sum[i] = total
            carry = (overflow1 ? 1 : 0) | (overflow2 ? 1 : 0)
        }
        let (reduced, borrow) = subtractRaw(sum, modulus)
        // Keep the reduced value when the sum overflowed R or did not borrow.
        let keepReduced = carry | (1 &- borrow)
        return select(mask: 0 &- keepReduced, reduced, otherwise: sum)
    }

    func subtract(_ a: Limbs<limbCount>, _ b: Limbs<limbCount>) -> Limbs<limbCount> {
        let (difference, borrow) = Self.subtractRaw(a, b)
        // Add m back when a < b, masked instead of branched.
        let mask = 0 &- borrow
        var result = Self.zero
        var carry: UInt64 = 0
        for i in 0 ..< limbCount {
            let (partial, overflow1) = difference[i].addingReportingOverflow(modulus[i] & mask)
            let (total, overflow2) = partial.addingReportingOverflow(carry)
            result[i] = total
            carry = (overflow1 ? 1 : 0) | (overflow2 ? 1 : 0)
        }
        return result
    }

    func negate(_ a: Limbs<limbCount>) -> Limbs<limbCount> { subtract(Self.zero, a) }

    /// Montgomery multiplication a·b·R⁻¹ mod m, coarsely integrated operand
    /// scanning (Koç, Acar and Kaliski, "Analyzing and Comparing Montgomery
    /// Multiplication Algorithms", 1996). The accumulator is `limbCount` words
    /// plus two extra words kept in locals.
    func multiply(_ a: Limbs<limbCount>, _ b: Limbs<limbCount>) -> Limbs<limbCount> {
        var t = Self.zero
        var top: UInt64 = 0
        for i in 0 ..< limbCount {
            var carry: UInt64 = 0
            let bi = b[i]
            for j in 0 ..< limbCount {
                (carry, t[j]) = Self.multiplyAdd(a[j], bi, t[j], carry)
            }
            let (sum, overflow) = top.addingReportingOverflow(carry)
            top = sum
            let extra: UInt64 = overflow ? 1 : 0

            let factor = t[0] &* negatedInverse
            (carry, _) = Self.multiplyAdd(factor, modulus[0], t[0], 0)
            for j in 1 ..< limbCount {
                (carry, t[j - 1]) = Self.multiplyAdd(factor, modulus[j], t[j], carry)
            }
            let (shifted, overflow2) = top.addingReportingOverflow(carry)
            t[limbCount - 1] = shifted
            top = extra &+ (overflow2 ? 1 : 0)
        }
        // t + top·R < 2m: one masked subtraction brings it below m.
        let (reduced, borrow) = Self.subtractRaw(t, modulus)
        let keepReduced = top | (1 &- borrow)
        return Self.select(mask: 0 &- keepReduced, reduced, otherwise: t)
    }

    func square(_ a: Limbs<limbCount>) -> Limbs<limbCount> { multiply(a, a) }

    /// a^exponent by left-to-right square-and-multiply on a Montgomery-form
    /// base. Branches on the exponent's bits, so the exponent must be public;
    /// the base may be secret.
    func power(_ base: Limbs<limbCount>, exponent: Limbs<limbCount>) -> Limbs<limbCount> {
        var result = one
        var bit = 64 * limbCount - 1
        while bit >= 0 {
            result = square(result)
            if (exponent[bit / 64] >> UInt64(bit % 64)) & 1 == 1 {
                result = multiply(result, base)
            }
            bit -= 1
        }
        return result
    }

    /// The Montgomery-form inverse of a Montgomery-form element (Fermat's little
    /// theorem, m prime). The inverse of zero comes out as zero.
    func inverse(_ a: Limbs<limbCount>) -> Limbs<limbCount> { power(a, exponent: inverseExponent) }

    // MARK: Comparisons and selection

    /// All ones when a is zero, else zero; without branching on a.
    static func isZeroMask(_ a: Limbs<limbCount>) -> UInt64 {
        var accumulated: UInt64 = 0
        for i in 0 ..< limbCount { accumulated |= a[i] }
        // (x | -x) has its top bit set exactly when x != 0.
        return ((accumulated | (0 &- accumulated)) >> 63) &- 1
    }

    static func isZero(_ a: Limbs<limbCount>) -> Bool { isZeroMask(a) != 0 }

    static func areEqual(_ a: Limbs<limbCount>, _ b: Limbs<limbCount>) -> Bool {
        var difference: UInt64 = 0
        for i in 0 ..< limbCount { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    /// Whether a < m; for validating public inputs.
    func isReduced(_ a: Limbs<limbCount>) -> Bool { Self.subtractRaw(a, modulus).borrow == 1 }

    /// a − m when a ≥ m, for a < 2m (a value of up to limbCount words).
    func reduceOnce(_ a: Limbs<limbCount>) -> Limbs<limbCount> {
        let (reduced, borrow) = Self.subtractRaw(a, modulus)
        return Self.select(mask: 0 &- borrow, a, otherwise: reduced)
    }

    /// `a` where mask is all ones, `b` where it is zero.
    static func select(mask: UInt64, _ a: Limbs<limbCount>, otherwise b: Limbs<limbCount>) -> Limbs<limbCount> {
        var result = zero
        for i in 0 ..< limbCount { result[i] = (a[i] & mask) | (b[i] & ~mask) }
        return result
    }

    // MARK: Word-level helpers

    /// a − b over the full width, with the final borrow (0 or 1).
    static func subtractRaw(_ a: Limbs<limbCount>, _ b: Limbs<limbCount>) -> (difference: Limbs<limbCount>, borrow: UInt64) {
        var difference = zero
        var borrow: UInt64 = 0
        for i in 0 ..< limbCount {
            let (partial, overflow1) = a[i].subtractingReportingOverflow(b[i])
            let (total, overflow2) = partial.subtractingReportingOverflow(borrow)
            difference[i] = total
            borrow = (overflow1 ? 1 : 0) | (overflow2 ? 1 : 0)
        }
        return (difference, borrow)
    }

    /// a·b + c + d as a double word; cannot overflow (at most (2^64−1)² + 2(2^64−1) = 2^128 − 1).
    @inline(__always)
    private static func multiplyAdd(_ a: UInt64, _ b: UInt64, _ c: UInt64, _ d: UInt64) -> (high: UInt64, low: UInt64) {
        let product = a.multipliedFullWidth(by: b)
        let (low1, overflow1) = product.low.addingReportingOverflow(c)
        let (low2, overflow2) = low1.addingReportingOverflow(d)
        return (product.high &+ (overflow1 ? 1 : 0) &+ (overflow2 ? 1 : 0), low2)
    }
}
