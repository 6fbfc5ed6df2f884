import TestSupport
@testable import Crypto
import Testing

/// Poly1305 against a schoolbook big-number evaluation of §2.5.1 (the "naive
/// 288-bit" approach of RFC 8439 §3, here with 32-bit limbs and no tricks), on
/// extreme and pseudo-random inputs, plus tags from `openssl mac POLY1305` for
/// all-ones keys and messages. These stress the bounds the 64-bit-limb
/// arithmetic relies on (largest r, largest accumulator, long messages).
@Suite struct Poly1305ReferenceTests {
    /// A nonnegative integer as little-endian 32-bit limbs.
    typealias Number = [UInt64]

    static func number(_ bytes: ArraySlice<UInt8>) -> Number {
        var limbs = Number(repeating: 0, count: (bytes.count + 3) / 4)
        for (i, byte) in bytes.enumerated() { limbs[i / 4] |= UInt64(byte) << UInt64(8 * (i % 4)) }
        return limbs
    }

    static func add(_ a: Number, _ b: Number) -> Number {
        var result = Number(repeating: 0, count: max(a.count, b.count) + 1)
        var carry: UInt64 = 0
        for i in 0 ..< result.count {
            let sum = (i < a.count ? a[i] : 0) + (i < b.count ? b[i] : 0) + carry
            result[i] = sum & 0xffff_ffff
            carry = sum >> 32
        }
        return result
    }

    static func multiply(_ a: Number, _ b: Number) -> Number {
        var result = Number(repeating: 0, count: a.count + b.count + 1)
        for i in 0 ..< a.count {
            var carry: UInt64 = 0
            for j in 0 ..< b.count {
                let t = result[i + j] + a[i] * b[j] + carry
                result[i + j] = t & 0xffff_ffff
                carry = t >> 32
            }
            var k = i + b.count
            while carry != 0 {
                let t = result[k] + carry
                result[k] = t & 0xffff_ffff
                carry = t >> 32
                k += 1
            }
        }
        return result
    }

    static func compare(_ a: Number, _ b: Number) -> Int {
        for i in stride(from: max(a.count, b.count) - 1, through: 0, by: -1) {
            let x = i < a.count ? a[i] : 0, y = i < b.count ? b[i] : 0
            if x != y { return x < y ? -1 : 1 }
        }
        return 0
    }

    static func subtract(_ a: Number, _ b: Number) -> Number {
        var result = a
        var borrow: Int64 = 0
        for i in 0 ..< a.count {
            var t = Int64(a[i]) - Int64(i < b.count ? b[i] : 0) - borrow
            borrow = t < 0 ? 1 : 0
            if t < 0 { t += 1 << 32 }
            result[i] = UInt64(t)
        }
        return result
    }

    /// 2^130 - 5
    static let p: Number = [0xffff_fffb, 0xffff_ffff, 0xffff_ffff, 0xffff_ffff, 3]

    /// x mod p, by long division's simplest form: fold 2^130 ≡ 5, then subtract.
    static func reduce(_ x: Number) -> Number {
        var x = x
        while x.count > 5 || (x.count == 5 && x[4] > 3) {
            var low = Array(x.prefix(5)) + Number(repeating: 0, count: max(0, 5 - x.count))
            low[4] &= 3
            // x >> 130
            var high = Number(repeating: 0, count: max(1, x.count - 4))
            for i in 0 ..< high.count {
                let a = 4 + i < x.count ? x[4 + i] : 0
                let b = 5 + i < x.count ? x[5 + i] : 0
                high[i] = ((a >> 2) | (b << 30)) & 0xffff_ffff
            }
            x = add(low, multiply(high, [5]))
            while x.count > 1 && x.last == 0 { x.removeLast() }
        }
        while compare(x, p) >= 0 { x = subtract(x, p) }
        return x
    }

    static func referenceTag(message: [UInt8], key: [UInt8]) -> [UInt8] {
        var rBytes = Array(key[0 ..< 16])
        for i in [3, 7, 11, 15] { rBytes[i] &= 15 }
        for i in [4, 8, 12] { rBytes[i] &= 252 }
        let r = number(rBytes[...])
        let s = number(key[16 ..< 32])
        var accumulator: Number = [0]
        for start in stride(from: 0, to: message.count, by: 16) {
            let block = Array(message[start ..< min(start + 16, message.count)]) + [1]
            accumulator = reduce(multiply(add(accumulator, number(block[...])), r))
        }
        let sum = add(accumulator, s)
        return (0 ..< 16).map { UInt8(truncatingIfNeeded: (($0 / 4) < sum.count ? sum[$0 / 4] : 0) >> UInt64(8 * ($0 % 4))) }
    }

    /// A small deterministic generator (xorshift64*) so the cases are reproducible.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12; state ^= state << 25; state ^= state >> 27
            return state &* 0x2545_f491_4f6c_dd1d
        }
        mutating func bytes(_ count: Int) -> [UInt8] { (0 ..< count).map { _ in UInt8(truncatingIfNeeded: next() >> 56) } }
    }

    @Test func referenceAgreesWithSection2_5_2() {
        let key = hex("85:d6:be:78:57:55:6d:33:7f:44:52:fe:42:d5:06:a8:01:03:80:8a:fb:0d:b2:fd:4a:bf:f6:af:41:49:f5:1b")
        #expect(Self.referenceTag(message: Array("Cryptographic Forum Research Group".utf8), key: key) == hex("a8:06:1d:c1:30:51:36:c6:c2:2b:8b:af:0c:01:27:a9"))
    }

    @Test func extremeInputs() throws {
        let ones = [UInt8](repeating: 0xff, count: 32)
        let onesThenZeros = [UInt8](repeating: 0xff, count: 16) + [UInt8](repeating: 0, count: 16)
        for key in [ones, onesThenZeros, [UInt8](repeating: 0, count: 16) + [UInt8](repeating: 0xff, count: 16)] {
            for length in [0, 1, 15, 16, 17, 63, 64, 65, 255, 256, 999, 1000] {
                for filler: UInt8 in [0xff, 0xfe, 0x00] {
                    let message = [UInt8](repeating: filler, count: length)
                    let tag = try #require(Poly1305.authenticate(message: message, key: key))
                    #expect(tag == Self.referenceTag(message: message, key: key), "length \(length) filler \(filler)")
                }
            }
        }
    }

    @Test func pseudoRandomInputs() throws {
        var generator = Generator(state: 0x9e37_79b9_7f4a_7c15)
        for round in 0 ..< 300 {
            let key = generator.bytes(32)
            let message = generator.bytes(Int(generator.next() % 200))
            let tag = try #require(Poly1305.authenticate(message: message, key: key))
            #expect(tag == Self.referenceTag(message: message, key: key), "round \(round)")
        }
    }

    /// Tags from `openssl mac -macopt hexkey:… POLY1305` (OpenSSL 3.0), computed once while writing these tests.
    @Test func opensslAllOnes() throws {
        let ones = [UInt8](repeating: 0xff, count: 32)
        let onesThenZeros = [UInt8](repeating: 0xff, count: 16) + [UInt8](repeating: 0, count: 16)
        #expect(Poly1305.authenticate(message: [UInt8](repeating: 0xff, count: 1000), key: ones) == hex("DE9406B10E7023BCD692FF687F4CBC7F"))
        #expect(Poly1305.authenticate(message: [UInt8](repeating: 0xff, count: 999), key: ones) == hex("E8942E7F18704B92D8921F41874CDC57"))
        #expect(Poly1305.authenticate(message: [UInt8](repeating: 0xff, count: 1000), key: onesThenZeros) == hex("DF9406B10E7023BCD692FF687F4CBC7F"))
    }
}
