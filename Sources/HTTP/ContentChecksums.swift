/// CRC-32 as gzip checks its data (RFC 1952 §8: ISO 3309's polynomial,
/// reflected, 0xEDB88320; initial and final XOR 0xFFFFFFFF), a byte at a time
/// through one 256-entry table.
enum CRC32 {
    private static let table: [UInt32] = (0 ..< 256).map { index in
        var value = UInt32(index)
        for _ in 0 ..< 8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func checksum(_ bytes: some Collection<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

/// Adler-32 as zlib checks its data (RFC 1950 §8.2): two sums modulo 65521.
enum Adler32 {
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        // 5552 bytes is the most that can be summed before b could pass 2^32 (RFC 1950's NMAX).
        var start = 0
        while start < bytes.count {
            let end = min(start + 5552, bytes.count)
            for i in start ..< end {
                a &+= UInt32(bytes[i])
                b &+= a
            }
            a %= 65521
            b %= 65521
            start = end
        }
        return b << 16 | a
    }
}
