import TestSupport
import Testing
@testable import Crypto

/// One openssl-made signature over `RSATestVectors.message`.
struct RSASignatureVector: Sendable, CustomTestStringConvertible {
    enum Scheme: Sendable { case pkcs1v15, pss(saltLength: Int) }
    let name: String
    let keyDER: String
    let signature: String
    let hash: RSAHash
    let scheme: Scheme

    var testDescription: String { name }

    var key: RSAPublicKey? { RSAPublicKey(pkcs1DERRepresentation: hex(keyDER)) }
    var digest: [UInt8] { hash.hash(RSATestVectors.message) }

    func verifies(_ key: RSAPublicKey, signature: [UInt8], digest: [UInt8], hash: RSAHash, scheme: Scheme? = nil) -> Bool {
        switch scheme ?? self.scheme {
        case .pkcs1v15: key.isValidPKCS1v15Signature(signature, digest: digest, hash: hash)
        case .pss(let saltLength): key.isValidPSSSignature(signature, digest: digest, hash: hash, saltLength: saltLength)
        }
    }

    typealias V = RSATestVectors
    static let all: [RSASignatureVector] = [
        .init(name: "2048 PKCS#1 v1.5 SHA-256", keyDER: V.rsa2048PKCS1DER, signature: V.rsa2048PKCS1v15SHA256, hash: .sha256, scheme: .pkcs1v15),
        .init(name: "2048 PKCS#1 v1.5 SHA-384", keyDER: V.rsa2048PKCS1DER, signature: V.rsa2048PKCS1v15SHA384, hash: .sha384, scheme: .pkcs1v15),
        .init(name: "2048 PKCS#1 v1.5 SHA-512", keyDER: V.rsa2048PKCS1DER, signature: V.rsa2048PKCS1v15SHA512, hash: .sha512, scheme: .pkcs1v15),
        .init(name: "2048 PSS SHA-256", keyDER: V.rsa2048PKCS1DER, signature: V.rsa2048PSSSHA256, hash: .sha256, scheme: .pss(saltLength: 32)),
        .init(name: "2048 PSS SHA-256 (second salt)", keyDER: V.rsa2048PKCS1DER, signature: V.rsa2048PSSSHA256Bis, hash: .sha256, scheme: .pss(saltLength: 32)),
        .init(name: "2048 PSS SHA-384", keyDER: V.rsa2048PKCS1DER, signature: V.rsa2048PSSSHA384, hash: .sha384, scheme: .pss(saltLength: 48)),
        .init(name: "2048 PSS SHA-512", keyDER: V.rsa2048PKCS1DER, signature: V.rsa2048PSSSHA512, hash: .sha512, scheme: .pss(saltLength: 64)),
        .init(name: "2048 PSS SHA-256 salt 0", keyDER: V.rsa2048PKCS1DER, signature: V.rsa2048PSSSHA256Salt0, hash: .sha256, scheme: .pss(saltLength: 0)),
        .init(name: "2048 PSS SHA-256 salt 20", keyDER: V.rsa2048PKCS1DER, signature: V.rsa2048PSSSHA256Salt20, hash: .sha256, scheme: .pss(saltLength: 20)),
        .init(name: "2048 PSS SHA-256 salt 222 (max)", keyDER: V.rsa2048PKCS1DER, signature: V.rsa2048PSSSHA256SaltMax, hash: .sha256, scheme: .pss(saltLength: 222)),
        .init(name: "3072 PKCS#1 v1.5 SHA-256", keyDER: V.rsa3072PKCS1DER, signature: V.rsa3072PKCS1v15SHA256, hash: .sha256, scheme: .pkcs1v15),
        .init(name: "3072 PKCS#1 v1.5 SHA-384", keyDER: V.rsa3072PKCS1DER, signature: V.rsa3072PKCS1v15SHA384, hash: .sha384, scheme: .pkcs1v15),
        .init(name: "3072 PKCS#1 v1.5 SHA-512", keyDER: V.rsa3072PKCS1DER, signature: V.rsa3072PKCS1v15SHA512, hash: .sha512, scheme: .pkcs1v15),
        .init(name: "3072 PSS SHA-256", keyDER: V.rsa3072PKCS1DER, signature: V.rsa3072PSSSHA256, hash: .sha256, scheme: .pss(saltLength: 32)),
        .init(name: "3072 PSS SHA-384", keyDER: V.rsa3072PKCS1DER, signature: V.rsa3072PSSSHA384, hash: .sha384, scheme: .pss(saltLength: 48)),
        .init(name: "3072 PSS SHA-512", keyDER: V.rsa3072PKCS1DER, signature: V.rsa3072PSSSHA512, hash: .sha512, scheme: .pss(saltLength: 64)),
        .init(name: "4096 PKCS#1 v1.5 SHA-256", keyDER: V.rsa4096PKCS1DER, signature: V.rsa4096PKCS1v15SHA256, hash: .sha256, scheme: .pkcs1v15),
        .init(name: "4096 PKCS#1 v1.5 SHA-384", keyDER: V.rsa4096PKCS1DER, signature: V.rsa4096PKCS1v15SHA384, hash: .sha384, scheme: .pkcs1v15),
        .init(name: "4096 PKCS#1 v1.5 SHA-512", keyDER: V.rsa4096PKCS1DER, signature: V.rsa4096PKCS1v15SHA512, hash: .sha512, scheme: .pkcs1v15),
        .init(name: "4096 PSS SHA-256", keyDER: V.rsa4096PKCS1DER, signature: V.rsa4096PSSSHA256, hash: .sha256, scheme: .pss(saltLength: 32)),
        .init(name: "4096 PSS SHA-384", keyDER: V.rsa4096PKCS1DER, signature: V.rsa4096PSSSHA384, hash: .sha384, scheme: .pss(saltLength: 48)),
        .init(name: "4096 PSS SHA-512", keyDER: V.rsa4096PKCS1DER, signature: V.rsa4096PSSSHA512, hash: .sha512, scheme: .pss(saltLength: 64)),
        .init(name: "4096 PSS SHA-512 salt 20", keyDER: V.rsa4096PKCS1DER, signature: V.rsa4096PSSSHA512Salt20, hash: .sha512, scheme: .pss(saltLength: 20)),
        .init(name: "2048 e=3 PKCS#1 v1.5 SHA-256", keyDER: V.rsa2048e3PKCS1DER, signature: V.rsa2048e3PKCS1v15SHA256, hash: .sha256, scheme: .pkcs1v15),
        .init(name: "2048 e=3 PSS SHA-256", keyDER: V.rsa2048e3PKCS1DER, signature: V.rsa2048e3PSSSHA256, hash: .sha256, scheme: .pss(saltLength: 32)),
        .init(name: "2049-bit PKCS#1 v1.5 SHA-256", keyDER: V.rsa2049PKCS1DER, signature: V.rsa2049PKCS1v15SHA256, hash: .sha256, scheme: .pkcs1v15),
        .init(name: "2049-bit PSS SHA-256 (emLen = k − 1)", keyDER: V.rsa2049PKCS1DER, signature: V.rsa2049PSSSHA256, hash: .sha256, scheme: .pss(saltLength: 32)),
    ]
}

struct RSASignatureTests {
    @Test(arguments: RSASignatureVector.all)
    func opensslSignatureIsAccepted(_ vector: RSASignatureVector) throws {
        let key = try #require(vector.key)
        #expect(vector.verifies(key, signature: hex(vector.signature), digest: vector.digest, hash: vector.hash))
    }

    @Test(arguments: RSASignatureVector.all)
    func flippedSignatureBitIsRejected(_ vector: RSASignatureVector) throws {
        let key = try #require(vector.key)
        let signature = hex(vector.signature)
        for (index, bit) in [(0, 0), (1, 7), (signature.count / 2, 3), (signature.count - 1, 0), (signature.count - 1, 7)] {
            var changed = signature
            changed[index] ^= 1 << bit
            #expect(!vector.verifies(key, signature: changed, digest: vector.digest, hash: vector.hash), "byte \(index) bit \(bit)")
        }
    }

    @Test(arguments: RSASignatureVector.all)
    func otherDigestIsRejected(_ vector: RSASignatureVector) throws {
        let key = try #require(vector.key)
        let signature = hex(vector.signature)
        let otherDigest = vector.hash.hash(RSATestVectors.message + [0x00])
        #expect(!vector.verifies(key, signature: signature, digest: otherDigest, hash: vector.hash))
        var flippedDigest = vector.digest
        flippedDigest[flippedDigest.count - 1] ^= 0x01
        #expect(!vector.verifies(key, signature: signature, digest: flippedDigest, hash: vector.hash))
        #expect(!vector.verifies(key, signature: signature, digest: [], hash: vector.hash))
        #expect(!vector.verifies(key, signature: signature, digest: vector.digest + [0], hash: vector.hash))
        #expect(!vector.verifies(key, signature: signature, digest: Array(vector.digest.dropLast()), hash: vector.hash))
    }

    @Test(arguments: RSASignatureVector.all)
    func wrongHashChoiceIsRejected(_ vector: RSASignatureVector) throws {
        let key = try #require(vector.key)
        let signature = hex(vector.signature)
        for other in [RSAHash.sha256, .sha384, .sha512] where other != vector.hash {
            // The other hash's digest of the same message, and the right digest under the wrong name.
            #expect(!vector.verifies(key, signature: signature, digest: other.hash(RSATestVectors.message), hash: other))
            #expect(!vector.verifies(key, signature: signature, digest: vector.digest, hash: other))
        }
    }

    @Test(arguments: RSASignatureVector.all)
    func wrongSignatureLengthIsRejected(_ vector: RSASignatureVector) throws {
        let key = try #require(vector.key)
        let signature = hex(vector.signature)
        // A leading zero keeps the integer's value: only the length check rejects it.
        for changed in [Array(signature.dropFirst()), Array(signature.dropLast()), [0] + signature, signature + [0], [], [1]] {
            #expect(!vector.verifies(key, signature: changed, digest: vector.digest, hash: vector.hash), "length \(changed.count)")
        }
    }

    @Test(arguments: RSASignatureVector.all)
    func otherSchemeIsRejected(_ vector: RSASignatureVector) throws {
        let key = try #require(vector.key)
        let signature = hex(vector.signature)
        switch vector.scheme {
        case .pkcs1v15:
            for saltLength in [0, 20, vector.hash.digestSize] {
                #expect(!vector.verifies(key, signature: signature, digest: vector.digest, hash: vector.hash, scheme: .pss(saltLength: saltLength)))
            }
        case .pss:
            #expect(!vector.verifies(key, signature: signature, digest: vector.digest, hash: vector.hash, scheme: .pkcs1v15))
        }
    }

    @Test(arguments: RSASignatureVector.all)
    func wrongSaltLengthIsRejected(_ vector: RSASignatureVector) throws {
        guard case .pss(let saltLength) = vector.scheme else { return }
        let key = try #require(vector.key)
        let signature = hex(vector.signature)
        var wrongLengths = [saltLength + 1, -1, Int.max, Int.min, 10_000]
        if saltLength > 0 { wrongLengths += [saltLength - 1, 0] }
        if saltLength != 20 { wrongLengths.append(20) }
        for wrong in wrongLengths {
            #expect(!key.isValidPSSSignature(signature, digest: vector.digest, hash: vector.hash, saltLength: wrong), "salt length \(wrong)")
        }
    }

    /// §8.2.2 step 1 / §5.2.2 step 1: a k-octet string whose integer is n or
    /// more is not a signature representative.
    @Test(arguments: ["rsa1024", "rsa2048", "rsa2049", "rsa4096", "rsa2048e3"])
    func signatureNotBelowModulusIsRejected(keyName: String) throws {
        let keyDER = try #require(RSAPublicKeyTests.validKeys.first { $0.name == keyName }).der
        let key = try #require(RSAPublicKey(pkcs1DERRepresentation: hex(keyDER)))
        let n = key.modulus
        var nPlusTwo = n
        nPlusTwo[nPlusTwo.count - 1] &+= 2  // n is odd: no carry out of the last octet unless it was 0xff
        if n.last == 0xff { nPlusTwo = [UInt8](repeating: 0xff, count: n.count) }
        let allOnes = [UInt8](repeating: 0xff, count: n.count)
        for signature in [n, nPlusTwo, allOnes] {
            #expect(key.signatureRepresentative(signature) == nil)
            for hash in [RSAHash.sha256, .sha384, .sha512] {
                let digest = hash.hash(RSATestVectors.message)
                #expect(!key.isValidPKCS1v15Signature(signature, digest: digest, hash: hash))
                #expect(!key.isValidPSSSignature(signature, digest: digest, hash: hash, saltLength: hash.digestSize))
            }
        }
        // n − 1 and 0, 1 are representatives, but never valid encodings.
        var nMinusOne = n
        nMinusOne[nMinusOne.count - 1] &-= 1
        var one = [UInt8](repeating: 0, count: n.count)
        one[one.count - 1] = 1
        for signature in [nMinusOne, [UInt8](repeating: 0, count: n.count), one] {
            #expect(key.signatureRepresentative(signature) != nil)
            let digest = SHA256.hash(RSATestVectors.message)
            #expect(!key.isValidPKCS1v15Signature(signature, digest: digest, hash: .sha256))
            #expect(!key.isValidPSSSignature(signature, digest: digest, hash: .sha256, saltLength: 32))
        }
    }

    /// The exponentiation checked against openssl's raw RSA
    /// (`pkeyutl -verifyrecover -pkeyopt rsa_padding_mode:none`), independently of any padding.
    @Test func rawPublicOperationMatchesOpenSSL() throws {
        let key = try #require(RSAPublicKey(pkcs1DERRepresentation: hex(RSATestVectors.rsa2048PKCS1DER)))
        let representative = try #require(key.signatureRepresentative(hex(RSATestVectors.rsa2048PSSSHA256Bis)))
        #expect(MontgomeryModulus.bigEndianBytes(of: representative, byteCount: 256) == hex(RSATestVectors.rsa2048PSSSHA256BisEncodedMessage))
    }

    /// Signatures over hand-built PKCS#1 v1.5 encoded messages (raw RSA in
    /// the generator). The correctly built one verifies, which shows the
    /// others fail for their encoding alone.
    @Test func craftedPKCS1v15EncodingsAreRejected() throws {
        let key = try #require(RSAPublicKey(pkcs1DERRepresentation: hex(RSATestVectors.rsa2048PKCS1DER)))
        let digest = SHA256.hash(RSATestVectors.message)
        #expect(key.isValidPKCS1v15Signature(hex(RSATestVectors.rsa2048PKCS1v15CorrectDigestInfo), digest: digest, hash: .sha256))
        let rejected: [(String, String)] = [
            ("absent NULL parameters", RSATestVectors.rsa2048PKCS1v15AbsentNULL),
            ("SHA-384 OID around a SHA-256 digest", RSATestVectors.rsa2048PKCS1v15SHA384OIDWithSHA256Digest),
            ("SHA-1 OID", RSATestVectors.rsa2048PKCS1v15SHA1OID),
            ("garbage after DigestInfo", RSATestVectors.rsa2048PKCS1v15GarbageAfterDigestInfo),
            ("block type 2", RSATestVectors.rsa2048PKCS1v15BlockType2),
            ("a padding octet 0xfe", RSATestVectors.rsa2048PKCS1v15PaddingNotFF),
        ]
        for (reason, signature) in rejected {
            for hash in [RSAHash.sha256, .sha384, .sha512] {
                let digestForHash = hash == .sha256 ? digest : hash.hash(RSATestVectors.message)
                #expect(!key.isValidPKCS1v15Signature(hex(signature), digest: digestForHash, hash: hash), "\(reason), \(hash)")
            }
        }
        // The SHA-384-named DigestInfo holds 32 octets, so it cannot pass as a SHA-384 signature either.
        #expect(!key.isValidPKCS1v15Signature(hex(RSATestVectors.rsa2048PKCS1v15SHA384OIDWithSHA256Digest), digest: digest, hash: .sha384))
    }

    /// Hand-made PSS encodings signed with raw RSA in the generator, each with
    /// a control built the same way that verifies.
    @Test func craftedPSSEncodingsAreRejected() throws {
        let digest = SHA256.hash(RSATestVectors.message)
        // emBits = 2047: EM's top bit lies outside the encoding and must be zero (§9.1.2 step 6).
        let key2048 = try #require(RSAPublicKey(pkcs1DERRepresentation: hex(RSATestVectors.rsa2048PKCS1DER)))
        #expect(key2048.isValidPSSSignature(hex(RSATestVectors.rsa2048PSSSHA256HandEncodedControl), digest: digest, hash: .sha256, saltLength: 32))
        #expect(!key2048.isValidPSSSignature(hex(RSATestVectors.rsa2048PSSSHA256TopBitSet), digest: digest, hash: .sha256, saltLength: 32))
        // 2049-bit modulus: emLen = 256 = k − 1, and m = 0x01 || (valid EM) does not fit it (§8.1.2 step 2c).
        let key2049 = try #require(RSAPublicKey(pkcs1DERRepresentation: hex(RSATestVectors.rsa2049PKCS1DER)))
        #expect(key2049.isValidPSSSignature(hex(RSATestVectors.rsa2049PSSSHA256HandEncodedControl), digest: digest, hash: .sha256, saltLength: 32))
        #expect(!key2049.isValidPSSSignature(hex(RSATestVectors.rsa2049PSSSHA256TopOctetNonZero), digest: digest, hash: .sha256, saltLength: 32))
    }

    /// The expected encoding for SHA-256 is exactly RFC 8017 §9.2's
    /// 0x00 0x01 0xff… 0x00 || T, with T from Note 1.
    @Test func pkcs1v15EncodingLayout() throws {
        let digest = [UInt8](repeating: 0xab, count: 32)
        let encoded = try #require(RSAPublicKey.emsaPKCS1v15Encoding(digest: digest, hash: .sha256, encodedMessageLength: 128))
        let t = hex("3031300d060960864801650304020105000420") + digest
        #expect(encoded == [0x00, 0x01] + [UInt8](repeating: 0xff, count: 128 - 3 - t.count) + [0x00] + t)
        #expect(RSAPublicKey.emsaPKCS1v15Encoding(digest: digest, hash: .sha256, encodedMessageLength: t.count + 11) != nil)
        #expect(RSAPublicKey.emsaPKCS1v15Encoding(digest: digest, hash: .sha256, encodedMessageLength: t.count + 10) == nil)
    }
}
