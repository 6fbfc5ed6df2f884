import Testing
@testable import HTTP
import TestSupport

private func decode(_ bytes: [UInt8], limit: Int = 1 << 24) throws(ZstdDecoder.Failure) -> [UInt8] {
    let result = bytes.withUnsafeBytes { raw in
        Result { () throws(ZstdDecoder.Failure) in try ZstdDecoder.decode(raw, limit: limit) }
    }
    return try result.get()
}

/// What decoding `bytes` throws; nil when it decodes.
private func failure(_ bytes: [UInt8], limit: Int = 1 << 24) -> ZstdDecoder.Failure? {
    do {
        _ = try decode(bytes, limit: limit)
        return nil
    } catch {
        return error
    }
}

/// The vectors were made with the zstd CLI (v1.5.4), as each one's comment
/// says; `--zstd=wlog=10` asks for a 1 KiB window, so 1 KiB blocks. Their
/// inputs come from `Inputs` (a script made them with the same SplitMix64),
/// each picked because its frame uses the parts of the format its test names
/// (the decoder was run with counters on each path to check it).
/// `handWritten`, `offsetTooFar` and `manySequences` were written by hand and
/// checked with the CLI.
private enum Vectors {
    /// `printf hello | zstd`.
    static let hello = hex("28b52ffd045829000068656c6c6fa36d9f88")
    /// `zstd` of an empty file: a content size of 0, one empty raw block.
    static let empty = hex("28b52ffd240001000099e9d851")
    /// `zstd -3` of 200,000 × "a".
    static let rleBlock = hex("28b52ffda4400d03005400001061610100fbff39c002036a08618356bc98")
    /// `zstd -19` of `Inputs.words(seed: 1, count: 60)`.
    static let words = hex("""
        28b52ffd647d00950500e2081911b03db02d13d8a416b695929d24a9c954044bb20714f77b37d07502fcaf23f32fc4b4
        5c6f0a9e5d923df0ed63b0f26475da7e7ef70eaba16b2fe159ed648bd518b02c0a2c01051d852e61bbbc646219b9e2bd
        6e2b7e633df1eb376969e5b48489ed7e1f1fa840a3d1969466da0d1010014112fa10728199822d0624a5b17351f1a195
        9c4f2f6840defb91971c4a53ac20750f90254031a47911d7d568047d125453aeefab14ca19c9253302b19b02c99269f9
        """)
    /// `zstd -19` of `Inputs.letters(seed: 3, count: 400, ...)`, bytes 0...8.
    static let directWeights = hex("""
        28b52ffd649000350500069928873212221125002600250065d7e301e201b4b77897cca93423aeff87b4194b12c7fa86
        60f1477dd8cb72678fc20cf70d42bee3a97ec0992d423d5362c388bc45219961f1f737f4a2e4500ad6fb9ff990e1db0e
        b44d06b30f626355fdd9295b1d90fc00f1fc53010f93fa60c79ace7c972a5a31bdd66c9843a14f067d80d0d7e5f95128
        ee1f6b1187377d1af6b9919011cd04cb961e63160d77acce64c65726bb9c0200bef1a56a
        """)
    /// `zstd -19 --zstd=wlog=10` of `Inputs.letters(seed: 8, count: 1100, ...)`.
    static let treeless = hex("""
        28b52ffd44004c03cc0a000a4050050be0690c63ac5a009fa239014d0054005000b1b39f6fa01c4f9633be053bbabb18
        be664da0212080005b7060a163f335636fcb4c5063eb9fac009b58b081bdf8881f22758e2cf681a20bac6ac7617bb73b
        67e2f914220352a26e37794ce141d340646eb3b077ebc0d0c494c9102519b0988d5cac350d47c2668b8c7da7b31035f7
        e3415432dd4cdc8c30190cc824f18a04394837b319919bcb6c27f322cf9865c15c7c791b023a2b33af86e66915b6b0b9
        931d8765449f1d8cc54467efaa9c4b38819100c1b6e7758b1ab8044ca1cc1784d90dca3c1c2ca43b4e329e9261b371b6
        2c4f4095d52ecdb46d5026778e779119a6a31d632230cf1616c82fce41f7d046990325d40c14b6274046084b10729e54
        d42b92186db233a6b914d5726ec360da4458a7e0f1276414a000b6bd65a990411c67a53efbf62e439448a805a5401fab
        637730529bb1da2f96b819486c0ec96e0bb30600e50000c3040631237e9628f1869d11002e1669b0ce64018745fc3639
        199f00b6437c6f
        """)
    /// `zstd -19 --zstd=wlog=10` of `Inputs.starred(seed: 16, unit: 40, size: 4600, every: 78)`.
    static let repeatModes = hex("""
        28b52ffd4400f810fc02001404074b74da4e6c87995b6d4897641eacf11ddb3ff18801eb3914c98ce58cdd75f6f1f332
        8824c2912a2e2ac22a882af32af62add2ae52ac92a392a012af12adb2af11aa810f0fb7f07e03703104e84ff7fdf0744
        5454850ca12208ac9652840100d8142a1e2a972a6d2a992a6c2ada2a4b2a2e2ac22a882af32af62add1b58010010fe15
        e115e1791f04800a0015006adc440100d85b2ae52ac92a392a012af12adb2af12a1e2a972a6d2a992a6c2ada1b5c0100
        91002215002a0082a40100a0f12a4b2a2e2ac22a882af12a2a2a2a2a2a2a2a2a1ba8903e70bd19104e84ff7fe703518a
        6db459624b0c2dec4f6922ac89e0d9cd0000302a2a2a2a2a2a0df810feffbf111f319073910cabd177ce0cb5320bfc
        """)
    /// `zstd -19 --zstd=wlog=10` of `Inputs.starred(seed: 5, unit: 50, size: 2500, every: 69)`.
    static let rleLiterals = hex("""
        28b52ffd4400c40824030014045af84745c544212be863a73cfb0d17566bfb77d8d9cb20efe303d621dfb697f57fce2a
        e54eef4ccb2202dfc991634333f0cd8f2a2a2a2a2a2a2a2a2a2a2a2a2a2a1da8f07cff3f03203d1d10fe156144f8f960
        00ee3258718fe3dae76ed852874c01c40000792a1ff8103e21c2fffb016000ee3258718fe38e7b1cd012bd0000302a2a
        2a2a2a2a0ef810fe19e146fc7db0cb3d9c47174aec35a754
        """)
    /// `zstd -19` of `Inputs.changedText(seed: 31, size: 9200, every: 410)`.
    static let lessOne = hex("""
        28b52ffd64f0221d0d0042491a11b03db02d13d8a416b695929d24a9c95404f3405f2444c6f49c39a08274fdf7f3b78f
        c13cf1eb3729012ee1596d2b7e83564e5d08132bde6bb304903705cf2ae8287409930dc5fd5e32b18cdc25d9035b9eac
        4eeb1d5643d78e8281ee7564bb588d01cbfa17625a06809ca8d12a4d5250a94c6b6046206376d418721826c32b292730
        ca0884c4ff489c483013580f581a123e70a16a38910e5b9bd603b7a2e4157dbd5085e0363aaa6322341088a8b1e0889e
        804a35088cc1224e3938da102286242fec9a0f1785637aa1c5aa101617c709df9953dc64fdae06264b9125f7bb238957
        090a970ac915a6b99f769bcd6b43bc265b5b2d5a30bb1c9ea941bb070f144b1260a80d4490d3864e9e8da74f86461ad8
        09183d6508cdaf64d6e6ab09afc8e5d96b30ae7445d094c8c2452043a0dba60580ef281da3b5cdf3a04c9ab04243bbfc
        3651a8d53acfa080ceca19c6272c00476320e5f93c4e176b5815887c68df937ab7fe12caa3946f2aba4ceed8c0419502
        dc2368d737706145a30089f2a4eae70f39e93f33ad1968c674f7d5139b04dc19615a596b7580ad129a0982410dc0572f
        20
        """)
    /// `zstd -19` of `Inputs.starred(seed: 4, unit: 100, size: 140_000, every: 8192)`.
    static let twoBlocks = hex("""
        28b52ffda4e02202007406004407ca305f9eb9e15e52c90522f9bc3829513be4867a5491720bd00dfdef5ad14ea03d5d
        5d133497e208edfad12d710468a6386d142cf37ec78f6d6fbe035bd0f4a0108d2f097def6321849e22a670c2248758a1
        bcc6632006545caedff54ec32c97c3fd39022a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a21a8f1f5fdff0d007b633311fcff
        ffdf109cf8010de7491794f3d805e03c75c1396f5dc09cb72e30e7ad0bcc79ea0273debae09cb72e68ce5b1798f3d605
        e63c7581396f5d70ce5b1734e7ad0bc49c1f7deac8cc9f84ac026d0000082a03d0003d2b9cf7f5df3f02e1edbcda
        """)

    /// Written by hand, and checked with the CLI: a compressed block of raw
    /// literals "ab" and one sequence in the predefined tables (literals length
    /// state 24 = code 2, offset state 14 = code 2 with extra bits 01 =
    /// Offset_Value 5 = offset 2, match length state 0 = code 0 = length 3):
    /// "ababa". `offsetTooFar` has extra bits 10: an offset of 3 after 2 bytes.
    static let handWritten = hex("28b52ffd00004500001061620100010e0b")
    static let offsetTooFar = hex("28b52ffd00004500001061620100020e0b")

    /// Written by hand, and checked with the CLI: a raw block "abcd", then a
    /// compressed block of no literals and 32,512 sequences, a count only the
    /// 3-byte Number_of_Sequences (ff 00 00) can give, all three tables in
    /// RLE_Mode with code 0 (no bits at all: the bitstream is its marker byte
    /// 01). Each sequence is Offset_Value 1 with no literals, the second most
    /// recent offset, and copies 3 bytes: from 4 back, then 1, 4, 1...
    static let manySequences = hex("28b52ffd0038 200000 61626364 4d0000 00 ff0000 54 000000 01")

    /// A skippable frame (RFC 8878 §3.1.2), magic 0x184D2A53, with 5 bytes of user data.
    static let skippable = hex("532a4d18 05000000") + Array("meta!".utf8)
}

/// The inputs the vectors were compressed from, made again here with
/// TestSupport's SplitMix64 just as the script that made them did.
private enum Inputs {
    static let vocabulary = ("the quick brown fox jumps over lazy dog zstd frame block literals sequences offset match "
        + "length huffman tree weights table state window checksum stream").split(separator: " ").map { Array($0.utf8) }

    /// `count` words of the vocabulary picked at random, between spaces.
    static func words(seed: UInt64, count: Int) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        var text: [UInt8] = []
        for index in 0 ..< count {
            if index > 0 { text.append(0x20) }
            text += vocabulary[Int(random.next() % UInt64(vocabulary.count))]
        }
        return text
    }

    /// `count` bytes picked at random from `alphabet` (uneven when it repeats some).
    static func letters(seed: UInt64, count: Int, alphabet: [UInt8]) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        return (0 ..< count).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
    }

    /// A random `unit`-byte string repeated to `size` bytes, a "*" put in every
    /// `every` bytes: long matches, with literals that are mostly "*".
    static func starred(seed: UInt64, unit: Int, size: Int, every: Int) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        let pattern = (0 ..< unit).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        var bytes = (0 ..< size).map { pattern[$0 % unit] }
        for index in stride(from: every / 2, to: size, by: every) { bytes[index] = 0x2A }
        return bytes
    }

    /// The first 1000 bytes of 200 words repeated to `size` bytes, one letter
    /// changed at random in every `every` bytes.
    static func changedText(seed: UInt64, size: Int, every: Int) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        let unit = Array(words(seed: seed, count: 200).prefix(1000))
        var bytes = (0 ..< size).map { unit[$0 % unit.count] }
        for start in stride(from: 0, to: size - every, by: every) {
            let letter = 97 + UInt8(random.next() % 26)
            bytes[start + Int(random.next() % UInt64(every))] = letter
        }
        return bytes
    }
}

@Suite struct ZstdDecoderTests {
    // MARK: - Blocks and literals

    /// From a pipe: a Window_Descriptor instead of a content size, one raw block, a checksum.
    @Test func aPipedHelloIsOneRawBlock() throws {
        #expect(try decode(Vectors.hello) == Array("hello".utf8))
    }

    @Test func anEmptyFrameDecodesToNothing() throws {
        #expect(try decode(Vectors.empty) == [])
        #expect(try decode(Vectors.empty, limit: 0) == [])
    }

    /// 200,000 × "a": an RLE block of 128 KiB, then a compressed block in the predefined tables.
    @Test func anRLEBlockRepeatsItsByte() throws {
        #expect(try decode(Vectors.rleBlock) == [UInt8](repeating: 0x61, count: 200_000))
    }

    /// Text: Huffman-coded literals in one stream (weights FSE-coded), and all
    /// three sequence tables FSE-coded in the block.
    @Test func textHasHuffmanLiteralsAndFSECodedTables() throws {
        #expect(try decode(Vectors.words) == Inputs.words(seed: 1, count: 60))
    }

    /// Nine byte values 0...8: a tree with its weights in the direct 4-bit form, literals in four streams.
    @Test func fewSymbolsHaveDirectWeightsAndFourStreams() throws {
        let input = Inputs.letters(seed: 3, count: 400, alphabet: [0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(try decode(Vectors.directWeights) == input)
    }

    /// Two 1 KiB blocks of only literals: four streams each, the second block reusing the first one's tree.
    @Test func treelessLiteralsReuseThePreviousTree() throws {
        let input = Inputs.letters(seed: 8, count: 1100, alphabet: Array("eeeeettaon \n".utf8))
        #expect(try decode(Vectors.treeless) == input)
    }

    /// A literal that is always "*": RLE literals in a block.
    @Test func rleLiteralsRepeatOneByte() throws {
        #expect(try decode(Vectors.rleLiterals) == Inputs.starred(seed: 5, unit: 50, size: 2500, every: 69))
    }

    // MARK: - Sequences

    /// Five 1 KiB blocks whose sequences use RLE_Mode (literals lengths, offsets)
    /// and Repeat_Mode for all three tables, and repeat offsets 1 and 2.
    @Test func sequenceTablesRepeatAndRunLength() throws {
        #expect(try decode(Vectors.repeatModes) == Inputs.starred(seed: 16, unit: 40, size: 4600, every: 78))
    }

    /// RFC 8878 §3.1.1.5: with no literals before it, Offset_Value 3 is the most recent offset less one.
    @Test func aRepeatOffsetLessOneByte() throws {
        #expect(try decode(Vectors.lessOne) == Inputs.changedText(seed: 31, size: 9200, every: 410))
    }

    /// 140,000 bytes in 238: a full 128 KiB block then a second one with the
    /// predefined match length table, an RLE offset table and the literals
    /// length table repeated.
    @Test func aBodyOverOneBlockDecodes() throws {
        #expect(try decode(Vectors.twoBlocks) == Inputs.starred(seed: 4, unit: 100, size: 140_000, every: 8192))
    }

    @Test func aBlockOfOver32511SequencesDecodes() throws {
        let expected = Array("abcdabc".utf8) + [UInt8](repeating: 0x63, count: 32_512 * 3 - 3)
        #expect(try decode(Vectors.manySequences) == expected)
    }

    @Test func aHandWrittenSequenceDecodes() throws {
        #expect(try decode(Vectors.handWritten) == Array("ababa".utf8))
    }

    /// An offset past the frame's output is refused, also when an earlier frame's output is there.
    @Test func anOffsetBeforeTheFrameIsRefused() {
        let reason = "zstd: a match offset of 3 reaches before the start of the frame"
        #expect(failure(Vectors.offsetTooFar)?.reason == reason)
        #expect(failure(Vectors.hello + Vectors.offsetTooFar)?.reason == reason)
    }

    // MARK: - Frames

    /// RFC 8878 §3.1: frames one after another decode as their contents' concatenation; skippable frames are skipped.
    @Test func framesFollowOneAnother() throws {
        let words = Inputs.words(seed: 1, count: 60)
        #expect(try decode(Vectors.words + Vectors.skippable + Vectors.hello + Vectors.empty) == words + Array("hello".utf8))
        #expect(try decode(Vectors.skippable) == [])
        #expect(try decode(Vectors.hello + Vectors.hello) == Array("hellohello".utf8))
    }

    @Test func aChangedChecksumIsDetected() {
        var changed = Vectors.words
        changed[changed.count - 1] ^= 0x01
        #expect(failure(changed)?.reason == "zstd: content checksum mismatch")
        var changedHello = Vectors.hello
        changedHello[changedHello.count - 4] ^= 0x80
        #expect(failure(changedHello)?.reason == "zstd: content checksum mismatch")
    }

    /// The content size must match what the blocks make: here an empty frame that announces one byte.
    @Test func theContentSizeIsChecked() {
        var announcing = Vectors.empty
        announcing[5] = 1
        #expect(failure(announcing)?.reason == "zstd: a frame decodes to 0 bytes, not its content size of 1")
    }

    /// No prefix of a frame is a frame: each one throws, none traps.
    @Test func everyTruncationThrows() {
        for vector in [Vectors.hello, Vectors.words, Vectors.treeless, Vectors.repeatModes, Vectors.handWritten] {
            for count in 0 ..< vector.count {
                #expect(failure(Array(vector.prefix(count))) != nil, "a prefix of \(count) bytes")
            }
        }
        #expect(failure(Array(Vectors.skippable.dropLast()))?.reason == "zstd: truncated skippable frame")
    }

    @Test func theLimitIsNeverPassed() throws {
        // The content size is known: refused before decoding.
        let refused = failure(Vectors.rleBlock, limit: 199_999)
        #expect(refused == ZstdDecoder.Failure(reason: "decoded body larger than 199999 bytes", exceededLimit: true))
        #expect(try decode(Vectors.rleBlock, limit: 200_000).count == 200_000)
        // No content size: refused at the block that would pass it.
        #expect(failure(Vectors.hello, limit: 4)?.exceededLimit == true)
        #expect(try decode(Vectors.hello, limit: 5) == Array("hello".utf8))
        // The limit is for all frames together.
        #expect(failure(Vectors.hello + Vectors.hello, limit: 9)?.exceededLimit == true)
        #expect(failure(Vectors.twoBlocks, limit: 100)?.exceededLimit == true)
        // Other failures do not claim it.
        #expect(failure(Vectors.offsetTooFar)?.exceededLimit == false)
    }

    /// Frame header bytes: descriptor 0x05 (a 1-byte Dictionary_ID), the window, the ID.
    @Test func aDictionaryIsRefused() throws {
        let withID = { (id: UInt8) -> [UInt8] in hex("28b52ffd 05 58") + [id] + Vectors.hello.dropFirst(6) }
        #expect(failure(withID(42))?.reason == "zstd: a dictionary is needed")
        // §3.1.1.1.3: an ID of 0 is no ID.
        #expect(try decode(withID(0)) == Array("hello".utf8))
    }

    @Test func trailingBytesAreRefused() {
        #expect(failure(Vectors.words + [0x00])?.reason == "zstd: trailing bytes after the last frame")
        #expect(failure(Vectors.hello + Array("garbage".utf8))?.reason == "zstd: trailing bytes after the last frame")
    }

    @Test func malformedHeadersAreRefused() {
        #expect(failure([])?.reason == "zstd: no frame")
        #expect(failure(Array("{\"json\": true}".utf8))?.reason == "zstd: not zstd data (no frame magic number)")
        var reserved = Vectors.hello
        reserved[4] |= 0x08
        #expect(failure(reserved)?.reason == "zstd: the frame header's reserved bit is set")
        var blockType = Vectors.hello
        blockType[6] |= 0x06
        #expect(failure(blockType)?.reason == "zstd: reserved block type")
        // hello's block header says a last raw block of 5 bytes; of 100, it runs past the input.
        var long = Vectors.hello
        long[6] = 0x21
        long[7] = 0x03
        #expect(failure(long)?.reason == "zstd: truncated block")
    }

    /// Random damage to every vector: each decode returns or throws, none traps
    /// (SplitMix64, seeded, so a failure reproduces).
    @Test func damagedInputThrowsWithoutTrapping() {
        var random = SeededRandom(seed: 0x7A57D)
        let vectors = [Vectors.hello, Vectors.words, Vectors.directWeights, Vectors.treeless, Vectors.repeatModes,
                       Vectors.rleLiterals, Vectors.lessOne, Vectors.twoBlocks, Vectors.rleBlock, Vectors.handWritten,
                       Vectors.manySequences]
        var failures = 0
        for vector in vectors {
            for _ in 0 ..< 100 {
                var damaged = vector
                for _ in 0 ... random.next() % 3 {
                    let index = Int(random.next() % UInt64(damaged.count))
                    switch random.next() % 3 {
                    case 0: damaged[index] ^= 1 << (random.next() % 8)
                    case 1: damaged[index] = UInt8(truncatingIfNeeded: random.next())
                    default: damaged.remove(at: index)
                    }
                }
                if failure(damaged, limit: 1 << 18) != nil { failures += 1 }
            }
        }
        // Most damage is caught (the checksums see the rest, where present).
        #expect(failures > vectors.count * 100 * 9 / 10)
    }

    // MARK: - Parts

    /// RFC 8878 Appendix A's decoding tables for the predefined codes, row by row where listed here.
    @Test func predefinedTablesMatchAppendixA() {
        func rows(_ table: ZstdDecoder.FSETable, _ states: [Int]) -> [[Int]] {
            states.map { state in
                let entry = table.entries[state]
                return [state, Int(entry.symbol), Int(entry.bits), Int(entry.baseline)]
            }
        }
        #expect(ZstdDecoder.literalLengthDefault.entries.count == 64)
        #expect(rows(ZstdDecoder.literalLengthDefault, [0, 1, 2, 10, 17, 22, 38, 39, 43, 60, 63]) == [
            [0, 0, 4, 0], [1, 0, 4, 16], [2, 1, 5, 32], [10, 14, 6, 0], [17, 25, 5, 32], [22, 0, 4, 32],
            [38, 25, 4, 0], [39, 25, 4, 16], [43, 0, 4, 48], [60, 35, 6, 0], [63, 32, 6, 0],
        ])
        #expect(ZstdDecoder.matchLengthDefault.entries.count == 64)
        #expect(rows(ZstdDecoder.matchLengthDefault, [0, 1, 2, 22, 43, 44, 45, 57, 63]) == [
            [0, 0, 6, 0], [1, 1, 4, 0], [2, 2, 5, 32], [22, 1, 4, 16], [43, 1, 4, 32], [44, 1, 4, 48],
            [45, 2, 4, 16], [57, 52, 6, 0], [63, 46, 6, 0],
        ])
        #expect(ZstdDecoder.offsetDefault.entries.count == 32)
        #expect(rows(ZstdDecoder.offsetDefault, [0, 1, 6, 14, 15, 20]) == [
            [0, 0, 5, 0], [1, 6, 4, 0], [6, 7, 4, 0], [14, 2, 5, 0], [15, 7, 4, 16], [20, 8, 4, 16],
        ])
    }

    /// Values from the xxHash library (libxxhash 0.8.1's XXH64, seed 0): the
    /// lengths take each path (under 32 bytes; stripes; 8-, 4- and 1-byte tails).
    @Test func xxh64MatchesTheReference() {
        func digest(_ bytes: [UInt8]) -> UInt64 { bytes.withUnsafeBytes { XXHash64.digest($0) } }
        #expect(digest([]) == 0xEF46_DB37_51D8_E999)
        #expect(digest(Array("abc".utf8)) == 0x44BC_2CF5_AD77_0999)
        #expect(digest(Array("The quick brown fox jumps over the lazy dog".utf8)) == 0x0B24_2D36_1FDA_71BC)
        #expect(digest((0 ..< 255).map { UInt8($0) }) == 0x0F7D_9750_7CAA_D693)
    }
}
