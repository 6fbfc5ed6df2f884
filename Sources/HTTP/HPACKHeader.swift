/// One header field: name and value as the octets were sent, as ISO-8859-1
/// strings (each byte one Unicode scalar U+0000...U+00FF, so any octets
/// round-trip). Names are whatever the peer sent (HTTP/2 requires lowercase;
/// the caller checks).
package struct HPACKHeader: Sendable, Equatable, CustomStringConvertible {
    package var name: String
    package var value: String
    /// RFC 7541 §7.1.3: never indexed (the encoder keeps it a literal
    /// never-indexed field). The decoder sets it for a field that arrived
    /// never indexed, so that an intermediary passes the peer's wish on.
    package var sensitive: Bool

    package init(_ name: String, _ value: String, sensitive: Bool = false) {
        self.name = name
        self.value = value
        self.sensitive = sensitive
    }

    package var description: String {
        sensitive ? "\(name): \(value) (never indexed)" : "\(name): \(value)"
    }
}

/// Why a header block cannot be decoded. HTTP/2 answers any of them but
/// `headerListTooLarge` with a COMPRESSION_ERROR that ends the connection,
/// because the two ends' dynamic tables may no longer agree (RFC 9113 §4.3).
package struct HPACKError: Error, Sendable, Equatable, CustomStringConvertible {
    package var reason: String

    package var description: String { "HPACK: \(reason)" }

    // §5.1
    package static let integerTruncated = HPACKError(reason: "integer ends with the block")
    package static let integerOverflow = HPACKError(reason: "integer above 2^31-1 or longer than 5 continuation octets")
    // §5.2
    package static let stringTruncated = HPACKError(reason: "string literal runs past the block")
    package static let huffmanEndOfString = HPACKError(reason: "Huffman-coded string contains EOS")
    package static let huffmanPaddingTooLong = HPACKError(reason: "Huffman padding longer than 7 bits")
    package static let huffmanPaddingNotOnes = HPACKError(reason: "Huffman padding is not the start of EOS")
    // §2.3.3
    package static let indexZero = HPACKError(reason: "index 0")
    package static let indexOutOfRange = HPACKError(reason: "index past the static and dynamic tables")
    // §4.2, §6.3
    package static let tableSizeUpdateAfterField = HPACKError(reason: "dynamic table size update after a field")
    package static let tableSizeUpdateTooLarge =
        HPACKError(reason: "dynamic table size update above SETTINGS_HEADER_TABLE_SIZE")
    // RFC 9113 §6.5.2; the only one that leaves the tables in step.
    package static let headerListTooLarge = HPACKError(reason: "header list above SETTINGS_MAX_HEADER_LIST_SIZE")
}

extension HPACKHeader {
    /// §4.1: an entry costs 32 octets besides its name and value, an estimate
    /// of what an implementation spends on it. RFC 9113 §6.5.2 counts header
    /// lists the same way.
    static let entryOverhead = 32

    /// ISO-8859-1, so that no octet sequence is rejected or altered on its way
    /// through (HTTP/2 field values may hold any octet but NUL, CR and LF, and
    /// the caller decides what to accept).
    static func string(latin1 octets: [UInt8]) -> String {
        if octets.allSatisfy({ $0 < 0x80 }) { return String(decoding: octets, as: UTF8.self) }
        // Every octet is a UTF-16 code unit below the surrogates: one scalar each.
        return String(decoding: octets.lazy.map { UInt16($0) }, as: UTF16.self)
    }

    /// The octets `string` stands for: one per scalar when every scalar is at
    /// most U+00FF (whatever `string(latin1:)` made). A string the caller
    /// built with characters beyond that cannot be ISO-8859-1, so it goes as
    /// its UTF-8, the octets an HTTP/1.1 message would have carried.
    static func octets(_ string: String) -> [UInt8] {
        let utf8 = string.utf8
        if utf8.allSatisfy({ $0 < 0x80 }) { return Array(utf8) }
        let scalars = string.unicodeScalars
        guard scalars.allSatisfy({ $0.value <= 0xFF }) else { return Array(utf8) }
        return scalars.map { UInt8(truncatingIfNeeded: $0.value) }
    }
}

/// §6: what a representation is, from the bit pattern its first octet starts with.
enum HPACKRepresentation: Equatable {
    /// §6.1, 1xxxxxxx: a field from the tables.
    case indexedField
    /// §6.2.1, 01xxxxxx: a literal the decoder adds to the dynamic table.
    case literalWithIncrementalIndexing
    /// §6.3, 001xxxxx.
    case dynamicTableSizeUpdate
    /// §6.2.3, 0001xxxx: a literal no intermediary may index either.
    case literalNeverIndexed
    /// §6.2.2, 0000xxxx.
    case literalWithoutIndexing

    init(firstOctet: UInt8) {
        if firstOctet & 0x80 != 0 {
            self = .indexedField
        } else if firstOctet & 0x40 != 0 {
            self = .literalWithIncrementalIndexing
        } else if firstOctet & 0x20 != 0 {
            self = .dynamicTableSizeUpdate
        } else if firstOctet & 0x10 != 0 {
            self = .literalNeverIndexed
        } else {
            self = .literalWithoutIndexing
        }
    }

    /// The bits of the first octet left to the integer (an index or a size).
    var prefixBits: Int {
        switch self {
        case .indexedField: 7
        case .literalWithIncrementalIndexing: 6
        case .dynamicTableSizeUpdate: 5
        case .literalNeverIndexed, .literalWithoutIndexing: 4
        }
    }

    /// The pattern itself, which the encoder writes.
    var pattern: UInt8 {
        switch self {
        case .indexedField: 0x80
        case .literalWithIncrementalIndexing: 0x40
        case .dynamicTableSizeUpdate: 0x20
        case .literalNeverIndexed: 0x10
        case .literalWithoutIndexing: 0x00
        }
    }
}
