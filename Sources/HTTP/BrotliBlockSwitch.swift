extension BrotliDecoder {
    /// One block category's types and counts (RFC 7932 §6): which block type
    /// the next literal, insert-and-copy length or distance belongs to, and
    /// how many more do before the stream names the next type.
    struct BlockSwitch {
        /// NBLTYPES: 1...256.
        let typeCount: Int
        private var typeCodes = PrefixCodes(capacity: 0)
        private var countCodes = PrefixCodes(capacity: 0)
        private(set) var current = 0
        private var previous = 1
        /// Elements left in the current block: with one type, more than a meta-block holds.
        var left = Int.max

        /// §9.2: NBLTYPES and, for two types or more, the codes for types and
        /// counts and the first block's count (its type is 0).
        init(_ reader: inout BitReader) throws(Failure) {
            typeCount = try Self.readCount(&reader)
            guard typeCount >= 2 else { return }
            typeCodes = PrefixCodes(capacity: 1)
            try typeCodes.read(&reader, alphabetSize: typeCount + 2)
            countCodes = PrefixCodes(capacity: 1)
            try countCodes.read(&reader, alphabetSize: 26)
            left = try readBlockCount(&reader)
        }

        /// §6: a block-switch command, read when the current block has run out.
        mutating func next(_ reader: inout BitReader) throws(Failure) {
            let symbol = try reader.decode(typeCodes, 0)
            // 0: the type before this one; 1: this one plus one (wrapping); n: n - 2.
            // The code's alphabet has typeCount + 2 symbols, so n - 2 is a type.
            let type = switch symbol {
            case 0: previous
            case 1: current + 1 == typeCount ? 0 : current + 1
            default: symbol - 2
            }
            previous = current
            current = type
            left = try readBlockCount(&reader)
        }

        /// §6: a block count code and its extra bits, 1...16793840.
        private func readBlockCount(_ reader: inout BitReader) throws(Failure) -> Int {
            let code = try reader.decode(countCodes, 0)
            return Tables.blockCountBase[code] + (try reader.take(Tables.blockCountExtraBits[code]))
        }

        /// §9.2's code for NBLTYPES and NTREES (1...256): 0 for 1, else 3 bits n
        /// and, for n > 0, n more bits: 2 when n is 0, else 2^n + 1 + those bits.
        static func readCount(_ reader: inout BitReader) throws(Failure) -> Int {
            if try reader.take(1) == 0 { return 1 }
            let bits = try reader.take(3)
            if bits == 0 { return 2 }
            return (1 << bits) + 1 + (try reader.take(bits))
        }
    }
}
