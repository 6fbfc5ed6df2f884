/// A raw DEFLATE decoder (RFC 1951: stored, fixed-Huffman and dynamic-Huffman
/// blocks, no zlib or gzip wrapper) for permessage-deflate (RFC 7692), so that
/// a WebSocket message recorded as it went on the wire can also be read.
///
/// One call decodes one whole compressed unit: for RFC 7692 §7.2.2 a message's
/// payload with 0x00 0x00 0xFF 0xFF appended, which makes it end with an empty
/// stored block. The LZ77 window (the last 2^windowBits bytes produced) is kept
/// between calls, because with context takeover a message's back-references
/// may reach into the messages before it; `reset()` forgets it
/// (no_context_takeover).
///
/// Bounded: the window is a ring of 2^windowBits bytes (32 KiB at most), the
/// Huffman tables are at most 2^15 entries each, a call appends at most `limit`
/// bytes and stops with "output too large" past `outputMaximum` decompressed
/// bytes (a decompression bomb is counted, not followed forever). Every loop
/// consumes input or produces output, so the work is bounded by both. Any
/// input is safe: malformed data throws, and the inflater then stays failed.
public struct Inflater: Sendable {
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var reason: String
        public var description: String { "DEFLATE: \(reason)" }
    }

    /// The base-2 logarithm of the window's size (RFC 7692 §7.1.2's *_max_window_bits).
    public let windowBits: Int
    /// Decompressed bytes one call may produce before it throws "output too large".
    public let outputMaximum: Int
    /// The last bytes produced, a ring: `windowPosition` is where the next byte goes.
    /// Allocated on first use, so an inflater that never sees a message costs nothing.
    private var window: [UInt8] = []
    private var windowPosition = 0
    /// How many bytes of the ring hold output (until the ring has wrapped once):
    /// a back-reference may not reach further (RFC 1951 §3.2: not before the start of the data).
    private var windowFilled = 0
    private(set) public var failure: Failure?

    /// `windowBits` 8...15: the sliding window kept between calls (RFC 7692's
    /// *_max_window_bits); 15 = 32 KiB. Values outside are clamped to that range.
    public init(windowBits: Int = 15) {
        self.init(windowBits: windowBits, outputMaximum: 64 << 20)
    }

    /// With a lower `outputMaximum` (tests, the fuzz harness).
    init(windowBits: Int, outputMaximum: Int) {
        self.windowBits = min(max(windowBits, 8), 15)
        self.outputMaximum = max(0, outputMaximum)
    }

    /// Decompresses one whole compressed unit (for RFC 7692: a message's payload
    /// with 0x00 0x00 0xFF 0xFF appended by the caller), appending at most
    /// `limit` output bytes to `output`; returns the total decompressed length,
    /// which exceeds what was appended when `limit` cut it.
    ///
    /// Every complete block is decoded; the input must end at a block boundary
    /// (only the padding bits of its last byte left). A final block (BFINAL=1)
    /// ends the stream: what follows it, from the next byte, starts a new one
    /// that keeps the window, in this call or the next (a later message may
    /// still refer back), except a bare 00 00 FF FF, which ends the call. Throws
    /// on malformed data; the inflater then stays failed, every
    /// later call throwing the same Failure, and `output` keeps what was
    /// appended before the fault.
    public mutating func inflate(_ input: UnsafeRawBufferPointer, limit: Int, into output: inout [UInt8]) throws(Failure) -> Int {
        if let failure { throw failure }
        if window.isEmpty { window = [UInt8](repeating: 0, count: 1 << windowBits) }
        var reader = BitReader(input: input)
        var sink = Sink(limit: max(0, limit))
        do {
            _ = try decodeBlocks(&reader, &sink, &output, endingAtFinal: false)
        } catch {
            failure = error
            throw error
        }
        return sink.total
    }

    /// Decompresses one DEFLATE stream that starts at `input`'s first byte
    /// and ends with its final block (BFINAL=1), as a gzip member or a zlib
    /// stream carries it (RFC 1952, RFC 1950), appending at most `limit`
    /// bytes to `output`. Returns the total decompressed length and how many
    /// bytes of `input` the stream took (to the byte after its final block's
    /// last bit); what follows is the wrapper's trailer. Throws as `inflate`
    /// does, and on input that ends before the final block.
    public mutating func inflateStream(_ input: UnsafeRawBufferPointer, limit: Int, into output: inout [UInt8]) throws(Failure) -> (total: Int, consumed: Int) {
        if let failure { throw failure }
        if window.isEmpty { window = [UInt8](repeating: 0, count: 1 << windowBits) }
        var reader = BitReader(input: input)
        var sink = Sink(limit: max(0, limit))
        do throws(Failure) {
            guard try decodeBlocks(&reader, &sink, &output, endingAtFinal: true) else {
                throw Failure(reason: "truncated input (no final block)")
            }
        } catch {
            failure = error
            throw error
        }
        return (sink.total, reader.consumedBytes)
    }

    /// Forgets the window (RFC 7692 no_context_takeover): the next call starts
    /// fresh. A failure stays: the stream it came from is broken for good.
    public mutating func reset() {
        windowPosition = 0
        windowFilled = 0
    }

    // MARK: - Blocks (RFC 1951 §3.2.3)

    /// RFC 1951 §3.2.3: BTYPE, the block header's second and third bits; 11 is reserved.
    private enum BlockType: Int {
        case stored = 0
        case fixedHuffman = 1
        case dynamicHuffman = 2
    }

    /// Returns true when `endingAtFinal` and a final block ended the stream
    /// (the reader then stands on the byte after it).
    private mutating func decodeBlocks(_ reader: inout BitReader, _ sink: inout Sink, _ output: inout [UInt8],
                                       endingAtFinal: Bool) throws(Failure) -> Bool {
        // Each turn reads a block header (3 bits or more), so the loop ends with the input.
        while !reader.isExhausted {
            let final = try reader.take(1) == 1
            guard let type = BlockType(rawValue: try reader.take(2)) else {
                throw Failure(reason: "reserved block type 3")
            }
            switch type {
            case .stored:
                try copyStored(&reader, &sink, &output)
            case .fixedHuffman:
                try decodeHuffman(&reader, &sink, &output, literalLength: Self.fixedLiteralLengthCode, distance: Self.fixedDistanceCode)
            case .dynamicHuffman:
                let (literalLength, distance) = try Self.readDynamicCodes(&reader)
                try decodeHuffman(&reader, &sink, &output, literalLength: literalLength, distance: distance)
            }
            if final {
                // A final block ends the stream, and the next one starts on a byte (a
                // stream is whole bytes, RFC 1951 §3.1.1). RFC 7692 §7.2.3.4's example
                // follows a final block with 0x00, an empty stored block's header that
                // the appended 00 00 FF FF completes: a new stream, read on. A sender
                // that ends its message with the final block alone (zlib's Z_FINISH)
                // leaves the 00 00 FF FF by itself, which is no block; inflaters stop
                // at a stream's end and never see it, so here it ends the call.
                reader.alignToByte()
                if endingAtFinal { return true }
                if reader.takeSyncMarkerAtEnd() { return false }
            }
        }
        return false
    }

    /// RFC 1951 §3.2.4: skip to the byte, LEN and its one's complement NLEN, then LEN bytes as they are.
    private mutating func copyStored(_ reader: inout BitReader, _ sink: inout Sink, _ output: inout [UInt8]) throws(Failure) {
        reader.alignToByte()
        let length = try reader.take(16)
        let complement = try reader.take(16)
        guard length == complement ^ 0xFFFF else {
            throw Failure(reason: "a stored block's LEN \(length) is not the complement of NLEN \(complement)")
        }
        let bytes = try reader.takeBytes(length)
        try sink.reserve(length, outputMaximum: outputMaximum)
        for byte in bytes { put(byte, &sink, &output) }
    }

    /// RFC 1951 §3.2.5: literals, the end of the block, and (length, distance) back-references.
    private mutating func decodeHuffman(
        _ reader: inout BitReader, _ sink: inout Sink, _ output: inout [UInt8],
        literalLength: HuffmanCode, distance distanceCode: HuffmanCode
    ) throws(Failure) {
        // Each turn consumes at least one bit (every code is at least one bit
        // long), so the loop ends with the input or the end-of-block symbol.
        while true {
            let symbol = try reader.decode(literalLength, name: "literal/length")
            switch symbol {
            case 0 ..< 256:
                try sink.reserve(1, outputMaximum: outputMaximum)
                put(UInt8(truncatingIfNeeded: symbol), &sink, &output)
            case 256:
                return
            case 257 ... 285:
                let lengthIndex = symbol - 257
                let length = Self.lengthBase[lengthIndex] + (try reader.take(Self.lengthExtraBits[lengthIndex]))
                let distanceSymbol = try reader.decode(distanceCode, name: "distance")
                // Distance codes 30 and 31 have a code in the fixed code and may in a
                // dynamic one, but §3.2.6: they never occur in the data.
                guard distanceSymbol < 30 else {
                    throw Failure(reason: "distance symbol \(distanceSymbol) does not exist")
                }
                let distance = Self.distanceBase[distanceSymbol] + (try reader.take(Self.distanceExtraBits[distanceSymbol]))
                try copyBack(length: length, distance: distance, &sink, &output)
            default:
                // 286 and 287 have a code in the fixed code, but §3.2.6: they never occur in the data.
                throw Failure(reason: "literal/length symbol \(symbol) does not exist")
            }
        }
    }

    /// §3.2.3: copy `length` bytes starting `distance` bytes back, which may
    /// overlap what the copy itself writes (distance < length repeats a pattern).
    private mutating func copyBack(length: Int, distance: Int, _ sink: inout Sink, _ output: inout [UInt8]) throws(Failure) {
        guard distance <= windowFilled else {
            throw Failure(reason: "a distance of \(distance) reaches before the \(windowFilled) bytes in the window")
        }
        try sink.reserve(length, outputMaximum: outputMaximum)
        let mask = window.count - 1
        var from = (windowPosition - distance) & mask
        for _ in 0 ..< length {
            let byte = window[from]
            from = (from + 1) & mask
            put(byte, &sink, &output)
        }
    }

    /// One decompressed byte: always into the window (later back-references need
    /// it even when `limit` cut the output), into `output` while under the limit.
    @inline(__always)
    private mutating func put(_ byte: UInt8, _ sink: inout Sink, _ output: inout [UInt8]) {
        window[windowPosition] = byte
        windowPosition = (windowPosition + 1) & (window.count - 1)
        if windowFilled < window.count { windowFilled += 1 }
        if sink.appended < sink.limit {
            output.append(byte)
            sink.appended += 1
        }
    }

    /// What one call has produced, against its limit and the maximum.
    private struct Sink {
        let limit: Int
        var appended = 0
        var total = 0

        /// Counts `count` bytes about to be produced, or throws before the maximum is passed.
        mutating func reserve(_ count: Int, outputMaximum: Int) throws(Failure) {
            guard count <= outputMaximum - total else {
                throw Failure(reason: "output too large (over \(outputMaximum) bytes)")
            }
            total += count
        }
    }

    // MARK: - Codes (RFC 1951 §3.2.2, §3.2.6, §3.2.7)

    /// §3.2.5: lengths 3...258 for symbols 257...285: a base and how many extra bits follow.
    private static let lengthBase: [Int] = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
        35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258,
    ]
    private static let lengthExtraBits: [Int] = [
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
        3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
    ]
    /// §3.2.5: distances 1...32768 for symbols 0...29.
    private static let distanceBase: [Int] = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
        257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
    ]
    private static let distanceExtraBits: [Int] = [
        0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
        7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13,
    ]

    /// §3.2.6: the fixed literal/length code: 0-143 8 bits, 144-255 9, 256-279 7, 280-287 8.
    private static let fixedLiteralLengthCode: HuffmanCode = {
        var lengths = [UInt8](repeating: 8, count: 288)
        for symbol in 144 ... 255 { lengths[symbol] = 9 }
        for symbol in 256 ... 279 { lengths[symbol] = 7 }
        // The lengths are the RFC's own, a complete code: building cannot fail.
        return try! HuffmanCode(lengths: lengths, name: "fixed literal/length")
    }()

    /// §3.2.6: the fixed distance code: 32 codes of 5 bits (30 and 31 never occur).
    private static let fixedDistanceCode: HuffmanCode = {
        try! HuffmanCode(lengths: [UInt8](repeating: 5, count: 32), name: "fixed distance")
    }()

    /// §3.2.7: the order in which the code length code's lengths come.
    private static let codeLengthOrder: [Int] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    /// §3.2.7: a dynamic block's header: the code length code, then with it the
    /// literal/length and distance codes' lengths (one sequence: a repeat may
    /// run from the one into the other).
    private static func readDynamicCodes(_ reader: inout BitReader) throws(Failure) -> (HuffmanCode, HuffmanCode) {
        let literalLengthCount = try reader.take(5) + 257
        let distanceCount = try reader.take(5) + 1
        let codeLengthCount = try reader.take(4) + 4
        // HLIT's 5 bits reach 288, but only 286 literal/length symbols exist.
        guard literalLengthCount <= 286 else {
            throw Failure(reason: "\(literalLengthCount) literal/length codes (at most 286)")
        }
        var codeLengthLengths = [UInt8](repeating: 0, count: 19)
        for index in 0 ..< codeLengthCount {
            codeLengthLengths[codeLengthOrder[index]] = UInt8(truncatingIfNeeded: try reader.take(3))
        }
        let codeLengthCode = try HuffmanCode(lengths: codeLengthLengths, name: "code length")
        guard codeLengthCode.isComplete else {
            throw Failure(reason: "an incomplete code length code")
        }

        let total = literalLengthCount + distanceCount
        var lengths: [UInt8] = []
        lengths.reserveCapacity(total)
        // Each turn appends at least one length, so at most `total` (318) turns.
        while lengths.count < total {
            let symbol = try reader.decode(codeLengthCode, name: "code length")
            let repeated: UInt8
            let count: Int
            switch symbol {
            case 0 ... 15:
                lengths.append(UInt8(truncatingIfNeeded: symbol))
                continue
            case 16:
                guard let previous = lengths.last else {
                    throw Failure(reason: "a repeat of the previous code length with none before it")
                }
                repeated = previous
                count = 3 + (try reader.take(2))
            case 17:
                repeated = 0
                count = 3 + (try reader.take(3))
            case 18:
                repeated = 0
                count = 11 + (try reader.take(7))
            default:
                // The code length code has 19 symbols: the table holds no other.
                throw Failure(reason: "code length symbol \(symbol) does not exist")
            }
            guard count <= total - lengths.count else {
                throw Failure(reason: "code lengths repeated past the \(total) codes")
            }
            lengths.append(contentsOf: repeatElement(repeated, count: count))
        }

        // §3.2.5: every block ends with symbol 256, so it must have a code.
        guard lengths[256] != 0 else {
            throw Failure(reason: "no code for the end of the block")
        }
        let literalLength = try HuffmanCode(lengths: lengths[0 ..< literalLengthCount], name: "literal/length")
        let distance = try HuffmanCode(lengths: lengths[literalLengthCount...], name: "distance")
        // An incomplete code is allowed only as the RFC's own exception (§3.2.7:
        // "one distance code of one bit"), which the literal/length code may
        // also take (a block of end-of-block only); any other gap is an error.
        guard literalLength.isComplete || literalLength.isSingleOneBitCode else {
            throw Failure(reason: "an incomplete literal/length code")
        }
        guard distance.isComplete || distance.isSingleOneBitCode || distance.isEmpty else {
            throw Failure(reason: "an incomplete distance code")
        }
        return (literalLength, distance)
    }

    /// A canonical Huffman code (§3.2.2) as a lookup table: indexed by the next
    /// `indexBits` bits of input (the first bit lowest, as §3.1.1 packs them),
    /// each entry is the symbol whose code those bits start with, shifted left
    /// by 4, or'ed with the code's length; 0 where no code matches.
    struct HuffmanCode: Sendable {
        private(set) var entries: [UInt16]
        /// The longest code's length, 0 for a code with no symbols.
        let indexBits: Int
        /// Every bit string starts with some code (Kraft's sum is 1).
        let isComplete: Bool
        let isSingleOneBitCode: Bool
        var isEmpty: Bool { indexBits == 0 }

        /// Throws when the code is oversubscribed (more codes of some length
        /// than the shorter ones leave room for): no canonical code exists.
        init(lengths: some Collection<UInt8>, name: String) throws(Failure) {
            // §3.2.2 step 1: how many codes of each length.
            var countPerLength = [Int](repeating: 0, count: 16)
            for length in lengths {
                guard length <= 15 else { throw Failure(reason: "a \(name) code length of \(length)") }
                countPerLength[Int(length)] += 1
            }
            countPerLength[0] = 0
            // Room left at each length: each length doubles the room, each code takes one place.
            var room = 1
            var longest = 0
            for length in 1 ... 15 {
                room = room * 2 - countPerLength[length]
                guard room >= 0 else { throw Failure(reason: "an oversubscribed \(name) code") }
                if countPerLength[length] > 0 { longest = length }
            }
            indexBits = longest
            isComplete = room == 0
            isSingleOneBitCode = longest == 1 && countPerLength[1] == 1

            // §3.2.2 step 2: the first code of each length.
            var nextCode = [Int](repeating: 0, count: 16)
            var code = 0
            for length in 1 ... 15 {
                code = (code + countPerLength[length - 1]) << 1
                nextCode[length] = code
            }
            // Step 3: codes in symbol order. A code is read first bit first while the
            // table is indexed by bits as they arrive (lowest first), so each code is
            // reversed and its entry repeated for every value of the bits after it.
            var entries = [UInt16](repeating: 0, count: 1 << longest)
            for (symbol, length) in lengths.enumerated() where length != 0 {
                let length = Int(length)
                let reversed = Self.reverse(nextCode[length], bits: length)
                nextCode[length] += 1
                let entry = UInt16(truncatingIfNeeded: symbol << 4 | length)
                for index in stride(from: reversed, to: entries.count, by: 1 << length) {
                    entries[index] = entry
                }
            }
            self.entries = entries
        }

        static func reverse(_ code: Int, bits: Int) -> Int {
            var reversed = 0
            var rest = code
            for _ in 0 ..< bits {
                reversed = reversed << 1 | rest & 1
                rest >>= 1
            }
            return reversed
        }
    }

    // MARK: - Bits (RFC 1951 §3.1.1)

    /// The input as bits: bytes in order, each byte's bits from the lowest.
    typealias BitReader = LSBBitReader<Failure>
}

extension Inflater.Failure: TruncationFailure {
    static var truncated: Self { Self(reason: "truncated input") }
}

extension Inflater.BitReader {
    /// The next Huffman-coded symbol: one table look-up on the next bits.
    mutating func decode(_ code: Inflater.HuffmanCode, name: String) throws(Inflater.Failure) -> Int {
        // Near the end fewer bits may be left than the longest code: the index
        // is then padded with zeros, which the entry of a code that short ignores.
        let index = Int(truncatingIfNeeded: peek() & ((1 << UInt64(code.indexBits)) - 1))
        let entry = Int(code.entries[index])
        let length = entry & 15
        guard length != 0, length <= count else {
            throw count < code.indexBits ? .truncated : Inflater.Failure(reason: "an invalid \(name) code")
        }
        try drop(length)
        return entry >> 4
    }

    /// Whether the bytes left (after `alignToByte`) are exactly 00 00 FF FF, which it then takes.
    mutating func takeSyncMarkerAtEnd() -> Bool {
        let rest = remainingBytes()
        guard rest.elementsEqual([0x00, 0x00, 0xFF, 0xFF]) else { return false }
        _ = try? takeBytes(4)
        return true
    }
}
