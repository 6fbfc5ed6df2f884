import TestSupport
import Crypto
import Testing

/// RFC 6979 Appendix A.2.5 (NIST P-256), RFC 5903 §8.1, and key handling.
@Suite struct P256SigningTests {
    static let rfc6979PrivateKey = hex("C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721")
    static let rfc6979PublicKey = hex("""
        04 60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6
           7903FE1008B8BC99A41AE9E95628BC64F2F1B20C2D7E9F5177A3C294D4462299
        """)

    struct SigningVector: Sendable, CustomTestStringConvertible {
        let message: String
        /// SHA-256 of the message, from `printf <message> | openssl dgst -sha256`.
        let digest: String
        let r: String
        let s: String
        var testDescription: String { message }
    }

    static let sha256Vectors = [
        SigningVector(message: "sample",
                      digest: "af2bdbe1aa9b6ec1e2ade1d694f41fc71a831d0268e9891562113d8a62add1bf",
                      r: "EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716",
                      s: "F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"),
        SigningVector(message: "test",
                      digest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                      r: "F1ABB023518351CD71D881567B1EA663ED3EFCF6C5132B354F28D3B0B7D38367",
                      s: "019F4113742A2B14BD25926B49C649155F267E60D3814B4C0CC84250E46F0083"),
    ]

    @Test func rfc6979KeyPair() throws {
        let key = try #require(P256.PrivateKey(rawScalar: Self.rfc6979PrivateKey))
        #expect(key.publicKey.x962Representation == Self.rfc6979PublicKey)
        #expect(key.rawScalar == Self.rfc6979PrivateKey)
        #expect(P256.PublicKey(x962Representation: Self.rfc6979PublicKey) == key.publicKey)
    }

    @Test(arguments: sha256Vectors)
    func rfc6979SignatureIsReproduced(vector: SigningVector) throws {
        let key = try #require(P256.PrivateKey(rawScalar: Self.rfc6979PrivateKey))
        let digest = hex(vector.digest)
        let signature = key.signature(forDigest: digest)
        // Minimal form: the leading 0x01 of the "test" s stays, nothing is padded.
        #expect(signature.r == hex(vector.r))
        #expect(signature.s == hex(vector.s))
        #expect(key.publicKey.isValidSignature(signature, forDigest: digest))
    }

    @Test(arguments: sha256Vectors)
    func rfc6979SignatureVerifies(vector: SigningVector) throws {
        let publicKey = try #require(P256.PublicKey(x962Representation: Self.rfc6979PublicKey))
        let signature = ECDSASignature(r: hex(vector.r), s: hex(vector.s))
        #expect(publicKey.isValidSignature(signature, forDigest: hex(vector.digest)))
        #expect(!publicKey.isValidSignature(signature, forDigest: flippingBit(200, of: hex(vector.digest))))
    }

    /// A.2.5 "sample" with SHA-384 and SHA-512: digests longer than 32 bytes
    /// contribute their leftmost 256 bits. (The RFC's nonces for these rows use
    /// HMAC-SHA-384/512, so only verification can be checked against them.)
    @Test func rfc6979LongerDigestsVerify() throws {
        let publicKey = try #require(P256.PublicKey(x962Representation: Self.rfc6979PublicKey))
        let sha384Sample = hex("9a9083505bc92276aec4be312696ef7bf3bf603f4bbd381196a029f340585312313bca4a9b5b890efee42c77b1ee25fe")
        let sha512Sample = hex("""
            39a5e04aaff7455d9850c605364f514c11324ce64016960d23d5dc57d3ffd8f4
            9a739468ab8049bf18eef820cdb1ad6c9015f838556bc7fad4138b23fdf986c7
            """)
        let signature384 = ECDSASignature(r: hex("0EAFEA039B20E9B42309FB1D89E213057CBF973DC0CFC8F129EDDDC800EF7719"),
                                          s: hex("4861F0491E6998B9455193E34E7B0D284DDD7149A74B95B9261F13ABDE940954"))
        let signature512 = ECDSASignature(r: hex("8496A60B5E9B47C825488827E0495B0E3FA109EC4568FD3F8D1097678EB97F00"),
                                          s: hex("2362AB1ADBE2B8ADF9CB9EDAB740EA6049C028114F2460F96554F61FAE3302FE"))
        #expect(publicKey.isValidSignature(signature384, forDigest: sha384Sample))
        #expect(publicKey.isValidSignature(signature512, forDigest: sha512Sample))
        // Only the leftmost 32 bytes count: changing the tail keeps it valid...
        #expect(publicKey.isValidSignature(signature512, forDigest: Array(sha512Sample.prefix(32)) + [UInt8](repeating: 0, count: 32)))
        // ...and changing the head does not.
        #expect(!publicKey.isValidSignature(signature512, forDigest: flippingBit(0, of: sha512Sample)))
        #expect(!publicKey.isValidSignature(signature384, forDigest: sha512Sample))
    }

    /// Signing a long digest signs its leftmost 32 bytes, whatever follows.
    @Test func longDigestIsTruncatedWhenSigning() throws {
        let key = try #require(P256.PrivateKey(rawScalar: Self.rfc6979PrivateKey))
        let digest = hex(Self.sha256Vectors[0].digest)
        let long = digest + [UInt8](repeating: 0xAB, count: 32)
        let signature = key.signature(forDigest: long)
        #expect(key.publicKey.isValidSignature(signature, forDigest: digest))
        #expect(key.publicKey.isValidSignature(signature, forDigest: long))
        // Same integer e, same private key: RFC 6979 derives the same k.
        #expect(signature == key.signature(forDigest: digest))
    }

    /// A digest shorter than the order is taken as a smaller integer (FIPS
    /// 186-5 §6.4.1 uses the whole of it).
    @Test func shortDigestSignsAndVerifies() throws {
        let key = try #require(P256.PrivateKey(rawScalar: Self.rfc6979PrivateKey))
        for digest in [[UInt8](), [0x01], hex("00ff00ff00ff00ff00ff00ff00ff00ff00ff")] {
            let signature = key.signature(forDigest: digest)
            #expect(key.publicKey.isValidSignature(signature, forDigest: digest))
            // Shorter digests are integers: leading zero bytes change nothing.
            #expect(key.publicKey.isValidSignature(signature, forDigest: [0, 0] + digest))
            if !digest.isEmpty {
                #expect(!key.publicKey.isValidSignature(signature, forDigest: flippingBit(digest.count * 8 - 1, of: digest)))
            }
        }
    }

    /// RFC 5903 §8.1 (256-bit random ECP group): both key pairs and g^ir.
    @Test func rfc5903KeyAgreement() throws {
        let initiator = try #require(P256.PrivateKey(rawScalar: hex("C88F01F510D9AC3F70A292DAA2316DE544E9AAB8AFE84049C62A9C57862D1433")))
        let responder = try #require(P256.PrivateKey(rawScalar: hex("C6EF9C5D78AE012A011164ACB397CE2088685D8F06BF9BE0B283AB46476BEE53")))
        #expect(initiator.publicKey.x962Representation == hex("""
            04 DAD0B65394221CF9B051E1FECA5787D098DFE637FC90B9EF945D0C3772581180
               5271A0461CDB8252D61F1C456FA3E59AB1F45B33ACCF5F58389E0577B8990BB3
            """))
        #expect(responder.publicKey.x962Representation == hex("""
            04 D12DFB5289C8D4F81208B70270398C342296970A0BCCB74C736FC7554494BF63
               56FBF3CA366CC23E8157854C13C58D6AAC23F046ADA30F8353E74F33039872AB
            """))
        let expected = hex("D6840F6B42F6EDAFD13116E0E12565202FEF8E9ECE7DCE03812464D04B9442DE")
        let peerOfInitiator = try #require(P256.PublicKey(x962Representation: responder.publicKey.x962Representation))
        let peerOfResponder = try #require(P256.PublicKey(x962Representation: initiator.publicKey.x962Representation))
        #expect(initiator.sharedSecret(with: peerOfInitiator) == expected)
        #expect(responder.sharedSecret(with: peerOfResponder) == expected)
    }

    /// d·(e·G) = e·(d·G) for a spread of scalars, small and near n.
    @Test func keyAgreementIsSymmetric() throws {
        let order = CurveConstants.p256Order
        let scalars = [
            [UInt8](repeating: 0, count: 31) + [1],
            [UInt8](repeating: 0, count: 31) + [2],
            [UInt8](repeating: 0, count: 31) + [16],
            CurveConstants.adding(-1, to: order),
            CurveConstants.adding(-2, to: order),
            Self.rfc6979PrivateKey,
            hex("C88F01F510D9AC3F70A292DAA2316DE544E9AAB8AFE84049C62A9C57862D1433"),
        ]
        let keys = try scalars.map { try #require(P256.PrivateKey(rawScalar: $0)) }
        for a in keys {
            for b in keys {
                #expect(a.sharedSecret(with: b.publicKey) == b.sharedSecret(with: a.publicKey))
            }
        }
    }

    /// 1·G = G, and (n−1)·G = −G (same x, y = p − Gy): the group law holds at
    /// both ends of the scalar range.
    @Test func generatorMultiples() throws {
        let one = try #require(P256.PrivateKey(rawScalar: [UInt8](repeating: 0, count: 31) + [1]))
        #expect(one.publicKey.x962Representation == CurveConstants.p256Generator)
        let minusOne = try #require(P256.PrivateKey(rawScalar: CurveConstants.adding(-1, to: CurveConstants.p256Order)))
        let generator = CurveConstants.p256Generator
        #expect(Array(minusOne.publicKey.x962Representation.prefix(33)) == Array(generator.prefix(33)))
        // y(−G) + y(G) = p.
        var sum = [UInt8](repeating: 0, count: 32)
        var carry = 0
        for index in (0 ..< 32).reversed() {
            let total = Int(minusOne.publicKey.x962Representation[33 + index]) + Int(generator[33 + index]) + carry
            sum[index] = UInt8(truncatingIfNeeded: total)
            carry = total >> 8
        }
        #expect(sum == CurveConstants.p256Prime)
        // 2·G, computed with the affine doubling formula while authoring.
        let two = try #require(P256.PrivateKey(rawScalar: [UInt8](repeating: 0, count: 31) + [2]))
        #expect(two.publicKey.x962Representation == hex("""
            04 7cf27b188d034f7e8a52380304b51ac3c08969e277f21b35a60b48fc47669978
               07775510db8ed040293d9ac69f7430dbba7dade63ce982299e04b79d227873d1
            """))
    }

    @Test func rawScalarRange() {
        let order = CurveConstants.p256Order
        #expect(P256.PrivateKey(rawScalar: [UInt8](repeating: 0, count: 32)) == nil)
        #expect(P256.PrivateKey(rawScalar: order) == nil)
        #expect(P256.PrivateKey(rawScalar: CurveConstants.adding(1, to: order)) == nil)
        #expect(P256.PrivateKey(rawScalar: [UInt8](repeating: 0xFF, count: 32)) == nil)
        #expect(P256.PrivateKey(rawScalar: CurveConstants.adding(-1, to: order)) != nil)
        #expect(P256.PrivateKey(rawScalar: [UInt8](repeating: 0, count: 31)) == nil)
        #expect(P256.PrivateKey(rawScalar: [0] + Self.rfc6979PrivateKey) == nil)
        #expect(P256.PrivateKey(rawScalar: []) == nil)
    }

    /// FIPS 186-5 §A.2.1: d = (c mod (n−1)) + 1.
    @Test func keyFromRandomBytes() throws {
        #expect(P256.PrivateKey(randomBytes: [UInt8](repeating: 7, count: 47)) == nil)
        let zero = try #require(P256.PrivateKey(randomBytes: [UInt8](repeating: 0, count: 48)))
        #expect(zero.rawScalar == [UInt8](repeating: 0, count: 31) + [1])
        let padding = [UInt8](repeating: 0, count: 16)
        let orderMinusOne = CurveConstants.adding(-1, to: CurveConstants.p256Order)
        // c = n − 1 → 0 + 1; c = n → 1 + 1; c = n − 2 → n − 1.
        #expect(try #require(P256.PrivateKey(randomBytes: padding + orderMinusOne)).rawScalar == [UInt8](repeating: 0, count: 31) + [1])
        #expect(try #require(P256.PrivateKey(randomBytes: padding + CurveConstants.p256Order)).rawScalar == [UInt8](repeating: 0, count: 31) + [2])
        #expect(try #require(P256.PrivateKey(randomBytes: padding + CurveConstants.adding(-2, to: CurveConstants.p256Order))).rawScalar == orderMinusOne)
        // c = 2^384 − 1, checked with `python3 -c 'print(hex((2**384-1) % (n-1) + 1))'`.
        let allOnes = try #require(P256.PrivateKey(randomBytes: [UInt8](repeating: 0xFF, count: 48)))
        #expect(allOnes.rawScalar == hex(Self.allOnesReduced))
        // Longer inputs are accepted and the whole of them counts.
        let long = try #require(P256.PrivateKey(randomBytes: [UInt8](repeating: 0x5A, count: 64)))
        let short = try #require(P256.PrivateKey(randomBytes: [UInt8](repeating: 0x5A, count: 48)))
        #expect(long.rawScalar != short.rawScalar)
    }

    static let allOnesReduced = "431905529c0166ce652e96b7ccca0a9a679b73e29ad16947f01cf012fc632550"

    /// Keys made from bytes sign and verify; a signature does not verify under
    /// another key.
    @Test func signAndVerifyRoundTrips() throws {
        var previous: P256.PublicKey?
        for seed in 0 ..< 6 {
            let bytes = (0 ..< 48).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 97 &+ 11) }
            let key = try #require(P256.PrivateKey(randomBytes: bytes))
            let digest = Array(bytes.reversed().prefix(32))
            let signature = key.signature(forDigest: digest)
            #expect(signature.r.count <= 32 && signature.s.count <= 32)
            #expect(key.publicKey.isValidSignature(signature, forDigest: digest))
            #expect(key.signature(forDigest: digest) == signature)
            let parsed = try #require(ECDSASignature(derRepresentation: signature.derRepresentation))
            #expect(key.publicKey.isValidSignature(parsed, forDigest: digest))
            if let previous { #expect(!previous.isValidSignature(signature, forDigest: digest)) }
            previous = key.publicKey
        }
    }
}
