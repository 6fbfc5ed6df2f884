/// Building DER (ITU-T X.690 §10): definite lengths in the fewest octets,
/// minimal INTEGERs, primitive strings. Constructed values are built by a
/// closure writing into a nested writer, so lengths are always exact.
package struct DERWriter: Sendable {
    package private(set) var bytes: [UInt8] = []

    package init() {}

    /// Identifier, definite length (short form below 128, else the long form
    /// in the fewest octets, §8.1.3), then contents.
    package mutating func writeElement(tag: DERTag, content: some Collection<UInt8>) {
        bytes.append(tag.rawValue)
        let length = content.count
        if length < 0x80 {
            bytes.append(UInt8(length))
        } else {
            var lengthOctets: [UInt8] = []
            var rest = length
            while rest > 0 {
                lengthOctets.append(UInt8(rest & 0xFF))
                rest >>= 8
            }
            bytes.append(0x80 | UInt8(lengthOctets.count))
            bytes.append(contentsOf: lengthOctets.reversed())
        }
        bytes.append(contentsOf: content)
    }

    /// Already-encoded DER, such as a Name copied from another certificate.
    package mutating func writeEncoded(_ encoded: some Collection<UInt8>) {
        bytes.append(contentsOf: encoded)
    }

    package mutating func writeConstructed<E: Error>(tag: DERTag, _ body: (inout DERWriter) throws(E) -> Void)
        throws(E)
    {
        var inner = DERWriter()
        try body(&inner)
        writeElement(tag: tag, content: inner.bytes)
    }

    package mutating func writeSequence<E: Error>(_ body: (inout DERWriter) throws(E) -> Void) throws(E) {
        try writeConstructed(tag: .sequence, body)
    }

    package mutating func writeSet<E: Error>(_ body: (inout DERWriter) throws(E) -> Void) throws(E) {
        try writeConstructed(tag: .set, body)
    }

    /// An EXPLICIT `[number]` tag around what `body` writes (X.690 §8.14.2).
    package mutating func writeExplicit<E: Error>(_ number: UInt8, _ body: (inout DERWriter) throws(E) -> Void)
        throws(E)
    {
        try writeConstructed(tag: .contextSpecific(number, constructed: true), body)
    }

    /// A non-negative INTEGER from unsigned big-endian magnitude octets:
    /// leading zero octets are dropped, and one 0x00 is put back when the
    /// high bit is set so the two's-complement value stays positive
    /// (X.690 §8.3.2–8.3.3). Empty or all-zero input encodes 0.
    package mutating func writeInteger(unsignedBytes: some Collection<UInt8>) {
        var magnitude = Array(unsignedBytes.drop(while: { $0 == 0 }))
        if magnitude.isEmpty {
            magnitude = [0]
        } else if let first = magnitude.first, first & 0x80 != 0 {
            magnitude.insert(0, at: 0)
        }
        writeElement(tag: .integer, content: magnitude)
    }

    package mutating func writeInteger(_ value: Int) {
        var content: [UInt8] = []
        var rest = value
        while true {
            let octet = UInt8(truncatingIfNeeded: rest)
            content.append(octet)
            rest >>= 8  // arithmetic shift keeps the sign
            if (rest == 0 && octet & 0x80 == 0) || (rest == -1 && octet & 0x80 != 0) { break }
        }
        writeElement(tag: .integer, content: content.reversed())
    }

    package mutating func writeBoolean(_ value: Bool) {
        writeElement(tag: .boolean, content: [value ? 0xFF : 0x00])
    }

    package mutating func writeNull() {
        writeElement(tag: .null, content: [])
    }

    package mutating func writeObjectIdentifier(_ identifier: ASN1ObjectIdentifier) {
        writeElement(tag: .objectIdentifier, content: identifier.derContent)
    }

    package mutating func writeOctetString(_ content: some Collection<UInt8>) {
        writeElement(tag: .octetString, content: content)
    }

    /// A BIT STRING of whole octets (unused bits 0), as keys and signatures are.
    package mutating func writeBitString(_ content: some Collection<UInt8>) {
        writeElement(tag: .bitString, content: [0] + Array(content))
    }

    /// A named-bit BIT STRING (X.690 §11.2.2): bit 0 is the most significant
    /// bit of the first octet; trailing zero bits are removed.
    package mutating func writeNamedBits(_ bits: [Int]) {
        let highest = bits.filter { $0 >= 0 }.max() ?? -1
        var octets = [UInt8](repeating: 0, count: highest < 0 ? 0 : highest / 8 + 1)
        for bit in bits where bit >= 0 { octets[bit / 8] |= 0x80 >> UInt8(bit % 8) }
        let unused = highest < 0 ? 0 : 7 - highest % 8
        writeElement(tag: .bitString, content: [UInt8(unused)] + octets)
    }

    package mutating func writeUTF8String(_ text: String) {
        writeElement(tag: .utf8String, content: Array(text.utf8))
    }

    /// PrintableString; returns false, writing nothing, for a character
    /// outside its repertoire (X.680 §41.4).
    @discardableResult
    package mutating func writePrintableString(_ text: String) -> Bool {
        let content = Array(text.utf8)
        guard content.allSatisfy(DER.isPrintableStringCharacter) else { return false }
        writeElement(tag: .printableString, content: content)
        return true
    }

    /// IA5String; returns false, writing nothing, for non-ASCII text.
    @discardableResult
    package mutating func writeIA5String(_ text: String, tag: DERTag = .ia5String) -> Bool {
        let content = Array(text.utf8)
        guard content.allSatisfy({ $0 < 0x80 }) else { return false }
        writeElement(tag: tag, content: content)
        return true
    }

    /// A certificate validity time as RFC 5280 §4.1.2.5 requires: UTCTime
    /// (`YYMMDDHHMMSSZ`) for 1950 through 2049, GeneralizedTime
    /// (`YYYYMMDDHHMMSSZ`) otherwise.
    package mutating func writeTime(_ seconds: Int64) throws(DERError) {
        guard let fields = CivilTime.fields(seconds) else { throw .invalidContent("time outside years 1-9999") }
        let rest = [fields.month, fields.day, fields.hour, fields.minute, fields.second]
        if (1950...2049).contains(fields.year) {
            writeElement(tag: .utcTime, content: digits([fields.year % 100] + rest) + [UInt8(ascii: "Z")])
        } else {
            writeElement(
                tag: .generalizedTime,
                content: digits([fields.year / 100, fields.year % 100] + rest) + [UInt8(ascii: "Z")])
        }
    }

    private func digits(_ pairs: [Int]) -> [UInt8] {
        pairs.flatMap { [UInt8(0x30 + $0 / 10), UInt8(0x30 + $0 % 10)] }
    }
}
