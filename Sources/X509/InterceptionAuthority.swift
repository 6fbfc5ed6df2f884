package import Crypto

/// Sluice's own CA for HTTPS interception, and the leaves it issues for the
/// names apps connect to. The CA's certificate is what a user (or `exec`)
/// adds to the app's trust store; each intercepted name gets a leaf issued on
/// first use and kept until near its expiry. All leaves share one key, made
/// when the authority is: the TLS server signs each handshake with it, and a
/// key per name would cost a key generation per name for nothing (the CA's
/// signature is what binds a name).
package struct InterceptionAuthority {
    /// Leaves live this long, so a CA kept for years never leaves an old
    /// leaf in use; reissued when less than a day is left.
    package static let leafLifetime: Int64 = 30 * 86400
    /// Both bounds start a day early: an app's clock a little behind
    /// Sluice's must not see a certificate from the future.
    static let clockSkew: Int64 = 86400
    /// At most this many names are kept; past it the cache starts over.
    static let cacheLimit = 4096

    package let certificate: Certificate
    private let key: P256.PrivateKey
    package let leafKey: P256.PrivateKey
    private let keyIdentifier: [UInt8]
    private var issued: [String: (chain: [[UInt8]], notAfter: Int64)] = [:]

    /// A new CA valid for ten years from `now`, and its key.
    package static func create(commonName: String, now: Int64, random: (Int) -> [UInt8])
        throws(CertificateIssuanceError) -> InterceptionAuthority
    {
        guard let key = P256.PrivateKey(randomBytes: random(48)) else { throw .invalidPublicKey }
        let name = DistinguishedName(commonName: commonName, organizationName: "Sluice")
        let identifier = Self.keyIdentifier(key.publicKey)
        let der = try CertificateBuilder.issue(
            CertificateTemplate(serialNumber: Self.serialNumber(random), issuer: name, subject: name,
                                notBefore: now - clockSkew, notAfter: now + 10 * 365 * 86400,
                                subjectPublicKey: key.publicKey.x962Representation,
                                profile: .certificateAuthority(pathLenConstraint: 0),
                                subjectKeyIdentifier: identifier, authorityKeyIdentifier: identifier),
            signature: { key.signature(forDigest: SHA256.hash($0)).derRepresentation })
        guard let certificate = try? Certificate(derRepresentation: der) else { throw .invalidTBSCertificate }
        guard let authority = InterceptionAuthority(certificate: certificate, key: key, leafKeyRandom: random(48)) else {
            throw .invalidPublicKey
        }
        return authority
    }

    /// An existing CA: nil unless `key` is the certificate's own key and the
    /// certificate is a CA.
    package init?(certificate: Certificate, key: P256.PrivateKey, leafKeyRandom: [UInt8]) {
        guard case .ecPublicKey(.p256, let point) = certificate.subjectPublicKeyInfo.publicKey,
              point == key.publicKey.x962Representation,
              certificate.extensions.basicConstraints?.isCertificateAuthority == true,
              let leafKey = P256.PrivateKey(randomBytes: leafKeyRandom)
        else { return nil }
        self.certificate = certificate
        self.key = key
        self.leafKey = leafKey
        keyIdentifier = certificate.extensions.subjectKeyIdentifier ?? Self.keyIdentifier(key.publicKey)
    }

    /// The CA's key, for writing it out (SEC 1 DER).
    package var keyDER: [UInt8] { ECPrivateKeyDER.encode(key) }

    /// The chain to present for `host` (a DNS name or an IP literal): the
    /// leaf, then the CA. Nil for a host no certificate can name.
    package mutating func chain(for host: String, now: Int64, random: (Int) -> [UInt8]) -> [[UInt8]]? {
        let reference = HostNameMatching.reference(host)
        let cacheKey: String
        let profile: CertificateProfile
        switch reference {
        case .dnsName(let name):
            cacheKey = String(decoding: name, as: UTF8.self)
            profile = .leaf(dnsNames: [cacheKey], ipAddresses: [])
        case .ipAddress(let address):
            cacheKey = address.map(String.init).joined(separator: ".")
            profile = .leaf(dnsNames: [], ipAddresses: [address])
        case .invalid:
            return nil
        }
        if let entry = issued[cacheKey], entry.notAfter - now > 86400 { return entry.chain }
        let notAfter = min(now + Self.leafLifetime, certificate.notAfter)
        let template = CertificateTemplate(
            serialNumber: Self.serialNumber(random), issuer: certificate.subject,
            subject: DistinguishedName(commonName: cacheKey.count <= 64 ? cacheKey : nil, organizationName: "Sluice"),
            notBefore: now - Self.clockSkew, notAfter: notAfter,
            subjectPublicKey: leafKey.publicKey.x962Representation, profile: profile,
            subjectKeyIdentifier: Self.keyIdentifier(leafKey.publicKey), authorityKeyIdentifier: keyIdentifier)
        let key = key
        guard let leaf = try? CertificateBuilder.issue(template, signature: { key.signature(forDigest: SHA256.hash($0)).derRepresentation })
        else { return nil }
        if issued.count >= Self.cacheLimit { issued.removeAll(keepingCapacity: true) }
        let chain = [leaf, certificate.derRepresentation]
        issued[cacheKey] = (chain, notAfter)
        return chain
    }

    /// RFC 7093 §2 method 1: the leftmost 160 bits of the key's SHA-256.
    private static func keyIdentifier(_ key: P256.PublicKey) -> [UInt8] {
        Array(SHA256.hash(key.x962Representation).prefix(20))
    }

    /// 16 random bytes, positive (RFC 5280 §4.1.2.2: at most 20 octets, and
    /// unpredictable, as the CA/Browser Forum asks of serials).
    private static func serialNumber(_ random: (Int) -> [UInt8]) -> [UInt8] {
        var serial = random(16)
        serial[0] = serial[0] & 0x7F | 0x01
        return serial
    }
}
