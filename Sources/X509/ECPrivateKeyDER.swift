package import Crypto

/// A P-256 private key as files hold it: SEC 1's ECPrivateKey (RFC 5915 §3,
/// PEM label "EC PRIVATE KEY"), which is what `openssl ecparam -genkey`
/// writes and what Sluice's interception CA keeps on disk, and PKCS #8's
/// PrivateKeyInfo wrapping of it (RFC 5208 §5, "PRIVATE KEY"), which
/// `openssl genpkey` writes.
package enum ECPrivateKeyDER {
    /// ECPrivateKey { version 1, privateKey, [0] prime256v1, [1] publicKey }.
    package static func encode(_ key: P256.PrivateKey) -> [UInt8] {
        var writer = DERWriter()
        writer.writeSequence { (sequence: inout DERWriter) in
            sequence.writeInteger(1)
            sequence.writeOctetString(key.rawScalar)
            sequence.writeExplicit(0) { (parameters: inout DERWriter) in parameters.writeObjectIdentifier(.prime256v1) }
            sequence.writeExplicit(1) { (publicKey: inout DERWriter) in publicKey.writeBitString(key.publicKey.x962Representation) }
        }
        return writer.bytes
    }

    /// Either form, P-256 only; nil for anything else. When the public key is
    /// present it must be the private key's own.
    package static func decode(_ der: [UInt8]) -> P256.PrivateKey? {
        try? decodeThrowing(der)
    }

    private static func decodeThrowing(_ der: [UInt8]) throws(DERError) -> P256.PrivateKey? {
        var outer = DERReader(der)
        var sequence = try outer.readSequence()
        try outer.finish()
        let version = try sequence.readSmallInteger()
        if version == 0 {
            // PKCS #8: version 0, AlgorithmIdentifier { id-ecPublicKey, prime256v1 }, OCTET STRING { ECPrivateKey }.
            var algorithm = try sequence.readSequence()
            guard try algorithm.readObjectIdentifier() == .ecPublicKey, try algorithm.readObjectIdentifier() == .prime256v1 else {
                return nil
            }
            try algorithm.finish()
            let inner = Array(try sequence.readOctetString())
            return try decodeThrowing(inner)
        }
        guard version == 1 else { return nil }
        let scalar = Array(try sequence.readOctetString())
        if var parameters = try sequence.readOptionalExplicit(0) {
            guard try parameters.readObjectIdentifier() == .prime256v1 else { return nil }
            try parameters.finish()
        }
        guard let key = P256.PrivateKey(rawScalar: scalar) else { return nil }
        if var publicKey = try sequence.readOptionalExplicit(1) {
            let bits = try publicKey.readBitString()
            try publicKey.finish()
            guard bits.unusedBits == 0, Array(bits.bytes) == key.publicKey.x962Representation else { return nil }
        }
        return key
    }
}
