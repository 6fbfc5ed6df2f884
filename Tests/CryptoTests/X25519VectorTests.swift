import Testing
@testable import Crypto

/// Published vectors of RFC 7748: §5.2 (function and iterated) and §6.1
/// (Diffie-Hellman). All strings are little-endian, as printed in the RFC.
@Suite struct X25519VectorTests {
    @Test("RFC 7748 §5.2 single-shot vectors", arguments: [
        (
            scalar: "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
            u: "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
            output: "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"
        ),
        (
            // The printed u-coordinate ends in 0x93: its top bit is set and must be ignored (§5).
            scalar: "4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
            u: "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
            output: "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957"
        ),
    ])
    func singleShot(scalar: String, u: String, output: String) throws {
        let secret = try #require(X25519.sharedSecret(privateKey: bytes(hex: scalar), peerPublicKey: bytes(hex: u)))
        #expect(secret == bytes(hex: output))
    }

    /// §5.2 iterated test: k = u = 9, then repeatedly u ← k, k ← X25519(k, old u).
    private func iterate(_ iterations: Int) -> [UInt8]? {
        var k: [UInt8] = [9] + [UInt8](repeating: 0, count: 31)
        var u = k
        for _ in 0 ..< iterations {
            guard let result = X25519.sharedSecret(privateKey: k, peerPublicKey: u) else { return nil }
            u = k
            k = result
        }
        return k
    }

    @Test("RFC 7748 §5.2 iterated vector, 1 iteration")
    func iteratedOnce() {
        #expect(iterate(1) == bytes(hex: "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079"))
    }

    @Test("RFC 7748 §5.2 iterated vector, 1,000 iterations")
    func iteratedThousand() {
        #expect(iterate(1000) == bytes(hex: "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51"))
    }

    // The 1,000,000-iteration vector (7c3911e0...4f665424) is checked by the
    // release-built benchmark executable (`swift run -c release X25519Benchmark
    // --million`), not here: it takes about a minute even optimized.

    private let alicePrivate = bytes(hex: "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    private let alicePublic = bytes(hex: "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
    private let bobPrivate = bytes(hex: "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
    private let bobPublic = bytes(hex: "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
    private let shared = bytes(hex: "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")

    @Test("RFC 7748 §6.1 public keys")
    func diffieHellmanPublicKeys() {
        #expect(X25519.publicKey(privateKey: alicePrivate) == alicePublic)
        #expect(X25519.publicKey(privateKey: bobPrivate) == bobPublic)
    }

    @Test("RFC 7748 §6.1 shared secret, both directions")
    func diffieHellmanSharedSecret() {
        #expect(X25519.sharedSecret(privateKey: alicePrivate, peerPublicKey: bobPublic) == shared)
        #expect(X25519.sharedSecret(privateKey: bobPrivate, peerPublicKey: alicePublic) == shared)
    }

    @Test("public key equals X25519(k, 9)")
    func publicKeyIsBasePointMultiple() {
        let nine: [UInt8] = [9] + [UInt8](repeating: 0, count: 31)
        #expect(X25519.publicKey(privateKey: alicePrivate) == X25519.sharedSecret(privateKey: alicePrivate, peerPublicKey: nine))
    }

    @Test("key size constant")
    func keySize() {
        #expect(X25519.keySize == 32)
    }
}
