/// XXH64, the 64-bit xxHash, as Zstandard checks a frame's content with it
/// (RFC 8878 §3.1.1: Content_Checksum, seed 0), written from xxHash's
/// specification (doc/xxhash_spec.md, "XXH64 algorithm description"): four
/// lanes over 32-byte stripes, merged, then the tail, then an avalanche.
enum XXHash64 {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let prime5: UInt64 = 0x27D4_EB2F_1656_67C5

    static func digest(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        let length = bytes.count
        var at = 0
        var hash: UInt64
        if length >= 32 {
            var lane1 = seed &+ prime1 &+ prime2
            var lane2 = seed &+ prime2
            var lane3 = seed
            var lane4 = seed &- prime1
            while length - at >= 32 {
                lane1 = round(lane1, word64(bytes, at))
                lane2 = round(lane2, word64(bytes, at + 8))
                lane3 = round(lane3, word64(bytes, at + 16))
                lane4 = round(lane4, word64(bytes, at + 24))
                at += 32
            }
            hash = rotate(lane1, 1) &+ rotate(lane2, 7) &+ rotate(lane3, 12) &+ rotate(lane4, 18)
            hash = merge(hash, lane1)
            hash = merge(hash, lane2)
            hash = merge(hash, lane3)
            hash = merge(hash, lane4)
        } else {
            hash = seed &+ prime5
        }
        hash &+= UInt64(length)

        while length - at >= 8 {
            hash ^= round(0, word64(bytes, at))
            hash = rotate(hash, 27) &* prime1 &+ prime4
            at += 8
        }
        if length - at >= 4 {
            let word = UInt64(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
            hash ^= word &* prime1
            hash = rotate(hash, 23) &* prime2 &+ prime3
            at += 4
        }
        while at < length {
            hash ^= UInt64(bytes[at]) &* prime5
            hash = rotate(hash, 11) &* prime1
            at += 1
        }

        hash ^= hash >> 33
        hash &*= prime2
        hash ^= hash >> 29
        hash &*= prime3
        hash ^= hash >> 32
        return hash
    }

    @inline(__always)
    private static func word64(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self))
    }

    @inline(__always)
    private static func rotate(_ value: UInt64, _ count: UInt64) -> UInt64 {
        value << count | value >> (64 - count)
    }

    @inline(__always)
    private static func round(_ accumulator: UInt64, _ input: UInt64) -> UInt64 {
        rotate(accumulator &+ input &* prime2, 31) &* prime1
    }

    @inline(__always)
    private static func merge(_ hash: UInt64, _ lane: UInt64) -> UInt64 {
        (hash ^ round(0, lane)) &* prime1 &+ prime4
    }
}
