import Testing
@testable import HTTP
import TestSupport

/// One block of an RFC 7541 Appendix C sequence: what it decodes to and the
/// dynamic table after it (newest entry first) with its §4.1 size.
struct HPACKExample: Sendable, CustomStringConvertible {
    var name: String
    var block: [UInt8]
    var headers: [HPACKHeader]
    var table: [HPACKHeader]
    var tableSize: Int
    var description: String { name }
}

/// RFC 7541 Appendix C: the blocks and what the RFC says each holds.
enum HPACKExamples {
    static let firstRequest = [
        HPACKHeader(":method", "GET"), HPACKHeader(":scheme", "http"), HPACKHeader(":path", "/"),
        HPACKHeader(":authority", "www.example.com"),
    ]
    static let secondRequest = [
        HPACKHeader(":method", "GET"), HPACKHeader(":scheme", "http"), HPACKHeader(":path", "/"),
        HPACKHeader(":authority", "www.example.com"), HPACKHeader("cache-control", "no-cache"),
    ]
    static let thirdRequest = [
        HPACKHeader(":method", "GET"), HPACKHeader(":scheme", "https"), HPACKHeader(":path", "/index.html"),
        HPACKHeader(":authority", "www.example.com"), HPACKHeader("custom-key", "custom-value"),
    ]
    static let requestTables = [
        [HPACKHeader(":authority", "www.example.com")],
        [HPACKHeader("cache-control", "no-cache"), HPACKHeader(":authority", "www.example.com")],
        [HPACKHeader("custom-key", "custom-value"), HPACKHeader("cache-control", "no-cache"),
         HPACKHeader(":authority", "www.example.com")],
    ]

    /// C.3: requests without Huffman coding.
    static let requests = [
        HPACKExample(name: "C.3.1", block: hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"),
                     headers: firstRequest, table: requestTables[0], tableSize: 57),
        HPACKExample(name: "C.3.2", block: hex("8286 84be 5808 6e6f 2d63 6163 6865"),
                     headers: secondRequest, table: requestTables[1], tableSize: 110),
        HPACKExample(name: "C.3.3",
                     block: hex("8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"),
                     headers: thirdRequest, table: requestTables[2], tableSize: 164),
    ]

    /// C.4: the same requests, Huffman-coded.
    static let huffmanRequests = [
        HPACKExample(name: "C.4.1", block: hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"),
                     headers: firstRequest, table: requestTables[0], tableSize: 57),
        HPACKExample(name: "C.4.2", block: hex("8286 84be 5886 a8eb 1064 9cbf"),
                     headers: secondRequest, table: requestTables[1], tableSize: 110),
        HPACKExample(name: "C.4.3", block: hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"),
                     headers: thirdRequest, table: requestTables[2], tableSize: 164),
    ]

    static let date21 = "Mon, 21 Oct 2013 20:13:21 GMT"
    static let date22 = "Mon, 21 Oct 2013 20:13:22 GMT"
    static let location = "https://www.example.com"
    static let cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
    static let firstResponse = [
        HPACKHeader(":status", "302"), HPACKHeader("cache-control", "private"), HPACKHeader("date", date21),
        HPACKHeader("location", location),
    ]
    static let secondResponse = [
        HPACKHeader(":status", "307"), HPACKHeader("cache-control", "private"), HPACKHeader("date", date21),
        HPACKHeader("location", location),
    ]
    static let thirdResponse = [
        HPACKHeader(":status", "200"), HPACKHeader("cache-control", "private"), HPACKHeader("date", date22),
        HPACKHeader("location", location), HPACKHeader("content-encoding", "gzip"),
        HPACKHeader("set-cookie", cookie),
    ]
    static let responseTables = [
        [HPACKHeader("location", location), HPACKHeader("date", date21), HPACKHeader("cache-control", "private"),
         HPACKHeader(":status", "302")],
        // ":status: 302" was evicted to make room for "307".
        [HPACKHeader(":status", "307"), HPACKHeader("location", location), HPACKHeader("date", date21),
         HPACKHeader("cache-control", "private")],
        [HPACKHeader("set-cookie", cookie), HPACKHeader("content-encoding", "gzip"), HPACKHeader("date", date22)],
    ]

    /// C.5: responses through a 256-octet table, without Huffman coding.
    static let responses = [
        HPACKExample(name: "C.5.1", block: hex("""
            4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
            2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
            6c65 2e63 6f6d
            """), headers: firstResponse, table: responseTables[0], tableSize: 222),
        HPACKExample(name: "C.5.2", block: hex("4803 3330 37c1 c0bf"),
                     headers: secondResponse, table: responseTables[1], tableSize: 222),
        HPACKExample(name: "C.5.3", block: hex("""
            88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
            54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
            5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
            3d31
            """), headers: thirdResponse, table: responseTables[2], tableSize: 215),
    ]

    /// C.6: the same responses, Huffman-coded.
    static let huffmanResponses = [
        HPACKExample(name: "C.6.1", block: hex("""
            4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
            2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3
            """), headers: firstResponse, table: responseTables[0], tableSize: 222),
        HPACKExample(name: "C.6.2", block: hex("4883 640e ffc1 c0bf"),
                     headers: secondResponse, table: responseTables[1], tableSize: 222),
        HPACKExample(name: "C.6.3", block: hex("""
            88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
            77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
            9587 3160 65c0 03ed 4ee5 b106 3d50 07
            """), headers: thirdResponse, table: responseTables[2], tableSize: 215),
    ]

    /// Each sequence with the SETTINGS_HEADER_TABLE_SIZE its decoder needs.
    static let sequences: [(tableSize: Int, blocks: [HPACKExample])] = [
        (4096, requests), (4096, huffmanRequests), (256, responses), (256, huffmanResponses),
    ]

    /// The string literals of C.4 and C.6 with their Huffman codes.
    static let huffmanStrings: [(text: String, code: [UInt8])] = [
        ("www.example.com", hex("f1e3 c2e5 f23a 6ba0 ab90 f4ff")),
        ("no-cache", hex("a8eb 1064 9cbf")),
        ("custom-key", hex("25a8 49e9 5ba9 7d7f")),
        ("custom-value", hex("25a8 49e9 5bb8 e8b4 bf")),
        ("302", hex("6402")),
        ("307", hex("640e ff")),
        ("private", hex("aec3 771a 4b")),
        (date21, hex("d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff")),
        (date22, hex("d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff")),
        (location, hex("9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3")),
        ("gzip", hex("9bd9 ab")),
        (cookie, hex("""
            94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed
            4ee5 b106 3d50 07
            """)),
    ]
}

@Suite struct HPACKTests {
    // MARK: C.1 integers

    func readInteger(_ octets: [UInt8], prefixBits: Int) throws(HPACKError) -> (value: Int, consumed: Int) {
        var reader = HPACKReader(octets)
        let value = try reader.readInteger(prefixBits: prefixBits)
        return (value, reader.position)
    }

    func writeInteger(_ value: Int, prefixBits: Int, pattern: UInt8 = 0) -> [UInt8] {
        var block: [UInt8] = []
        HPACKWriter.appendInteger(value, prefixBits: prefixBits, pattern: pattern, to: &block)
        return block
    }

    @Test func c1_1TenInAFiveBitPrefix() throws {
        #expect(writeInteger(10, prefixBits: 5) == [0b0000_1010])
        #expect(try readInteger([0b0000_1010], prefixBits: 5) == (10, 1))
        // The bits above the prefix belong to the representation, not the integer.
        #expect(writeInteger(10, prefixBits: 5, pattern: 0xE0) == [0b1110_1010])
        #expect(try readInteger([0b1110_1010], prefixBits: 5) == (10, 1))
    }

    @Test func c1_21337InAFiveBitPrefix() throws {
        #expect(writeInteger(1337, prefixBits: 5) == [0b0001_1111, 0b1001_1010, 0b0000_1010])
        #expect(try readInteger([0b0001_1111, 0b1001_1010, 0b0000_1010, 0xFF], prefixBits: 5) == (1337, 3))
        #expect(try readInteger([0b1111_1111, 0b1001_1010, 0b0000_1010], prefixBits: 5) == (1337, 3))
    }

    @Test func c1_3FortyTwoAtAnOctetBoundary() throws {
        #expect(writeInteger(42, prefixBits: 8) == [0b0010_1010])
        #expect(try readInteger([0b0010_1010], prefixBits: 8) == (42, 1))
    }

    @Test func integersRoundTripAtTheirEdges() throws {
        for prefixBits in 1 ... 8 {
            let prefixMaximum = (1 << prefixBits) - 1
            for value in [0, 1, prefixMaximum - 1, prefixMaximum, prefixMaximum + 1, prefixMaximum + 127,
                          prefixMaximum + 128, 1 << 14, 1 << 21, 1 << 28, HPACKReader.maximumInteger]
                where value >= 0
            {
                let octets = writeInteger(value, prefixBits: prefixBits)
                #expect(try readInteger(octets, prefixBits: prefixBits) == (value, octets.count),
                         "\(value) in \(prefixBits) bits")
            }
        }
    }

    @Test func integersPastTheLimitOrTooLongOrCutShortThrow() throws {
        // 2^31 and 2^32 + 126: one more than the limit, and far past it.
        #expect(throws: HPACKError.integerOverflow) {
            try readInteger(writeInteger(HPACKReader.maximumInteger + 1, prefixBits: 5), prefixBits: 5)
        }
        #expect(throws: HPACKError.integerOverflow) {
            try readInteger([0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], prefixBits: 7)
        }
        // Zero-valued continuation octets, more of them than any value needs.
        #expect(throws: HPACKError.integerOverflow) {
            try readInteger([0x1F, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], prefixBits: 5)
        }
        #expect(try readInteger([0x1F, 0x80, 0x80, 0x80, 0x80, 0x00], prefixBits: 5) == (31, 6))
        for cut in [[], [0x1F], [0x1F, 0x9A], [0x1F, 0xFF, 0xFF]] as [[UInt8]] {
            #expect(throws: HPACKError.integerTruncated, "\(cut)") { try readInteger(cut, prefixBits: 5) }
        }
    }

    // MARK: C.2 one field each

    func decodeFresh(_ block: [UInt8]) throws(HPACKError) -> (headers: [HPACKHeader], decoder: HPACKDecoder) {
        var decoder = HPACKDecoder()
        let headers = try decoder.decode(block)
        return (headers, decoder)
    }

    @Test func c2_1LiteralWithIndexing() throws {
        let (headers, decoder) = try decodeFresh(hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"))
        #expect(headers == [HPACKHeader("custom-key", "custom-header")])
        #expect(decoder.dynamicTable.headers == [HPACKHeader("custom-key", "custom-header")])
        #expect(decoder.dynamicTable.size == 55)
    }

    @Test func c2_2LiteralWithoutIndexing() throws {
        let (headers, decoder) = try decodeFresh(hex("040c 2f73 616d 706c 652f 7061 7468"))
        #expect(headers == [HPACKHeader(":path", "/sample/path")])
        #expect(decoder.dynamicTable.headers.isEmpty && decoder.dynamicTable.size == 0)
    }

    @Test func c2_3LiteralNeverIndexed() throws {
        let (headers, decoder) = try decodeFresh(hex("1008 7061 7373 776f 7264 0673 6563 7265 74"))
        #expect(headers == [HPACKHeader("password", "secret", sensitive: true)])
        #expect(decoder.dynamicTable.headers.isEmpty && decoder.dynamicTable.size == 0)
    }

    @Test func c2_4IndexedField() throws {
        let (headers, decoder) = try decodeFresh(hex("82"))
        #expect(headers == [HPACKHeader(":method", "GET")])
        #expect(decoder.dynamicTable.headers.isEmpty && decoder.dynamicTable.size == 0)
    }

    // MARK: Appendix A

    /// The table as RFC 7541 prints it, so a slip in either copy shows.
    static let appendixA = """
        | 1     | :authority                  |               |
        | 2     | :method                     | GET           |
        | 3     | :method                     | POST          |
        | 4     | :path                       | /             |
        | 5     | :path                       | /index.html   |
        | 6     | :scheme                     | http          |
        | 7     | :scheme                     | https         |
        | 8     | :status                     | 200           |
        | 9     | :status                     | 204           |
        | 10    | :status                     | 206           |
        | 11    | :status                     | 304           |
        | 12    | :status                     | 400           |
        | 13    | :status                     | 404           |
        | 14    | :status                     | 500           |
        | 15    | accept-charset              |               |
        | 16    | accept-encoding             | gzip, deflate |
        | 17    | accept-language             |               |
        | 18    | accept-ranges               |               |
        | 19    | accept                      |               |
        | 20    | access-control-allow-origin |               |
        | 21    | age                         |               |
        | 22    | allow                       |               |
        | 23    | authorization               |               |
        | 24    | cache-control               |               |
        | 25    | content-disposition         |               |
        | 26    | content-encoding            |               |
        | 27    | content-language            |               |
        | 28    | content-length              |               |
        | 29    | content-location            |               |
        | 30    | content-range               |               |
        | 31    | content-type                |               |
        | 32    | cookie                      |               |
        | 33    | date                        |               |
        | 34    | etag                        |               |
        | 35    | expect                      |               |
        | 36    | expires                     |               |
        | 37    | from                        |               |
        | 38    | host                        |               |
        | 39    | if-match                    |               |
        | 40    | if-modified-since           |               |
        | 41    | if-none-match               |               |
        | 42    | if-range                    |               |
        | 43    | if-unmodified-since         |               |
        | 44    | last-modified               |               |
        | 45    | link                        |               |
        | 46    | location                    |               |
        | 47    | max-forwards                |               |
        | 48    | proxy-authenticate          |               |
        | 49    | proxy-authorization         |               |
        | 50    | range                       |               |
        | 51    | referer                     |               |
        | 52    | refresh                     |               |
        | 53    | retry-after                 |               |
        | 54    | server                      |               |
        | 55    | set-cookie                  |               |
        | 56    | strict-transport-security   |               |
        | 57    | transfer-encoding           |               |
        | 58    | user-agent                  |               |
        | 59    | vary                        |               |
        | 60    | via                         |               |
        | 61    | www-authenticate            |               |
        """

    @Test func staticTableIsAppendixA() throws {
        func trimmed(_ cell: Substring) -> String {
            String(cell.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
        }
        let rows = Self.appendixA.split(separator: "\n").map { line in
            line.split(separator: "|", omittingEmptySubsequences: false).map(trimmed)
        }
        #expect(rows.count == HPACKStaticTable.count && HPACKStaticTable.fields.count == HPACKStaticTable.count)
        for row in rows {
            let index = try #require(Int(row[1]))
            let expected = HPACKHeader(row[2], row[3])
            // Both ways in: by index, and as the field the encoder finds.
            var decoder = HPACKDecoder()
            #expect(try decoder.decode(writeInteger(index, prefixBits: 7, pattern: 0x80)) == [expected])
            var encoder = HPACKEncoder()
            let block = encoder.encode([expected])
            #expect(block == writeInteger(index, prefixBits: 7, pattern: 0x80), "\(index)")
        }
    }

    // MARK: C.3 to C.6 sequences

    func checkSequence(_ blocks: [HPACKExample], tableSize: Int) throws {
        var decoder = HPACKDecoder(maximumTableSize: tableSize)
        for example in blocks {
            let headers = try decoder.decode(example.block)
            #expect(headers == example.headers, "\(example)")
            #expect(decoder.dynamicTable.headers == example.table, "\(example)")
            #expect(decoder.dynamicTable.size == example.tableSize, "\(example)")
        }
    }

    @Test func c3RequestsWithoutHuffman() throws { try checkSequence(HPACKExamples.requests, tableSize: 4096) }
    @Test func c4RequestsWithHuffman() throws { try checkSequence(HPACKExamples.huffmanRequests, tableSize: 4096) }
    @Test func c5ResponsesWithoutHuffman() throws { try checkSequence(HPACKExamples.responses, tableSize: 256) }
    @Test func c6ResponsesWithHuffman() throws { try checkSequence(HPACKExamples.huffmanResponses, tableSize: 256) }

    /// Each prefix of each block, decoded by a copy of the decoder as it was
    /// before that block: a prefix ending between fields gives the first
    /// fields, one ending inside a field throws; nothing traps.
    @Test func everyTruncationOfEveryExampleIsFewerFieldsOrAnError() throws {
        for sequence in HPACKExamples.sequences {
            var decoder = HPACKDecoder(maximumTableSize: sequence.tableSize)
            for example in sequence.blocks {
                var wholeFieldCuts = 0
                for cut in 0 ..< example.block.count {
                    var copy = decoder
                    guard let headers = try? copy.decode(Array(example.block[..<cut])) else { continue }
                    #expect(headers.count < example.headers.count, "\(example) cut at \(cut)")
                    #expect(headers == Array(example.headers.prefix(headers.count)), "\(example) cut at \(cut)")
                    wholeFieldCuts += 1
                }
                // Cut before each field, at least: the test has teeth.
                #expect(wholeFieldCuts >= example.headers.count, "\(example)")
                _ = try decoder.decode(example.block)
            }
        }
    }

    // MARK: Huffman

    @Test func appendixBIsACompleteCanonicalPrefixCode() {
        let codes = HPACKHuffman.codes
        #expect(codes.count == 257)
        // Kraft's equality, in units of 2^-30: the code wastes no bit pattern.
        #expect(codes.reduce(0) { $0 + 1 << (30 - $1.length) } == 1 << 30)
        #expect(codes.allSatisfy { $0.length >= 5 && $0.length <= 30 && $0.code < 1 << UInt32($0.length) })
        for a in codes.indices {
            for b in codes.indices where a != b && codes[a].length <= codes[b].length {
                let prefix = codes[b].code >> UInt32(codes[b].length - codes[a].length)
                #expect(prefix != codes[a].code, "the code of \(a) starts the code of \(b)")
            }
        }
        // Canonical: what the decoder's length-and-offset lookup relies on.
        let canonical = HPACKHuffman.Canonical.shared
        for symbol in codes.indices {
            let (code, length) = codes[symbol]
            let rank = Int(code - canonical.firstCode[length])
            #expect(code >= canonical.firstCode[length] && rank < canonical.codeCount[length], "\(symbol)")
            #expect(canonical.symbols[canonical.firstSymbol[length] + rank] == symbol, "\(symbol)")
        }
        // EOS is 30 ones, and the first 7 bits of it are what padding is made of.
        #expect(codes[HPACKHuffman.endOfString] == (0x3FFF_FFFF, 30))
    }

    @Test(arguments: HPACKExamples.huffmanStrings.indices)
    func appendixCStringsDecodeAndEncode(index: Int) throws {
        let (text, code) = HPACKExamples.huffmanStrings[index]
        let octets = Array(text.utf8)
        #expect(try HPACKHuffman.decode(code[...]) == octets)
        var encoded: [UInt8] = []
        HPACKHuffman.encode(octets, into: &encoded)
        #expect(encoded == code)
        #expect(HPACKHuffman.encodedCount(octets) == code.count)
    }

    @Test func everyOctetRoundTripsAlone() throws {
        for octet in UInt8.min ... UInt8.max {
            var encoded: [UInt8] = []
            HPACKHuffman.encode([octet], into: &encoded)
            #expect(encoded.count == HPACKHuffman.encodedCount([octet]))
            #expect(try HPACKHuffman.decode(encoded[...]) == [octet], "\(octet)")
        }
    }

    @Test func randomStringsRoundTrip() throws {
        var random = SeededRandom(seed: 7541)
        for round in 0 ..< 500 {
            let count = Int.random(in: 0 ... 200, using: &random)
            // Half the rounds over all octets, half over the printable ones headers mostly hold.
            let range: ClosedRange<UInt8> = round.isMultiple(of: 2) ? 0 ... 255 : 0x20 ... 0x7E
            let octets = (0 ..< count).map { _ in UInt8.random(in: range, using: &random) }
            var encoded: [UInt8] = []
            HPACKHuffman.encode(octets, into: &encoded)
            #expect(encoded.count == HPACKHuffman.encodedCount(octets))
            #expect(try HPACKHuffman.decode(encoded[...]) == octets, "round \(round)")
        }
    }

    @Test func endOfStringInsideAStringThrows() {
        // 'a' (00011), then EOS (30 ones), then 5 bits of padding.
        #expect(throws: HPACKError.huffmanEndOfString) { try HPACKHuffman.decode(hex("1fff ffff ff")[...]) }
        // EOS alone, padded with two ones.
        #expect(throws: HPACKError.huffmanEndOfString) { try HPACKHuffman.decode(hex("ffff ffff")[...]) }
        // EOS, then 'a' in the next octets.
        #expect(throws: HPACKError.huffmanEndOfString) { try HPACKHuffman.decode(hex("ffff fffc 7f")[...]) }
    }

    @Test func paddingLongerThanSevenBitsThrows() throws {
        #expect(throws: HPACKError.huffmanPaddingTooLong) { try HPACKHuffman.decode(hex("ff")[...]) }
        // '0' (00000), then 11 ones.
        #expect(throws: HPACKError.huffmanPaddingTooLong) { try HPACKHuffman.decode(hex("07ff")[...]) }
        // "www.example.com" with one more octet of ones.
        #expect(throws: HPACKError.huffmanPaddingTooLong) {
            try HPACKHuffman.decode(hex("f1e3 c2e5 f23a 6ba0 ab90 f4ff ff")[...])
        }
        // Up to seven are fine: '0' (00000), then 3 ones.
        #expect(try HPACKHuffman.decode(hex("07")[...]) == Array("0".utf8))
    }

    @Test func paddingThatIsNotOnesThrows() throws {
        // 'a' (00011), then 000.
        #expect(throws: HPACKError.huffmanPaddingNotOnes) { try HPACKHuffman.decode(hex("18")[...]) }
        // 'a', then 101.
        #expect(throws: HPACKError.huffmanPaddingNotOnes) { try HPACKHuffman.decode(hex("1d")[...]) }
        #expect(try HPACKHuffman.decode(hex("1f")[...]) == Array("a".utf8))
        #expect(try HPACKHuffman.decode([][...]).isEmpty)
    }

    @Test func huffmanErrorsInABlockThrowFromDecode() {
        // A literal without indexing, new name "a", value: Huffman-coded EOS.
        var decoder = HPACKDecoder()
        #expect(throws: HPACKError.huffmanEndOfString) { try decoder.decode(hex("0001 6184 ffff ffff")) }
        var other = HPACKDecoder()
        #expect(throws: HPACKError.huffmanPaddingNotOnes) { try other.decode(hex("0081 18 0161")) }
    }

    // MARK: Errors

    @Test func indexZeroThrows() throws {
        var decoder = HPACKDecoder()
        #expect(throws: HPACKError.indexZero) { try decoder.decode([0x80]) }
        // Index 0 as a name index means a literal name, so only §6.1 can carry it.
        var other = HPACKDecoder()
        #expect(try other.decode(hex("0001 6101 62")) == [HPACKHeader("a", "b")])
    }

    @Test func indexesPastTheTablesThrow() throws {
        var decoder = HPACKDecoder()
        #expect(try decoder.decode([0xBD]) == [HPACKHeader("www-authenticate", "")])
        #expect(throws: HPACKError.indexOutOfRange) { try decoder.decode([0xBE]) }
        // As a name index, with a value following.
        #expect(throws: HPACKError.indexOutOfRange) { try decoder.decode(hex("0f30 0161")) }
        #expect(throws: HPACKError.indexOutOfRange) { try decoder.decode(hex("ff80 8080 8007")) }
        // Once the table holds one entry, 62 is it and 63 is past it.
        #expect(try decoder.decode(HPACKExamples.requests[0].block) == HPACKExamples.firstRequest)
        #expect(try decoder.decode([0xBE]) == [HPACKHeader(":authority", "www.example.com")])
        #expect(throws: HPACKError.indexOutOfRange) { try decoder.decode([0xBF]) }
    }

    @Test func truncatedStringsThrow() {
        for block in [hex("0005 6162"), hex("0001 6105 6162 63"), hex("00"), hex("0001 61"), hex("4085 f1e3")] {
            var decoder = HPACKDecoder()
            #expect(throws: HPACKError.self, "\(block)") { try decoder.decode(block) }
        }
        var decoder = HPACKDecoder()
        #expect(throws: HPACKError.stringTruncated) { try decoder.decode(hex("0005 6162")) }
        #expect(throws: HPACKError.stringTruncated) { try decoder.decode(hex("0001 61")) }
        // A length that is itself cut short.
        #expect(throws: HPACKError.integerTruncated) { try decoder.decode(hex("007f")) }
        // A length far past the block, as large as the integer limit allows.
        #expect(throws: HPACKError.stringTruncated) { try decoder.decode(hex("007f ffff ff07")) }
    }

    func sizeUpdate(_ size: Int) -> [UInt8] {
        var block: [UInt8] = []
        HPACKWriter.appendInteger(size, representation: .dynamicTableSizeUpdate, to: &block)
        return block
    }

    @Test func sizeUpdatesAtTheStartAreObeyed() throws {
        var decoder = HPACKDecoder()
        _ = try decoder.decode(HPACKExamples.requests[0].block)
        #expect(decoder.dynamicTable.size == 57)
        // Two updates in a row, as §4.2 allows: down to 0 (evicting), back to 4096.
        #expect(try decoder.decode(sizeUpdate(0) + sizeUpdate(4096) + [0x82]) == [HPACKHeader(":method", "GET")])
        #expect(decoder.dynamicTable.size == 0 && decoder.dynamicTable.maximumSize == 4096)
        #expect(throws: HPACKError.indexOutOfRange) { try decoder.decode([0xBE]) }
        // An update alone is a block with no fields.
        #expect(try decoder.decode(sizeUpdate(100)).isEmpty)
        #expect(decoder.dynamicTable.maximumSize == 100)
    }

    @Test func sizeUpdateAboveTheSettingThrows() throws {
        var decoder = HPACKDecoder(maximumTableSize: 4096)
        #expect(throws: HPACKError.tableSizeUpdateTooLarge) { try decoder.decode(sizeUpdate(4097)) }
        var small = HPACKDecoder(maximumTableSize: 256)
        #expect(throws: HPACKError.tableSizeUpdateTooLarge) { try small.decode(sizeUpdate(257)) }
        #expect(throws: HPACKError.tableSizeUpdateTooLarge) { try small.decode(sizeUpdate(HPACKReader.maximumInteger)) }
        #expect((try? small.decode(sizeUpdate(256))) == [])
    }

    @Test func sizeUpdateAfterAFieldThrows() {
        var decoder = HPACKDecoder()
        #expect(throws: HPACKError.tableSizeUpdateAfterField) { try decoder.decode([0x82] + sizeUpdate(0)) }
        var other = HPACKDecoder()
        #expect(throws: HPACKError.tableSizeUpdateAfterField) {
            try other.decode(sizeUpdate(0) + [0x82] + sizeUpdate(4096))
        }
    }

    /// §4.4: entries that fill the table exactly all stay; one octet more evicts the oldest.
    @Test func entriesThatFitExactlyStay() throws {
        var decoder = HPACKDecoder(maximumTableSize: 68)
        _ = try decoder.decode(hex("4001 6101 62 4001 6301 64"))  // "a: b", "c: d": 34 octets each
        #expect(decoder.dynamicTable.headers == [HPACKHeader("c", "d"), HPACKHeader("a", "b")])
        #expect(decoder.dynamicTable.size == 68)
        _ = try decoder.decode(sizeUpdate(68))
        #expect(decoder.dynamicTable.count == 2)
        _ = try decoder.decode(sizeUpdate(67))
        #expect(decoder.dynamicTable.headers == [HPACKHeader("c", "d")])
        #expect(try decoder.decode([0xBE, 0x82]) == [HPACKHeader("c", "d"), HPACKHeader(":method", "GET")])
    }

    /// §4.4: an entry larger than the table empties it, and is no error.
    @Test func anEntryLargerThanTheTableEmptiesIt() throws {
        var decoder = HPACKDecoder(maximumTableSize: 64)
        _ = try decoder.decode(hex("4001 6101 62"))  // "a: b", 34 octets
        #expect(decoder.dynamicTable.headers == [HPACKHeader("a", "b")])
        let value = [UInt8](repeating: 0x78, count: 40)
        let headers = try decoder.decode([0x40, 0x01, 0x63, UInt8(value.count)] + value)
        #expect(headers == [HPACKHeader("c", String(repeating: "x", count: 40))])
        #expect(decoder.dynamicTable.headers.isEmpty && decoder.dynamicTable.size == 0)
    }

    /// C.3.1 is 180 octets as RFC 9113 §6.5.2 counts: 42 + 43 + 38 + 57.
    @Test func headerListSizeIsCountedAsRFC9113Says() throws {
        var exact = HPACKDecoder(maximumHeaderListSize: 180)
        #expect(try exact.decode(HPACKExamples.requests[0].block) == HPACKExamples.firstRequest)
        var under = HPACKDecoder(maximumHeaderListSize: 179)
        #expect(throws: HPACKError.headerListTooLarge) { try under.decode(HPACKExamples.requests[0].block) }
    }

    /// C.3.3 is 245 octets: refused, but its insertion is made, so the block
    /// after it reads the same table as the peer's encoder wrote.
    @Test func aHeaderListTooLargeLeavesTheTableInStep() throws {
        var decoder = HPACKDecoder(maximumHeaderListSize: 240)
        _ = try decoder.decode(HPACKExamples.requests[0].block)
        _ = try decoder.decode(HPACKExamples.requests[1].block)
        #expect(throws: HPACKError.headerListTooLarge) { try decoder.decode(HPACKExamples.requests[2].block) }
        #expect(decoder.dynamicTable.headers == HPACKExamples.requestTables[2])
        #expect(decoder.dynamicTable.size == 164)
        #expect(try decoder.decode([0xBE]) == [HPACKHeader("custom-key", "custom-value")])
        // Also when the first field is the one past the limit.
        var tiny = HPACKDecoder(maximumTableSize: 256, maximumHeaderListSize: 10)
        #expect(throws: HPACKError.headerListTooLarge) { try tiny.decode(HPACKExamples.responses[0].block) }
        #expect(tiny.dynamicTable.headers == HPACKExamples.responseTables[0])
    }

    // MARK: Encoder

    @Test func c4_1ListEncodesWithoutTheDynamicTable() {
        var encoder = HPACKEncoder()
        // C.4.1 but for the one field the RFC indexes: 0x01 (without indexing) where it has 0x41.
        #expect(encoder.encode(HPACKExamples.firstRequest) == hex("8286 8401 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"))
    }

    @Test func eachRepresentationTheEncoderChooses() {
        var encoder = HPACKEncoder()
        // Whole static entry: indexed.
        #expect(encoder.encode([HPACKHeader(":status", "200")]) == [0x88])
        // Static name: its index in the 4-bit prefix (61 needs a continuation octet).
        #expect(encoder.encode([HPACKHeader("www-authenticate", "a")]) == hex("0f2e 0161"))
        // New name: index 0, then the name, both strings Huffman-coded (shorter here).
        #expect(encoder.encode([HPACKHeader("custom-key", "custom-value")])
            == hex("0088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"))
        // Sensitive: never indexed, even when the static table has the field whole.
        #expect(encoder.encode([HPACKHeader(":method", "GET", sensitive: true)]) == hex("1203 4745 54"))
        #expect(encoder.encode([HPACKHeader("password", "secret", sensitive: true)]).first == 0x10)
        // Octets whose codes are longer than 8 bits stay raw.
        #expect(encoder.encode([HPACKHeader("x-raw", "\u{FF}\u{FF}")]) == hex("0084 f2b5 83f1 02ff ff"))
        // Names match octet for octet: "Content-Type" is not "content-type".
        #expect(encoder.encode([HPACKHeader("Content-Type", "")]).first == 0x00)
        #expect(encoder.encode([]) == [])
    }

    /// The encoder's blocks decode back to the list, in a decoder of any age
    /// (its table is never touched), and are no longer than every field sent
    /// as a raw literal with a literal name.
    @Test func appendixCListsRoundTrip() throws {
        var longLived = HPACKDecoder(maximumTableSize: 256)
        for sequence in HPACKExamples.sequences {
            for example in sequence.blocks {
                var encoder = HPACKEncoder()
                let block = encoder.encode(example.headers)
                var fresh = HPACKDecoder()
                #expect(try fresh.decode(block) == example.headers, "\(example)")
                #expect(try longLived.decode(block) == example.headers, "\(example)")
                #expect(block.count <= literalFormCount(example.headers), "\(example)")
                #expect(fresh.dynamicTable.count == 0 && longLived.dynamicTable.count == 0)
            }
        }
    }

    func literalFormCount(_ headers: [HPACKHeader]) -> Int {
        func stringCount(_ string: String) -> Int {
            var length: [UInt8] = []
            let octets = HPACKHeader.octets(string)
            HPACKWriter.appendInteger(octets.count, prefixBits: 7, pattern: 0, to: &length)
            return length.count + octets.count
        }
        return headers.reduce(0) { $0 + 1 + stringCount($1.name) + stringCount($1.value) }
    }

    @Test func randomListsRoundTrip() throws {
        var random = SeededRandom(seed: 9113)
        var decoder = HPACKDecoder(maximumHeaderListSize: .max)
        for round in 0 ..< 300 {
            let headers = (0 ..< Int.random(in: 0 ... 12, using: &random)).map { _ in
                randomHeader(using: &random)
            }
            var encoder = HPACKEncoder()
            let block = encoder.encode(headers)
            #expect(try decoder.decode(block) == headers, "round \(round)")
            #expect(block.count <= literalFormCount(headers), "round \(round)")
        }
    }

    /// Static fields, static names with other values, and names and values of any octets.
    func randomHeader(using random: inout SeededRandom) -> HPACKHeader {
        func string(_ count: ClosedRange<Int>) -> String {
            let octets = (0 ..< Int.random(in: count, using: &random)).map { _ in
                UInt8.random(in: 0 ... 255, using: &random)
            }
            return HPACKHeader.string(latin1: octets)
        }
        let sensitive = Int.random(in: 0 ..< 5, using: &random) == 0
        let entry = HPACKStaticTable.fields[Int.random(in: 0 ..< HPACKStaticTable.count, using: &random)]
        switch Int.random(in: 0 ..< 3, using: &random) {
        case 0: return HPACKHeader(entry.name, entry.value, sensitive: sensitive)
        case 1: return HPACKHeader(entry.name, string(0 ... 300), sensitive: sensitive)
        default: return HPACKHeader(string(0 ... 20), string(0 ... 40), sensitive: sensitive)
        }
    }

    @Test func stringsTheCallerBuiltBeyondLatin1GoAsUTF8() throws {
        var encoder = HPACKEncoder()
        let block = encoder.encode([HPACKHeader("x-emoji", "caf\u{E9} \u{1F600}")])
        var decoder = HPACKDecoder()
        let decoded = try decoder.decode(block)
        #expect(decoded.map { HPACKHeader.octets($0.value) } == [Array("caf\u{E9} \u{1F600}".utf8)])
        // ISO-8859-1 text keeps one octet per character.
        #expect(HPACKHeader.octets("caf\u{E9}") == [0x63, 0x61, 0x66, 0xE9])
        #expect(HPACKHeader.string(latin1: [0x63, 0x61, 0x66, 0xE9]) == "caf\u{E9}")
    }

    // MARK: Determinism

    /// The same blocks, decoded by a decoder that has seen them in order and
    /// by fresh ones that saw the same: identical lists, tables and errors.
    @Test func decodingIsDeterministic() {
        var random = SeededRandom(seed: 42)
        var blocks = HPACKExamples.sequences.flatMap { $0.blocks.map(\.block) }
        for _ in 0 ..< 200 {
            // Valid blocks with a few octets changed: some still decode, most throw.
            var block = blocks[Int.random(in: 0 ..< 12, using: &random)]
            for _ in 0 ..< Int.random(in: 1 ... 3, using: &random) {
                block[Int.random(in: 0 ..< block.count, using: &random)] = UInt8.random(in: 0 ... 255, using: &random)
            }
            blocks.append(block)
        }
        var first = HPACKDecoder(maximumTableSize: 256)
        var second = HPACKDecoder(maximumTableSize: 256)
        var decodedSome = 0
        for block in blocks {
            let a = Result { () throws(HPACKError) in try first.decode(block) }
            let b = Result { () throws(HPACKError) in try second.decode(block) }
            #expect(a == b)
            #expect(first.dynamicTable.headers == second.dynamicTable.headers)
            #expect(first.dynamicTable.size == second.dynamicTable.size)
            var fresh = HPACKDecoder(maximumTableSize: 256)
            var again = HPACKDecoder(maximumTableSize: 256)
            let c = Result { () throws(HPACKError) in try fresh.decode(block) }
            #expect(c == Result { () throws(HPACKError) in try again.decode(block) })
            if case .success = c { decodedSome += 1 }
        }
        #expect(decodedSome > 0)
    }
}
