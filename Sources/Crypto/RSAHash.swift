/// The hash functions RSA signatures are used with in TLS 1.3 (RFC 8446
/// §4.2.3: rsa_pkcs1_sha256/384/512 in certificates, rsa_pss_rsae_sha256/384/512
/// in CertificateVerify) and in the X.509 chains they verify.
package enum RSAHash: Sendable {
    case sha256, sha384, sha512

    /// hLen in RFC 8017's notation.
    var digestSize: Int {
        switch self {
        case .sha256: SHA256.digestSize
        case .sha384: SHA384.digestSize
        case .sha512: SHA512.digestSize
        }
    }

    func hash(_ bytes: [UInt8]) -> [UInt8] {
        switch self {
        case .sha256: SHA256.hash(bytes)
        case .sha384: SHA384.hash(bytes)
        case .sha512: SHA512.hash(bytes)
        }
    }
}
