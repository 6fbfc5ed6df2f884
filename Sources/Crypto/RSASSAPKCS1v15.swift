/// RSASSA-PKCS1-v1_5 verification (RFC 8017 §8.2.2), the signature scheme of
/// most X.509 certificates (sha256WithRSAEncryption and its siblings).
extension RSAPublicKey {
    /// Whether `signature` is a valid RSASSA-PKCS1-v1_5 signature over a
    /// message whose `hash` digest is `digest`.
    ///
    /// Following the recommendation of §8.2.2 step 4's note, the expected
    /// encoded message is built and compared as a whole, so there is no
    /// padding parser to fool (Bleichenbacher's 2006 e = 3 forgery relied on
    /// a verifier that parsed loosely).
    ///
    /// The DigestInfo's AlgorithmIdentifier must carry NULL parameters: that
    /// is the only encoding RFC 8017 §9.2 Note 1 lists, RFC 5754 §2 confirms
    /// that EMSA-PKCS1-v1_5 requires NULL parameters for SHA-2, and the Web
    /// PKI's signers all produce it. Accepting the absent-parameters form as
    /// well would double the encodings a forger may aim at for no real signer.
    package func isValidPKCS1v15Signature(_ signature: [UInt8], digest: [UInt8], hash: RSAHash) -> Bool {
        guard digest.count == hash.digestSize else { return false }
        guard let expected = Self.emsaPKCS1v15Encoding(digest: digest, hash: hash, encodedMessageLength: modulusByteCount) else { return false }
        guard let representative = signatureRepresentative(signature),
              let encodedMessage = MontgomeryModulus.bigEndianBytes(of: representative, byteCount: modulusByteCount) else { return false }
        return encodedMessage == expected
    }

    /// EMSA-PKCS1-v1_5-ENCODE (§9.2) from the digest:
    /// EM = 0x00 || 0x01 || PS (0xff, at least 8) || 0x00 || DigestInfo.
    static func emsaPKCS1v15Encoding(digest: [UInt8], hash: RSAHash, encodedMessageLength: Int) -> [UInt8]? {
        let digestInfo = hash.digestInfoPrefix + digest
        // Step 3: "intended encoded message length too short".
        guard encodedMessageLength >= digestInfo.count + 11 else { return nil }
        let padding = [UInt8](repeating: 0xff, count: encodedMessageLength - digestInfo.count - 3)
        return [0x00, 0x01] + padding + [0x00] + digestInfo
    }
}

extension RSAHash {
    /// The DER of DigestInfo ::= SEQUENCE { SEQUENCE { OID, NULL }, OCTET STRING }
    /// up to the digest itself (RFC 8017 §9.2 Note 1), for the OIDs
    /// id-sha256 (2.16.840.1.101.3.4.2.1), id-sha384 (…2.2), id-sha512 (…2.3).
    fileprivate var digestInfoPrefix: [UInt8] {
        switch self {
        case .sha256: [0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20]
        case .sha384: [0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0x05, 0x00, 0x04, 0x30]
        case .sha512: [0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40]
        }
    }
}
