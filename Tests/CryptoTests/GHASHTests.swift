import TestSupport
import Testing
@testable import Crypto

@Suite struct GHASHTests {
    @Test func classMaskHoldsEveryFifthBit() {
        var mask: UInt64 = 0
        for bit in stride(from: 0, to: 64, by: 5) { mask |= 1 << UInt64(bit) }
        #expect(GHASH.classMask == mask)
    }

    static func bytes(_ x: (UInt64, UInt64)) -> [UInt8] {
        (0 ..< 16).map { i in UInt8(truncatingIfNeeded: (i < 8 ? x.0 : x.1) >> UInt64(56 - 8 * (i % 8))) }
    }

    static func agree(_ h: (UInt64, UInt64), _ x: (UInt64, UInt64)) -> Bool {
        let fast = GHASH(hashSubkey: h).multiply(x)
        let slow = ReferenceGHash(bytes(h)).multiply(x)
        return fast.high == slow.0 && fast.low == slow.1
    }

    // All-ones words fill every column of the integer products to its
    // maximum (13 terms), the case where a carry would first escape its hole.
    @Test func extremeOperandsAgreeWithTheTableMethod() {
        let words: [UInt64] = [0, 1, 1 << 63, .max, 0x8000_0000_0000_0001, 0x1084_2108_4210_8421, 0xefbd_ef7b_debd_ef7b]
        for a in words {
            for b in words {
                for c in words {
                    #expect(Self.agree((a, b), (c, a)), "\(a) \(b) \(c)")
                    #expect(Self.agree((.max, .max), (b, c)))
                }
            }
        }
    }

    // SP 800-38D's bit order: x^0 is the top bit of the first byte, so
    // "1" is 0x80 00..00, and 1 · H = H.
    @Test func oneIsTheMultiplicativeIdentity() {
        let h: (UInt64, UInt64) = (0x66e9_4bd4_ef8a_2c3b, 0x884c_fa59_ca34_2b2e)
        let product = GHASH(hashSubkey: h).multiply((1 << 63, 0))
        #expect(product.high == h.0 && product.low == h.1)
    }

    @Test func pseudorandomOperandsAgreeWithTheTableMethod() {
        var state: UInt64 = 0x0123_4567_89ab_cdef
        func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        for _ in 0 ..< 2000 {
            let h = (next(), next()), x = (next(), next())
            #expect(Self.agree(h, x))
        }
    }
}
