import Testing
@testable import Crypto

/// Malformed and hostile inputs: wrong lengths, low-order points (all-zero
/// result, RFC 8446 §7.4.2 / RFC 7748 §6.1), and the §5 decoding rules for
/// u-coordinates (top bit ignored, values >= p reduced).
@Suite struct X25519InputTests {
    private let alicePrivate = bytes(hex: "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    private let bobPrivate = bytes(hex: "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
    private let bobPublic = bytes(hex: "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
    private let shared = bytes(hex: "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")

    @Test("every length other than 32 is rejected, for each input")
    func wrongLengths() {
        for length in 0 ... 65 where length != 32 {
            let wrong = [UInt8](repeating: 0x42, count: length)
            #expect(X25519.publicKey(privateKey: wrong) == nil, "private key of \(length) bytes")
            #expect(X25519.sharedSecret(privateKey: wrong, peerPublicKey: bobPublic) == nil, "private key of \(length) bytes")
            #expect(X25519.sharedSecret(privateKey: alicePrivate, peerPublicKey: wrong) == nil, "peer key of \(length) bytes")
            #expect(X25519.sharedSecret(privateKey: wrong, peerPublicKey: wrong) == nil)
        }
    }

    /// u-coordinates of the points of order 2, 4 and 8 on curve25519 and
    /// its twist (0 is also the usual stand-in for the identity, order 1), canonical and (for 0 and 1, the only such values below 19) non-canonical encodings,
    /// with and without the ignored top bit. A clamped scalar is a multiple
    /// of 8, so every one of them yields the all-zero output.
    static let lowOrderPoints: [String] = [
        "0000000000000000000000000000000000000000000000000000000000000000", // 0 (order 2)
        "0100000000000000000000000000000000000000000000000000000000000000", // 1 (order 4)
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800", // order 8
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157", // order 8
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // p - 1 (order 4)
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // p, non-canonical 0
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // p + 1, non-canonical 1
        "0000000000000000000000000000000000000000000000000000000000000080", // 0 with the top bit set
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b880", // order 8, top bit set
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f11d7", // order 8, top bit set
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", // p, top bit set
    ]

    @Test("low-order peer points give the all-zero secret, which is rejected", arguments: lowOrderPoints)
    func lowOrderPointRejected(point: String) {
        #expect(X25519.sharedSecret(privateKey: alicePrivate, peerPublicKey: bytes(hex: point)) == nil)
        #expect(X25519.sharedSecret(privateKey: bobPrivate, peerPublicKey: bytes(hex: point)) == nil)
    }

    @Test("the top bit of the peer's u-coordinate is ignored (§5)")
    func topBitIgnored() {
        var withTopBit = bobPublic
        withTopBit[31] |= 0x80
        #expect(X25519.sharedSecret(privateKey: alicePrivate, peerPublicKey: withTopBit) == shared)
    }

    @Test("a non-canonical u-coordinate (>= p) is accepted and reduced mod p (§5)")
    func nonCanonicalReduced() {
        // p + 9 = 2^255 - 10, and the same with bit 255 also set.
        let pPlusNine = bytes(hex: "f6ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")
        let pPlusNineTopBit = bytes(hex: "f6ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff")
        let alicePublic = X25519.publicKey(privateKey: alicePrivate)
        #expect(alicePublic != nil)
        #expect(X25519.sharedSecret(privateKey: alicePrivate, peerPublicKey: pPlusNine) == alicePublic)
        #expect(X25519.sharedSecret(privateKey: alicePrivate, peerPublicKey: pPlusNineTopBit) == alicePublic)

        // Only u < 19 has a second encoding below 2^255 (u + p); check u = 5 too.
        let five: [UInt8] = [5] + [UInt8](repeating: 0, count: 31)
        let fivePlusP = bytes(hex: "f2ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")
        let expected = X25519.sharedSecret(privateKey: bobPrivate, peerPublicKey: five)
        #expect(expected != nil)
        #expect(X25519.sharedSecret(privateKey: bobPrivate, peerPublicKey: fivePlusP) == expected)
    }

    @Test("outputs are canonical: every secret decodes to itself and is below p")
    func outputsCanonical() throws {
        // Exercise many outputs via the iterated construction.
        var k: [UInt8] = [9] + [UInt8](repeating: 0, count: 31)
        var u = k
        for _ in 0 ..< 20 {
            let result = try #require(X25519.sharedSecret(privateKey: k, peerPublicKey: u))
            #expect(result[31] & 0x80 == 0)
            #expect(Field25519(littleEndianBytes: result)?.canonicalBytes == result)
            u = k
            k = result
        }
    }

    @Test("clamping: bits the clamp clears or sets in the private key do not matter")
    func clampingIgnoresBits() {
        var altered = alicePrivate
        altered[0] ^= 0x07     // the three low bits
        altered[31] ^= 0x80    // bit 255
        altered[31] |= 0x40    // bit 254 (already forced to 1)
        #expect(X25519.publicKey(privateKey: altered) == X25519.publicKey(privateKey: alicePrivate))
        #expect(X25519.sharedSecret(privateKey: altered, peerPublicKey: bobPublic) == shared)
    }
}
