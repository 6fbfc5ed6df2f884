import TestSupport
@testable import Crypto
import Testing

/// The Poly1305 vectors of RFC 8439: §2.5.2 and Appendix A.3 (including the
/// reduction edge cases #5-#11).
@Suite struct Poly1305Tests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String, key: String, message: [UInt8], tag: String
        var testDescription: String { name }
    }

    static let zeros32 = String(repeating: "00", count: 32)
    static let zeros16 = String(repeating: "00", count: 16)

    static let vectors: [Vector] = [
        Vector(name: "§2.5.2",
               key: "85:d6:be:78:57:55:6d:33:7f:44:52:fe:42:d5:06:a8:01:03:80:8a:fb:0d:b2:fd:4a:bf:f6:af:41:49:f5:1b",
               message: Array("Cryptographic Forum Research Group".utf8),
               tag: "a8:06:1d:c1:30:51:36:c6:c2:2b:8b:af:0c:01:27:a9"),
        Vector(name: "A.3 #1", key: zeros32, message: [UInt8](repeating: 0, count: 64), tag: zeros16),
        Vector(name: "A.3 #2", key: zeros16 + "36 e5 f6 b5 c5 e0 60 70 f0 ef ca 96 22 7a 86 3e",
               message: ChaCha20Tests.ietfContribution, tag: "36 e5 f6 b5 c5 e0 60 70 f0 ef ca 96 22 7a 86 3e"),
        Vector(name: "A.3 #3", key: "36 e5 f6 b5 c5 e0 60 70 f0 ef ca 96 22 7a 86 3e" + zeros16,
               message: ChaCha20Tests.ietfContribution, tag: "f3 47 7e 7c d9 54 17 af 89 a6 b8 79 4c 31 0c f0"),
        Vector(name: "A.3 #4", key: "1c 92 40 a5 eb 55 d3 8a f3 33 88 86 04 f6 b5 f0 47 39 17 c1 40 2b 80 09 9d ca 5c bc 20 70 75 c0",
               message: ChaCha20Tests.jabberwocky, tag: "45 41 66 9a 7e aa ee 61 e7 08 dc 7c bc c5 eb 62"),
        Vector(name: "A.3 #5 partially reduced result not fully reduced",
               key: "02" + String(repeating: "00", count: 15) + zeros16,
               message: hex(String(repeating: "FF", count: 16)),
               tag: "03" + String(repeating: "00", count: 15)),
        Vector(name: "A.3 #6 addition of s overflows 2^128",
               key: "02" + String(repeating: "00", count: 15) + String(repeating: "FF", count: 16),
               message: hex("02" + String(repeating: "00", count: 15)),
               tag: "03" + String(repeating: "00", count: 15)),
        Vector(name: "A.3 #7 all-ones limb with carry from the lower limb",
               key: "01" + String(repeating: "00", count: 15) + zeros16,
               message: hex(String(repeating: "FF", count: 16) + "F0" + String(repeating: "FF", count: 15) + "11" + String(repeating: "00", count: 15)),
               tag: "05" + String(repeating: "00", count: 15)),
        Vector(name: "A.3 #8 result exactly 2^130-5",
               key: "01" + String(repeating: "00", count: 15) + zeros16,
               message: hex(String(repeating: "FF", count: 16) + "FB" + String(repeating: "FE", count: 15) + String(repeating: "01", count: 16)),
               tag: zeros16),
        Vector(name: "A.3 #9 result exactly 2^130-6",
               key: "02" + String(repeating: "00", count: 15) + zeros16,
               message: hex("FD" + String(repeating: "FF", count: 15)),
               tag: "FA" + String(repeating: "FF", count: 15)),
        Vector(name: "A.3 #10 5*H+L reduction gives a 131-bit intermediate",
               key: "01 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00" + zeros16,
               message: hex("""
                   E3 35 94 D7 50 5E 43 B9 00 00 00 00 00 00 00 00
                   33 94 D7 50 5E 43 79 CD 01 00 00 00 00 00 00 00
                   00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                   01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                   """),
               tag: "14 00 00 00 00 00 00 00 55 00 00 00 00 00 00 00"),
        Vector(name: "A.3 #11 5*H+L reduction gives a 131-bit final result",
               key: "01 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00" + zeros16,
               message: hex("""
                   E3 35 94 D7 50 5E 43 B9 00 00 00 00 00 00 00 00
                   33 94 D7 50 5E 43 79 CD 01 00 00 00 00 00 00 00
                   00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                   """),
               tag: "13 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"),
    ]

    @Test(arguments: vectors) func tag(_ vector: Vector) throws {
        let tag = try #require(Poly1305.authenticate(message: vector.message, key: hex(vector.key)))
        #expect(tag == hex(vector.tag))
    }

    @Test func wrongKeySizeIsRejected() {
        #expect(Poly1305.authenticate(message: [1, 2, 3], key: [UInt8](repeating: 1, count: 31)) == nil)
        #expect(Poly1305.authenticate(message: [1, 2, 3], key: [UInt8](repeating: 1, count: 33)) == nil)
        #expect(Poly1305.authenticate(message: [], key: []) == nil)
    }

    @Test func emptyMessageTagIsS() throws {
        // No block at all: the accumulator stays 0 and the tag is s (§2.5).
        let key = hex("85:d6:be:78:57:55:6d:33:7f:44:52:fe:42:d5:06:a8:01:03:80:8a:fb:0d:b2:fd:4a:bf:f6:af:41:49:f5:1b")
        #expect(try #require(Poly1305.authenticate(message: [], key: key)) == Array(key[16...]))
    }

    /// A zero-padded absorb (§2.8's pad16) equals the plain absorb of the message
    /// with its zeros written out.
    @Test(arguments: [0, 1, 15, 16, 17, 31, 32, 33, 100])
    func zeroPaddedAbsorbMatchesExplicitPadding(length: Int) throws {
        let key = (0 ..< 32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let message = (0 ..< length).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        var padded = try #require(Poly1305(key: key))
        message.withUnsafeBytes { padded.absorbZeroPadded($0) }
        let explicit = message + [UInt8](repeating: 0, count: (16 - length % 16) % 16)
        #expect(padded.tag() == Poly1305.authenticate(message: explicit, key: key))
    }
}
