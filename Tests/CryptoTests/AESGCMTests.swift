import TestSupport
import Testing
@testable import Crypto

// The project's AES-GCM tests, copied unchanged (apart from the hex helper)
// so the rewrite is proven to keep the copying API's behaviour.
@Suite struct AESGCMTests {
    /// One of the AES-128 cases of McGrew and Viega, "The Galois/Counter Mode
    /// of Operation (GCM)", Appendix B (96-bit IVs).
    struct Vector: Sendable, CustomStringConvertible {
        let name: String
        let key: [UInt8]
        let nonce: [UInt8]
        let plaintext: [UInt8]
        let additionalData: [UInt8]
        let ciphertext: [UInt8]
        let tag: [UInt8]
        var description: String { name }
    }

    static let case3Plaintext = hex("""
        d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72
        1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255
        """)
    static let case3Ciphertext = hex("""
        42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e
        21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985
        """)

    static let vectors: [Vector] = [
        Vector(name: "test case 1", key: [UInt8](repeating: 0, count: 16), nonce: [UInt8](repeating: 0, count: 12),
               plaintext: [], additionalData: [], ciphertext: [],
               tag: hex("58e2fccefa7e3061367f1d57a4e7455a")),
        Vector(name: "test case 2", key: [UInt8](repeating: 0, count: 16), nonce: [UInt8](repeating: 0, count: 12),
               plaintext: [UInt8](repeating: 0, count: 16), additionalData: [],
               ciphertext: hex("0388dace60b6a392f328c2b971b2fe78"),
               tag: hex("ab6e47d42cec13bdf53a67b21257bddf")),
        Vector(name: "test case 3", key: hex("feffe9928665731c6d6a8f9467308308"), nonce: hex("cafebabefacedbaddecaf888"),
               plaintext: case3Plaintext, additionalData: [], ciphertext: case3Ciphertext,
               tag: hex("4d5c2af327cd64a62cf35abd2ba6fab4")),
        // Test case 4 drops the last 4 bytes of case 3's plaintext (a partial
        // final block) and adds 20 bytes of additional data.
        Vector(name: "test case 4", key: hex("feffe9928665731c6d6a8f9467308308"), nonce: hex("cafebabefacedbaddecaf888"),
               plaintext: Array(case3Plaintext.prefix(60)),
               additionalData: hex("feedfacedeadbeeffeedfacedeadbeefabaddad2"),
               ciphertext: Array(case3Ciphertext.prefix(60)),
               tag: hex("5bc94fbc3221a5db94fae95ae7121a47")),
    ]

    @Test(arguments: AESGCMTests.vectors)
    func sealMatchesTheSpecification(vector: Vector) throws {
        let sealed = try #require(AESGCM.seal(key: vector.key, nonce: vector.nonce, plaintext: vector.plaintext,
                                              additionalData: vector.additionalData))
        #expect(sealed.ciphertext == vector.ciphertext)
        #expect(sealed.tag == vector.tag)
    }

    @Test(arguments: AESGCMTests.vectors)
    func openMatchesTheSpecification(vector: Vector) {
        let opened = AESGCM.open(key: vector.key, nonce: vector.nonce, ciphertext: vector.ciphertext, tag: vector.tag,
                                 additionalData: vector.additionalData)
        #expect(opened == vector.plaintext)
    }

    // RFC 9001 Appendix A.2: the client Initial's payload (the CRYPTO frame
    // padded to 1162 bytes) under the client Initial key, with the unprotected
    // header as additional data and nonce = iv XOR packet number 2 (§5.3).
    @Test func sealsTheRFC9001ClientInitialPayload() throws {
        let frame = QUICFixtures.rfc9001ClientInitialCryptoFrame
        let payload = frame + [UInt8](repeating: 0, count: 1162 - frame.count)
        let sealed = try #require(AESGCM.seal(key: hex("1f369613dd76d5467730efcbe3b1a22d"),
                                              nonce: hex("fa044b2f42a3fd3b46fb255e"),
                                              plaintext: payload,
                                              additionalData: hex("c300000001088394c8f03e5157080000449e00000002")))
        let packet = QUICFixtures.rfc9001ClientInitial
        #expect(sealed.ciphertext == Array(packet[22 ..< 1184]))
        #expect(sealed.tag == Array(packet[1184 ..< 1200]))
    }

    // RFC 9001 Appendix A.3: the server Initial, packet number 1, a 99-byte
    // payload that ends mid-block.
    @Test func opensTheRFC9001ServerInitialPayload() {
        let packet = QUICFixtures.rfc9001ServerInitial
        let opened = AESGCM.open(key: hex("cf3a5331653c364c88f0f379b6067e37"),
                                 nonce: hex("0ac1493ca1905853b0bba03f"),
                                 ciphertext: Array(packet[20 ..< 119]),
                                 tag: Array(packet[119 ..< 135]),
                                 additionalData: hex("c1000000010008f067a5502a4262b50040750001"))
        #expect(opened == QUICFixtures.rfc9001ServerInitialPayload)
    }

    // Every single-bit change to what the tag covers must be caught; a tag
    // that skipped the additional data or the last partial block would pass
    // the published vectors but not this.
    @Test func anyFlippedBitFailsToOpen() {
        let v = Self.vectors[3]
        func opens(ciphertext: [UInt8], tag: [UInt8], additionalData: [UInt8]) -> Bool {
            AESGCM.open(key: v.key, nonce: v.nonce, ciphertext: ciphertext, tag: tag, additionalData: additionalData) != nil
        }
        #expect(opens(ciphertext: v.ciphertext, tag: v.tag, additionalData: v.additionalData))
        for i in v.ciphertext.indices {
            var c = v.ciphertext
            c[i] ^= 1 << (i % 8)
            #expect(!opens(ciphertext: c, tag: v.tag, additionalData: v.additionalData), "ciphertext byte \(i)")
        }
        for i in v.tag.indices {
            var t = v.tag
            t[i] ^= 1 << (i % 8)
            #expect(!opens(ciphertext: v.ciphertext, tag: t, additionalData: v.additionalData), "tag byte \(i)")
        }
        for i in v.additionalData.indices {
            var a = v.additionalData
            a[i] ^= 1 << (i % 8)
            #expect(!opens(ciphertext: v.ciphertext, tag: v.tag, additionalData: a), "additional data byte \(i)")
        }
        var nonce = v.nonce
        nonce[11] ^= 1
        #expect(AESGCM.open(key: v.key, nonce: nonce, ciphertext: v.ciphertext, tag: v.tag,
                            additionalData: v.additionalData) == nil)
    }

    // Moving bytes between the additional data and the ciphertext keeps the
    // concatenation the same; GHASH's length block is what tells them apart.
    @Test func additionalDataAndCiphertextAreNotInterchangeable() throws {
        let key = hex("feffe9928665731c6d6a8f9467308308")
        let nonce = hex("cafebabefacedbaddecaf888")
        let sealed = try #require(AESGCM.seal(key: key, nonce: nonce, plaintext: [1, 2, 3, 4], additionalData: [9, 9]))
        let opened = AESGCM.open(key: key, nonce: nonce, ciphertext: Array(sealed.ciphertext.dropFirst()), tag: sealed.tag,
                                 additionalData: [9, 9, sealed.ciphertext[0]])
        #expect(opened == nil)
    }

    @Test func truncatedOrExtendedTagIsRefused() {
        let v = Self.vectors[3]
        for tag in [Array(v.tag.prefix(15)), Array(v.tag.prefix(12)), [], v.tag + [0]] {
            #expect(AESGCM.open(key: v.key, nonce: v.nonce, ciphertext: v.ciphertext, tag: tag,
                                additionalData: v.additionalData) == nil, "\(tag.count)-byte tag")
        }
    }

    // QUIC and TLS 1.3 use only 96-bit nonces; any other length would need
    // GHASH to derive the first counter block (SP 800-38D §7.1), so it is
    // refused rather than used as if it were 12 bytes.
    @Test(arguments: [0, 8, 11, 13, 16])
    func otherNonceLengthsAreRefused(length: Int) {
        let key = [UInt8](repeating: 7, count: 16)
        let nonce = [UInt8](repeating: 3, count: length)
        let sealedNothing = AESGCM.seal(key: key, nonce: nonce, plaintext: [1, 2, 3], additionalData: []) == nil
        #expect(sealedNothing)
        #expect(AESGCM.open(key: key, nonce: nonce, ciphertext: [1, 2, 3], tag: [UInt8](repeating: 0, count: 16),
                            additionalData: []) == nil)
    }

    @Test(arguments: [0, 15, 17, 32])
    func otherKeyLengthsAreRefused(length: Int) {
        let key = [UInt8](repeating: 7, count: length)
        let nonce = [UInt8](repeating: 3, count: 12)
        let sealedNothing = AESGCM.seal(key: key, nonce: nonce, plaintext: [1, 2, 3], additionalData: []) == nil
        #expect(sealedNothing)
        #expect(AESGCM.open(key: key, nonce: nonce, ciphertext: [1, 2, 3], tag: [UInt8](repeating: 0, count: 16),
                            additionalData: []) == nil)
    }

    // Every length from empty through several blocks, so each count of bytes
    // in the last partial block is covered, with additional data of varying
    // length alongside.
    @Test func sealThenOpenRoundTrips() throws {
        let key = Array(0x40 ... 0x4F) as [UInt8]
        for length in 0 ... 70 {
            let plaintext = (0 ..< length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let additionalData = (0 ..< length % 21).map { UInt8(truncatingIfNeeded: $0 &+ 200) }
            let nonce = (0 ..< 12).map { UInt8(truncatingIfNeeded: $0 &+ length) }
            let sealed = try #require(AESGCM.seal(key: key, nonce: nonce, plaintext: plaintext, additionalData: additionalData))
            #expect(sealed.ciphertext.count == length)
            #expect(sealed.tag.count == 16)
            if length > 0 { #expect(sealed.ciphertext != plaintext, "length \(length)") }
            let opened = AESGCM.open(key: key, nonce: nonce, ciphertext: sealed.ciphertext, tag: sealed.tag,
                                     additionalData: additionalData)
            #expect(opened == plaintext, "length \(length)")
        }
    }
}
