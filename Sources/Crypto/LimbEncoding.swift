/// Conversions between big-endian byte strings and limbs.
enum LimbEncoding {
    /// The integer of a big-endian byte string of at most 8·count bytes; nil
    /// when longer. Leading zero bytes count towards the length: callers that
    /// allow them strip them first.
    static func limbs<let count: Int>(fromBigEndian bytes: ArraySlice<UInt8>) -> Limbs<count>? {
        guard bytes.count <= 8 * count else { return nil }
        var result = Limbs<count>(repeating: 0)
        var shift: UInt64 = 0
        var index = 0
        for byte in bytes.reversed() {
            result[index] |= UInt64(byte) << shift
            shift += 8
            if shift == 64 {
                shift = 0
                index += 1
            }
        }
        return result
    }

    /// The low `length` bytes of a, big-endian (length ≤ 8·count).
    static func bigEndianBytes<let count: Int>(_ a: Limbs<count>, length: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: length)
        for position in 0 ..< min(length, 8 * count) {
            bytes[length - 1 - position] = UInt8(truncatingIfNeeded: a[position / 8] >> UInt64(8 * (position % 8)))
        }
        return bytes
    }
}
