/// An X.501 `Name` (RFC 5280 §4.1.2.4): the DER, which is what chain
/// building compares (byte equality, the simple form of §7.1's matching),
/// and its attributes for display and for the builder.
package struct DistinguishedName: Hashable, Sendable, CustomStringConvertible {
    /// One `AttributeTypeAndValue`. `value` is the decoded text when the
    /// value is one of the string types `DER.string` accepts and is valid for
    /// its type; otherwise nil, with the encoding still in `valueEncoded`.
    package struct Attribute: Hashable, Sendable {
        package let type: ASN1ObjectIdentifier
        package let valueTag: DERTag
        /// The value element's whole DER (tag, length, contents).
        package let valueEncoded: [UInt8]
        package let value: String?
    }

    /// The Name SEQUENCE, tag and length included.
    package let derRepresentation: [UInt8]
    /// In encoded order (most general first); each RDN holds one attribute
    /// or, rarely, several.
    package let relativeDistinguishedNames: [[Attribute]]

    /// Parses a Name SEQUENCE. Multi-valued RDNs are accepted without
    /// checking the DER SET OF ordering. An empty Name is valid (an empty
    /// subject is allowed when subjectAltName is present, §4.1.2.6).
    init(reading reader: inout DERReader, field: String) throws(CertificateError) {
        let element = try parsing(field) { try reader.readElement(tag: .sequence) }
        derRepresentation = Array(element.encoded)
        var names = DERReader(element.content)
        var rdns: [[Attribute]] = []
        while !names.isAtEnd {
            var set = try parsing("\(field): RelativeDistinguishedName") { try names.readSet() }
            var attributes: [Attribute] = []
            while !set.isAtEnd {
                var pair = try parsing("\(field): AttributeTypeAndValue") { try set.readSequence() }
                let type = try parsing("\(field): attribute type") { try pair.readObjectIdentifier() }
                let value = try parsing("\(field): attribute value") { try pair.readElement() }
                try parsing("\(field): AttributeTypeAndValue") { try pair.finish() }
                attributes.append(
                    Attribute(
                        type: type, valueTag: value.tag, valueEncoded: Array(value.encoded),
                        value: try? DER.string(tag: value.tag, content: value.content)))
            }
            guard !attributes.isEmpty else { throw .malformed("\(field): empty RelativeDistinguishedName") }
            rdns.append(attributes)
        }
        relativeDistinguishedNames = rdns
    }

    /// Builds a Name with one attribute per RDN, in the order given. Text is
    /// encoded as UTF8String, except countryName, which X.520 makes a
    /// two-letter PrintableString. Nil if a countryName is not that.
    package init?(attributes: [(type: ASN1ObjectIdentifier, value: String)]) {
        var encoded: [(type: ASN1ObjectIdentifier, tag: DERTag, value: String)] = []
        for (type, value) in attributes {
            if type == .countryName {
                guard value.utf8.count == 2, value.utf8.allSatisfy(DER.isPrintableStringCharacter) else { return nil }
                encoded.append((type, .printableString, value))
            } else {
                encoded.append((type, .utf8String, value))
            }
        }
        self.init(encoding: encoded)
    }

    /// Every value as UTF8String, which RFC 5280 §4.1.2.4 prefers.
    init(utf8Attributes attributes: [(type: ASN1ObjectIdentifier, value: String)]) {
        self.init(encoding: attributes.map { ($0.type, .utf8String, $0.value) })
    }

    /// The tags are string types whose repertoire the values were checked against.
    private init(encoding attributes: [(type: ASN1ObjectIdentifier, tag: DERTag, value: String)]) {
        var writer = DERWriter()
        var rdns: [[Attribute]] = []
        writer.writeSequence { name in
            for (type, tag, value) in attributes {
                var valueWriter = DERWriter()
                valueWriter.writeElement(tag: tag, content: Array(value.utf8))
                name.writeSet { set in
                    set.writeSequence { pair in
                        pair.writeObjectIdentifier(type)
                        pair.writeEncoded(valueWriter.bytes)
                    }
                }
                rdns.append([Attribute(type: type, valueTag: tag, valueEncoded: valueWriter.bytes, value: value)])
            }
        }
        derRepresentation = writer.bytes
        relativeDistinguishedNames = rdns
    }

    package var attributes: [Attribute] { relativeDistinguishedNames.flatMap { $0 } }

    /// The most specific (last encoded) commonName. For display only: host
    /// names are never matched against it (RFC 9525 §6.3).
    package var commonName: String? { attributes.last { $0.type == .commonName }?.value }
    package var organizationName: String? { attributes.last { $0.type == .organizationName }?.value }

    /// RFC 4514 string form: RDNs most specific first, `,` between them
    /// (written `, ` for readability), `+` inside one; short names from
    /// RFC 4514 §3, dotted OIDs otherwise; values escaped per §2.4, or `#`
    /// and the hex of their DER when not a decodable string.
    package var description: String {
        relativeDistinguishedNames.reversed().map { rdn in
            rdn.map { attribute in
                let name = Self.shortNames[attribute.type] ?? attribute.type.description
                let value: String
                if let text = attribute.value {
                    value = Self.escaped(text)
                } else {
                    value = "#" + attribute.valueEncoded.map { byte in
                        let digits = Array("0123456789ABCDEF")
                        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
                    }.joined()
                }
                return name + "=" + value
            }.joined(separator: "+")
        }.joined(separator: ", ")
    }

    private static let shortNames: [ASN1ObjectIdentifier: String] = [
        .commonName: "CN", .localityName: "L", .stateOrProvinceName: "ST", .organizationName: "O",
        .organizationalUnitName: "OU", .countryName: "C", .streetAddress: "STREET", .domainComponent: "DC",
        .userID: "UID",
    ]

    private static func escaped(_ text: String) -> String {
        var result = ""
        let scalars = Array(text.unicodeScalars)
        for (index, scalar) in scalars.enumerated() {
            switch scalar {
            case "\"", "+", ",", ";", "<", ">", "\\":
                result += "\\" + String(scalar)
            case "#" where index == 0, " " where index == 0 || index == scalars.count - 1:
                result += "\\" + String(scalar)
            case "\u{0}":
                result += "\\00"
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    package static func == (lhs: DistinguishedName, rhs: DistinguishedName) -> Bool {
        lhs.derRepresentation == rhs.derRepresentation
    }

    package func hash(into hasher: inout Hasher) { hasher.combine(derRepresentation) }
}
