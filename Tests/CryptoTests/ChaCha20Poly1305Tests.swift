import TestSupport
@testable import Crypto
import Testing

/// AEAD_CHACHA20_POLY1305 (RFC 8439): §2.6.2 and A.4 key generation, §2.8.2
/// and A.5 AEAD vectors, then every kind of malformed or tampered input.
@Suite struct ChaCha20Poly1305Tests {
    // §2.8.2
    static let key = hex("""
        80 81 82 83 84 85 86 87 88 89 8a 8b 8c 8d 8e 8f
        90 91 92 93 94 95 96 97 98 99 9a 9b 9c 9d 9e 9f
        """)
    /// The 32-bit fixed-common part 07 00 00 00 then the IV "@ABCDEFG".
    static let nonce = hex("07 00 00 00 40 41 42 43 44 45 46 47")
    static let additionalData = hex("50 51 52 53 c0 c1 c2 c3 c4 c5 c6 c7")
    static let ciphertext = hex("""
        d3 1a 8d 34 64 8e 60 db 7b 86 af bc 53 ef 7e c2
        a4 ad ed 51 29 6e 08 fe a9 e2 b5 a7 36 ee 62 d6
        3d be a4 5e 8c a9 67 12 82 fa fb 69 da 92 72 8b
        1a 71 de 0a 9e 06 0b 29 05 d6 a5 b6 7e cd 3b 36
        92 dd bd 7f 2d 77 8b 8c 98 03 ae e3 28 09 1b 58
        fa b3 24 e4 fa d6 75 94 55 85 80 8b 48 31 d7 bc
        3f f4 de f0 8e 4b 7a 9d e5 76 d2 65 86 ce c6 4b
        61 16
        """)
    static let tag = hex("1a:e1:0b:59:4f:09:e2:6a:7e:90:2e:cb:d0:60:06:91")

    @Test func keyGenerationSection2_6_2() throws {
        let oneTimeKey = try #require(ChaCha20Poly1305.poly1305KeyGeneration(key: Self.key, nonce: hex("00 00 00 00 00 01 02 03 04 05 06 07")))
        #expect(oneTimeKey == hex("""
            8a d5 a0 8b 90 5f 81 cc 81 50 40 27 4a b2 94 71
            a8 33 b6 37 e3 fd 0d a5 08 db b8 e2 fd d1 a6 46
            """))
    }

    @Test func keyGenerationSection2_8_2() throws {
        let oneTimeKey = try #require(ChaCha20Poly1305.poly1305KeyGeneration(key: Self.key, nonce: Self.nonce))
        #expect(oneTimeKey == hex("""
            7b ac 2b 25 2d b4 47 af 09 b6 7a 55 a4 e9 55 84
            0a e1 d6 73 10 75 d9 eb 2a 93 75 78 3e d5 53 ff
            """))
    }

    @Test(arguments: [
        (String(repeating: "00", count: 32), "000000000000000000000000",
         "76 b8 e0 ad a0 f1 3d 90 40 5d 6a e5 53 86 bd 28 bd d2 19 b8 a0 8d ed 1a a8 36 ef cc 8b 77 0d c7"),
        (String(repeating: "00", count: 31) + "01", "000000000000000000000002",
         "ec fa 25 4f 84 5f 64 74 73 d3 cb 14 0d a9 e8 76 06 cb 33 06 6c 44 7b 87 bc 26 66 dd e3 fb b7 39"),
        ("1c 92 40 a5 eb 55 d3 8a f3 33 88 86 04 f6 b5 f0 47 39 17 c1 40 2b 80 09 9d ca 5c bc 20 70 75 c0", "000000000000000000000002",
         "96 5e 3b c6 f9 ec 7e d9 56 08 08 f4 d2 29 f9 4b 13 7f f2 75 ca 9b 3f cb dd 59 de aa d2 33 10 ae"),
    ])
    func keyGenerationAppendixA4(key: String, nonce: String, expected: String) throws {
        let oneTimeKey = try #require(ChaCha20Poly1305.poly1305KeyGeneration(key: hex(key), nonce: hex(nonce)))
        #expect(oneTimeKey == hex(expected))
    }

    @Test func sealSection2_8_2() throws {
        let sealed = try #require(ChaCha20Poly1305.seal(key: Self.key, nonce: Self.nonce, plaintext: ChaCha20Tests.sunscreen, additionalData: Self.additionalData))
        #expect(sealed.ciphertext == Self.ciphertext)
        #expect(sealed.tag == Self.tag)
    }

    @Test func openSection2_8_2() throws {
        let plaintext = try #require(ChaCha20Poly1305.open(key: Self.key, nonce: Self.nonce, ciphertext: Self.ciphertext, tag: Self.tag, additionalData: Self.additionalData))
        #expect(plaintext == ChaCha20Tests.sunscreen)
    }

    /// §2.8.2's "AEAD Construction for Poly1305" buffer, MACed with the one-time key, gives the tag.
    @Test func macDataSection2_8_2() throws {
        let oneTimeKey = try #require(ChaCha20Poly1305.poly1305KeyGeneration(key: Self.key, nonce: Self.nonce))
        let macData = Self.additionalData + [0, 0, 0, 0] + Self.ciphertext + [UInt8](repeating: 0, count: 14)
            + hex("0c 00 00 00 00 00 00 00 72 00 00 00 00 00 00 00")
        #expect(macData.count == 160)
        #expect(Poly1305.authenticate(message: macData, key: oneTimeKey) == Self.tag)
    }

    // A.5
    static let a5Key = hex("1c 92 40 a5 eb 55 d3 8a f3 33 88 86 04 f6 b5 f0 47 39 17 c1 40 2b 80 09 9d ca 5c bc 20 70 75 c0")
    static let a5Nonce = hex("00 00 00 00 01 02 03 04 05 06 07 08")
    static let a5AdditionalData = hex("f3 33 88 86 00 00 00 00 00 00 4e 91")
    static let a5Tag = hex("ee ad 9d 67 89 0c bb 22 39 23 36 fe a1 85 1f 38")
    static let a5Ciphertext = hex("""
        64 a0 86 15 75 86 1a f4 60 f0 62 c7 9b e6 43 bd
        5e 80 5c fd 34 5c f3 89 f1 08 67 0a c7 6c 8c b2
        4c 6c fc 18 75 5d 43 ee a0 9e e9 4e 38 2d 26 b0
        bd b7 b7 3c 32 1b 01 00 d4 f0 3b 7f 35 58 94 cf
        33 2f 83 0e 71 0b 97 ce 98 c8 a8 4a bd 0b 94 81
        14 ad 17 6e 00 8d 33 bd 60 f9 82 b1 ff 37 c8 55
        97 97 a0 6e f4 f0 ef 61 c1 86 32 4e 2b 35 06 38
        36 06 90 7b 6a 7c 02 b0 f9 f6 15 7b 53 c8 67 e4
        b9 16 6c 76 7b 80 4d 46 a5 9b 52 16 cd e7 a4 e9
        90 40 c5 a4 04 33 22 5e e2 82 a1 b0 a0 6c 52 3e
        af 45 34 d7 f8 3f a1 15 5b 00 47 71 8c bc 54 6a
        0d 07 2b 04 b3 56 4e ea 1b 42 22 73 f5 48 27 1a
        0b b2 31 60 53 fa 76 99 19 55 eb d6 31 59 43 4e
        ce bb 4e 46 6d ae 5a 10 73 a6 72 76 27 09 7a 10
        49 e6 17 d9 1d 36 10 94 fa 68 f0 ff 77 98 71 30
        30 5b ea ba 2e da 04 df 99 7b 71 4d 6c 6f 2c 29
        a6 ad 5c b4 02 2b 02 70 9b
        """)
    static let a5Plaintext = Array((
        "Internet-Drafts are draft documents valid for a maximum of six months and may be updated, replaced, "
            + "or obsoleted by other documents at any time. It is inappropriate to use Internet-Drafts as reference "
            + "material or to cite them other than as /\u{201C}work in progress./\u{201D}"
    ).utf8)

    @Test func decryptionAppendixA5() throws {
        #expect(Self.a5Plaintext.count == 265)
        #expect(Self.a5Ciphertext.count == 265)
        let oneTimeKey = try #require(ChaCha20Poly1305.poly1305KeyGeneration(key: Self.a5Key, nonce: Self.a5Nonce))
        #expect(oneTimeKey == hex("""
            bd f0 4a a9 5c e4 de 89 95 b1 4b b6 a1 8f ec af
            26 47 8f 50 c0 54 f5 63 db c0 a2 1e 26 15 72 aa
            """))
        var buffer = Self.a5Ciphertext
        #expect(ChaCha20Poly1305.openInPlace(key: Self.a5Key, nonce: Self.a5Nonce, buffer: &buffer, range: 0 ..< buffer.count, tag: Self.a5Tag[...], additionalData: Self.a5AdditionalData))
        #expect(buffer == Self.a5Plaintext)
        // And the other way round.
        let sealed = try #require(ChaCha20Poly1305.seal(key: Self.a5Key, nonce: Self.a5Nonce, plaintext: Self.a5Plaintext, additionalData: Self.a5AdditionalData))
        #expect(sealed.ciphertext == Self.a5Ciphertext)
        #expect(sealed.tag == Self.a5Tag)
    }

    // MARK: - Tampering: every single-bit change fails and leaves the buffer as it was.

    @Test func flippedCiphertextBitFailsAndLeavesBufferUntouched() {
        for bit in 0 ..< Self.a5Ciphertext.count * 8 {
            var buffer = Self.a5Ciphertext
            buffer[bit / 8] ^= 1 << UInt8(bit % 8)
            let tampered = buffer
            let opened = ChaCha20Poly1305.openInPlace(key: Self.a5Key, nonce: Self.a5Nonce, buffer: &buffer, range: 0 ..< buffer.count, tag: Self.a5Tag[...], additionalData: Self.a5AdditionalData)
            #expect(!opened, "bit \(bit)")
            #expect(buffer == tampered, "bit \(bit)")
        }
    }

    @Test func flippedTagBitFailsAndLeavesBufferUntouched() {
        for bit in 0 ..< 128 {
            var tag = Self.a5Tag
            tag[bit / 8] ^= 1 << UInt8(bit % 8)
            var buffer = Self.a5Ciphertext
            let opened = ChaCha20Poly1305.openInPlace(key: Self.a5Key, nonce: Self.a5Nonce, buffer: &buffer, range: 0 ..< buffer.count, tag: tag[...], additionalData: Self.a5AdditionalData)
            #expect(!opened, "bit \(bit)")
            #expect(buffer == Self.a5Ciphertext, "bit \(bit)")
        }
    }

    @Test func flippedAdditionalDataBitFailsAndLeavesBufferUntouched() {
        for bit in 0 ..< Self.a5AdditionalData.count * 8 {
            var additionalData = Self.a5AdditionalData
            additionalData[bit / 8] ^= 1 << UInt8(bit % 8)
            var buffer = Self.a5Ciphertext
            let opened = ChaCha20Poly1305.openInPlace(key: Self.a5Key, nonce: Self.a5Nonce, buffer: &buffer, range: 0 ..< buffer.count, tag: Self.a5Tag[...], additionalData: additionalData)
            #expect(!opened, "bit \(bit)")
            #expect(buffer == Self.a5Ciphertext, "bit \(bit)")
        }
    }

    @Test func alteredLengthsOrKeyOrNonceFail() {
        var buffer = Self.a5Ciphertext
        // Truncated or extended additional data / ciphertext shift the lengths block.
        #expect(!ChaCha20Poly1305.openInPlace(key: Self.a5Key, nonce: Self.a5Nonce, buffer: &buffer, range: 0 ..< buffer.count, tag: Self.a5Tag[...], additionalData: Array(Self.a5AdditionalData.dropLast())))
        #expect(!ChaCha20Poly1305.openInPlace(key: Self.a5Key, nonce: Self.a5Nonce, buffer: &buffer, range: 0 ..< buffer.count, tag: Self.a5Tag[...], additionalData: Self.a5AdditionalData + [0]))
        #expect(!ChaCha20Poly1305.openInPlace(key: Self.a5Key, nonce: Self.a5Nonce, buffer: &buffer, range: 0 ..< buffer.count - 1, tag: Self.a5Tag[...], additionalData: Self.a5AdditionalData))
        var otherKey = Self.a5Key
        otherKey[31] ^= 0x80
        #expect(!ChaCha20Poly1305.openInPlace(key: otherKey, nonce: Self.a5Nonce, buffer: &buffer, range: 0 ..< buffer.count, tag: Self.a5Tag[...], additionalData: Self.a5AdditionalData))
        var otherNonce = Self.a5Nonce
        otherNonce[0] ^= 1
        #expect(!ChaCha20Poly1305.openInPlace(key: Self.a5Key, nonce: otherNonce, buffer: &buffer, range: 0 ..< buffer.count, tag: Self.a5Tag[...], additionalData: Self.a5AdditionalData))
        #expect(buffer == Self.a5Ciphertext)
    }

    // MARK: - Sizes and ranges

    @Test func wrongSizesAreRejected() {
        let key = Self.a5Key, nonce = Self.a5Nonce
        for badKey in [[], Array(key.dropLast()), key + [0], key + key] {
            var buffer: [UInt8] = [1, 2, 3]
            #expect(ChaCha20Poly1305.sealInPlace(key: badKey, nonce: nonce, buffer: &buffer, range: 0 ..< 3, additionalData: []) == nil)
            #expect(buffer == [1, 2, 3])
            #expect(!ChaCha20Poly1305.openInPlace(key: badKey, nonce: nonce, buffer: &buffer, range: 0 ..< 3, tag: [UInt8](repeating: 0, count: 16)[...], additionalData: []))
            #expect(ChaCha20Poly1305.seal(key: badKey, nonce: nonce, plaintext: [1], additionalData: []) == nil)
            #expect(ChaCha20Poly1305.open(key: badKey, nonce: nonce, ciphertext: [1], tag: [UInt8](repeating: 0, count: 16), additionalData: []) == nil)
        }
        for badNonce in [[], Array(nonce.dropLast()), nonce + [0], Array(nonce.prefix(8))] {
            var buffer: [UInt8] = [1, 2, 3]
            #expect(ChaCha20Poly1305.sealInPlace(key: key, nonce: badNonce, buffer: &buffer, range: 0 ..< 3, additionalData: []) == nil)
            #expect(!ChaCha20Poly1305.openInPlace(key: key, nonce: badNonce, buffer: &buffer, range: 0 ..< 3, tag: [UInt8](repeating: 0, count: 16)[...], additionalData: []))
            #expect(buffer == [1, 2, 3])
        }
        let sealed = ChaCha20Poly1305.seal(key: key, nonce: nonce, plaintext: [1, 2, 3], additionalData: [9])!
        for badTag in [[], Array(sealed.tag.dropLast()), sealed.tag + [0], Array(sealed.tag.prefix(12))] {
            var buffer = sealed.ciphertext
            #expect(!ChaCha20Poly1305.openInPlace(key: key, nonce: nonce, buffer: &buffer, range: 0 ..< 3, tag: badTag[...], additionalData: [9]))
            #expect(buffer == sealed.ciphertext)
            #expect(ChaCha20Poly1305.open(key: key, nonce: nonce, ciphertext: sealed.ciphertext, tag: badTag, additionalData: [9]) == nil)
        }
        // A tag given as a slice of a larger array, starting at a nonzero index, is read correctly.
        let carrier = [0xAA] + sealed.tag + [0xBB]
        var buffer = sealed.ciphertext
        #expect(ChaCha20Poly1305.openInPlace(key: key, nonce: nonce, buffer: &buffer, range: 0 ..< 3, tag: carrier[1 ..< 17], additionalData: [9]))
        #expect(buffer == [1, 2, 3])
    }

    @Test func rangesOutsideTheBufferAreRejected() {
        let key = Self.a5Key, nonce = Self.a5Nonce
        let ranges: [Range<Int>] = [-1 ..< 2, 0 ..< 11, 5 ..< 11, 10 ..< 11, 11 ..< 11, -5 ..< -1, Int.min ..< 0, 0 ..< Int.max]
        for range in ranges {
            var buffer = [UInt8](repeating: 7, count: 10)
            #expect(ChaCha20Poly1305.sealInPlace(key: key, nonce: nonce, buffer: &buffer, range: range, additionalData: []) == nil, "\(range)")
            #expect(!ChaCha20Poly1305.openInPlace(key: key, nonce: nonce, buffer: &buffer, range: range, tag: [UInt8](repeating: 0, count: 16)[...], additionalData: []), "\(range)")
            #expect(buffer == [UInt8](repeating: 7, count: 10))
        }
    }

    @Test func emptyPlaintextAndEmptyAdditionalData() throws {
        let key = Self.a5Key, nonce = Self.a5Nonce
        // Empty everything: the tag is Poly1305 of the lengths block alone.
        let empty = try #require(ChaCha20Poly1305.seal(key: key, nonce: nonce, plaintext: [], additionalData: []))
        #expect(empty.ciphertext.isEmpty)
        let oneTimeKey = try #require(ChaCha20Poly1305.poly1305KeyGeneration(key: key, nonce: nonce))
        #expect(empty.tag == Poly1305.authenticate(message: [UInt8](repeating: 0, count: 16), key: oneTimeKey))
        #expect(ChaCha20Poly1305.open(key: key, nonce: nonce, ciphertext: [], tag: empty.tag, additionalData: []) == [])

        // Empty plaintext with AAD: a pure authenticator over the AAD (TLS never does this, but §2.8 allows it).
        let aadOnly = try #require(ChaCha20Poly1305.seal(key: key, nonce: nonce, plaintext: [], additionalData: Self.a5AdditionalData))
        #expect(aadOnly.tag != empty.tag)
        #expect(ChaCha20Poly1305.open(key: key, nonce: nonce, ciphertext: [], tag: aadOnly.tag, additionalData: Self.a5AdditionalData) == [])
        #expect(ChaCha20Poly1305.open(key: key, nonce: nonce, ciphertext: [], tag: aadOnly.tag, additionalData: []) == nil)

        // Plaintext with empty AAD.
        let noAAD = try #require(ChaCha20Poly1305.seal(key: key, nonce: nonce, plaintext: Self.a5Plaintext, additionalData: []))
        #expect(ChaCha20Poly1305.open(key: key, nonce: nonce, ciphertext: noAAD.ciphertext, tag: noAAD.tag, additionalData: []) == Self.a5Plaintext)
        #expect(ChaCha20Poly1305.open(key: key, nonce: nonce, ciphertext: noAAD.ciphertext, tag: noAAD.tag, additionalData: [0]) == nil)
    }

    /// Every length 0...300 (every remainder mod 16 and mod 64, several blocks),
    /// with AAD lengths cycling through 0...20: open(seal(x)) == x, the
    /// ciphertext is the plaintext XOR the §2.4 keystream from counter 1, and the
    /// tag is Poly1305 over the §2.8 MAC data built out longhand.
    @Test func lengths0Through300RoundTrip() throws {
        let key = (0 ..< 32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let nonce = (0 ..< 12).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 1) }
        let oneTimeKey = try #require(ChaCha20Poly1305.poly1305KeyGeneration(key: key, nonce: nonce))
        let keyStream = try ChaCha20Tests.encrypt(key: key, nonce: nonce, initialCounter: 1, [UInt8](repeating: 0, count: 300))
        for length in 0 ... 300 {
            let plaintext = (0 ..< length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ length) }
            let additionalData = (0 ..< (length % 21)).map { UInt8(truncatingIfNeeded: $0 &+ 0x40) }
            let sealed = try #require(ChaCha20Poly1305.seal(key: key, nonce: nonce, plaintext: plaintext, additionalData: additionalData))
            #expect(sealed.ciphertext == zip(plaintext, keyStream).map { $0 ^ $1 }, "length \(length)")
            var macData = additionalData + [UInt8](repeating: 0, count: (16 - additionalData.count % 16) % 16)
            macData += sealed.ciphertext + [UInt8](repeating: 0, count: (16 - length % 16) % 16)
            for value in [UInt64(additionalData.count), UInt64(length)] {
                macData += (0 ..< 8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
            }
            #expect(sealed.tag == Poly1305.authenticate(message: macData, key: oneTimeKey), "length \(length)")
            #expect(ChaCha20Poly1305.open(key: key, nonce: nonce, ciphertext: sealed.ciphertext, tag: sealed.tag, additionalData: additionalData) == plaintext, "length \(length)")
        }
    }

    /// A TLS record in the middle of a larger buffer: only the range changes.
    @Test func inPlaceOnSubRangeLeavesTheRestUntouched() throws {
        let key = Self.a5Key, nonce = Self.a5Nonce
        for (start, length) in [(0, 0), (5, 0), (1, 1), (5, 64), (7, 100), (13, 265), (0, 300)] {
            let before = (0 ..< start).map { UInt8(truncatingIfNeeded: 0xA0 &+ $0) }
            let after = (0 ..< 23).map { UInt8(truncatingIfNeeded: 0x50 &+ $0) }
            let plaintext = (0 ..< length).map { UInt8(truncatingIfNeeded: $0 &* 3) }
            var buffer = before + plaintext + after
            let range = start ..< start + length

            let tag = try #require(ChaCha20Poly1305.sealInPlace(key: key, nonce: nonce, buffer: &buffer, range: range, additionalData: Self.a5AdditionalData))
            let copying = try #require(ChaCha20Poly1305.seal(key: key, nonce: nonce, plaintext: plaintext, additionalData: Self.a5AdditionalData))
            #expect(Array(buffer[range]) == copying.ciphertext)
            #expect(tag == copying.tag)
            #expect(Array(buffer[..<start]) == before)
            #expect(Array(buffer[range.upperBound...]) == after)

            // A failed open leaves everything as it was...
            var wrongTag = tag
            wrongTag[0] ^= 1
            let sealedBuffer = buffer
            #expect(!ChaCha20Poly1305.openInPlace(key: key, nonce: nonce, buffer: &buffer, range: range, tag: wrongTag[...], additionalData: Self.a5AdditionalData))
            #expect(buffer == sealedBuffer)
            // ...and a good one restores only the range.
            #expect(ChaCha20Poly1305.openInPlace(key: key, nonce: nonce, buffer: &buffer, range: range, tag: tag[...], additionalData: Self.a5AdditionalData))
            #expect(buffer == before + plaintext + after)
        }
    }
}
