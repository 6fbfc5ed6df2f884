internal import Crypto

/// TLS 1.2's secrets (RFC 5246 §5, §6.3, §7.4.9, §8.1; RFC 7627), for the
/// client Sluice speaks to servers that have no TLS 1.3. Every TLS 1.2 suite
/// Sluice offers hashes with SHA-256, so the PRF is P_SHA256 alone.
package enum TLS12KeyDerivation {
    /// §5: PRF(secret, label, seed) = P_SHA256(secret, label + seed), cut to `count` bytes.
    package static func prf(secret: [UInt8], label: String, seed: [UInt8], count: Int) -> [UInt8] {
        let labelAndSeed = Array(label.utf8) + seed
        var output: [UInt8] = []
        output.reserveCapacity(count + SHA256.digestSize)
        // A(0) = seed; A(i) = HMAC(secret, A(i-1)); each block is HMAC(secret, A(i) + seed).
        var a = labelAndSeed
        while output.count < count {
            a = HMAC<SHA256>.authenticationCode(key: secret, message: a)
            output += HMAC<SHA256>.authenticationCode(key: secret, message: a + labelAndSeed)
        }
        return Array(output.prefix(count))
    }

    /// §8.1: the master secret without the extended_master_secret extension.
    package static func masterSecret(preMasterSecret: [UInt8], clientRandom: [UInt8], serverRandom: [UInt8]) -> [UInt8] {
        prf(secret: preMasterSecret, label: "master secret", seed: clientRandom + serverRandom, count: 48)
    }

    /// RFC 7627 §4: bound to the handshake so far (the hash of every message
    /// up to and including ClientKeyExchange), so a man in the middle cannot
    /// make two sessions share it.
    package static func extendedMasterSecret(preMasterSecret: [UInt8], sessionHash: [UInt8]) -> [UInt8] {
        prf(secret: preMasterSecret, label: "extended master secret", seed: sessionHash, count: 48)
    }

    /// §6.3: the key block, in the order client key, server key, client IV, server IV
    /// (AEAD suites have no MAC keys).
    package static func keyBlock(masterSecret: [UInt8], clientRandom: [UInt8], serverRandom: [UInt8], keySize: Int, ivSize: Int)
        -> (clientKey: [UInt8], serverKey: [UInt8], clientIV: [UInt8], serverIV: [UInt8])
    {
        let block = prf(secret: masterSecret, label: "key expansion", seed: serverRandom + clientRandom, count: 2 * (keySize + ivSize))
        var offset = 0
        func take(_ n: Int) -> [UInt8] {
            defer { offset += n }
            return Array(block[offset ..< offset + n])
        }
        return (take(keySize), take(keySize), take(ivSize), take(ivSize))
    }

    /// §7.4.9: Finished's 12 bytes; `label` is "client finished" or "server finished".
    package static func verifyData(masterSecret: [UInt8], label: String, transcriptHash: [UInt8]) -> [UInt8] {
        prf(secret: masterSecret, label: label, seed: transcriptHash, count: 12)
    }
}
