import Testing
@testable import HTTP

/// RFC 7692 §7.2.2: what the receiver appends to a message's payload before inflating it.
private let syncMarker: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

/// Inflates `input` as one call, returning what was appended and the total length.
private func inflate(_ inflater: inout Inflater, _ input: [UInt8], limit: Int = .max) throws(Inflater.Failure) -> (output: [UInt8], total: Int) {
    var output: [UInt8] = []
    let result = input.withUnsafeBytes { raw in
        Result { () throws(Inflater.Failure) in try inflater.inflate(raw, limit: limit, into: &output) }
    }
    let total = try result.get()
    return (output, total)
}

/// The vectors below were made with Python's zlib (raw DEFLATE, windowBits -15):
/// `c = zlib.compressobj(9, zlib.DEFLATED, -15); c.compress(data) + c.flush(mode)`.
private enum Vectors {
    /// "hello", flushed with Z_FINISH: one final fixed-Huffman block.
    static let hello: [UInt8] = [0xCB, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]

    /// "stored bytes" at level 0, flushed with Z_SYNC_FLUSH: a stored block, then the
    /// empty stored block that ends in 00 00 FF FF (as RFC 7692's receiver restores it).
    static let stored: [UInt8] = [
        0x00, 0x0C, 0x00, 0xF3, 0xFF, 0x73, 0x74, 0x6F, 0x72, 0x65, 0x64, 0x20, 0x62, 0x79, 0x74, 0x65,
        0x73, 0x00, 0x00, 0x00, 0xFF, 0xFF,
    ]

    /// `repeatedText`, flushed with Z_FINISH: one final dynamic-Huffman block.
    static let repeatedText = bytes(
        "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. "
            + "The quick brown fox jumps over the lazy dog. A WebSocket message, a WebSocket message, "
            + "compressed with permessage-deflate (RFC 7692) over and over and over again. "
            + "0123456789012345678901234567890123456789"
    )
    static let dynamic: [UInt8] = [
        0xB5, 0x8D, 0x4D, 0x0A, 0xC2, 0x30, 0x18, 0x44, 0xAF, 0x32, 0x4B, 0x05, 0x2D, 0x5A, 0xB5, 0xB5,
        0x4B, 0x11, 0x3C, 0x80, 0x16, 0x5C, 0xA7, 0xC9, 0xD7, 0x34, 0xFD, 0x49, 0x62, 0x92, 0x5A, 0xF5,
        0xF4, 0x16, 0x74, 0x25, 0xE2, 0xCE, 0xDD, 0x9B, 0x79, 0x03, 0x93, 0x57, 0x84, 0x4B, 0xAF, 0x78,
        0x83, 0xC2, 0x99, 0x41, 0xA3, 0x34, 0x37, 0xD4, 0x7D, 0x67, 0x3D, 0xCC, 0x95, 0x1C, 0xC2, 0xA8,
        0x5B, 0xF6, 0xB8, 0x43, 0x18, 0x19, 0x21, 0xFF, 0xDB, 0x78, 0x87, 0x33, 0x15, 0x27, 0xC3, 0x1B,
        0x0A, 0xE8, 0xC8, 0x7B, 0x26, 0x69, 0x06, 0xF6, 0xAD, 0xE4, 0xA6, 0xB3, 0x6E, 0x0C, 0x24, 0x30,
        0xA8, 0x50, 0xC1, 0x92, 0x7B, 0xBB, 0xB9, 0xA0, 0xB2, 0x65, 0x81, 0x30, 0x39, 0x1E, 0xF6, 0x48,
        0x93, 0x2C, 0x9E, 0xBE, 0xAE, 0x98, 0x16, 0x9F, 0x20, 0x99, 0xD2, 0x11, 0x16, 0xCB, 0x78, 0xB5,
        0xDE, 0x24, 0xE9, 0x36, 0xFB, 0x4D, 0x4F,
    ]

    /// Two messages from one compressor, each flushed with Z_SYNC_FLUSH and its
    /// 00 00 FF FF stripped, as a permessage-deflate sender puts them in frames.
    /// The second is mostly a back-reference into the first.
    static let subscribePrices = bytes(#"{"type":"subscribe","channel":"prices","symbols":["BTC-USD","ETH-USD","SOL-USD"]}"#)
    static let subscribeTrades = bytes(#"{"type":"subscribe","channel":"trades","symbols":["BTC-USD","ETH-USD","SOL-USD"]}"#)
    static let firstPayload: [UInt8] = [
        0xAA, 0x56, 0x2A, 0xA9, 0x2C, 0x48, 0x55, 0xB2, 0x52, 0x2A, 0x2E, 0x4D, 0x2A, 0x4E, 0x2E, 0xCA,
        0x4C, 0x4A, 0x55, 0xD2, 0x51, 0x4A, 0xCE, 0x48, 0xCC, 0xCB, 0x4B, 0xCD, 0x01, 0x8A, 0x16, 0x14,
        0x65, 0x26, 0xA7, 0x16, 0x03, 0x85, 0x8A, 0x2B, 0x73, 0x93, 0xF2, 0x73, 0x8A, 0x95, 0xAC, 0xA2,
        0x95, 0x9C, 0x42, 0x9C, 0x75, 0x43, 0x83, 0x5D, 0x80, 0x82, 0xAE, 0x21, 0x1E, 0x50, 0x56, 0xB0,
        0xBF, 0x0F, 0x98, 0x15, 0x5B, 0x0B, 0x00,
    ]
    static let secondPayload: [UInt8] = [0xAA, 0xC6, 0x6F, 0x60, 0x49, 0x51, 0x62, 0x0A, 0x69, 0x06, 0x02, 0x00]

    /// "hello world" compressed against the preset dictionary "hello world": a
    /// match 11 bytes back after one literal (zlib: "invalid distance too far back").
    static let dictionaryMatch: [UInt8] = [0xCB, 0x40, 0x30, 0x01]

    /// `windowKeptA` flushed with Z_FINISH (a final block), then `windowKeptB` from a
    /// new compressor primed with it (zdict), flushed with Z_SYNC_FLUSH: a sender that
    /// ends each message's stream but keeps its window.
    static let windowKeptA = bytes("permessage-deflate keeps the window, ")
    static let windowKeptB = bytes("the window keeps permessage-deflate")
    static let finalPayload: [UInt8] = [
        0x2B, 0x48, 0x2D, 0xCA, 0x4D, 0x2D, 0x2E, 0x4E, 0x4C, 0x4F, 0xD5, 0x4D, 0x49, 0x4D, 0xCB, 0x49,
        0x2C, 0x49, 0x55, 0xC8, 0x4E, 0x4D, 0x2D, 0x28, 0x56, 0x28, 0xC9, 0x48, 0x55, 0x28, 0xCF, 0xCC,
        0x4B, 0xC9, 0x2F, 0xD7, 0x51, 0x00, 0x00,
    ]
    static let afterFinalPayload: [UInt8] = [0x42, 0xB0, 0xA1, 0x92, 0x05, 0x18, 0xBA, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF]
}

@Suite struct InflaterTests {
    // MARK: Python zlib's vectors

    @Test func aStoredBlock() throws {
        var inflater = Inflater()
        let (output, total) = try inflate(&inflater, Vectors.stored)
        #expect(output == bytes("stored bytes"))
        #expect(total == 12)
    }

    @Test func aFixedHuffmanBlock() throws {
        var inflater = Inflater()
        let (output, total) = try inflate(&inflater, Vectors.hello)
        #expect(output == bytes("hello"))
        #expect(total == 5)
    }

    @Test func aDynamicHuffmanBlock() throws {
        var inflater = Inflater()
        let (output, total) = try inflate(&inflater, Vectors.dynamic)
        #expect(output == Vectors.repeatedText)
        #expect(total == Vectors.repeatedText.count)
    }

    @Test func emptyInputIsNothing() throws {
        var inflater = Inflater()
        #expect(try inflate(&inflater, []) == ([], 0))
        // An empty message: zlib's Z_SYNC_FLUSH of nothing is 00 00 00 FF FF, sent as 0x00.
        #expect(try inflate(&inflater, [0x00] + syncMarker) == ([], 0))
    }

    @Test func aMessageRefersBackIntoTheOneBefore() throws {
        var inflater = Inflater()
        #expect(try inflate(&inflater, Vectors.firstPayload + syncMarker).output == Vectors.subscribePrices)
        #expect(try inflate(&inflater, Vectors.secondPayload + syncMarker).output == Vectors.subscribeTrades)

        // Without the first message's window the second cannot be read (no_context_takeover's reset, a new inflater).
        var fresh = Inflater()
        #expect(throws: Inflater.Failure(reason: "a distance of 81 reaches before the 1 bytes in the window")) {
            try inflate(&fresh, Vectors.secondPayload + syncMarker)
        }
        var resetOne = Inflater()
        _ = try inflate(&resetOne, Vectors.firstPayload + syncMarker)
        resetOne.reset()
        #expect(throws: Inflater.Failure(reason: "a distance of 81 reaches before the 1 bytes in the window")) {
            try inflate(&resetOne, Vectors.secondPayload + syncMarker)
        }
    }

    @Test func aFinalBlockEndsTheStreamButNotTheWindow() throws {
        var inflater = Inflater()
        // zlib's Z_FINISH ends with the final block: the 00 00 FF FF the receiver appends is left alone.
        #expect(try inflate(&inflater, Vectors.finalPayload + syncMarker).output == Vectors.windowKeptA)
        #expect(try inflate(&inflater, Vectors.afterFinalPayload).output == Vectors.windowKeptB)
        // RFC 7692 §7.2.3.4: a final block, then 0x00 that the 00 00 FF FF makes an empty stored block.
        var followed = Inflater()
        #expect(try inflate(&followed, Vectors.finalPayload + [0x00] + syncMarker).output == Vectors.windowKeptA)
        #expect(try inflate(&followed, Vectors.afterFinalPayload).output == Vectors.windowKeptB)
        // Within one call too: a new stream starts on the byte after the final block.
        var oneCall = Inflater()
        #expect(try inflate(&oneCall, Vectors.finalPayload + Vectors.afterFinalPayload).output == Vectors.windowKeptA + Vectors.windowKeptB)
        // Anything else after the final block is read as a stream, and bytes that are none throw.
        var junk = Inflater()
        #expect(throws: Inflater.Failure(reason: "reserved block type 3")) {
            try inflate(&junk, Vectors.finalPayload + [0xFF] + syncMarker)
        }
    }

    @Test func theRFCsHelloExamples() throws {
        // RFC 7692 §7.2.3.1, §7.2.3.2 (the second "Hello" with context takeover) and §7.2.3.4.
        var inflater = Inflater()
        let hello = bytes("Hello")
        #expect(try inflate(&inflater, [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00] + syncMarker).output == hello)
        #expect(try inflate(&inflater, [0xF2, 0x00, 0x11, 0x00, 0x00] + syncMarker).output == hello)
        var final = Inflater()
        #expect(try inflate(&final, [0xF3, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00, 0x00] + syncMarker).output == hello)
        // §7.2.3.3: "Hello" in a stored block.
        var stored = Inflater()
        #expect(try inflate(&stored, [0x00, 0x05, 0x00, 0xFA, 0xFF, 0x48, 0x65, 0x6C, 0x6C, 0x6F, 0x00] + syncMarker).output == hello)
    }

    // MARK: The limit and the maximum

    @Test func theLimitCutsTheOutputNotTheLength() throws {
        for limit in [0, 1, 10, 292, 293, 1000] {
            var inflater = Inflater()
            let (output, total) = try inflate(&inflater, Vectors.dynamic, limit: limit)
            #expect(output == Array(Vectors.repeatedText.prefix(limit)))
            #expect(total == 293)
        }
    }

    @Test func theWindowHoldsWhatTheLimitCut() throws {
        var inflater = Inflater()
        let (first, firstTotal) = try inflate(&inflater, Vectors.firstPayload + syncMarker, limit: 0)
        #expect(first.isEmpty && firstTotal == Vectors.subscribePrices.count)
        #expect(try inflate(&inflater, Vectors.secondPayload + syncMarker).output == Vectors.subscribeTrades)
    }

    @Test func outputPastTheMaximumThrows() throws {
        var inflater = Inflater(windowBits: 15, outputMaximum: 100)
        var output: [UInt8] = []
        let result = Vectors.dynamic.withUnsafeBytes { raw in
            Result { () throws(Inflater.Failure) in try inflater.inflate(raw, limit: 10, into: &output) }
        }
        #expect(throws: Inflater.Failure(reason: "output too large (over 100 bytes)")) { try result.get() }
        #expect(output.count <= 10)
        // The maximum is per call: exactly at it is fine.
        var exact = Inflater(windowBits: 15, outputMaximum: 293)
        #expect(try inflate(&exact, Vectors.dynamic).total == 293)
    }

    @Test func aBombOfRunsIsCountedNotFollowed() throws {
        // A fixed block of one literal and 10 000 matches of 258 bytes at distance 1: 2.5 MB from 3 KB.
        var writer = BitWriter()
        writer.header(final: true, type: 1)
        writer.writeFixedSymbol(0x61)
        for _ in 0 ..< 10000 {
            writer.writeFixedSymbol(285)
            writer.writeCode(0, length: 5)
        }
        writer.writeFixedSymbol(256)
        var inflater = Inflater(windowBits: 15, outputMaximum: 1 << 20)
        #expect(throws: Inflater.Failure(reason: "output too large (over 1048576 bytes)")) {
            try inflate(&inflater, writer.bytes, limit: 16)
        }
        var unbounded = Inflater()
        let (output, total) = try inflate(&unbounded, writer.bytes, limit: 16)
        #expect(output == [UInt8](repeating: 0x61, count: 16))
        #expect(total == 1 + 10000 * 258)
    }

    // MARK: The window

    @Test func aDistanceBeyondTheWindowThrows() throws {
        // 600 distinct bytes, then a match 600 back: fine in 32 KiB, too far for 512 bytes.
        var data: [UInt8] = []
        for index in 0 ..< 600 { data.append(UInt8(truncatingIfNeeded: index * 7 + index / 256)) }
        var writer = BitWriter()
        writer.header(final: true, type: 1)
        for byte in data { writer.writeFixedSymbol(Int(byte)) }
        writer.writeFixedMatch(length: 10, distance: 600)
        writer.writeFixedSymbol(256)

        var wide = Inflater(windowBits: 15)
        #expect(try inflate(&wide, writer.bytes).output == data + data.prefix(10))
        var narrow = Inflater(windowBits: 9)
        #expect(throws: Inflater.Failure(reason: "a distance of 600 reaches before the 512 bytes in the window")) {
            try inflate(&narrow, writer.bytes)
        }
    }

    @Test func windowBitsAreClamped() {
        #expect(Inflater(windowBits: 3).windowBits == 8)
        #expect(Inflater(windowBits: 40).windowBits == 15)
    }

    // MARK: Malformed input

    @Test func reservedBlockType() {
        var inflater = Inflater()
        #expect(throws: Inflater.Failure(reason: "reserved block type 3")) { try inflate(&inflater, [0x07, 0x00]) }
    }

    @Test func storedLengthAndComplementDisagree() {
        var inflater = Inflater()
        #expect(throws: Inflater.Failure(reason: "a stored block's LEN 5 is not the complement of NLEN 65274")) {
            try inflate(&inflater, [0x01, 0x05, 0x00, 0xFA, 0xFE] + bytes("hello"))
        }
    }

    @Test func aDistanceBeforeTheOutput() {
        var inflater = Inflater()
        // zlib's vector: the literal "h", then 10 bytes from 11 back.
        #expect(throws: Inflater.Failure(reason: "a distance of 11 reaches before the 1 bytes in the window")) {
            try inflate(&inflater, Vectors.dictionaryMatch)
        }
        var writer = BitWriter()
        writer.header(final: true, type: 1)
        writer.writeFixedMatch(length: 3, distance: 1)
        writer.writeFixedSymbol(256)
        var atStart = Inflater()
        #expect(throws: Inflater.Failure(reason: "a distance of 1 reaches before the 0 bytes in the window")) {
            try inflate(&atStart, writer.bytes)
        }
    }

    @Test func everyCutOfABlockIsTruncated() throws {
        for vector in [Vectors.hello, Vectors.dynamic, Array(Vectors.stored.dropLast(5))] {
            for length in 1 ..< vector.count {
                var inflater = Inflater()
                #expect(throws: Inflater.Failure(reason: "truncated input"), "\(length) of \(vector.count)") {
                    try inflate(&inflater, Array(vector.prefix(length)))
                }
            }
        }
        // A message as sent (before 00 00 FF FF is appended) ends with the fixed
        // block's end in its last byte: the empty stored block's header bits there
        // are read as padding, and the message is whole. Every other cut is truncated.
        let message = Vectors.firstPayload + syncMarker
        for length in 1 ..< message.count {
            var inflater = Inflater()
            if length == Vectors.firstPayload.count {
                #expect(try inflate(&inflater, Array(message.prefix(length))).output == Vectors.subscribePrices)
                continue
            }
            #expect(throws: Inflater.Failure(reason: "truncated input"), "\(length) of \(message.count)") {
                try inflate(&inflater, Array(message.prefix(length)))
            }
        }
    }

    @Test func aStoredBlockLongerThanTheInput() {
        var inflater = Inflater()
        #expect(throws: Inflater.Failure(reason: "truncated input")) {
            try inflate(&inflater, [0x00, 0x05, 0x00, 0xFA, 0xFF] + bytes("hell"))
        }
    }

    @Test func theFailureSticks() throws {
        var inflater = Inflater()
        let failure = Inflater.Failure(reason: "reserved block type 3")
        #expect(throws: failure) { try inflate(&inflater, [0x07]) }
        #expect(inflater.failure == failure)
        #expect(throws: failure) { try inflate(&inflater, Vectors.hello) }
        inflater.reset()
        #expect(throws: failure) { try inflate(&inflater, Vectors.hello) }
    }

    @Test func symbolsTheFixedCodeHasButTheDataMayNotUse() {
        var literal = BitWriter()
        literal.header(final: true, type: 1)
        literal.writeFixedSymbol(286)
        var inflater = Inflater()
        #expect(throws: Inflater.Failure(reason: "literal/length symbol 286 does not exist")) { try inflate(&inflater, literal.bytes) }

        var distance = BitWriter()
        distance.header(final: true, type: 1)
        distance.writeFixedSymbol(0x61)
        distance.writeFixedSymbol(257)
        distance.writeCode(30, length: 5)
        var second = Inflater()
        #expect(throws: Inflater.Failure(reason: "distance symbol 30 does not exist")) { try inflate(&second, distance.bytes) }
    }

    /// A dynamic block's header (RFC 1951 §3.2.7) by hand: HLIT, HDIST, the code
    /// length code's lengths in their order (given as symbol: length), then `body`.
    private func dynamicBlock(literalLengthCount: Int = 257, distanceCount: Int = 1, codeLengths: [Int: Int], body: (inout BitWriter, [Int: (code: Int, length: Int)]) -> Void) -> [UInt8] {
        let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
        var lengths = [Int](repeating: 0, count: 19)
        for (symbol, length) in codeLengths { lengths[symbol] = length }
        let count = max(4, (order.lastIndex { lengths[$0] != 0 } ?? 0) + 1)
        var writer = BitWriter()
        writer.header(final: true, type: 2)
        writer.write(literalLengthCount - 257, bits: 5)
        writer.write(distanceCount - 1, bits: 5)
        writer.write(count - 4, bits: 4)
        for index in 0 ..< count { writer.write(lengths[order[index]], bits: 3) }
        let codes = canonicalCodes(lengths)
        var table: [Int: (code: Int, length: Int)] = [:]
        for symbol in 0 ..< 19 where lengths[symbol] != 0 { table[symbol] = (codes[symbol], lengths[symbol]) }
        body(&writer, table)
        return writer.bytes
    }

    @Test func badCodeLengthCodes() {
        let cases: [(String, [UInt8])] = [
            ("an oversubscribed code length code", dynamicBlock(codeLengths: [16: 1, 17: 1, 18: 1]) { _, _ in }),
            ("an incomplete code length code", dynamicBlock(codeLengths: [0: 1]) { _, _ in }),
            ("an incomplete code length code", dynamicBlock(codeLengths: [:]) { _, _ in }),
            ("287 literal/length codes (at most 286)", dynamicBlock(literalLengthCount: 287, codeLengths: [0: 1, 18: 1]) { _, _ in }),
            ("a repeat of the previous code length with none before it", dynamicBlock(codeLengths: [0: 1, 16: 1]) { writer, codes in
                writer.writeCode(codes[16]!.code, length: 1)
                writer.write(0, bits: 2)
            }),
            ("code lengths repeated past the 258 codes", dynamicBlock(codeLengths: [0: 1, 18: 1]) { writer, codes in
                writer.writeCode(codes[18]!.code, length: 1)
                writer.write(127, bits: 7)
                writer.writeCode(codes[18]!.code, length: 1)
                writer.write(127, bits: 7)
            }),
            ("no code for the end of the block", dynamicBlock(codeLengths: [0: 1, 18: 1]) { writer, codes in
                writer.writeCode(codes[18]!.code, length: 1)
                writer.write(127, bits: 7)
                writer.writeCode(codes[18]!.code, length: 1)
                writer.write(120 - 11, bits: 7)
            }),
        ]
        for (reason, input) in cases {
            var inflater = Inflater()
            #expect(throws: Inflater.Failure(reason: reason)) { try inflate(&inflater, input) }
        }
    }

    /// Code lengths for 258 symbols (HLIT 257, HDIST 1): `literal0` for literal 0,
    /// `endOfBlock` for 256, `distance0` for distance 0, `extra` for literal 1; zeros elsewhere.
    private func lengthsBlock(literal0: Int, literal1: Int = 0, endOfBlock: Int, distance0: Int, body: (inout BitWriter) -> Void = { _ in }) -> [UInt8] {
        // The code length code: 0, 1, 2 and 18, two bits each.
        dynamicBlock(codeLengths: [0: 2, 1: 2, 2: 2, 18: 2]) { writer, codes in
            func length(_ value: Int) { writer.writeCode(codes[value]!.code, length: 2) }
            length(literal0)
            length(literal1)
            writer.writeCode(codes[18]!.code, length: 2)
            writer.write(138 - 11, bits: 7)
            writer.writeCode(codes[18]!.code, length: 2)
            writer.write(116 - 11, bits: 7)
            length(endOfBlock)
            length(distance0)
            body(&writer)
        }
    }

    @Test func badLiteralLengthAndDistanceCodes() throws {
        var inflater = Inflater()
        #expect(throws: Inflater.Failure(reason: "an incomplete literal/length code")) {
            try inflate(&inflater, lengthsBlock(literal0: 1, endOfBlock: 2, distance0: 0))
        }
        inflater = Inflater()
        #expect(throws: Inflater.Failure(reason: "an oversubscribed literal/length code")) {
            try inflate(&inflater, lengthsBlock(literal0: 1, literal1: 1, endOfBlock: 1, distance0: 0))
        }
        inflater = Inflater()
        #expect(throws: Inflater.Failure(reason: "an incomplete distance code")) {
            try inflate(&inflater, lengthsBlock(literal0: 1, endOfBlock: 1, distance0: 2))
        }
    }

    @Test func theCodesTheRFCAllowsIncomplete() throws {
        // Only the end of the block, on a single one-bit code (its code is 0); no distance codes.
        var inflater = Inflater()
        #expect(try inflate(&inflater, lengthsBlock(literal0: 0, endOfBlock: 1, distance0: 0) { $0.write(0, bits: 1) }) == ([], 0))
        // Literal 0 (code 0) and the end of the block (code 1), a single one-bit distance code.
        inflater = Inflater()
        #expect(try inflate(&inflater, lengthsBlock(literal0: 1, endOfBlock: 1, distance0: 1) { writer in
            writer.write(0, bits: 1)
            writer.write(1, bits: 1)
        }) == ([0], 1))
        // The single code's unused bit pattern (1) is no code.
        inflater = Inflater()
        #expect(throws: Inflater.Failure(reason: "an invalid literal/length code")) {
            try inflate(&inflater, lengthsBlock(literal0: 0, endOfBlock: 1, distance0: 0) { $0.write(0xFF, bits: 8) })
        }
    }

    @Test func aMatchWithNoDistanceCode() throws {
        // Literal/length symbols 256 (code 0) and 257 (code 1); the distance code is empty.
        let block = dynamicBlock(literalLengthCount: 258, codeLengths: [0: 1, 1: 2, 18: 2]) { writer, codes in
            for count in [138, 118] {
                writer.writeCode(codes[18]!.code, length: 2)
                writer.write(count - 11, bits: 7)
            }
            writer.writeCode(codes[1]!.code, length: 2)
            writer.writeCode(codes[1]!.code, length: 2)
            writer.writeCode(codes[0]!.code, length: 1)
            writer.write(1, bits: 1)
            writer.write(0xFF, bits: 8)
        }
        var inflater = Inflater()
        #expect(throws: Inflater.Failure(reason: "an invalid distance code")) { try inflate(&inflater, block) }
    }

    // MARK: Round trips through the test's own compressor

    @Test(arguments: 1 ... 20)
    func randomRoundTrips(seed: Int) throws {
        var random = TestRandom(seed: UInt64(seed))
        let windowBits = 8 + random.below(8)
        var deflater = TestDeflater(maximumDistance: 1 << windowBits)
        var inflater = Inflater(windowBits: windowBits)
        let messageCount = 1 + random.below(4)
        for _ in 0 ..< messageCount {
            let text = random.text(length: random.below(20000 / messageCount))
            let compressed = deflater.message(text, random: &random)
            let limit = random.below(3) == 0 ? random.below(text.count + 1) : Int.max
            let (output, total) = try inflate(&inflater, compressed, limit: limit)
            #expect(total == text.count)
            #expect(output == Array(text.prefix(limit)))
        }
    }

    @Test func theWindowWrapsOverManyMessages() throws {
        // A 256-byte window over 64 messages of 200 bytes, each referring back into the one before.
        var random = TestRandom(seed: 99)
        var deflater = TestDeflater(maximumDistance: 256)
        var inflater = Inflater(windowBits: 8)
        var previous = random.text(length: 200)
        for _ in 0 ..< 64 {
            var message = Array(previous[100...])
            message += random.text(length: 100)
            let (output, total) = try inflate(&inflater, deflater.message(message, random: &random))
            #expect(output == message && total == 200)
            previous = message
        }
    }
}

// MARK: - Test-only helpers

/// Bits as RFC 1951 §3.1.1 packs them: from each byte's lowest bit.
private struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var used = 0

    /// A number, lowest bit first.
    mutating func write(_ value: Int, bits: Int) {
        for index in 0 ..< bits {
            if used == 0 { bytes.append(0) }
            bytes[bytes.count - 1] |= UInt8((value >> index) & 1) << used
            used = (used + 1) % 8
        }
    }

    /// A Huffman code, first (most significant) bit first.
    mutating func writeCode(_ code: Int, length: Int) {
        for index in stride(from: length - 1, through: 0, by: -1) { write((code >> index) & 1, bits: 1) }
    }

    mutating func alignToByte() { used = 0 }

    mutating func header(final: Bool, type: Int) {
        write(final ? 1 : 0, bits: 1)
        write(type, bits: 2)
    }

    /// §3.2.6: the fixed literal/length code.
    mutating func writeFixedSymbol(_ symbol: Int) {
        switch symbol {
        case 0 ... 143: writeCode(0x30 + symbol, length: 8)
        case 144 ... 255: writeCode(0x190 + symbol - 144, length: 9)
        case 256 ... 279: writeCode(symbol - 256, length: 7)
        default: writeCode(0xC0 + symbol - 280, length: 8)
        }
    }

    mutating func writeFixedMatch(length: Int, distance: Int) {
        let (lengthSymbol, lengthExtra, lengthBits) = DeflateTables.length(length)
        writeFixedSymbol(lengthSymbol)
        write(lengthExtra, bits: lengthBits)
        let (distanceSymbol, distanceExtra, distanceBits) = DeflateTables.distance(distance)
        writeCode(distanceSymbol, length: 5)
        write(distanceExtra, bits: distanceBits)
    }
}

/// RFC 1951 §3.2.5's tables, written out again for the test's compressor.
private enum DeflateTables {
    static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthBits = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    static let distanceBits = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

    /// (symbol, extra value, extra bits) for a match length 3...258.
    static func length(_ length: Int) -> (Int, Int, Int) {
        let index = lengthBase.lastIndex { $0 <= length }!
        return (257 + index, length - lengthBase[index], lengthBits[index])
    }

    /// (symbol, extra value, extra bits) for a distance 1...32768.
    static func distance(_ distance: Int) -> (Int, Int, Int) {
        let index = distanceBase.lastIndex { $0 <= distance }!
        return (index, distance - distanceBase[index], distanceBits[index])
    }
}

/// §3.2.2: the canonical codes for a list of code lengths (0: no code).
private func canonicalCodes(_ lengths: [Int]) -> [Int] {
    var countPerLength = [Int](repeating: 0, count: 16)
    for length in lengths where length > 0 { countPerLength[length] += 1 }
    var next = [Int](repeating: 0, count: 16)
    var code = 0
    for bits in 1 ... 15 {
        code = (code + countPerLength[bits - 1]) << 1
        next[bits] = code
    }
    return lengths.map { length in
        guard length > 0 else { return 0 }
        defer { next[length] += 1 }
        return next[length]
    }
}

/// A deterministic generator (a 64-bit LCG) for the randomized tests.
private struct TestRandom {
    private var state: UInt64

    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 }

    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state >> 33
    }

    mutating func below(_ bound: Int) -> Int { bound <= 0 ? 0 : Int(next() % UInt64(bound)) }

    /// Words that repeat (so matches are found) mixed with runs of random bytes (so literals of every value occur).
    mutating func text(length: Int) -> [UInt8] {
        let words = ["sluice", "socket", "frame", "deflate", "window", "message", #"{"id":"#, #""price":"#, "0.25", "\n", "the", "a", "aaaaaaaaaaaaaaaa"]
        var text: [UInt8] = []
        while text.count < length {
            switch below(8) {
            case 0:
                for _ in 0 ..< 1 + below(12) { text.append(UInt8(below(256))) }
            default:
                text += Array(words[below(words.count)].utf8)
                text.append(0x20)
            }
        }
        return Array(text.prefix(length))
    }

    /// A random complete prefix code of `count` codes no longer than `maximum`
    /// (one code is one bit, the incomplete code RFC 1951 §3.2.7 allows): leaves
    /// of a tree split at random, often the newest so that some run deep.
    mutating func completeCodeLengths(count: Int, maximum: Int) -> [Int] {
        guard count > 1 else { return [1] }
        var depths = [0]
        while depths.count < count {
            var index = below(2) == 0 ? depths.count - 1 : below(depths.count)
            while depths[index] >= maximum { index = (index + 1) % depths.count }
            depths[index] += 1
            depths.append(depths[index])
        }
        return depths
    }
}

/// A test-only DEFLATE compressor (RFC 1951), independent of the Inflater: greedy
/// LZ77 over a hash of three bytes, then stored, fixed-Huffman or dynamic-Huffman
/// blocks at random, the dynamic ones with random complete codes (not optimal,
/// but every length up to 15 and every repeat code occurs). It keeps its history
/// across messages as a context-takeover sender does.
private struct TestDeflater {
    enum Token {
        case literal(UInt8)
        case match(length: Int, distance: Int)
    }

    let maximumDistance: Int
    private var history: [UInt8] = []
    private var positions: [Int: [Int]] = [:]
    private var writer = BitWriter()

    init(maximumDistance: Int) { self.maximumDistance = maximumDistance }

    private func key(_ position: Int) -> Int {
        Int(history[position]) << 16 | Int(history[position + 1]) << 8 | Int(history[position + 2])
    }

    /// Adds `data` to the history and says it as literals and matches.
    mutating func tokens(_ data: [UInt8]) -> [Token] {
        var tokens: [Token] = []
        var position = history.count
        history += data
        while position < history.count {
            var best = (length: 0, distance: 0)
            if position + 3 <= history.count {
                for candidate in (positions[key(position)] ?? []).suffix(8).reversed() where position - candidate <= maximumDistance {
                    var length = 0
                    while length < 258, position + length < history.count, history[candidate + length] == history[position + length] {
                        length += 1
                    }
                    if length > best.length { best = (length, position - candidate) }
                }
            }
            let advance = best.length >= 3 ? best.length : 1
            tokens.append(best.length >= 3 ? .match(length: best.length, distance: best.distance) : .literal(history[position]))
            for index in position ..< position + advance where index + 3 <= history.count {
                positions[key(index), default: []].append(index)
            }
            position += advance
        }
        return tokens
    }

    /// One message: random blocks, then an empty stored block (what Z_SYNC_FLUSH
    /// ends with, and RFC 7692's 00 00 FF FF restores). Its last data block is sometimes final.
    mutating func message(_ data: [UInt8], random: inout TestRandom) -> [UInt8] {
        var offset = 0
        while offset < data.count {
            let count = min(data.count - offset, 1 + random.below(5000))
            let chunk = Array(data[offset ..< offset + count])
            offset += count
            let final = offset == data.count && random.below(4) == 0
            switch random.below(3) {
            case 0: stored(chunk, final: final)
            case 1: fixed(tokens(chunk), final: final)
            default: dynamic(tokens(chunk), final: final, random: &random)
            }
            // A new stream starts on a byte.
            if final { writer.alignToByte() }
        }
        stored([], final: false)
        defer { writer = BitWriter() }
        return writer.bytes
    }

    private mutating func stored(_ chunk: [UInt8], final: Bool) {
        _ = tokens(chunk)
        writer.header(final: final, type: 0)
        writer.alignToByte()
        writer.write(chunk.count, bits: 16)
        writer.write(chunk.count ^ 0xFFFF, bits: 16)
        for byte in chunk { writer.write(Int(byte), bits: 8) }
    }

    private mutating func fixed(_ tokens: [Token], final: Bool) {
        writer.header(final: final, type: 1)
        for token in tokens {
            switch token {
            case .literal(let byte): writer.writeFixedSymbol(Int(byte))
            case .match(let length, let distance): writer.writeFixedMatch(length: length, distance: distance)
            }
        }
        writer.writeFixedSymbol(256)
    }

    /// §3.2.7, with codes for the symbols used and a few more, of random lengths.
    private mutating func dynamic(_ tokens: [Token], final: Bool, random: inout TestRandom) {
        var literalSymbols: Set<Int> = [256]
        var distanceSymbols: Set<Int> = []
        for token in tokens {
            switch token {
            case .literal(let byte): literalSymbols.insert(Int(byte))
            case .match(let length, let distance):
                literalSymbols.insert(DeflateTables.length(length).0)
                distanceSymbols.insert(DeflateTables.distance(distance).0)
            }
        }
        for _ in 0 ..< random.below(4) { literalSymbols.insert(random.below(286)) }
        if random.below(2) == 0 { distanceSymbols.insert(random.below(30)) }

        func lengths(_ symbols: Set<Int>, count: Int, maximum: Int = 15, random: inout TestRandom) -> [Int] {
            var lengths = [Int](repeating: 0, count: count)
            guard !symbols.isEmpty else { return lengths }
            for (symbol, length) in zip(symbols.sorted(), random.completeCodeLengths(count: symbols.count, maximum: maximum)) {
                lengths[symbol] = length
            }
            return lengths
        }
        let literalLengths = lengths(literalSymbols, count: max(257, literalSymbols.max()! + 1), random: &random)
        let distanceLengths = lengths(distanceSymbols, count: max(1, (distanceSymbols.max() ?? 0) + 1), random: &random)

        // The lengths as one sequence, with runs at random: (symbol, extra value, extra bits).
        let sequence = literalLengths + distanceLengths
        var items: [(Int, Int, Int)] = []
        var index = 0
        while index < sequence.count {
            let value = sequence[index]
            var run = 1
            while index + run < sequence.count, sequence[index + run] == value { run += 1 }
            let useRun = random.below(4) != 0
            if useRun, value == 0, run >= 11 {
                let count = min(run, 138)
                items.append((18, count - 11, 7))
                index += count
            } else if useRun, value == 0, run >= 3 {
                let count = min(run, 10)
                items.append((17, count - 3, 3))
                index += count
            } else if useRun, run >= 4 {
                let count = min(run - 1, 6)
                items.append((value, 0, 0))
                items.append((16, count - 3, 2))
                index += 1 + count
            } else {
                items.append((value, 0, 0))
                index += 1
            }
        }
        var codeLengthSymbols = Set(items.map(\.0))
        // The code length code must be complete: at least two codes.
        if codeLengthSymbols.count == 1 { codeLengthSymbols.insert((codeLengthSymbols.first! + 1) % 19) }
        let codeLengthLengths = lengths(codeLengthSymbols, count: 19, maximum: 7, random: &random)
        let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
        let codeLengthCount = max(4, order.lastIndex { codeLengthLengths[$0] != 0 }! + 1)

        let codeLengthCodes = canonicalCodes(codeLengthLengths)
        let literalCodes = canonicalCodes(literalLengths)
        let distanceCodes = canonicalCodes(distanceLengths)
        writer.header(final: final, type: 2)
        writer.write(literalLengths.count - 257, bits: 5)
        writer.write(distanceLengths.count - 1, bits: 5)
        writer.write(codeLengthCount - 4, bits: 4)
        for index in 0 ..< codeLengthCount { writer.write(codeLengthLengths[order[index]], bits: 3) }
        for (symbol, extra, bits) in items {
            writer.writeCode(codeLengthCodes[symbol], length: codeLengthLengths[symbol])
            writer.write(extra, bits: bits)
        }
        for token in tokens {
            switch token {
            case .literal(let byte):
                writer.writeCode(literalCodes[Int(byte)], length: literalLengths[Int(byte)])
            case .match(let length, let distance):
                let (lengthSymbol, lengthExtra, lengthBits) = DeflateTables.length(length)
                writer.writeCode(literalCodes[lengthSymbol], length: literalLengths[lengthSymbol])
                writer.write(lengthExtra, bits: lengthBits)
                let (distanceSymbol, distanceExtra, distanceBits) = DeflateTables.distance(distance)
                writer.writeCode(distanceCodes[distanceSymbol], length: distanceLengths[distanceSymbol])
                writer.write(distanceExtra, bits: distanceBits)
            }
        }
        writer.writeCode(literalCodes[256], length: literalLengths[256])
    }
}
