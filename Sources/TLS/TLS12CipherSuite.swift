/// The TLS 1.2 suites Sluice's client offers (RFC 5289 §3.2, RFC 7905 §2):
/// ephemeral ECDH with the two AEADs TLS 1.3 uses here, each hashing with
/// SHA-256. No AES-256 (Sluice's AES is AES-128 only), no CBC, no static RSA
/// key exchange: a server that has nothing else fails with handshake_failure.
package enum TLS12CipherSuite: UInt16, Sendable, CaseIterable, CustomStringConvertible {
    case ecdheECDSAWithChaCha20Poly1305SHA256 = 0xCCA9
    case ecdheRSAWithChaCha20Poly1305SHA256 = 0xCCA8
    case ecdheECDSAWithAES128GCMSHA256 = 0xC02B
    case ecdheRSAWithAES128GCMSHA256 = 0xC02F

    /// Most preferred first: ChaCha20 is several times faster than software AES here.
    package static let preference: [TLS12CipherSuite] = allCases

    /// The TLS 1.3 suite with the same AEAD and hash, which names the record cipher.
    package var aead: CipherSuite {
        switch self {
        case .ecdheECDSAWithChaCha20Poly1305SHA256, .ecdheRSAWithChaCha20Poly1305SHA256: .chacha20Poly1305SHA256
        case .ecdheECDSAWithAES128GCMSHA256, .ecdheRSAWithAES128GCMSHA256: .aes128GCMSHA256
        }
    }

    /// Whether the server's certificate key must be ECDSA (else RSA) to sign its ServerKeyExchange.
    package var signsWithECDSA: Bool {
        switch self {
        case .ecdheECDSAWithChaCha20Poly1305SHA256, .ecdheECDSAWithAES128GCMSHA256: true
        case .ecdheRSAWithChaCha20Poly1305SHA256, .ecdheRSAWithAES128GCMSHA256: false
        }
    }

    /// §6.3: the fixed part of the nonce: GCM's 4-byte salt (RFC 5288 §3), ChaCha20's whole 12 bytes (RFC 7905 §2).
    package var fixedIVSize: Int {
        switch aead {
        case .aes128GCMSHA256: 4
        case .chacha20Poly1305SHA256: 12
        }
    }

    package var description: String {
        switch self {
        case .ecdheECDSAWithChaCha20Poly1305SHA256: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
        case .ecdheRSAWithChaCha20Poly1305SHA256: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
        case .ecdheECDSAWithAES128GCMSHA256: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
        case .ecdheRSAWithAES128GCMSHA256: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
        }
    }
}
