/// RSASSA-PSS verification (RFC 8017 §8.1.2), the only RSA scheme TLS 1.3
/// allows in CertificateVerify (RFC 8446 §4.2.3, rsa_pss_rsae_*), also found
/// in X.509 as id-RSASSA-PSS (RFC 4055).
extension RSAPublicKey {
    /// Whether `signature` is a valid RSASSA-PSS signature over a message
    /// whose `hash` digest is `digest`, with MGF1 over the same hash and a
    /// salt of exactly `saltLength` octets. TLS 1.3 requires saltLength =
    /// the digest length; X.509 PSS parameters may name another.
    package func isValidPSSSignature(_ signature: [UInt8], digest: [UInt8], hash: RSAHash, saltLength: Int) -> Bool {
        guard digest.count == hash.digestSize, saltLength >= 0 else { return false }
        // §8.1.2 step 2c: emBits = modBits − 1, emLen = ⌈emBits / 8⌉. When
        // modBits ≡ 1 (mod 8), emLen = k − 1 and I2OSP fails unless the top
        // octet of m is zero.
        let encodedMessageBits = modulusBitCount - 1
        let encodedMessageLength = (encodedMessageBits + 7) / 8
        guard let representative = signatureRepresentative(signature),
              let encodedMessage = MontgomeryModulus.bigEndianBytes(of: representative, byteCount: encodedMessageLength) else { return false }
        return Self.emsaPSSVerify(digest: digest, encodedMessage: encodedMessage, encodedMessageBits: encodedMessageBits, hash: hash, saltLength: saltLength)
    }

    /// EMSA-PSS-VERIFY (§9.1.2) from step 3 on, given mHash; true for
    /// "consistent". `encodedMessage` is emLen = ⌈encodedMessageBits / 8⌉ octets.
    static func emsaPSSVerify(digest: [UInt8], encodedMessage: [UInt8], encodedMessageBits: Int, hash: RSAHash, saltLength: Int) -> Bool {
        let hashLength = hash.digestSize
        let encodedMessageLength = encodedMessage.count
        guard digest.count == hashLength, saltLength >= 0, encodedMessageBits > 0,
              encodedMessageLength == (encodedMessageBits + 7) / 8 else { return false }
        // Step 3 (written as a subtraction so a huge saltLength cannot overflow).
        guard saltLength <= encodedMessageLength - hashLength - 2 else { return false }
        // Step 4: the trailer field.
        guard encodedMessage[encodedMessageLength - 1] == 0xbc else { return false }
        // Step 5.
        let maskedDBLength = encodedMessageLength - hashLength - 1
        let maskedDB = encodedMessage[0 ..< maskedDBLength]
        let h = Array(encodedMessage[maskedDBLength ..< maskedDBLength + hashLength])
        // Step 6: the leftmost 8·emLen − emBits bits must be zero.
        let unusedBitCount = 8 * encodedMessageLength - encodedMessageBits
        let unusedBitsMask = UInt8(truncatingIfNeeded: 0xff00 >> unusedBitCount)
        guard encodedMessage[0] & unusedBitsMask == 0 else { return false }
        // Steps 7–9.
        let dbMask = mgf1(seed: h, maskLength: maskedDBLength, hash: hash)
        var db = zip(maskedDB, dbMask).map { $0 ^ $1 }
        db[0] &= ~unusedBitsMask
        // Step 10: PS is zeros, then the 0x01 separator just before the salt.
        let paddingLength = encodedMessageLength - hashLength - saltLength - 2
        guard db[0 ..< paddingLength].allSatisfy({ $0 == 0 }), db[paddingLength] == 0x01 else { return false }
        // Steps 11–14.
        let salt = db[(paddingLength + 1)...]
        let mPrime = [UInt8](repeating: 0, count: 8) + digest + salt
        return hash.hash(mPrime) == h
    }

    /// MGF1 (§B.2.1): Hash(seed || C) for a 32-bit big-endian counter C = 0, 1, …,
    /// concatenated and cut to maskLength octets. maskLength is below 1024
    /// here, far from the 2^32·hLen limit of step 1.
    static func mgf1(seed: [UInt8], maskLength: Int, hash: RSAHash) -> [UInt8] {
        var mask: [UInt8] = []
        mask.reserveCapacity(maskLength + hash.digestSize)
        var counter: UInt32 = 0
        while mask.count < maskLength {
            let c: [UInt8] = [UInt8(truncatingIfNeeded: counter >> 24), UInt8(truncatingIfNeeded: counter >> 16), UInt8(truncatingIfNeeded: counter >> 8), UInt8(truncatingIfNeeded: counter)]
            mask += hash.hash(seed + c)
            counter &+= 1
        }
        return Array(mask.prefix(maskLength))
    }
}
