/// One `Extension` (RFC 5280 §4.1): identifier, criticality, and the DER
/// inside extnValue.
package struct Extension: Equatable, Sendable {
    package let extnID: ASN1ObjectIdentifier
    package let critical: Bool
    package let extnValue: [UInt8]
}

/// basicConstraints (RFC 5280 §4.2.1.9).
package struct BasicConstraints: Equatable, Sendable {
    package let isCertificateAuthority: Bool
    package let pathLenConstraint: Int?
}

/// keyUsage bits (RFC 5280 §4.2.1.3); bit n of the BIT STRING is `1 << n`.
package struct KeyUsage: OptionSet, Equatable, Sendable {
    package let rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }

    package static let digitalSignature = KeyUsage(rawValue: 1 << 0)
    /// Also called contentCommitment.
    package static let nonRepudiation = KeyUsage(rawValue: 1 << 1)
    package static let keyEncipherment = KeyUsage(rawValue: 1 << 2)
    package static let dataEncipherment = KeyUsage(rawValue: 1 << 3)
    package static let keyAgreement = KeyUsage(rawValue: 1 << 4)
    package static let keyCertSign = KeyUsage(rawValue: 1 << 5)
    package static let cRLSign = KeyUsage(rawValue: 1 << 6)
    package static let encipherOnly = KeyUsage(rawValue: 1 << 7)
    package static let decipherOnly = KeyUsage(rawValue: 1 << 8)

    /// The named bit numbers, for encoding.
    var bitNumbers: [Int] { (0...8).filter { rawValue & (1 << $0) != 0 } }
}

/// authorityKeyIdentifier (RFC 5280 §4.2.1.1).
package struct AuthorityKeyIdentifier: Equatable, Sendable {
    package let keyIdentifier: [UInt8]?
    package let authorityCertIssuer: [GeneralName]?
    /// INTEGER contents octets.
    package let authorityCertSerialNumber: [UInt8]?
}

/// The extensions of a v3 certificate: every one in `all`, and the ones a
/// TLS chain validator needs decoded. An extension this type does not
/// decode stays in `unrecognized` with its critical flag, so the validator
/// can refuse a certificate with an unrecognized critical extension
/// (RFC 5280 §4.2).
package struct CertificateExtensions: Equatable, Sendable {
    package private(set) var all: [Extension] = []
    package private(set) var subjectAlternativeName: [GeneralName]?
    package private(set) var basicConstraints: BasicConstraints?
    package private(set) var keyUsage: KeyUsage?
    package private(set) var extendedKeyUsage: [ASN1ObjectIdentifier]?
    package private(set) var subjectKeyIdentifier: [UInt8]?
    package private(set) var authorityKeyIdentifier: AuthorityKeyIdentifier?
    package private(set) var nameConstraints: NameConstraints?

    package static let recognized: Set<ASN1ObjectIdentifier> = [
        .subjectAltName, .basicConstraints, .keyUsage, .extKeyUsage, .subjectKeyIdentifier,
        .authorityKeyIdentifier, .nameConstraints,
    ]

    package var unrecognized: [Extension] { all.filter { !Self.recognized.contains($0.extnID) } }
    package var hasUnrecognizedCriticalExtension: Bool { unrecognized.contains { $0.critical } }

    /// The subjectAltName dNSName entries.
    package var dnsNames: [String] {
        (subjectAlternativeName ?? []).compactMap { if case .dNSName(let name) = $0 { name } else { nil } }
    }

    /// The subjectAltName iPAddress entries.
    package var ipAddresses: [[UInt8]] {
        (subjectAlternativeName ?? []).compactMap { if case .iPAddress(let address) = $0 { address } else { nil } }
    }

    /// Whether extendedKeyUsage permits TLS server authentication: absent
    /// (no restriction), or listing serverAuth or anyExtendedKeyUsage.
    package var permitsServerAuthentication: Bool {
        guard let usages = extendedKeyUsage else { return true }
        return usages.contains(.serverAuth) || usages.contains(.anyExtendedKeyUsage)
    }

    init() {}

    /// From the contents of `Extensions ::= SEQUENCE SIZE (1..MAX) OF Extension`.
    init(reading reader: inout DERReader) throws(CertificateError) {
        var seen = Set<ASN1ObjectIdentifier>()
        while !reader.isAtEnd {
            var element = try parsing("extension") { try reader.readSequence() }
            let identifier = try parsing("extension: extnID") { try element.readObjectIdentifier() }
            // critical FALSE written out (a DER DEFAULT violation) is tolerated.
            let critical = try parsing("extension \(identifier): critical") {
                try element.readOptionalElement(tag: .boolean).map { try DER.boolean($0.content) } ?? false
            }
            let value = try parsing("extension \(identifier): extnValue") { try element.readOctetString() }
            try parsing("extension \(identifier)") { try element.finish() }
            guard seen.insert(identifier).inserted else { throw .duplicateExtension(identifier) }
            all.append(Extension(extnID: identifier, critical: critical, extnValue: Array(value)))
            try decode(identifier, value)
        }
        guard !all.isEmpty else { throw .malformed("extensions: empty") }
    }

    private mutating func decode(_ identifier: ASN1ObjectIdentifier, _ value: ArraySlice<UInt8>)
        throws(CertificateError)
    {
        var outer = DERReader(value)
        switch identifier {
        case .subjectAltName:
            var names = try parsing("subjectAltName") { try outer.readSequence() }
            subjectAlternativeName = try GeneralName.list(&names, field: "subjectAltName")
        case .basicConstraints:
            var body = try parsing("basicConstraints") { try outer.readSequence() }
            let isCA = try parsing("basicConstraints: cA") {
                try body.readOptionalElement(tag: .boolean).map { try DER.boolean($0.content) } ?? false
            }
            let pathLength = try parsing("basicConstraints: pathLenConstraint") {
                try body.readOptionalElement(tag: .integer).map { try DER.smallInteger($0.content) }
            }
            try parsing("basicConstraints") { try body.finish() }
            basicConstraints = BasicConstraints(isCertificateAuthority: isCA, pathLenConstraint: pathLength)
        case .keyUsage:
            // At least one bit set (§4.2.1.3). Trailing zero bits are not
            // required to be trimmed (X.690 §11.2.2) as some CAs leave them,
            // and bits past decipherOnly are ignored.
            let bits = try parsing("keyUsage") { try outer.readBitString() }
            var usage: UInt16 = 0
            for (offset, byte) in bits.bytes.prefix(2).enumerated() {
                for bit in 0..<8 where byte & (0x80 >> bit) != 0 { usage |= 1 << (offset * 8 + bit) }
            }
            guard bits.bytes.contains(where: { $0 != 0 }) else { throw .malformed("keyUsage: no bit set") }
            keyUsage = KeyUsage(rawValue: usage)
        case .extKeyUsage:
            var list = try parsing("extKeyUsage") { try outer.readSequence() }
            var usages: [ASN1ObjectIdentifier] = []
            while !list.isAtEnd { usages.append(try parsing("extKeyUsage") { try list.readObjectIdentifier() }) }
            guard !usages.isEmpty else { throw .malformed("extKeyUsage: empty") }
            extendedKeyUsage = usages
        case .subjectKeyIdentifier:
            subjectKeyIdentifier = Array(try parsing("subjectKeyIdentifier") { try outer.readOctetString() })
        case .authorityKeyIdentifier:
            var body = try parsing("authorityKeyIdentifier") { try outer.readSequence() }
            let keyIdentifier = try parsing("authorityKeyIdentifier: keyIdentifier") {
                try body.readOptionalElement(tag: .contextSpecific(0, constructed: false)).map { Array($0.content) }
            }
            var issuer: [GeneralName]?
            if let element = try parsing("authorityKeyIdentifier: authorityCertIssuer", {
                try body.readOptionalElement(tag: .contextSpecific(1, constructed: true))
            }) {
                var names = DERReader(element.content)
                issuer = try GeneralName.list(&names, field: "authorityKeyIdentifier: authorityCertIssuer")
            }
            let serial = try parsing("authorityKeyIdentifier: authorityCertSerialNumber") {
                try body.readOptionalElement(tag: .contextSpecific(2, constructed: false)).map {
                    Array(try DER.integerContent($0.content))
                }
            }
            try parsing("authorityKeyIdentifier") { try body.finish() }
            authorityKeyIdentifier = AuthorityKeyIdentifier(
                keyIdentifier: keyIdentifier, authorityCertIssuer: issuer, authorityCertSerialNumber: serial)
        case .nameConstraints:
            nameConstraints = try NameConstraints(extnValue: value)
            return
        default:
            return
        }
        try parsing("extension \(identifier)") { try outer.finish() }
    }
}
