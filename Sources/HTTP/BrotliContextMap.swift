extension BrotliDecoder {
    /// RFC 7932 §7.3: a context map, which names the prefix code for each
    /// (block type, context ID): 64 IDs per literal block type, 4 per distance
    /// block type. With one tree it is all zeros and not in the stream.
    static func readContextMap(_ reader: inout BitReader, size: Int, trees: Int) throws(Failure) -> [UInt8] {
        var map = [UInt8](repeating: 0, count: size)
        guard trees >= 2 else { return map }
        // RLEMAX: 0 in one bit, else 1...16 in five; symbols 1...RLEMAX are runs of zeros.
        let runCodes = try reader.take(1) == 1 ? try reader.take(4) + 1 : 0
        var codes = PrefixCodes(capacity: 1)
        try codes.read(&reader, alphabetSize: trees + runCodes)
        var index = 0
        // Each turn fills at least one entry.
        while index < size {
            let symbol = try reader.decode(codes, 0)
            if symbol == 0 {
                index += 1
            } else if symbol <= runCodes {
                // A run of 2^symbol to 2^(symbol + 1) - 1 zeros (the map starts zeroed).
                let run = (1 << symbol) + (try reader.take(symbol))
                guard run <= size - index else {
                    throw Failure(reason: "brotli: a context map's run of zeros passes its \(size) entries")
                }
                index += run
            } else {
                // At most trees - 1 (≤ 255): the alphabet has trees + runCodes symbols.
                map[index] = UInt8(truncatingIfNeeded: symbol - runCodes)
                index += 1
            }
        }
        if try reader.take(1) == 1 { inverseMoveToFront(&map) }
        return map
    }

    /// §7.3's inverse move-to-front transform. Each value is an index into a
    /// list that starts 0...255 and moves each value it gives to the front;
    /// indexes below `trees` only ever find values below `trees`.
    private static func inverseMoveToFront(_ values: inout [UInt8]) {
        var list = [UInt8](repeating: 0, count: 256)
        for index in 0 ..< 256 { list[index] = UInt8(index) }
        for position in values.indices {
            let index = Int(values[position])
            let value = list[index]
            values[position] = value
            if index > 0 {
                for slot in stride(from: index, to: 0, by: -1) { list[slot] = list[slot - 1] }
                list[0] = value
            }
        }
    }
}
