import Testing
import Crypto
@testable import HTTP

/// Decodes `input` as one call.
private func decode(_ input: [UInt8], limit: Int = 1 << 24) throws(BrotliDecoder.Failure) -> [UInt8] {
    let result = input.withUnsafeBytes { raw in
        Result { () throws(BrotliDecoder.Failure) in try BrotliDecoder.decode(raw, limit: limit) }
    }
    return try result.get()
}

/// What decoding `input` throws, or nil when it decodes.
private func failure(_ input: [UInt8], limit: Int = 1 << 24) -> BrotliDecoder.Failure? {
    do throws(BrotliDecoder.Failure) {
        _ = try decode(input, limit: limit)
        return nil
    } catch {
        return error
    }
}

private let truncated = BrotliDecoder.Failure(reason: "brotli: truncated stream")

/// The plaintexts of the vectors, made here the way they were made for the
/// brotli CLI (the same generator, run once to write the files it compressed).
private enum Plaintexts {
    /// A linear congruential generator (Numerical Recipes' constants): the same numbers on every machine.
    struct Numbers {
        var state: UInt32
        mutating func next(_ bound: Int) -> Int {
            state = state &* 1_664_525 &+ 1_013_904_223
            return Int(state >> 8) % bound
        }
    }

    static let words = [
        "the", "of", "and", "to", "in", "is", "that", "for", "with", "as", "was", "on", "by", "from", "this", "which",
        "time", "people", "world", "information", "government", "system", "number", "water", "program", "question",
        "during", "without", "again", "place", "where", "after", "back", "little", "only", "round", "through", "great",
    ]

    /// Sentences of `words`, each starting with a capital, one word in twenty all capitals:
    /// text in which quality 10 and 11 find dictionary words and transforms.
    static func english(count: Int, seed: UInt32) -> [UInt8] {
        var numbers = Numbers(state: seed)
        var text: [UInt8] = []
        while text.count < count {
            let length = 4 + numbers.next(10)
            for index in 0 ..< length {
                var word = Array(words[numbers.next(words.count)].utf8)
                if index == 0 { word[0] -= 32 } else if numbers.next(20) == 0 { word = word.map { $0 - 32 } }
                text += word
                text.append(index == length - 1 ? UInt8(ascii: ".") : UInt8(ascii: " "))
            }
            text.append(numbers.next(4) == 0 ? UInt8(ascii: "\n") : UInt8(ascii: " "))
        }
        return Array(text.prefix(count))
    }

    /// Bytes no compressor can shorten.
    static func noise(count: Int, seed: UInt32) -> [UInt8] {
        var numbers = Numbers(state: seed)
        return (0 ..< count).map { _ in UInt8(truncatingIfNeeded: numbers.next(256)) }
    }

    /// A slow wave of 16-bit little-endian samples: binary data with small differences.
    static func samples(count: Int, seed: UInt32) -> [UInt8] {
        var numbers = Numbers(state: seed)
        var value = 0
        var bytes: [UInt8] = []
        while bytes.count < count {
            value = max(-2000, min(2000, value + numbers.next(201) - 100))
            bytes.append(UInt8(truncatingIfNeeded: value))
            bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        }
        return Array(bytes.prefix(count))
    }

    static let english400 = english(count: 400, seed: 1)
    static let english600 = english(count: 600, seed: 1)
    static let english400b = english(count: 400, seed: 3)
    static let samples600 = samples(count: 600, seed: 4)
    static let noise100 = noise(count: 100, seed: 3)
}

/// Streams made by the brotli command-line tool (Debian's brotli 1.0.9) from
/// the plaintexts above, in base64:
/// `brotli -q Q [-w LGWIN] -o out.br in`. What each one holds was read off
/// the stream while developing (WBITS, codes, context modes and maps):
private enum Vectors {
    private static func base64(_ text: String) -> [UInt8] { Base64.decode(String(text.filter { !$0.isWhitespace })) ?? [] }

    // english400 at quality 0 (WBITS 18; complex codes with HSKIP 0 and 3, runs of 16 and 17
    // repeat codes that scale the one before; an ISLASTEMPTY meta-block ends it), 1 with
    // -w 24 (WBITS 24), 5 with -w 10 (WBITS 10, the UTF8 context mode) and 9.
    // english600 at quality 11: three literal codes picked by a context map with runs of
    // zeros (RLEMAX 5) and the inverse move-to-front, simple codes (NSYM 2, and 4 with
    // tree-select 1), 40 static dictionary words under 20 transforms (FermentFirst and
    // FermentAll among them), short distance codes.
    // english400b at quality 10: two distance codes picked by a distance context map, and
    // simple codes of one to four symbols.
    // samples600 at quality 11: the Signed context mode, NPOSTFIX 3 and NDIRECT 120 (a
    // direct distance code used), seven literal codes.
    // noise100 at quality 5: one uncompressed meta-block (then ISLASTEMPTY).
    // The empty input at quality 11; a million zero bytes at quality 11 (MLEN in 5 nibbles).
    static let quality0 = base64("""
        g8cAAICqqqrq/+6XEx9Oerj7wSPCD24W4GAQfhYzF13ATUXMRUVdIf7vqn/PvdU9o7q8jeGueLGwsLCxsaqXGdXBhw8/BoPB
        OM5kVQ0Gg8FgMJhDnRGpKI3CYaGdZO8JfjiLYhTP2h0qoIaVthek15UNroimFd/z3+U+3S7TEvAgZ8PBeuyMwzQZVaggWPrC
        s1uRhCJRrZIXlTSGEvDLASFHtfTgWxMVCZgFKrhOX/P9dl6u8wRXvDu38PBlavBs2lNGMiYPWEpljHswKw0js3F0+C0Y5GxI
        +mGTyuIBj+IZJM9kYeKZQc3PUSKYSK8rW2HR0p4uP+clnH4zjZ+p7P/wTI5jp43BhJz6bKXtFU7Xlgq6+sRQiREnQ21/Io0U
        GlM41CLQmGf8NOBRPGt3RDVEHQ==
        """)
    static let quality1Window24 = base64("""
        j8cAAICqqqrq/+6XEx9Oerj7wT3CDm4W4KAQdhZ3E10gTEUsREXDIOx/592tN2DY1tvH8OPHMAzHGIZhggN3oOdATf4RFWf1
        osOhAup40fsHMtqLDa5Ipg0fy/ftOT9ucwxYydlwsB474zDNRk2OLFvYhlXJqJLUGnlVYaQI+GIhPamJ0FOmKgGLNDCa5vvy
        fFzjtMxkxO/grucydXgxHbkgG5MHxNoY54x97TgLG8OOWzjJ2ZD1j00aiwes1QtINmDhXjgjPjvZwCSv7rAvu4mf1xguRx8z
        lf0fXshx7PTmN+mhXx+LcJk6RaabchU4sp5q+8ZIRRPhrFWg6WZNA9bqRYcjqSHp
        """)
    static let quality5Window10 = base64("""
        oXgMACAQua1T0oX0oRNQCcDmfpoJqpT/TbHcFnK/v38CUB4SbARDdLOYiEQ12bIh62TDZigXGFp1OtQJcOdG/+mx8ycb04H7
        w9qOtNeSqgpnn9cHeUYGpus02rNCYBw34f2nxT++09OHCc0avnJd2l6i5laZTThEqQkRr13wMZNSpo8fFwkXiXQhTu7A+euH
        oG3zvSCnMQqg4iXYwH3QLaoE0SE93UOfWXdpEwFQfUnIN9onH1ndEMVj47j4XXxYk2imUCwBUPx2
        """)
    static let quality9 = base64("""
        oXgMACAQua1T0oX0oRNQCcDGfpoJMCn8pqhuCu27bgjALChIEAhJgkci/6s7faHvbNrm4Lm9QNC1TdvVCHCyRfuZsedPBtuA
        +8NZ7lBzClmFp+3+QZ6Rge26jfacEBjHTfj+U7evieohlDXwFfNRavIaS2Y24RClJkS8dsHHTEqZNn9cJFwk0oM4eQP3Xz8E
        bd1vh9zWKICKl2AD96KXV3GiQ3q6h7az7tImAqD7EhffaJ9sZbGFKB4bx8VG8bmGRDOF4ghQfRg=
        """)
    static let quality11 = base64("""
        obgSAOBIsGNcRsJX3raRarc5KrOV9ASlnlfogIreWenkl2VQ6ia0//tuYgyzBkOCIAiLr0RZbK496tOrh4sATuecrgK6Jgbe
        YtYF7SmI2NXMfTKfYOGTNETHbYbni4AmI5tgT5aCFvqF8jRyRRwXDxAItUj96HjXxq6hwo6BTrHTI9DqyXuhCQbOilSTrT+6
        OUtpfTAV9ICJzcWnS1I2KVMc6WNLs2qvY0ivsxU9vdl1yj75eENrDstXNMhpHGYEGQB3hN4S2SjQ/njTu+T5Mz+9qkTvcFCj
        TBOzlma397PkeJTjA2c2wYQKBg==
        """)
    static let distanceContexts = base64("""
        oXgMAGCkdLdRZENpdZv37emt4D1BsMeCBVGDuCikhf7rBsz93ffhDmuCmwkozgsx2/b+b39BEOmduFcjZsJiMB809WFQ0hNC
        nNGgnYa+biOU5zwEimbri9to+8N7ThT2hoQO5SjnUyBR2xLK5aiVCCFPzVeAGNca0U6R2JCfPfJbNfM4hZi0u3lX71e8v3Tm
        2Dl63EaZQ9ihrtd001pJ1MTfhHaCjMqcoa2/bSteiNY4/InkOFbgqB8H
        """)
    static let samples = base64("""
        obgSwH9ZwBuWs+vB4x2+aqpyICgIyKmMZQNyMw+APgEMgPL/L4D/AghI//7/+C9RsosVPqAFG4uI2uXZqzv3/ltd237w7rza
        5toSPGFrjXr5Bycvx12WP0nb9rv5oKJBZx6ldzhr39D2M/cWFh03a+TEp4f2L3uaBzKovpNT6rVpC1f221jThfQxvIVaOUsk
        Xn/58MjW5qiHrCrjK9Iy1lfUSpFl0bwivg7hPCJIn1CS1CGZLab7qjsPwUMsiEgo4SjYihyf/zRLe5EesG/V9z/4m1aXWsxD
        Ou/tX+7gTqKFmhqhPlVMliZOPkJoYyYoRLKnf+ZRapka5Z9O6e7i4TdJuNo6oc7GQwm0ee3B0fNn74eHj0uwbt0+nqhfzvJx
        UdKFMuKjfHt87L25+wKRY7GcngU3bQfNTMUsam3xa5DBdUyJTMtGDGnUZ8KczxOYW1MEGRRFNohvIiNctsSw3WRxPIDypAfb
        qIZcUsIJhb8/AittNZF9IhnW0f+fGQb7TXeJBh4=
        """)
    static let noise = base64("""
        IYwBBCU/Fgl+tsBgNYRLpqHsK8FTchTTINv7Qx0qE7Kdo9AGNcrnYrdjSio5cy8CDj0Kz8pFjbRCUK4ViWGglvO81xwU5QfK
        waAlBA3yZG5MHjjtEqhWpDRVsPfEKHyKGWUuQsSQeEID
        """)
    static let empty = base64("""
        oQE=
        """)
    static let zeros = base64("""
        Vz9Cj38CIB4LBPJzHgA=
        """)
}

/// Bits as RFC 7932 §1.5.1 packs them (each byte from its lowest bit), to
/// build streams by hand for what the CLI never writes or must never accept.
private struct BitWriter {
    private(set) var bytes: [UInt8] = []
    /// Bits used in the last byte; 8 when the next bit starts a new one.
    private var used = 8

    /// `value`'s low `count` bits, lowest first (how §1.5.1 packs numbers).
    mutating func write(_ value: Int, _ count: Int) {
        for bit in 0 ..< count {
            if used == 8 {
                bytes.append(0)
                used = 0
            }
            if value >> bit & 1 == 1 { bytes[bytes.count - 1] |= 1 << UInt8(used) }
            used += 1
        }
    }

    /// A prefix code's `code` of `length` bits, its first (most significant) bit first.
    mutating func writeCode(_ code: Int, _ length: Int) {
        for bit in (0 ..< length).reversed() { write(code >> bit & 1, 1) }
    }

    /// Zero bits up to the next byte, then `data` as it is.
    mutating func writeBytes(_ data: [UInt8]) {
        used = 8
        bytes += data
    }

    /// §9.1: WBITS 10...24.
    mutating func windowBits(_ bits: Int) {
        switch bits {
        case 16: write(0, 1)
        case 17: write(1, 1); write(0, 3); write(0, 3)
        case 18 ... 24: write(1, 1); write(bits - 17, 3)
        default: write(1, 1); write(0, 3); write(bits - 8, 3)
        }
    }

    /// §9.2: a compressed meta-block's first fields, MLEN in four nibbles.
    mutating func metaBlockHeader(length: Int, isLast: Bool) {
        write(isLast ? 1 : 0, 1)
        if isLast { write(0, 1) }
        write(0, 2)
        write(length - 1, 16)
        if !isLast { write(0, 1) }
    }

    mutating func uncompressedMetaBlock(_ data: [UInt8]) {
        write(0, 1)
        write(0, 2)
        write(data.count - 1, 16)
        write(1, 1)
        writeBytes(data)
    }

    /// ISLAST and ISLASTEMPTY.
    mutating func lastEmptyMetaBlock() {
        write(1, 1)
        write(1, 1)
    }

    /// §9.2's code for NBLTYPES and NTREES.
    mutating func count(_ value: Int) {
        if value == 1 { return write(0, 1) }
        write(1, 1)
        if value == 2 { return write(0, 3) }
        let bits = Int.bitWidth - 1 - (value - 1).leadingZeroBitCount
        write(bits, 3)
        write(value - 1 - (1 << bits), bits)
    }

    /// §3.4: a simple prefix code of these symbols (lengths by their count and order).
    mutating func simpleCode(_ symbols: [Int], alphabetSize: Int, treeSelect: Int = 0) {
        write(1, 2)
        write(symbols.count - 1, 2)
        let bits = Int.bitWidth - (alphabetSize - 1).leadingZeroBitCount
        for symbol in symbols { write(symbol, bits) }
        if symbols.count == 4 { write(treeSelect, 1) }
    }

    /// The common header of a meta-block with one block type per category,
    /// NPOSTFIX 0, one literal and one distance code (no context maps), up to
    /// the literal code.
    mutating func plainCompressedHeader(length: Int, isLast: Bool, directCodes: Int = 0) {
        metaBlockHeader(length: length, isLast: isLast)
        count(1)
        count(1)
        count(1)
        write(0, 2)
        write(directCodes, 4)
        write(0, 2)
        count(1)
        count(1)
    }
}

/// §5: the insert-and-copy symbol for inserting nothing and copying
/// `length` bytes with an explicit distance, and the copy's extra bits.
private func copyCommand(length: Int) -> (symbol: Int, extra: Int, extraBits: Int) {
    let bases = BrotliDecoder.Tables.copyLengthBase
    let code = bases.lastIndex { $0 <= length } ?? 0
    let symbol = code < 8 ? 128 + code : code < 16 ? 192 + code - 8 : 384 + code - 16
    return (symbol, length - bases[code], BrotliDecoder.Tables.copyLengthExtraBits[code])
}

/// §4 with NPOSTFIX 0 and NDIRECT 0: the distance symbol and extra bits for `distance`.
private func distanceCode(_ distance: Int) -> (symbol: Int, extra: Int, extraBits: Int) {
    let shifted = distance + 3
    let bits = Int.bitWidth - 2 - shifted.leadingZeroBitCount
    let prefix = shifted >> bits & 1
    return (16 + 2 * (bits - 1) + prefix, shifted - ((2 + prefix) << bits), bits)
}

/// A meta-block whose one command copies `length` bytes from `distance`
/// back (a static dictionary word when past the window), `output` bytes in all.
private func appendCopy(_ writer: inout BitWriter, distance: Int, length: Int, output: Int, isLast: Bool) {
    let command = copyCommand(length: length)
    let code = distanceCode(distance)
    writer.plainCompressedHeader(length: output, isLast: isLast)
    writer.simpleCode([0x78], alphabetSize: 256)
    writer.simpleCode([command.symbol], alphabetSize: 704)
    writer.simpleCode([code.symbol], alphabetSize: 64)
    writer.write(command.extra, command.extraBits)
    writer.write(code.extra, code.extraBits)
}

@Suite struct BrotliDecoderTests {
    // MARK: The CLI's streams

    @Test func everyQualityDecodesToItsText() throws {
        #expect(try decode(Vectors.quality0) == Plaintexts.english400)
        #expect(try decode(Vectors.quality1Window24) == Plaintexts.english400)
        #expect(try decode(Vectors.quality5Window10) == Plaintexts.english400)
        #expect(try decode(Vectors.quality9) == Plaintexts.english400)
        #expect(try decode(Vectors.quality11) == Plaintexts.english600)
    }

    @Test func contextMapsForLiteralsAndDistancesDecode() throws {
        #expect(try decode(Vectors.quality11) == Plaintexts.english600)
        #expect(try decode(Vectors.distanceContexts) == Plaintexts.english400b)
    }

    @Test func binaryDataWithTheSignedContextModeDecodes() throws {
        #expect(try decode(Vectors.samples) == Plaintexts.samples600)
    }

    @Test func incompressibleDataIsAnUncompressedMetaBlock() throws {
        #expect(try decode(Vectors.noise) == Plaintexts.noise100)
    }

    @Test func theEmptyInputDecodesToNothing() throws {
        #expect(try decode(Vectors.empty) == [])
        // RFC 7932 §11.1's trivial compressor: WBITS 16, ISLAST, ISLASTEMPTY.
        #expect(try decode([0x06]) == [])
    }

    @Test func aMegabyteOfZerosFromFourteenBytes() throws {
        #expect(Vectors.zeros.count == 14)
        #expect(try decode(Vectors.zeros) == [UInt8](repeating: 0, count: 1_000_000))
    }

    // MARK: Stream and meta-block headers (§9)

    @Test func everyWindowSizeIsRead() throws {
        for bits in 10 ... 24 {
            var writer = BitWriter()
            writer.windowBits(bits)
            writer.lastEmptyMetaBlock()
            let windowSize = try writer.bytes.withUnsafeBytes { raw throws(BrotliDecoder.Failure) in
                var stream = BrotliDecoder.Stream(input: raw, limit: 0)
                try stream.decode()
                return stream.windowSize
            }
            #expect(windowSize == (1 << bits) - 16)
        }
        // 0010001, which RFC 7932 leaves invalid, is the large-window extension's: refused.
        #expect(failure([0b0001_0001])
            == BrotliDecoder.Failure(reason: "brotli: the large-window extension is not supported (WBITS code 0010001)"))
    }

    @Test func metadataIsSkipped() throws {
        var writer = BitWriter()
        writer.windowBits(16)
        // ISLAST 0, MNIBBLES 0 (bits 11), reserved 0, MSKIPBYTES 1, MSKIPLEN - 1, then the bytes.
        writer.write(0, 1)
        writer.write(3, 2)
        writer.write(0, 1)
        writer.write(1, 2)
        writer.write(4, 8)
        writer.writeBytes(Array("skip!".utf8))
        writer.uncompressedMetaBlock(Array("hello".utf8))
        // A last meta-block may be metadata too (MSKIPBYTES 0: no bytes).
        writer.write(1, 1)
        writer.write(0, 1)
        writer.write(3, 2)
        writer.write(0, 1)
        writer.write(0, 2)
        #expect(try decode(writer.bytes) == Array("hello".utf8))

        var reserved = BitWriter()
        reserved.windowBits(16)
        reserved.write(0, 1)
        reserved.write(3, 2)
        reserved.write(1, 1)
        #expect(failure(reserved.bytes) == BrotliDecoder.Failure(reason: "brotli: a metadata block's reserved bit is set"))
    }

    @Test func paddingBitsMustBeZero() {
        // After ISLASTEMPTY: 0x06 is the empty stream, 0x86 sets its last padding bit.
        #expect(failure([0x86]) == BrotliDecoder.Failure(reason: "brotli: padding bits after the last meta-block are not zero"))
        // Before an uncompressed meta-block's bytes: its header takes 21 bits, 3 pad the byte.
        var writer = BitWriter()
        writer.windowBits(16)
        writer.uncompressedMetaBlock(Array("data".utf8))
        writer.lastEmptyMetaBlock()
        #expect(failure(writer.bytes) == nil)
        var padded = writer.bytes
        padded[2] |= 0x80
        #expect(failure(padded) == BrotliDecoder.Failure(reason: "brotli: an uncompressed meta-block's padding bits are not zero"))
        // After the last compressed meta-block's last command.
        var last = Vectors.quality9
        #expect(last[last.count - 1] & 0x80 == 0)
        last[last.count - 1] |= 0x80
        #expect(failure(last) == BrotliDecoder.Failure(reason: "brotli: padding bits after the last meta-block are not zero"))
    }

    @Test func bytesAfterTheLastMetaBlockAreRefused() {
        let reason = BrotliDecoder.Failure(reason: "brotli: bytes after the last meta-block")
        #expect(failure(Vectors.quality9 + [0x00]) == reason)
        #expect(failure([0x06, 0x06]) == reason)
    }

    @Test func aMetaBlockLengthWithANeedlessNibbleIsRefused() {
        var writer = BitWriter()
        writer.windowBits(16)
        // MNIBBLES 5 for MLEN 16: the fifth nibble is zero.
        writer.write(0, 1)
        writer.write(1, 2)
        writer.write(15, 20)
        #expect(failure(writer.bytes) == BrotliDecoder.Failure(reason: "brotli: a meta-block's length has a needless zero nibble"))
    }

    // MARK: Prefix codes (§3)

    @Test func repeatCodesScaleTheOneBefore() throws {
        // §3.5's example, "7, 16 (+2 bits 11), 16 (+2 bits 10) will expand to 22 code lengths
        // of 7", then 17 (+3 bits 111) and 17 (+3 bits 000): 8 * (10 - 2) + 3 = 67 zeros, then
        // an 8 and 16 four times (+1, +3, +3, +0): 4, 4 * 2 + 6 = 14, 4 * 12 + 6 = 54,
        // 4 * 52 + 3 = 211 more eights. 22 / 2^7 + 212 / 2^8 = 1: the code is complete.
        var writer = BitWriter()
        // HSKIP 3, then the code length code's lengths in §3.5's order from symbol 4:
        // 4: 0, 0: 0, 5: 0, 17: 2, 6: 0, 16: 1, 7: 3, 8: 3 (32/4 + 32/2 + 32/8 + 32/8 = 32).
        writer.write(3, 2)
        for length in [0, 0, 0, 2, 0, 1, 3, 3] {
            // §3.5's fixed code for them, as the stream carries it.
            let (value, bits) = [(0, 2), (7, 4), (3, 3), (2, 2), (1, 2), (15, 4)][length]
            writer.write(value, bits)
        }
        // The code length code: 16 → 0, 17 → 10, 7 → 110, 8 → 111.
        let sixteen = (0, 1), seventeen = (0b10, 2), seven = (0b110, 3), eight = (0b111, 3)
        writer.writeCode(seven.0, seven.1)
        writer.writeCode(sixteen.0, sixteen.1); writer.write(3, 2)
        writer.writeCode(sixteen.0, sixteen.1); writer.write(2, 2)
        writer.writeCode(seventeen.0, seventeen.1); writer.write(7, 3)
        writer.writeCode(seventeen.0, seventeen.1); writer.write(0, 3)
        writer.writeCode(eight.0, eight.1)
        for extra in [1, 3, 3, 0] {
            writer.writeCode(sixteen.0, sixteen.1)
            writer.write(extra, 2)
        }
        let lengths = try writer.bytes.withUnsafeBytes { raw throws(BrotliDecoder.Failure) in
            var reader = BrotliDecoder.BitReader(input: raw)
            return try BrotliDecoder.PrefixCodes.readLengths(&reader, alphabetSize: 704)
        }
        let expected = [UInt8](repeating: 7, count: 22) + [UInt8](repeating: 0, count: 67)
            + [UInt8](repeating: 8, count: 212) + [UInt8](repeating: 0, count: 704 - 301)
        #expect(lengths == expected)
    }

    @Test func simpleCodesTakeTheirLengthsFromTheirSymbolCount() throws {
        // NSYM 3 (lengths 1, 2, 2 in the order given), over an alphabet of 16.
        var writer = BitWriter()
        writer.simpleCode([5, 2, 9], alphabetSize: 16)
        // The canonical code sorts by length, then symbol: 5 → 0, 2 → 10, 9 → 11.
        for (code, length) in [(0b10, 2), (0, 1), (0b11, 2), (0, 1)] { writer.writeCode(code, length) }
        // NSYM 4 with tree-select 1: lengths 1, 2, 3, 3 → 7 → 0, 1 → 10, 3 → 110, 12 → 111.
        writer.simpleCode([7, 1, 12, 3], alphabetSize: 16, treeSelect: 1)
        for (code, length) in [(0b111, 3), (0b110, 3), (0b10, 2), (0, 1)] { writer.writeCode(code, length) }
        // NSYM 1: a code of no bits.
        writer.simpleCode([11], alphabetSize: 16)
        let symbols = try writer.bytes.withUnsafeBytes { raw throws(BrotliDecoder.Failure) in
            var reader = BrotliDecoder.BitReader(input: raw)
            var codes = BrotliDecoder.PrefixCodes(capacity: 3)
            var symbols: [Int] = []
            try codes.read(&reader, alphabetSize: 16)
            for _ in 0 ..< 4 { symbols.append(try reader.decode(codes, 0)) }
            try codes.read(&reader, alphabetSize: 16)
            for _ in 0 ..< 4 { symbols.append(try reader.decode(codes, 1)) }
            try codes.read(&reader, alphabetSize: 16)
            for _ in 0 ..< 3 { symbols.append(try reader.decode(codes, 2)) }
            return symbols
        }
        #expect(symbols == [2, 5, 9, 5, 12, 3, 1, 7, 11, 11, 11])
    }

    @Test func codesLongerThanTheRootTableDecode() throws {
        // Lengths 1, 2, ..., 14, 15, 15: symbol k < 15 is k ones and a zero.
        var lengths = (1 ... 15).map { UInt8($0) }
        lengths.append(15)
        var writer = BitWriter()
        for symbol in (0 ..< 16).reversed() {
            let ones = min(symbol, 15)
            writer.writeCode(symbol < 15 ? ((1 << ones) - 1) << 1 : (1 << 15) - 1, symbol < 15 ? symbol + 1 : 15)
        }
        let symbols = try writer.bytes.withUnsafeBytes { raw throws(BrotliDecoder.Failure) in
            var reader = BrotliDecoder.BitReader(input: raw)
            var codes = BrotliDecoder.PrefixCodes(capacity: 1)
            try codes.append(lengths: lengths)
            return try (0 ..< 16).map { _ throws(BrotliDecoder.Failure) in try reader.decode(codes, 0) }
        }
        #expect(symbols == Array((0 ..< 16).reversed()))
    }

    @Test func malformedPrefixCodesAreRefused() {
        func lengths(_ write: (inout BitWriter) -> Void, alphabetSize: Int = 16) -> BrotliDecoder.Failure? {
            var writer = BitWriter()
            write(&writer)
            return writer.bytes.withUnsafeBytes { raw -> BrotliDecoder.Failure? in
                var reader = BrotliDecoder.BitReader(input: raw)
                var codes = BrotliDecoder.PrefixCodes(capacity: 1)
                do throws(BrotliDecoder.Failure) {
                    try codes.read(&reader, alphabetSize: alphabetSize)
                    return nil
                } catch {
                    return error
                }
            }
        }
        #expect(lengths { $0.simpleCode([3, 3], alphabetSize: 16) }
            == BrotliDecoder.Failure(reason: "brotli: a simple prefix code lists symbol 3 twice"))
        #expect(lengths({ $0.simpleCode([0, 5], alphabetSize: 5) }, alphabetSize: 5)
            == BrotliDecoder.Failure(reason: "brotli: a simple prefix code's symbol 5 is outside its alphabet of 5"))
        // Code length code lengths 1 and 2 only (16 + 8 of 32): incomplete.
        #expect(lengths {
            $0.write(0, 2)
            $0.write(7, 4)
            $0.write(3, 3)
            for _ in 2 ..< 18 { $0.write(0, 2) }
        } == BrotliDecoder.Failure(reason: "brotli: the code length code's lengths do not make a complete prefix code"))
        // A complete code length code (symbols 1 and 5, one bit each) whose lengths,
        // sixteen 5s, fill half of the code when the alphabet runs out.
        #expect(lengths {
            $0.write(0, 2)
            $0.write(7, 4)
            for _ in 0 ..< 4 { $0.write(0, 2) }
            $0.write(7, 4)
            for _ in 0 ..< 16 { $0.writeCode(1, 1) }
        } == BrotliDecoder.Failure(reason: "brotli: a complex prefix code's lengths do not make a complete prefix code"))
        #expect(lengths { _ in } == truncated)
    }

    // MARK: Context modeling and block switches (§6, §7)

    /// One meta-block of `length` literals from four one-symbol literal codes
    /// (`literals`), picked by `mode` and a context map of 64 entries.
    private func contextStream(mode: Int, literals: [UInt8], map: [Int], length: Int) -> [UInt8] {
        var writer = BitWriter()
        writer.windowBits(16)
        writer.metaBlockHeader(length: length, isLast: true)
        writer.count(1)
        writer.count(1)
        writer.count(1)
        writer.write(0, 2)
        writer.write(0, 4)
        writer.write(mode, 2)
        writer.count(4)
        // RLEMAX 0, a simple code for the four values (2 bits each), the map, no IMTF.
        writer.write(0, 1)
        writer.simpleCode([0, 1, 2, 3], alphabetSize: 4)
        for value in map { writer.writeCode(value, 2) }
        writer.write(0, 1)
        writer.count(1)
        for literal in literals { writer.simpleCode([Int(literal)], alphabetSize: 256) }
        // Insert code 8 (10...13 literals, 2 extra bits) with copy code 0: symbol 256.
        writer.simpleCode([256], alphabetSize: 704)
        writer.simpleCode([0], alphabetSize: 64)
        writer.write(length - 10, 2)
        return writer.bytes
    }

    @Test func theLSB6AndMSB6ContextModesPickTheirCodes() throws {
        let map = [0, 1, 2, 3] + [Int](repeating: 0, count: 60)
        // LSB6: the context is the last byte's low six bits: 'A' (0x41) → 1, 'B' → 2, 'C' → 3, 'D' → 4 (→ code 0).
        let lsb6 = contextStream(mode: 0, literals: Array("ABCD".utf8), map: map, length: 12)
        #expect(try decode(lsb6) == Array("ABCDABCDABCD".utf8))
        // MSB6: its high six bits: 0x04 → 1, 0x08 → 2, 0x0C → 3, 0x00 → 0.
        let msb6 = contextStream(mode: 1, literals: [0x04, 0x08, 0x0C, 0x00], map: map, length: 12)
        #expect(try decode(msb6) == [UInt8]([0x04, 0x08, 0x0C, 0x00]).repeated(3))
        // The same bytes under LSB6: 0x04 has context 4, which maps to code 0 again.
        let sameUnderLSB6 = contextStream(mode: 0, literals: [0x04, 0x08, 0x0C, 0x00], map: map, length: 12)
        #expect(try decode(sameUnderLSB6) == [UInt8](repeating: 0x04, count: 12))
    }

    @Test func theContextTablesAreTheRFCs() {
        // §7.1 gives each table's CRC-32.
        #expect(CRC32.checksum(BrotliDecoder.Tables.utf8ByLast) == 0x8E91_EFB7)
        #expect(CRC32.checksum(BrotliDecoder.Tables.utf8ByBeforeLast) == 0xD01A_32F4)
        #expect(CRC32.checksum(BrotliDecoder.Tables.signed) == 0x0DD7_A0D6)
    }

    @Test func blockTypesSwitchInEveryCategory() throws {
        // Two block types in each category, each block one element long, so that every
        // command switches all three (block type code 1: "the next type", wrapping).
        var writer = BitWriter()
        writer.windowBits(16)
        writer.metaBlockHeader(length: 14, isLast: true)
        for _ in 0 ..< 3 {
            writer.count(2)
            writer.simpleCode([1], alphabetSize: 4)
            writer.simpleCode([0], alphabetSize: 26)
            writer.write(0, 2)
        }
        // NPOSTFIX 0, NDIRECT 2: distance symbols 16 and 17 are distances 1 and 2.
        writer.write(0, 2)
        writer.write(2, 4)
        writer.write(0, 2)
        writer.write(1, 2)
        // Literal type 0 uses code 0 and type 1 code 1, whatever the context.
        writer.count(2)
        writer.write(0, 1)
        writer.simpleCode([0, 1], alphabetSize: 2)
        for value in [Int](repeating: 0, count: 64) + [Int](repeating: 1, count: 64) { writer.writeCode(value, 1) }
        writer.write(0, 1)
        // Distance type 0 uses code 0 and type 1 code 1: 0 0 0 0 1 1 1 1, written with RLEMAX 1
        // (symbol 1 is a run of 2 or 3 zeros) after a move-to-front: 0 0 0 0 1 0 0 0.
        writer.count(2)
        writer.write(1, 1)
        writer.write(0, 4)
        writer.simpleCode([0, 1, 2], alphabetSize: 3)
        writer.writeCode(0b10, 2); writer.write(0, 1)
        writer.writeCode(0b10, 2); writer.write(0, 1)
        writer.writeCode(0b11, 2)
        writer.writeCode(0b10, 2); writer.write(1, 1)
        writer.write(1, 1)
        // Literal code 0: a → 0, b → 10, c → 110, d → 111 (NSYM 4, tree-select 1); code 1: X.
        writer.simpleCode(Array("abcd".utf8).map(Int.init), alphabetSize: 256, treeSelect: 1)
        writer.simpleCode([Int(UInt8(ascii: "X"))], alphabetSize: 256)
        // Command type 0: insert 1, copy 2 (symbol 136); type 1: insert 1, copy 3 (137).
        writer.simpleCode([136], alphabetSize: 704)
        writer.simpleCode([137], alphabetSize: 704)
        writer.simpleCode([16], alphabetSize: 66)
        writer.simpleCode([17], alphabetSize: 66)
        // 1: "a", copy 2 from 1 back. 2: switches (their counts' extra bits), "X", 3 from 2 back.
        // 3: "c", 2 from 1. 4: "X", 3 from 2.
        writer.writeCode(0, 1)
        writer.write(0, 2); writer.write(0, 2); writer.write(0, 2)
        writer.write(0, 2); writer.write(0, 2); writer.writeCode(0b110, 3); writer.write(0, 2)
        writer.write(0, 2); writer.write(0, 2); writer.write(0, 2)
        #expect(try decode(writer.bytes) == Array("aaaXaXacccXcXc".utf8))
    }

    // MARK: Lengths and distances (§4, §5)

    @Test func insertAndCopyCodesSplitAsSection5Says() {
        let table = BrotliDecoder.Tables.insertAndCopy
        #expect(table.count == 704)
        let first = table[0], explicit = table[130], last = table[703], middle = table[300]
        #expect((first.insertBase, first.copyBase, first.reusesLastDistance) == (0, 2, true))
        #expect((explicit.insertBase, explicit.copyBase, explicit.reusesLastDistance) == (0, 4, false))
        // 703: insert code 23 and copy code 23, both with 24 extra bits.
        #expect((last.insertBase, last.insertExtraBits, last.copyBase, last.copyExtraBits) == (22594, 24, 2118, 24))
        // 300 = 256 + 44: insert code 8 + 5 = 13 (50, 4 bits), copy code 4 (6).
        #expect((middle.insertBase, middle.insertExtraBits, middle.copyBase, middle.copyExtraBits) == (50, 4, 6, 0))
    }

    @Test func shortDistanceCodesReadTheLastFour() {
        var distances = BrotliDecoder.LastDistances()
        // The ring starts 16, 15, 11, 4 (4 the last).
        let expected: [Int?] = [4, 11, 15, 16, 3, 5, 2, 6, 1, 7, 10, 12, 9, 13, 8, 14]
        #expect((0 ..< 16).map { distances.shortCode($0) } == expected)
        distances.push(1)
        #expect(distances.shortCode(0) == 1)
        #expect(distances.shortCode(1) == 4)
        #expect(distances.shortCode(3) == 15)
        // Last distance - 1 and - 2: zero and less are refused.
        #expect(distances.shortCode(4) == nil)
        #expect(distances.shortCode(6) == nil)
    }

    @Test func distancesPastTheWindowAreRefused() throws {
        // WBITS 10: a window of 1008 bytes. 1100 bytes, then a copy of 2 from `distance` back.
        let data = (0 ..< 1100).map { UInt8(truncatingIfNeeded: $0 * 7) }
        func stream(distance: Int) -> [UInt8] {
            var writer = BitWriter()
            writer.windowBits(10)
            writer.uncompressedMetaBlock(data)
            appendCopy(&writer, distance: distance, length: 2, output: 2, isLast: true)
            return writer.bytes
        }
        #expect(try decode(stream(distance: 1008)) == data + data[92 ..< 94])
        #expect(failure(stream(distance: 1009))
            == BrotliDecoder.Failure(reason: "brotli: a distance reaches past the window, and a copy of 2 bytes is no dictionary word"))

        // At the start nothing is behind: distance 1 is already too far.
        var writer = BitWriter()
        writer.windowBits(16)
        appendCopy(&writer, distance: 1, length: 3, output: 3, isLast: true)
        #expect(failure(writer.bytes)
            == BrotliDecoder.Failure(reason: "brotli: a distance reaches past the window, and a copy of 3 bytes is no dictionary word"))

        // A word whose transform would be the 122nd: past the dictionary too.
        var tooFar = BitWriter()
        tooFar.windowBits(16)
        appendCopy(&tooFar, distance: 1 + 121 << 10, length: 4, output: 4, isLast: true)
        #expect(failure(tooFar.bytes)
            == BrotliDecoder.Failure(reason: "brotli: a distance reaches past the window and the dictionary (transform 121)"))
    }

    // MARK: The static dictionary (§8, Appendices A and B)

    @Test func theDictionaryIsAppendixA() {
        let words = BrotliDecoder.StaticDictionary.bytes
        #expect(words.count == 122_784)
        // Appendix A gives its CRC-32.
        #expect(CRC32.checksum(words) == 0x5136_CB04)
        // §8's DOFFSET from Appendix A's NDBITS ends where the bytes do.
        let offsets = BrotliDecoder.StaticDictionary.offsets
        #expect(offsets[24] + 24 << BrotliDecoder.StaticDictionary.sizeBits[24] == words.count)
        #expect(offsets[5] == 4096)
        #expect(offsets[24] == 122_016)
        func word(_ length: Int, _ index: Int) -> String {
            let start = offsets[length] + index * length
            return String(decoding: words[start ..< start + length], as: UTF8.self)
        }
        #expect(word(4, 0) == "time")
        #expect(word(4, 1) == "down")
        #expect(word(5, 0) == "first")
        #expect(word(7, 0) == "profile")
        #expect(word(24, 0) == "<script type=\"text/javas")
        #expect(word(17, 127) == "occasionally used")
    }

    @Test func theTransformsAreAppendixB() {
        // Appendix B's check: each transform as prefix, 0, its kind's number, suffix, 0:
        // 648 bytes with CRC-32 0x3d965f81.
        var bytes: [UInt8] = []
        for transform in BrotliDecoder.Transform.all {
            let kind = switch transform.kind {
            case .identity: 0
            case .fermentFirst: 1
            case .fermentAll: 2
            case .omitFirst(let n): 2 + n
            case .omitLast(let n): 11 + n
            }
            bytes += transform.prefix + [0, UInt8(kind)] + transform.suffix + [0]
        }
        #expect(BrotliDecoder.Transform.all.count == 121)
        #expect(bytes.count == 648)
        #expect(CRC32.checksum(bytes) == 0x3D96_5F81)
    }

    @Test func dictionaryWordsComeTransformed() throws {
        // (length, index, transform, what comes out)
        let cases: [(Int, Int, Int, [UInt8])] = [
            (4, 0, 0, Array("time".utf8)),
            (4, 0, 9, Array("Time".utf8)),
            (4, 0, 44, Array("TIME".utf8)),
            (4, 0, 49, Array("timing ".utf8)),
            (4, 0, 3, Array("ime".utf8)),
            (4, 0, 73, Array(" the time of the ".utf8)),
            (4, 0, 102, [0xC2, 0xA0] + Array("time".utf8)),
            (5, 0, 12, Array("firs".utf8)),
            (24, 0, 0, Array("<script type=\"text/javas".utf8)),
            // "за": FermentFirst flips bit 5 of a two-byte character's second byte.
            (4, 939, 9, Array("За".utf8)),
            (4, 939, 44, Array("ЗА".utf8)),
            // 中文: FermentAll flips bits 0 and 2 of each three-byte character's third byte.
            (6, 628, 44, [0xE4, 0xB8, 0xA8, 0xE6, 0x96, 0x82]),
        ]
        var writer = BitWriter()
        writer.windowBits(16)
        var expected: [UInt8] = []
        for (number, (length, index, transform, output)) in cases.enumerated() {
            // Past the output so far by one is the first word of the dictionary.
            let wordID = transform << BrotliDecoder.StaticDictionary.sizeBits[length] | index
            appendCopy(&writer, distance: expected.count + 1 + wordID, length: length, output: output.count,
                       isLast: number == cases.count - 1)
            expected += output
        }
        #expect(try decode(writer.bytes) == expected)
    }

    // MARK: Bounds

    @Test func outputPastTheLimitIsRefused() throws {
        #expect(try decode(Vectors.quality11, limit: 600) == Plaintexts.english600)
        #expect(failure(Vectors.quality11, limit: 599)
            == BrotliDecoder.Failure(reason: "decoded body larger than 599 bytes", exceededLimit: true))
        #expect(failure(Vectors.noise, limit: 99)
            == BrotliDecoder.Failure(reason: "decoded body larger than 99 bytes", exceededLimit: true))
        // The bomb is refused at its meta-block header, before a byte is written.
        #expect(failure(Vectors.zeros, limit: 65536)
            == BrotliDecoder.Failure(reason: "decoded body larger than 65536 bytes", exceededLimit: true))
        #expect(try decode(Vectors.empty, limit: 0) == [])
    }

    @Test func everyTruncationThrows() {
        for vector in [Vectors.quality0, Vectors.quality11, Vectors.samples, Vectors.noise, Vectors.empty] {
            for length in 0 ..< vector.count {
                #expect(failure(Array(vector.prefix(length))) == truncated, "\(length) of \(vector.count) bytes")
            }
        }
    }

    @Test func damagedStreamsThrowOrDecode() {
        // Every single-bit flip of a vector: each decodes to something or throws, none traps
        // (the fuzzing done while developing went much further).
        let vector = Vectors.distanceContexts
        var refused = 0
        for bit in 0 ..< vector.count * 8 {
            var damaged = vector
            damaged[bit / 8] ^= 1 << UInt8(bit % 8)
            if failure(damaged, limit: 4096) != nil { refused += 1 }
        }
        #expect(refused > 0)
    }
}

private extension Array {
    func repeated(_ times: Int) -> [Element] { (0 ..< times).flatMap { _ in self } }
}
