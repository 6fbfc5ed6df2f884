/// ECDSA key generation, signing and verification (FIPS 186-5 §6.4, SEC 1
/// §4.1) and ECDH (SEC 1 §3.3.1), written once for every curve size; P256
/// and P384 wrap these with their parameters.
extension ShortWeierstrassCurve {
    private typealias Modulus = PrimeField<limbCount>

    // MARK: Keys

    /// Whether a plain integer is in [1, n − 1], the range of private keys
    /// (FIPS 186-5 §6.2) and of signature components (§6.4.2 step 2).
    func isInScalarRange(_ scalar: Limbs<limbCount>) -> Bool {
        Modulus.isZeroMask(scalar) == 0 && order.isReduced(scalar)
    }

    /// d = (c mod (n − 1)) + 1 for the integer c of the random bytes (FIPS
    /// 186-5 §A.2.1), which gives every d in [1, n − 1] with negligible bias
    /// when c has at least 64 more bits than n. The reduction shifts c in one
    /// bit at a time with a masked subtraction, so it runs in time that depends
    /// only on the byte count.
    func privateScalar(fromRandomBytes bytes: [UInt8]) -> Limbs<limbCount> {
        var orderMinusOne = order.modulus
        orderMinusOne[0] &-= 1  // n is odd, so no borrow
        var remainder = Modulus.zero
        for byte in bytes {
            var bit = 7
            while bit >= 0 {
                // remainder = 2·remainder + bit; it stays below 2(n − 1) with
                // the word shifted out in `carry`.
                var carry = UInt64((byte >> UInt8(bit)) & 1)
                for i in 0 ..< limbCount {
                    let shiftedOut = remainder[i] >> 63
                    remainder[i] = (remainder[i] << 1) | carry
                    carry = shiftedOut
                }
                let (reduced, borrow) = Modulus.subtractRaw(remainder, orderMinusOne)
                remainder = Modulus.select(mask: 0 &- (carry | (1 &- borrow)), reduced, otherwise: remainder)
                bit -= 1
            }
        }
        // remainder + 1 ≤ n − 1: the carry stops inside the words.
        var carry: UInt64 = 1
        for i in 0 ..< limbCount {
            let (sum, overflow) = remainder[i].addingReportingOverflow(carry)
            remainder[i] = sum
            carry = overflow ? 1 : 0
        }
        return remainder
    }

    /// Q = d·G, affine with Montgomery-form coordinates.
    func publicPoint(privateScalar: Limbs<limbCount>) -> JacobianPoint<limbCount> {
        affinePoint(multiplySecret(generator, by: privateScalar)) ?? infinity
    }

    /// The same point with Z = 1 (so its X and Y are the affine coordinates in
    /// Montgomery form), or nil at infinity.
    private func affinePoint(_ point: JacobianPoint<limbCount>) -> JacobianPoint<limbCount>? {
        guard let (x, y) = affineCoordinates(point) else { return nil }
        return JacobianPoint(x: field.toMontgomery(x), y: field.toMontgomery(y), z: field.one)
    }

    /// SEC 1 §2.3.3 uncompressed encoding 0x04 ‖ X ‖ Y of a Z = 1 point.
    func uncompressedEncoding(_ point: JacobianPoint<limbCount>) -> [UInt8] {
        [0x04] + LimbEncoding.bigEndianBytes(field.fromMontgomery(point.x), length: byteCount)
            + LimbEncoding.bigEndianBytes(field.fromMontgomery(point.y), length: byteCount)
    }

    /// SEC 1 §2.3.4 for the uncompressed form only, with the §3.2.2.1
    /// validation: exact length, 0x04 prefix, coordinates < p, on the curve.
    /// The compressed forms (0x02, 0x03) and the infinity encoding (0x00) are
    /// rejected: TLS 1.3 (RFC 8446 §4.2.8.2) and the certificates Sluice
    /// meets use the uncompressed form only.
    func point(uncompressedEncoding bytes: [UInt8]) -> JacobianPoint<limbCount>? {
        guard bytes.count == 1 + 2 * byteCount, bytes.first == 0x04,
              let x: Limbs<limbCount> = LimbEncoding.limbs(fromBigEndian: bytes[1 ..< 1 + byteCount]),
              let y: Limbs<limbCount> = LimbEncoding.limbs(fromBigEndian: bytes[(1 + byteCount)...])
        else { return nil }
        return validatedPoint(x: x, y: y)
    }

    // MARK: ECDSA

    /// The integer e of a message digest (FIPS 186-5 §6.4.1 step 3, RFC 6979
    /// bits2int): its leftmost bits up to the bit length of n, which is a
    /// whole number of bytes for P-256 and P-384; shorter digests are taken
    /// whole. Reduced mod n, as both signing and verification use it.
    private func digestInteger(_ digest: [UInt8]) -> Limbs<limbCount> {
        let leftmost: Limbs<limbCount> = LimbEncoding.limbs(fromBigEndian: digest.prefix(byteCount)) ?? Modulus.zero
        // Below 2^(8·byteCount) < 2n: one subtraction reduces it.
        return order.reduceOnce(leftmost)
    }

    /// Deterministic ECDSA (FIPS 186-5 §6.4.1 with the nonce of RFC 6979 §3.2):
    /// r = x(k·G) mod n, s = k⁻¹(e + r·d) mod n, as plain integers.
    func sign(digest: [UInt8], privateScalar: Limbs<limbCount>) -> (r: Limbs<limbCount>, s: Limbs<limbCount>) {
        let e = digestInteger(digest)
        var nonces = DeterministicNonce(
            privateKey: LimbEncoding.bigEndianBytes(privateScalar, length: byteCount),
            digestOctets: LimbEncoding.bigEndianBytes(e, length: byteCount),
            order: order, byteCount: byteCount)
        while true {
            let k = nonces.next()
            // k·G is never infinity for k in [1, n − 1]; the retry keeps the
            // code total without a trap.
            guard let (x, _) = affineCoordinates(multiplySecret(generator, by: k)) else { continue }
            // x < p < 2n.
            let r = order.reduceOnce(x)
            if Modulus.isZero(r) { continue }
            // The inverse by Fermat's little theorem has a public exponent, so
            // its time does not depend on k.
            let kInverse = order.inverse(order.toMontgomery(k))
            // A plain operand times a Montgomery-form one gives a plain product.
            let rTimesD = order.multiply(r, order.toMontgomery(privateScalar))
            let s = order.multiply(order.add(e, rTimesD), kInverse)
            if Modulus.isZero(s) { continue }
            return (r, s)
        }
    }

    /// ECDSA verification (FIPS 186-5 §6.4.2): r and s as big-endian integers
    /// of any width, public point with Z = 1. Variable-time: every input is
    /// public.
    func verify(r rBytes: [UInt8], s sBytes: [UInt8], digest: [UInt8], publicPoint: JacobianPoint<limbCount>) -> Bool {
        // Step 2: 1 ≤ r, s ≤ n − 1.
        guard let r = signatureInteger(rBytes), let s = signatureInteger(sBytes) else { return false }
        let e = digestInteger(digest)
        let sInverse = order.inverse(order.toMontgomery(s))
        let u1 = order.multiply(e, sInverse)
        let u2 = order.multiply(r, sInverse)
        guard let (x, _) = affineCoordinates(multiplyPublic(generatorBy: u1, plus: publicPoint, by: u2)) else {
            return false
        }
        return Modulus.areEqual(order.reduceOnce(x), r)
    }

    /// A signature component in [1, n − 1], leading zero bytes allowed.
    private func signatureInteger(_ bytes: [UInt8]) -> Limbs<limbCount>? {
        let significant = bytes.drop { $0 == 0 }
        guard significant.count <= byteCount,
              let value: Limbs<limbCount> = LimbEncoding.limbs(fromBigEndian: ArraySlice(significant)),
              isInScalarRange(value)
        else { return nil }
        return value
    }

    // MARK: ECDH

    /// The x-coordinate of d·Q (SEC 1 §3.3.1), or nil when it is infinity
    /// (impossible for a validated Q on these prime-order curves and d in
    /// [1, n − 1], but not trapped on).
    func sharedSecret(privateScalar: Limbs<limbCount>, peer: JacobianPoint<limbCount>) -> [UInt8]? {
        guard let (x, _) = affineCoordinates(multiplySecret(peer, by: privateScalar)) else { return nil }
        return LimbEncoding.bigEndianBytes(x, length: byteCount)
    }
}
