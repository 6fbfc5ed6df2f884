import TestSupport
import Crypto
import Testing

/// RFC 6979 Appendix A.2.6 (NIST P-384), verification only.
@Suite struct P384VerificationTests {
    static let rfc6979PublicKey = hex("""
        04 EC3A4E415B4E19A4568618029F427FA5DA9A8BC4AE92E02E06AAE5286B300C64
           DEF8F0EA9055866064A254515480BC13
           8015D9B72D7D57244EA8EF9AC0C621896708A59367F9DFB9F54CA84B3F1C9DB1
           288B231C3AE0D4FE7344FD2533264720
        """)

    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String
        /// The message digest, from `printf <message> | openssl dgst -<hash>`.
        let digest: String
        let r: String
        let s: String
        var testDescription: String { name }
    }

    static let vectors = [
        Vector(name: "SHA-384 sample",
               digest: "9a9083505bc92276aec4be312696ef7bf3bf603f4bbd381196a029f340585312313bca4a9b5b890efee42c77b1ee25fe",
               r: "94EDBB92A5ECB8AAD4736E56C691916B3F88140666CE9FA73D64C4EA95AD133C81A648152E44ACF96E36DD1E80FABE46",
               s: "99EF4AEB15F178CEA1FE40DB2603138F130E740A19624526203B6351D0A3A94FA329C145786E679E7B82C71A38628AC8"),
        Vector(name: "SHA-384 test",
               digest: "768412320f7b0aa5812fce428dc4706b3cae50e02a64caa16a782249bfe8efc4b7ef1ccb126255d196047dfedf17a0a9",
               r: "8203B63D3C853E8D77227FB377BCF7B7B772E97892A80F36AB775D509D7A5FEB0542A7F0812998DA8F1DD3CA3CF023DB",
               s: "DDD0760448D42D8A43AF45AF836FCE4DE8BE06B485E9B61B827C2F13173923E06A739F040649A667BF3B828246BAA5A5"),
        // A digest shorter than the order: taken whole.
        Vector(name: "SHA-256 sample",
               digest: "af2bdbe1aa9b6ec1e2ade1d694f41fc71a831d0268e9891562113d8a62add1bf",
               r: "21B13D1E013C7FA1392D03C5F99AF8B30C570C6F98D4EA8E354B63A21D3DAA33BDE1E888E63355D92FA2B3C36D8FB2CD",
               s: "F3AA443FB107745BF4BD77CB3891674632068A10CA67E3D45DB2266FA7D1FEEBEFDC63ECCD1AC42EC0CB8668A4FA0AB0"),
        // A digest longer than the order: its leftmost 384 bits.
        Vector(name: "SHA-512 sample",
               digest: "39a5e04aaff7455d9850c605364f514c11324ce64016960d23d5dc57d3ffd8f49a739468ab8049bf18eef820cdb1ad6c9015f838556bc7fad4138b23fdf986c7",
               r: "ED0959D5880AB2D869AE7F6C2915C6D60F96507F9CB3E047C0046861DA4A799CFE30F35CC900056D7C99CD7882433709",
               s: "512C8CCEEE3890A84058CE1E22DBC2198F42323CE8ACA9135329F03C068E5112DC7CC3EF3446DEFCEB01A45C2667FDD5"),
    ]

    @Test(arguments: vectors)
    func rfc6979SignatureVerifies(vector: Vector) throws {
        let publicKey = try #require(P384.PublicKey(x962Representation: Self.rfc6979PublicKey))
        let signature = ECDSASignature(r: hex(vector.r), s: hex(vector.s))
        let digest = hex(vector.digest)
        #expect(publicKey.isValidSignature(signature, forDigest: digest))
        #expect(!publicKey.isValidSignature(signature, forDigest: flippingBit(7, of: digest)))
        #expect(!publicKey.isValidSignature(ECDSASignature(r: signature.s, s: signature.r), forDigest: digest))
        let parsed = try #require(ECDSASignature(derRepresentation: signature.derRepresentation))
        #expect(publicKey.isValidSignature(parsed, forDigest: digest))
    }

    @Test func keyRoundTripsAndCompares() throws {
        let key = try #require(P384.PublicKey(x962Representation: Self.rfc6979PublicKey))
        #expect(key.x962Representation == Self.rfc6979PublicKey)
        #expect(key == P384.PublicKey(x962Representation: Self.rfc6979PublicKey))
        #expect(key != P384.PublicKey(x962Representation: CurveConstants.p384Generator))
    }
}
