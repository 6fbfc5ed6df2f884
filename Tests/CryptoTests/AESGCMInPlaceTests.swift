import TestSupport
import Testing
@testable import Crypto

/// The in-place and keyed forms: the published vectors through every form,
/// then agreement with the copying form and with the previous
/// implementation on every length, then the failure cases, each of which
/// must leave the caller's buffer as it was.
@Suite struct AESGCMInPlaceTests {
    typealias Vector = AESGCMTests.Vector

    /// Bytes around the text, so the tests see any write outside `range`.
    static let prefix: [UInt8] = [0xa5, 0x5a, 0xc3]
    static let suffix: [UInt8] = [0x3c, 0x96, 0x69, 0x0f, 0xf0]

    static func pattern(_ count: Int, _ seed: Int) -> [UInt8] {
        (0 ..< count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ seed &* 11 &+ ($0 >> 8)) }
    }

    @Test(arguments: AESGCMTests.vectors)
    func sealInPlaceMatchesTheSpecification(vector: Vector) throws {
        var buffer = Self.prefix + vector.plaintext + Self.suffix
        let range = Self.prefix.count ..< Self.prefix.count + vector.plaintext.count
        let tag = AESGCM.sealInPlace(key: vector.key, nonce: vector.nonce, buffer: &buffer, range: range, additionalData: vector.additionalData)
        #expect(tag == vector.tag)
        #expect(buffer == Self.prefix + vector.ciphertext + Self.suffix)

        let key = try #require(AESGCMKey(key: vector.key))
        var again = Self.prefix + vector.plaintext + Self.suffix
        #expect(key.sealInPlace(nonce: vector.nonce, buffer: &again, range: range, additionalData: vector.additionalData) == vector.tag)
        #expect(again == buffer)
    }

    @Test(arguments: AESGCMTests.vectors)
    func openInPlaceMatchesTheSpecification(vector: Vector) throws {
        let range = Self.prefix.count ..< Self.prefix.count + vector.ciphertext.count
        let tagged = vector.ciphertext + vector.tag
        var buffer = Self.prefix + vector.ciphertext + Self.suffix
        #expect(AESGCM.openInPlace(key: vector.key, nonce: vector.nonce, buffer: &buffer, range: range,
                                   tag: tagged[vector.ciphertext.count...], additionalData: vector.additionalData))
        #expect(buffer == Self.prefix + vector.plaintext + Self.suffix)

        let key = try #require(AESGCMKey(key: vector.key))
        var again = Self.prefix + vector.ciphertext + Self.suffix
        #expect(key.openInPlace(nonce: vector.nonce, buffer: &again, range: range, tag: vector.tag[...],
                                additionalData: vector.additionalData))
        #expect(again == buffer)
    }

    // RFC 9001 Appendix A.2 sealed where it lies: the payload inside the
    // packet buffer, after the header, with room for the tag behind it.
    @Test func sealsTheRFC9001ClientInitialInsideThePacket() {
        let frame = QUICFixtures.rfc9001ClientInitialCryptoFrame
        let header = hex("c300000001088394c8f03e5157080000449e00000002")
        var packet = header + frame + [UInt8](repeating: 0, count: 1162 - frame.count + 16)
        let tag = AESGCM.sealInPlace(key: hex("1f369613dd76d5467730efcbe3b1a22d"), nonce: hex("fa044b2f42a3fd3b46fb255e"),
                                     buffer: &packet, range: 22 ..< 1184, additionalData: header)
        let expected = QUICFixtures.rfc9001ClientInitial
        #expect(tag == Array(expected[1184 ..< 1200]))
        #expect(packet[22 ..< 1184] == expected[22 ..< 1184])
        #expect(packet[0 ..< 22] == header[...])
        #expect(packet[1184...].allSatisfy { $0 == 0 })
    }

    // RFC 9001 Appendix A.3 opened where it lies, the tag a slice of the packet.
    @Test func opensTheRFC9001ServerInitialInsideThePacket() throws {
        var packet = QUICFixtures.rfc9001ServerInitial
        let tag = packet[119 ..< 135]
        var header = Array(packet[0 ..< 20])
        header[0] = 0xc1
        header[18 ..< 20] = [0x00, 0x01]
        #expect(header == hex("c1000000010008f067a5502a4262b50040750001"))
        let key = try #require(AESGCMKey(key: hex("cf3a5331653c364c88f0f379b6067e37")))
        #expect(key.openInPlace(nonce: hex("0ac1493ca1905853b0bba03f"), buffer: &packet, range: 20 ..< 119, tag: tag, additionalData: header))
        #expect(Array(packet[20 ..< 119]) == QUICFixtures.rfc9001ServerInitialPayload)
        #expect(packet[119 ..< 135] == tag)
    }

    // RFC 8448 §3 (Simple 1-RTT Handshake), "{client} send application_data
    // record": TLS_AES_128_GCM_SHA256 under the client application traffic
    // key, sequence number 0 (so the nonce is the IV, RFC 8446 §5.3), the
    // 5-byte record header as additional data (§5.2). The inner plaintext is
    // the 50-byte payload 00...31 followed by the content type 0x17.
    static let rfc8448ClientRecord = hex("""
        17 03 03 00 43 a2 3f 70 54 b6 2c 94 d0 af fa fe 82 28 ba 55 cb ef
        ac ea 42 f9 14 aa 66 bc ab 3f 2b 98 19 a8 a5 b4 6b 39 5b d5 4a 9a
        20 44 1e 2b 62 97 4e 1f 5a 62 92 a2 97 70 14 bd 1e 3d ea e6 3a ee
        bb 21 69 49 15 e4
        """)
    static let rfc8448ClientKey = hex("17 42 2d da 59 6e d5 d9 ac d8 90 e3 c6 3f 50 51")
    static let rfc8448ClientIV = hex("5b 78 92 3d ee 08 57 90 33 e5 23 d9")
    static let rfc8448InnerPlaintext = Array(0x00 ... 0x31) + [0x17] as [UInt8]

    @Test func opensTheRFC8448ClientApplicationDataRecord() throws {
        var record = Self.rfc8448ClientRecord
        #expect(record.count == 72)
        let key = try #require(AESGCMKey(key: Self.rfc8448ClientKey))
        let header = Array(record[0 ..< 5])
        #expect(key.openInPlace(nonce: Self.rfc8448ClientIV, buffer: &record, range: 5 ..< 56, tag: record[56 ..< 72], additionalData: header))
        #expect(Array(record[5 ..< 56]) == Self.rfc8448InnerPlaintext)
    }

    @Test func sealsTheRFC8448ClientApplicationDataRecord() {
        var record = [0x17, 0x03, 0x03, 0x00, 0x43] + Self.rfc8448InnerPlaintext + [UInt8](repeating: 0, count: 16)
        let tag = AESGCM.sealInPlace(key: Self.rfc8448ClientKey, nonce: Self.rfc8448ClientIV, buffer: &record, range: 5 ..< 56,
                                     additionalData: Array(record[0 ..< 5]))
        #expect(Array(record[0 ..< 56]) == Array(Self.rfc8448ClientRecord[0 ..< 56]))
        #expect(tag == Array(Self.rfc8448ClientRecord[56 ..< 72]))
    }

    /// Seals `plaintext` through the reference and every new form, checks
    /// they agree, then opens through every form.
    static func checkAllFormsAgree(key keyBytes: [UInt8], nonce: [UInt8], plaintext: [UInt8], additionalData: [UInt8]) throws {
        let length = plaintext.count
        let reference = try #require(ReferenceAESGCM.seal(key: keyBytes, nonce: nonce, plaintext: plaintext, additionalData: additionalData))
        let copied = try #require(AESGCM.seal(key: keyBytes, nonce: nonce, plaintext: plaintext, additionalData: additionalData))
        #expect(copied.ciphertext == reference.ciphertext, "length \(length)")
        #expect(copied.tag == reference.tag, "length \(length)")

        let range = prefix.count ..< prefix.count + length
        var oneShot = prefix + plaintext + suffix
        let oneShotTag = AESGCM.sealInPlace(key: keyBytes, nonce: nonce, buffer: &oneShot, range: range, additionalData: additionalData)
        #expect(oneShotTag == reference.tag, "length \(length)")
        #expect(oneShot == prefix + reference.ciphertext + suffix, "length \(length)")

        let key = try #require(AESGCMKey(key: keyBytes))
        var keyed = prefix + plaintext + suffix
        #expect(key.sealInPlace(nonce: nonce, buffer: &keyed, range: range, additionalData: additionalData) == reference.tag)
        #expect(keyed == oneShot, "length \(length)")

        #expect(AESGCM.open(key: keyBytes, nonce: nonce, ciphertext: reference.ciphertext, tag: reference.tag, additionalData: additionalData) == plaintext)
        #expect(ReferenceAESGCM.open(key: keyBytes, nonce: nonce, ciphertext: copied.ciphertext, tag: copied.tag, additionalData: additionalData) == plaintext)
        #expect(AESGCM.openInPlace(key: keyBytes, nonce: nonce, buffer: &oneShot, range: range, tag: reference.tag[...], additionalData: additionalData))
        #expect(oneShot == prefix + plaintext + suffix, "length \(length)")
        #expect(key.openInPlace(nonce: nonce, buffer: &keyed, range: range, tag: reference.tag[...], additionalData: additionalData))
        #expect(keyed == oneShot, "length \(length)")
    }

    // Every length from empty through 300 bytes (every count of bytes in a
    // final partial block, many times over), with additional data of
    // varying length, including none and several blocks.
    @Test func everyLengthUpTo300AgreesWithThePreviousImplementation() throws {
        let key = Array(0x40 ... 0x4F) as [UInt8]
        for length in 0 ... 300 {
            let nonce = (0 ..< 12).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ length) }
            try Self.checkAllFormsAgree(key: key, nonce: nonce, plaintext: Self.pattern(length, length),
                                        additionalData: Self.pattern(length % 45, length + 1))
        }
    }

    // A full TLS record (2^14 bytes, RFC 8446 §5.1) and the largest
    // TLSCiphertext payload (2^14 + 256, §5.2), with a record header as AAD.
    @Test(arguments: [16384, 16384 + 256, 16384 + 255])
    func fullRecordsAgreeWithThePreviousImplementation(length: Int) throws {
        try Self.checkAllFormsAgree(key: Array(0x60 ... 0x6F), nonce: Array(0x10 ..< 0x1C),
                                    plaintext: Self.pattern(length, 5), additionalData: [0x17, 0x03, 0x03, 0x40, 0x11])
    }

    // One key, many nonces: the expanded key holds no per-message state.
    @Test func oneKeySealsManyRecords() throws {
        let keyBytes = Array(0x70 ... 0x7F) as [UInt8]
        let key = try #require(AESGCMKey(key: keyBytes))
        for sequence in 0 ..< 20 {
            var nonce = Array(0xa0 ..< 0xac) as [UInt8]
            nonce[11] ^= UInt8(sequence)
            let plaintext = Self.pattern(100 + sequence, sequence)
            var buffer = plaintext
            let tag = key.sealInPlace(nonce: nonce, buffer: &buffer, range: 0 ..< buffer.count, additionalData: [UInt8(sequence)])
            let reference = ReferenceAESGCM.seal(key: keyBytes, nonce: nonce, plaintext: plaintext, additionalData: [UInt8(sequence)])
            #expect(tag == reference?.tag)
            #expect(buffer == reference?.ciphertext)
        }
    }

    // Every single-bit change to the ciphertext, tag, additional data or
    // nonce fails, and the buffer stays exactly as it was (no plaintext is
    // released, RFC 5116 §2.2, SP 800-38D §7.2).
    @Test func anyFlippedBitFailsAndLeavesTheBufferUntouched() throws {
        let v = AESGCMTests.vectors[3]
        let key = try #require(AESGCMKey(key: v.key))
        let range = Self.prefix.count ..< Self.prefix.count + v.ciphertext.count
        func check(ciphertext: [UInt8], tag: [UInt8], additionalData: [UInt8], nonce: [UInt8], _ what: String) {
            let original = Self.prefix + ciphertext + Self.suffix
            var buffer = original
            #expect(!key.openInPlace(nonce: nonce, buffer: &buffer, range: range, tag: tag[...], additionalData: additionalData), "\(what)")
            #expect(buffer == original, "\(what)")
            #expect(!AESGCM.openInPlace(key: v.key, nonce: nonce, buffer: &buffer, range: range, tag: tag[...], additionalData: additionalData), "\(what)")
            #expect(buffer == original, "\(what)")
        }
        for bit in 0 ..< 8 * v.ciphertext.count {
            var c = v.ciphertext
            c[bit / 8] ^= 1 << (bit % 8)
            check(ciphertext: c, tag: v.tag, additionalData: v.additionalData, nonce: v.nonce, "ciphertext bit \(bit)")
        }
        for bit in 0 ..< 128 {
            var t = v.tag
            t[bit / 8] ^= 1 << (bit % 8)
            check(ciphertext: v.ciphertext, tag: t, additionalData: v.additionalData, nonce: v.nonce, "tag bit \(bit)")
        }
        for bit in 0 ..< 8 * v.additionalData.count {
            var a = v.additionalData
            a[bit / 8] ^= 1 << (bit % 8)
            check(ciphertext: v.ciphertext, tag: v.tag, additionalData: a, nonce: v.nonce, "additional data bit \(bit)")
        }
        for bit in 0 ..< 96 {
            var n = v.nonce
            n[bit / 8] ^= 1 << (bit % 8)
            check(ciphertext: v.ciphertext, tag: v.tag, additionalData: v.additionalData, nonce: n, "nonce bit \(bit)")
        }
        // An extra or a missing byte of additional data or ciphertext.
        check(ciphertext: v.ciphertext, tag: v.tag, additionalData: v.additionalData + [0], nonce: v.nonce, "additional data extended")
        check(ciphertext: v.ciphertext, tag: v.tag, additionalData: Array(v.additionalData.dropLast()), nonce: v.nonce, "additional data truncated")
        var shorter = Self.prefix + v.ciphertext + Self.suffix
        let before = shorter
        #expect(!key.openInPlace(nonce: v.nonce, buffer: &shorter, range: range.dropLast(), tag: v.tag[...], additionalData: v.additionalData))
        #expect(shorter == before)
    }

    // The tag is checked whatever the buffer around the range holds: only
    // bytes inside the range are authenticated, and only they are decrypted.
    @Test func bytesOutsideTheRangeAreNeitherReadNorWritten() throws {
        let key = try #require(AESGCMKey(key: Array(0x00 ..< 0x10)))
        let nonce = [UInt8](repeating: 9, count: 12)
        let plaintext = Self.pattern(50, 3)
        var buffer = [UInt8](repeating: 0xee, count: 10) + plaintext + [UInt8](repeating: 0xdd, count: 10)
        let tag = try #require(key.sealInPlace(nonce: nonce, buffer: &buffer, range: 10 ..< 60, additionalData: []))
        #expect(buffer[..<10].allSatisfy { $0 == 0xee } && buffer[60...].allSatisfy { $0 == 0xdd })
        for i in [0, 9, 60, 69] { buffer[i] ^= 0xff }
        #expect(key.openInPlace(nonce: nonce, buffer: &buffer, range: 10 ..< 60, tag: tag[...], additionalData: []))
        #expect(Array(buffer[10 ..< 60]) == plaintext)
        #expect(buffer[0] == 0x11 && buffer[9] == 0x11 && buffer[60] == 0x22 && buffer[69] == 0x22)
    }

    // An empty range in the middle of a buffer: only a tag, buffer unchanged.
    @Test func emptyRangeGivesTheEmptyTextTag() throws {
        let v = AESGCMTests.vectors[0]
        var buffer = Self.pattern(40, 1)
        let original = buffer
        #expect(AESGCM.sealInPlace(key: v.key, nonce: v.nonce, buffer: &buffer, range: 17 ..< 17, additionalData: []) == v.tag)
        #expect(buffer == original)
        #expect(AESGCM.openInPlace(key: v.key, nonce: v.nonce, buffer: &buffer, range: 40 ..< 40, tag: v.tag[...], additionalData: []))
        #expect(buffer == original)
    }

    @Test(arguments: [0, 1, 15, 17, 24, 32])
    func otherKeyLengthsAreRefused(length: Int) {
        let key = [UInt8](repeating: 7, count: length)
        let nonce = [UInt8](repeating: 3, count: 12)
        #expect(AESGCMKey(key: key) == nil)
        var buffer: [UInt8] = [1, 2, 3]
        #expect(AESGCM.sealInPlace(key: key, nonce: nonce, buffer: &buffer, range: 0 ..< 3, additionalData: []) == nil)
        #expect(!AESGCM.openInPlace(key: key, nonce: nonce, buffer: &buffer, range: 0 ..< 3, tag: [UInt8](repeating: 0, count: 16)[...], additionalData: []))
        #expect(buffer == [1, 2, 3])
    }

    // 8 and 60 are the IV lengths of McGrew-Viega test cases 5 and 6, which
    // need GHASH-derived counter blocks; only 96-bit nonces are accepted.
    @Test(arguments: [0, 8, 11, 13, 16, 60])
    func otherNonceLengthsAreRefused(length: Int) throws {
        let key = try #require(AESGCMKey(key: [UInt8](repeating: 7, count: 16)))
        let nonce = [UInt8](repeating: 3, count: length)
        var buffer: [UInt8] = [1, 2, 3]
        #expect(key.sealInPlace(nonce: nonce, buffer: &buffer, range: 0 ..< 3, additionalData: []) == nil)
        #expect(!key.openInPlace(nonce: nonce, buffer: &buffer, range: 0 ..< 3, tag: [UInt8](repeating: 0, count: 16)[...], additionalData: []))
        #expect(AESGCM.sealInPlace(key: [UInt8](repeating: 7, count: 16), nonce: nonce, buffer: &buffer, range: 0 ..< 3, additionalData: []) == nil)
        #expect(buffer == [1, 2, 3])
    }

    @Test(arguments: [0, 1, 12, 15, 17, 32])
    func otherTagLengthsAreRefused(length: Int) throws {
        let v = AESGCMTests.vectors[3]
        let key = try #require(AESGCMKey(key: v.key))
        // The right tag's first bytes, or the right tag with more after it.
        let tag = Array((v.tag + [0xff, 0xff]).prefix(length)) + [UInt8](repeating: 0, count: max(0, length - 18))
        var buffer = v.ciphertext
        #expect(!key.openInPlace(nonce: v.nonce, buffer: &buffer, range: 0 ..< buffer.count, tag: tag[...], additionalData: v.additionalData))
        #expect(!AESGCM.openInPlace(key: v.key, nonce: v.nonce, buffer: &buffer, range: 0 ..< buffer.count, tag: tag[...], additionalData: v.additionalData))
        #expect(buffer == v.ciphertext)
    }

    // A range reaching outside the buffer is refused, not trapped on.
    @Test(arguments: [-1 ..< 3, -5 ..< -1, 0 ..< 11, 10 ..< 11, 11 ..< 11, 11 ..< 20, Int.min ..< 0, 0 ..< Int.max])
    func rangesOutsideTheBufferAreRefused(range: Range<Int>) throws {
        let key = try #require(AESGCMKey(key: [UInt8](repeating: 7, count: 16)))
        let nonce = [UInt8](repeating: 3, count: 12)
        let original = Self.pattern(10, 2)
        var buffer = original
        #expect(key.sealInPlace(nonce: nonce, buffer: &buffer, range: range, additionalData: []) == nil)
        #expect(!key.openInPlace(nonce: nonce, buffer: &buffer, range: range, tag: [UInt8](repeating: 0, count: 16)[...], additionalData: []))
        #expect(AESGCM.sealInPlace(key: [UInt8](repeating: 7, count: 16), nonce: nonce, buffer: &buffer, range: range, additionalData: []) == nil)
        #expect(buffer == original)
    }

    // A tag given as a slice with nonzero start index (the record's last 16
    // bytes) is read from its own indices.
    @Test func tagSliceFromTheMiddleOfAnArray() throws {
        let v = AESGCMTests.vectors[2]
        let record = [UInt8](repeating: 0, count: 7) + v.ciphertext + v.tag + [1, 2]
        let tag = record[7 + v.ciphertext.count ..< 7 + v.ciphertext.count + 16]
        var buffer = v.ciphertext
        #expect(AESGCM.openInPlace(key: v.key, nonce: v.nonce, buffer: &buffer, range: 0 ..< buffer.count, tag: tag, additionalData: []))
        #expect(buffer == v.plaintext)
    }
}
