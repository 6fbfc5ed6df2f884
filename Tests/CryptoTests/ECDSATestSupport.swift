import TestSupport

/// A copy of `bytes` with one bit flipped.
func flippingBit(_ bit: Int, of bytes: [UInt8]) -> [UInt8] {
    var copy = bytes
    copy[bit / 8] ^= UInt8(1) << UInt8(7 - bit % 8)
    return copy
}

/// Published constants of the curves (SP 800-186 §3.2.1), for boundary tests.
enum CurveConstants {
    static let p256Prime = hex("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")
    static let p256Order = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
    static let p256Generator = hex("""
        04 6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296
           4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5
        """)
    static let p384Prime = hex("""
        fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe
        ffffffff0000000000000000ffffffff
        """)
    static let p384Order = hex("""
        ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf
        581a0db248b0a77aecec196accc52973
        """)
    static let p384Generator = hex("""
        04 aa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a38
           5502f25dbf55296c3a545e3872760ab7
           3617de4a96262c6f5d9e98bf9292dc29f8f41dbd289a147ce9da3113b5f0b8c0
           0a60b1ce1d7e819d7a431d7c90ea0e5f
        """)

    /// a + delta as a big-endian integer of the same width (no overflow expected).
    static func adding(_ delta: Int, to a: [UInt8]) -> [UInt8] {
        var result = a
        var carry = delta
        var index = result.count - 1
        while carry != 0, index >= 0 {
            let sum = Int(result[index]) + carry
            result[index] = UInt8(truncatingIfNeeded: sum)
            carry = sum >> 8
            index -= 1
        }
        return result
    }
}
