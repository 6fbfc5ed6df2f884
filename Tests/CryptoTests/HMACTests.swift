import TestSupport
import Testing
import Crypto

// HMAC and HKDF over SHA-256 against their RFCs' vectors. (SHA-256, AES and
// AES-GCM are tested in HTTPTests, beside the QUIC packets that use them.)

@Suite struct HMACSHA256Tests {
    func mac(key: [UInt8], _ message: String) -> [UInt8] {
        HMAC<SHA256>.authenticationCode(key: key, message: Array(message.utf8))
    }

    // RFC 4231 §4.2, test case 1.
    @Test func keyShorterThanTheDigest() {
        #expect(mac(key: [UInt8](repeating: 0x0B, count: 20), "Hi There")
            == hex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"))
    }

    // RFC 4231 §4.3, test case 2.
    @Test func keyShorterThanTheBlock() {
        #expect(mac(key: Array("Jefe".utf8), "what do ya want for nothing?")
            == hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
    }

    // RFC 4231 §4.4, test case 3: bytes that are not text.
    @Test func binaryKeyAndData() {
        let code = HMAC<SHA256>.authenticationCode(key: [UInt8](repeating: 0xAA, count: 20),
                                                 message: [UInt8](repeating: 0xDD, count: 50))
        #expect(code == hex("773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"))
    }

    // RFC 4231 §4.5, test case 4.
    @Test func twentyFiveByteKey() {
        let code = HMAC<SHA256>.authenticationCode(key: Array(1 ... 25), message: [UInt8](repeating: 0xCD, count: 50))
        #expect(code == hex("82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"))
    }

    // RFC 4231 §4.7, test case 6: a 131-byte key is hashed first.
    @Test func keyLongerThanTheBlock() {
        #expect(mac(key: [UInt8](repeating: 0xAA, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First")
            == hex("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"))
    }

    // RFC 4231 §4.8, test case 7: long key and a message of several blocks.
    @Test func keyAndMessageLongerThanTheBlock() {
        let message = "This is a test using a larger than block-size key and a larger than block-size data."
            + " The key needs to be hashed before being used by the HMAC algorithm."
        #expect(mac(key: [UInt8](repeating: 0xAA, count: 131), message)
            == hex("9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"))
    }

    // A 64-byte key is used as is and a 65-byte one hashed (RFC 2104 §2); an
    // off-by-one there passes every RFC 4231 case. Keys are bytes 0..<n, the
    // message "Sluice"; computed with Python's hmac.
    @Test(arguments: [
        (63, "73b25ea2ca41239558e1f0b538bb865a523741fd3dfa88510f1e7ebfa4379988"),
        (64, "9c127421e14d07ccaf37fe64eb38612024763fda6c39bec37c1667bf8b049440"),
        (65, "2c2e59572fc81e48a195a153cdf4dd962573ee774f68b7fae05522391a3c7e73"),
    ])
    func keysAroundTheBlockSize(keyLength: Int, code: String) {
        #expect(mac(key: (0 ..< keyLength).map { UInt8($0) }, "Sluice") == hex(code))
    }
}

@Suite struct HKDFTests {
    // RFC 5869 Appendix A.1, test case 1.
    @Test func basicCase() {
        let prk = HKDF<SHA256>.extract(salt: Array(0x00 ... 0x0C), inputKeyingMaterial: [UInt8](repeating: 0x0B, count: 22))
        #expect(prk == hex("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"))
        let okm = HKDF<SHA256>.expand(pseudorandomKey: prk, info: Array(0xF0 ... 0xF9), length: 42)
        #expect(okm == hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
    }

    // RFC 5869 Appendix A.2, test case 2: 80-byte inputs, three output blocks.
    @Test func longerInputsAndOutputs() {
        let prk = HKDF<SHA256>.extract(salt: Array(0x60 ... 0xAF), inputKeyingMaterial: Array(0x00 ... 0x4F))
        #expect(prk == hex("06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244"))
        let okm = HKDF<SHA256>.expand(pseudorandomKey: prk, info: Array(0xB0 ... 0xFF), length: 82)
        #expect(okm == hex("""
            b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c
            59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71
            cc30c58179ec3e87c14c01d5c1f3434f1d87
            """))
    }

    // RFC 5869 Appendix A.3, test case 3: an empty salt acts as 32 zero bytes.
    @Test func emptySaltAndInfo() {
        let prk = HKDF<SHA256>.extract(salt: [], inputKeyingMaterial: [UInt8](repeating: 0x0B, count: 22))
        #expect(prk == hex("19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04"))
        let okm = HKDF<SHA256>.expand(pseudorandomKey: prk, info: [], length: 42)
        #expect(okm == hex("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"))
    }

    // Each output block depends only on the ones before it, so a shorter
    // request is a prefix of a longer one, including at the 32-byte seam.
    @Test func shorterOutputIsAPrefix() {
        let prk = hex("06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244")
        let long = HKDF<SHA256>.expand(pseudorandomKey: prk, info: [1, 2, 3], length: 82)
        #expect(long.count == 82)
        for length in [1, 16, 31, 32, 33, 64, 65] {
            #expect(HKDF<SHA256>.expand(pseudorandomKey: prk, info: [1, 2, 3], length: length) == Array(long.prefix(length)),
                    "length \(length)")
        }
    }
}
