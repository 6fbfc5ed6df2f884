/// Reading the Distinguished Encoding Rules of ITU-T X.690 (§8 as restricted
/// by §10 and §11), strictly enough that one byte string has one meaning.
///
/// Choices made here:
/// - Only single-octet identifiers (tag numbers 0...30, X.690 §8.1.2.3). The
///   high-tag-number form (low five bits all set, §8.1.2.4) is rejected:
///   nothing in X.509 certificates uses it.
/// - Only the definite form of length (§10.1), in the fewest octets
///   (§10.1, §8.1.3.5 note 2), at most four length octets, and never beyond
///   the input.
/// - Primitive/constructed is part of the tag octet, so the constructed form
///   of a string type (forbidden by §10.2) never matches a primitive tag.

/// Why a DER element was refused.
package enum DERError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input ended inside an element, or a length points beyond the input.
    case truncated
    /// A tag number of 31 or more (high-tag-number form).
    case highTagNumber
    /// The indefinite length form (0x80), which DER forbids (X.690 §10.1).
    case indefiniteLength
    /// A length not in the fewest possible octets, or the reserved 0xFF.
    case nonMinimalLength
    /// A length needing more than four octets.
    case lengthTooLarge
    /// A different element than the structure requires at this point.
    case unexpectedTag(expected: UInt8, found: UInt8)
    /// Bytes left after the last element a structure defines.
    case trailingData
    /// The contents of a primitive element break its type's rules.
    case invalidContent(String)

    package var description: String {
        switch self {
        case .truncated: "truncated"
        case .highTagNumber: "high tag number form"
        case .indefiniteLength: "indefinite length"
        case .nonMinimalLength: "non-minimal length"
        case .lengthTooLarge: "length too large"
        case .unexpectedTag(let expected, let found):
            "expected tag 0x\(hexByte(expected)), found 0x\(hexByte(found))"
        case .trailingData: "trailing data"
        case .invalidContent(let reason): reason
        }
    }
}

private func hexByte(_ byte: UInt8) -> String {
    let digits: [Character] = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}

/// An identifier octet (X.690 §8.1.2): class in bits 8-7, constructed in
/// bit 6, tag number in bits 5-1.
package struct DERTag: Hashable, Sendable, CustomStringConvertible {
    package let rawValue: UInt8

    package init(rawValue: UInt8) { self.rawValue = rawValue }

    package static let boolean = DERTag(rawValue: 0x01)
    package static let integer = DERTag(rawValue: 0x02)
    package static let bitString = DERTag(rawValue: 0x03)
    package static let octetString = DERTag(rawValue: 0x04)
    package static let null = DERTag(rawValue: 0x05)
    package static let objectIdentifier = DERTag(rawValue: 0x06)
    package static let utf8String = DERTag(rawValue: 0x0C)
    package static let numericString = DERTag(rawValue: 0x12)
    package static let printableString = DERTag(rawValue: 0x13)
    package static let t61String = DERTag(rawValue: 0x14)
    package static let ia5String = DERTag(rawValue: 0x16)
    package static let utcTime = DERTag(rawValue: 0x17)
    package static let generalizedTime = DERTag(rawValue: 0x18)
    package static let visibleString = DERTag(rawValue: 0x1A)
    package static let universalString = DERTag(rawValue: 0x1C)
    package static let bmpString = DERTag(rawValue: 0x1E)
    package static let sequence = DERTag(rawValue: 0x30)
    package static let set = DERTag(rawValue: 0x31)

    /// `[number]` in the context-specific class; `constructed` is true for
    /// EXPLICIT tags and for IMPLICIT tags over constructed types (X.690 §8.14).
    package static func contextSpecific(_ number: UInt8, constructed: Bool) -> DERTag {
        DERTag(rawValue: 0x80 | (constructed ? 0x20 : 0) | (number & 0x1F))
    }

    package var isConstructed: Bool { rawValue & 0x20 != 0 }
    package var isContextSpecific: Bool { rawValue & 0xC0 == 0x80 }
    package var number: UInt8 { rawValue & 0x1F }

    package var description: String { "0x" + hexByte(rawValue) }
}

/// One tag-length-value element, as slices of the input.
package struct DERElement: Sendable {
    package let tag: DERTag
    /// The contents octets.
    package let content: ArraySlice<UInt8>
    /// Identifier, length and contents: the element's whole encoding.
    package let encoded: ArraySlice<UInt8>
}

/// Walks a sequence of DER elements. Each read validates the element it
/// returns and consumes it; nested readers cover the contents of a
/// constructed element, so a structure is parsed top-down in one pass.
package struct DERReader: Sendable {
    private var remaining: ArraySlice<UInt8>

    package init(_ bytes: ArraySlice<UInt8>) { remaining = bytes }
    package init(_ bytes: [UInt8]) { remaining = bytes[...] }

    package var isAtEnd: Bool { remaining.isEmpty }

    /// The bytes not read yet.
    package var remainingContent: ArraySlice<UInt8> { remaining }

    /// The tag of the next element, without consuming it.
    package var nextTag: DERTag? { remaining.first.map { DERTag(rawValue: $0) } }

    /// Throws unless every element has been read: each DER structure here
    /// has a fixed end, and extra elements are not silently skipped.
    package func finish() throws(DERError) {
        guard remaining.isEmpty else { throw .trailingData }
    }

    package mutating func readElement() throws(DERError) -> DERElement {
        let start = remaining.startIndex
        let end = remaining.endIndex
        guard start < end else { throw .truncated }
        let tagOctet = remaining[start]
        guard tagOctet & 0x1F != 0x1F else { throw .highTagNumber }
        var index = start + 1
        guard index < end else { throw .truncated }
        let first = remaining[index]
        index += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else if first == 0x80 {
            throw .indefiniteLength
        } else if first == 0xFF {
            throw .nonMinimalLength
        } else {
            let count = Int(first & 0x7F)
            guard count <= 4 else { throw .lengthTooLarge }
            guard end - index >= count else { throw .truncated }
            guard remaining[index] != 0 else { throw .nonMinimalLength }
            for offset in 0..<count {
                length = length << 8 | Int(remaining[index + offset])
            }
            index += count
            guard length >= 0x80 else { throw .nonMinimalLength }
        }
        guard end - index >= length else { throw .truncated }
        let contentEnd = index + length
        let element = DERElement(
            tag: DERTag(rawValue: tagOctet),
            content: remaining[index..<contentEnd],
            encoded: remaining[start..<contentEnd])
        remaining = remaining[contentEnd...]
        return element
    }

    package mutating func readElement(tag: DERTag) throws(DERError) -> DERElement {
        guard let next = nextTag else { throw .truncated }
        guard next == tag else { throw .unexpectedTag(expected: tag.rawValue, found: next.rawValue) }
        return try readElement()
    }

    /// The element if the next one has this tag (for OPTIONAL and DEFAULT
    /// components), nil otherwise.
    package mutating func readOptionalElement(tag: DERTag) throws(DERError) -> DERElement? {
        guard nextTag == tag else { return nil }
        return try readElement()
    }

    /// A reader over the contents of a constructed element with this tag.
    package mutating func readConstructed(tag: DERTag) throws(DERError) -> DERReader {
        DERReader(try readElement(tag: tag).content)
    }

    package mutating func readSequence() throws(DERError) -> DERReader {
        try readConstructed(tag: .sequence)
    }

    package mutating func readSet() throws(DERError) -> DERReader {
        try readConstructed(tag: .set)
    }

    /// The inner reader of an EXPLICIT `[number]` tag if present.
    package mutating func readOptionalExplicit(_ number: UInt8) throws(DERError) -> DERReader? {
        guard let element = try readOptionalElement(tag: .contextSpecific(number, constructed: true)) else {
            return nil
        }
        return DERReader(element.content)
    }

    package mutating func readInteger() throws(DERError) -> ArraySlice<UInt8> {
        try DER.integerContent(readElement(tag: .integer).content)
    }

    package mutating func readSmallInteger() throws(DERError) -> Int {
        try DER.smallInteger(readElement(tag: .integer).content)
    }

    package mutating func readBoolean() throws(DERError) -> Bool {
        try DER.boolean(readElement(tag: .boolean).content)
    }

    package mutating func readObjectIdentifier() throws(DERError) -> ASN1ObjectIdentifier {
        try ASN1ObjectIdentifier(derContent: readElement(tag: .objectIdentifier).content)
    }

    package mutating func readBitString() throws(DERError) -> DER.BitString {
        try DER.bitString(readElement(tag: .bitString).content)
    }

    package mutating func readOctetString() throws(DERError) -> ArraySlice<UInt8> {
        try readElement(tag: .octetString).content
    }

    package mutating func readNull() throws(DERError) {
        guard try readElement(tag: .null).content.isEmpty else { throw .invalidContent("NULL with contents") }
    }

    /// A `Time ::= CHOICE { utcTime UTCTime, generalTime GeneralizedTime }`
    /// (RFC 5280 §4.1.2.5), as seconds since 1970-01-01T00:00:00Z.
    package mutating func readTime() throws(DERError) -> Int64 {
        let element = try readElement()
        switch element.tag {
        case .utcTime: return try DER.utcTime(element.content)
        case .generalizedTime: return try DER.generalizedTime(element.content)
        default: throw .unexpectedTag(expected: DERTag.utcTime.rawValue, found: element.tag.rawValue)
        }
    }

    /// Any of the character string types `DER.string` decodes.
    package mutating func readString() throws(DERError) -> String {
        let element = try readElement()
        return try DER.string(tag: element.tag, content: element.content)
    }
}

/// Decoders for the contents octets of primitive types; the reader uses them
/// for universal tags, and callers use them directly under IMPLICIT tags.
package enum DER {
    /// A BIT STRING (X.690 §8.6): the number of unused bits in the last
    /// octet and the octets themselves.
    package struct BitString: Equatable, Sendable {
        package let unusedBits: UInt8
        package let bytes: ArraySlice<UInt8>
    }

    /// The two's-complement contents of an INTEGER, checked to be in the
    /// fewest octets (X.690 §8.3.2): no leading 0x00 before a clear high bit,
    /// no leading 0xFF before a set high bit.
    package static func integerContent(_ content: ArraySlice<UInt8>) throws(DERError) -> ArraySlice<UInt8> {
        guard let first = content.first else { throw .invalidContent("empty INTEGER") }
        if content.count > 1 {
            let second = content[content.startIndex + 1]
            if (first == 0x00 && second & 0x80 == 0) || (first == 0xFF && second & 0x80 != 0) {
                throw .invalidContent("non-minimal INTEGER")
            }
        }
        return content
    }

    /// An INTEGER that must fit in a non-negative Int (versions, path lengths,
    /// salt lengths).
    package static func smallInteger(_ content: ArraySlice<UInt8>) throws(DERError) -> Int {
        let bytes = try integerContent(content)
        guard let first = bytes.first, first & 0x80 == 0 else { throw .invalidContent("negative INTEGER") }
        guard bytes.count <= 8 else {
            throw .invalidContent("INTEGER too large")
        }
        var value = 0
        for byte in bytes { value = value << 8 | Int(byte) }
        return value
    }

    /// DER BOOLEAN: one octet, 0x00 or 0xFF (X.690 §11.1).
    package static func boolean(_ content: ArraySlice<UInt8>) throws(DERError) -> Bool {
        guard content.count == 1, let value = content.first else { throw .invalidContent("BOOLEAN length") }
        switch value {
        case 0x00: return false
        case 0xFF: return true
        default: throw .invalidContent("BOOLEAN not 0x00 or 0xFF")
        }
    }

    /// BIT STRING (X.690 §8.6.2, §11.2): the initial octet counts unused bits
    /// (0...7, 0 when there are no other octets), and the unused bits are zero.
    package static func bitString(_ content: ArraySlice<UInt8>) throws(DERError) -> BitString {
        guard let unused = content.first else { throw .invalidContent("empty BIT STRING") }
        guard unused <= 7 else { throw .invalidContent("BIT STRING unused bits > 7") }
        let bytes = content.dropFirst()
        if let last = bytes.last {
            guard last & ((1 << unused) - 1) == 0 else { throw .invalidContent("BIT STRING unused bits not zero") }
        } else if unused != 0 {
            throw .invalidContent("empty BIT STRING with unused bits")
        }
        return BitString(unusedBits: unused, bytes: bytes)
    }

    /// UTCTime in the DER form RFC 5280 §4.1.2.5.1 requires: `YYMMDDHHMMSSZ`;
    /// YY of 50 or more is 19YY, otherwise 20YY.
    package static func utcTime(_ content: ArraySlice<UInt8>) throws(DERError) -> Int64 {
        guard content.count == 13, content.last == UInt8(ascii: "Z") else {
            throw .invalidContent("UTCTime not YYMMDDHHMMSSZ")
        }
        let digits = try twoDigitFields(content.dropLast())
        let year = digits[0] >= 50 ? 1900 + digits[0] : 2000 + digits[0]
        return try CivilTime.seconds(
            year: year, month: digits[1], day: digits[2], hour: digits[3], minute: digits[4], second: digits[5])
    }

    /// GeneralizedTime in the DER form RFC 5280 §4.1.2.5.2 requires:
    /// `YYYYMMDDHHMMSSZ`, no fractional seconds. Years 0001...9999.
    package static func generalizedTime(_ content: ArraySlice<UInt8>) throws(DERError) -> Int64 {
        guard content.count == 15, content.last == UInt8(ascii: "Z") else {
            throw .invalidContent("GeneralizedTime not YYYYMMDDHHMMSSZ")
        }
        let digits = try twoDigitFields(content.dropLast())
        return try CivilTime.seconds(
            year: digits[0] * 100 + digits[1], month: digits[2], day: digits[3], hour: digits[4], minute: digits[5],
            second: digits[6])
    }

    private static func twoDigitFields(_ text: ArraySlice<UInt8>) throws(DERError) -> [Int] {
        var fields: [Int] = []
        var index = text.startIndex
        while index + 1 < text.endIndex {
            let high = text[index], low = text[index + 1]
            guard (0x30...0x39).contains(high), (0x30...0x39).contains(low) else {
                throw .invalidContent("time has a non-digit")
            }
            fields.append(Int(high - 0x30) * 10 + Int(low - 0x30))
            index += 2
        }
        return fields
    }

    /// Decodes the character string types, each checked against its
    /// repertoire:
    /// - UTF8String: valid UTF-8.
    /// - PrintableString (X.680 §41.4 table 10), NumericString, VisibleString,
    ///   IA5String: their ASCII subsets.
    /// - BMPString: UTF-16BE (UCS-2 plus surrogate pairs), even length, no
    ///   unpaired surrogate.
    /// - UniversalString: UTF-32BE, valid scalar values.
    /// - T61String (TeletexString): decoded as ISO 8859-1, which is what
    ///   CAs that used it actually put in it; the T.61 code table itself is
    ///   not implemented.
    package static func string(tag: DERTag, content: ArraySlice<UInt8>) throws(DERError) -> String {
        switch tag {
        case .utf8String:
            guard let text = validUTF8(content) else { throw .invalidContent("UTF8String is not UTF-8") }
            return text
        case .printableString:
            guard content.allSatisfy(isPrintableStringCharacter) else {
                throw .invalidContent("PrintableString character")
            }
            return String(decoding: content, as: UTF8.self)
        case .numericString:
            guard content.allSatisfy({ $0 == 0x20 || (0x30...0x39).contains($0) }) else {
                throw .invalidContent("NumericString character")
            }
            return String(decoding: content, as: UTF8.self)
        case .visibleString:
            guard content.allSatisfy({ (0x20...0x7E).contains($0) }) else {
                throw .invalidContent("VisibleString character")
            }
            return String(decoding: content, as: UTF8.self)
        case .ia5String:
            guard content.allSatisfy({ $0 < 0x80 }) else { throw .invalidContent("IA5String character") }
            return String(decoding: content, as: UTF8.self)
        case .t61String:
            var scalars = String.UnicodeScalarView()
            for byte in content { scalars.append(Unicode.Scalar(byte)) }
            return String(scalars)
        case .bmpString:
            guard content.count % 2 == 0 else { throw .invalidContent("BMPString odd length") }
            var units: [UInt16] = []
            var index = content.startIndex
            while index < content.endIndex {
                units.append(UInt16(content[index]) << 8 | UInt16(content[index + 1]))
                index += 2
            }
            var text = ""
            var decoder = UTF16()
            var iterator = units.makeIterator()
            loop: while true {
                switch decoder.decode(&iterator) {
                case .scalarValue(let scalar): text.unicodeScalars.append(scalar)
                case .emptyInput: break loop
                case .error: throw .invalidContent("BMPString unpaired surrogate")
                }
            }
            return text
        case .universalString:
            guard content.count % 4 == 0 else { throw .invalidContent("UniversalString length") }
            var scalars = String.UnicodeScalarView()
            var index = content.startIndex
            while index < content.endIndex {
                var value: UInt32 = 0
                for offset in 0..<4 { value = value << 8 | UInt32(content[index + offset]) }
                guard let scalar = Unicode.Scalar(value) else { throw .invalidContent("UniversalString scalar") }
                scalars.append(scalar)
                index += 4
            }
            return String(scalars)
        default:
            throw .invalidContent("not a character string (tag \(tag))")
        }
    }

    /// X.680 §41.4: letters, digits, space and `'()+,-./:=?`.
    static func isPrintableStringCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: " "), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "+"),
            UInt8(ascii: ","), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "/"), UInt8(ascii: ":"),
            UInt8(ascii: "="), UInt8(ascii: "?"):
            return true
        default:
            return false
        }
    }

    static func validUTF8(_ bytes: ArraySlice<UInt8>) -> String? {
        var text = ""
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): text.unicodeScalars.append(scalar)
            case .emptyInput: return text
            case .error: return nil
            }
        }
    }
}
