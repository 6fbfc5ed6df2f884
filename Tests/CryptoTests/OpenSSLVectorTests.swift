import TestSupport
import Crypto
import Testing

/// Signatures made with the openssl 3.0 command line while authoring
/// (`openssl ecparam -genkey`, `openssl dgst -sha256|-sha384 -sign`): an
/// independent implementation with random nonces, DER-encoded as X.509 and
/// TLS carry them. Keys are X9.62 uncompressed points.
@Suite struct OpenSSLVectorTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let digest: String
        let der: String
        var testDescription: String { String(der.prefix(16)) }
    }

    static let p256Key = hex("""
        04 0294a7e02a4aaf85af54c70679a425e1a29ad4213367efef4f8cc0312b422f8b
           5c790e7b93a7f8a2d1b073ec8abb304b1a38ca90a433016e25655c598a066aea
        """)

    static let p256Vectors = [
        // Both integers with the top bit set: 33-byte DER integers.
        Vector(digest: "7ca86d0cc4b1fcd34b62d65dd1cfbb45c5db29e2c4dae9edc1425aef2ab006cc",
               der: "30460221008d3f78a7d45800ab336e2b0caeae84882e5f9920235eb588ebc2da44a5080c88022100bc2d0165e67ca3f0f32f987fba7b51d06fee3eead5313ac08b4190511d019404"),
        Vector(digest: "9a510884f589a58b8382564dfc5442bf63e21b1eeed2507523c78fc480aa5ec7",
               der: "3045022067c9a1728085353766e01726c1ba80561986c0582fc195dafc6fa93027c9db86022100ec97b1971997ea74c08d7259544aff1b7cc349a130733aa76abe97a69d18a2c4"),
        Vector(digest: "1edbafc9a1e765466140c3c9b942d1edca219e6ef27b855dd1c7d531918f9db4",
               der: "3045022100b672ec1bd7dc9144f02860e993e205197027a2f484664b0f3ad330de6214270f022040eb0ce6c6f8af2aae38ca0642854e76dcfa320f53d25d05e0e3494094859dd5"),
    ]

    static let p384Key = hex("""
        04 cbe28ae28b893e21f2913b6e42d0724c8517ee0a54e24bb8c5ebd4ebefd7846e
           e2f7a1af5370f7ecd1ab02b1cd1dbf61
           eb40ac7bfd8313b9b09ffe6eeb950d3130210d0c3fe199e81a70929da2204d96
           5bc0ac5b05f24c17f7f3682410d6cfcf
        """)

    static let p384Vectors = [
        Vector(digest: "efeeb01011215953b6430ab4127913a1adef7f0bbb6af88640b312f25e40df0f78be39ca3058716facb2be95fd978b48",
               der: "306502305a2e8fcbf490ac3cf9eaf6bbdf41e9792121e93d70f75b42681c5a8e640eda6bcfe8e519de1a00c96531388c4067153d023100ac73c30fed02e930271ddbe4d85d9956e52ca95f9c05b1198308d7239a84ad3754edcfb7145a6acc83bf05dda7a13c26"),
        Vector(digest: "bd16388d4bdd14534776bd6bcdb65065da2ef5831523e7e584f4ea23b03928f60bb39a8a7de159d4603f2367613433a8",
               der: "306502304dc26e1023809730a4b3c2d85c0eef9640f3c4c17d989d3385d27a85a1c7d7f293c6330e5d1676fd3262641f98dc29fc023100cc9408be0b8f2109234136ef13b1d5ef16969cf6ead6c4de07f3219851199cd737360298fb387a4d90d4501838578eaf"),
        Vector(digest: "93ca2cff4a9be87685365fd9146483d24ee6a4203b5102653c97458333bbd6d2d6b2955d552078f45388499c75cc3eb5",
               der: "3066023100b22685f737d8a9e05b1e4e92ed090607789f4b39b88657a76f0271e9c9fbd2cbe6cc227f81b954c76964d4a14d385785023100d12a1568d74be4f7ebf5fd40d6c6a999176d172647ad58eab9ac1b3da13a240569d12e7c5e1377698474783480a8769a"),
    ]

    @Test(arguments: p256Vectors)
    func p256SignatureVerifies(vector: Vector) throws {
        let key = try #require(P256.PublicKey(x962Representation: Self.p256Key))
        let signature = try #require(ECDSASignature(derRepresentation: hex(vector.der)))
        #expect(signature.derRepresentation == hex(vector.der))
        #expect(key.isValidSignature(signature, forDigest: hex(vector.digest)))
        #expect(!key.isValidSignature(signature, forDigest: flippingBit(255, of: hex(vector.digest))))
    }

    @Test(arguments: p384Vectors)
    func p384SignatureVerifies(vector: Vector) throws {
        let key = try #require(P384.PublicKey(x962Representation: Self.p384Key))
        let signature = try #require(ECDSASignature(derRepresentation: hex(vector.der)))
        #expect(signature.derRepresentation == hex(vector.der))
        #expect(key.isValidSignature(signature, forDigest: hex(vector.digest)))
        #expect(!key.isValidSignature(signature, forDigest: flippingBit(383, of: hex(vector.digest))))
    }

    /// A signature is bound to its curve's key: the P-256 ones never verify
    /// under the P-384 key.
    @Test func signaturesDoNotCrossKeys() throws {
        let key = try #require(P384.PublicKey(x962Representation: Self.p384Key))
        for vector in Self.p256Vectors {
            let signature = try #require(ECDSASignature(derRepresentation: hex(vector.der)))
            #expect(!key.isValidSignature(signature, forDigest: hex(vector.digest)))
        }
    }
}
