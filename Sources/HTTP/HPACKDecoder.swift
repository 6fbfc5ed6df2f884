/// RFC 7541's decoder: header blocks in, header lists out, with the dynamic
/// table the peer's encoder fills. One per connection direction, fed every
/// block in order, since each block may change the table the next one reads.
package struct HPACKDecoder: Sendable {
    /// The SETTINGS_HEADER_TABLE_SIZE Sluice announced: the most a dynamic
    /// table size update may ask for.
    let maximumTableSize: Int
    let maximumHeaderListSize: Int
    private(set) var dynamicTable: HPACKDynamicTable

    /// `maximumTableSize`: the SETTINGS_HEADER_TABLE_SIZE Sluice announced (4096 default); a dynamic table size
    /// update above it is an error (§6.3).
    /// `maximumHeaderListSize`: a block whose decoded list is larger (RFC 9113 §6.5.2: sum of name + value + 32 per
    /// field) throws, after the whole block has been processed, so that the dynamic table stays in step.
    package init(maximumTableSize: Int = 4096, maximumHeaderListSize: Int = 65536) {
        self.maximumTableSize = max(0, maximumTableSize)
        self.maximumHeaderListSize = max(0, maximumHeaderListSize)
        // The table starts at the setting, as Appendix C's do. The peer's
        // encoder assumes 4096 until it has our SETTINGS, so a setting below
        // that could let its first blocks name entries evicted here; one at
        // least that large is safe, since indexes count from the newest entry.
        dynamicTable = HPACKDynamicTable(maximumSize: self.maximumTableSize)
    }

    /// One complete header block (a HEADERS frame's fragment plus its CONTINUATIONs, joined). Any malformation
    /// throws (the caller turns it into a COMPRESSION_ERROR connection error): bad integers (overflow past 2^31 or
    /// truncated), bad indexes (0, or past the tables), truncated strings, Huffman errors (EOS symbol inside,
    /// padding longer than 7 bits or not all ones, §5.2), a size update that is not at the start of the block
    /// (§4.2), above the maximum, etc.
    package mutating func decode(_ block: [UInt8]) throws(HPACKError) -> [HPACKHeader] {
        var reader = HPACKReader(block)
        var headers: [HPACKHeader] = []
        var listSize = 0
        var listTooLarge = false
        var sawField = false
        // Every representation takes at least one octet, so this ends within block.count turns.
        while let firstOctet = reader.peek() {
            let representation = HPACKRepresentation(firstOctet: firstOctet)
            let field: HPACKDecodedField
            switch representation {
            case .indexedField:
                field = try self.field(at: reader.readInteger(prefixBits: representation.prefixBits))
            case .literalWithIncrementalIndexing:
                field = try literal(&reader, representation)
                dynamicTable.add(field)
            case .literalWithoutIndexing, .literalNeverIndexed:
                field = try literal(&reader, representation)
            case .dynamicTableSizeUpdate:
                // §4.2: only at the start of a block, where the peer's encoder
                // acknowledges a change of our setting before using it.
                guard !sawField else { throw .tableSizeUpdateAfterField }
                let size = try reader.readInteger(prefixBits: representation.prefixBits)
                guard size <= maximumTableSize else { throw .tableSizeUpdateTooLarge }
                dynamicTable.resize(to: size)
                continue
            }
            sawField = true
            // Past the limit, later fields are still decoded (the table must
            // follow every insertion) but not kept: the list will be refused.
            guard !listTooLarge else { continue }
            listSize += field.size
            if listSize > maximumHeaderListSize {
                listTooLarge = true
                headers = []
            } else {
                headers.append(field.header)
            }
        }
        guard !listTooLarge else { throw .headerListTooLarge }
        return headers
    }

    /// §2.3.3: one index space, the static table first.
    private func field(at index: Int) throws(HPACKError) -> HPACKDecodedField {
        guard index != 0 else { throw .indexZero }
        if let header = HPACKStaticTable.field(at: index) {
            // Static names and values are ASCII: one octet per UTF-8 code unit.
            return HPACKDecodedField(header: header, nameCount: header.name.utf8.count,
                                     valueCount: header.value.utf8.count)
        }
        guard let field = dynamicTable.field(at: index - HPACKStaticTable.count) else { throw .indexOutOfRange }
        return field
    }

    /// §6.2: a name by index (non-zero) or as a string literal, then the value.
    private func literal(_ reader: inout HPACKReader, _ representation: HPACKRepresentation)
        throws(HPACKError) -> HPACKDecodedField
    {
        let nameIndex = try reader.readInteger(prefixBits: representation.prefixBits)
        let name: String
        let nameCount: Int
        if nameIndex == 0 {
            let octets = try reader.readString()
            name = HPACKHeader.string(latin1: octets)
            nameCount = octets.count
        } else {
            let indexed = try field(at: nameIndex)
            name = indexed.header.name
            nameCount = indexed.nameCount
        }
        let value = try reader.readString()
        let header = HPACKHeader(name, HPACKHeader.string(latin1: value),
                                 sensitive: representation == .literalNeverIndexed)
        return HPACKDecodedField(header: header, nameCount: nameCount, valueCount: value.count)
    }
}

/// A field with its octet counts as sent: its strings hold one scalar per
/// octet, but counting scalars would walk them every time.
struct HPACKDecodedField: Sendable, Equatable {
    var header: HPACKHeader
    var nameCount: Int
    var valueCount: Int

    /// §4.1, and RFC 9113 §6.5.2's share of a header list.
    var size: Int { nameCount + valueCount + HPACKHeader.entryOverhead }
}

/// §5's primitives read from a block, each bounded by the octets left.
struct HPACKReader {
    /// §5.1 leaves the limit to the implementation; 2^31-1 covers any length
    /// or index a block can hold and any table size HTTP/2 can announce.
    static let maximumInteger = Int(Int32.max)

    private let block: [UInt8]
    private(set) var position = 0

    init(_ block: [UInt8]) { self.block = block }

    func peek() -> UInt8? { position < block.count ? block[position] : nil }

    /// §5.1: an integer in the low `prefixBits` of the next octet, continued
    /// in 7-bit groups, least significant first, when the prefix is all ones.
    mutating func readInteger(prefixBits: Int) throws(HPACKError) -> Int {
        guard position < block.count else { throw .integerTruncated }
        let prefixMaximum = (1 << prefixBits) - 1
        var value = Int(block[position]) & prefixMaximum
        position += 1
        guard value == prefixMaximum else { return value }
        var shift = 0
        while true {
            guard position < block.count else { throw .integerTruncated }
            let octet = block[position]
            position += 1
            value += Int(octet & 0x7F) << shift
            guard value <= Self.maximumInteger else { throw .integerOverflow }
            if octet & 0x80 == 0 { return value }
            // §5.1 asks to refuse encodings excessive in length too: five
            // continuation octets carry 35 bits, more than any value allowed.
            shift += 7
            guard shift < 35 else { throw .integerOverflow }
        }
    }

    /// §5.2: H, a 7-bit-prefix length, then that many octets, Huffman-coded when H is set.
    mutating func readString() throws(HPACKError) -> [UInt8] {
        guard let first = peek() else { throw .stringTruncated }
        let length = try readInteger(prefixBits: 7)
        guard length <= block.count - position else { throw .stringTruncated }
        let octets = block[position ..< position + length]
        position += length
        return first & 0x80 != 0 ? try HPACKHuffman.decode(octets) : Array(octets)
    }
}

/// §2.3.2 and §4: the decoder's copy of the entries the peer's encoder
/// inserted, newest at index 1, evicted oldest first to stay within the size
/// the last size update set.
struct HPACKDynamicTable: Sendable {
    /// Oldest first; entries before `evicted` are gone, and are dropped in
    /// bulk once they make up half the array, so an eviction costs O(1)
    /// amortized.
    private var entries: [HPACKDecodedField] = []
    private var evicted = 0
    /// §4.1: the sum of the entries' sizes.
    private(set) var size = 0
    private(set) var maximumSize: Int

    init(maximumSize: Int) { self.maximumSize = maximumSize }

    var count: Int { entries.count - evicted }

    /// Newest first, as the indexes count.
    var headers: [HPACKHeader] { entries[evicted...].reversed().map(\.header) }

    /// `index` 1 is the newest entry.
    func field(at index: Int) -> HPACKDecodedField? {
        guard index >= 1, index <= count else { return nil }
        return entries[entries.count - index]
    }

    /// §4.4: room is made first; an entry larger than the whole table empties
    /// it and is not kept.
    mutating func add(_ field: HPACKDecodedField) {
        evict(toFit: maximumSize - field.size)
        guard field.size <= maximumSize else { return }
        entries.append(field)
        size += field.size
    }

    /// §4.3.
    mutating func resize(to newMaximum: Int) {
        maximumSize = newMaximum
        evict(toFit: newMaximum)
    }

    private mutating func evict(toFit limit: Int) {
        while size > limit, evicted < entries.count {
            size -= entries[evicted].size
            evicted += 1
        }
        if evicted == entries.count {
            entries.removeAll(keepingCapacity: true)
            evicted = 0
            size = 0
        } else if evicted * 2 > entries.count {
            entries.removeFirst(evicted)
            evicted = 0
        }
    }
}
