import TestSupport

// RFC 8448 §3, "Simple 1-RTT Handshake": the handshake messages as sent,
// the X25519 keys and every secret, key and IV of the trace. (The
// ClientHello's signature_algorithms is the corrected one of erratum 5645.)
enum RFC8448 {
    static let clientPrivateKey = hex("49af42ba7f7994852d713ef2784bcbcaa7911de26adc5642cb634540e7ea5005")
    static let clientPublicKey = hex("99381de560e4bd43d23d8e435a7dbafeb3c06e51c13cae4d5413691e529aaf2c")
    static let serverPrivateKey = hex("b1580eeadf6dd589b8ef4f2d5652578cc810e9980191ec8d058308cea216a21e")
    static let serverPublicKey = hex("c9828876112095fe66762bdbf7c672e156d6cc253b833df1dd69b1b04e751f0f")
    static let sharedSecret = hex("8bd4054fb55b9d63fdfbacf9f04b9f0d35e6d63f537563efd46272900f89492d")

    static let clientHello = hex("""
        010000c00303cb34ecb1e78163ba1c38c6dacb196a6dffa21a8d9912ec18a2ef6283024dece7000006130113031302010000910000000b\
        0009000006736572766572ff01000100000a00140012001d0017001800190100010101020103010400230000003300260024001d002099\
        381de560e4bd43d23d8e435a7dbafeb3c06e51c13cae4d5413691e529aaf2c002b0003020304000d0020001e0403050306030203080408\
        05080604010501060102010402050206020202002d00020101001c00024001
        """)
    static let serverHello = hex("""
        020000560303a6af06a4121860dc5e6e60249cd34c95930c8ac5cb1434dac155772ed3e2692800130100002e00330024001d0020c98288\
        76112095fe66762bdbf7c672e156d6cc253b833df1dd69b1b04e751f0f002b00020304
        """)
    static let encryptedExtensions = hex("080000240022000a00140012001d00170018001901000101010201030104001c0002400100000000")
    static let certificate = hex("""
        0b0001b9000001b50001b0308201ac30820115a003020102020102300d06092a864886f70d01010b0500300e310c300a06035504031303\
        727361301e170d3136303733303031323335395a170d3236303733303031323335395a300e310c300a0603550403130372736130819f30\
        0d06092a864886f70d010101050003818d0030818902818100b4bb498f8279303d980836399b36c6988c0c68de55e1bdb826d3901a2461\
        eafd2de49a91d015abbc9a95137ace6c1af19eaa6af98c7ced43120998e187a80ee0ccb0524b1b018c3e0b63264d449a6d38e22a5fda43\
        0846748030530ef0461c8ca9d9efbfae8ea6d1d03e2bd193eff0ab9a8002c47428a6d35a8d88d79f7f1e3f0203010001a31a3018300906\
        03551d1304023000300b0603551d0f0404030205a0300d06092a864886f70d01010b05000381810085aad2a0e5b9276b908c65f73a7267\
        170618a54c5f8a7b337d2df7a594365417f2eae8f8a58c8f8172f9319cf36b7fd6c55b80f21a03015156726096fd335e5e67f2dbf10270\
        2e608ccae6bec1fc63a42a99be5c3eb7107c3c54e9b9eb2bd5203b1c3b84e0a8b2f759409ba3eac9d91d402dcc0cc8f8961229ac9187b4\
        2b4de10000
        """)
    static let certificateVerify = hex("""
        0f000084080400805a747c5d88fa9bd2e55ab085a61015b7211f824cd484145ab3ff52f1fda8477b0b7abc90db78e2d33a5c141a078653\
        fa6bef780c5ea248eeaaa785c4f394cab6d30bbe8d4859ee511f602957b15411ac027671459e46445c9ea58c181e818e95b8c3fb0bf327\
        8409d3be152a3da5043e063dda65cdf5aea20d53dfacd42f74f3
        """)
    static let serverFinished = hex("140000209b9b141d906337fbd2cbdce71df4deda4ab42c309572cb7fffee5454b78f0718")
    static let clientFinished = hex("14000020a8ec436d677634ae525ac1fcebe11a039ec17694fac6e98527b642f2edd5ce61")

    static let earlySecret = hex("33ad0a1c607ec03b09e6cd9893680ce210adf300aa1f2660e1b22e10f170f92a")
    static let handshakeSecret = hex("1dc826e93606aa6fdc0aadc12f741b01046aa6b99f691ed221a9f0ca043fbeac")
    static let helloTranscriptHash = hex("860c06edc07858ee8e78f0e7428c58edd6b43f2ca3e6e95f02ed063cf0e1cad8")
    static let clientHandshakeTrafficSecret = hex("b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21")
    static let serverHandshakeTrafficSecret = hex("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38")
    static let masterSecret = hex("18df06843d13a08bf2a449844c5f8a478001bc4d4c627984d5a41da8d0402919")
    static let serverHandshakeKey = hex("3fce516009c21727d0f2e4e86ee403bc")
    static let serverHandshakeIV = hex("5d313eb2671276ee13000b30")
    static let clientHandshakeKey = hex("dbfaa693d1762c5b666af5d950258d01")
    static let clientHandshakeIV = hex("5bd3c71b836e0b76bb73265f")
    static let clientApplicationTrafficSecret = hex("9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5")
    static let serverApplicationTrafficSecret = hex("a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643")
    static let serverApplicationKey = hex("9f02283b6c9c07efc26bb9f2ac92e356")
    static let serverApplicationIV = hex("cf782b88dd83549aadf1e984")
    static let clientApplicationKey = hex("17422dda596ed5d9acd890e3c63f5051")
    static let clientApplicationIV = hex("5b78923dee08579033e523d9")
}
