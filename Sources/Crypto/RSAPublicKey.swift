/// An RSA public key (n, e) (RFC 8017 §3.1) for verifying signatures from
/// X.509 certificates and TLS 1.3 CertificateVerify messages.
///
/// Only keys a verifier should meet are accepted: 1024 to 8192-bit odd
/// moduli, odd exponents 3 <= e < n. The Montgomery constants are computed
/// here, once per key, so each verification is a plain exponentiation.
package struct RSAPublicKey: Sendable {
    /// n, big-endian, without leading zero bytes.
    let modulus: [UInt8]
    /// e, big-endian, without leading zero bytes.
    let publicExponent: [UInt8]
    let arithmetic: MontgomeryModulus
    package let modulusBitCount: Int

    /// k in RFC 8017: the modulus length in octets, which is every signature's length.
    var modulusByteCount: Int { modulus.count }

    /// The smallest and largest modulus sizes accepted. Below 1024 bits RSA
    /// is breakable; above 8192 bits a key is more likely a denial-of-service
    /// attempt than a real certificate.
    static let modulusBitRange = 1024 ... 8192

    /// Big-endian modulus and public exponent; nil unless the modulus is odd,
    /// 1024...8192 bits (leading zero bytes allowed and stripped), and
    /// 3 <= e < n, e odd (RFC 8017 §3.1: e in [3, n − 1]; an even e has no
    /// inverse modulo λ(n), so no private key could match it).
    package init?(modulus: [UInt8], publicExponent: [UInt8]) {
        let modulus = Array(modulus.drop(while: { $0 == 0 }))
        let publicExponent = Array(publicExponent.drop(while: { $0 == 0 }))
        guard let leadingByte = modulus.first else { return nil }
        let bitCount = 8 * modulus.count - leadingByte.leadingZeroBitCount
        guard Self.modulusBitRange.contains(bitCount) else { return nil }

        guard let lowExponentByte = publicExponent.last, lowExponentByte & 1 == 1 else { return nil }
        guard publicExponent.count > 1 || lowExponentByte >= 3 else { return nil }
        // Real keys use 3 or 65537. A certificate with a modulus-sized
        // exponent would make each verification cost a private-key operation's
        // time, a cheap way for a server to stall Sluice; 32 bits is the cap
        // common verifiers apply.
        guard publicExponent.count <= 4 else { return nil }
        guard Self.isLess(publicExponent, than: modulus) else { return nil }

        guard let arithmetic = MontgomeryModulus(bigEndianModulus: modulus) else { return nil }
        self.modulus = modulus
        self.publicExponent = publicExponent
        self.arithmetic = arithmetic
        self.modulusBitCount = bitCount
    }

    /// RSAVP1 (RFC 8017 §5.2.2) after OS2IP (§4.2), with the length check of
    /// §8.1.2 / §8.2.2 step 1: the representative m = s^e mod n, or nil if the
    /// signature is not exactly k octets or its integer is not below n.
    func signatureRepresentative(_ signature: [UInt8]) -> [UInt64]? {
        guard signature.count == modulusByteCount else { return nil }
        let s = MontgomeryModulus.limbs(fromBigEndian: signature, limbCount: arithmetic.limbCount)
        guard MontgomeryModulus.isLess(s, than: arithmetic.limbs) else { return nil }
        return arithmetic.power(s, exponent: publicExponent)
    }

    /// a < b for big-endian byte strings without leading zero bytes.
    private static func isLess(_ a: [UInt8], than b: [UInt8]) -> Bool {
        if a.count != b.count { return a.count < b.count }
        for (x, y) in zip(a, b) where x != y { return x < y }
        return false
    }
}
