import Crypto

/// Whether a certificate's signature was made by a given issuer key (RFC 5280
/// §6.1.3 (a)(1)), for the algorithms servers' chains use today: ECDSA over
/// P-256 and P-384, RSA PKCS#1 v1.5 and PSS with SHA-2. SHA-1 and anything
/// else is refused: no public CA has issued SHA-1 server chains since 2016.
extension Certificate {
    func isSigned(by issuerKey: PublicKey) -> Bool {
        let signed = tbsCertificateBytes
        switch (signatureAlgorithm, issuerKey) {
        case (.ecdsaWithSHA256, .ecPublicKey(let curve, let point)):
            return Self.ecdsa(curve: curve, point: point, signature: signatureValue, digest: SHA256.hash(signed))
        case (.ecdsaWithSHA384, .ecPublicKey(let curve, let point)):
            return Self.ecdsa(curve: curve, point: point, signature: signatureValue, digest: SHA384.hash(signed))
        case (.ecdsaWithSHA512, .ecPublicKey(let curve, let point)):
            return Self.ecdsa(curve: curve, point: point, signature: signatureValue, digest: SHA512.hash(signed))
        case (.sha256WithRSAEncryption, .rsaEncryption(let key)):
            return Self.rsa(key)?.isValidPKCS1v15Signature(signatureValue, digest: SHA256.hash(signed), hash: .sha256) ?? false
        case (.sha384WithRSAEncryption, .rsaEncryption(let key)):
            return Self.rsa(key)?.isValidPKCS1v15Signature(signatureValue, digest: SHA384.hash(signed), hash: .sha384) ?? false
        case (.sha512WithRSAEncryption, .rsaEncryption(let key)):
            return Self.rsa(key)?.isValidPKCS1v15Signature(signatureValue, digest: SHA512.hash(signed), hash: .sha512) ?? false
        case (.rsassaPSS(let parameters), .rsaEncryption(let key)):
            // RFC 4055 §3.1: MGF1 over the same hash is the only combination in use.
            guard parameters.hashAlgorithm == parameters.maskGenerationHashAlgorithm, let rsaKey = Self.rsa(key) else { return false }
            switch parameters.hashAlgorithm {
            case .sha256: return rsaKey.isValidPSSSignature(signatureValue, digest: SHA256.hash(signed), hash: .sha256, saltLength: parameters.saltLength)
            case .sha384: return rsaKey.isValidPSSSignature(signatureValue, digest: SHA384.hash(signed), hash: .sha384, saltLength: parameters.saltLength)
            case .sha512: return rsaKey.isValidPSSSignature(signatureValue, digest: SHA512.hash(signed), hash: .sha512, saltLength: parameters.saltLength)
            case .sha1: return false
            }
        case (.ecdsaWithSHA256, _), (.ecdsaWithSHA384, _), (.ecdsaWithSHA512, _), (.sha256WithRSAEncryption, _),
             (.sha384WithRSAEncryption, _), (.sha512WithRSAEncryption, _), (.rsassaPSS, _), (.ed25519, _), (.unknown, _):
            return false
        }
    }

    private static func ecdsa(curve: NamedCurve, point: [UInt8], signature: [UInt8], digest: [UInt8]) -> Bool {
        guard let decoded = ECDSASignature(derRepresentation: signature) else { return false }
        switch curve {
        case .p256: return P256.PublicKey(x962Representation: point)?.isValidSignature(decoded, forDigest: digest) ?? false
        case .p384: return P384.PublicKey(x962Representation: point)?.isValidSignature(decoded, forDigest: digest) ?? false
        case .p521, .other: return false
        }
    }

    private static func rsa(_ key: RSAKeyComponents) -> RSAPublicKey? {
        RSAPublicKey(modulus: key.modulus, publicExponent: key.publicExponent)
    }
}
