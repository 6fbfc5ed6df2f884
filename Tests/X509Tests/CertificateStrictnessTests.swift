import TestSupport
import Testing

@testable import X509

/// A certificate assembled field by field, so each test can break one.
private struct Parts {
    static let ecdsaSHA256 = hex("300a06082a8648ce3d040302")
    static let name = DistinguishedName(commonName: "t").derRepresentation

    var version: [UInt8]? = tlv(0xA0, tlv(0x02, [2]))
    var serialNumber = tlv(0x02, [1])
    var innerAlgorithm = ecdsaSHA256
    var issuer = name
    var validity = tlv(0x30, tlv(0x17, Array("260101000000Z".utf8)) + tlv(0x17, Array("270101000000Z".utf8)))
    var subject = name
    var subjectPublicKeyInfo = SubjectPublicKeyInfo(p256UncompressedPoint: BuilderFixtures.leafKey)!.derRepresentation
    var uniqueIdentifiers: [UInt8] = []
    var extensions: [[UInt8]]? = [extensionDER(.basicConstraints, critical: true, value: tlv(0x30, []))]
    var tbsTrailer: [UInt8] = []
    var outerAlgorithm = ecdsaSHA256
    var signature = tlv(0x03, [0] + hex("3006020101020101"))

    var der: [UInt8] {
        var tbs = (version ?? []) + serialNumber + innerAlgorithm + issuer + validity + subject + subjectPublicKeyInfo
        tbs += uniqueIdentifiers
        if let extensions { tbs += tlv(0xA3, tlv(0x30, extensions.flatMap { $0 })) }
        tbs += tbsTrailer
        return tlv(0x30, tlv(0x30, tbs) + outerAlgorithm + signature)
    }

    func parse() throws(CertificateError) -> Certificate { try Certificate(derRepresentation: der) }
}

private func extensionDER(_ identifier: ASN1ObjectIdentifier, critical: Bool?, value: [UInt8]) -> [UInt8] {
    extensionDER(identifier, criticalBytes: critical.map { tlv(0x01, [$0 ? 0xFF : 0x00]) } ?? [], value: value)
}

private func extensionDER(_ identifier: ASN1ObjectIdentifier, criticalBytes: [UInt8], value: [UInt8]) -> [UInt8] {
    tlv(0x30, tlv(0x06, identifier.derContent) + criticalBytes + tlv(0x04, value))
}

private func expectMalformed(_ parts: Parts, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        _ = try parts.parse()
        Issue.record("accepted: \(comment?.rawValue ?? "")", sourceLocation: sourceLocation)
    } catch {
        guard case .malformed = error else {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
            return
        }
    }
}

@Suite struct CertificateStrictnessTests {
    @Test func baselineParses() throws {
        let cert = try Parts().parse()
        #expect(cert.version == 3)
        #expect(cert.serialNumber == [1])
        #expect(cert.notBefore == 1_767_225_600)
        #expect(cert.notAfter == 1_798_761_600)
    }

    @Test func indefiniteAndNonMinimalLengths() throws {
        let good = Parts().der
        // Outer SEQUENCE in indefinite form: 30 80 <contents> 00 00.
        let contents = Array(good[4...])
        #expect(throws: CertificateError.malformed("Certificate: indefinite length")) {
            try Certificate(derRepresentation: [0x30, 0x80] + contents + [0, 0])
        }
        // Length in three octets where two suffice.
        #expect(throws: CertificateError.malformed("Certificate: non-minimal length")) {
            try Certificate(derRepresentation: [0x30, 0x83, 0x00, good[2], good[3]] + contents)
        }
        // Length beyond the input.
        #expect(throws: CertificateError.malformed("Certificate: truncated")) {
            try Certificate(derRepresentation: Array(good.dropLast()))
        }
    }

    @Test func trailingBytes() {
        #expect(throws: CertificateError.malformed("Certificate: after the end: trailing data")) {
            try Certificate(derRepresentation: Parts().der + [0x00])
        }
        var parts = Parts()
        parts.tbsTrailer = tlv(0x05, [])
        expectMalformed(parts, "element after extensions")
        parts = Parts()
        parts.signature = tlv(0x03, [0] + hex("3006020101020101")) + tlv(0x05, [])
        expectMalformed(parts, "element after signatureValue")
    }

    @Test func integersAndBooleans() {
        var parts = Parts()
        parts.serialNumber = tlv(0x02, [0x00, 0x01])
        #expect(throws: CertificateError.malformed("serialNumber: non-minimal INTEGER")) { try parts.parse() }
        parts = Parts()
        parts.extensions = [extensionDER(.basicConstraints, criticalBytes: tlv(0x01, [0x01]), value: tlv(0x30, []))]
        #expect(throws: CertificateError.malformed("extension 2.5.29.19: critical: BOOLEAN not 0x00 or 0xFF")) {
            try parts.parse()
        }
        parts = Parts()
        parts.extensions = [extensionDER(.basicConstraints, critical: false, value: tlv(0x30, tlv(0x01, [0x01])))]
        expectMalformed(parts, "cA BOOLEAN 0x01")
        // Negative serial numbers are kept, as RFC 5280 §4.1.2.2 asks.
        parts = Parts()
        parts.serialNumber = tlv(0x02, [0xFF, 0x01])
        #expect((try? parts.parse())?.serialNumber == [0xFF, 0x01])
    }

    @Test func tolerantDefaults() throws {
        // critical FALSE and cA FALSE written out, version v1 written out.
        var parts = Parts()
        parts.extensions = [extensionDER(.basicConstraints, critical: false, value: tlv(0x30, tlv(0x01, [0x00])))]
        let cert = try parts.parse()
        #expect(cert.extensions.all.first?.critical == false)
        #expect(cert.extensions.basicConstraints?.isCertificateAuthority == false)
        parts = Parts()
        parts.version = nil
        parts.extensions = nil
        #expect(try parts.parse().version == 1)
        parts.version = tlv(0xA0, tlv(0x02, [0]))
        #expect(try parts.parse().version == 1)
    }

    @Test func versions() {
        var parts = Parts()
        parts.version = tlv(0xA0, tlv(0x02, [3]))
        #expect(throws: CertificateError.malformed("version: 3 is not v1, v2 or v3")) { try parts.parse() }
        parts.version = tlv(0xA0, tlv(0x02, [1]))  // v2 with extensions
        #expect(throws: CertificateError.malformed("extensions: only in v3")) { try parts.parse() }
        parts.version = tlv(0xA0, tlv(0x02, [2]) + tlv(0x05, []))
        #expect(throws: CertificateError.malformed("version: trailing data")) { try parts.parse() }
        parts = Parts()
        parts.version = nil
        parts.extensions = nil
        parts.uniqueIdentifiers = tlv(0x81, [0])
        #expect(throws: CertificateError.malformed("uniqueIdentifier: only in v2 and v3")) { try parts.parse() }
        parts.version = tlv(0xA0, tlv(0x02, [1]))
        parts.uniqueIdentifiers = tlv(0x81, [0, 0xAA]) + tlv(0x82, [0])
        #expect(throws: Never.self) { try parts.parse() }
    }

    @Test func signatureAlgorithms() {
        var parts = Parts()
        parts.outerAlgorithm = hex("300a06082a8648ce3d040303")
        #expect(throws: CertificateError.signatureAlgorithmMismatch) { try parts.parse() }
        // Same algorithm, different encoding (parameters NULL added) still differs.
        parts = Parts()
        parts.innerAlgorithm = hex("300d06092a864886f70d01010b0500")
        parts.outerAlgorithm = hex("300b06092a864886f70d01010b")
        #expect(throws: CertificateError.signatureAlgorithmMismatch) { try parts.parse() }
        // ECDSA with parameters.
        parts = Parts()
        parts.innerAlgorithm = hex("300c06082a8648ce3d0403020500")
        parts.outerAlgorithm = parts.innerAlgorithm
        #expect(throws: CertificateError.malformed("signatureAlgorithm: parameters must be absent")) { try parts.parse() }
        // sha1WithRSAEncryption is reported as unknown.
        parts.innerAlgorithm = hex("300d06092a864886f70d0101050500")
        parts.outerAlgorithm = parts.innerAlgorithm
        #expect((try? parts.parse())?.signatureAlgorithm == .unknown(ASN1ObjectIdentifier(dotted: "1.2.840.113549.1.1.5")!))
        // PSS with default parameters (all SHA-1, salt 20) and with a bad trailer.
        parts.innerAlgorithm = hex("300d06092a864886f70d01010a3000")
        parts.outerAlgorithm = parts.innerAlgorithm
        #expect(
            (try? parts.parse())?.signatureAlgorithm
                == .rsassaPSS(RSASSAPSSParameters(hashAlgorithm: .sha1, maskGenerationHashAlgorithm: .sha1, saltLength: 20)))
        parts.innerAlgorithm = hex("301206092a864886f70d01010a3005a303020102")
        parts.outerAlgorithm = parts.innerAlgorithm
        #expect(throws: CertificateError.malformed("RSASSA-PSS trailerField: not 1")) { try parts.parse() }
        parts.innerAlgorithm = hex("300b06092a864886f70d01010a")
        parts.outerAlgorithm = parts.innerAlgorithm
        #expect(throws: CertificateError.malformed("signatureAlgorithm: RSASSA-PSS-params missing")) { try parts.parse() }
        // Signature BIT STRING with unused bits.
        parts = Parts()
        parts.signature = tlv(0x03, [1, 0x30, 0x00])
        #expect(throws: CertificateError.malformed("signatureValue: unused bits")) { try parts.parse() }
    }

    @Test func validity() {
        var parts = Parts()
        parts.validity = tlv(0x30, tlv(0x17, Array("260101000000Z".utf8)) + tlv(0x04, []))
        #expect(throws: CertificateError.malformed("validity: notAfter: expected tag 0x17, found 0x04")) { try parts.parse() }
        parts.validity = tlv(0x30, tlv(0x17, Array("260101000000Z".utf8)) + tlv(0x18, Array("20500101000000.1Z".utf8)))
        expectMalformed(parts, "fractional GeneralizedTime")
        parts.validity = tlv(0x30, tlv(0x17, Array("2601010000Z".utf8)) + tlv(0x17, Array("270101000000Z".utf8)))
        expectMalformed(parts, "UTCTime without seconds")
        parts.validity = tlv(0x30, tlv(0x17, Array("260101000000+0100".utf8)) + tlv(0x17, Array("270101000000Z".utf8)))
        expectMalformed(parts, "UTCTime with offset")
    }

    @Test func extensionsRecordedAndRejected() throws {
        let unknown = ASN1ObjectIdentifier(dotted: "1.3.6.1.4.1.99999.1")!
        var parts = Parts()
        parts.extensions = [
            extensionDER(.basicConstraints, critical: true, value: tlv(0x30, [])),
            extensionDER(unknown, critical: true, value: [0x05, 0x00]),
            extensionDER(.certificatePoliciesForTest, critical: nil, value: tlv(0x30, [])),
        ]
        let cert = try parts.parse()
        #expect(cert.extensions.unrecognized == [
            Extension(extnID: unknown, critical: true, extnValue: [0x05, 0x00]),
            Extension(extnID: .certificatePoliciesForTest, critical: false, extnValue: [0x30, 0x00]),
        ])
        #expect(cert.extensions.hasUnrecognizedCriticalExtension)

        parts.extensions = [
            extensionDER(.subjectKeyIdentifier, critical: nil, value: tlv(0x04, [1])),
            extensionDER(.basicConstraints, critical: true, value: tlv(0x30, [])),
            extensionDER(.subjectKeyIdentifier, critical: nil, value: tlv(0x04, [2])),
        ]
        #expect(throws: CertificateError.duplicateExtension(.subjectKeyIdentifier)) { try parts.parse() }
        parts.extensions = [extensionDER(unknown, critical: nil, value: []), extensionDER(unknown, critical: true, value: [])]
        #expect(throws: CertificateError.duplicateExtension(unknown)) { try parts.parse() }
        parts.extensions = []
        #expect(throws: CertificateError.malformed("extensions: empty")) { try parts.parse() }
    }

    @Test func malformedExtensionValues() {
        let cases: [(ASN1ObjectIdentifier, [UInt8], String)] = [
            (.subjectAltName, tlv(0x30, []), "empty SAN"),
            (.subjectAltName, tlv(0x30, tlv(0x87, [1, 2, 3, 4, 5])), "5-octet iPAddress"),
            (.subjectAltName, tlv(0x30, tlv(0x82, [0xC3, 0xBC])), "non-IA5 dNSName"),
            (.subjectAltName, tlv(0x30, tlv(0xA2, [])), "constructed dNSName"),
            (.subjectAltName, tlv(0x30, tlv(0x89, [])), "GeneralName [9]"),
            (.subjectAltName, tlv(0x30, tlv(0x82, Array("a".utf8))) + [0], "bytes after SAN"),
            (.keyUsage, tlv(0x03, [0x00, 0x00]), "no key usage bit"),
            (.keyUsage, tlv(0x03, [0x07, 0x81]), "unused bit set"),
            (.basicConstraints, tlv(0x30, tlv(0x01, [0xFF]) + tlv(0x02, [0x80])), "negative pathLen"),
            (.basicConstraints, tlv(0x30, tlv(0x02, [0x01]) + tlv(0x01, [0xFF])), "fields out of order"),
            (.extKeyUsage, tlv(0x30, []), "empty EKU"),
            (.extKeyUsage, tlv(0x30, tlv(0x04, [])), "EKU not OID"),
            (.subjectKeyIdentifier, tlv(0x03, [0]), "SKI not OCTET STRING"),
            (.authorityKeyIdentifier, tlv(0x30, tlv(0x82, [0x00, 0x01])), "non-minimal AKI serial"),
            (.authorityKeyIdentifier, tlv(0x30, tlv(0x80, [1]) + tlv(0x80, [1])), "AKI keyIdentifier twice"),
            (.nameConstraints, tlv(0x30, []), "empty nameConstraints"),
            (.nameConstraints, tlv(0x30, tlv(0xA0, [])), "empty permittedSubtrees"),
            (.nameConstraints, tlv(0x30, tlv(0xA0, tlv(0x30, tlv(0x87, [1, 2, 3, 4])))), "4-octet IP constraint"),
            (.nameConstraints, tlv(0x30, tlv(0xA0, tlv(0x30, tlv(0x82, []) + tlv(0x81, [1])))), "maximum present"),
            (.nameConstraints, tlv(0x30, tlv(0xA0, tlv(0x30, tlv(0x82, []) + tlv(0x80, [1])))), "minimum 1"),
        ]
        for (identifier, value, comment) in cases {
            var parts = Parts()
            parts.extensions = [extensionDER(identifier, critical: nil, value: value)]
            expectMalformed(parts, Comment(rawValue: comment))
        }
    }

    @Test func publicKeys() {
        var parts = Parts()
        // id-ecPublicKey with specifiedCurve parameters (a SEQUENCE) is refused.
        parts.subjectPublicKeyInfo = tlv(0x30, tlv(0x30, tlv(0x06, ASN1ObjectIdentifier.ecPublicKey.derContent) + tlv(0x30, [])) + tlv(0x03, [0, 4]))
        expectMalformed(parts, "specifiedCurve")
        parts.subjectPublicKeyInfo = tlv(0x30, tlv(0x30, tlv(0x06, ASN1ObjectIdentifier.ed25519.derContent)) + tlv(0x03, [0, 1, 2]))
        expectMalformed(parts, "short Ed25519 key")
        // RSA with a negative modulus.
        let rsaKey = tlv(0x30, tlv(0x02, [0x80, 0x01]) + tlv(0x02, [0x03]))
        parts.subjectPublicKeyInfo = tlv(0x30, tlv(0x30, tlv(0x06, ASN1ObjectIdentifier.rsaEncryption.derContent) + tlv(0x05, [])) + tlv(0x03, [0] + rsaKey))
        #expect(throws: CertificateError.malformed("RSAKeyComponents: modulus negative")) { try parts.parse() }
        // An unknown algorithm is kept.
        let other = ASN1ObjectIdentifier(dotted: "1.3.101.113")!  // id-Ed448
        parts.subjectPublicKeyInfo = tlv(0x30, tlv(0x30, tlv(0x06, other.derContent)) + tlv(0x03, [0, 9, 9]))
        #expect((try? parts.parse())?.subjectPublicKeyInfo.publicKey == .other(algorithm: other, subjectPublicKey: [9, 9]))
    }
}

extension ASN1ObjectIdentifier {
    fileprivate static let certificatePoliciesForTest = ASN1ObjectIdentifier(dotted: "2.5.29.32")!
}
