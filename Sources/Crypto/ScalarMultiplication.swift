/// Scalar multiplication: constant-time for secret scalars (signing nonces,
/// private keys in key generation and ECDH), variable-time for the public
/// scalars of verification.
extension ShortWeierstrassCurve {
    /// The 16 multiples 0·P … 15·P, stored inline (no heap).
    private typealias WindowTable = InlineArray<16, JacobianPoint<limbCount>>

    private func windowTable(_ point: JacobianPoint<limbCount>) -> WindowTable {
        var table = WindowTable(repeating: infinity)
        table[1] = point
        for multiple in 2 ..< 16 {
            table[multiple] = add(table[multiple - 1], point)
        }
        return table
    }

    /// The 4-bit digit `index` (0 = least significant) of a scalar.
    @inline(__always)
    private static func digit(_ scalar: Limbs<limbCount>, at index: Int) -> UInt64 {
        (scalar[index / 16] >> UInt64(4 * (index % 16))) & 0xF
    }

    /// k·P for a secret k (a plain integer, any value below 2^(64·limbCount)).
    ///
    /// Fixed 4-bit windows from the top: every window costs four doublings,
    /// one scan of the whole table with masked selects (no memory index
    /// depends on k) and one complete addition (no branch depends on k,
    /// including the additions of 0·P while the accumulator is still at
    /// infinity). The number of windows is fixed by the curve, not by k.
    func multiplySecret(_ point: JacobianPoint<limbCount>, by scalar: Limbs<limbCount>) -> JacobianPoint<limbCount> {
        let table = windowTable(point)
        var accumulator = infinity
        var window = 16 * limbCount - 1
        while window >= 0 {
            for _ in 0 ..< 4 { accumulator = double(accumulator) }
            let wanted = Self.digit(scalar, at: window)
            var selected = infinity
            for candidate in 0 ..< 16 {
                let difference = UInt64(candidate) ^ wanted
                let matches = ((difference | (0 &- difference)) >> 63) &- 1
                selected = JacobianPoint.select(mask: matches, table[candidate], otherwise: selected)
            }
            accumulator = add(accumulator, selected)
            window -= 1
        }
        return accumulator
    }

    /// u₁·G + u₂·Q for public scalars (ECDSA verification), interleaving the
    /// 4-bit windows of both scalars over one chain of doublings (Shamir's
    /// trick); zero digits are skipped, which is fine for public data.
    func multiplyPublic(generatorBy u1: Limbs<limbCount>, plus point: JacobianPoint<limbCount>, by u2: Limbs<limbCount>) -> JacobianPoint<limbCount> {
        let generatorTable = windowTable(generator)
        let pointTable = windowTable(point)
        var accumulator = infinity
        var window = 16 * limbCount - 1
        while window >= 0 {
            for _ in 0 ..< 4 { accumulator = double(accumulator) }
            let digit1 = Int(Self.digit(u1, at: window))
            if digit1 != 0 { accumulator = add(accumulator, generatorTable[digit1]) }
            let digit2 = Int(Self.digit(u2, at: window))
            if digit2 != 0 { accumulator = add(accumulator, pointTable[digit2]) }
            window -= 1
        }
        return accumulator
    }
}
