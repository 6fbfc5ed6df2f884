import Sys
import TestSupport
@testable import Crypto
import Testing

/// The eight-blocks-at-once path (AVX2, the CryptoAVX2 module) against the
/// four-block path and the one-block function, whose RFC 8439 vectors
/// ChaCha20Tests checks. Only where the CPU has AVX2: elsewhere its
/// instructions would trap, and `sluice` never takes the path.
@Suite(.enabled(if: CryptoAcceleration.usable(onCPUWithAVX2: CPUFeatures.current().avx2), "the CPU has no AVX2"))
struct ChaCha20EightLaneTests {
    static let key = hex("1c 92 40 a5 eb 55 d3 8a f3 33 88 86 04 f6 b5 f0 47 39 17 c1 40 2b 80 09 9d ca 5c bc 20 70 75 c0")
    static let nonce = hex("000000000000000000000002")

    static func keyStream(eightLanes: Bool, initialCounter: UInt32, length: Int, offset: Int = 0) throws -> [UInt8] {
        let cipher = try #require(ChaCha20(key: key, nonce: nonce))
        // A buffer that starts `offset` bytes into an allocation: the loads and stores are unaligned.
        var storage = [UInt8](repeating: 0, count: length + offset)
        storage.withUnsafeMutableBytes { all in
            cipher.xorKeyStream(UnsafeMutableRawBufferPointer(rebasing: all[offset...]), initialCounter: initialCounter, eightLanes: eightLanes)
        }
        return Array(storage[offset...])
    }

    /// Lengths around 512-byte runs (the path's unit), a 16 KiB record, and
    /// counters up to the last one (the lanes' counters wrap as the scalar one does).
    @Test(arguments: [(UInt32(0), 512), (1, 513), (7, 1023), (0, 1024), (3, 1041), (9, 4133), (0, 16401),
                      (0xffff_ffe0, 2048), (0xffff_ffc0, 4096), (0xffff_fff9, 448)])
    func eightLanesMatchTheOneBlockFunction(initialCounter: UInt32, length: Int) throws {
        var expected: [UInt8] = []
        var counter = initialCounter
        while expected.count < length {
            expected += try ChaCha20Tests.keyStreamBlock(key: Self.key, nonce: Self.nonce, counter: counter)
            counter &+= 1
        }
        let eight = try Self.keyStream(eightLanes: true, initialCounter: initialCounter, length: length)
        #expect(eight == Array(expected.prefix(length)))
        #expect(eight == (try Self.keyStream(eightLanes: false, initialCounter: initialCounter, length: length)))
    }

    @Test(arguments: [1, 3, 8])
    func unalignedBuffersGiveTheSameBytes(offset: Int) throws {
        let aligned = try Self.keyStream(eightLanes: false, initialCounter: 5, length: 3000)
        #expect(try Self.keyStream(eightLanes: true, initialCounter: 5, length: 3000, offset: offset) == aligned)
    }

    /// A message past 512 bytes (RFC 8439 §2.8.2's text repeated) encrypted
    /// on both paths alike, and decrypted by the eight-block path again.
    /// (The AEAD on both paths: `sluice-bench crypto --check`, in the release
    /// build; this process never sets `CryptoAcceleration.avx2`.)
    @Test func bothPathsEncryptAndDecryptAlike() throws {
        let key = hex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
        let nonce = hex("070000004041424344454647")
        let message = Array(String(repeating: "Ladies and Gentlemen of the class of '99. ", count: 60).utf8)
        let cipher = try #require(ChaCha20(key: key, nonce: nonce))
        var four = message, eight = message
        four.withUnsafeMutableBytes { cipher.xorKeyStream($0, initialCounter: 1, eightLanes: false) }
        eight.withUnsafeMutableBytes { cipher.xorKeyStream($0, initialCounter: 1, eightLanes: true) }
        #expect(four == eight)
        #expect(four != message)
        eight.withUnsafeMutableBytes { cipher.xorKeyStream($0, initialCounter: 1, eightLanes: true) }
        #expect(eight == message)
    }
}
