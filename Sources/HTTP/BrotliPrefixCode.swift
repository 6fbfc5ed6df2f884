extension BrotliDecoder {
    /// Prefix codes (RFC 7932 §3) as lookup tables, several codes of one kind in
    /// one array: `starts[i]` is where code i's table begins.
    ///
    /// A table is indexed by the next `rootBits` bits of input (the first bit
    /// lowest, as §1.5.1 packs codes). Each entry is the symbol << 16 | 0x100 *
    /// isLink | length: a code no longer than `rootBits` is found at once and
    /// takes `length` bits; a longer one finds a link whose upper half is where
    /// its second-level table starts (from the code's own start) and whose low
    /// byte is how many bits index that table, where the entry then found gives
    /// the whole code's length. A code with one symbol (§3.4 NSYM = 1) has every
    /// entry give it with length 0: no bits are read.
    struct PrefixCodes {
        static let rootBits = 8
        private(set) var entries: [UInt32] = []
        private(set) var starts: [Int] = []

        init(capacity: Int) {
            starts.reserveCapacity(capacity)
            entries.reserveCapacity(capacity << Self.rootBits)
        }

        /// Reads one prefix code over `alphabetSize` symbols (§3.4 or §3.5) and
        /// appends its table.
        mutating func read(_ reader: inout BitReader, alphabetSize: Int) throws(Failure) {
            try append(lengths: try Self.readLengths(&reader, alphabetSize: alphabetSize))
        }

        /// The code lengths of one prefix code over `alphabetSize` symbols, as
        /// §3.4 or §3.5 gives them (a simple code's one symbol has length 1 here).
        static func readLengths(_ reader: inout BitReader, alphabetSize: Int) throws(Failure) -> [UInt8] {
            var lengths = [UInt8](repeating: 0, count: alphabetSize)
            let kind = try reader.take(2)
            if kind == 1 {
                try readSimple(&reader, alphabetSize: alphabetSize, into: &lengths)
            } else {
                // HSKIP: 0, 2 or 3 code length code lengths left out (taken as zero).
                try readComplex(&reader, skipped: kind, into: &lengths)
            }
            return lengths
        }

        /// §3.4: NSYM - 1, NSYM symbols of ALPHABET_BITS bits, and for four
        /// symbols the tree-select bit. The lengths follow from NSYM alone.
        private static func readSimple(_ reader: inout BitReader, alphabetSize: Int, into lengths: inout [UInt8]) throws(Failure) {
            let count = try reader.take(2) + 1
            // ALPHABET_BITS: the fewest bits that can write alphabetSize - 1.
            let alphabetBits = Int.bitWidth - (alphabetSize - 1).leadingZeroBitCount
            var symbols = (0, 0, 0, 0)
            for index in 0 ..< count {
                let symbol = try reader.take(alphabetBits)
                guard symbol < alphabetSize else {
                    throw Failure(reason: "brotli: a simple prefix code's symbol \(symbol) is outside its alphabet of \(alphabetSize)")
                }
                guard lengths[symbol] == 0 else {
                    throw Failure(reason: "brotli: a simple prefix code lists symbol \(symbol) twice")
                }
                // Marks the symbol as seen; its real length is set below.
                lengths[symbol] = 1
                switch index {
                case 0: symbols.0 = symbol
                case 1: symbols.1 = symbol
                case 2: symbols.2 = symbol
                default: symbols.3 = symbol
                }
            }
            switch count {
            case 1:
                // One symbol: its code is empty (the table builder sees one length).
                break
            case 2:
                break
            case 3:
                // 1, 2, 2 in the order the symbols came.
                lengths[symbols.0] = 1
                lengths[symbols.1] = 2
                lengths[symbols.2] = 2
            default:
                let treeSelect = try reader.take(1)
                let shape: (UInt8, UInt8, UInt8, UInt8) = treeSelect == 0 ? (2, 2, 2, 2) : (1, 2, 3, 3)
                lengths[symbols.0] = shape.0
                lengths[symbols.1] = shape.1
                lengths[symbols.2] = shape.2
                lengths[symbols.3] = shape.3
            }
        }

        /// §3.5: the code length code's lengths (in `codeLengthOrder`, each in the
        /// fixed 2 to 4 bit code), then the symbols' lengths in that code, with
        /// 16 repeating the previous non-zero length and 17 repeating zero.
        private static func readComplex(_ reader: inout BitReader, skipped: Int, into lengths: inout [UInt8]) throws(Failure) {
            var codeLengthLengths = [UInt8](repeating: 0, count: 18)
            var space = 32
            var nonZero = 0
            for index in skipped ..< 18 {
                // §3.5's fixed code, in the order its bits are read: 0 0 → 0, 0 1 → 3,
                // 1 0 → 4, 1 1 0 → 2, 1 1 1 0 → 1, 1 1 1 1 → 5.
                let peeked = Int(truncatingIfNeeded: reader.peek() & 15)
                let length: UInt8
                let used: Int
                switch peeked & 3 {
                case 0: (length, used) = (0, 2)
                case 1: (length, used) = (4, 2)
                case 2: (length, used) = (3, 2)
                default:
                    if peeked & 4 == 0 {
                        (length, used) = (2, 3)
                    } else {
                        (length, used) = peeked & 8 == 0 ? (1, 4) : (5, 4)
                    }
                }
                try reader.drop(used)
                codeLengthLengths[Tables.codeLengthOrder[index]] = length
                if length != 0 {
                    nonZero += 1
                    space -= 32 >> Int(length)
                    // The lengths stop once they fill the code (trailing zeros left out).
                    if space <= 0 { break }
                }
            }
            guard nonZero == 1 || space == 0 else {
                throw Failure(reason: "brotli: the code length code's lengths do not make a complete prefix code")
            }
            var codeLengthCode = PrefixCodes(capacity: 1)
            try codeLengthCode.append(lengths: codeLengthLengths)

            // The symbols' lengths, until they fill the code: `left` counts the room
            // they leave, in units of a 15-bit code.
            var symbol = 0
            var previousNonZero: UInt8 = 8
            var repeatLength: UInt8 = 0
            var repeatCount = 0
            var left = 1 << 15
            // Each turn sets at least one length, so at most the alphabet's size turns.
            while symbol < lengths.count && left > 0 {
                let code = try reader.decode(codeLengthCode, 0)
                if code < 16 {
                    let length = UInt8(truncatingIfNeeded: code)
                    lengths[symbol] = length
                    symbol += 1
                    repeatCount = 0
                    if length != 0 {
                        previousNonZero = length
                        left -= (1 << 15) >> code
                    }
                    continue
                }
                // 16 repeats the previous non-zero length 3..6 times, 17 zero 3..10 times;
                // the same code again right after scales the count it continues.
                let extraBits = code == 16 ? 2 : 3
                let length = code == 16 ? previousNonZero : 0
                if length != repeatLength {
                    repeatLength = length
                    repeatCount = 0
                }
                let before = repeatCount
                if repeatCount > 0 {
                    repeatCount = (repeatCount - 2) << extraBits
                }
                repeatCount += try reader.take(extraBits) + 3
                let added = repeatCount - before
                guard added <= lengths.count - symbol else {
                    throw Failure(reason: "brotli: code lengths repeated past the alphabet's \(lengths.count) symbols")
                }
                for index in symbol ..< symbol + added { lengths[index] = length }
                symbol += added
                if length != 0 { left -= added * ((1 << 15) >> Int(length)) }
            }
            guard left == 0 else {
                throw Failure(reason: "brotli: a complex prefix code's lengths do not make a complete prefix code")
            }
        }

        /// Appends the table of the canonical code (§3.2) with these lengths
        /// (0 for an unused symbol, at most 15). The code must be complete
        /// (§3.5: its lengths sum to 1 in 2^-length), or have a single symbol.
        mutating func append(lengths: [UInt8]) throws(Failure) {
            let rootBits = Self.rootBits
            let start = entries.count
            starts.append(start)
            var countPerLength = [Int](repeating: 0, count: 16)
            var onlySymbol = 0
            for (symbol, length) in lengths.enumerated() where length != 0 {
                guard length <= 15 else { throw Failure(reason: "brotli: a code length of \(length)") }
                countPerLength[Int(length)] += 1
                onlySymbol = symbol
            }
            let used = countPerLength.reduce(0, +)
            if used == 1 {
                entries.append(contentsOf: repeatElement(UInt32(onlySymbol) << 16, count: 1 << rootBits))
                return
            }
            var left = 1 << 15
            for length in 1 ... 15 { left -= countPerLength[length] << (15 - length) }
            guard left == 0, used > 1 else {
                throw Failure(reason: "brotli: a prefix code is not complete")
            }

            // §3.2: canonical codes go to the symbols by length, then by symbol: a
            // counting sort puts the symbols in that order, and each code is one
            // more than the one before (shifted left where the length grows).
            var firstOfLength = [Int](repeating: 0, count: 16)
            for length in 1 ..< 15 { firstOfLength[length + 1] = firstOfLength[length] + countPerLength[length] }
            var sorted = [Int](repeating: 0, count: used)
            for (symbol, length) in lengths.enumerated() where length != 0 {
                sorted[firstOfLength[Int(length)]] = symbol
                firstOfLength[Int(length)] += 1
            }

            entries.append(contentsOf: repeatElement(0, count: 1 << rootBits))
            let rootMask = (1 << rootBits) - 1
            var code = 0
            var length = 1
            var remaining = countPerLength
            var currentRoot = -1
            var tableStart = 0
            var tableBits = 0
            for symbol in sorted {
                while remaining[length] == 0 {
                    length += 1
                    code <<= 1
                }
                remaining[length] -= 1
                // Codes are read first bit first and the table is indexed by bits as
                // they come (lowest first), so each code is reversed.
                let reversed = Inflater.HuffmanCode.reverse(code, bits: length)
                code += 1
                let entry = UInt32(symbol) << 16 | UInt32(length)
                if length <= rootBits {
                    // One entry, repeated for every value of the bits after the code.
                    for index in stride(from: start + reversed, to: start + (1 << rootBits), by: 1 << length) {
                        entries[index] = entry
                    }
                    continue
                }
                // Longer codes that share their first rootBits bits are neighbours in
                // this order, and share one second-level table, as deep as they need.
                let root = reversed & rootMask
                if root != currentRoot {
                    // The subtree under this root entry is full at the first length
                    // whose codes (with the shorter ones before them) take all its room.
                    tableBits = length - rootBits
                    var room = (1 << tableBits) - remaining[length] - 1
                    var deeper = length
                    while room > 0 && deeper < 15 {
                        deeper += 1
                        tableBits += 1
                        room = room << 1 - remaining[deeper]
                    }
                    tableStart = entries.count
                    entries.append(contentsOf: repeatElement(0, count: 1 << tableBits))
                    entries[start + root] = UInt32(tableStart - start) << 16 | 0x100 | UInt32(tableBits)
                    currentRoot = root
                }
                let tableEnd = tableStart + (1 << tableBits)
                for index in stride(from: tableStart + (reversed >> rootBits), to: tableEnd, by: 1 << (length - rootBits)) {
                    entries[index] = entry
                }
            }
        }
    }
}

extension BrotliDecoder.BitReader {
    /// The next symbol in code `index` of `codes`: one look-up, two for a code
    /// longer than the root table's bits.
    @inline(__always)
    mutating func decode(_ codes: BrotliDecoder.PrefixCodes, _ index: Int) throws(BrotliDecoder.Failure) -> Int {
        let bits = peek()
        let start = codes.starts[index]
        var entry = codes.entries[start + Int(truncatingIfNeeded: bits & 0xFF)]
        if entry & 0x100 != 0 {
            let tableBits = UInt64(entry & 0xFF)
            let subIndex = Int(truncatingIfNeeded: (bits >> UInt64(BrotliDecoder.PrefixCodes.rootBits)) & ((1 << tableBits) - 1))
            entry = codes.entries[start + Int(entry >> 16) + subIndex]
        }
        // Near the end fewer bits may be left than the code's: those missing were
        // zeros in the look-up, and `drop` throws for them.
        try drop(Int(entry & 0xFF))
        return Int(entry >> 16)
    }
}
