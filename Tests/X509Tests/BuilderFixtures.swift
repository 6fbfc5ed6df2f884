import TestSupport
@testable import X509

/// Inputs for the builder tests. The public keys are those of the
/// `ecP256CA` and `multiSANLeaf` vectors, whose private keys were at hand
/// while authoring, so the TBSCertificates below could be signed with
/// `openssl dgst -sha256 -sign` and checked with `openssl verify`.
enum BuilderFixtures {
    static let caKey = hex(
        "0461d68968ea070060a956060adeae5efd7d7d039fe81a2f836e22504c15528c34920a58c55947fc1610d292e95d6b8d9ce64788c1aec0b7a0ca0b3383387930a8"
    )
    static let leafKey = hex(
        "04ff529c94424f111cea797ed7c94f28be8aa904ddb89e03c702094f61e7bc8fae2a514a892e3acccf3f2908a685671a10ee01fc1a5232555f4c9e43f1cad6f639"
    )
    static let caKeyIdentifier = hex("DECCB3485F5F42F9DFEEF6BC25D4EDB874377535")
    static let leafKeyIdentifier = hex("6FBCEB889B21F054D6B53EFDF0D7FFE72AB806BF")
    static let caName = DistinguishedName(commonName: "Sluice Interception CA", organizationName: "Sluice")
    static let ipv6 = hex("20010db8000000000000000000000010")

    static let caTemplate = CertificateTemplate(
        serialNumber: hex("0000017A2B3C4D5E6F"), issuer: caName, subject: caName,
        notBefore: 1_796_411_688, notAfter: 2_574_011_688,  // 2026-12-04 … 2051-07-26 (GeneralizedTime)
        subjectPublicKey: caKey, profile: .certificateAuthority(pathLenConstraint: 0),
        subjectKeyIdentifier: caKeyIdentifier, authorityKeyIdentifier: caKeyIdentifier)

    static let leafTemplate = CertificateTemplate(
        serialNumber: hex("9A0B1C2D3E4F50617283940A1B2C3D4E"), issuer: caName,
        subject: DistinguishedName(commonName: "www.example.test", organizationName: "Sluice"),
        notBefore: 1_796_411_688, notAfter: 1_796_411_688 + 30 * 86_400,  // 2027-01-03 19:14:48
        subjectPublicKey: leafKey,
        profile: .leaf(dnsNames: ["www.example.test", "*.example.test"], ipAddresses: [[192, 0, 2, 10], ipv6]),
        subjectKeyIdentifier: leafKeyIdentifier, authorityKeyIdentifier: caKeyIdentifier)

    /// `caTemplate`'s TBSCertificate signed with `openssl dgst -sha256 -sign`
    /// (the ecP256CA key) and assembled; `openssl verify -CAfile` says OK.
    static let caSignature = hex(
        "3045022100dc0b6ccd2f6a49dd314d020135f30b202c6b86d09460cd1d4d62c86944ce8f7c0220515f6641a0889f029e9ac7f8565153030f6c31d5274e536959f4a1b543b56123"
    )
    static let caCertificate = """
-----BEGIN CERTIFICATE-----
MIIBwTCCAWegAwIBAgIHAXorPE1ebzAKBggqhkjOPQQDAjAyMQ8wDQYDVQQKDAZT
bHVpY2UxHzAdBgNVBAMMFlNsdWljZSBJbnRlcmNlcHRpb24gQ0EwIBcNMjYxMjA0
MTkxNDQ4WhgPMjA1MTA3MjYxOTE0NDhaMDIxDzANBgNVBAoMBlNsdWljZTEfMB0G
A1UEAwwWU2x1aWNlIEludGVyY2VwdGlvbiBDQTBZMBMGByqGSM49AgEGCCqGSM49
AwEHA0IABGHWiWjqBwBgqVYGCt6uXv19fQOf6Bovg24iUEwVUow0kgpYxVlH/BYQ
0pLpXWuNnOZHiMGuwLegygszgzh5MKijZjBkMBIGA1UdEwEB/wQIMAYBAf8CAQAw
DgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBTezLNIX19C+d/u9rwl1O24dDd1NTAf
BgNVHSMEGDAWgBTezLNIX19C+d/u9rwl1O24dDd1NTAKBggqhkjOPQQDAgNIADBF
AiEA3AtszS9qSd0xTQIBNfMLICxrhtCUYM0dTWLIaUTOj3wCIFFfZkGgiJ8CnprH
+FZRUwMPbDHVJ05TaVn0obVDtWEj
-----END CERTIFICATE-----
"""

    /// `leafTemplate` signed the same way; `openssl verify -CAfile ca.pem
    /// -x509_strict -purpose sslserver leaf.pem` says OK.
    static let leafSignature = hex(
        "3045022100d52746b6e0be1c966560bda040d964150c1fcca15e52949e48162df8b966686a02201f1d7df329ca01d7f12f9ec13a424b191dc87bc66c40dd46070b6dec5dc019d9"
    )
    static let leafCertificate = """
-----BEGIN CERTIFICATE-----
MIICGTCCAb+gAwIBAgIRAJoLHC0+T1BhcoOUChssPU4wCgYIKoZIzj0EAwIwMjEP
MA0GA1UECgwGU2x1aWNlMR8wHQYDVQQDDBZTbHVpY2UgSW50ZXJjZXB0aW9uIENB
MB4XDTI2MTIwNDE5MTQ0OFoXDTI3MDEwMzE5MTQ0OFowLDEPMA0GA1UECgwGU2x1
aWNlMRkwFwYDVQQDDBB3d3cuZXhhbXBsZS50ZXN0MFkwEwYHKoZIzj0CAQYIKoZI
zj0DAQcDQgAE/1KclEJPERzqeX7XyU8ovoqpBN24ngPHAglPYee8j64qUUqJLjrM
zz8pCKaFZxoQ7gH8GlIyVV9MnkPxytb2OaOBuzCBuDAMBgNVHRMBAf8EAjAAMA4G
A1UdDwEB/wQEAwIHgDATBgNVHSUEDDAKBggrBgEFBQcDATBDBgNVHREEPDA6ghB3
d3cuZXhhbXBsZS50ZXN0gg4qLmV4YW1wbGUudGVzdIcEwAACCocQIAENuAAAAAAA
AAAAAAAAEDAdBgNVHQ4EFgQUb7zriJsh8FTWtT798Nf/5yq4Br8wHwYDVR0jBBgw
FoAU3syzSF9fQvnf7va8JdTtuHQ3dTUwCgYIKoZIzj0EAwIDSAAwRQIhANUnRrbg
vhyWZWC9oEDZZBUMH8yhXlKUnkgWLfi5ZmhqAiAfHX3zKcoB1/EvnsE6QksZHch7
xmxA3UYHC23sXcAZ2Q==
-----END CERTIFICATE-----
"""
}
