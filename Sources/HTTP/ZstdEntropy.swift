/// Zstandard's two entropy codes (RFC 8878 §4): FSE, which codes the
/// sequences and the Huffman weights, and Huffman, which codes literals, and
/// the backward bitstreams both are read from.
///
/// Every table is checked as it is read (a distribution must sum exactly to
/// its table's size, Huffman weights must complete a power of two), so that
/// decoding with it cannot index outside it: a state or a prefix looked up
/// is always smaller than the table by construction.
extension ZstdDecoder {
    // MARK: - Backward bitstreams (RFC 8878 §4.1, §4.2.2)

    /// A bitstream read from its last byte towards its first. The encoder ends
    /// the stream with a 1 bit and pads the byte with zeros (§4.2: "the last
    /// byte ... cannot be 0"); reading starts after that bit, and each value
    /// read comes from the highest bits not yet consumed.
    ///
    /// `container` holds the 8 bytes from `position`; `consumed` counts the
    /// bits of it already read, from the top. Reading past the stream's start
    /// yields zero bits (§4.2.1.2 assumes that for the last weight state), and
    /// `bitsLeft` goes negative, which callers check.
    struct BackwardBitReader {
        private let bytes: UnsafeRawBufferPointer
        private var position: Int
        private var container: UInt64
        private var consumed: Int

        init(_ bytes: UnsafeRawBufferPointer, name: String) throws(Failure) {
            guard let last = bytes.last, last != 0 else {
                throw Failure(reason: "zstd: \(name) does not end with its marker bit")
            }
            self.bytes = bytes
            if bytes.count >= 8 {
                position = bytes.count - 8
                container = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt64.self))
                consumed = 0
            } else {
                // A short stream sits in the container's low bytes; its missing high
                // bytes count as read, so the end-of-stream sums hold unchanged.
                position = 0
                var value: UInt64 = 0
                for (index, byte) in bytes.enumerated() { value |= UInt64(byte) << (8 * index) }
                container = value
                consumed = (8 - bytes.count) * 8
            }
            consumed += last.leadingZeroBitCount + 1
        }

        /// Bits not yet read; negative once reads have run past the stream's start.
        var bitsLeft: Int { position * 8 + 64 - consumed }

        /// Moves the container back over the whole bytes already read, so that
        /// at least 57 bits are ahead unless the stream's start is nearer.
        @inline(__always)
        mutating func refill() {
            let back = min(consumed >> 3, position)
            guard back > 0 else { return }
            position -= back
            consumed -= back * 8
            container = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt64.self))
        }

        /// The next `count` (0...57) bits, the first read the highest.
        @inline(__always)
        mutating func read(_ count: Int) -> Int {
            if consumed + count > 64 { refill() }
            let value = peekHeld(count)
            consumed += count
            return value
        }

        /// The next `count` (1...57) bits without consuming them.
        @inline(__always)
        mutating func peek(_ count: Int) -> Int {
            if consumed + count > 64 { refill() }
            return peekHeld(count)
        }

        @inline(__always)
        mutating func skip(_ count: Int) { consumed += count }

        @inline(__always)
        private func peekHeld(_ count: Int) -> Int {
            guard count > 0 else { return 0 }
            // Smart shifts: past 64 consumed bits the container shifts out to
            // zero, the zero bits read past the start.
            return Int(truncatingIfNeeded: (container << consumed) >> (64 - count))
        }
    }

    // MARK: - FSE (RFC 8878 §4.1)

    /// An FSE decoding table (§4.1.1): per state, the symbol it decodes and how
    /// to reach the next state (the baseline, plus that many bits read).
    struct FSETable: Sendable {
        struct Entry: Sendable {
            var baseline: UInt16
            var bits: UInt8
            var symbol: UInt8
        }

        /// log2 of the table's size: the bits an initial state takes.
        let accuracyLog: Int
        private(set) var entries: [Entry]

        /// RLE_Mode (§3.1.1.3.2.1): one symbol for every sequence, no bits read.
        init(symbol: UInt8) {
            accuracyLog = 0
            entries = [Entry(baseline: 0, bits: 0, symbol: symbol)]
        }

        /// §4.1.1 "From normalized distribution to decoding tables". The
        /// distribution must use exactly `1 << accuracyLog` points, counting -1
        /// ("less than 1") as one, as `read` ensures and the RFC's default
        /// distributions do; then every cell is filled once and every state the
        /// table leads to is one of its own.
        init(distribution: [Int16], accuracyLog: Int) {
            self.accuracyLog = accuracyLog
            let size = 1 << accuracyLog
            var symbols = [UInt8](repeating: 0, count: size)
            var next = [Int](repeating: 0, count: distribution.count)
            // "Less than 1" symbols take one cell each from the end, and reset the
            // state fully (all accuracyLog bits).
            var highest = size - 1
            for (symbol, count) in distribution.enumerated() where count == -1 && highest >= 0 {
                symbols[highest] = UInt8(truncatingIfNeeded: symbol)
                highest -= 1
                next[symbol] = 1
            }
            // The others are spread with an odd step (size ≥ 32: it is coprime with
            // the size), skipping the cells just taken, so every free cell is met once.
            let step = (size >> 1) + (size >> 3) + 3
            let mask = size - 1
            var position = 0
            for (symbol, count) in distribution.enumerated() where count > 0 {
                next[symbol] = Int(count)
                for _ in 0 ..< Int(count) {
                    symbols[position] = UInt8(truncatingIfNeeded: symbol)
                    // At most `size` steps: the walk visits every cell.
                    for _ in 0 ..< size {
                        position = (position + step) & mask
                        if position <= highest { break }
                    }
                }
            }
            // A symbol's states, in order, share out the state space: the first
            // ones (that need one bit more) the wider ranges, starting after those.
            var entries: [Entry] = []
            entries.reserveCapacity(size)
            for cell in 0 ..< size {
                let symbol = Int(symbols[cell])
                let state = max(next[symbol], 1)
                next[symbol] += 1
                let bits = max(0, accuracyLog - (Int.bitWidth - 1 - state.leadingZeroBitCount))
                entries.append(Entry(baseline: UInt16(truncatingIfNeeded: (state << bits) - size),
                                     bits: UInt8(truncatingIfNeeded: bits), symbol: UInt8(truncatingIfNeeded: symbol)))
            }
            self.entries = entries
        }

        /// §4.1.1 "FSE Table Description": reads a distribution from the start of
        /// `data` and builds its table. Returns the table and the whole bytes it
        /// took. `maxSymbol` and `maxAccuracyLog` are the limits of what it codes.
        static func read(_ data: UnsafeRawBufferPointer, maxAccuracyLog: Int, maxSymbol: Int,
                         name: String) throws(Failure) -> (table: FSETable, size: Int) {
            var bits = ForwardBits(data)
            let accuracyLog = bits.peek(4) + 5
            try bits.skip(4, name: name)
            guard accuracyLog <= maxAccuracyLog else {
                throw Failure(reason: "zstd: \(name) accuracy log \(accuracyLog) is over \(maxAccuracyLog)")
            }
            var distribution: [Int16] = []
            distribution.reserveCapacity(maxSymbol + 1)
            // The points still to share out, plus one: a value read is 0...remaining.
            var remaining = (1 << accuracyLog) + 1
            var threshold = 1 << accuracyLog
            var width = accuracyLog + 1
            // Each turn consumes bits (skip throws past the data's end) and adds a
            // symbol, at most maxSymbol + 1 of them.
            while remaining > 1 {
                guard distribution.count <= maxSymbol else {
                    throw Failure(reason: "zstd: \(name) has symbols past \(maxSymbol)")
                }
                // Values below `small` fit in one bit less (§4.1.1's table of
                // "value read" and "value decoded").
                let small = 2 * threshold - 1 - remaining
                var value = bits.peek(width)
                if value & (threshold - 1) < small {
                    value &= threshold - 1
                    try bits.skip(width - 1, name: name)
                } else {
                    value &= 2 * threshold - 1
                    if value >= threshold { value -= small }
                    try bits.skip(width, name: name)
                }
                let probability = value - 1
                remaining -= probability == -1 ? 1 : probability
                guard remaining >= 1 else {
                    throw Failure(reason: "zstd: \(name) probabilities pass the table size")
                }
                distribution.append(Int16(truncatingIfNeeded: probability))
                if probability == 0 {
                    // A zero probability is followed by 2-bit counts of more zeros,
                    // another count after each 3.
                    var zeros = 0
                    var flag = 3
                    while flag == 3 {
                        flag = bits.peek(2)
                        try bits.skip(2, name: name)
                        zeros += flag
                        guard distribution.count + zeros <= maxSymbol + 1 else {
                            throw Failure(reason: "zstd: \(name) has symbols past \(maxSymbol)")
                        }
                    }
                    distribution.append(contentsOf: repeatElement(0, count: zeros))
                }
                while remaining < threshold {
                    width -= 1
                    threshold >>= 1
                }
            }
            return (FSETable(distribution: distribution, accuracyLog: accuracyLog), bits.bytesUsed)
        }
    }

    /// A forward little-endian bitstream for table descriptions (§4.1.1): bits
    /// from each byte's lowest. Peeking past the end gives zeros; consuming
    /// past it throws.
    struct ForwardBits {
        private let data: UnsafeRawBufferPointer
        private var consumed = 0

        init(_ data: UnsafeRawBufferPointer) { self.data = data }

        /// The whole bytes the bits read so far touch.
        var bytesUsed: Int { (consumed + 7) >> 3 }

        /// The next `count` (1...16) bits, lowest first.
        func peek(_ count: Int) -> Int {
            var value = 0
            var byte = consumed >> 3
            var shift = -(consumed & 7)
            // At most 3 bytes hold 16 bits after a partial one.
            while shift < count && byte < data.count {
                value |= shift >= 0 ? Int(data[byte]) << shift : Int(data[byte]) >> -shift
                byte += 1
                shift += 8
            }
            return value & ((1 << count) - 1)
        }

        mutating func skip(_ count: Int, name: String) throws(Failure) {
            guard count <= data.count * 8 - consumed else {
                throw Failure(reason: "zstd: truncated \(name)")
            }
            consumed += count
        }
    }

    // MARK: - Huffman (RFC 8878 §4.2)

    /// A Huffman decoding table indexed by the next `maxBits` bits of a stream:
    /// each entry is the symbol whose prefix those bits start with, in the low
    /// byte, and its prefix's length in the high byte.
    struct HuffmanTable: Sendable {
        let maxBits: Int
        private(set) var entries: [UInt16]

        /// §4.2.1: the tree description at the start of `data`; returns the table
        /// and the bytes the description took.
        static func read(_ data: UnsafeRawBufferPointer) throws(Failure) -> (table: HuffmanTable, size: Int) {
            guard let header = data.first else { throw Failure(reason: "zstd: truncated Huffman tree description") }
            // At most 255 weights are written; the last symbol's is implied.
            var weights = [UInt8](repeating: 0, count: 256)
            var count = 0
            let size: Int
            if header < 128 {
                // §4.2.1.2: the weights FSE-coded in `header` bytes.
                size = 1 + Int(header)
                guard header > 0, data.count >= size else {
                    throw Failure(reason: "zstd: truncated Huffman tree description")
                }
                let compressed = UnsafeRawBufferPointer(rebasing: data[1 ..< size])
                // Weights are 0...11 (§4.2.1); a table may describe 12, never used.
                let (table, tableSize) = try FSETable.read(compressed, maxAccuracyLog: 6, maxSymbol: 12,
                                                           name: "Huffman weights' FSE table")
                guard tableSize < compressed.count else {
                    throw Failure(reason: "zstd: truncated Huffman weights")
                }
                var reader = try BackwardBitReader(UnsafeRawBufferPointer(rebasing: compressed[tableSize...]),
                                                   name: "the Huffman weights' bitstream")
                // Two states take turns, sharing the table. When an update runs past
                // the stream's start, the other state's symbol is the last.
                var current = reader.read(table.accuracyLog)
                var other = reader.read(table.accuracyLog)
                // Each turn writes a weight, at most 255.
                while true {
                    guard count < 255 else { throw Failure(reason: "zstd: more than 255 Huffman weights") }
                    let entry = table.entries[current]
                    weights[count] = entry.symbol
                    count += 1
                    current = Int(entry.baseline) + reader.read(Int(entry.bits))
                    if reader.bitsLeft < 0 {
                        guard count < 255 else { throw Failure(reason: "zstd: more than 255 Huffman weights") }
                        weights[count] = table.entries[other].symbol
                        count += 1
                        break
                    }
                    swap(&current, &other)
                }
            } else {
                // §4.2.1.1 "direct representation": 4 bits each, the first in the high half.
                count = Int(header) - 127
                size = 1 + (count + 1) / 2
                guard data.count >= size else { throw Failure(reason: "zstd: truncated Huffman tree description") }
                for index in 0 ..< count {
                    let byte = data[1 + index / 2]
                    weights[index] = index & 1 == 0 ? byte >> 4 : byte & 0x0F
                }
            }
            return (try HuffmanTable(weights: &weights, count: count), size)
        }

        /// §4.2.1.3: the codes from the weights of symbols 0..<count, the last
        /// symbol's weight (at `count`) being what completes a power of two.
        private init(weights: inout [UInt8], count: Int) throws(Failure) {
            var total = 0
            for weight in weights[0 ..< count] {
                guard weight <= 11 else { throw Failure(reason: "zstd: a Huffman weight of \(weight)") }
                if weight > 0 { total += 1 << (weight - 1) }
            }
            guard total > 0 else { throw Failure(reason: "zstd: Huffman weights all zero") }
            let maxBits = Int.bitWidth - total.leadingZeroBitCount
            guard maxBits <= 11 else { throw Failure(reason: "zstd: Huffman codes longer than 11 bits") }
            let rest = (1 << maxBits) - total
            guard rest & (rest - 1) == 0 else {
                throw Failure(reason: "zstd: Huffman weights that no last weight completes")
            }
            weights[count] = UInt8(truncatingIfNeeded: Int.bitWidth - rest.leadingZeroBitCount)
            let symbols = count + 1

            var perWeight = [Int](repeating: 0, count: 12)
            for weight in weights[0 ..< symbols] { perWeight[Int(weight)] += 1 }
            guard perWeight[1] >= 2 else { throw Failure(reason: "zstd: Huffman weights without two of weight 1") }
            // Codes go out from the lowest weight (longest code) up, symbols in
            // order within a weight; a symbol of weight w covers 2^(w-1) entries.
            var start = [Int](repeating: 0, count: 12)
            var next = 0
            for weight in 1 ... maxBits {
                start[weight] = next
                next += perWeight[weight] << (weight - 1)
            }
            var entries = [UInt16](repeating: 0, count: 1 << maxBits)
            for symbol in 0 ..< symbols {
                let weight = Int(weights[symbol])
                guard weight > 0 else { continue }
                guard weight <= maxBits else { throw Failure(reason: "zstd: a Huffman weight past the tree's depth") }
                let entry = UInt16(truncatingIfNeeded: symbol | (maxBits + 1 - weight) << 8)
                let first = start[weight]
                let span = 1 << (weight - 1)
                for index in first ..< first + span { entries[index] = entry }
                start[weight] = first + span
            }
            self.maxBits = maxBits
            self.entries = entries
        }

        /// §3.1.1.3.1.6, §4.2.2: decodes `streams` (one, or four after a 6-byte
        /// jump table) into `literals`, which takes exactly `count` bytes.
        func decode(_ streams: UnsafeRawBufferPointer, fourStreams: Bool, count: Int,
                    into literals: inout [UInt8]) throws(Failure) {
            literals.removeAll(keepingCapacity: true)
            literals.append(contentsOf: repeatElement(0, count: count))
            guard fourStreams else {
                var reader = try BackwardBitReader(streams, name: "a Huffman stream")
                try decode(&reader, into: &literals, 0 ..< count)
                return
            }
            guard streams.count >= 6 else { throw Failure(reason: "zstd: truncated Huffman jump table") }
            let size1 = Int(streams[0]) | Int(streams[1]) << 8
            let size2 = Int(streams[2]) | Int(streams[3]) << 8
            let size3 = Int(streams[4]) | Int(streams[5]) << 8
            let start2 = 6 + size1, start3 = start2 + size2, start4 = start3 + size3
            guard start4 < streams.count else { throw Failure(reason: "zstd: Huffman jump table past the literals") }
            let segment = (count + 3) / 4
            guard count - 3 * segment >= 0 else { throw Failure(reason: "zstd: too few literals for four streams") }
            let bounds = [6 ..< start2, start2 ..< start3, start3 ..< start4, start4 ..< streams.count]
            for (index, range) in bounds.enumerated() {
                var reader = try BackwardBitReader(UnsafeRawBufferPointer(rebasing: streams[range]), name: "a Huffman stream")
                let first = index * segment
                try decode(&reader, into: &literals, first ..< (index == 3 ? count : first + segment))
            }
        }

        /// One stream's symbols; it must end exactly at its first bit (§4.2.2).
        private func decode(_ reader: inout BackwardBitReader, into literals: inout [UInt8], _ range: Range<Int>) throws(Failure) {
            let maxBits = maxBits
            entries.withUnsafeBufferPointer { table in
                literals.withUnsafeMutableBufferPointer { output in
                    for index in range {
                        // `peek(maxBits)` is below 2^maxBits, the table's size.
                        let entry = table[reader.peek(maxBits)]
                        reader.skip(Int(entry >> 8))
                        output[index] = UInt8(truncatingIfNeeded: entry)
                    }
                }
            }
            guard reader.bitsLeft == 0 else { throw Failure(reason: "zstd: corrupt Huffman stream") }
        }
    }
}
