/// Unsigned multi-precision arithmetic modulo an odd modulus, just enough for
/// RSA's public operation (RFC 8017 §5.2.2 RSAVP1: s^e mod n).
///
/// Numbers are little-endian arrays of 64-bit limbs, exactly `limbCount` long.
/// Products use Montgomery's method (Montgomery 1985; Handbook of Applied
/// Cryptography §14.36): with R = 2^(64·limbCount), `montgomeryProduct(a, b)`
/// is a·b·R⁻¹ mod n, which needs no division by n. Everything here works on
/// public values (signatures, public keys), so it runs in variable time.
struct MontgomeryModulus: Sendable {
    /// n, little-endian limbs, the top limb non-zero.
    let limbs: [UInt64]
    /// −n⁻¹ mod 2^64, which makes the low limb vanish in each reduction step.
    private let negativeInverse: UInt64
    /// R² mod n, computed once per key: `montgomeryProduct(x, rSquared)` moves
    /// x into Montgomery form (x·R mod n).
    private let rSquared: [UInt64]

    var limbCount: Int { limbs.count }

    /// nil unless `modulus` (big-endian, no leading zero byte) is odd.
    init?(bigEndianModulus modulus: [UInt8]) {
        guard let last = modulus.last, last & 1 == 1, modulus.first != 0 else { return nil }
        let limbs = Self.limbs(fromBigEndian: modulus, limbCount: (modulus.count + 7) / 8)
        self.limbs = limbs
        self.negativeInverse = 0 &- Self.inverseModulo2to64(limbs[0])
        self.rSquared = Self.rSquaredModulo(limbs)
    }

    /// Little-endian limbs of a big-endian byte string, zero-extended to `limbCount`.
    /// The caller guarantees the value fits (bytes.count <= 8 · limbCount).
    static func limbs(fromBigEndian bytes: [UInt8], limbCount: Int) -> [UInt64] {
        var limbs = [UInt64](repeating: 0, count: limbCount)
        for (offset, byte) in bytes.reversed().enumerated() where offset / 8 < limbCount {
            limbs[offset / 8] |= UInt64(byte) << UInt64(8 * (offset % 8))
        }
        return limbs
    }

    /// The value as exactly `byteCount` big-endian bytes (I2OSP, RFC 8017 §4.1),
    /// or nil if it does not fit ("integer too large").
    static func bigEndianBytes(of limbs: [UInt64], byteCount: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: byteCount)
        for (index, limb) in limbs.enumerated() {
            for byteInLimb in 0 ..< 8 {
                let byte = UInt8(truncatingIfNeeded: limb >> UInt64(8 * byteInLimb))
                let offset = 8 * index + byteInLimb
                if offset < byteCount {
                    bytes[byteCount - 1 - offset] = byte
                } else if byte != 0 {
                    return nil
                }
            }
        }
        return bytes
    }

    /// a < b as integers of equal limb count.
    static func isLess(_ a: [UInt64], than b: [UInt64]) -> Bool {
        for index in stride(from: a.count - 1, through: 0, by: -1) where a[index] != b[index] {
            return a[index] < b[index]
        }
        return false
    }

    /// base^exponent mod n for 0 <= base < n and a big-endian exponent with
    /// at least one bit set, by left-to-right square-and-multiply in
    /// Montgomery form starting at the exponent's leading one bit.
    func power(_ base: [UInt64], exponent: [UInt8]) -> [UInt64] {
        let baseMontgomery = montgomeryProduct(base, rSquared)
        var accumulator: [UInt64]? = nil
        for byte in exponent {
            for bit in stride(from: 7, through: 0, by: -1) {
                let isSet = byte >> UInt8(bit) & 1 == 1
                if let current = accumulator {
                    let squared = montgomeryProduct(current, current)
                    accumulator = isSet ? montgomeryProduct(squared, baseMontgomery) : squared
                } else if isSet {
                    accumulator = baseMontgomery
                }
            }
        }
        var one = [UInt64](repeating: 0, count: limbCount)
        one[0] = 1
        // Leaving Montgomery form is a product with 1; a zero exponent leaves 1.
        return montgomeryProduct(accumulator ?? montgomeryProduct(one, rSquared), one)
    }

    /// a·b·R⁻¹ mod n for a, b < n: the coarsely integrated operand scanning
    /// form (Koç, Acar, Kaliski 1996, "CIOS"), one limb of b at a time, each
    /// followed by one reduction step that clears the lowest limb.
    func montgomeryProduct(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        let count = limbCount
        // t has two extra limbs: the running value stays below 2n < 2·R.
        var t = [UInt64](repeating: 0, count: count + 2)
        for i in 0 ..< count {
            // t += a · b[i]
            var carry: UInt64 = 0
            for j in 0 ..< count {
                (carry, t[j]) = Self.multiplyAdd(a[j], b[i], t[j], carry)
            }
            var overflow: Bool
            (t[count], overflow) = t[count].addingReportingOverflow(carry)
            t[count + 1] = overflow ? 1 : 0

            // t = (t + m·n) / 2^64 with m chosen so the low limb becomes zero.
            let m = t[0] &* negativeInverse
            (carry, _) = Self.multiplyAdd(m, limbs[0], t[0], 0)
            for j in 1 ..< count {
                (carry, t[j - 1]) = Self.multiplyAdd(m, limbs[j], t[j], carry)
            }
            (t[count - 1], overflow) = t[count].addingReportingOverflow(carry)
            t[count] = t[count + 1] &+ (overflow ? 1 : 0)
        }
        // t < 2n: one conditional subtraction brings it below n.
        var result = Array(t[0 ..< count])
        if t[count] != 0 || !Self.isLess(result, than: limbs) {
            Self.subtract(limbs, from: &result)
        }
        return result
    }

    /// x·y + addend + carry as (high, low); it cannot overflow 128 bits since
    /// (2^64−1)² + 2·(2^64−1) = 2^128 − 1.
    private static func multiplyAdd(_ x: UInt64, _ y: UInt64, _ addend: UInt64, _ carry: UInt64) -> (high: UInt64, low: UInt64) {
        var (high, low) = x.multipliedFullWidth(by: y)
        var overflow: Bool
        (low, overflow) = low.addingReportingOverflow(addend)
        if overflow { high &+= 1 }
        (low, overflow) = low.addingReportingOverflow(carry)
        if overflow { high &+= 1 }
        return (high, low)
    }

    /// value -= subtrahend, modulo 2^(64·count); the borrow out is dropped
    /// because callers only subtract when the true result is non-negative
    /// (or when a dropped top limb accounts for it).
    private static func subtract(_ subtrahend: [UInt64], from value: inout [UInt64]) {
        var borrow = false
        for index in value.indices {
            let (difference, borrowOut1) = value[index].subtractingReportingOverflow(subtrahend[index])
            let (final, borrowOut2) = difference.subtractingReportingOverflow(borrow ? 1 : 0)
            value[index] = final
            borrow = borrowOut1 || borrowOut2
        }
    }

    /// x⁻¹ mod 2^64 for odd x by Newton's iteration y ← y·(2 − x·y), which
    /// doubles the number of correct low bits each step; y = x is already
    /// correct to 3 bits for odd x, so five steps reach 96 ≥ 64.
    private static func inverseModulo2to64(_ x: UInt64) -> UInt64 {
        var y = x
        for _ in 0 ..< 5 { y = y &* (2 &- x &* y) }
        return y
    }

    /// R² mod n by doubling 1 modulo n 2·64·limbCount times. Slow-ish (a few
    /// hundred thousand limb operations for 4096 bits) but done once per key,
    /// and needs no division.
    private static func rSquaredModulo(_ modulus: [UInt64]) -> [UInt64] {
        let count = modulus.count
        var value = [UInt64](repeating: 0, count: count)
        value[0] = 1
        for _ in 0 ..< 2 * 64 * count {
            // value < n, so 2·value < 2n: shift, then subtract n at most once.
            var carry: UInt64 = 0
            for index in 0 ..< count {
                let next = value[index] >> 63
                value[index] = value[index] << 1 | carry
                carry = next
            }
            if carry != 0 || !isLess(value, than: modulus) {
                subtract(modulus, from: &value)
            }
        }
        return value
    }
}
