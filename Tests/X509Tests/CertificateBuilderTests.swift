import TestSupport
import Testing

@testable import X509

/// `openssl x509 -inform DER -noout -text` on the builder's output with the
/// fake signature SEQUENCE { INTEGER 1, INTEGER 1 } (leaf) printed:
///     Version: 3 (0x2)
///     Serial Number: 9a:0b:1c:2d:3e:4f:50:61:72:83:94:0a:1b:2c:3d:4e
///     Signature Algorithm: ecdsa-with-SHA256
///     Issuer: O = Sluice, CN = Sluice Interception CA
///     Not Before: Dec  4 19:14:48 2026 GMT, Not After : Jan  3 19:14:48 2027 GMT
///     Subject: O = Sluice, CN = www.example.test
///     Public Key Algorithm: id-ecPublicKey, ASN1 OID: prime256v1, NIST CURVE: P-256
///     X509v3 Basic Constraints: critical CA:FALSE
///     X509v3 Key Usage: critical Digital Signature
///     X509v3 Extended Key Usage: TLS Web Server Authentication
///     X509v3 Subject Alternative Name: DNS:www.example.test, DNS:*.example.test,
///         IP Address:192.0.2.10, IP Address:2001:DB8:0:0:0:0:0:10
///     X509v3 Subject Key Identifier: 6F:BC:EB:88:9B:21:F0:54:D6:B5:3E:FD:F0:D7:FF:E7:2A:B8:06:BF
///     X509v3 Authority Key Identifier: DE:CC:B3:48:5F:5F:42:F9:DF:EE:F6:BC:25:D4:ED:B8:74:37:75:35
///     Signature Value: 30:06:02:01:01:02:01:01
/// and for the CA (real signature):
///     Serial Number: 415801090596463 (0x17a2b3c4d5e6f)
///     Issuer = Subject: O = Sluice, CN = Sluice Interception CA
///     Not Before: Dec  4 19:14:48 2026 GMT, Not After : Jul 26 19:14:48 2051 GMT
///     X509v3 Basic Constraints: critical CA:TRUE, pathlen:0
///     X509v3 Key Usage: critical Certificate Sign, CRL Sign
///     X509v3 Subject Key Identifier = Authority Key Identifier: DE:CC:B3:...:75:35
/// With real signatures made by `openssl dgst -sha256 -sign`,
/// `openssl verify -CAfile ca.pem ca.pem` and `openssl verify -CAfile ca.pem
/// -x509_strict -purpose sslserver leaf.pem` both printed OK.
@Suite struct CertificateBuilderTests {
    let fakeSignature: [UInt8] = [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]

    @Test func issueLeaf() throws {
        let template = BuilderFixtures.leafTemplate
        let tbs = try CertificateBuilder.tbsCertificate(for: template)
        let bytes = try CertificateBuilder.certificate(tbsCertificate: tbs, ecdsaSignature: fakeSignature)
        let cert = try Certificate(derRepresentation: bytes)
        #expect(cert.tbsCertificateBytes == tbs)
        #expect(cert.version == 3)
        #expect(cert.serialNumber == hex("009A0B1C2D3E4F50617283940A1B2C3D4E"))
        #expect(cert.signatureAlgorithm == .ecdsaWithSHA256)
        #expect(cert.issuer == BuilderFixtures.caName)
        #expect(cert.issuer.description == "CN=Sluice Interception CA, O=Sluice")
        #expect(cert.subject.description == "CN=www.example.test, O=Sluice")
        #expect(cert.subject.commonName == "www.example.test")
        #expect(cert.subject.organizationName == "Sluice")
        #expect(cert.notBefore == 1_796_411_688)
        #expect(cert.notAfter == 1_799_003_688)
        #expect(cert.subjectPublicKeyInfo.publicKey == .ecPublicKey(curve: .p256, point: BuilderFixtures.leafKey))
        let ext = cert.extensions
        #expect(
            ext.all.map(\.extnID) == [
                .basicConstraints, .keyUsage, .extKeyUsage, .subjectAltName, .subjectKeyIdentifier,
                .authorityKeyIdentifier,
            ])
        #expect(ext.all.map(\.critical) == [true, true, false, false, false, false])
        #expect(ext.basicConstraints == BasicConstraints(isCertificateAuthority: false, pathLenConstraint: nil))
        #expect(ext.keyUsage == .digitalSignature)
        #expect(ext.extendedKeyUsage == [.serverAuth])
        #expect(
            ext.subjectAlternativeName == [
                .dNSName("www.example.test"), .dNSName("*.example.test"), .iPAddress([192, 0, 2, 10]),
                .iPAddress(BuilderFixtures.ipv6),
            ])
        #expect(ext.subjectKeyIdentifier == BuilderFixtures.leafKeyIdentifier)
        #expect(
            ext.authorityKeyIdentifier
                == AuthorityKeyIdentifier(
                    keyIdentifier: BuilderFixtures.caKeyIdentifier, authorityCertIssuer: nil,
                    authorityCertSerialNumber: nil))
        #expect(cert.signatureValue == fakeSignature)
        #expect(cert.matches(host: "www.example.test"))
        #expect(cert.matches(host: "api.example.test"))
        #expect(cert.matches(host: "192.0.2.10"))
        #expect(cert.matches(host: "[2001:db8::10]"))
        #expect(!cert.matches(host: "example.test"))
    }

    @Test func issueCertificateAuthority() throws {
        let template = BuilderFixtures.caTemplate
        let bytes = try CertificateBuilder.issue(template) { _ in fakeSignature }
        let cert = try Certificate(derRepresentation: bytes)
        #expect(cert.version == 3)
        #expect(cert.serialNumber == hex("017A2B3C4D5E6F"))
        #expect(cert.issuer == cert.subject)
        #expect(cert.subject.description == "CN=Sluice Interception CA, O=Sluice")
        #expect(cert.notBefore == 1_796_411_688)
        #expect(cert.notAfter == 2_574_011_688)
        // 2051: GeneralizedTime; 2026: UTCTime (RFC 5280 §4.1.2.5).
        #expect(contains(cert.tbsCertificateBytes, tlv(0x18, Array("20510726191448Z".utf8))))
        #expect(contains(cert.tbsCertificateBytes, tlv(0x17, Array("261204191448Z".utf8))))
        #expect(cert.subjectPublicKeyInfo.publicKey == .ecPublicKey(curve: .p256, point: BuilderFixtures.caKey))
        let ext = cert.extensions
        #expect(ext.all.map(\.extnID) == [.basicConstraints, .keyUsage, .subjectKeyIdentifier, .authorityKeyIdentifier])
        #expect(ext.all.map(\.critical) == [true, true, false, false])
        #expect(ext.basicConstraints == BasicConstraints(isCertificateAuthority: true, pathLenConstraint: 0))
        #expect(ext.keyUsage == [.keyCertSign, .cRLSign])
        #expect(ext.extendedKeyUsage == nil)
        #expect(ext.subjectAlternativeName == nil)
        #expect(ext.subjectKeyIdentifier == BuilderFixtures.caKeyIdentifier)
        #expect(ext.authorityKeyIdentifier?.keyIdentifier == BuilderFixtures.caKeyIdentifier)
    }

    /// The builder's output, signed by OpenSSL, is byte for byte the
    /// certificate `openssl verify` accepted.
    @Test func matchesOpenSSLVerifiedCertificates() throws {
        let ca = try CertificateBuilder.issue(BuilderFixtures.caTemplate) { _ in BuilderFixtures.caSignature }
        #expect(ca == der(BuilderFixtures.caCertificate))
        let leaf = try CertificateBuilder.issue(BuilderFixtures.leafTemplate) { _ in BuilderFixtures.leafSignature }
        #expect(leaf == der(BuilderFixtures.leafCertificate))
        let caCertificate = try Certificate(derRepresentation: ca)
        let leafCertificate = try Certificate(derRepresentation: leaf)
        #expect(leafCertificate.issuer.derRepresentation == caCertificate.subject.derRepresentation)
        #expect(leafCertificate.extensions.authorityKeyIdentifier?.keyIdentifier == caCertificate.extensions.subjectKeyIdentifier)
    }

    @Test func issuerCopiedFromParsedCertificate() throws {
        // The RSA CA's subject has a PrintableString countryName: copied as is.
        let rsaCA = try certificate(Vectors.rsaCA)
        var template = BuilderFixtures.leafTemplate
        template.issuer = rsaCA.subject
        template.subject = DistinguishedName(commonName: nil)
        template.subjectKeyIdentifier = nil
        template.authorityKeyIdentifier = nil
        template.profile = .leaf(dnsNames: ["only.example.test"], ipAddresses: [])
        let cert = try Certificate(
            derRepresentation: CertificateBuilder.issue(template) { _ in fakeSignature })
        #expect(cert.issuer.derRepresentation == rsaCA.subject.derRepresentation)
        #expect(cert.subject.relativeDistinguishedNames.isEmpty)
        #expect(cert.subject.derRepresentation == [0x30, 0x00])
        // An empty subject makes subjectAltName critical (RFC 5280 §4.2.1.6).
        #expect(cert.extensions.all.first { $0.extnID == .subjectAltName }?.critical == true)
        #expect(cert.extensions.all.map(\.extnID) == [.basicConstraints, .keyUsage, .extKeyUsage, .subjectAltName])
    }

    @Test func namesBuiltFromAttributes() throws {
        let name = try #require(
            DistinguishedName(attributes: [(.countryName, "DE"), (.organizationName, "Sluice"), (.commonName, "Zürich")]))
        #expect(name.description == "CN=Zürich, O=Sluice, C=DE")
        var reader = DERReader(name.derRepresentation)
        let parsed = try DistinguishedName(reading: &reader, field: "name")
        #expect(parsed.relativeDistinguishedNames == name.relativeDistinguishedNames)
        #expect(DistinguishedName(attributes: [(.countryName, "DEU")]) == nil)
        #expect(DistinguishedName(attributes: [(.countryName, "D@")]) == nil)
    }

    @Test func rejectedTemplates() {
        func issue(_ change: (inout CertificateTemplate) -> Void) throws(CertificateIssuanceError) {
            var template = BuilderFixtures.leafTemplate
            change(&template)
            _ = try CertificateBuilder.tbsCertificate(for: template)
        }
        #expect(throws: CertificateIssuanceError.invalidSerialNumber) { try issue { $0.serialNumber = [] } }
        #expect(throws: CertificateIssuanceError.invalidSerialNumber) { try issue { $0.serialNumber = [0, 0] } }
        #expect(throws: CertificateIssuanceError.invalidSerialNumber) {
            try issue { $0.serialNumber = [UInt8](repeating: 0x80, count: 20) }
        }
        #expect(throws: Never.self) { try issue { $0.serialNumber = [UInt8](repeating: 0x7F, count: 20) } }
        #expect(throws: CertificateIssuanceError.invalidValidity) { try issue { $0.notAfter = $0.notBefore - 1 } }
        #expect(throws: CertificateIssuanceError.invalidValidity) { try issue { $0.notAfter = CivilTime.latest + 1 } }
        #expect(throws: CertificateIssuanceError.invalidPublicKey) { try issue { $0.subjectPublicKey = [0x04] } }
        #expect(throws: CertificateIssuanceError.invalidPublicKey) {
            try issue { $0.subjectPublicKey = [0x02] + [UInt8](repeating: 1, count: 64) }
        }
        #expect(throws: CertificateIssuanceError.missingSubjectAlternativeName) {
            try issue { $0.profile = .leaf(dnsNames: [], ipAddresses: []) }
        }
        for bad in ["", "a..b", "ü.test", "a b.test", "*", "a.*.test", "-" + String(repeating: "a", count: 64) + ".test", "x*.test"] {
            #expect(throws: CertificateIssuanceError.invalidDNSName(bad)) {
                try issue { $0.profile = .leaf(dnsNames: [bad], ipAddresses: []) }
            }
        }
        #expect(throws: Never.self) { try issue { $0.profile = .leaf(dnsNames: ["_dmarc.a-b.test", "*.x.test"], ipAddresses: []) } }
        #expect(throws: CertificateIssuanceError.invalidIPAddress([1, 2, 3])) {
            try issue { $0.profile = .leaf(dnsNames: [], ipAddresses: [[1, 2, 3]]) }
        }
        #expect(throws: CertificateIssuanceError.invalidPathLenConstraint) {
            try issue { $0.profile = .certificateAuthority(pathLenConstraint: -1) }
        }
    }

    @Test func rejectedSignatures() throws {
        let tbs = try CertificateBuilder.tbsCertificate(for: BuilderFixtures.leafTemplate)
        for bad: [UInt8] in [[], [0x30, 0x00], hex("3003020101"), hex("300602010102010100"), hex("3006020181020101")] {
            #expect(throws: CertificateIssuanceError.invalidSignature) {
                try CertificateBuilder.certificate(tbsCertificate: tbs, ecdsaSignature: bad)
            }
        }
        #expect(throws: CertificateIssuanceError.invalidTBSCertificate) {
            try CertificateBuilder.certificate(tbsCertificate: tbs + [0], ecdsaSignature: fakeSignature)
        }
        #expect(throws: CertificateIssuanceError.invalidSignature) {
            try CertificateBuilder.issue(BuilderFixtures.leafTemplate) { _ in nil }
        }
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}
