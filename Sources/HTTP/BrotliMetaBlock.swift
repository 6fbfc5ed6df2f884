extension BrotliDecoder.Stream {
    // An extension of a nested type does not see its outer type's names.
    typealias Failure = BrotliDecoder.Failure
    typealias BlockSwitch = BrotliDecoder.BlockSwitch
    typealias PrefixCodes = BrotliDecoder.PrefixCodes
    typealias Tables = BrotliDecoder.Tables
    typealias Transform = BrotliDecoder.Transform
    typealias StaticDictionary = BrotliDecoder.StaticDictionary

    /// One compressed meta-block of `length` bytes (RFC 7932 §9.2, §9.3): its
    /// header (block types, distance parameters, context modes and maps, prefix
    /// codes), then commands until `length` bytes have come out. Room for them
    /// was reserved by the caller.
    mutating func decodeCompressed(length: Int) throws(Failure) {
        var literalBlocks = try BlockSwitch(&reader)
        var commandBlocks = try BlockSwitch(&reader)
        var distanceBlocks = try BlockSwitch(&reader)

        // §4: NPOSTFIX (0...3) and NDIRECT (0...120: four bits << NPOSTFIX).
        let postfixBits = try reader.take(2)
        let directCodes = try reader.take(4) << postfixBits
        // §7.1: the context mode of each literal block type, as its offset in `Tables.context`.
        var contextModes = [Int](repeating: 0, count: literalBlocks.typeCount)
        for type in contextModes.indices { contextModes[type] = try reader.take(2) * 512 }

        let literalTrees = try BlockSwitch.readCount(&reader)
        let literalMap = try BrotliDecoder.readContextMap(&reader, size: literalBlocks.typeCount << 6, trees: literalTrees)
        let distanceTrees = try BlockSwitch.readCount(&reader)
        let distanceMap = try BrotliDecoder.readContextMap(&reader, size: distanceBlocks.typeCount << 2, trees: distanceTrees)

        var literalCodes = PrefixCodes(capacity: literalTrees)
        for _ in 0 ..< literalTrees { try literalCodes.read(&reader, alphabetSize: 256) }
        var commandCodes = PrefixCodes(capacity: commandBlocks.typeCount)
        for _ in 0 ..< commandBlocks.typeCount { try commandCodes.read(&reader, alphabetSize: 704) }
        var distanceCodes = PrefixCodes(capacity: distanceTrees)
        let distanceAlphabet = 16 + directCodes + (48 << postfixBits)
        for _ in 0 ..< distanceTrees { try distanceCodes.read(&reader, alphabetSize: distanceAlphabet) }

        let insertAndCopy = Tables.insertAndCopy
        let context = Tables.context
        let start = output.count
        let end = start + length
        output.append(contentsOf: repeatElement(0, count: length))
        var position = start
        // §7.1: the literal context is the last two bytes of the stream so far.
        var last = position >= 1 ? output[position - 1] : 0
        var beforeLast = position >= 2 ? output[position - 2] : 0
        var literalMode = contextModes[0]

        // §9.3: each command writes a byte or more, or reads a bit or more (an
        // empty one throws), so the loop ends with the meta-block or the input.
        while position < end {
            let commandStart = reader.bitsRead
            let commandPosition = position
            if commandBlocks.left == 0 { try commandBlocks.next(&reader) }
            commandBlocks.left -= 1
            let command = insertAndCopy[try reader.decode(commandCodes, commandBlocks.current)]
            let insertLength = Int(command.insertBase) + (try reader.take(Int(command.insertExtraBits)))
            let copyLength = Int(command.copyBase) + (try reader.take(Int(command.copyExtraBits)))
            guard insertLength <= end - position else {
                throw Failure(reason: "brotli: a command inserts \(insertLength) literals past the meta-block's end")
            }

            // The literals, each with the prefix code its block type and context pick.
            for _ in 0 ..< insertLength {
                if literalBlocks.left == 0 {
                    try literalBlocks.next(&reader)
                    literalMode = contextModes[literalBlocks.current]
                }
                literalBlocks.left -= 1
                let contextID = context[literalMode + Int(last)] | context[literalMode + 256 + Int(beforeLast)]
                let tree = Int(literalMap[literalBlocks.current << 6 | Int(contextID)])
                let literal = UInt8(truncatingIfNeeded: try reader.decode(literalCodes, tree))
                output[position] = literal
                position += 1
                beforeLast = last
                last = literal
            }
            // §9.3: a command that fills the meta-block with its literals has no
            // distance, and its copy length means nothing.
            if position == end { break }

            // §4: the distance, the last one again or a symbol read in the
            // distance block type's code for this copy length (§7.2).
            let distance: Int
            let symbol: Int
            if command.reusesLastDistance {
                symbol = 0
                distance = distances.last
            } else {
                if distanceBlocks.left == 0 { try distanceBlocks.next(&reader) }
                distanceBlocks.left -= 1
                let contextID = copyLength > 4 ? 3 : copyLength - 2
                symbol = try reader.decode(distanceCodes, Int(distanceMap[distanceBlocks.current << 2 | contextID]))
                distance = try resolveDistance(symbol, postfixBits: postfixBits, directCodes: directCodes)
            }

            let reach = min(windowSize, position)
            if distance > reach {
                position = try copyFromDictionary(distance - reach - 1, length: copyLength, at: position, end: end)
            } else {
                // Symbol 0 repeats the last distance, which is in the ring already (§4).
                if symbol != 0 { distances.push(distance) }
                guard copyLength <= end - position else {
                    throw Failure(reason: "brotli: a command copies \(copyLength) bytes past the meta-block's end")
                }
                copyBack(distance: distance, length: copyLength, at: position)
                position += copyLength
            }
            if position == commandPosition {
                // Only a dictionary word that its transform empties writes nothing.
                guard reader.bitsRead != commandStart else {
                    throw Failure(reason: "brotli: a command that reads no bits writes no bytes (it would repeat forever)")
                }
            }
            last = position >= 1 ? output[position - 1] : 0
            beforeLast = position >= 2 ? output[position - 2] : 0
        }
    }

    /// §4: a distance symbol (16 short codes, NDIRECT direct ones, then codes
    /// with 1...24 extra bits) as a distance back.
    @inline(__always)
    private mutating func resolveDistance(_ symbol: Int, postfixBits: Int, directCodes: Int) throws(Failure) -> Int {
        if symbol < 16 {
            guard let distance = distances.shortCode(symbol) else {
                throw Failure(reason: "brotli: distance code \(symbol) comes to a distance of zero or less")
            }
            return distance
        }
        if symbol < 16 + directCodes { return symbol - 15 }
        let code = symbol - directCodes - 16
        let extraBits = 1 + (code >> (postfixBits + 1))
        let high = code >> postfixBits
        let low = code & ((1 << postfixBits) - 1)
        let offset = ((2 + (high & 1)) << extraBits) - 4
        return ((offset + (try reader.take(extraBits))) << postfixBits) + low + directCodes + 1
    }

    /// LZ77: `length` bytes from `distance` back, which may overlap what the
    /// copy writes (a distance shorter than the length repeats a pattern).
    /// The caller checked `distance <= position` and `position + length <= output.count`.
    @inline(__always)
    private mutating func copyBack(distance: Int, length: Int, at position: Int) {
        let from = position - distance
        if distance >= length {
            // Apart: one memory move (the bounds checked again before it).
            let moved = output.withUnsafeMutableBufferPointer { buffer in
                guard let base = buffer.baseAddress, from >= 0, position + length <= buffer.count else { return false }
                (base + position).update(from: base + from, count: length)
                return true
            }
            if moved { return }
        }
        // Overlapping: byte by byte, each byte read after it was written.
        for index in 0 ..< length { output[position + index] = output[from + index] }
    }

    /// §8: a distance past what the window holds names a static dictionary
    /// word (`wordID` past the farthest distance) of the copy's length, and one
    /// of Appendix B's transforms. Returns where the output goes on.
    private mutating func copyFromDictionary(_ wordID: Int, length: Int, at position: Int, end: Int) throws(Failure) -> Int {
        guard length >= 4, length <= 24 else {
            throw Failure(reason: "brotli: a distance reaches past the window, and a copy of \(length) bytes is no dictionary word")
        }
        let sizeBits = StaticDictionary.sizeBits[length]
        let index = wordID & ((1 << sizeBits) - 1)
        let transformID = wordID >> sizeBits
        guard transformID < Transform.all.count else {
            throw Failure(reason: "brotli: a distance reaches past the window and the dictionary (transform \(transformID))")
        }
        let transform = Transform.all[transformID]
        let count = transform.outputLength(wordLength: length)
        guard count <= end - position else {
            throw Failure(reason: "brotli: a dictionary word passes the meta-block's end")
        }
        let wordStart = StaticDictionary.offsets[length] + index * length
        guard StaticDictionary.bytes.count == StaticDictionary.size else { throw Failure(reason: "brotli: the static dictionary is missing") }
        transform.apply(word: wordStart ..< wordStart + length, dictionary: StaticDictionary.bytes, to: &output, at: position)
        return position + count
    }
}
