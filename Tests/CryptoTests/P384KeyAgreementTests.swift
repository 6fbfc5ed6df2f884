import Crypto
import TestSupport
import Testing

/// P-384 ECDH, which Sluice's TLS client uses when a server chooses secp384r1.
struct P384KeyAgreementTests {
    /// RFC 5903 §8.2 (384-bit random ECP group): both key pairs and g^ir.
    @Test func rfc5903KeyAgreement() throws {
        let initiator = try #require(P384.PrivateKey(rawScalar: hex(
            "099F3C7034D4A2C699884D73A375A67F7624EF7C6B3C0F160647B67414DCE655E35B538041E649EE3FAEF896783AB194")))
        let responder = try #require(P384.PrivateKey(rawScalar: hex(
            "41CB0779B4BDB85D47846725FBEC3C9430FAB46CC8DC5060855CC9BDA0AA2942E0308312916B8ED2960E4BD55A7448FC")))
        #expect(initiator.publicKey.x962Representation == hex("""
            04 667842D7D180AC2CDE6F74F37551F55755C7645C20EF73E31634FE72B4C55EE6DE3AC808ACB4BDB4C88732AEE95F41AA
               9482ED1FC0EEB9CAFC4984625CCFC23F65032149E0E144ADA024181535A0F38EEB9FCFF3C2C947DAE69B4C634573A81C
            """))
        #expect(responder.publicKey.x962Representation == hex("""
            04 E558DBEF53EECDE3D3FCCFC1AEA08A89A987475D12FD950D83CFA41732BC509D0D1AC43A0336DEF96FDA41D0774A3571
               DCFBEC7AACF3196472169E838430367F66EEBE3C6E70C416DD5F0C68759DD1FFF83FA40142209DFF5EAAD96DB9E6386C
            """))
        let expected = hex("11187331C279962D93D604243FD592CB9D0A926F422E47187521287E7156C5C4D603135569B9E9D09CF5D4A270F59746")
        let peerOfInitiator = try #require(P384.PublicKey(x962Representation: responder.publicKey.x962Representation))
        let peerOfResponder = try #require(P384.PublicKey(x962Representation: initiator.publicKey.x962Representation))
        #expect(initiator.sharedSecret(with: peerOfInitiator) == expected)
        #expect(responder.sharedSecret(with: peerOfResponder) == expected)
    }

    /// Keys from randomness agree both ways; scalars outside [1, n−1] and
    /// too little randomness make no key.
    @Test func keysFromRandomnessAgreeAndBadScalarsAreRefused() throws {
        let a = try #require(P384.PrivateKey(randomBytes: (0 ..< 56).map { UInt8($0) }))
        let b = try #require(P384.PrivateKey(randomBytes: (0 ..< 64).map { UInt8(255 - $0) }))
        #expect(a.sharedSecret(with: b.publicKey) == b.sharedSecret(with: a.publicKey))
        #expect(a.sharedSecret(with: b.publicKey)?.count == 48)
        #expect(P384.PrivateKey(randomBytes: [UInt8](repeating: 7, count: 55)) == nil)
        #expect(P384.PrivateKey(rawScalar: [UInt8](repeating: 0, count: 48)) == nil)
        #expect(P384.PrivateKey(rawScalar: [UInt8](repeating: 0xFF, count: 48)) == nil)
        #expect(P384.PrivateKey(rawScalar: [UInt8](repeating: 1, count: 47)) == nil)
    }
}
