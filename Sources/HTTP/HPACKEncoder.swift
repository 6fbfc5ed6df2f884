/// RFC 7541's encoder, kept to what cannot go wrong: it never inserts into
/// the dynamic table, so the peer's decoder needs no size update and no
/// state of ours can drift from its own. A field is an index when the static
/// table has it whole, else a literal named by a static index when it can be.
package struct HPACKEncoder: Sendable {
    package init() {}

    /// One header block. Keep it simple and correct: no dynamic table (so never a size update needed); a field
    /// whose name and value match a static entry is an indexed field; else a literal without indexing
    /// (never-indexed if `sensitive`) with the static table's name index when the name is there; strings
    /// Huffman-coded when that is shorter.
    package mutating func encode(_ headers: [HPACKHeader]) -> [UInt8] {
        var block: [UInt8] = []
        for header in headers {
            let name = HPACKHeader.octets(header.name)
            let value = HPACKHeader.octets(header.value)
            // §7.1.3: a sensitive field stays a never-indexed literal even
            // where the static table has it, so intermediaries keep it one.
            if !header.sensitive, let index = HPACKStaticTable.index(name: name, value: value) {
                HPACKWriter.appendInteger(index, representation: .indexedField, to: &block)
                continue
            }
            let representation: HPACKRepresentation = header.sensitive ? .literalNeverIndexed : .literalWithoutIndexing
            if let nameIndex = HPACKStaticTable.index(name: name) {
                HPACKWriter.appendInteger(nameIndex, representation: representation, to: &block)
            } else {
                // Index 0: the name follows as a string literal.
                HPACKWriter.appendInteger(0, representation: representation, to: &block)
                HPACKWriter.appendString(name, to: &block)
            }
            HPACKWriter.appendString(value, to: &block)
        }
        return block
    }
}

/// §5's primitives written to a block.
enum HPACKWriter {
    /// §5.1, in the bits of the first octet that `representation`'s pattern leaves.
    static func appendInteger(_ value: Int, representation: HPACKRepresentation, to block: inout [UInt8]) {
        appendInteger(value, prefixBits: representation.prefixBits, pattern: representation.pattern, to: &block)
    }

    /// §5.1: `value` in the low `prefixBits` of an octet whose high bits are
    /// `pattern`, continued in 7-bit groups when it does not fit.
    static func appendInteger(_ value: Int, prefixBits: Int, pattern: UInt8, to block: inout [UInt8]) {
        let prefixMaximum = (1 << prefixBits) - 1
        guard value >= prefixMaximum else {
            block.append(pattern | UInt8(truncatingIfNeeded: value))
            return
        }
        block.append(pattern | UInt8(truncatingIfNeeded: prefixMaximum))
        var rest = value - prefixMaximum
        while rest >= 0x80 {
            block.append(UInt8(truncatingIfNeeded: rest & 0x7F) | 0x80)
            rest >>= 7
        }
        block.append(UInt8(truncatingIfNeeded: rest))
    }

    /// §5.2: Huffman-coded only when that is shorter, since the code makes
    /// some octets (most above 0x7F) longer than themselves.
    static func appendString(_ octets: [UInt8], to block: inout [UInt8]) {
        let huffmanCount = HPACKHuffman.encodedCount(octets)
        if huffmanCount < octets.count {
            appendInteger(huffmanCount, prefixBits: 7, pattern: 0x80, to: &block)
            HPACKHuffman.encode(octets, into: &block)
        } else {
            appendInteger(octets.count, prefixBits: 7, pattern: 0x00, to: &block)
            block.append(contentsOf: octets)
        }
    }
}
