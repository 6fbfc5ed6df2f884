/// ECDSA verification over NIST P-384 (secp384r1; FIPS 186-5, SP 800-186
/// §3.2.1.4), for server certificate chains and CertificateVerify, and ECDH
/// for TLS 1.2 servers that choose P-384 for key exchange. Sluice never signs
/// with P-384: its private key only agrees on secrets.
package enum P384 {
    /// The curve's parameters (SP 800-186 §3.2.1.4), little-endian 64-bit words.
    static let curve = ShortWeierstrassCurve<6>(
        prime: [0x00000000ffffffff, 0xffffffff00000000, 0xfffffffffffffffe,
                0xffffffffffffffff, 0xffffffffffffffff, 0xffffffffffffffff],
        order: [0xecec196accc52973, 0x581a0db248b0a77a, 0xc7634d81f4372ddf,
                0xffffffffffffffff, 0xffffffffffffffff, 0xffffffffffffffff],
        b: [0x2a85c8edd3ec2aef, 0xc656398d8a2ed19d, 0x0314088f5013875a,
            0x181d9c6efe814112, 0x988e056be3f82d19, 0xb3312fa7e23ee7e4],
        generatorX: [0x3a545e3872760ab7, 0x5502f25dbf55296c, 0x59f741e082542a38,
                     0x6e1d3b628ba79b98, 0x8eb1c71ef320ad74, 0xaa87ca22be8b0537],
        generatorY: [0x7a431d7c90ea0e5f, 0x0a60b1ce1d7e819d, 0xe9da3113b5f0b8c0,
                     0xf8f41dbd289a147c, 0x5d9e98bf9292dc29, 0x3617de4a96262c6f],
        byteCount: 48)

    /// An ephemeral key for ECDH (SEC 1 §3.3.1), as P-256's.
    package struct PrivateKey: Sendable {
        private let scalar: Limbs<6>
        package let publicKey: PublicKey

        /// A 48-byte big-endian scalar in [1, n−1]; nil otherwise.
        package init?(rawScalar: [UInt8]) {
            guard rawScalar.count == curve.byteCount,
                  let scalar: Limbs<6> = LimbEncoding.limbs(fromBigEndian: rawScalar[...]),
                  curve.isInScalarRange(scalar)
            else { return nil }
            self.init(scalar: scalar)
        }

        /// A key from caller-supplied randomness: at least 56 random bytes (64
        /// bits more than the order, FIPS 186-5 §A.2.1); nil if fewer.
        package init?(randomBytes: [UInt8]) {
            guard randomBytes.count >= 56 else { return nil }
            self.init(scalar: curve.privateScalar(fromRandomBytes: randomBytes))
        }

        private init(scalar: Limbs<6>) {
            self.scalar = scalar
            publicKey = PublicKey(point: curve.publicPoint(privateScalar: scalar))
        }

        /// The x-coordinate of d·Q, 48 bytes; nil when it is infinity, which a
        /// validated `PublicKey` cannot produce.
        package func sharedSecret(with peer: PublicKey) -> [UInt8]? {
            curve.sharedSecret(privateScalar: scalar, peer: peer.point)
        }
    }

    package struct PublicKey: Sendable, Equatable {
        /// Affine, Z = 1, Montgomery-form coordinates.
        fileprivate let point: JacobianPoint<6>
        package let x962Representation: [UInt8]

        /// SEC 1 §2.3.4 uncompressed point (0x04 ‖ X ‖ Y), validated per
        /// §3.2.2.1: on the curve, coordinates < p, not infinity. Compressed
        /// points are not supported and return nil.
        package init?(x962Representation: [UInt8]) {
            guard let point = curve.point(uncompressedEncoding: x962Representation) else { return nil }
            self.point = point
            self.x962Representation = x962Representation
        }

        fileprivate init(point: JacobianPoint<6>) {
            self.point = point
            x962Representation = curve.uncompressedEncoding(point)
        }

        /// ECDSA verification (FIPS 186-5 §6.4.2); false for r or s outside
        /// [1, n−1]. A digest longer than 48 bytes (SHA-512) contributes its
        /// leftmost 384 bits.
        package func isValidSignature(_ signature: ECDSASignature, forDigest digest: [UInt8]) -> Bool {
            curve.verify(r: signature.r, s: signature.s, digest: digest, publicPoint: point)
        }

        package static func == (lhs: Self, rhs: Self) -> Bool { lhs.x962Representation == rhs.x962Representation }
    }
}
