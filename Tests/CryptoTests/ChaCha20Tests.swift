import TestSupport
@testable import Crypto
import Testing

/// The ChaCha20 vectors of RFC 8439: §2.1.1, §2.2.1, §2.3.2, §2.4.2 and Appendix A.1-A.2.
@Suite struct ChaCha20Tests {
    /// The 64 keystream bytes of one block: §2.3's words serialized little-endian.
    static func keyStreamBlock(key: [UInt8], nonce: [UInt8], counter: UInt32) throws -> [UInt8] {
        let cipher = try #require(ChaCha20(key: key, nonce: nonce))
        var words = cipher.block(counter: counter)
        let wordArray = withUnsafeBytes(of: &words) { Array($0.bindMemory(to: UInt32.self)) }
        return wordArray.flatMap { word in (0 ..< 4).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } }
    }

    static func encrypt(key: [UInt8], nonce: [UInt8], initialCounter: UInt32, _ text: [UInt8]) throws -> [UInt8] {
        let cipher = try #require(ChaCha20(key: key, nonce: nonce))
        var bytes = text
        bytes.withUnsafeMutableBytes { cipher.xorKeyStream($0, initialCounter: initialCounter) }
        return bytes
    }

    static let sequentialKey = hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
    static let sunscreen = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
    static let ietfContribution = Array((
        "Any submission to the IETF intended by the Contributor for publication as all or part of an IETF "
            + "Internet-Draft or RFC and any statement made within the context of an IETF activity is considered an "
            + "\"IETF Contribution\". Such statements include oral statements in IETF sessions, as well as written and "
            + "electronic communications made at any time or place, which are addressed to"
    ).utf8)
    static let jabberwocky = Array("'Twas brillig, and the slithy toves\nDid gyre and gimble in the wabe:\nAll mimsy were the borogoves,\nAnd the mome raths outgrabe.".utf8)

    @Test func quarterRoundSection2_1_1() {
        let result = ChaCha20.quarterRound(0x1111_1111, 0x0102_0304, 0x9b8d_6f43, 0x0123_4567)
        #expect(result == (0xea2a_92f4, 0xcb1c_f8ce, 0x4581_472e, 0x5881_c4bb))
    }

    @Test func quarterRoundOnStateSection2_2_1() {
        var state: [UInt32] = [
            0x8795_31e0, 0xc5ec_f37d, 0x5164_61b1, 0xc9a6_2f8a,
            0x44c2_0ef3, 0x3390_af7f, 0xd9fc_690b, 0x2a5f_714c,
            0x5337_2767, 0xb00a_5631, 0x974c_541a, 0x359e_9963,
            0x5c97_1061, 0x3d63_1689, 0x2098_d9d6, 0x91db_d320,
        ]
        (state[2], state[7], state[8], state[13]) = ChaCha20.quarterRound(state[2], state[7], state[8], state[13])
        #expect(state == [
            0x8795_31e0, 0xc5ec_f37d, 0xbdb8_86dc, 0xc9a6_2f8a,
            0x44c2_0ef3, 0x3390_af7f, 0xd9fc_690b, 0xcfac_afd2,
            0xe46b_ea80, 0xb00a_5631, 0x974c_541a, 0x359e_9963,
            0x5c97_1061, 0xccc0_7c79, 0x2098_d9d6, 0x91db_d320,
        ])
    }

    @Test func blockFunctionSection2_3_2() throws {
        let block = try Self.keyStreamBlock(key: Self.sequentialKey, nonce: hex("000000090000004a00000000"), counter: 1)
        #expect(block == hex("""
            10 f1 e7 e4 d1 3b 59 15 50 0f dd 1f a3 20 71 c4
            c7 d1 f4 c7 33 c0 68 03 04 22 aa 9a c3 d4 6c 4e
            d2 82 64 46 07 9f aa 09 14 c2 d7 05 d9 8b 02 a2
            b5 12 9c d1 de 16 4e b9 cb d0 83 e8 a2 50 3c 4e
            """))
    }

    @Test func blockFunctionWordsSection2_3_2() throws {
        let cipher = try #require(ChaCha20(key: Self.sequentialKey, nonce: hex("000000090000004a00000000")))
        let w = cipher.block(counter: 1)
        let words = [w.0, w.1, w.2, w.3, w.4, w.5, w.6, w.7, w.8, w.9, w.10, w.11, w.12, w.13, w.14, w.15]
        #expect(words == [
            0xe4e7_f110, 0x1559_3bd1, 0x1fdd_0f50, 0xc471_20a3,
            0xc7f4_d1c7, 0x0368_c033, 0x9aaa_2204, 0x4e6c_d4c3,
            0x4664_82d2, 0x09aa_9f07, 0x05d7_c214, 0xa202_8bd9,
            0xd19c_12b5, 0xb94e_16de, 0xe883_d0cb, 0x4e3c_50a2,
        ])
    }

    @Test func encryptionSection2_4_2() throws {
        #expect(Self.sunscreen.count == 114)
        let ciphertext = try Self.encrypt(key: Self.sequentialKey, nonce: hex("000000000000004a00000000"), initialCounter: 1, Self.sunscreen)
        #expect(ciphertext == hex("""
            6e 2e 35 9a 25 68 f9 80 41 ba 07 28 dd 0d 69 81
            e9 7e 7a ec 1d 43 60 c2 0a 27 af cc fd 9f ae 0b
            f9 1b 65 c5 52 47 33 ab 8f 59 3d ab cd 62 b3 57
            16 39 d6 24 e6 51 52 ab 8f 53 0c 35 9f 08 61 d8
            07 ca 0d bf 50 0d 6a 61 56 a3 8e 08 8a 22 b6 5e
            52 bc 51 4d 16 cc f8 06 81 8c e9 1a b7 79 37 36
            5a f9 0b bf 74 a3 5b e6 b4 0b 8e ed f2 78 5e 42
            87 4d
            """))
        // Decryption is the same operation (§2.4).
        let decrypted = try Self.encrypt(key: Self.sequentialKey, nonce: hex("000000000000004a00000000"), initialCounter: 1, ciphertext)
        #expect(decrypted == Self.sunscreen)
    }

    @Test func keyStreamSection2_4_2() throws {
        let keyStream = try Self.encrypt(key: Self.sequentialKey, nonce: hex("000000000000004a00000000"), initialCounter: 1, [UInt8](repeating: 0, count: 114))
        #expect(keyStream == hex("""
            22:4f:51:f3:40:1b:d9:e1:2f:de:27:6f:b8:63:1d:ed:8c:13:1f:82:3d:2c:06
            e2:7e:4f:ca:ec:9e:f3:cf:78:8a:3b:0a:a3:72:60:0a:92:b5:79:74:cd:ed:2b
            93:34:79:4c:ba:40:c6:3e:34:cd:ea:21:2c:4c:f0:7d:41:b7:69:a6:74:9f:3f
            63:0f:41:22:ca:fe:28:ec:4d:c4:7e:26:d4:34:6d:70:b9:8c:73:f3:e9:c5:3a
            c4:0c:59:45:39:8b:6e:da:1a:83:2c:89:c1:67:ea:cd:90:1d:7e:2b:f3:63
            """))
    }

    struct BlockVector: Sendable, CustomTestStringConvertible {
        let number: Int, key: String, nonce: String, counter: UInt32, keyStream: String
        var testDescription: String { "A.1 #\(number)" }
    }

    static let appendixA1: [BlockVector] = [
        BlockVector(number: 1, key: String(repeating: "00", count: 32), nonce: String(repeating: "00", count: 12), counter: 0, keyStream: """
            76 b8 e0 ad a0 f1 3d 90 40 5d 6a e5 53 86 bd 28
            bd d2 19 b8 a0 8d ed 1a a8 36 ef cc 8b 77 0d c7
            da 41 59 7c 51 57 48 8d 77 24 e0 3f b8 d8 4a 37
            6a 43 b8 f4 15 18 a1 1c c3 87 b6 69 b2 ee 65 86
            """),
        BlockVector(number: 2, key: String(repeating: "00", count: 32), nonce: String(repeating: "00", count: 12), counter: 1, keyStream: """
            9f 07 e7 be 55 51 38 7a 98 ba 97 7c 73 2d 08 0d
            cb 0f 29 a0 48 e3 65 69 12 c6 53 3e 32 ee 7a ed
            29 b7 21 76 9c e6 4e 43 d5 71 33 b0 74 d8 39 d5
            31 ed 1f 28 51 0a fb 45 ac e1 0a 1f 4b 79 4d 6f
            """),
        BlockVector(number: 3, key: String(repeating: "00", count: 31) + "01", nonce: String(repeating: "00", count: 12), counter: 1, keyStream: """
            3a eb 52 24 ec f8 49 92 9b 9d 82 8d b1 ce d4 dd
            83 20 25 e8 01 8b 81 60 b8 22 84 f3 c9 49 aa 5a
            8e ca 00 bb b4 a7 3b da d1 92 b5 c4 2f 73 f2 fd
            4e 27 36 44 c8 b3 61 25 a6 4a dd eb 00 6c 13 a0
            """),
        BlockVector(number: 4, key: "00ff" + String(repeating: "00", count: 30), nonce: String(repeating: "00", count: 12), counter: 2, keyStream: """
            72 d5 4d fb f1 2e c4 4b 36 26 92 df 94 13 7f 32
            8f ea 8d a7 39 90 26 5e c1 bb be a1 ae 9a f0 ca
            13 b2 5a a2 6c b4 a6 48 cb 9b 9d 1b e6 5b 2c 09
            24 a6 6c 54 d5 45 ec 1b 73 74 f4 87 2e 99 f0 96
            """),
        BlockVector(number: 5, key: String(repeating: "00", count: 32), nonce: String(repeating: "00", count: 11) + "02", counter: 0, keyStream: """
            c2 c6 4d 37 8c d5 36 37 4a e2 04 b9 ef 93 3f cd
            1a 8b 22 88 b3 df a4 96 72 ab 76 5b 54 ee 27 c7
            8a 97 0e 0e 95 5c 14 f3 a8 8e 74 1b 97 c2 86 f7
            5f 8f c2 99 e8 14 83 62 fa 19 8a 39 53 1b ed 6d
            """),
    ]

    @Test(arguments: appendixA1) func blockFunctionAppendixA1(_ vector: BlockVector) throws {
        let block = try Self.keyStreamBlock(key: hex(vector.key), nonce: hex(vector.nonce), counter: vector.counter)
        #expect(block == hex(vector.keyStream))
        // The stream cipher over 64 zero bytes yields the same block.
        let stream = try Self.encrypt(key: hex(vector.key), nonce: hex(vector.nonce), initialCounter: vector.counter, [UInt8](repeating: 0, count: 64))
        #expect(stream == hex(vector.keyStream))
    }

    @Test func encryptionAppendixA2Vector1() throws {
        let ciphertext = try Self.encrypt(key: [UInt8](repeating: 0, count: 32), nonce: [UInt8](repeating: 0, count: 12), initialCounter: 0, [UInt8](repeating: 0, count: 64))
        #expect(ciphertext == hex("""
            76 b8 e0 ad a0 f1 3d 90 40 5d 6a e5 53 86 bd 28
            bd d2 19 b8 a0 8d ed 1a a8 36 ef cc 8b 77 0d c7
            da 41 59 7c 51 57 48 8d 77 24 e0 3f b8 d8 4a 37
            6a 43 b8 f4 15 18 a1 1c c3 87 b6 69 b2 ee 65 86
            """))
    }

    @Test func encryptionAppendixA2Vector2() throws {
        #expect(Self.ietfContribution.count == 375)
        let key = hex(String(repeating: "00", count: 31) + "01")
        let nonce = hex("000000000000000000000002")
        let ciphertext = try Self.encrypt(key: key, nonce: nonce, initialCounter: 1, Self.ietfContribution)
        #expect(ciphertext == hex("""
            a3 fb f0 7d f3 fa 2f de 4f 37 6c a2 3e 82 73 70
            41 60 5d 9f 4f 4f 57 bd 8c ff 2c 1d 4b 79 55 ec
            2a 97 94 8b d3 72 29 15 c8 f3 d3 37 f7 d3 70 05
            0e 9e 96 d6 47 b7 c3 9f 56 e0 31 ca 5e b6 25 0d
            40 42 e0 27 85 ec ec fa 4b 4b b5 e8 ea d0 44 0e
            20 b6 e8 db 09 d8 81 a7 c6 13 2f 42 0e 52 79 50
            42 bd fa 77 73 d8 a9 05 14 47 b3 29 1c e1 41 1c
            68 04 65 55 2a a6 c4 05 b7 76 4d 5e 87 be a8 5a
            d0 0f 84 49 ed 8f 72 d0 d6 62 ab 05 26 91 ca 66
            42 4b c8 6d 2d f8 0e a4 1f 43 ab f9 37 d3 25 9d
            c4 b2 d0 df b4 8a 6c 91 39 dd d7 f7 69 66 e9 28
            e6 35 55 3b a7 6c 5c 87 9d 7b 35 d4 9e b2 e6 2b
            08 71 cd ac 63 89 39 e2 5e 8a 1e 0e f9 d5 28 0f
            a8 ca 32 8b 35 1c 3c 76 59 89 cb cf 3d aa 8b 6c
            cc 3a af 9f 39 79 c9 2b 37 20 fc 88 dc 95 ed 84
            a1 be 05 9c 64 99 b9 fd a2 36 e7 e8 18 b0 4b 0b
            c3 9c 1e 87 6b 19 3b fe 55 69 75 3f 88 12 8c c0
            8a aa 9b 63 d1 a1 6f 80 ef 25 54 d7 18 9c 41 1f
            58 69 ca 52 c5 b8 3f a3 6f f2 16 b9 c1 d3 00 62
            be bc fd 2d c5 bc e0 91 19 34 fd a7 9a 86 f6 e6
            98 ce d7 59 c3 ff 9b 64 77 33 8f 3d a4 f9 cd 85
            14 ea 99 82 cc af b3 41 b2 38 4d d9 02 f3 d1 ab
            7a c6 1d d2 9c 6f 21 ba 5b 86 2f 37 30 e3 7c fd
            c4 fd 80 6c 22 f2 21
            """))
    }

    @Test func encryptionAppendixA2Vector3() throws {
        #expect(Self.jabberwocky.count == 127)
        let key = hex("1c 92 40 a5 eb 55 d3 8a f3 33 88 86 04 f6 b5 f0 47 39 17 c1 40 2b 80 09 9d ca 5c bc 20 70 75 c0")
        let ciphertext = try Self.encrypt(key: key, nonce: hex("000000000000000000000002"), initialCounter: 42, Self.jabberwocky)
        #expect(ciphertext == hex("""
            62 e6 34 7f 95 ed 87 a4 5f fa e7 42 6f 27 a1 df
            5f b6 91 10 04 4c 0d 73 11 8e ff a9 5b 01 e5 cf
            16 6d 3d f2 d7 21 ca f9 b2 1e 5f b1 4c 61 68 71
            fd 84 c5 4f 9d 65 b2 83 19 6c 7f e4 f6 05 53 eb
            f3 9c 64 02 c4 22 34 e3 2a 35 6b 3e 76 43 12 a6
            1a 55 32 05 57 16 ea d6 96 25 68 f8 7d 3f 3f 77
            04 c6 a8 d1 bc d1 bf 4d 50 d6 15 4b 6d a7 31 b1
            87 b5 8d fd 72 8a fa 36 75 7a 79 7a c1 88 d1
            """))
    }

    /// The four-blocks-at-once path (256-byte runs) against the one-block
    /// function, at lengths around its boundaries and up to the last counter.
    @Test(arguments: [(UInt32(0), 256), (1, 257), (7, 511), (0, 512), (3, 1041), (0xffff_fff0, 1024), (0xffff_ffef, 1000)])
    func fourBlockPathMatchesBlockFunction(initialCounter: UInt32, length: Int) throws {
        let key = hex("1c 92 40 a5 eb 55 d3 8a f3 33 88 86 04 f6 b5 f0 47 39 17 c1 40 2b 80 09 9d ca 5c bc 20 70 75 c0")
        let nonce = hex("000000000000000000000002")
        #expect(ChaCha20.canProcess(byteCount: length, initialCounter: initialCounter))
        var expected: [UInt8] = []
        var counter = initialCounter
        while expected.count < length {
            expected += try Self.keyStreamBlock(key: key, nonce: nonce, counter: counter)
            counter &+= 1
        }
        let keyStream = try Self.encrypt(key: key, nonce: nonce, initialCounter: initialCounter, [UInt8](repeating: 0, count: length))
        #expect(keyStream == Array(expected.prefix(length)))
    }

    @Test func wrongKeyOrNonceSizeIsRejected() {
        #expect(ChaCha20(key: [UInt8](repeating: 0, count: 31), nonce: [UInt8](repeating: 0, count: 12)) == nil)
        #expect(ChaCha20(key: [UInt8](repeating: 0, count: 33), nonce: [UInt8](repeating: 0, count: 12)) == nil)
        #expect(ChaCha20(key: [UInt8](repeating: 0, count: 32), nonce: [UInt8](repeating: 0, count: 8)) == nil)
        #expect(ChaCha20(key: [UInt8](repeating: 0, count: 32), nonce: [UInt8](repeating: 0, count: 16)) == nil)
        #expect(ChaCha20(key: [], nonce: []) == nil)
    }

    @Test func counterLimit() {
        // §2.8 note 1: from counter 1, at most 2^32 - 1 blocks.
        #expect(ChaCha20.canProcess(byteCount: 0, initialCounter: 1))
        #expect(ChaCha20.canProcess(byteCount: 64 * 0xffff_ffff, initialCounter: 1))
        #expect(!ChaCha20.canProcess(byteCount: 64 * 0xffff_ffff + 1, initialCounter: 1))
        #expect(ChaCha20.canProcess(byteCount: 64, initialCounter: 0xffff_ffff))
        #expect(!ChaCha20.canProcess(byteCount: 65, initialCounter: 0xffff_ffff))
        #expect(!ChaCha20.canProcess(byteCount: -1, initialCounter: 0))
    }
}
