/// The hash functions RSASSA-PSS parameters may name (RFC 4055 §2.1).
package enum HashAlgorithm: Equatable, Sendable {
    case sha1, sha256, sha384, sha512

    /// From a hash `AlgorithmIdentifier`'s contents; parameters must be NULL
    /// or absent (RFC 4055 §2.1 allows both). Nil for another hash.
    init?(algorithmIdentifier content: ArraySlice<UInt8>) throws(CertificateError) {
        var reader = DERReader(content)
        let identifier = try parsing("hash algorithm") { try reader.readObjectIdentifier() }
        if !reader.isAtEnd { try parsing("hash algorithm parameters") { try reader.readNull() } }
        try parsing("hash algorithm") { try reader.finish() }
        switch identifier {
        case .sha1: self = .sha1
        case .sha256: self = .sha256
        case .sha384: self = .sha384
        case .sha512: self = .sha512
        default: return nil
        }
    }
}

/// RSASSA-PSS-params (RFC 4055 §3.1) with the only mask generation function
/// defined, MGF1, and trailerField 1 (the only value allowed).
package struct RSASSAPSSParameters: Equatable, Sendable {
    package let hashAlgorithm: HashAlgorithm
    package let maskGenerationHashAlgorithm: HashAlgorithm
    package let saltLength: Int
}

/// A certificate's `signatureAlgorithm` (RFC 5280 §4.1.1.2) with parameters
/// checked as the defining RFC says: absent for ECDSA (RFC 5758 §3.2) and
/// Ed25519 (RFC 8410 §3), NULL for PKCS #1 v1.5 (RFC 4055 §5; absent is
/// tolerated), RSASSA-PSS-params for PSS. Anything else is `.unknown` with its
/// OID and parameters unchecked, for the caller to reject.
package enum SignatureAlgorithm: Equatable, Sendable {
    case ecdsaWithSHA256, ecdsaWithSHA384, ecdsaWithSHA512
    case sha256WithRSAEncryption, sha384WithRSAEncryption, sha512WithRSAEncryption
    case rsassaPSS(RSASSAPSSParameters)
    case ed25519
    case unknown(ASN1ObjectIdentifier)

    /// From the contents of an `AlgorithmIdentifier` SEQUENCE.
    init(algorithmIdentifier content: ArraySlice<UInt8>) throws(CertificateError) {
        var reader = DERReader(content)
        let identifier = try parsing("signatureAlgorithm") { try reader.readObjectIdentifier() }
        let parameters = try parsing("signatureAlgorithm: parameters") {
            reader.isAtEnd ? nil : try reader.readElement()
        }
        try parsing("signatureAlgorithm") { try reader.finish() }

        func requireAbsent() throws(CertificateError) {
            guard parameters == nil else { throw .malformed("signatureAlgorithm: parameters must be absent") }
        }
        func requireNullOrAbsent() throws(CertificateError) {
            guard let parameters else { return }
            guard parameters.tag == .null, parameters.content.isEmpty else {
                throw .malformed("signatureAlgorithm: parameters must be NULL")
            }
        }
        switch identifier {
        case .ecdsaWithSHA256: try requireAbsent(); self = .ecdsaWithSHA256
        case .ecdsaWithSHA384: try requireAbsent(); self = .ecdsaWithSHA384
        case .ecdsaWithSHA512: try requireAbsent(); self = .ecdsaWithSHA512
        case .ed25519: try requireAbsent(); self = .ed25519
        case .sha256WithRSAEncryption: try requireNullOrAbsent(); self = .sha256WithRSAEncryption
        case .sha384WithRSAEncryption: try requireNullOrAbsent(); self = .sha384WithRSAEncryption
        case .sha512WithRSAEncryption: try requireNullOrAbsent(); self = .sha512WithRSAEncryption
        case .rsassaPSS:
            guard let parameters, parameters.tag == .sequence else {
                throw .malformed("signatureAlgorithm: RSASSA-PSS-params missing")
            }
            self = .rsassaPSS(try Self.pssParameters(parameters.content))
        default:
            self = .unknown(identifier)
        }
    }

    /// RSASSA-PSS-params ::= SEQUENCE { hashAlgorithm [0] DEFAULT sha1,
    /// maskGenAlgorithm [1] DEFAULT mgf1SHA1, saltLength [2] DEFAULT 20,
    /// trailerField [3] DEFAULT trailerFieldBC(1) }, all EXPLICIT.
    private static func pssParameters(_ content: ArraySlice<UInt8>) throws(CertificateError) -> RSASSAPSSParameters {
        var reader = DERReader(content)
        var hash = HashAlgorithm.sha1
        var maskHash = HashAlgorithm.sha1
        var saltLength = 20
        if var field = try parsing("RSASSA-PSS hashAlgorithm", { try reader.readOptionalExplicit(0) }) {
            let identifier = try parsing("RSASSA-PSS hashAlgorithm") { try field.readSequence() }
            try parsing("RSASSA-PSS hashAlgorithm") { try field.finish() }
            guard let named = try HashAlgorithm(algorithmIdentifier: identifier.remainingContent) else {
                throw .malformed("RSASSA-PSS hashAlgorithm: unsupported hash")
            }
            hash = named
        }
        if var field = try parsing("RSASSA-PSS maskGenAlgorithm", { try reader.readOptionalExplicit(1) }) {
            var mask = try parsing("RSASSA-PSS maskGenAlgorithm") { try field.readSequence() }
            try parsing("RSASSA-PSS maskGenAlgorithm") { try field.finish() }
            let function = try parsing("RSASSA-PSS maskGenAlgorithm") { try mask.readObjectIdentifier() }
            guard function == .mgf1 else { throw .malformed("RSASSA-PSS maskGenAlgorithm: not MGF1") }
            let inner = try parsing("RSASSA-PSS MGF1 hash") { try mask.readSequence() }
            try parsing("RSASSA-PSS maskGenAlgorithm") { try mask.finish() }
            guard let named = try HashAlgorithm(algorithmIdentifier: inner.remainingContent) else {
                throw .malformed("RSASSA-PSS MGF1 hash: unsupported hash")
            }
            maskHash = named
        }
        if var field = try parsing("RSASSA-PSS saltLength", { try reader.readOptionalExplicit(2) }) {
            saltLength = try parsing("RSASSA-PSS saltLength") { try field.readSmallInteger() }
            try parsing("RSASSA-PSS saltLength") { try field.finish() }
        }
        if var field = try parsing("RSASSA-PSS trailerField", { try reader.readOptionalExplicit(3) }) {
            let trailer = try parsing("RSASSA-PSS trailerField") { try field.readSmallInteger() }
            try parsing("RSASSA-PSS trailerField") { try field.finish() }
            guard trailer == 1 else { throw .malformed("RSASSA-PSS trailerField: not 1") }
        }
        try parsing("RSASSA-PSS-params") { try reader.finish() }
        return RSASSAPSSParameters(hashAlgorithm: hash, maskGenerationHashAlgorithm: maskHash, saltLength: saltLength)
    }
}
