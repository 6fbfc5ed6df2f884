import TestSupport
import Testing
@testable import Crypto

/// EMSA-PSS-VERIFY (RFC 8017 §9.1.2) on its own, starting from the encoded
/// message openssl's raw RSA recovered from a real 2048-bit PSS SHA-256
/// signature (emBits = 2047, emLen = 256, hLen = sLen = 32), then breaking
/// each condition the verification checks.
///
/// Layout: maskedDB = EM[0 ..< 223], H = EM[223 ..< 255], EM[255] = 0xbc.
/// DB = PS (190 zeros) || 0x01 || salt (32). Flipping a bit of maskedDB
/// flips the same bit of DB, since the mask depends on H alone.
struct RSAPSSEncodingTests {
    private static let encodedMessage = hex(RSATestVectors.rsa2048PSSSHA256BisEncodedMessage)
    private static let digest = SHA256.hash(RSATestVectors.message)
    private static let separatorIndex = 256 - 32 - 32 - 2

    private static func verify(_ encodedMessage: [UInt8], bits: Int = 2047, saltLength: Int = 32, digest: [UInt8] = digest, hash: RSAHash = .sha256) -> Bool {
        RSAPublicKey.emsaPSSVerify(digest: digest, encodedMessage: encodedMessage, encodedMessageBits: bits, hash: hash, saltLength: saltLength)
    }

    private static func changed(_ index: Int, xor mask: UInt8) -> [UInt8] {
        var bytes = encodedMessage
        bytes[index] ^= mask
        return bytes
    }

    @Test func recoveredEncodingIsConsistent() {
        #expect(Self.encodedMessage.count == 256)
        #expect(Self.encodedMessage.last == 0xbc)
        #expect(Self.verify(Self.encodedMessage))
    }

    @Test func trailerFieldMustBe0xbc() {
        for mask: UInt8 in [0x01, 0x80, 0xbc, 0xff] {
            #expect(!Self.verify(Self.changed(255, xor: mask)))
        }
    }

    /// Step 6: with emBits = 2047 the top bit of EM is outside the encoding.
    /// With emBits = 2041, bits 7…1 of the first octet must all be zero.
    @Test func leftmostBitsMustBeZero() {
        #expect(!Self.verify(Self.changed(0, xor: 0x80)))
        // A 2041..2047-bit emBits still needs emLen = 256; only 2047 fits these bytes here.
        for bits in 2041 ... 2046 where Self.encodedMessage[0] >> UInt8(2048 - bits) != 0 {
            #expect(!Self.verify(Self.encodedMessage, bits: bits))
        }
    }

    @Test func zeroPaddingMustBeZero() {
        for index in [0, 1, 100, Self.separatorIndex - 1] {
            for mask: UInt8 in [0x01, 0x40] {
                #expect(!Self.verify(Self.changed(index, xor: mask)), "PS octet \(index)")
            }
        }
    }

    @Test func separatorMustBe0x01() {
        for mask: UInt8 in [0x01, 0x02, 0x80, 0xff] {
            #expect(!Self.verify(Self.changed(Self.separatorIndex, xor: mask)))
        }
    }

    @Test func saltAndHashAreBound() {
        // A changed salt octet changes H'.
        #expect(!Self.verify(Self.changed(Self.separatorIndex + 1, xor: 0x01)))
        #expect(!Self.verify(Self.changed(222, xor: 0x10)))
        // A changed H changes both the mask and the comparison.
        #expect(!Self.verify(Self.changed(223, xor: 0x01)))
        #expect(!Self.verify(Self.changed(254, xor: 0x80)))
        var otherDigest = Self.digest
        otherDigest[0] ^= 1
        #expect(!Self.verify(Self.encodedMessage, digest: otherDigest))
    }

    @Test func saltLengthMustMatch() {
        for saltLength in [0, 20, 31, 33, 64, 222, 223, -1, Int.max, Int.min] {
            #expect(!Self.verify(Self.encodedMessage, saltLength: saltLength), "salt length \(saltLength)")
        }
    }

    @Test func inconsistentSizesAreRejected() {
        // emBits must give exactly this emLen.
        for bits in [2040, 2049, 4095, 0, -1, Int.min] {
            #expect(!Self.verify(Self.encodedMessage, bits: bits), "emBits \(bits)")
        }
        // Step 3: emLen < hLen + sLen + 2.
        let short: [UInt8] = [UInt8](repeating: 0, count: 65) + [0xbc]
        #expect(!Self.verify(short, bits: 8 * 66))
        #expect(!Self.verify([], bits: 0))
        #expect(!Self.verify([0xbc], bits: 8))
        // Digest of the wrong size for the hash.
        #expect(!Self.verify(Self.encodedMessage, digest: Array(Self.digest.dropLast())))
        #expect(!Self.verify(Self.encodedMessage, digest: SHA512.hash(RSATestVectors.message), hash: .sha512))
    }

    /// MGF1's counter (§B.2.1): the first 32 octets of a 100-octet mask are
    /// Hash(seed || 00000000), the next Hash(seed || 00000001), and so on.
    @Test func mgf1ConcatenatesCounterHashes() {
        let seed: [UInt8] = Array("seed".utf8)
        let mask = RSAPublicKey.mgf1(seed: seed, maskLength: 100, hash: .sha256)
        let expected = SHA256.hash(seed + [0, 0, 0, 0]) + SHA256.hash(seed + [0, 0, 0, 1]) + SHA256.hash(seed + [0, 0, 0, 2]) + SHA256.hash(seed + [0, 0, 0, 3])
        #expect(mask == Array(expected.prefix(100)))
        #expect(RSAPublicKey.mgf1(seed: seed, maskLength: 0, hash: .sha512) == [])
    }
}
