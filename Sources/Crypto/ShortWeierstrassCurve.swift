/// A point in Jacobian coordinates (X, Y, Z) standing for the affine point
/// (X/Z², Y/Z³); Z = 0 is the point at infinity. Coordinates are field
/// elements in Montgomery form.
struct JacobianPoint<let limbCount: Int>: Sendable {
    var x: Limbs<limbCount>
    var y: Limbs<limbCount>
    var z: Limbs<limbCount>

    /// `a` where mask is all ones, `b` where it is zero, coordinate by coordinate.
    static func select(mask: UInt64, _ a: Self, otherwise b: Self) -> Self {
        JacobianPoint(
            x: PrimeField<limbCount>.select(mask: mask, a.x, otherwise: b.x),
            y: PrimeField<limbCount>.select(mask: mask, a.y, otherwise: b.y),
            z: PrimeField<limbCount>.select(mask: mask, a.z, otherwise: b.z))
    }
}

/// The group law of a short Weierstrass curve y² = x³ − 3x + b over GF(p)
/// (the a = −3 family of FIPS 186-4 §D.1.2 / SP 800-186 §3.2.1), on Jacobian
/// points. Both operations are branch-free in the coordinates, so they serve
/// the constant-time scalar multiplication as well as verification.
struct ShortWeierstrassCurve<let limbCount: Int>: Sendable {
    let field: PrimeField<limbCount>
    let order: PrimeField<limbCount>
    /// The coefficient b, in Montgomery form.
    let b: Limbs<limbCount>
    let generator: JacobianPoint<limbCount>
    /// Bytes of a field element or scalar: 32 for P-256, 48 for P-384.
    let byteCount: Int

    /// Parameters as plain integers (not Montgomery form), little-endian words.
    init(prime: Limbs<limbCount>, order: Limbs<limbCount>, b: Limbs<limbCount>,
         generatorX: Limbs<limbCount>, generatorY: Limbs<limbCount>, byteCount: Int) {
        let field = PrimeField(modulus: prime)
        let orderModulus = PrimeField(modulus: order)
        self.field = field
        self.order = orderModulus
        self.b = field.toMontgomery(b)
        generator = JacobianPoint(x: field.toMontgomery(generatorX), y: field.toMontgomery(generatorY), z: field.one)
        self.byteCount = byteCount
    }

    var infinity: JacobianPoint<limbCount> {
        JacobianPoint(x: field.one, y: field.one, z: PrimeField<limbCount>.zero)
    }

    /// 2P, "dbl-2001-b" of the Explicit-Formulas Database for a = −3:
    /// α = 3(X − Z²)(X + Z²) replaces 3X² + aZ⁴. Infinity (Z = 0) doubles to
    /// Z₃ = (Y + 0)² − Y² − 0 = 0, infinity again, without a special case.
    func double(_ point: JacobianPoint<limbCount>) -> JacobianPoint<limbCount> {
        let delta = field.square(point.z)
        let gamma = field.square(point.y)
        let beta = field.multiply(point.x, gamma)
        let xMinusDelta = field.subtract(point.x, delta)
        let xPlusDelta = field.add(point.x, delta)
        let product = field.multiply(xMinusDelta, xPlusDelta)
        let alpha = field.add(field.add(product, product), product)
        let fourBeta = field.add(field.add(beta, beta), field.add(beta, beta))
        let eightBeta = field.add(fourBeta, fourBeta)
        let x3 = field.subtract(field.square(alpha), eightBeta)
        let yPlusZ = field.add(point.y, point.z)
        let z3 = field.subtract(field.subtract(field.square(yPlusZ), gamma), delta)
        let gammaSquared = field.square(gamma)
        let twoGammaSquared = field.add(gammaSquared, gammaSquared)
        let fourGammaSquared = field.add(twoGammaSquared, twoGammaSquared)
        let eightGammaSquared = field.add(fourGammaSquared, fourGammaSquared)
        let y3 = field.subtract(field.multiply(alpha, field.subtract(fourBeta, x3)), eightGammaSquared)
        return JacobianPoint(x: x3, y: y3, z: z3)
    }

    /// P + Q for any P and Q, infinity and P = Q included.
    ///
    /// The general formula (Cohen, Miyaji and Ono 1998: U₁ = X₁Z₂², U₂ = X₂Z₁²,
    /// S₁ = Y₁Z₂³, S₂ = Y₂Z₁³, H = U₂ − U₁, R = S₂ − S₁) fails for P = Q
    /// (H = R = 0) and for either input at infinity. Rather than branch,
    /// every case is computed and the right one selected with masks:
    /// - H = 0, R ≠ 0 means P = −Q, and the formula already gives Z₃ = 0;
    /// - H = 0, R = 0 means P = Q: take 2P;
    /// - Z₁ = 0: take Q; Z₂ = 0: take P.
    func add(_ p: JacobianPoint<limbCount>, _ q: JacobianPoint<limbCount>) -> JacobianPoint<limbCount> {
        let z1Squared = field.square(p.z)
        let z2Squared = field.square(q.z)
        let u1 = field.multiply(p.x, z2Squared)
        let u2 = field.multiply(q.x, z1Squared)
        let s1 = field.multiply(p.y, field.multiply(q.z, z2Squared))
        let s2 = field.multiply(q.y, field.multiply(p.z, z1Squared))
        let h = field.subtract(u2, u1)
        let r = field.subtract(s2, s1)
        let hSquared = field.square(h)
        let hCubed = field.multiply(hSquared, h)
        let u1HSquared = field.multiply(u1, hSquared)
        let x3 = field.subtract(field.subtract(field.square(r), hCubed), field.add(u1HSquared, u1HSquared))
        let y3 = field.subtract(field.multiply(r, field.subtract(u1HSquared, x3)), field.multiply(s1, hCubed))
        let z3 = field.multiply(field.multiply(p.z, q.z), h)
        var sum = JacobianPoint(x: x3, y: y3, z: z3)

        typealias Modulus = PrimeField<limbCount>
        let sameMask = Modulus.isZeroMask(h) & Modulus.isZeroMask(r)
        sum = JacobianPoint.select(mask: sameMask, double(p), otherwise: sum)
        sum = JacobianPoint.select(mask: Modulus.isZeroMask(q.z), p, otherwise: sum)
        sum = JacobianPoint.select(mask: Modulus.isZeroMask(p.z), q, otherwise: sum)
        return sum
    }

    /// The affine coordinates (plain integers, not Montgomery form), or nil
    /// for the point at infinity. Constant-time apart from the infinity test,
    /// which callers only reach with points that are finite by construction
    /// or public.
    func affineCoordinates(_ point: JacobianPoint<limbCount>) -> (x: Limbs<limbCount>, y: Limbs<limbCount>)? {
        if PrimeField<limbCount>.isZero(point.z) { return nil }
        let zInverse = field.inverse(point.z)
        let zInverseSquared = field.square(zInverse)
        let x = field.multiply(point.x, zInverseSquared)
        let y = field.multiply(point.y, field.multiply(zInverseSquared, zInverse))
        return (field.fromMontgomery(x), field.fromMontgomery(y))
    }

    /// The point with affine coordinates (x, y), plain integers, if it lies on
    /// the curve with both coordinates < p (SEC 1 §3.2.2.1 steps 2 and 3; an
    /// affine point is never infinity, and with cofactor 1 step 4 holds for
    /// every point on the curve).
    func validatedPoint(x: Limbs<limbCount>, y: Limbs<limbCount>) -> JacobianPoint<limbCount>? {
        guard field.isReduced(x), field.isReduced(y) else { return nil }
        let xMontgomery = field.toMontgomery(x)
        let yMontgomery = field.toMontgomery(y)
        let threeX = field.add(field.add(xMontgomery, xMontgomery), xMontgomery)
        let rightSide = field.add(field.subtract(field.multiply(field.square(xMontgomery), xMontgomery), threeX), b)
        guard PrimeField<limbCount>.areEqual(field.square(yMontgomery), rightSide) else { return nil }
        return JacobianPoint(x: xMontgomery, y: yMontgomery, z: field.one)
    }
}
