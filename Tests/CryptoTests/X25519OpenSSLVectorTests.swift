import Testing
@testable import Crypto

/// Random key pairs generated once with the OpenSSL 3.0 command line
/// (`openssl genpkey -algorithm X25519`, `openssl pkeyutl -derive`) while
/// writing this file, to cover scalars and points beyond the RFC's few.
/// OpenSSL is not run by the tests.
@Suite struct X25519OpenSSLVectorTests {
    @Test("OpenSSL-generated key pairs and shared secrets", arguments: [
        (
            privateKey: "202ad3c5d173fb0dcb1c096c4cfe56c34864d121a573eb37c60380ae6330955b",
            publicKey: "83f18e730641ee196ceb9ff9e074cd7bcf0e464ebe8337e29a35e36eb3526563",
            peerPublicKey: "3e25c30ab8c667cfd768f7ff4536721e753e41e2aeba51e2544d921543d7991e",
            sharedSecret: "f1f3eff2aa54e6f351ec7c79306d2d581c88af60f814d6f8f4d46c656349ca78"
        ),
        (
            privateKey: "00609f838c9ba98f88269b62d807ec7c3c947ce8ecdf9026370929491d4af27c",
            publicKey: "7537509dd19888a169f935d64b74a134ad178c6a4eb9be7e65106c422d160918",
            peerPublicKey: "6dbee0f1e65a87350f6b45e869e833cca8c0fa37e10459c61c603e1a1ac18155",
            sharedSecret: "5ec3c0148a237a997a02b8cad31f6946b3a77ab2c4ec29c93204e0bd646d962c"
        ),
        (
            privateKey: "306964b9ce3e6fc81cd8d61625ae94a31aed86a9f0f6fed4d8caf9d9e8d7257d",
            publicKey: "555370b3c9351c3a81f4add8de751ba8a5246ac89e1b4b69285b020dce611347",
            peerPublicKey: "b1fc9b4e6bad16830da8a7222f65a5fd5153146f1657d889ce1b908ae9105764",
            sharedSecret: "aaeec0ec71533e60801578ffe6651c2ba69687f495ff382f4b165b2719d92964"
        ),
        (
            privateKey: "b04f6e8c7a8d93edab46c2c903f141fab824f5f94dc59c30db04abf2584df542",
            publicKey: "d8613b104738b806c9ce3ee87ad1d8228f5ab974f40685b8b35e7c2be196a20a",
            peerPublicKey: "f4bf9bf143a8918b892a456be1b590ccbf3228af6ce0853cd7b76726478b2031",
            sharedSecret: "ff9a77fe9ac1f654050c7e98840fe503a0ee257e03afaf3717733f655da46740"
        ),
        (
            privateKey: "10cfc167257c4acf7649195897c798836ac6bf70e7f9b9ecaae901cf97fb4449",
            publicKey: "a979fa797d5684ce7460703a3300e6b1f7d6c154001e735614522f03236b2011",
            peerPublicKey: "3838d526b22d1b37f6669b7a52c15181e78584f35194d39d42a74b9ea445f816",
            sharedSecret: "8968b416d47cafe87b1a0f9e1a0b961b92d7aaffdce6ba5ab44d5f64f96e8607"
        ),
        (
            privateKey: "90bf9e6d6efca309e81ae08656bb15dd89bc7da34a7a0ab3ac415a7c0a168168",
            publicKey: "224104e030f1534768ace9167e081b6367f7afaac9ff6aa41d70e31480321453",
            peerPublicKey: "68a81aa47dcb7493b347a7c662b97d8103fd82cfb3b1270715a46eccf563e710",
            sharedSecret: "3c27970fbd929cb3130938080ac4d427a51edabca4071a7b0babc70f09d4216f"
        ),
        (
            privateKey: "a88feed624cbcda593c68724cf1c954073d51e4c12d7976636a23f0574022643",
            publicKey: "a927993dbcfc1090bafa0f318132c7bf34feeec60ccc4f0acd2620a96c58a204",
            peerPublicKey: "fcb3f9bc927ef4082ae8b7e65afae2019ae470777a352f675e7141b350a89a11",
            sharedSecret: "258eaaade7fe283088fc396852f33b6a3bf07522431266de5dacb2bf1b632d14"
        ),
        (
            privateKey: "10d9299ab4fabb0de6d7aaae57a47d90ae3704fb39fdf7d8a59aea4982589747",
            publicKey: "bd8d502795e7d704f78b21fa4fe1fc41738fb9404ae584e20aec6d355b27b105",
            peerPublicKey: "c04a39179cffc479ae61d876e13acb3a40d7432d5768638c3f902d3301dd767f",
            sharedSecret: "5723a7d3393df7780bf8b5d85973209e00d6d76da05b5acd993f73023f224e34"
        ),
    ])
    func openSSLVector(privateKey: String, publicKey: String, peerPublicKey: String, sharedSecret: String) {
        #expect(X25519.publicKey(privateKey: bytes(hex: privateKey)) == bytes(hex: publicKey))
        #expect(X25519.sharedSecret(privateKey: bytes(hex: privateKey), peerPublicKey: bytes(hex: peerPublicKey))
            == bytes(hex: sharedSecret))
    }
}
