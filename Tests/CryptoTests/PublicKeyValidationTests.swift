import TestSupport
import Crypto
import Testing

/// SEC 1 §3.2.2.1 public key validation of untrusted X9.62 points.
@Suite struct PublicKeyValidationTests {
    static let p256Valid = P256SigningTests.rfc6979PublicKey
    static let p384Valid = P384VerificationTests.rfc6979PublicKey

    @Test func generatorsAreAccepted() {
        #expect(P256.PublicKey(x962Representation: CurveConstants.p256Generator) != nil)
        #expect(P384.PublicKey(x962Representation: CurveConstants.p384Generator) != nil)
    }

    @Test func malformedEncodingsAreRejected() {
        let compressed = [0x02 | (Self.p256Valid[64] & 1)] + Self.p256Valid[1 ..< 33]
        let encodings: [[UInt8]] = [
            [],
            [0x00],  // the point at infinity
            [0x04],
            compressed,  // valid compressed form: not supported
            [0x03] + Self.p256Valid[1 ..< 33],
            [0x06] + Self.p256Valid.dropFirst(),  // hybrid forms
            [0x07] + Self.p256Valid.dropFirst(),
            [0x05] + Self.p256Valid.dropFirst(),
            Self.p256Valid + [0],
            [0x04, 0x00] + Self.p256Valid.dropFirst(),
            Array(Self.p256Valid.dropLast()),
            [0x04] + [UInt8](repeating: 0, count: 64),  // (0, 0) is not on the curve
            Self.p384Valid,  // a P-384 point
        ]
        for encoding in encodings {
            #expect(P256.PublicKey(x962Representation: encoding) == nil)
        }
        #expect(P384.PublicKey(x962Representation: Self.p256Valid) == nil)
        #expect(P384.PublicKey(x962Representation: [0x00]) == nil)
        #expect(P384.PublicKey(x962Representation: [0x02 | (Self.p384Valid[96] & 1)] + Self.p384Valid[1 ..< 49]) == nil)
    }

    @Test func pointsOffTheCurveAreRejected() {
        for byte in [1, 16, 32, 33, 50, 64] {
            var altered = Self.p256Valid
            altered[byte] ^= 0x01
            #expect(P256.PublicKey(x962Representation: altered) == nil)
        }
        for byte in [1, 24, 48, 49, 70, 96] {
            var altered = Self.p384Valid
            altered[byte] ^= 0x01
            #expect(P384.PublicKey(x962Representation: altered) == nil)
        }
    }

    /// x = 0 is on both curves (b is a square), with these y (computed while
    /// authoring as b^((p+1)/4) mod p, p ≡ 3 mod 4).
    static let p256ZeroXY = hex("66485c780e2f83d72433bd5d84a06bb6541c2af31dae871728bf856a174f93f4")
    static let p384ZeroXY = hex("""
        c306610fb0ae5a159cf45c06069f22a6c5eb3641c602d42dea2c4b4f75550793
        406d80d2b91ad54f9048bd487af1ade1
        """)

    /// A coordinate ≥ p is rejected even when it is congruent to a valid one:
    /// (0, y) is a point, and (p, y) encodes the same residues in the same
    /// width, so only the range check (SEC 1 §3.2.2.1 step 2) refuses it.
    @Test func coordinatesNotBelowThePrimeAreRejected() {
        let zero256 = [UInt8](repeating: 0, count: 32)
        #expect(P256.PublicKey(x962Representation: [0x04] + zero256 + Self.p256ZeroXY) != nil)
        #expect(P256.PublicKey(x962Representation: [0x04] + CurveConstants.p256Prime + Self.p256ZeroXY) == nil)
        let generatorX = Array(CurveConstants.p256Generator[1 ..< 33])
        #expect(P256.PublicKey(x962Representation: [0x04] + generatorX + CurveConstants.p256Prime) == nil)
        #expect(P256.PublicKey(x962Representation: [0x04] + [UInt8](repeating: 0xFF, count: 64)) == nil)

        let zero384 = [UInt8](repeating: 0, count: 48)
        #expect(P384.PublicKey(x962Representation: [0x04] + zero384 + Self.p384ZeroXY) != nil)
        #expect(P384.PublicKey(x962Representation: [0x04] + CurveConstants.p384Prime + Self.p384ZeroXY) == nil)
        let generator384X = Array(CurveConstants.p384Generator[1 ..< 49])
        #expect(P384.PublicKey(x962Representation: [0x04] + generator384X + CurveConstants.p384Prime) == nil)
    }

    /// A point with a zero coordinate works as a key in ECDH and verification.
    @Test func zeroCoordinatePointIsUsable() throws {
        let peer = try #require(P256.PublicKey(x962Representation: [0x04] + [UInt8](repeating: 0, count: 32) + Self.p256ZeroXY))
        let a = try #require(P256.PrivateKey(rawScalar: [UInt8](repeating: 0, count: 31) + [3]))
        let b = try #require(P256.PrivateKey(rawScalar: [UInt8](repeating: 0, count: 31) + [5]))
        let aPeer = try #require(a.sharedSecret(with: peer))
        let bPeer = try #require(b.sharedSecret(with: peer))
        #expect(aPeer != bPeer)
        #expect(aPeer.count == 32)
    }

    @Test func everyTruncationIsRejected() {
        for length in 0 ..< Self.p256Valid.count {
            #expect(P256.PublicKey(x962Representation: Array(Self.p256Valid.prefix(length))) == nil)
        }
        for length in 0 ..< Self.p384Valid.count {
            #expect(P384.PublicKey(x962Representation: Array(Self.p384Valid.prefix(length))) == nil)
        }
    }

    /// Every single-byte change is handled without a trap; those that parse
    /// must still be points on the curve that round-trip.
    @Test func everySingleByteChangeIsHandled() {
        for index in Self.p256Valid.indices {
            for value in [0x00, 0x01, 0x7F, 0x80, 0xFF] as [UInt8] where value != Self.p256Valid[index] {
                var altered = Self.p256Valid
                altered[index] = value
                if let key = P256.PublicKey(x962Representation: altered) {
                    #expect(key.x962Representation == altered)
                }
            }
        }
    }
}
