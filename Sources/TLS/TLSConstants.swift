/// The code points Sluice speaks (RFC 8446 §B.1-§B.4, RFC 7301 for ALPN).
/// Values it does not know stay representable (`rawValue`), since a peer's
/// lists hold many; only what is chosen must be known.

/// §5.1: the record's outer type.
package enum ContentType: UInt8, Sendable, CustomStringConvertible {
    case changeCipherSpec = 20
    case alert = 21
    case handshake = 22
    case applicationData = 23

    package var description: String {
        switch self {
        case .changeCipherSpec: "change_cipher_spec"
        case .alert: "alert"
        case .handshake: "handshake"
        case .applicationData: "application_data"
        }
    }
}

/// §4: the first byte of each handshake message, with TLS 1.2's own
/// (RFC 5246 §7.4) for the client's TLS 1.2 handshake.
package enum HandshakeType: UInt8, Sendable, CustomStringConvertible {
    /// RFC 5246 §7.4.1.1: a TLS 1.2 server asking to renegotiate.
    case helloRequest = 0
    case clientHello = 1
    case serverHello = 2
    case newSessionTicket = 4
    case endOfEarlyData = 5
    case encryptedExtensions = 8
    case certificate = 11
    /// RFC 5246 §7.4.3.
    case serverKeyExchange = 12
    case certificateRequest = 13
    /// RFC 5246 §7.4.5.
    case serverHelloDone = 14
    case certificateVerify = 15
    /// RFC 5246 §7.4.7.
    case clientKeyExchange = 16
    case finished = 20
    case keyUpdate = 24
    /// §4.4.1: stands for the first ClientHello after a HelloRetryRequest.
    case messageHash = 254

    package var description: String {
        switch self {
        case .helloRequest: "HelloRequest"
        case .clientHello: "ClientHello"
        case .serverHello: "ServerHello"
        case .newSessionTicket: "NewSessionTicket"
        case .endOfEarlyData: "EndOfEarlyData"
        case .encryptedExtensions: "EncryptedExtensions"
        case .certificate: "Certificate"
        case .serverKeyExchange: "ServerKeyExchange"
        case .certificateRequest: "CertificateRequest"
        case .serverHelloDone: "ServerHelloDone"
        case .certificateVerify: "CertificateVerify"
        case .clientKeyExchange: "ClientKeyExchange"
        case .finished: "Finished"
        case .keyUpdate: "KeyUpdate"
        case .messageHash: "message_hash"
        }
    }
}

/// §4.2 and RFC 7301.
package struct ExtensionType: RawRepresentable, Hashable, Sendable {
    package var rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }

    package static let serverName = ExtensionType(rawValue: 0)
    package static let supportedGroups = ExtensionType(rawValue: 10)
    /// RFC 8422 §5.1.2 (TLS 1.2 only).
    package static let ecPointFormats = ExtensionType(rawValue: 11)
    package static let signatureAlgorithms = ExtensionType(rawValue: 13)
    package static let applicationLayerProtocolNegotiation = ExtensionType(rawValue: 16)
    /// RFC 7627 (TLS 1.2 only).
    package static let extendedMasterSecret = ExtensionType(rawValue: 23)
    package static let preSharedKey = ExtensionType(rawValue: 41)
    package static let earlyData = ExtensionType(rawValue: 42)
    package static let supportedVersions = ExtensionType(rawValue: 43)
    package static let cookie = ExtensionType(rawValue: 44)
    package static let pskKeyExchangeModes = ExtensionType(rawValue: 45)
    package static let signatureAlgorithmsCert = ExtensionType(rawValue: 50)
    package static let keyShare = ExtensionType(rawValue: 51)
    /// RFC 5746 (TLS 1.2 only).
    package static let renegotiationInfo = ExtensionType(rawValue: 0xFF01)
}

/// §B.4. Sluice's AES is AES-128 only, so TLS_AES_256_GCM_SHA384 is not offered.
package enum CipherSuite: UInt16, Sendable, CaseIterable, CustomStringConvertible {
    case aes128GCMSHA256 = 0x1301
    case chacha20Poly1305SHA256 = 0x1303

    package var description: String {
        switch self {
        case .aes128GCMSHA256: "TLS_AES_128_GCM_SHA256"
        case .chacha20Poly1305SHA256: "TLS_CHACHA20_POLY1305_SHA256"
        }
    }

    /// Both suites here use a 12-byte nonce (§5.3) and a 16-byte tag.
    package var keySize: Int {
        switch self {
        case .aes128GCMSHA256: 16
        case .chacha20Poly1305SHA256: 32
        }
    }
}

/// §4.2.7: groups for key exchange. Sluice does X25519 and P-256 (and knows the rest by number).
package struct NamedGroup: RawRepresentable, Hashable, Sendable {
    package var rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }

    package static let secp256r1 = NamedGroup(rawValue: 0x0017)
    package static let secp384r1 = NamedGroup(rawValue: 0x0018)
    package static let x25519 = NamedGroup(rawValue: 0x001D)
}

/// §4.2.3: how a CertificateVerify (and a certificate) is signed.
package struct SignatureScheme: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package var rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }

    package static let ecdsaSecp256r1SHA256 = SignatureScheme(rawValue: 0x0403)
    package static let ecdsaSecp384r1SHA384 = SignatureScheme(rawValue: 0x0503)
    package static let rsaPSSRSAESHA256 = SignatureScheme(rawValue: 0x0804)
    package static let rsaPSSRSAESHA384 = SignatureScheme(rawValue: 0x0805)
    package static let rsaPSSRSAESHA512 = SignatureScheme(rawValue: 0x0806)
    package static let rsaPKCS1SHA256 = SignatureScheme(rawValue: 0x0401)
    package static let rsaPKCS1SHA384 = SignatureScheme(rawValue: 0x0501)
    package static let rsaPKCS1SHA512 = SignatureScheme(rawValue: 0x0601)

    package var description: String {
        switch self {
        case .ecdsaSecp256r1SHA256: "ecdsa_secp256r1_sha256"
        case .ecdsaSecp384r1SHA384: "ecdsa_secp384r1_sha384"
        case .rsaPSSRSAESHA256: "rsa_pss_rsae_sha256"
        case .rsaPSSRSAESHA384: "rsa_pss_rsae_sha384"
        case .rsaPSSRSAESHA512: "rsa_pss_rsae_sha512"
        case .rsaPKCS1SHA256: "rsa_pkcs1_sha256"
        case .rsaPKCS1SHA384: "rsa_pkcs1_sha384"
        case .rsaPKCS1SHA512: "rsa_pkcs1_sha512"
        default: "0x" + String(rawValue, radix: 16)
        }
    }
}

/// §4.2.1: TLS 1.3, and TLS 1.2 (the legacy field's value, and what Sluice's client falls back to).
package enum ProtocolVersion {
    package static let tls13: UInt16 = 0x0304
    package static let tls12: UInt16 = 0x0303
}
