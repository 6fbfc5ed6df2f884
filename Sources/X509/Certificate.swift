/// Why a certificate was refused. `malformed` names the field and what was
/// wrong with it, e.g. `validity: notAfter: expected tag 0x17, found 0x04`.
package enum CertificateError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    /// The same extension appears twice (RFC 5280 §4.2).
    case duplicateExtension(ASN1ObjectIdentifier)
    /// `tbsCertificate.signature` differs from `signatureAlgorithm`
    /// (RFC 5280 §4.1.1.2 requires the same algorithm identifier).
    case signatureAlgorithmMismatch

    package var description: String {
        switch self {
        case .malformed(let reason): "malformed certificate: \(reason)"
        case .duplicateExtension(let identifier): "duplicate extension \(identifier)"
        case .signatureAlgorithmMismatch: "inner and outer signature algorithms differ"
        }
    }
}

/// Runs DER steps and names the field they were reading when one fails.
/// The closure is untyped only because Swift does not infer typed throws
/// for closures; it throws `DERError` (or `CertificateError`, passed on).
func parsing<T>(_ field: @autoclosure () -> String, _ body: () throws -> T) throws(CertificateError) -> T {
    do {
        return try body()
    } catch let error as CertificateError {
        throw error
    } catch {
        throw .malformed("\(field()): \(error)")
    }
}

/// An X.509 v1–v3 certificate (RFC 5280 §4.1), parsed from DER for chain
/// validation. Nothing is verified here: the caller checks `signatureValue`
/// over `tbsCertificateBytes` with the issuer's key, and applies validity,
/// name and extension rules.
///
/// Strictness: DER as `DERReader` enforces it, every SEQUENCE must end where
/// RFC 5280 says, no bytes may follow the certificate. Two DEFAULT values
/// written out explicitly are tolerated because deployed CAs do it: a
/// `critical` or `cA` BOOLEAN encoded as FALSE, and `version` encoded as v1.
/// Serial numbers are kept as encoded, including the negative and over-long
/// ones RFC 5280 §4.1.2.2 asks parsers to handle gracefully.
package struct Certificate: Equatable, Sendable {
    /// The whole certificate as it was parsed.
    package let derRepresentation: [UInt8]
    /// The DER of `tbsCertificate`, tag and length included: the bytes the
    /// signature covers (RFC 5280 §4.1.1.3).
    package let tbsCertificateBytes: [UInt8]
    /// The X.509 version number: 1, 2 or 3 (the encoded value plus one).
    package let version: Int
    /// The INTEGER contents octets (two's complement, as encoded).
    package let serialNumber: [UInt8]
    package let signatureAlgorithm: SignatureAlgorithm
    package let issuer: DistinguishedName
    package let subject: DistinguishedName
    /// Seconds since 1970-01-01T00:00:00Z.
    package let notBefore: Int64
    package let notAfter: Int64
    package let subjectPublicKeyInfo: SubjectPublicKeyInfo
    /// Empty for v1 and v2 certificates.
    package let extensions: CertificateExtensions
    /// The BIT STRING contents after the unused-bits octet, which must be 0.
    /// For ECDSA this is the DER `Ecdsa-Sig-Value` (RFC 5758 §3.2).
    package let signatureValue: [UInt8]

    package init(derRepresentation: [UInt8]) throws(CertificateError) {
        self.derRepresentation = derRepresentation
        var outer = DERReader(derRepresentation)
        var certificate = try parsing("Certificate") { try outer.readSequence() }
        try parsing("Certificate: after the end") { try outer.finish() }

        let tbsElement = try parsing("tbsCertificate") { try certificate.readElement(tag: .sequence) }
        let outerAlgorithm = try parsing("signatureAlgorithm") { try certificate.readElement(tag: .sequence) }
        let signature = try parsing("signatureValue") { try certificate.readBitString() }
        guard signature.unusedBits == 0 else { throw .malformed("signatureValue: unused bits") }
        try parsing("Certificate") { try certificate.finish() }
        tbsCertificateBytes = Array(tbsElement.encoded)
        signatureValue = Array(signature.bytes)

        var tbs = DERReader(tbsElement.content)
        if var versionReader = try parsing("version", { try tbs.readOptionalExplicit(0) }) {
            let encoded = try parsing("version") { try versionReader.readSmallInteger() }
            try parsing("version") { try versionReader.finish() }
            guard (0...2).contains(encoded) else { throw .malformed("version: \(encoded) is not v1, v2 or v3") }
            version = encoded + 1
        } else {
            version = 1
        }
        serialNumber = Array(try parsing("serialNumber") { try tbs.readInteger() })
        let innerAlgorithm = try parsing("signature") { try tbs.readElement(tag: .sequence) }
        guard innerAlgorithm.encoded.elementsEqual(outerAlgorithm.encoded) else {
            throw .signatureAlgorithmMismatch
        }
        signatureAlgorithm = try SignatureAlgorithm(algorithmIdentifier: outerAlgorithm.content)
        issuer = try DistinguishedName(reading: &tbs, field: "issuer")

        var validity = try parsing("validity") { try tbs.readSequence() }
        notBefore = try parsing("validity: notBefore") { try validity.readTime() }
        notAfter = try parsing("validity: notAfter") { try validity.readTime() }
        try parsing("validity") { try validity.finish() }

        subject = try DistinguishedName(reading: &tbs, field: "subject")
        let keyElement = try parsing("subjectPublicKeyInfo") { try tbs.readElement(tag: .sequence) }
        subjectPublicKeyInfo = try SubjectPublicKeyInfo(element: keyElement)

        // issuerUniqueID [1] and subjectUniqueID [2], IMPLICIT BIT STRING,
        // only in v2 and v3 (§4.1.2.8); read and dropped.
        for number: UInt8 in [1, 2] {
            let tag = DERTag.contextSpecific(number, constructed: false)
            if let element = try parsing("uniqueIdentifier", { try tbs.readOptionalElement(tag: tag) }) {
                guard version >= 2 else { throw .malformed("uniqueIdentifier: only in v2 and v3") }
                _ = try parsing("uniqueIdentifier") { try DER.bitString(element.content) }
            }
        }
        if var extensionsReader = try parsing("extensions", { try tbs.readOptionalExplicit(3) }) {
            guard version == 3 else { throw .malformed("extensions: only in v3") }
            var list = try parsing("extensions") { try extensionsReader.readSequence() }
            try parsing("extensions") { try extensionsReader.finish() }
            extensions = try CertificateExtensions(reading: &list)
        } else {
            extensions = CertificateExtensions()
        }
        try parsing("tbsCertificate") { try tbs.finish() }
    }

    /// Whether the certificate names itself as its issuer (same DER bytes).
    package var isSelfIssued: Bool { issuer.derRepresentation == subject.derRepresentation }
}
