import TestSupport
import Testing

@testable import X509

/// Every expected value below is what `openssl x509 -noout -text` (3.0.19)
/// printed for the vector, with times converted by `date -u -d ... +%s`:
///   Dec  4 19:14:48 2026 GMT = 1796411688
///   Dec  1 19:14:48 2036 GMT = 2111771688
///   Dec  4 19:14:48 2027 GMT = 1827947688
///   Jul 26 19:14:48 2051 GMT = 2574011688
/// and offsets/lengths from `openssl asn1parse`.
@Suite struct CertificateParsingTests {
    let ec256Key = hex(
        "0461d68968ea070060a956060adeae5efd7d7d039fe81a2f836e22504c15528c34920a58c55947fc1610d292e95d6b8d9ce64788c1aec0b7a0ca0b3383387930a8"
    )
    let ec256SKI = hex("DE:CC:B3:48:5F:5F:42:F9:DF:EE:F6:BC:25:D4:ED:B8:74:37:75:35")
    let rsaSKI = hex("DE:43:F0:5E:90:C8:FD:23:23:A5:FB:D8:DA:31:41:23:8E:39:22:95")

    /// openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -subj "/CN=Sluice Test EC CA/O=Sluice" -days 3650 -sha256
    /// Version: 3, Serial 78:50:0A:46:11:15:03:70:70:6A:F0:43:57:BD:5A:7F:8C:E2:C5:04,
    /// ecdsa-with-SHA256, Issuer = Subject: CN = Sluice Test EC CA, O = Sluice,
    /// SKI = AKI = DE:CC:B3:..., Basic Constraints: critical CA:TRUE.
    @Test func p256SelfSignedCA() throws {
        let bytes = der(Vectors.ecP256CA)
        let cert = try Certificate(derRepresentation: bytes)
        #expect(cert.derRepresentation == bytes)
        #expect(cert.version == 3)
        #expect(cert.serialNumber == hex("78500A4611150370706AF04357BD5A7F8CE2C504"))
        #expect(cert.signatureAlgorithm == .ecdsaWithSHA256)
        #expect(cert.issuer == cert.subject)
        #expect(cert.isSelfIssued)
        #expect(cert.subject.description == "O=Sluice, CN=Sluice Test EC CA")
        #expect(cert.subject.commonName == "Sluice Test EC CA")
        #expect(cert.subject.organizationName == "Sluice")
        #expect(cert.notBefore == 1_796_411_688)
        #expect(cert.notAfter == 2_111_771_688)
        #expect(cert.subjectPublicKeyInfo.publicKey == .ecPublicKey(curve: .p256, point: ec256Key))
        // tbsCertificate: offset 4, header 4, length 341.
        #expect(cert.tbsCertificateBytes == Array(bytes[4..<(4 + 4 + 341)]))
        #expect(
            cert.signatureValue
                == hex(
                    "304402200958e41e1b7929505fdf1a6e671680490eac00685e271a52ae7b80320b0008b3022008896982fba7c307c122a5ab76e105da68af69109c8978170ea54b8f73c98319"
                ))
        let ext = cert.extensions
        #expect(ext.all.map(\.extnID) == [.subjectKeyIdentifier, .authorityKeyIdentifier, .basicConstraints])
        #expect(ext.all.map(\.critical) == [false, false, true])
        #expect(ext.subjectKeyIdentifier == ec256SKI)
        #expect(ext.authorityKeyIdentifier?.keyIdentifier == ec256SKI)
        #expect(ext.authorityKeyIdentifier?.authorityCertIssuer == nil)
        #expect(ext.basicConstraints == BasicConstraints(isCertificateAuthority: true, pathLenConstraint: nil))
        #expect(ext.keyUsage == nil)
        #expect(ext.extendedKeyUsage == nil)
        #expect(ext.subjectAlternativeName == nil)
        #expect(ext.nameConstraints == nil)
        #expect(ext.unrecognized.isEmpty)
        #expect(!ext.hasUnrecognizedCriticalExtension)
    }

    /// openssl req -x509 -newkey rsa:2048 -subj "/C=DE/O=Sluice RSA/CN=Sluice Test RSA CA" -sha256
    /// sha256WithRSAEncryption; Public-Key: (2048 bit), Exponent: 65537.
    @Test func rsaCA() throws {
        let cert = try certificate(Vectors.rsaCA)
        #expect(cert.version == 3)
        #expect(cert.serialNumber == hex("1E50B049B76E6609FA9C58FBAB44DFCE275200C5"))
        #expect(cert.signatureAlgorithm == .sha256WithRSAEncryption)
        #expect(cert.subject.description == "CN=Sluice Test RSA CA, O=Sluice RSA, C=DE")
        #expect(cert.subject.relativeDistinguishedNames.map { $0[0].type } == [.countryName, .organizationName, .commonName])
        #expect(cert.subject.relativeDistinguishedNames[0][0].valueTag == .printableString)
        #expect(cert.notBefore == 1_796_411_688)
        #expect(cert.notAfter == 2_111_771_688)
        guard case .rsaEncryption(let key) = cert.subjectPublicKeyInfo.publicKey else {
            Issue.record("not an RSA key")
            return
        }
        #expect(
            key.modulus
                == hex(
                    "939757335F9DFA3A14AF8593F594C68E8B06D9181E460FA3DCDCC7BB2FF608076711CF555F06A7B52347CB5E1582FB5D5B64B5E785FB4AD999516AB56B1936E4725CC3368D698B1855A8A9ABE78DE429E554B89C0E6C4EA9FE54D46E56984D6DDCE294CB4CE91F3E40965FE8C4B1957A205021A24E80BA48EEFF45E5C75D6E416039A80D0DBB368485C6560980E658A1D28C63C24BBF9716E167DAF724D32F811F6FD88D021D1FA810AE8CE44C482FA431A4AC345F32B6A3DD7FFF091909048FE2EBEEB4DE923A0FECB74657516712784478E9807CD0BBC7FD42FF129E85F6D48B781661D804AF774C476003558274EF0FEAFE35389F865EBA49BBC70BA3161F"
                ))
        #expect(key.publicExponent == [0x01, 0x00, 0x01])
        #expect(key.derRepresentation.count == 270)
        #expect(cert.signatureValue.count == 256)
        #expect(cert.extensions.subjectKeyIdentifier == rsaSKI)
        #expect(cert.extensions.authorityKeyIdentifier?.keyIdentifier == rsaSKI)
        #expect(cert.extensions.basicConstraints?.isCertificateAuthority == true)
    }

    /// A P-384 leaf issued by the P-256 CA with -sha384, extensions:
    /// basicConstraints=critical,CA:FALSE; keyUsage=critical,digitalSignature;
    /// extendedKeyUsage=serverAuth,clientAuth; subjectAltName=DNS:p384.example.test;
    /// SKI 0A:30:98:58:A9:BF:F5:EC:B6:80:C6:E1:DA:FB:5E:4A:19:6F:47:50; AKI keyid DE:CC:...
    @Test func p384Leaf() throws {
        let issuer = try certificate(Vectors.ecP256CA)
        let cert = try certificate(Vectors.p384Leaf)
        #expect(cert.version == 3)
        #expect(cert.serialNumber == hex("0102030405"))
        #expect(cert.signatureAlgorithm == .ecdsaWithSHA384)
        #expect(cert.issuer == issuer.subject)
        #expect(!cert.isSelfIssued)
        #expect(cert.subject.description == "CN=p384.example.test")
        #expect(cert.notBefore == 1_796_411_688)
        #expect(cert.notAfter == 1_827_947_688)
        #expect(
            cert.subjectPublicKeyInfo.publicKey
                == .ecPublicKey(
                    curve: .p384,
                    point: hex(
                        "04c6ac15b5843505e13070d83964fc23f23f7e7df6356e1f2439a2236c111f499d82a3486b4f57040cb60d09f10bf5e2ab08e34b2bb2db01e2e65e12252f4236297495501aca9c824117583c183373c8371b8d0595349bde604c9152be024272af"
                    )))
        let ext = cert.extensions
        #expect(
            ext.all.map(\.extnID) == [
                .basicConstraints, .keyUsage, .extKeyUsage, .subjectAltName, .subjectKeyIdentifier,
                .authorityKeyIdentifier,
            ])
        #expect(ext.all.map(\.critical) == [true, true, false, false, false, false])
        #expect(ext.basicConstraints == BasicConstraints(isCertificateAuthority: false, pathLenConstraint: nil))
        #expect(ext.keyUsage == .digitalSignature)
        #expect(ext.extendedKeyUsage == [.serverAuth, .clientAuth])
        #expect(ext.permitsServerAuthentication)
        #expect(ext.subjectAlternativeName == [.dNSName("p384.example.test")])
        #expect(ext.subjectKeyIdentifier == hex("0A:30:98:58:A9:BF:F5:EC:B6:80:C6:E1:DA:FB:5E:4A:19:6F:47:50"))
        #expect(ext.authorityKeyIdentifier?.keyIdentifier == issuer.extensions.subjectKeyIdentifier)
        #expect(cert.tbsCertificateBytes.count == 4 + 414)
        #expect(cert.signatureValue.count == 71)
    }

    /// Leaf from the RSA CA, -sha256; subject O = Sluice, CN = example.test;
    /// Key Usage: critical Digital Signature, Key Encipherment;
    /// SAN: DNS:example.test, DNS:*.example.test, DNS:WWW.Other.Test, IP Address:192.0.2.1,
    /// IP Address:2001:DB8:0:0:0:0:0:1, email:admin@example.test, URI:https://example.test/
    @Test func multipleSubjectAltNames() throws {
        let cert = try certificate(Vectors.multiSANLeaf)
        #expect(cert.serialNumber == hex("00ff00"))  // positive, so a leading zero octet
        #expect(cert.signatureAlgorithm == .sha256WithRSAEncryption)
        #expect(cert.issuer == (try certificate(Vectors.rsaCA)).subject)
        #expect(cert.subject.description == "CN=example.test, O=Sluice")
        #expect(cert.notBefore == 1_796_411_688)
        #expect(cert.notAfter == 1_827_947_688)
        let ext = cert.extensions
        #expect(ext.keyUsage == [.digitalSignature, .keyEncipherment])
        #expect(ext.extendedKeyUsage == [.serverAuth])
        #expect(
            ext.subjectAlternativeName == [
                .dNSName("example.test"), .dNSName("*.example.test"), .dNSName("WWW.Other.Test"),
                .iPAddress([192, 0, 2, 1]), .iPAddress(hex("20010db8000000000000000000000001")),
                .unsupported(tag: .contextSpecific(1, constructed: false), content: Array("admin@example.test".utf8)),
                .unsupported(
                    tag: .contextSpecific(6, constructed: false), content: Array("https://example.test/".utf8)),
            ])
        #expect(ext.dnsNames == ["example.test", "*.example.test", "WWW.Other.Test"])
        #expect(ext.ipAddresses == [[192, 0, 2, 1], hex("20010db8000000000000000000000001")])
        #expect(ext.subjectKeyIdentifier == hex("6F:BC:EB:88:9B:21:F0:54:D6:B5:3E:FD:F0:D7:FF:E7:2A:B8:06:BF"))
        #expect(ext.authorityKeyIdentifier?.keyIdentifier == rsaSKI)
        #expect(
            cert.subjectPublicKeyInfo.publicKey
                == .ecPublicKey(
                    curve: .p256,
                    point: hex(
                        "04ff529c94424f111cea797ed7c94f28be8aa904ddb89e03c702094f61e7bc8fae2a514a892e3acccf3f2908a685671a10ee01fc1a5232555f4c9e43f1cad6f639"
                    )))
    }

    /// An intermediate with basicConstraints=critical,CA:TRUE,pathlen:0,
    /// keyUsage=critical,keyCertSign,cRLSign and nameConstraints (critical):
    /// Permitted: DNS:example.test, IP:192.0.2.0/255.255.255.0, email:example.test
    /// Excluded: DNS:bad.example.test, IP:2001:DB8::/FFFF:FFFF::
    @Test func nameConstraints() throws {
        let cert = try certificate(Vectors.nameConstrainedCA)
        #expect(cert.serialNumber == [7])
        #expect(cert.subject.description == "CN=Constrained CA")
        let ext = cert.extensions
        #expect(ext.basicConstraints == BasicConstraints(isCertificateAuthority: true, pathLenConstraint: 0))
        #expect(ext.keyUsage == [.keyCertSign, .cRLSign])
        #expect(ext.all.first { $0.extnID == .nameConstraints }?.critical == true)
        let constraints = try #require(ext.nameConstraints)
        #expect(
            constraints.permittedSubtrees == [
                .dNSName("example.test"), .iPAddress(address: [192, 0, 2, 0], mask: [255, 255, 255, 0]),
                .unsupported(tag: .contextSpecific(1, constructed: false), content: Array("example.test".utf8)),
            ])
        #expect(
            constraints.excludedSubtrees == [
                .dNSName("bad.example.test"),
                .iPAddress(address: hex("20010db8000000000000000000000000"), mask: hex("ffffffff000000000000000000000000")),
            ])
        #expect(ext.subjectKeyIdentifier == hex("8F:4F:91:8E:D0:25:D7:B6:53:87:34:C5:1A:95:BF:A0:36:E0:36:73"))
        #expect(ext.authorityKeyIdentifier?.keyIdentifier == ec256SKI)
        #expect(!ext.hasUnrecognizedCriticalExtension)
    }

    /// -days 9000: notBefore UTCTIME 261204191448Z, notAfter GENERALIZEDTIME 20510726191448Z.
    @Test func generalizedTimeValidity() throws {
        let cert = try certificate(Vectors.generalizedTimeCA)
        #expect(cert.notBefore == 1_796_411_688)
        #expect(cert.notAfter == 2_574_011_688)
        #expect(cert.serialNumber == hex("21D469EEB06D79F6B8593B7B90D81BE330C033CE"))
        #expect(cert.subject.description == "CN=Long Lived")
        #expect(cert.extensions.subjectKeyIdentifier == hex("74:F3:02:DC:C5:B1:C9:D9:1B:72:2A:7D:BE:6C:32:81:5F:65:D4:F0"))
    }

    /// -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:32 -sha256:
    /// rsassaPss, Hash Algorithm: sha256, Mask Algorithm: mgf1 with sha256,
    /// Salt Length: 0x20, Trailer Field: 0x01 (default).
    @Test func rsassaPSS() throws {
        let cert = try certificate(Vectors.pssCA)
        #expect(
            cert.signatureAlgorithm
                == .rsassaPSS(
                    RSASSAPSSParameters(hashAlgorithm: .sha256, maskGenerationHashAlgorithm: .sha256, saltLength: 32)))
        #expect(cert.signatureValue.count == 256)
        #expect(Array(cert.signatureValue.prefix(6)) == hex("49:90:13:bf:8d:42"))
        #expect(cert.subject.description == "CN=PSS Test")
        #expect(cert.extensions.subjectKeyIdentifier == hex("BF:76:4B:40:3C:1B:19:99:6F:A5:3E:7E:EA:96:AB:02:37:02:A5:EE"))
        guard case .rsaEncryption(let key) = cert.subjectPublicKeyInfo.publicKey else {
            Issue.record("not an RSA key")
            return
        }
        #expect(key.modulus.count == 256)
        #expect(key.publicExponent == [1, 0, 1])
    }

    /// openssl req -x509 -newkey ed25519: Signature Algorithm: ED25519.
    @Test func ed25519() throws {
        let cert = try certificate(Vectors.ed25519CA)
        #expect(cert.signatureAlgorithm == .ed25519)
        #expect(
            cert.subjectPublicKeyInfo.publicKey
                == .ed25519(hex("75bdf0c6d5595c829d514e1cb7e408a74d504ee2bd1b8a945dbacd7787407980")))
        #expect(
            cert.signatureValue
                == hex(
                    "4d1722dc99f8f9a92d518f83ff984f0923e9108ce05bee65e201763ed9d5b51144fb644fdb720e422c2be9537206309c204b47e0ea2a151705a8955598e18906"
                ))
        #expect(cert.notAfter == 1_827_947_688)
    }

    @Test func distinguishedNameEscapingAndUnknownTypes() throws {
        // SEQUENCE { SET { SEQUENCE { CN, UTF8String " a,b+c " } },
        //            SET { SEQUENCE { 1.2.3.4, INTEGER 5 } } }
        var writer = DERWriter()
        writer.writeSequence { name in
            name.writeSet { $0.writeSequence { pair in
                pair.writeObjectIdentifier(.commonName)
                pair.writeUTF8String(" a,b+c ")
            } }
            name.writeSet { $0.writeSequence { pair in
                pair.writeObjectIdentifier(ASN1ObjectIdentifier(dotted: "1.2.3.4")!)
                pair.writeInteger(5)
            } }
        }
        var reader = DERReader(writer.bytes)
        let name = try DistinguishedName(reading: &reader, field: "name")
        #expect(name.description == "1.2.3.4=#020105, CN=\\ a\\,b\\+c\\ ")
        #expect(name.commonName == " a,b+c ")
    }
}
