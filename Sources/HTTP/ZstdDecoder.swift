/// A Zstandard decoder (RFC 8878), for the zstd content coding (RFC 8878
/// §7.2): every frame of a body decoded in one call, without dictionaries.
///
/// Bounded: at most `limit` bytes come out, past which it throws (a
/// decompression bomb is refused, not followed), and a frame that announces
/// more than that is refused before any of it is decoded. Every size and
/// offset the input gives is checked before it is used, so any input is safe:
/// malformed data throws. Every loop consumes input or produces output, or is
/// bounded by a table's size.
///
/// What a frame's content is checked against: its Frame_Content_Size when
/// present, its XXH64 Content_Checksum when present (§3.1.1).
///
/// The whole output is kept, so matches read it directly and the window
/// (RFC 9659 asks HTTP decoders for 8 MiB) needs no buffer of its own: a
/// window size is accepted whatever it is, and `limit` is what bounds memory.
/// It still bounds the blocks (§3.1.1.2.4), as the RFC says.
public enum ZstdDecoder {
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var reason: String
        /// The output would pass `limit` bytes (a decompression bomb is refused, not followed).
        public var exceededLimit: Bool = false
        public var description: String { reason }
    }

    /// Every frame in `input` decoded and concatenated (RFC 8878 §3.1: frames follow one another; skippable frames are skipped).
    public static func decode(_ input: UnsafeRawBufferPointer, limit: Int) throws(Failure) -> [UInt8] {
        let limit = max(0, limit)
        var output: [UInt8] = []
        guard !input.isEmpty else { throw Failure(reason: "zstd: no frame") }
        var at = 0
        // Each turn takes at least the 4 bytes of a magic number.
        while at < input.count {
            guard input.count - at >= 4 else {
                throw Failure(reason: at == 0 ? "zstd: truncated frame header" : "zstd: trailing bytes after the last frame")
            }
            let magic = littleEndian(input, at, 4)
            if magic == frameMagic {
                at = try decodeFrame(input, from: at + 4, limit: limit, into: &output)
            } else if magic & 0xFFFF_FFF0 == skippableMagic {
                // §3.1.2: the magic, a 4-byte size, then that many bytes of user data.
                guard input.count - at >= 8 else { throw Failure(reason: "zstd: truncated skippable frame") }
                let size = littleEndian(input, at + 4, 4)
                guard size <= UInt64(input.count - at - 8) else { throw Failure(reason: "zstd: truncated skippable frame") }
                at += 8 + Int(size)
            } else {
                throw Failure(reason: at == 0 ? "zstd: not zstd data (no frame magic number)" : "zstd: trailing bytes after the last frame")
            }
        }
        return output
    }

    /// §3.1.1: 0xFD2FB528, little-endian.
    private static let frameMagic: UInt64 = 0xFD2F_B528
    /// §3.1.2: 0x184D2A50 to 0x184D2A5F.
    private static let skippableMagic: UInt64 = 0x184D_2A50
    /// §3.1.1.2.4: no block is larger than 128 KiB, compressed or decompressed.
    static let blockSizeMaximum = 128 << 10

    static func littleEndian(_ input: UnsafeRawBufferPointer, _ at: Int, _ count: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in 0 ..< count { value |= UInt64(input[at + index]) << (8 * index) }
        return value
    }

    private static func exceeded(_ limit: Int) -> Failure {
        Failure(reason: "decoded body larger than \(limit) bytes", exceededLimit: true)
    }

    // MARK: - Frames (RFC 8878 §3.1.1)

    /// Decodes the frame whose header starts at `start` (after the magic
    /// number), appending its content; returns where the frame ends.
    private static func decodeFrame(_ input: UnsafeRawBufferPointer, from start: Int, limit: Int,
                                    into output: inout [UInt8]) throws(Failure) -> Int {
        // §3.1.1.1.1 Frame_Header_Descriptor.
        guard start < input.count else { throw Failure(reason: "zstd: truncated frame header") }
        let descriptor = input[start]
        let contentSizeFlag = Int(descriptor >> 6)
        let singleSegment = descriptor & 0x20 != 0
        let hasChecksum = descriptor & 0x04 != 0
        guard descriptor & 0x08 == 0 else { throw Failure(reason: "zstd: the frame header's reserved bit is set") }
        let dictionaryIDSize = [0, 1, 2, 4][Int(descriptor & 3)]
        let contentSizeSize = [singleSegment ? 1 : 0, 2, 4, 8][contentSizeFlag]
        let headerSize = 1 + (singleSegment ? 0 : 1) + dictionaryIDSize + contentSizeSize
        guard input.count - start >= headerSize else { throw Failure(reason: "zstd: truncated frame header") }
        var at = start + 1

        // §3.1.1.1.2 Window_Descriptor: the window is 2^(10+exponent) plus eighths of it.
        var windowSize: UInt64 = 0
        if !singleSegment {
            let exponent = UInt64(input[at] >> 3), mantissa = UInt64(input[at] & 7)
            let base: UInt64 = 1 << (10 + exponent)
            windowSize = base + base / 8 * mantissa
            at += 1
        }
        // §3.1.1.1.3: an ID of 0 is as good as none; any other names a dictionary
        // this decoder does not have.
        guard littleEndian(input, at, dictionaryIDSize) == 0 else { throw Failure(reason: "zstd: a dictionary is needed") }
        at += dictionaryIDSize
        // §3.1.1.1.4 Frame_Content_Size: the 2-byte form counts from 256.
        var contentSize: UInt64?
        if contentSizeSize > 0 {
            let value = littleEndian(input, at, contentSizeSize)
            contentSize = contentSizeSize == 2 ? value + 256 : value
            at += contentSizeSize
        }
        if singleSegment { windowSize = contentSize ?? 0 }

        let frameStart = output.count
        if let contentSize {
            guard contentSize <= UInt64(limit - frameStart) else { throw exceeded(limit) }
            // Room for what the frame announces, but no more than its bytes could
            // make (an RLE block: 128 KiB from 4 bytes), so that a few bytes
            // announcing a large size cannot make it allocate; and at least
            // double, as appending does, so that many frames cost linear time.
            let possible = (input.count - at) / 4 * blockSizeMaximum + blockSizeMaximum
            let needed = frameStart + min(Int(contentSize), possible)
            if output.capacity < needed { output.reserveCapacity(max(needed, min(2 * output.capacity, limit))) }
        }

        // §3.1.1.2: blocks up to the one marked last.
        var frame = Frame(start: frameStart, blockMaximum: Int(min(windowSize, UInt64(blockSizeMaximum))))
        // Each turn takes at least a 3-byte block header.
        while true {
            guard input.count - at >= 3 else { throw Failure(reason: "zstd: truncated block header") }
            let header = Int(littleEndian(input, at, 3))
            at += 3
            let size = header >> 3
            guard let type = BlockType(rawValue: header >> 1 & 3) else { throw Failure(reason: "zstd: reserved block type") }
            guard size <= frame.blockMaximum else {
                throw Failure(reason: "zstd: a block of \(size) bytes, over the frame's maximum of \(frame.blockMaximum)")
            }
            switch type {
            case .raw:
                guard input.count - at >= size else { throw Failure(reason: "zstd: truncated block") }
                guard size <= limit - output.count else { throw exceeded(limit) }
                output.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[at ..< at + size]))
                at += size
            case .rle:
                guard at < input.count else { throw Failure(reason: "zstd: truncated block") }
                guard size <= limit - output.count else { throw exceeded(limit) }
                output.append(contentsOf: repeatElement(input[at], count: size))
                at += 1
            case .compressed:
                guard input.count - at >= size else { throw Failure(reason: "zstd: truncated block") }
                try frame.decodeCompressedBlock(UnsafeRawBufferPointer(rebasing: input[at ..< at + size]), limit: limit, into: &output)
                at += size
            }
            if let contentSize, UInt64(output.count - frameStart) > contentSize {
                throw Failure(reason: "zstd: a frame decodes to more than its content size of \(contentSize) bytes")
            }
            if header & 1 != 0 { break }
        }

        if let contentSize, UInt64(output.count - frameStart) != contentSize {
            throw Failure(reason: "zstd: a frame decodes to \(output.count - frameStart) bytes, not its content size of \(contentSize)")
        }
        // §3.1.1: Content_Checksum, the low 32 bits of the content's XXH64 (seed 0).
        if hasChecksum {
            guard input.count - at >= 4 else { throw Failure(reason: "zstd: truncated content checksum") }
            let expected = UInt32(truncatingIfNeeded: littleEndian(input, at, 4))
            let digest = output.withUnsafeBytes { XXHash64.digest(UnsafeRawBufferPointer(rebasing: $0[frameStart...])) }
            guard UInt32(truncatingIfNeeded: digest) == expected else { throw Failure(reason: "zstd: content checksum mismatch") }
            at += 4
        }
        return at
    }

    /// §3.1.1.2.2 Block_Type; 3 is reserved.
    private enum BlockType: Int {
        case raw = 0
        case rle = 1
        case compressed = 2
    }

    // MARK: - Compressed blocks (RFC 8878 §3.1.1.3)

    /// One sequence (§3.1.1.3.2): literals to copy, then a match; the offset is
    /// resolved (repeat offsets applied) and checked when it is decoded.
    struct DecodedSequence {
        var literalLength: Int
        var matchLength: Int
        var offset: Int
    }

    /// What a frame's compressed blocks carry from one to the next (§3.1.1.3:
    /// "Prerequisites"), and buffers reused by every block.
    struct Frame {
        /// Where the frame's content starts in the output: no offset reaches before it.
        let start: Int
        /// §3.1.1.2.4 Block_Maximum_Size: the smaller of the window and 128 KiB.
        let blockMaximum: Int
        /// §3.1.1.5: the three most recent offsets, the most recent first.
        var repeatOffsets = (1, 4, 8)
        /// The last Huffman table, for Treeless_Literals_Block.
        var huffman: HuffmanTable?
        /// The last tables of the last block with sequences, for Repeat_Mode.
        var literalLengthTable: FSETable?
        var offsetTable: FSETable?
        var matchLengthTable: FSETable?
        var literals: [UInt8] = []
        var sequences: [DecodedSequence] = []

        init(start: Int, blockMaximum: Int) {
            self.start = start
            self.blockMaximum = blockMaximum
        }

        mutating func decodeCompressedBlock(_ block: UnsafeRawBufferPointer, limit: Int, into output: inout [UInt8]) throws(Failure) {
            let literalsSize = try readLiterals(block)
            let sequencesSection = UnsafeRawBufferPointer(rebasing: block[literalsSize...])
            try readSequences(sequencesSection, outputSoFar: output.count - start)

            // §3.1.1.4: the literals the sequences leave over end the block.
            let total = literals.count + sequences.reduce(0) { $0 + $1.matchLength }
            guard total <= blockMaximum else {
                throw Failure(reason: "zstd: a block decodes to more than the frame's maximum of \(blockMaximum) bytes")
            }
            guard total <= limit - output.count else { throw ZstdDecoder.exceeded(limit) }
            execute(into: &output, total: total)
        }

        // MARK: Literals (§3.1.1.3.1)

        /// §3.1.1.3.1.1 Literals_Block_Type.
        private enum LiteralsType: UInt8 {
            case raw = 0
            case rle = 1
            case compressed = 2
            case treeless = 3
        }

        /// Decodes the literals section into `literals`; returns its size.
        private mutating func readLiterals(_ block: UnsafeRawBufferPointer) throws(Failure) -> Int {
            guard let first = block.first else { throw Failure(reason: "zstd: truncated literals section") }
            // The two low bits always name one of the four types.
            let type = LiteralsType(rawValue: first & 3) ?? .raw
            let sizeFormat = Int(first >> 2 & 3)
            switch type {
            case .raw, .rle:
                // §3.1.1.3.1.1 Size_Format for raw and RLE: 5, 12 or 20 bits of size.
                let headerSize = sizeFormat & 1 == 0 ? 1 : sizeFormat == 1 ? 2 : 3
                guard block.count >= headerSize else { throw Failure(reason: "zstd: truncated literals section") }
                let header = Int(ZstdDecoder.littleEndian(block, 0, headerSize))
                let size = headerSize == 1 ? header >> 3 : header >> 4
                guard size <= blockMaximum else { throw Failure(reason: "zstd: \(size) literals, over the block maximum") }
                literals.removeAll(keepingCapacity: true)
                if type == .raw {
                    guard block.count - headerSize >= size else { throw Failure(reason: "zstd: truncated literals") }
                    literals.append(contentsOf: UnsafeRawBufferPointer(rebasing: block[headerSize ..< headerSize + size]))
                    return headerSize + size
                }
                guard block.count > headerSize else { throw Failure(reason: "zstd: truncated literals") }
                literals.append(contentsOf: repeatElement(block[headerSize], count: size))
                return headerSize + 1
            case .compressed, .treeless:
                // §3.1.1.3.1.1: one stream with 10-bit sizes, or four with 10, 14 or 18.
                let headerSize = [3, 3, 4, 5][sizeFormat]
                let sizeBits = [10, 10, 14, 18][sizeFormat]
                guard block.count >= headerSize else { throw Failure(reason: "zstd: truncated literals section") }
                let header = Int(ZstdDecoder.littleEndian(block, 0, headerSize))
                let mask = (1 << sizeBits) - 1
                let regenerated = header >> 4 & mask
                let compressed = header >> (4 + sizeBits) & mask
                guard regenerated <= blockMaximum else {
                    throw Failure(reason: "zstd: \(regenerated) literals, over the block maximum")
                }
                guard block.count - headerSize >= compressed else { throw Failure(reason: "zstd: truncated literals") }
                var streams = UnsafeRawBufferPointer(rebasing: block[headerSize ..< headerSize + compressed])
                let table: HuffmanTable
                if type == .compressed {
                    let (read, treeSize) = try HuffmanTable.read(streams)
                    table = read
                    huffman = read
                    streams = UnsafeRawBufferPointer(rebasing: streams[treeSize...])
                } else {
                    guard let previous = huffman else {
                        throw Failure(reason: "zstd: treeless literals without a previous Huffman table")
                    }
                    table = previous
                }
                try table.decode(streams, fourStreams: sizeFormat != 0, count: regenerated, into: &literals)
                return headerSize + compressed
            }
        }

        // MARK: Sequences (§3.1.1.3.2)

        /// §3.1.1.3.2.1 Compression_Mode.
        private enum Mode: UInt8 {
            case predefined = 0
            case rle = 1
            case compressed = 2
            case repeated = 3
        }

        /// Decodes the sequences section into `sequences`, checking each against
        /// the literals and the output (`outputSoFar` bytes of this frame).
        private mutating func readSequences(_ section: UnsafeRawBufferPointer, outputSoFar: Int) throws(Failure) {
            sequences.removeAll(keepingCapacity: true)
            // §3.1.1.3.2.1 Number_of_Sequences: 1 to 3 bytes.
            guard let byte0 = section.first.map(Int.init) else { throw Failure(reason: "zstd: truncated sequences section") }
            let count: Int
            var at: Int
            if byte0 < 128 {
                count = byte0
                at = 1
            } else if byte0 < 255 {
                guard section.count >= 2 else { throw Failure(reason: "zstd: truncated sequences section") }
                count = (byte0 - 128) << 8 + Int(section[1])
                at = 2
            } else {
                guard section.count >= 3 else { throw Failure(reason: "zstd: truncated sequences section") }
                count = Int(section[1]) + Int(section[2]) << 8 + 0x7F00
                at = 3
            }
            guard count > 0 else {
                // No sequences: the block is its literals, and the tables stay as they were.
                guard section.count == at else { throw Failure(reason: "zstd: bytes after an empty sequences section") }
                return
            }
            // Every match is 3 bytes or more, so a block holds no more sequences than that allows.
            guard count <= blockMaximum / 3 else {
                throw Failure(reason: "zstd: \(count) sequences, more than a block of \(blockMaximum) bytes holds")
            }
            guard at < section.count else { throw Failure(reason: "zstd: truncated sequences section") }
            let modes = section[at]
            at += 1
            guard modes & 3 == 0 else { throw Failure(reason: "zstd: the sequences' reserved mode bits are set") }

            // The tables come in this order: literals lengths, offsets, match lengths.
            let literalLength = try table(Mode(rawValue: modes >> 6 & 3), section, &at, previous: literalLengthTable,
                                          predefined: ZstdDecoder.literalLengthDefault, maxAccuracyLog: 9, maxSymbol: 35,
                                          name: "literals length table")
            let offset = try table(Mode(rawValue: modes >> 4 & 3), section, &at, previous: offsetTable,
                                   predefined: ZstdDecoder.offsetDefault, maxAccuracyLog: 8, maxSymbol: 31,
                                   name: "offset table")
            let matchLength = try table(Mode(rawValue: modes >> 2 & 3), section, &at, previous: matchLengthTable,
                                        predefined: ZstdDecoder.matchLengthDefault, maxAccuracyLog: 9, maxSymbol: 52,
                                        name: "match length table")
            literalLengthTable = literalLength
            offsetTable = offset
            matchLengthTable = matchLength

            var reader = try BackwardBitReader(UnsafeRawBufferPointer(rebasing: section[at...]), name: "the sequences bitstream")
            try decodeSequences(&reader, count: count, literalLength, offset, matchLength, outputSoFar: outputSoFar)
            // §3.1.1.3.2.1.2: "At the end, the bitstream shall be entirely consumed".
            guard reader.bitsLeft == 0 else { throw Failure(reason: "zstd: corrupt sequences bitstream") }
        }

        /// One symbol type's table as its mode says (§3.1.1.3.2.1).
        private func table(_ mode: Mode?, _ section: UnsafeRawBufferPointer, _ at: inout Int, previous: FSETable?,
                           predefined: FSETable, maxAccuracyLog: Int, maxSymbol: Int, name: String) throws(Failure) -> FSETable {
            // Two bits always name one of the four modes.
            switch mode ?? .predefined {
            case .predefined:
                return predefined
            case .rle:
                guard at < section.count else { throw Failure(reason: "zstd: truncated \(name)") }
                let symbol = section[at]
                guard Int(symbol) <= maxSymbol else { throw Failure(reason: "zstd: \(name) symbol \(symbol) is over \(maxSymbol)") }
                at += 1
                return FSETable(symbol: symbol)
            case .compressed:
                let (table, size) = try FSETable.read(UnsafeRawBufferPointer(rebasing: section[at...]), maxAccuracyLog: maxAccuracyLog,
                                                      maxSymbol: maxSymbol, name: name)
                at += size
                return table
            case .repeated:
                guard let previous else { throw Failure(reason: "zstd: \(name) repeated without a previous one") }
                return previous
            }
        }

        /// §3.1.1.3.2.1.2 "Decoding Sequences", and §3.1.1.5's repeat offsets.
        private mutating func decodeSequences(_ reader: inout BackwardBitReader, count: Int,
                                              _ literalLengthTable: FSETable, _ offsetTable: FSETable, _ matchLengthTable: FSETable,
                                              outputSoFar: Int) throws(Failure) {
            let literalLengths = literalLengthTable.entries, offsets = offsetTable.entries, matchLengths = matchLengthTable.entries
            // Initial states: literals length, offset, match length. A state read
            // in accuracyLog bits, or reached through the table, is inside it.
            var literalLengthState = reader.read(literalLengthTable.accuracyLog)
            var offsetState = reader.read(offsetTable.accuracyLog)
            var matchLengthState = reader.read(matchLengthTable.accuracyLog)
            var (repeat1, repeat2, repeat3) = repeatOffsets
            var literalsUsed = 0
            var produced = 0
            sequences.reserveCapacity(count)
            for index in 0 ..< count {
                let literalLengthEntry = literalLengths[literalLengthState]
                let offsetEntry = offsets[offsetState]
                let matchLengthEntry = matchLengths[matchLengthState]
                // Extra bits in this order: offset, match length, literals length.
                // The tables' symbols are within 31, 52 and 35 (checked as read).
                let offsetCode = Int(offsetEntry.symbol)
                let offsetValue = 1 << offsetCode + reader.read(offsetCode)
                let matchCode = Int(matchLengthEntry.symbol)
                let matchLength = ZstdDecoder.matchLengthBase[matchCode] + reader.read(ZstdDecoder.matchLengthBits[matchCode])
                let literalCode = Int(literalLengthEntry.symbol)
                let literalLength = ZstdDecoder.literalLengthBase[literalCode] + reader.read(ZstdDecoder.literalLengthBits[literalCode])

                // §3.1.1.5: values 1-3 name a recent offset, shifted by one when
                // there are no literals (and then 3 is the most recent less one).
                let offset: Int
                if offsetValue > 3 {
                    offset = offsetValue - 3
                    (repeat1, repeat2, repeat3) = (offset, repeat1, repeat2)
                } else {
                    let recent = offsetValue - (literalLength == 0 ? 0 : 1)
                    switch recent {
                    case 0: offset = repeat1
                    case 1:
                        offset = repeat2
                        (repeat1, repeat2) = (offset, repeat1)
                    case 2:
                        offset = repeat3
                        (repeat1, repeat2, repeat3) = (offset, repeat1, repeat2)
                    default: // 3, after no literals
                        offset = repeat1 - 1
                        (repeat1, repeat2, repeat3) = (offset, repeat1, repeat2)
                    }
                }

                guard literalLength <= literals.count - literalsUsed else {
                    throw Failure(reason: "zstd: sequences use more literals than the block has")
                }
                literalsUsed += literalLength
                produced += literalLength
                guard offset > 0, offset <= outputSoFar + produced else {
                    throw Failure(reason: "zstd: a match offset of \(offset) reaches before the start of the frame")
                }
                produced += matchLength
                guard produced <= blockMaximum else {
                    throw Failure(reason: "zstd: a block decodes to more than the frame's maximum of \(blockMaximum) bytes")
                }
                sequences.append(DecodedSequence(literalLength: literalLength, matchLength: matchLength, offset: offset))

                // States move on after every sequence but the last: literals
                // length, match length, then offset.
                if index < count - 1 {
                    literalLengthState = Int(literalLengthEntry.baseline) + reader.read(Int(literalLengthEntry.bits))
                    matchLengthState = Int(matchLengthEntry.baseline) + reader.read(Int(matchLengthEntry.bits))
                    offsetState = Int(offsetEntry.baseline) + reader.read(Int(offsetEntry.bits))
                }
            }
            repeatOffsets = (repeat1, repeat2, repeat3)
        }

        // MARK: Execution (§3.1.1.4)

        /// Appends the block: each sequence's literals, then its match, then the
        /// literals left. Everything was checked as the sequences were decoded:
        /// literal lengths within `literals`, offsets within the frame's output,
        /// and `total` is exactly what the copies write.
        private func execute(into output: inout [UInt8], total: Int) {
            let base = output.count
            output.append(contentsOf: repeatElement(0, count: total))
            literals.withUnsafeBufferPointer { literals in
                output.withUnsafeMutableBufferPointer { output in
                    guard let out = output.baseAddress else { return }
                    var at = base
                    var literal = 0
                    for sequence in sequences {
                        if sequence.literalLength > 0, let source = literals.baseAddress {
                            (out + at).update(from: source + literal, count: sequence.literalLength)
                            at += sequence.literalLength
                            literal += sequence.literalLength
                        }
                        copyMatch(out, at: at, offset: sequence.offset, length: sequence.matchLength)
                        at += sequence.matchLength
                    }
                    if literal < literals.count, let source = literals.baseAddress {
                        (out + at).update(from: source + literal, count: literals.count - literal)
                    }
                }
            }
        }

        /// Copies `length` bytes from `offset` back. When the match overlaps
        /// itself, it repeats the last `offset` bytes: each copy takes what is
        /// already written, a whole number of periods, so it doubles each time.
        @inline(__always)
        private func copyMatch(_ out: UnsafeMutablePointer<UInt8>, at: Int, offset: Int, length: Int) {
            let source = out + (at - offset)
            if offset >= length {
                (out + at).update(from: source, count: length)
                return
            }
            var copied = 0
            while copied < length {
                let count = min(length - copied, offset + copied)
                (out + at + copied).update(from: source, count: count)
                copied += count
            }
        }
    }

    // MARK: - Codes (RFC 8878 §3.1.1.3.2.1.1)

    /// Literals length codes 0...35: a baseline and how many extra bits follow.
    static let literalLengthBase: [Int] = [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
        16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096,
        8192, 16384, 32768, 65536,
    ]
    static let literalLengthBits: [Int] = [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12,
        13, 14, 15, 16,
    ]
    /// Match length codes 0...52.
    static let matchLengthBase: [Int] = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
        19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
        35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051,
        4099, 8195, 16387, 32771, 65539,
    ]
    static let matchLengthBits: [Int] = [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11,
        12, 13, 14, 15, 16,
    ]

    /// §3.1.1.3.2.2 "Default Distributions" for Predefined_Mode.
    static let literalLengthDefault = FSETable(distribution: [
        4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1,
        2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
        -1, -1, -1, -1,
    ], accuracyLog: 6)
    static let matchLengthDefault = FSETable(distribution: [
        1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1,
        -1, -1, -1, -1, -1,
    ], accuracyLog: 6)
    static let offsetDefault = FSETable(distribution: [
        1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1,
    ], accuracyLog: 5)
}
