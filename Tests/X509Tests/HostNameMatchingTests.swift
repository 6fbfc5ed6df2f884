import Testing

@testable import X509

@Suite struct HostNameMatchingTests {
    /// SAN: DNS:example.test, DNS:*.example.test, DNS:WWW.Other.Test,
    /// IP:192.0.2.1, IP:2001:db8::1, email and URI entries; CN=example.test.
    let multiSAN = try! certificate(Vectors.multiSANLeaf)

    @Test func exactAndCase() {
        #expect(multiSAN.matches(host: "example.test"))
        #expect(multiSAN.matches(host: "EXAMPLE.test"))
        #expect(multiSAN.matches(host: "www.other.test"))
        #expect(multiSAN.matches(host: "WWW.OTHER.TEST"))
        #expect(!multiSAN.matches(host: "other.test"))
        #expect(!multiSAN.matches(host: "example.tes"))
        #expect(!multiSAN.matches(host: "xexample.test"))
        #expect(!multiSAN.matches(host: "admin@example.test"))
    }

    @Test func trailingDot() {
        #expect(multiSAN.matches(host: "example.test."))
        #expect(multiSAN.matches(host: "a.example.test."))
        #expect(!multiSAN.matches(host: "example.test.."))
        #expect(!multiSAN.matches(host: "."))
        #expect(!multiSAN.matches(host: ""))
        #expect(HostNameMatching.matches(presented: "example.test.", reference: Array("example.test".utf8)))
    }

    @Test func wildcardMatchesOneLabel() {
        #expect(multiSAN.matches(host: "a.example.test"))
        #expect(multiSAN.matches(host: "WWW.Example.Test"))
        #expect(multiSAN.matches(host: "xn--bcher-kva.example.test"))
        #expect(!multiSAN.matches(host: "a.b.example.test"))
        #expect(!multiSAN.matches(host: ".example.test"))
        #expect(!multiSAN.matches(host: "a..example.test"))
        #expect(!multiSAN.matches(host: "*.example.test"))  // a reference never holds a wildcard
    }

    @Test func wildcardRules() {
        func match(_ presented: String, _ host: String) -> Bool {
            guard case .dnsName(let reference) = HostNameMatching.reference(host) else { return false }
            return HostNameMatching.matches(presented: presented, reference: reference)
        }
        #expect(match("*.example.test", "www.example.test"))
        #expect(!match("*.example.test", "example.test"))  // not the bare parent
        #expect(!match("*.example.test", "a.b.example.test"))  // exactly one label
        #expect(!match("*.test", "example.test"))  // too close to a public suffix
        #expect(!match("*", "example"))
        #expect(!match("*.", "example."))
        #expect(!match("w*.example.test", "www.example.test"))  // partial wildcards are not honoured
        #expect(!match("*w.example.test", "www.example.test"))
        #expect(!match("www.*.test", "www.example.test"))
        #expect(!match("*.*.test", "a.b.test"))
        #expect(!match("**.example.test", "a.example.test"))
        #expect(!match("", "example.test"))
        #expect(match("*.co.uk", "example.co.uk"))  // documented limitation: no Public Suffix List
    }

    @Test func ipAddresses() {
        #expect(multiSAN.matches(host: "192.0.2.1"))
        #expect(multiSAN.matches(host: "2001:db8::1"))
        #expect(multiSAN.matches(host: "[2001:DB8:0:0:0:0:0:1]"))
        #expect(multiSAN.matches(host: "2001:db8:0::0:1"))
        #expect(multiSAN.matches(ipAddress: [192, 0, 2, 1]))
        #expect(!multiSAN.matches(ipAddress: [192, 0, 2, 2]))
        #expect(!multiSAN.matches(host: "192.0.2.2"))
        #expect(!multiSAN.matches(host: "::ffff:192.0.2.1"))  // IPv4-mapped is a different address
        #expect(!multiSAN.matches(host: "192.0.2.01"))  // leading zero: not an address, and not a name
        #expect(!multiSAN.matches(host: "2001:db8::1%eth0"))
        // A DNS SAN spelling an address does not match the IP reference.
        let issued = try! Certificate(
            derRepresentation: CertificateBuilder.issue(
                CertificateTemplate(
                    serialNumber: [1], issuer: BuilderFixtures.caName, subject: DistinguishedName(commonName: "10.0.0.1"),
                    notBefore: 0, notAfter: 1, subjectPublicKey: BuilderFixtures.leafKey,
                    profile: .leaf(dnsNames: ["10.0.0.1", "host.test"], ipAddresses: [[10, 0, 0, 2]]))
            ) { _ in [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01] })
        #expect(!issued.matches(host: "10.0.0.1"))
        #expect(issued.matches(host: "10.0.0.2"))
        #expect(!issued.matches(host: "host.test.10.0.0.2"))
        #expect(issued.matches(host: "host.test"))
        // An IP SAN is not matched by a DNS name.
        #expect(!multiSAN.matches(host: "1.2.0.192.in-addr.arpa"))
    }

    @Test func commonNameIsIgnored() throws {
        // p384Leaf: CN=p384.example.test and SAN DNS:p384.example.test.
        #expect(try certificate(Vectors.p384Leaf).matches(host: "p384.example.test"))
        // ecP256CA: CN=Sluice Test EC CA, no SAN at all → nothing matches.
        let noSAN = try certificate(Vectors.ecP256CA)
        #expect(noSAN.extensions.subjectAlternativeName == nil)
        #expect(!noSAN.matches(host: "Sluice Test EC CA"))
        // A CN that is a host name, without SAN, still does not match.
        var parts = try certificate(Vectors.generalizedTimeCA)  // CN=Long Lived, no SAN
        #expect(!parts.matches(host: "long lived"))
        parts = try certificate(Vectors.nameConstrainedCA)
        #expect(!parts.matches(host: "example.test"))
    }

    @Test func addressParsing() {
        #expect(HostNameMatching.parseIPv4(Array("0.0.0.0".utf8)) == [0, 0, 0, 0])
        #expect(HostNameMatching.parseIPv4(Array("255.255.255.255".utf8)) == [255, 255, 255, 255])
        for bad in ["256.0.0.1", "1.2.3", "1.2.3.4.5", "1..3.4", "01.2.3.4", "1.2.3.4 ", "a.b.c.d", "1234.1.1.1"] {
            #expect(HostNameMatching.parseIPv4(Array(bad.utf8)) == nil, "\(bad)")
        }
        let cases: [(String, String)] = [
            ("::", "00000000000000000000000000000000"), ("::1", "00000000000000000000000000000001"),
            ("1::", "00010000000000000000000000000000"), ("1:2:3:4:5:6:7:8", "00010002000300040005000600070008"),
            ("1:2:3:4:5:6:7::", "00010002000300040005000600070000"), ("::ffff:1.2.3.4", "00000000000000000000ffff01020304"),
            ("1:2:3:4:5:6:1.2.3.4", "00010002000300040005000601020304"), ("fe80::abcd:EF01", "fe8000000000000000000000abcdef01"),
        ]
        for (text, expected) in cases {
            #expect(HostNameMatching.parseIPv6(Array(text.utf8)).map(toHex) == expected, "\(text)")
        }
        for bad in [
            ":", ":::", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "g::", ":1::", "1::2:", "::1.2.3",
            "1.2.3.4::", "1:2:3:4:5:6:7:1.2.3.4", "::1.2.3.4:5", "",
        ] {
            #expect(HostNameMatching.parseIPv6(Array(bad.utf8)) == nil, "\(bad)")
        }
    }
}
