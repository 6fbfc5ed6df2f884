/// Why a certificate could not be issued from a template.
package enum CertificateIssuanceError: Error, Equatable, Sendable {
    /// Zero, or longer than the 20 octets RFC 5280 §4.1.2.2 allows once
    /// encoded as a positive INTEGER.
    case invalidSerialNumber
    /// notAfter before notBefore, or a time outside years 0001...9999.
    case invalidValidity
    /// Not a 65-octet uncompressed P-256 point.
    case invalidPublicKey
    /// Not an ASCII host name (or `*.` wildcard) of letters, digits, `-`, `_`.
    case invalidDNSName(String)
    /// Not 4 or 16 octets.
    case invalidIPAddress([UInt8])
    /// A leaf with neither DNS names nor IP addresses.
    case missingSubjectAlternativeName
    case invalidPathLenConstraint
    /// The signature closure failed, or its result is not an ECDSA-Sig-Value.
    case invalidSignature
    /// The bytes given as a TBSCertificate are not one DER SEQUENCE.
    case invalidTBSCertificate
}

/// What an issued certificate is for.
package enum CertificateProfile: Equatable, Sendable {
    /// A TLS server certificate: basicConstraints cA FALSE, keyUsage
    /// digitalSignature, extendedKeyUsage serverAuth, subjectAltName.
    case leaf(dnsNames: [String], ipAddresses: [[UInt8]])
    /// A CA certificate: basicConstraints cA TRUE (with an optional
    /// pathLenConstraint), keyUsage keyCertSign and cRLSign.
    case certificateAuthority(pathLenConstraint: Int?)
}

/// The fields of a certificate to issue. Names are DER-ready
/// `DistinguishedName`s: the issuer usually is the CA certificate's
/// `subject`, copied byte for byte so chain building matches it (RFC 5280
/// §4.1.2.4); the subject is built with `DistinguishedName(commonName:...)`.
package struct CertificateTemplate: Equatable, Sendable {
    /// Unsigned big-endian; the caller draws it at random (RFC 5280 §4.1.2.2
    /// and CA/B Forum practice want at least 64 random bits).
    package var serialNumber: [UInt8]
    package var issuer: DistinguishedName
    package var subject: DistinguishedName
    /// Seconds since the Unix epoch.
    package var notBefore: Int64
    package var notAfter: Int64
    /// The subject's P-256 public key, X9.62 uncompressed (0x04 || x || y).
    package var subjectPublicKey: [UInt8]
    package var profile: CertificateProfile
    /// RFC 5280 §4.2.1.2; the caller computes it (e.g. SHA-1 or a truncated
    /// SHA-256 of the key). Omitted when nil.
    package var subjectKeyIdentifier: [UInt8]?
    /// The issuer's subjectKeyIdentifier (RFC 5280 §4.2.1.1). Omitted when nil.
    package var authorityKeyIdentifier: [UInt8]?

    package init(
        serialNumber: [UInt8], issuer: DistinguishedName, subject: DistinguishedName, notBefore: Int64,
        notAfter: Int64, subjectPublicKey: [UInt8], profile: CertificateProfile,
        subjectKeyIdentifier: [UInt8]? = nil, authorityKeyIdentifier: [UInt8]? = nil
    ) {
        self.serialNumber = serialNumber
        self.issuer = issuer
        self.subject = subject
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.subjectPublicKey = subjectPublicKey
        self.profile = profile
        self.subjectKeyIdentifier = subjectKeyIdentifier
        self.authorityKeyIdentifier = authorityKeyIdentifier
    }
}

extension DistinguishedName {
    /// A subject of `CN=<commonName>, O=<organizationName>` (encoded O then
    /// CN, most general first), leaving out a nil attribute.
    package init(commonName: String?, organizationName: String? = nil) {
        var attributes: [(type: ASN1ObjectIdentifier, value: String)] = []
        if let organizationName { attributes.append((.organizationName, organizationName)) }
        if let commonName { attributes.append((.commonName, commonName)) }
        self.init(utf8Attributes: attributes)
    }
}

/// Issues X.509 v3 certificates signed with ecdsa-with-SHA256 (RFC 5758
/// §3.2), in two steps because signing happens elsewhere:
/// 1. `tbsCertificate(for:)` encodes the TBSCertificate;
/// 2. the caller signs those bytes with the issuer's P-256 key;
/// 3. `certificate(tbsCertificate:ecdsaSignature:)` wraps both into the
///    Certificate DER. `issue(_:signature:)` chains the three.
package enum CertificateBuilder {
    /// `AlgorithmIdentifier { ecdsa-with-SHA256 }`, parameters absent.
    private static var signatureAlgorithmDER: [UInt8] {
        var writer = DERWriter()
        writer.writeSequence { $0.writeObjectIdentifier(.ecdsaWithSHA256) }
        return writer.bytes
    }

    /// The TBSCertificate DER (RFC 5280 §4.1) for `template`, extensions
    /// in this order: basicConstraints (critical), keyUsage (critical),
    /// then for a leaf extendedKeyUsage and subjectAltName (critical only if
    /// the subject is empty, §4.2.1.6), then subjectKeyIdentifier and
    /// authorityKeyIdentifier when given. Validity times are UTCTime through
    /// 2049 and GeneralizedTime from 2050 (§4.1.2.5).
    package static func tbsCertificate(for template: CertificateTemplate) throws(CertificateIssuanceError) -> [UInt8] {
        let serialMagnitude = Array(template.serialNumber.drop { $0 == 0 })
        guard let first = serialMagnitude.first,
            serialMagnitude.count + (first & 0x80 != 0 ? 1 : 0) <= 20
        else { throw .invalidSerialNumber }
        guard template.notBefore <= template.notAfter else { throw .invalidValidity }
        guard let keyInfo = SubjectPublicKeyInfo(p256UncompressedPoint: template.subjectPublicKey) else {
            throw .invalidPublicKey
        }
        let extensions = try extensionsDER(template)

        var writer = DERWriter()
        do {
            try writer.writeSequence { (tbs: inout DERWriter) throws(DERError) in
                tbs.writeExplicit(0) { $0.writeInteger(2) }  // v3
                tbs.writeInteger(unsignedBytes: serialMagnitude)
                tbs.writeEncoded(signatureAlgorithmDER)
                tbs.writeEncoded(template.issuer.derRepresentation)
                try tbs.writeSequence { (validity: inout DERWriter) throws(DERError) in
                    try validity.writeTime(template.notBefore)
                    try validity.writeTime(template.notAfter)
                }
                tbs.writeEncoded(template.subject.derRepresentation)
                tbs.writeEncoded(keyInfo.derRepresentation)
                tbs.writeExplicit(3) { $0.writeEncoded(extensions) }
            }
        } catch {
            throw .invalidValidity
        }
        return writer.bytes
    }

    /// The Certificate DER: `SEQUENCE { tbsCertificate, signatureAlgorithm,
    /// signatureValue BIT STRING }` (RFC 5280 §4.1.1). `ecdsaSignature` is
    /// the DER `Ecdsa-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }`
    /// (RFC 5758 §3.2); its shape is checked, not its value.
    package static func certificate(tbsCertificate: [UInt8], ecdsaSignature: [UInt8])
        throws(CertificateIssuanceError) -> [UInt8]
    {
        do {
            var tbsReader = DERReader(tbsCertificate)
            _ = try tbsReader.readSequence()
            try tbsReader.finish()
        } catch {
            throw .invalidTBSCertificate
        }
        do {
            var signatureReader = DERReader(ecdsaSignature)
            var values = try signatureReader.readSequence()
            try signatureReader.finish()
            for _ in 0..<2 {
                let integer = try values.readInteger()
                guard let first = integer.first, first & 0x80 == 0 else { throw DERError.invalidContent("negative") }
            }
            try values.finish()
        } catch {
            throw .invalidSignature
        }
        var writer = DERWriter()
        writer.writeSequence { certificate in
            certificate.writeEncoded(tbsCertificate)
            certificate.writeEncoded(signatureAlgorithmDER)
            certificate.writeBitString(ecdsaSignature)
        }
        return writer.bytes
    }

    /// Encodes, signs with `signature` (TBSCertificate DER in, DER ECDSA
    /// signature out, nil on failure) and assembles.
    package static func issue(_ template: CertificateTemplate, signature: ([UInt8]) -> [UInt8]?)
        throws(CertificateIssuanceError) -> [UInt8]
    {
        let tbs = try tbsCertificate(for: template)
        guard let signatureValue = signature(tbs) else { throw .invalidSignature }
        return try certificate(tbsCertificate: tbs, ecdsaSignature: signatureValue)
    }

    /// `Extensions ::= SEQUENCE SIZE (1..MAX) OF Extension`.
    private static func extensionsDER(_ template: CertificateTemplate) throws(CertificateIssuanceError) -> [UInt8] {
        var list = DERWriter()
        switch template.profile {
        case .leaf(let dnsNames, let ipAddresses):
            guard !dnsNames.isEmpty || !ipAddresses.isEmpty else { throw .missingSubjectAlternativeName }
            var names = DERWriter()
            for name in dnsNames {
                guard isValidDNSName(name) else { throw .invalidDNSName(name) }
                names.writeIA5String(name, tag: GeneralName.dNSNameTag)
            }
            for address in ipAddresses {
                guard address.count == 4 || address.count == 16 else { throw .invalidIPAddress(address) }
                names.writeElement(tag: GeneralName.iPAddressTag, content: address)
            }
            writeExtension(&list, .basicConstraints, critical: true) { $0.writeSequence { _ in } }
            writeExtension(&list, .keyUsage, critical: true) {
                $0.writeNamedBits(KeyUsage.digitalSignature.bitNumbers)
            }
            writeExtension(&list, .extKeyUsage, critical: false) {
                $0.writeSequence { $0.writeObjectIdentifier(.serverAuth) }
            }
            let subjectIsEmpty = template.subject.relativeDistinguishedNames.isEmpty
            writeExtension(&list, .subjectAltName, critical: subjectIsEmpty) {
                $0.writeSequence { $0.writeEncoded(names.bytes) }
            }
        case .certificateAuthority(let pathLenConstraint):
            if let pathLenConstraint, pathLenConstraint < 0 { throw .invalidPathLenConstraint }
            writeExtension(&list, .basicConstraints, critical: true) {
                $0.writeSequence { constraints in
                    constraints.writeBoolean(true)
                    if let pathLenConstraint { constraints.writeInteger(pathLenConstraint) }
                }
            }
            writeExtension(&list, .keyUsage, critical: true) {
                $0.writeNamedBits(KeyUsage([.keyCertSign, .cRLSign]).bitNumbers)
            }
        }
        if let subjectKeyIdentifier = template.subjectKeyIdentifier {
            writeExtension(&list, .subjectKeyIdentifier, critical: false) {
                $0.writeOctetString(subjectKeyIdentifier)
            }
        }
        if let authorityKeyIdentifier = template.authorityKeyIdentifier {
            writeExtension(&list, .authorityKeyIdentifier, critical: false) {
                $0.writeSequence {
                    $0.writeElement(tag: .contextSpecific(0, constructed: false), content: authorityKeyIdentifier)
                }
            }
        }
        var writer = DERWriter()
        writer.writeSequence { $0.writeEncoded(list.bytes) }
        return writer.bytes
    }

    /// `Extension ::= SEQUENCE { extnID, critical DEFAULT FALSE, extnValue }`;
    /// `critical` is written only when TRUE, as DER requires (X.690 §11.5).
    private static func writeExtension(
        _ writer: inout DERWriter, _ identifier: ASN1ObjectIdentifier, critical: Bool,
        _ value: (inout DERWriter) -> Void
    ) {
        var inner = DERWriter()
        value(&inner)
        writer.writeSequence { element in
            element.writeObjectIdentifier(identifier)
            if critical { element.writeBoolean(true) }
            element.writeOctetString(inner.bytes)
        }
    }

    /// RFC 1034 §3.5 labels (1–63 characters, at most 253 in all), plus `_`
    /// (used in real host names), with an optional `*` as the whole
    /// leftmost label.
    private static func isValidDNSName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 253 else { return false }
        let labels = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        for (index, label) in labels.enumerated() {
            if index == 0, label.elementsEqual([UInt8(ascii: "*")]), labels.count > 1 { continue }
            guard (1...63).contains(label.count) else { return false }
            let allowed = label.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
            guard allowed else { return false }
        }
        return true
    }
}
