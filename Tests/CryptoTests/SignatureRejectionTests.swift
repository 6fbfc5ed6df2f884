import TestSupport
import Crypto
import Testing

/// Verification rejects every altered signature and every r or s outside
/// [1, n−1] (FIPS 186-5 §6.4.2 step 2).
@Suite struct SignatureRejectionTests {
    static let p256Key = P256SigningTests.rfc6979PublicKey
    static let p256Digest = hex(P256SigningTests.sha256Vectors[0].digest)
    static let p256Signature = ECDSASignature(r: hex(P256SigningTests.sha256Vectors[0].r),
                                              s: hex(P256SigningTests.sha256Vectors[0].s))
    static let p384Key = P384VerificationTests.rfc6979PublicKey
    static let p384Digest = hex(P384VerificationTests.vectors[0].digest)
    static let p384Signature = ECDSASignature(r: hex(P384VerificationTests.vectors[0].r),
                                              s: hex(P384VerificationTests.vectors[0].s))

    @Test func p256EveryFlippedBitIsRejected() throws {
        let key = try #require(P256.PublicKey(x962Representation: Self.p256Key))
        let signature = Self.p256Signature
        #expect(key.isValidSignature(signature, forDigest: Self.p256Digest))
        for bit in stride(from: 0, to: 256, by: 5) {
            #expect(!key.isValidSignature(ECDSASignature(r: flippingBit(bit, of: signature.r), s: signature.s), forDigest: Self.p256Digest))
            #expect(!key.isValidSignature(ECDSASignature(r: signature.r, s: flippingBit(bit, of: signature.s)), forDigest: Self.p256Digest))
            #expect(!key.isValidSignature(signature, forDigest: flippingBit(bit, of: Self.p256Digest)))
        }
    }

    @Test func p384FlippedBitsAreRejected() throws {
        let key = try #require(P384.PublicKey(x962Representation: Self.p384Key))
        let signature = Self.p384Signature
        for bit in stride(from: 0, to: 384, by: 23) {
            #expect(!key.isValidSignature(ECDSASignature(r: flippingBit(bit, of: signature.r), s: signature.s), forDigest: Self.p384Digest))
            #expect(!key.isValidSignature(ECDSASignature(r: signature.r, s: flippingBit(bit, of: signature.s)), forDigest: Self.p384Digest))
            #expect(!key.isValidSignature(signature, forDigest: flippingBit(bit, of: Self.p384Digest)))
        }
    }

    /// Values that are out of range, including ones congruent to a valid
    /// component (r + n) and ones wider than the order.
    static func outOfRange(order: [UInt8], valid: [UInt8]) -> [[UInt8]] {
        var sum = [UInt8](repeating: 0, count: order.count + 1)
        var carry = 0
        for index in (0 ..< order.count).reversed() {
            let total = Int(order[index]) + Int(valid[index]) + carry
            sum[index + 1] = UInt8(truncatingIfNeeded: total)
            carry = total >> 8
        }
        sum[0] = UInt8(carry)
        return [
            [],
            [0],
            [UInt8](repeating: 0, count: order.count),
            order,
            CurveConstants.adding(1, to: order),
            [UInt8](repeating: 0xFF, count: order.count),
            [1] + [UInt8](repeating: 0, count: order.count),
            sum,
        ]
    }

    @Test func p256ComponentsOutOfRangeAreRejected() throws {
        let key = try #require(P256.PublicKey(x962Representation: Self.p256Key))
        let signature = Self.p256Signature
        for bad in Self.outOfRange(order: CurveConstants.p256Order, valid: signature.r) {
            #expect(!key.isValidSignature(ECDSASignature(r: bad, s: signature.s), forDigest: Self.p256Digest))
        }
        for bad in Self.outOfRange(order: CurveConstants.p256Order, valid: signature.s) {
            #expect(!key.isValidSignature(ECDSASignature(r: signature.r, s: bad), forDigest: Self.p256Digest))
        }
        // s and n − s are both valid ECDSA signatures (no low-S rule in FIPS 186 or TLS).
        #expect(key.isValidSignature(ECDSASignature(r: signature.r, s: hex("0834E36AD29A83BF2BC9385E491D6099C8FDF9D1ED67AA7EA5F51F93782857A9")),
                                     forDigest: Self.p256Digest))
    }

    @Test func p384ComponentsOutOfRangeAreRejected() throws {
        let key = try #require(P384.PublicKey(x962Representation: Self.p384Key))
        let signature = Self.p384Signature
        for bad in Self.outOfRange(order: CurveConstants.p384Order, valid: signature.r) {
            #expect(!key.isValidSignature(ECDSASignature(r: bad, s: signature.s), forDigest: Self.p384Digest))
        }
        for bad in Self.outOfRange(order: CurveConstants.p384Order, valid: signature.s) {
            #expect(!key.isValidSignature(ECDSASignature(r: signature.r, s: bad), forDigest: Self.p384Digest))
        }
    }

    /// Leading zero bytes set directly on the properties do not change the
    /// integer (P1363-style fixed-width halves).
    @Test func leadingZerosInComponentsAreTolerated() throws {
        let key = try #require(P256.PublicKey(x962Representation: Self.p256Key))
        var signature = Self.p256Signature
        signature.r = [0, 0] + signature.r
        signature.s = [0] + signature.s
        #expect(key.isValidSignature(signature, forDigest: Self.p256Digest))
        #expect(ECDSASignature(r: signature.r, s: signature.s) == Self.p256Signature)
    }

    /// r = 1 and s = n − 1 are in range and reach the point arithmetic; they
    /// simply do not verify.
    @Test func boundaryComponentsAreEvaluated() throws {
        let key = try #require(P256.PublicKey(x962Representation: Self.p256Key))
        let orderMinusOne = CurveConstants.adding(-1, to: CurveConstants.p256Order)
        #expect(!key.isValidSignature(ECDSASignature(r: [1], s: [1]), forDigest: Self.p256Digest))
        #expect(!key.isValidSignature(ECDSASignature(r: orderMinusOne, s: orderMinusOne), forDigest: Self.p256Digest))
        #expect(!key.isValidSignature(ECDSASignature(r: [1], s: orderMinusOne), forDigest: []))
    }
}
