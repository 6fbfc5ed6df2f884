import TestSupport
import Testing
@testable import Crypto

@Suite struct AES128Tests {
    // FIPS-197 Appendix C.1 (AES-128).
    @Test func fips197AppendixC1() throws {
        let aes = try #require(AES128(key: Array(0x00 ... 0x0F)))
        #expect(aes.encryptBlock(hex("00112233445566778899aabbccddeeff")) == hex("69c4e0d86a7b0430d8cdb78070b4c55a"))
    }

    // FIPS-197 Appendix B, the worked cipher example.
    @Test func fips197AppendixB() throws {
        let aes = try #require(AES128(key: hex("2b7e151628aed2a6abf7158809cf4f3c")))
        #expect(aes.encryptBlock(hex("3243f6a8885a308d313198a2e0370734")) == hex("3925841d02dc09fbdc118597196a0b32"))
    }

    // Header protection masks are AES-ECB(hp, sample)[0..4] (RFC 9001 §5.4.3);
    // the RFCs print the first five bytes: RFC 9001 Appendix A.2 and A.3,
    // RFC 9369 Appendix A.2 and A.3.
    @Test(arguments: [
        ("9f50449e04a0e810283a1e9933adedd2", "d1b1c98dd7689fb8ec11d242b123dc9b", "437b9aec36"),
        ("c206b8d9b9f0f37644430b490eeaa314", "2cd0991cd25b0aac406a5816b6394100", "2ec0d8356a"),
        ("45b95e15235d6f45a6b19cbcb0294ba9", "ffe67b6abcdb4298b485dd04de806071", "94a0c95e80"),
        ("edf6d05c83121201b436e16877593c3a", "6f05d8a4398c47089698baeea26b91eb", "4dd92e91ea"),
    ] as [(String, String, String)])
    func quicHeaderProtectionMasks(hp: String, sample: String, mask: String) throws {
        let aes = try #require(AES128(key: hex(hp)))
        #expect(Array(aes.encryptBlock(hex(sample)).prefix(5)) == hex(mask))
    }

    @Test func encryptingTwiceGivesTheSameBlock() throws {
        let aes = try #require(AES128(key: Array(0x00 ... 0x0F)))
        let block = hex("00112233445566778899aabbccddeeff")
        #expect(aes.encryptBlock(block) == aes.encryptBlock(block))
        #expect(aes.encryptBlock(block).count == 16)
    }

    @Test(arguments: [0, 15, 17, 24, 32])
    func onlySixteenByteKeysAreAccepted(length: Int) {
        #expect(AES128(key: [UInt8](repeating: 1, count: length)) == nil)
    }

    @Test func sixteenByteKeyIsAccepted() {
        #expect(AES128(key: [UInt8](repeating: 1, count: 16)) != nil)
    }

    // The word form GCM uses is the byte form read as big-endian columns.
    @Test func wordFormMatchesByteForm() throws {
        let aes = try #require(AES128(key: Array(0x00 ... 0x0F)))
        let out = aes.encrypt((0x0011_2233, 0x4455_6677, 0x8899_aabb, 0xccdd_eeff))
        #expect([out.0, out.1, out.2, out.3] == [0x69c4_e0d8, 0x6a7b_0430, 0xd8cd_b780, 0x70b4_c55a])
    }

    // encryptBlock keeps the old contract for other lengths: the first 16
    // bytes, zero-padded.
    @Test(arguments: [0, 1, 5, 15, 17, 40])
    func otherBlockLengthsAreTruncatedOrZeroPadded(length: Int) throws {
        let key = Array(0x20 ... 0x2F) as [UInt8]
        let aes = try #require(AES128(key: key))
        let reference = try #require(ReferenceAES128(key: key))
        let block = (0 ..< length).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 3) }
        let padded = Array((block + [UInt8](repeating: 0, count: 16)).prefix(16))
        #expect(aes.encryptBlock(block) == aes.encryptBlock(padded))
        #expect(aes.encryptBlock(block) == reference.encryptBlock(block))
    }

    // 200 keys and blocks walked by a xorshift generator: the rewritten key
    // expansion and rounds agree with the previous implementation.
    @Test func agreesWithThePreviousImplementation() throws {
        var state: UInt64 = 0x9e37_79b9_7f4a_7c15
        func next() -> UInt8 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        for _ in 0 ..< 200 {
            let key = (0 ..< 16).map { _ in next() }
            let block = (0 ..< 16).map { _ in next() }
            let aes = try #require(AES128(key: key))
            let reference = try #require(ReferenceAES128(key: key))
            #expect(aes.encryptBlock(block) == reference.encryptBlock(block))
        }
    }

    // The cached counter-block rounds equal the plain cipher for counters
    // on both sides of every low-byte wrap they meet, including 2^32 - 1.
    @Test func counterBlockCachingMatchesTheCipher() throws {
        let aes = try #require(AES128(key: hex("feffe9928665731c6d6a8f9467308308")))
        let nonce: (UInt32, UInt32, UInt32) = (0xcafe_babe, 0xface_dbad, 0xdeca_f888)
        let starts: [UInt32] = [0, 2, 0x0000_01f0, 0x00ff_fff0, 0x7fff_ff00, 0xffff_fe00]
        var mismatches = 0
        aes.withEncryptor { e in
            for start in starts {
                var prefix = e.counterBlockPrefix(nonce: nonce, counter: start)
                var counter = start
                for _ in 0 ..< 512 {
                    if counter & 0xff == 0 { prefix = e.counterBlockPrefix(nonce: nonce, counter: counter) }
                    let cached = e.encryptCounterBlock(prefix, counter: counter)
                    let plain = e.encrypt((nonce.0, nonce.1, nonce.2, counter))
                    if cached != plain { mismatches += 1 }
                    counter &+= 1
                }
            }
        }
        #expect(mismatches == 0)
    }
}
