/// The named curves of RFC 5480 §2.1.1.1.
package enum NamedCurve: Equatable, Sendable {
    case p256, p384, p521
    case other(ASN1ObjectIdentifier)
}

/// `RSAKeyComponents ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }`
/// (RFC 8017 §A.1.1), with both checked positive.
package struct RSAKeyComponents: Equatable, Sendable {
    /// The RSAKeyComponents DER, as it appears in the subjectPublicKey BIT STRING.
    package let derRepresentation: [UInt8]
    /// Unsigned big-endian, without the sign octet.
    package let modulus: [UInt8]
    package let publicExponent: [UInt8]

    package init(derRepresentation: [UInt8]) throws(CertificateError) {
        self.derRepresentation = derRepresentation
        var outer = DERReader(derRepresentation)
        var key = try parsing("RSAKeyComponents") { try outer.readSequence() }
        try parsing("RSAKeyComponents") { try outer.finish() }
        let modulus = try parsing("RSAKeyComponents: modulus") { try key.readInteger() }
        let exponent = try parsing("RSAKeyComponents: publicExponent") { try key.readInteger() }
        try parsing("RSAKeyComponents") { try key.finish() }
        func positive(_ value: ArraySlice<UInt8>, _ name: String) throws(CertificateError) -> [UInt8] {
            guard let first = value.first, first & 0x80 == 0 else { throw .malformed("RSAKeyComponents: \(name) negative") }
            let magnitude = Array(value.drop { $0 == 0 })
            guard !magnitude.isEmpty else { throw .malformed("RSAKeyComponents: \(name) is zero") }
            return magnitude
        }
        self.modulus = try positive(modulus, "modulus")
        publicExponent = try positive(exponent, "publicExponent")
    }
}

/// The subject's key as its algorithm defines it.
package enum PublicKey: Equatable, Sendable {
    /// id-ecPublicKey with a namedCurve (RFC 5480 §2.1.1; implicitCurve and
    /// specifiedCurve are refused as that section requires). The point is the
    /// X9.62 octet string, not checked here.
    case ecPublicKey(curve: NamedCurve, point: [UInt8])
    /// rsaEncryption, parameters NULL (RFC 3279 §2.3.1; absent tolerated).
    case rsaEncryption(RSAKeyComponents)
    /// id-Ed25519, 32 octets (RFC 8410 §4).
    case ed25519([UInt8])
    /// Any other algorithm, parameters unchecked.
    case other(algorithm: ASN1ObjectIdentifier, subjectPublicKey: [UInt8])
}

/// `SubjectPublicKeyInfo` (RFC 5280 §4.1.2.7). The subjectPublicKey BIT
/// STRING must have no unused bits, as every algorithm here defines.
package struct SubjectPublicKeyInfo: Equatable, Sendable {
    /// The whole SEQUENCE, e.g. for hashing into key identifiers or pinning.
    package let derRepresentation: [UInt8]
    package let publicKey: PublicKey

    init(element: DERElement) throws(CertificateError) {
        derRepresentation = Array(element.encoded)
        var info = DERReader(element.content)
        var algorithm = try parsing("subjectPublicKeyInfo: algorithm") { try info.readSequence() }
        let key = try parsing("subjectPublicKeyInfo: subjectPublicKey") { try info.readBitString() }
        try parsing("subjectPublicKeyInfo") { try info.finish() }
        guard key.unusedBits == 0 else { throw .malformed("subjectPublicKeyInfo: subjectPublicKey unused bits") }
        let keyBytes = Array(key.bytes)

        let identifier = try parsing("subjectPublicKeyInfo: algorithm") { try algorithm.readObjectIdentifier() }
        switch identifier {
        case .ecPublicKey:
            let curveIdentifier = try parsing("subjectPublicKeyInfo: namedCurve") {
                try algorithm.readObjectIdentifier()
            }
            try parsing("subjectPublicKeyInfo: algorithm") { try algorithm.finish() }
            let curve: NamedCurve =
                switch curveIdentifier {
                case .prime256v1: .p256
                case .secp384r1: .p384
                case .secp521r1: .p521
                default: .other(curveIdentifier)
                }
            publicKey = .ecPublicKey(curve: curve, point: keyBytes)
        case .rsaEncryption:
            if !algorithm.isAtEnd { try parsing("subjectPublicKeyInfo: parameters") { try algorithm.readNull() } }
            try parsing("subjectPublicKeyInfo: algorithm") { try algorithm.finish() }
            publicKey = .rsaEncryption(try RSAKeyComponents(derRepresentation: keyBytes))
        case .ed25519:
            try parsing("subjectPublicKeyInfo: Ed25519 parameters") { try algorithm.finish() }
            guard keyBytes.count == 32 else { throw .malformed("subjectPublicKeyInfo: Ed25519 key not 32 octets") }
            publicKey = .ed25519(keyBytes)
        default:
            publicKey = .other(algorithm: identifier, subjectPublicKey: keyBytes)
        }
    }

    /// The SPKI for an uncompressed P-256 point (X9.62 §4.3.6: 0x04, x, y),
    /// with id-ecPublicKey and prime256v1 (RFC 5480 §2). Nil unless the point
    /// is 65 octets starting with 0x04.
    package init?(p256UncompressedPoint point: [UInt8]) {
        guard point.count == 65, point.first == 0x04 else { return nil }
        var writer = DERWriter()
        writer.writeSequence { info in
            info.writeSequence { algorithm in
                algorithm.writeObjectIdentifier(.ecPublicKey)
                algorithm.writeObjectIdentifier(.prime256v1)
            }
            info.writeBitString(point)
        }
        derRepresentation = writer.bytes
        publicKey = .ecPublicKey(curve: .p256, point: point)
    }
}
