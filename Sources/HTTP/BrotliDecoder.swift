/// A Brotli decoder (RFC 7932), for the `br` content coding (registered by
/// RFC 7932 §13): one whole stream in, its bytes out.
///
/// Bounded: at most `limit` bytes come out, and a meta-block that says it
/// holds more than the limit leaves is refused before it is decoded (RFC 7932
/// §12: a decompression bomb is refused, not followed). Every loop consumes
/// input or produces output, the prefix code tables are a few KiB each, and
/// any input is safe: malformed data throws a Failure saying what was wrong.
///
/// The whole output is kept, so the sliding window is the output itself: a
/// distance may reach back min(window size, bytes so far), and one past that
/// is a static dictionary reference (§8) or an error.
public enum BrotliDecoder {
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var reason: String
        /// The output would pass `limit` bytes (a decompression bomb is refused, not followed).
        public var exceededLimit: Bool
        public var description: String { reason }

        public init(reason: String, exceededLimit: Bool = false) {
            self.reason = reason
            self.exceededLimit = exceededLimit
        }
    }

    /// One Brotli stream decoded; bytes after its last meta-block are a Failure.
    public static func decode(_ input: UnsafeRawBufferPointer, limit: Int) throws(Failure) -> [UInt8] {
        var stream = Stream(input: input, limit: max(0, limit))
        try stream.decode()
        return stream.output
    }

    /// One stream being decoded: the input's bits, the output so far, and what
    /// §4 carries from one meta-block to the next.
    struct Stream {
        var reader: BitReader
        let limit: Int
        var output: [UInt8] = []
        /// §9.1: (1 << WBITS) - 16, the farthest a distance may reach back.
        var windowSize = 0
        /// §4: the last four distances, not reset between meta-blocks.
        var distances = LastDistances()

        init(input: UnsafeRawBufferPointer, limit: Int) {
            reader = BitReader(input: input)
            self.limit = limit
        }

        /// §10: the stream header, then meta-blocks up to the last one.
        mutating func decode() throws(Failure) {
            windowSize = (1 << (try readWindowBits())) - 16
            // Each turn reads at least one bit, so the loop ends with the input.
            while true {
                let isLast = try reader.take(1) == 1
                if isLast, try reader.take(1) == 1 {
                    // ISLASTEMPTY: the stream ends with this bit.
                    break
                }
                let nibbles = try reader.take(2)
                if nibbles == 3 {
                    try skipMetadata()
                    if isLast { break }
                    continue
                }
                // §9.2: MNIBBLES 0, 1, 2 stand for 4, 5, 6 nibbles of MLEN - 1.
                let lengthBits = (nibbles + 4) * 4
                let length = try reader.take(lengthBits) + 1
                if lengthBits > 16, (length - 1) >> (lengthBits - 4) == 0 {
                    throw Failure(reason: "brotli: a meta-block's length has a needless zero nibble")
                }
                guard length <= limit - output.count else {
                    throw Failure(reason: "decoded body larger than \(limit) bytes", exceededLimit: true)
                }
                reserve(length)
                if !isLast, try reader.take(1) == 1 {
                    try copyUncompressed(length)
                    continue
                }
                try decodeCompressed(length: length)
                if isLast { break }
            }
            // §9.2, §9.3: the last byte's unused bits are zeros, and nothing follows.
            guard reader.alignToByte() == 0 else {
                throw Failure(reason: "brotli: padding bits after the last meta-block are not zero")
            }
            guard reader.isExhausted else {
                throw Failure(reason: "brotli: bytes after the last meta-block")
            }
        }

        /// §9.1: WBITS, 10...24, in 1, 4 or 7 bits.
        private mutating func readWindowBits() throws(Failure) -> Int {
            if try reader.take(1) == 0 { return 16 }
            let high = try reader.take(3)
            if high != 0 { return 17 + high }
            let low = try reader.take(3)
            switch low {
            case 0: return 17
            case 1:
                // 0010001 is invalid in RFC 7932; the later "large window" extension
                // (windows up to 2^30) took it, and is not read here.
                throw Failure(reason: "brotli: the large-window extension is not supported (WBITS code 0010001)")
            default: return 8 + low
            }
        }

        /// Room for `length` more bytes, growing at least twofold but never past the limit.
        private mutating func reserve(_ length: Int) {
            let needed = output.count + length
            guard needed > output.capacity else { return }
            output.reserveCapacity(min(limit, max(needed, output.capacity * 2)))
        }

        /// §9.2 MNIBBLES = 0: a metadata block, whose bytes are skipped (they are
        /// neither output nor window).
        private mutating func skipMetadata() throws(Failure) {
            guard try reader.take(1) == 0 else {
                throw Failure(reason: "brotli: a metadata block's reserved bit is set")
            }
            let lengthBytes = try reader.take(2)
            var length = 0
            if lengthBytes > 0 {
                length = try reader.take(lengthBytes * 8) + 1
                if lengthBytes > 1, (length - 1) >> ((lengthBytes - 1) * 8) == 0 {
                    throw Failure(reason: "brotli: a metadata length has a needless zero byte")
                }
            }
            guard reader.alignToByte() == 0 else {
                throw Failure(reason: "brotli: a metadata block's padding bits are not zero")
            }
            _ = try reader.takeBytes(length)
        }

        /// §9.2 ISUNCOMPRESSED: from the next byte, `length` bytes as they are.
        private mutating func copyUncompressed(_ length: Int) throws(Failure) {
            guard reader.alignToByte() == 0 else {
                throw Failure(reason: "brotli: an uncompressed meta-block's padding bits are not zero")
            }
            output.append(contentsOf: try reader.takeBytes(length))
        }
    }

    /// §4: the ring of the last four distances, which the 16 short distance
    /// codes refer to. It starts as 16, 15, 11, 4 (4 the last).
    struct LastDistances {
        var last = 4
        var second = 11
        var third = 15
        var fourth = 16

        mutating func push(_ distance: Int) {
            fourth = third
            third = second
            second = last
            last = distance
        }

        /// §4: distance symbols 0...15, or nil for one that comes to zero or less.
        func shortCode(_ symbol: Int) -> Int? {
            let distance: Int
            switch symbol {
            case 0: distance = last
            case 1: distance = second
            case 2: distance = third
            case 3: distance = fourth
            // 4...9: the last distance -1, +1, -2, +2, -3, +3; 10...15 the same from the second.
            case 4 ... 9: distance = last + Self.shortOffsets[symbol - 4]
            default: distance = second + Self.shortOffsets[symbol - 10]
            }
            return distance > 0 ? distance : nil
        }

        private static let shortOffsets = [-1, 1, -2, 2, -3, 3]
    }
}
