// fuzz-sources: Sources/Crypto Sources/HTTP
// fuzz-corpus: hpack
// libFuzzer harness for HPACK (RFC 7541). The first byte picks the table
// size Sluice announced and the header list limit; the rest is header
// blocks, each after a length octet, decoded in order by one decoder, as a
// connection's HEADERS would be. Whatever the bytes: no trap; a second
// decoder fed the same blocks gives the same lists, errors and table; the
// table stays within its size and the setting; every decoded list encodes
// to a block a fresh decoder reads back as the same list, no longer than the
// all-literal form; and the Huffman decoder accepts a string only as the
// exact octets the encoder makes of what it decoded.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHPACK(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let tableSize = [4096, 256, 64, 0][Int(data[0] & 3)]
    let listLimit = [65536, 512, 64, 1 << 20][Int(data[0] >> 2 & 3)]
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))

    var blocks: [[UInt8]] = []
    var offset = 0
    while offset < input.count {
        let count = min(Int(input[offset]), input.count - offset - 1)
        blocks.append(Array(input[offset + 1 ..< offset + 1 + count]))
        offset += 1 + count
    }

    var decoder = HPACKDecoder(maximumTableSize: tableSize, maximumHeaderListSize: listLimit)
    var twin = HPACKDecoder(maximumTableSize: tableSize, maximumHeaderListSize: listLimit)
    for block in blocks {
        let result = Result { () throws(HPACKError) in try decoder.decode(block) }
        let again = Result { () throws(HPACKError) in try twin.decode(block) }
        precondition(result == again, "two decoders disagree: \(result) vs \(again)")
        checkTable(decoder.dynamicTable, setting: tableSize)
        precondition(decoder.dynamicTable.headers == twin.dynamicTable.headers, "the tables drifted apart")
        if case let .success(headers) = result { checkRoundTrip(headers, listLimit: listLimit) }
        checkHuffman(block)
    }
    return 0
}

func checkTable(_ table: HPACKDynamicTable, setting: Int) {
    precondition(table.maximumSize <= setting, "table maximum \(table.maximumSize) above the setting \(setting)")
    precondition(table.size <= table.maximumSize, "table size \(table.size) above its maximum \(table.maximumSize)")
    var sum = 0
    for index in 0 ..< table.count {
        guard let field = table.field(at: index + 1) else { preconditionFailure("entry \(index + 1) missing") }
        sum += field.size
    }
    precondition(sum == table.size, "table size \(table.size) but its entries add up to \(sum)")
    precondition(table.field(at: table.count + 1) == nil && table.field(at: 0) == nil, "an index past the table answered")
}

func checkRoundTrip(_ headers: [HPACKHeader], listLimit: Int) {
    var encoder = HPACKEncoder()
    let block = encoder.encode(headers)
    var fresh = HPACKDecoder(maximumTableSize: 0, maximumHeaderListSize: listLimit)
    guard let decoded = try? fresh.decode(block) else { preconditionFailure("the encoder's block does not decode") }
    precondition(decoded == headers, "round trip changed the list: \(headers) -> \(decoded)")
    var literalForm = 0
    for header in headers {
        let name = HPACKHeader.octets(header.name).count
        let value = HPACKHeader.octets(header.value).count
        literalForm += 1 + integerCount(name) + name + integerCount(value) + value
    }
    precondition(block.count <= literalForm, "encoded \(block.count) octets, the literal form takes \(literalForm)")
}

/// Octets of a §5.1 integer with a 7-bit prefix.
func integerCount(_ value: Int) -> Int {
    var block: [UInt8] = []
    HPACKWriter.appendInteger(value, prefixBits: 7, pattern: 0, to: &block)
    return block.count
}

func checkHuffman(_ bytes: [UInt8]) {
    var encoded: [UInt8] = []
    HPACKHuffman.encode(bytes, into: &encoded)
    precondition(encoded.count == HPACKHuffman.encodedCount(bytes), "encodedCount disagrees with encode")
    guard let back = try? HPACKHuffman.decode(encoded[...]), back == bytes else {
        preconditionFailure("Huffman round trip failed")
    }
    if let decoded = try? HPACKHuffman.decode(bytes[...]) {
        var again: [UInt8] = []
        HPACKHuffman.encode(decoded, into: &again)
        precondition(again == bytes, "accepted a Huffman string the encoder would not write")
    }
}
