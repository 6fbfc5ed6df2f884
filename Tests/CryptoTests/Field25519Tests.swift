import Testing
@testable import Crypto

/// Field arithmetic modulo p = 2^255 - 19 checked against facts that hold
/// for any correct implementation (no vectors exist for the internals).
@Suite struct Field25519Tests {
    private static func element(_ hex: String) -> Field25519? {
        Field25519(littleEndianBytes: bytes(hex: hex))
    }

    private static func small(_ value: UInt8) -> [UInt8] {
        [value] + [UInt8](repeating: 0, count: 31)
    }

    /// Values spread over the field, including the edges (0, 1, p - 1) and
    /// limbs at their maximum.
    static let samples: [String] = [
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "0900000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // p - 1
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff3f",
        "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
        "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
    ]

    @Test("decoding wrong lengths returns nil")
    func decodeLength() {
        #expect(Field25519(littleEndianBytes: []) == nil)
        #expect(Field25519(littleEndianBytes: [UInt8](repeating: 0, count: 31)) == nil)
        #expect(Field25519(littleEndianBytes: [UInt8](repeating: 0, count: 33)) == nil)
    }

    @Test("canonical encoding round-trips values below p")
    func roundTrip() throws {
        for hex in Self.samples {
            let value = try #require(Self.element(hex))
            #expect(value.canonicalBytes == bytes(hex: hex))
        }
    }

    @Test("values >= p and the top bit reduce as §5 requires")
    func nonCanonicalDecoding() throws {
        // p -> 0, p + 1 -> 1, 2^255 - 1 = p + 18 -> 18, and the top bit is dropped.
        #expect(try #require(Self.element("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")).canonicalBytes == Self.small(0))
        #expect(try #require(Self.element("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")).canonicalBytes == Self.small(1))
        #expect(try #require(Self.element("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")).canonicalBytes == Self.small(18))
        #expect(try #require(Self.element("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff")).canonicalBytes == Self.small(18))
        #expect(try #require(Self.element("0900000000000000000000000000000000000000000000000000000000000080")).canonicalBytes == Self.small(9))
    }

    @Test("addition and subtraction wrap modulo p")
    func addSubtract() throws {
        let pMinusOne = try #require(Self.element("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"))
        #expect((pMinusOne + .one).canonicalBytes == Self.small(0))
        #expect((Field25519.zero - .one).canonicalBytes == pMinusOne.canonicalBytes)
        #expect((pMinusOne + pMinusOne).canonicalBytes == (Field25519.zero - Field25519(smallValue: 2)).canonicalBytes)
        for hexA in Self.samples {
            for hexB in Self.samples {
                let a = try #require(Self.element(hexA)), b = try #require(Self.element(hexB))
                #expect(((a + b) - b).canonicalBytes == a.canonicalBytes)
                #expect(((a - b) + b).canonicalBytes == a.canonicalBytes)
                #expect((a + b).canonicalBytes == (b + a).canonicalBytes)
            }
        }
    }

    @Test("(p - 1)^2 = 1 and small products")
    func multiplyKnown() throws {
        let minusOne = try #require(Self.element("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"))
        #expect((minusOne * minusOne).canonicalBytes == Self.small(1))
        #expect(minusOne.squared().canonicalBytes == Self.small(1))
        #expect((Field25519(smallValue: 6) * Field25519(smallValue: 7)).canonicalBytes == Self.small(42))
        // 2^128 · 2^128 = 2^256 = 2 · 2^255 ≡ 2 · 19 = 38.
        let twoTo128 = try #require(Self.element("0000000000000000000000000000000001000000000000000000000000000000"))
        #expect((twoTo128 * twoTo128).canonicalBytes == Self.small(38))
    }

    @Test("ring laws: squaring, commutativity, distributivity, small-constant product")
    func ringLaws() throws {
        for hexA in Self.samples {
            let a = try #require(Self.element(hexA))
            #expect(a.squared().canonicalBytes == (a * a).canonicalBytes)
            #expect(a.multiplied(bySmallValue: 121665).canonicalBytes == (a * Field25519(smallValue: 121665)).canonicalBytes)
            #expect(a.squared(times: 3).canonicalBytes == (a * a * a * a * a * a * a * a).canonicalBytes)
            for hexB in Self.samples {
                let b = try #require(Self.element(hexB))
                #expect((a * b).canonicalBytes == (b * a).canonicalBytes)
                for hexC in Self.samples.prefix(4) + Self.samples.suffix(2) {
                    let c = try #require(Self.element(hexC))
                    #expect((a * (b + c)).canonicalBytes == (a * b + a * c).canonicalBytes)
                    #expect(((a * b) * c).canonicalBytes == (a * (b * c)).canonicalBytes)
                }
            }
        }
    }

    @Test("inversion: z · z^-1 = 1 for z ≠ 0, and 0^-1 = 0")
    func inversion() throws {
        for hex in Self.samples.dropFirst() {
            let z = try #require(Self.element(hex))
            #expect((z * z.inverted()).canonicalBytes == Self.small(1))
        }
        #expect(Field25519.zero.inverted().canonicalBytes == Self.small(0))
        #expect(Field25519(smallValue: 2).inverted().canonicalBytes
            == bytes(hex: "f7ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff3f")) // (p + 1) / 2
    }

    @Test("conditional swap swaps on 1 and keeps on 0")
    func conditionalSwap() throws {
        let first = try #require(Self.element(Self.samples[5])), second = try #require(Self.element(Self.samples[6]))
        var a = first, b = second
        Field25519.conditionalSwap(&a, &b, bit: 0)
        #expect(a.canonicalBytes == first.canonicalBytes && b.canonicalBytes == second.canonicalBytes)
        Field25519.conditionalSwap(&a, &b, bit: 1)
        #expect(a.canonicalBytes == second.canonicalBytes && b.canonicalBytes == first.canonicalBytes)
    }
}
