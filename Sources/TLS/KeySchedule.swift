package import Crypto

/// TLS 1.3's key schedule (RFC 8446 §7.1) without pre-shared keys: Sluice
/// neither resumes nor accepts early data, so the early secret is always
/// HKDF-Extract(0, 0). Secrets flow one way, early → handshake → master; each
/// traffic secret comes from one of them and a transcript hash.
package enum KeySchedule<Hash: HashFunction> {
    /// Derive-Secret(Secret, Label, Messages) = HKDF-Expand-Label(Secret, Label, Transcript-Hash(Messages), Hash.length).
    package static func deriveSecret(_ secret: [UInt8], label: String, transcriptHash: [UInt8]) -> [UInt8] {
        HKDF<Hash>.expandLabel(secret: secret, label: label, context: transcriptHash, length: Hash.digestSize)
    }

    package static var earlySecret: [UInt8] {
        HKDF<Hash>.extract(salt: [UInt8](repeating: 0, count: Hash.digestSize),
                           inputKeyingMaterial: [UInt8](repeating: 0, count: Hash.digestSize))
    }

    /// The (EC)DHE shared secret enters here.
    package static func handshakeSecret(sharedSecret: [UInt8]) -> [UInt8] {
        let salt = deriveSecret(earlySecret, label: "derived", transcriptHash: Hash.hash([]))
        return HKDF<Hash>.extract(salt: salt, inputKeyingMaterial: sharedSecret)
    }

    package static func masterSecret(handshakeSecret: [UInt8]) -> [UInt8] {
        let salt = deriveSecret(handshakeSecret, label: "derived", transcriptHash: Hash.hash([]))
        return HKDF<Hash>.extract(salt: salt, inputKeyingMaterial: [UInt8](repeating: 0, count: Hash.digestSize))
    }

    /// §7.3: a traffic secret's write key and IV.
    package static func trafficKeys(secret: [UInt8], keySize: Int) -> (key: [UInt8], iv: [UInt8]) {
        (HKDF<Hash>.expandLabel(secret: secret, label: "key", length: keySize),
         HKDF<Hash>.expandLabel(secret: secret, label: "iv", length: 12))
    }

    /// §4.4.4: verify_data = HMAC(finished_key, Transcript-Hash(...)).
    package static func finishedVerifyData(baseKey: [UInt8], transcriptHash: [UInt8]) -> [UInt8] {
        let finishedKey = HKDF<Hash>.expandLabel(secret: baseKey, label: "finished", length: Hash.digestSize)
        return HMAC<Hash>.authenticationCode(key: finishedKey, message: transcriptHash)
    }

    /// §7.2: application_traffic_secret_N+1 after a KeyUpdate.
    package static func nextApplicationSecret(_ secret: [UInt8]) -> [UInt8] {
        HKDF<Hash>.expandLabel(secret: secret, label: "traffic upd", length: Hash.digestSize)
    }
}

/// The handshake messages so far (§4.4.1), kept whole so each secret can hash
/// the transcript at its point. A handshake is a few kilobytes, hashed about
/// five times; a running hash would save little and need hash states.
package struct Transcript {
    package private(set) var bytes: [UInt8] = []

    package init() {}

    package mutating func append(_ message: [UInt8]) { bytes += message }

    package func hash<Hash: HashFunction>(_: Hash.Type) -> [UInt8] { Hash.hash(bytes) }

    /// §4.4.1: after a HelloRetryRequest, ClientHello1 is replaced by
    /// message_hash(254) || 00 00 Hash.length || Hash(ClientHello1).
    package mutating func replaceWithMessageHash<Hash: HashFunction>(_: Hash.Type) {
        let digest = Hash.hash(bytes)
        bytes = [HandshakeType.messageHash.rawValue, 0, 0, UInt8(truncatingIfNeeded: digest.count)] + digest
    }
}
