import Crypto

/// Sluice's half of an ephemeral key exchange in one named group: the key,
/// the share it sends (RFC 8446 §4.2.8.2's KeyShareEntry, RFC 8422 §5.7's
/// ECPoint: the same bytes), and the shared secret from the peer's share
/// (X25519's 32 bytes, or the NIST curves' x-coordinate, RFC 8446 §7.4).
enum KeyAgreement {
    case x25519(privateKey: [UInt8])
    case p256(P256.PrivateKey)
    case p384(P384.PrivateKey)

    /// The groups Sluice can agree in, most preferred first.
    static let groups: [NamedGroup] = [.x25519, .secp256r1, .secp384r1]

    /// A fresh key in `group`; nil for a group Sluice cannot use.
    init?(group: NamedGroup, randomBytes: (Int) -> [UInt8]) {
        switch group {
        case .x25519:
            self = .x25519(privateKey: randomBytes(32))
        case .secp256r1:
            guard let key = P256.PrivateKey(randomBytes: randomBytes(48)) else { return nil }
            self = .p256(key)
        case .secp384r1:
            guard let key = P384.PrivateKey(randomBytes: randomBytes(56)) else { return nil }
            self = .p384(key)
        default:
            return nil
        }
    }

    var group: NamedGroup {
        switch self {
        case .x25519: .x25519
        case .p256: .secp256r1
        case .p384: .secp384r1
        }
    }

    var publicShare: [UInt8] {
        switch self {
        case .x25519(let privateKey): X25519.publicKey(privateKey: privateKey) ?? []
        case .p256(let key): key.publicKey.x962Representation
        case .p384(let key): key.publicKey.x962Representation
        }
    }

    /// Nil when the peer's share is not a valid key of the group (a point off
    /// the curve, the wrong size) or X25519's result is all zeros (RFC 7748 §6.1).
    func sharedSecret(peerShare: [UInt8]) -> [UInt8]? {
        switch self {
        case .x25519(let privateKey):
            return X25519.sharedSecret(privateKey: privateKey, peerPublicKey: peerShare)
        case .p256(let key):
            guard let peer = P256.PublicKey(x962Representation: peerShare) else { return nil }
            return key.sharedSecret(with: peer)
        case .p384(let key):
            guard let peer = P384.PublicKey(x962Representation: peerShare) else { return nil }
            return key.sharedSecret(with: peer)
        }
    }
}
