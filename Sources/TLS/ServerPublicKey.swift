package import Crypto

/// The key of a server's leaf certificate, as chain validation found it, for
/// checking its CertificateVerify (RFC 8446 §4.4.3).
package enum ServerPublicKey: Sendable {
    case p256(P256.PublicKey)
    case p384(P384.PublicKey)
    case rsa(RSAPublicKey)

    /// The schemes this key can sign with, in Sluice's order: what the
    /// ClientHello offers and what a CertificateVerify may use. RSA keys sign
    /// with PSS in TLS 1.3 (§4.2.3: PKCS#1 v1.5 only in certificates).
    package static let offeredSchemes: [SignatureScheme] = [
        .ecdsaSecp256r1SHA256, .ecdsaSecp384r1SHA384,
        .rsaPSSRSAESHA256, .rsaPSSRSAESHA384, .rsaPSSRSAESHA512,
        .rsaPKCS1SHA256, .rsaPKCS1SHA384, .rsaPKCS1SHA512,
    ]

    /// Whether `signature` by this key under `scheme` covers `content`.
    package func verifies(_ signature: [UInt8], of content: [UInt8], scheme: SignatureScheme) -> Bool {
        switch (self, scheme) {
        case (.p256(let key), .ecdsaSecp256r1SHA256):
            guard let decoded = ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(decoded, forDigest: SHA256.hash(content))
        case (.p384(let key), .ecdsaSecp384r1SHA384):
            guard let decoded = ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(decoded, forDigest: SHA384.hash(content))
        case (.rsa(let key), .rsaPSSRSAESHA256):
            return key.isValidPSSSignature(signature, digest: SHA256.hash(content), hash: .sha256, saltLength: 32)
        case (.rsa(let key), .rsaPSSRSAESHA384):
            return key.isValidPSSSignature(signature, digest: SHA384.hash(content), hash: .sha384, saltLength: 48)
        case (.rsa(let key), .rsaPSSRSAESHA512):
            return key.isValidPSSSignature(signature, digest: SHA512.hash(content), hash: .sha512, saltLength: 64)
        case (.p256, _), (.p384, _), (.rsa, _):
            // §4.4.3: a scheme that does not fit the key (or PKCS#1 v1.5, which
            // TLS 1.3 forbids here) fails the handshake.
            return false
        }
    }

    /// TLS 1.2's ServerKeyExchange (RFC 5246 §7.4.1.4.1, RFC 8446 §4.2.3):
    /// RSA keys may sign with PKCS#1 v1.5 too, and an ECDSA scheme's hash is
    /// not tied to the key's curve (a P-384 server may sign with SHA-256).
    package func verifiesTLS12(_ signature: [UInt8], of content: [UInt8], scheme: SignatureScheme) -> Bool {
        switch (self, scheme) {
        case (.rsa(let key), .rsaPKCS1SHA256):
            return key.isValidPKCS1v15Signature(signature, digest: SHA256.hash(content), hash: .sha256)
        case (.rsa(let key), .rsaPKCS1SHA384):
            return key.isValidPKCS1v15Signature(signature, digest: SHA384.hash(content), hash: .sha384)
        case (.rsa(let key), .rsaPKCS1SHA512):
            return key.isValidPKCS1v15Signature(signature, digest: SHA512.hash(content), hash: .sha512)
        case (.p256(let key), .ecdsaSecp384r1SHA384):
            guard let decoded = ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(decoded, forDigest: SHA384.hash(content))
        case (.p384(let key), .ecdsaSecp256r1SHA256):
            guard let decoded = ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(decoded, forDigest: SHA256.hash(content))
        case (.p256, _), (.p384, _), (.rsa, _):
            return verifies(signature, of: content, scheme: scheme)
        }
    }
}
