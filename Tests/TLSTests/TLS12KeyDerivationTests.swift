import Crypto
import Testing
import TestSupport
import TLS

/// TLS 1.2's PRF and the secrets made with it (RFC 5246 §5, §6.3, §7.4.9,
/// §8.1; RFC 7627 §4), against known answers. Every expected value below was
/// computed once with OpenSSL 3.0's TLS1-PRF (`openssl kdf -keylen N -kdfopt
/// digest:SHA256 -kdfopt hexsecret:S -kdfopt hexseed:hex(LABEL)SEED TLS1-PRF`,
/// OpenSSL taking label and seed together as its seed) and written here; no
/// test shells out.
@Suite struct TLS12KeyDerivationTests {
    // The widely published P_SHA256 vector (IETF TLS list, 2008), which OpenSSL reproduces.
    @Test func thePRFMatchesThePublishedSHA256Vector() {
        let output = TLS12KeyDerivation.prf(secret: hex("9b be 43 6b a9 40 f0 17 b1 76 52 84 9a 71 db 35"), label: "test label",
                                            seed: hex("a0 ba 9f 93 6c da 31 18 27 a6 f7 96 ff d5 19 8c"), count: 100)
        #expect(output == hex("""
            e3 f2 29 ba 72 7b e1 7b 8d 12 26 20 55 7c d4 53 c2 aa b2 1d 07 c3 d4 95 32 9b 52 d4 e6 1e db 5a
            6b 30 17 91 e9 0d 35 c9 c9 a4 6b 4e 14 ba f9 af 0f a0 22 f7 07 7d ef 17 ab fd 37 97 c0 56 4b ab
            4f bc 91 66 6e 9d ef 9b 97 fc e3 4f 79 67 89 ba a4 80 82 d1 22 ee 42 c5 a7 2e 5a 51 10 ff f7 01
            87 34 7b 66
            """))
    }

    // P_SHA256 makes 32 bytes per HMAC round; any count is the same stream cut
    // there, including counts at and around a round's end, and zero.
    @Test(arguments: [0, 1, 12, 31, 32, 33, 48, 64, 65, 99])
    func shorterOutputsArePrefixesOfLongerOnes(count: Int) {
        let secret = hex("9b be 43 6b a9 40 f0 17 b1 76 52 84 9a 71 db 35")
        let seed = hex("a0 ba 9f 93 6c da 31 18 27 a6 f7 96 ff d5 19 8c")
        let long = TLS12KeyDerivation.prf(secret: secret, label: "test label", seed: seed, count: 100)
        let short = TLS12KeyDerivation.prf(secret: secret, label: "test label", seed: seed, count: count)
        #expect(short.count == count)
        #expect(short == Array(long.prefix(count)))
    }

    // The label is part of the seed: a different label, or the label moved
    // into the seed's bytes differently, is a different stream.
    @Test func theLabelIsHashedInFrontOfTheSeed() {
        let secret = hex("9b be 43 6b a9 40 f0 17 b1 76 52 84 9a 71 db 35")
        let seed = hex("a0 ba 9f 93 6c da 31 18 27 a6 f7 96 ff d5 19 8c")
        let reference = TLS12KeyDerivation.prf(secret: secret, label: "test label", seed: seed, count: 32)
        // The same bytes split differently between label and seed give the same output (label + seed is one string).
        #expect(TLS12KeyDerivation.prf(secret: secret, label: "test", seed: Array(" label".utf8) + seed, count: 32) == reference)
        #expect(TLS12KeyDerivation.prf(secret: secret, label: "", seed: Array("test label".utf8) + seed, count: 32) == reference)
        #expect(TLS12KeyDerivation.prf(secret: secret, label: "test labe1", seed: seed, count: 32) != reference)
    }

    /// One set of random inputs and what OpenSSL's TLS1-PRF made of them.
    struct Vector: Sendable, CustomTestStringConvertible {
        var preMasterSecret: String
        var clientRandom: String
        var serverRandom: String
        var sessionHash: String
        var transcriptHash: String
        /// PRF(pms, "master secret", client_random + server_random)[0..<48]
        var masterSecret: String
        /// PRF(pms, "extended master secret", session_hash)[0..<48]
        var extendedMasterSecret: String
        /// PRF(master_secret, "key expansion", server_random + client_random)[0..<88]: ChaCha20's 2 × (32 + 12).
        var keyBlockChaCha: String
        /// The same stream cut at 40: AES-128-GCM's 2 × (16 + 4).
        var keyBlockGCM: String
        /// PRF(master_secret, "client finished" / "server finished", transcript_hash)[0..<12]
        var clientFinished: String
        var serverFinished: String

        var testDescription: String { String(preMasterSecret.prefix(8)) }
    }

    static let vectors: [Vector] = [
        Vector(
            preMasterSecret: "fb72d6d2fcb8d7ffea00c98c763597871939cd165f891ab64d4c566ad90b23aa",
            clientRandom: "0ac116426f1422bb3259c71d9fdc362ac3535ae088d854a35cb6a847f1285ab0",
            serverRandom: "c2d3d9dd4a0d70cc66459fec0444e03a7a9fd4f04e59bbbc604bba419bf9f296",
            sessionHash: "57ae57eb37ea7e88debffeb77890d43560d52630436a0323d58e29fadddc1335",
            transcriptHash: "543b244b339d043b71ac3f68b16c2fbb6b2921821857e8b23890dcce922403a7",
            masterSecret: "f6c4e5cf692f9d971d04a04f4fd914e2b5d8f80d8c6e1cae1ee9bf99546427a70275a118944603957183e3b944534bec",
            extendedMasterSecret: "576567ad2bb9292ae687307029f9cc6d3e24039c2749b625797db3fab5c37eefdbe4af16c5ca5d01466df4d132942704",
            keyBlockChaCha: "327d0ece65a5cfbdff81f2b81daaed209e14b7ab73c9db2674ce927931d78ba368fd93cfd98d5beb716d58c5a4196111"
                + "ceabcb1dc14658512d5f5f6c76d37f855c5064bcd43a93e0640ab03ecd6af1130549007b96199fed",
            keyBlockGCM: "327d0ece65a5cfbdff81f2b81daaed209e14b7ab73c9db2674ce927931d78ba368fd93cfd98d5beb",
            clientFinished: "b290fbcddaaa75c62addabf4",
            serverFinished: "0237733728b68d982ce69c78"),
        Vector(
            preMasterSecret: "e65da0541156b5691395d0515f3e35fcc14ddc6cebe8520dd4275b96168941ee",
            clientRandom: "a50a539d89481c982c225577c9b42862064fdd6dbef395d8f020623168e009a7",
            serverRandom: "a001aca6e560111cda6c7d44bb5bb2195fec5b043e35d7e2ce1cf3676826f878",
            sessionHash: "2df9b5c01ac4d9aaa8419acf6ba12ef84f25b193843ad79e9f9dedca7634ae1b",
            transcriptHash: "b6391150a49f8c9b49e2c5e40c9900304ebcc4aaf0d193012adddcb281ccaacb",
            masterSecret: "a313d815b61ffc14603ccd75a7373e8cd971d8d576dafee71e6319edcb2637229aad2825426f4895672285fff2ae51df",
            extendedMasterSecret: "a534bf22c386f2a0385c5724ba2d2921e916f9066f912ad0dd88d2b9097bc9c4505b50827ed1bb75a745671c35757e9f",
            keyBlockChaCha: "53dfaa09e05e94daf166acb9a794cff1a9606abacdd049808054b6d7794c3a36d98bdc8c66a47bd450ec29bc33d7afad"
                + "2abacd028497355618b72f4a6e968a2d13dc3e3e1318d8c9d6c577055c72ab0dbc22d599912152d5",
            keyBlockGCM: "53dfaa09e05e94daf166acb9a794cff1a9606abacdd049808054b6d7794c3a36d98bdc8c66a47bd4",
            clientFinished: "b916cac91a066518a17d7a71",
            serverFinished: "f461fbdbbc05736c83c21c05"),
        Vector(
            preMasterSecret: "364b557f84632c653cb1fed2e207badaef67ea430f26df3c2004226ba9cade2e",
            clientRandom: "f62877d4ca0eb38276eaf53953e944f7f076580c17cce0bb2c3bfda26d08e3ad",
            serverRandom: "9019783d82077728efb4601e31567f2539814a64f3224586fcbb1dfcaa5e3c4d",
            sessionHash: "623d875461991358cdc5e11b17acf4b1ef64d19192b869c26534793bd6a44e9a",
            transcriptHash: "ca3ea914130624add5960ece60aab7764e3b23f8ab426ce6864c406b9211ea9c",
            masterSecret: "db353e32b14d97c0325df14563dcf092ccfc615a291c49cd60a6ae8c7ac2135a9fa4c88e14d9174a1edbc905ca24e122",
            extendedMasterSecret: "c294d12cd7c52c2991018fc3ba1f9efb44416ab4544a4d0bce5a428114b78df5362854104fece2c11b9f37aef75e9715",
            keyBlockChaCha: "552a9ed190c35d091ce32a5afadb9a8606a2ae8bec967b08ecebd394f61ed46a04cb024119eb19f0621eebd724e8e664"
                + "4afd0e5e91d86afc91a73c09107359a9c50f2284856082244232ec097721017243cd36b44b5cec16",
            keyBlockGCM: "552a9ed190c35d091ce32a5afadb9a8606a2ae8bec967b08ecebd394f61ed46a04cb024119eb19f0",
            clientFinished: "9519699bdd66d68356db18a9",
            serverFinished: "0b9d55caabd8426cd6a6da7f"),
    ]

    @Test(arguments: vectors)
    func theMasterSecretMatchesOpenSSL(vector: Vector) {
        let secret = TLS12KeyDerivation.masterSecret(preMasterSecret: hex(vector.preMasterSecret), clientRandom: hex(vector.clientRandom),
                                                     serverRandom: hex(vector.serverRandom))
        #expect(secret == hex(vector.masterSecret))
    }

    // The randoms go client first for the master secret: swapped, it is another secret.
    @Test(arguments: vectors)
    func theMasterSecretTakesTheClientRandomFirst(vector: Vector) {
        let swapped = TLS12KeyDerivation.masterSecret(preMasterSecret: hex(vector.preMasterSecret), clientRandom: hex(vector.serverRandom),
                                                      serverRandom: hex(vector.clientRandom))
        #expect(swapped != hex(vector.masterSecret))
    }

    @Test(arguments: vectors)
    func theExtendedMasterSecretMatchesOpenSSL(vector: Vector) {
        let secret = TLS12KeyDerivation.extendedMasterSecret(preMasterSecret: hex(vector.preMasterSecret), sessionHash: hex(vector.sessionHash))
        #expect(secret == hex(vector.extendedMasterSecret))
        #expect(secret != hex(vector.masterSecret))
    }

    // §6.3: client_write_key, server_write_key, client_write_IV, server_write_IV,
    // from the stream seeded server random first. ChaCha20-Poly1305 (RFC 7905):
    // 32-byte keys and 12-byte IVs.
    @Test(arguments: vectors)
    func theChaChaKeyBlockMatchesOpenSSL(vector: Vector) {
        let block = hex(vector.keyBlockChaCha)
        let keys = TLS12KeyDerivation.keyBlock(masterSecret: hex(vector.masterSecret), clientRandom: hex(vector.clientRandom),
                                               serverRandom: hex(vector.serverRandom), keySize: 32, ivSize: 12)
        #expect(keys.clientKey == Array(block[0 ..< 32]))
        #expect(keys.serverKey == Array(block[32 ..< 64]))
        #expect(keys.clientIV == Array(block[64 ..< 76]))
        #expect(keys.serverIV == Array(block[76 ..< 88]))
    }

    // AES-128-GCM (RFC 5288 §3): 16-byte keys and a 4-byte salt each way.
    @Test(arguments: vectors)
    func theGCMKeyBlockMatchesOpenSSL(vector: Vector) {
        let block = hex(vector.keyBlockGCM)
        let keys = TLS12KeyDerivation.keyBlock(masterSecret: hex(vector.masterSecret), clientRandom: hex(vector.clientRandom),
                                               serverRandom: hex(vector.serverRandom), keySize: 16, ivSize: 4)
        #expect(keys.clientKey == Array(block[0 ..< 16]))
        #expect(keys.serverKey == Array(block[16 ..< 32]))
        #expect(keys.clientIV == Array(block[32 ..< 36]))
        #expect(keys.serverIV == Array(block[36 ..< 40]))
    }

    @Test(arguments: vectors)
    func finishedVerifyDataMatchesOpenSSL(vector: Vector) {
        let client = TLS12KeyDerivation.verifyData(masterSecret: hex(vector.masterSecret), label: "client finished",
                                                   transcriptHash: hex(vector.transcriptHash))
        let server = TLS12KeyDerivation.verifyData(masterSecret: hex(vector.masterSecret), label: "server finished",
                                                   transcriptHash: hex(vector.transcriptHash))
        #expect(client == hex(vector.clientFinished))
        #expect(server == hex(vector.serverFinished))
    }

    // The test file's own P_SHA256 (used by the scripted server in
    // TLS12ClientHelloTests) agrees with the vectors too, so that server's
    // secrets are not taken from the code under test.
    @Test(arguments: vectors)
    func theIndependentPRFAgrees(vector: Vector) {
        let master = IndependentPRF.prf(hex(vector.preMasterSecret), "master secret", hex(vector.clientRandom) + hex(vector.serverRandom), 48)
        #expect(master == hex(vector.masterSecret))
        let block = IndependentPRF.prf(hex(vector.masterSecret), "key expansion", hex(vector.serverRandom) + hex(vector.clientRandom), 88)
        #expect(block == hex(vector.keyBlockChaCha))
    }
}

/// RFC 5246 §5 written out again, straight from the text, for the test
/// server: P_hash(secret, seed) = HMAC(secret, A(1) + seed) + HMAC(secret, A(2) + seed) + ...
enum IndependentPRF {
    static func prf(_ secret: [UInt8], _ label: String, _ seed: [UInt8], _ count: Int) -> [UInt8] {
        let fullSeed = Array(label.utf8) + seed
        var result: [UInt8] = []
        var a = HMAC<SHA256>.authenticationCode(key: secret, message: fullSeed) // A(1)
        while result.count < count {
            result += HMAC<SHA256>.authenticationCode(key: secret, message: a + fullSeed)
            a = HMAC<SHA256>.authenticationCode(key: secret, message: a) // A(i+1)
        }
        return Array(result[0 ..< count])
    }
}
