/// A `GeneralName` (RFC 5280 §4.2.1.6) as used for host name checks:
/// dNSName and iPAddress are decoded, every other choice is kept by tag.
package enum GeneralName: Equatable, Sendable {
    /// IA5String; ASCII is checked, the label syntax is not.
    case dNSName(String)
    /// 4 octets (IPv4) or 16 (IPv6), network byte order.
    case iPAddress([UInt8])
    /// otherName [0], rfc822Name [1], x400Address [3], directoryName [4],
    /// ediPartyName [5], uniformResourceIdentifier [6], registeredID [8]:
    /// the tag and contents octets.
    case unsupported(tag: DERTag, content: [UInt8])

    static let dNSNameTag = DERTag.contextSpecific(2, constructed: false)
    static let iPAddressTag = DERTag.contextSpecific(7, constructed: false)

    /// Checks the tag is one of the nine CHOICE alternatives with the right
    /// form: [0], [3], [4], [5] constructed (the last three IMPLICIT over a
    /// SEQUENCE, [4] EXPLICIT over a CHOICE), the rest primitive.
    static func checkChoiceTag(_ tag: DERTag, field: String) throws(CertificateError) {
        guard tag.isContextSpecific, tag.number <= 8 else { throw .malformed("\(field): not a GeneralName") }
        let constructed = [0, 3, 4, 5].contains(tag.number)
        guard tag.isConstructed == constructed else { throw .malformed("\(field): GeneralName form") }
    }

    init(element: DERElement, field: String) throws(CertificateError) {
        try Self.checkChoiceTag(element.tag, field: field)
        switch element.tag {
        case Self.dNSNameTag:
            guard element.content.allSatisfy({ $0 < 0x80 }) else { throw .malformed("\(field): dNSName not IA5") }
            self = .dNSName(String(decoding: element.content, as: UTF8.self))
        case Self.iPAddressTag:
            guard element.content.count == 4 || element.content.count == 16 else {
                throw .malformed("\(field): iPAddress length \(element.content.count)")
            }
            self = .iPAddress(Array(element.content))
        default:
            self = .unsupported(tag: element.tag, content: Array(element.content))
        }
    }

    /// `GeneralNames ::= SEQUENCE SIZE (1..MAX) OF GeneralName`, from the
    /// contents of the SEQUENCE.
    static func list(_ reader: inout DERReader, field: String) throws(CertificateError) -> [GeneralName] {
        var names: [GeneralName] = []
        while !reader.isAtEnd {
            let element = try parsing(field) { try reader.readElement() }
            names.append(try GeneralName(element: element, field: field))
        }
        guard !names.isEmpty else { throw .malformed("\(field): empty GeneralNames") }
        return names
    }
}

/// One `GeneralSubtree` base of a name constraint (RFC 5280 §4.2.1.10).
package enum GeneralSubtree: Equatable, Sendable {
    /// A DNS name constraint: the name and any name formed by adding labels
    /// to its left. May be empty (matching every name).
    case dNSName(String)
    /// An address and a mask of the same length: 4+4 or 16+16 octets. The
    /// mask is not checked to be contiguous.
    case iPAddress(address: [UInt8], mask: [UInt8])
    /// Any other GeneralName form (directoryName, rfc822Name, URI...): the tag
    /// and contents, so a validator can refuse what it cannot enforce.
    case unsupported(tag: DERTag, content: [UInt8])
}

/// The nameConstraints extension (RFC 5280 §4.2.1.10). At least one of the
/// lists is non-empty.
package struct NameConstraints: Equatable, Sendable {
    package let permittedSubtrees: [GeneralSubtree]
    package let excludedSubtrees: [GeneralSubtree]

    /// NameConstraints ::= SEQUENCE { permittedSubtrees [0] GeneralSubtrees
    /// OPTIONAL, excludedSubtrees [1] GeneralSubtrees OPTIONAL }, both IMPLICIT
    /// SEQUENCE SIZE (1..MAX) OF GeneralSubtree. minimum must be 0 and maximum
    /// absent, as §4.2.1.10 requires of conforming CAs.
    init(extnValue: ArraySlice<UInt8>) throws(CertificateError) {
        let field = "nameConstraints"
        var outer = DERReader(extnValue)
        var body = try parsing(field) { try outer.readSequence() }
        try parsing(field) { try outer.finish() }
        var permitted: [GeneralSubtree] = []
        var excluded: [GeneralSubtree] = []
        if var list = try parsing(field, { try body.readOptionalExplicit(0) }) {
            permitted = try Self.subtrees(&list, field: "\(field): permittedSubtrees")
        }
        if var list = try parsing(field, { try body.readOptionalExplicit(1) }) {
            excluded = try Self.subtrees(&list, field: "\(field): excludedSubtrees")
        }
        try parsing(field) { try body.finish() }
        guard !permitted.isEmpty || !excluded.isEmpty else { throw .malformed("\(field): empty") }
        permittedSubtrees = permitted
        excludedSubtrees = excluded
    }

    private static func subtrees(_ reader: inout DERReader, field: String) throws(CertificateError) -> [GeneralSubtree] {
        var result: [GeneralSubtree] = []
        while !reader.isAtEnd {
            var subtree = try parsing(field) { try reader.readSequence() }
            let base = try parsing("\(field): base") { try subtree.readElement() }
            if let minimum = try parsing(field, { try subtree.readOptionalElement(tag: .contextSpecific(0, constructed: false)) }) {
                guard try parsing("\(field): minimum", { try DER.smallInteger(minimum.content) }) == 0 else {
                    throw .malformed("\(field): minimum is not 0")
                }
            }
            guard subtree.nextTag != .contextSpecific(1, constructed: false) else {
                throw .malformed("\(field): maximum present")
            }
            try parsing(field) { try subtree.finish() }
            try GeneralName.checkChoiceTag(base.tag, field: field)
            switch base.tag {
            case GeneralName.dNSNameTag:
                guard base.content.allSatisfy({ $0 < 0x80 }) else { throw .malformed("\(field): dNSName not IA5") }
                result.append(.dNSName(String(decoding: base.content, as: UTF8.self)))
            case GeneralName.iPAddressTag:
                let count = base.content.count
                guard count == 8 || count == 32 else { throw .malformed("\(field): iPAddress length \(count)") }
                let address = Array(base.content.prefix(count / 2))
                let mask = Array(base.content.suffix(count / 2))
                result.append(.iPAddress(address: address, mask: mask))
            default:
                result.append(.unsupported(tag: base.tag, content: Array(base.content)))
            }
        }
        guard !result.isEmpty else { throw .malformed("\(field): empty GeneralSubtrees") }
        return result
    }
}
