/// ECDSA and ECDH over NIST P-256 (secp256r1; FIPS 186-5, SP 800-186 §3.2.1.3):
/// Sluice signs with its CA key and per-host leaf keys, verifies server
/// certificates and CertificateVerify, and runs the TLS 1.3 secp256r1 key
/// exchange.
package enum P256 {
    /// The curve's parameters (SP 800-186 §3.2.1.3), little-endian 64-bit words.
    static let curve = ShortWeierstrassCurve<4>(
        prime: [0xffffffffffffffff, 0x00000000ffffffff, 0x0000000000000000, 0xffffffff00000001],
        order: [0xf3b9cac2fc632551, 0xbce6faada7179e84, 0xffffffffffffffff, 0xffffffff00000000],
        b: [0x3bce3c3e27d2604b, 0x651d06b0cc53b0f6, 0xb3ebbd55769886bc, 0x5ac635d8aa3a93e7],
        generatorX: [0xf4a13945d898c296, 0x77037d812deb33a0, 0xf8bce6e563a440f2, 0x6b17d1f2e12c4247],
        generatorY: [0xcbb6406837bf51f5, 0x2bce33576b315ece, 0x8ee7eb4a7c0f9e16, 0x4fe342e2fe1a7f9b],
        byteCount: 32)

    package struct PrivateKey: Sendable {
        private let scalar: Limbs<4>
        package let publicKey: PublicKey

        /// A 32-byte big-endian scalar in [1, n−1]; nil otherwise.
        package init?(rawScalar: [UInt8]) {
            guard rawScalar.count == curve.byteCount,
                  let scalar: Limbs<4> = LimbEncoding.limbs(fromBigEndian: rawScalar[...]),
                  curve.isInScalarRange(scalar)
            else { return nil }
            self.init(scalar: scalar)
        }

        /// A key from caller-supplied randomness: at least 48 random bytes,
        /// reduced mod (n−1) then +1 (FIPS 186-5 §A.2.1); nil if fewer bytes.
        package init?(randomBytes: [UInt8]) {
            guard randomBytes.count >= 48 else { return nil }
            self.init(scalar: curve.privateScalar(fromRandomBytes: randomBytes))
        }

        private init(scalar: Limbs<4>) {
            self.scalar = scalar
            publicKey = PublicKey(point: curve.publicPoint(privateScalar: scalar))
        }

        package var rawScalar: [UInt8] { LimbEncoding.bigEndianBytes(scalar, length: curve.byteCount) }

        /// Deterministic ECDSA (RFC 6979 §3.2, HMAC-SHA-256) over a message
        /// digest; a digest longer than 32 bytes contributes its leftmost 256
        /// bits (FIPS 186-5 §6.4.1). r and s come out in minimal form.
        package func signature(forDigest digest: [UInt8]) -> ECDSASignature {
            let (r, s) = curve.sign(digest: digest, privateScalar: scalar)
            return ECDSASignature(r: LimbEncoding.bigEndianBytes(r, length: curve.byteCount),
                                  s: LimbEncoding.bigEndianBytes(s, length: curve.byteCount))
        }

        /// ECDH (SEC 1 §3.3.1): the x-coordinate of d·Q, 32 bytes, as TLS 1.3
        /// uses it (RFC 8446 §7.4.2). nil when d·Q is infinity, which a
        /// validated `PublicKey` cannot produce.
        package func sharedSecret(with peer: PublicKey) -> [UInt8]? {
            curve.sharedSecret(privateScalar: scalar, peer: peer.point)
        }
    }

    package struct PublicKey: Sendable, Equatable {
        /// Affine, Z = 1, Montgomery-form coordinates.
        fileprivate let point: JacobianPoint<4>
        package let x962Representation: [UInt8]

        /// SEC 1 §2.3.4 uncompressed point (0x04 ‖ X ‖ Y), validated per
        /// §3.2.2.1: on the curve, coordinates < p, not infinity. Compressed
        /// points are not supported and return nil.
        package init?(x962Representation: [UInt8]) {
            guard let point = curve.point(uncompressedEncoding: x962Representation) else { return nil }
            self.point = point
            self.x962Representation = x962Representation
        }

        fileprivate init(point: JacobianPoint<4>) {
            self.point = point
            x962Representation = curve.uncompressedEncoding(point)
        }

        /// ECDSA verification (FIPS 186-5 §6.4.2); false for r or s outside
        /// [1, n−1]. A digest longer than 32 bytes contributes its leftmost
        /// 256 bits.
        package func isValidSignature(_ signature: ECDSASignature, forDigest digest: [UInt8]) -> Bool {
            curve.verify(r: signature.r, s: signature.s, digest: digest, publicPoint: point)
        }

        package static func == (lhs: Self, rhs: Self) -> Bool { lhs.x962Representation == rhs.x962Representation }
    }
}
