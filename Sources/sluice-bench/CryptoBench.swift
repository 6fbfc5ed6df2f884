// What HTTPS interception will cost per connection and per byte: each
// primitive of a TLS 1.3 handshake, a whole handshake between Sluice's client
// and server in memory, and record protection per 16 KiB. Before timing
// anything, known answers from the RFCs are checked in this (release) build:
// the optimiser once miscompiled the P-256 code in release only (docs/tls.md),
// which the debug-built unit tests cannot see. `--check` stops after them.
import Crypto
import Sys
import TLS
import X509

private func hexBytes(_ text: String) -> [UInt8] {
    let digits = text.unicodeScalars.compactMap { UInt8(String($0), radix: 16) }
    return stride(from: 0, to: digits.count - 1, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
}

/// As `sluice` does at start (Engine's `CPUAcceleration`): AVX2's ChaCha20 and Poly1305 when the CPU has it.
func enableCryptoAcceleration() {
    CryptoAcceleration.avx2 = CryptoAcceleration.usable(onCPUWithAVX2: CPUFeatures.current().avx2)
}

/// RFC 7748 §6.1, RFC 6979 A.2.5 ("sample", SHA-256), RFC 8439 §2.8.2's tag,
/// the GCM specification's test case 2; one line each, and false if any differs.
func checkCryptoKnownAnswers() -> Bool {
    var ok = true
    func check(_ name: String, _ passed: Bool) {
        print("  \(passed ? "ok  " : "FAIL") \(name)")
        ok = ok && passed
    }
    let shared = X25519.sharedSecret(privateKey: hexBytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"),
                                     peerPublicKey: hexBytes("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"))
    check("X25519, RFC 7748 §6.1", shared == hexBytes("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"))
    if let key = P256.PrivateKey(rawScalar: hexBytes("C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721")) {
        let signature = key.signature(forDigest: SHA256.hash(Array("sample".utf8)))
        check("P-256 signing, RFC 6979 A.2.5",
              signature == ECDSASignature(r: hexBytes("EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716"),
                                          s: hexBytes("F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8")))
        check("P-256 verification of it", key.publicKey.isValidSignature(signature, forDigest: SHA256.hash(Array("sample".utf8))))
    } else {
        check("P-256 key, RFC 6979 A.2.5", false)
    }
    let sealed = ChaCha20Poly1305.seal(
        key: hexBytes("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"), nonce: hexBytes("070000004041424344454647"),
        plaintext: Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8),
        additionalData: hexBytes("50515253c0c1c2c3c4c5c6c7"))
    check("ChaCha20-Poly1305, RFC 8439 §2.8.2", sealed?.tag == hexBytes("1ae10b594f09e26a7e902ecbd0600691"))
    if CryptoAcceleration.avx2 {
        // The AVX2 paths start at 512 bytes (ChaCha20) and 256 (Poly1305), past the RFC's message: they must give the SSE2 paths' bytes.
        let key = hexBytes("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
        let nonce = hexBytes("070000004041424344454647")
        let message = (0 ..< 4133).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let eight = ChaCha20Poly1305.seal(key: key, nonce: nonce, plaintext: message, additionalData: [])
        CryptoAcceleration.avx2 = false
        let four = ChaCha20Poly1305.seal(key: key, nonce: nonce, plaintext: message, additionalData: [])
        CryptoAcceleration.avx2 = true
        check("ChaCha20-Poly1305 in AVX2 as in SSE2, 4,133 bytes",
              eight != nil && eight?.ciphertext == four?.ciphertext && eight?.tag == four?.tag)
    }
    let gcm = AESGCM.seal(key: [UInt8](repeating: 0, count: 16), nonce: [UInt8](repeating: 0, count: 12),
                          plaintext: [UInt8](repeating: 0, count: 16), additionalData: [])
    check("AES-128-GCM, the GCM specification's test case 2",
          gcm.map { $0.ciphertext + $0.tag } == hexBytes("0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf"))
    return ok
}

func benchCrypto(rounds: Int) {
    var state: UInt64 = 0x2545_F491_4F6C_DD1D
    func random(_ count: Int) -> [UInt8] {
        (0 ..< count).map { _ in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }
    let now: Int64 = 1_796_400_000
    guard var authority = try? InterceptionAuthority.create(commonName: "Bench CA", now: now, random: random),
          let chain = authority.chain(for: "bench.test", now: now, random: random)
    else { print("crypto benchmark: could not make a CA"); return }
    let trust = TrustStore(certificates: [authority.certificate])
    let leafKey = authority.leafKey
    let digest = SHA256.hash([1, 2, 3])
    let signature = leafKey.signature(forDigest: digest)

    print("Crypto benchmark: median of \(rounds) rounds")
    let x25519 = nanosecondsPerCall(rounds: rounds, iterations: 200, calls: 1) {
        _ = X25519.sharedSecret(privateKey: random(32), peerPublicKey: leafKey.publicKey.x962Representation.suffix(32).map { $0 })
    }
    print("  X25519 shared secret: \(format1(x25519 / 1000)) µs")
    let sign = nanosecondsPerCall(rounds: rounds, iterations: 100, calls: 1) { _ = leafKey.signature(forDigest: digest) }
    print("  P-256 signature: \(format1(sign / 1000)) µs")
    let verify = nanosecondsPerCall(rounds: rounds, iterations: 100, calls: 1) {
        _ = leafKey.publicKey.isValidSignature(signature, forDigest: digest)
    }
    print("  P-256 verification: \(format1(verify / 1000)) µs")
    var issuer = authority
    let issue = nanosecondsPerCall(rounds: rounds, iterations: 50, calls: 1) {
        _ = issuer.chain(for: "host\(random(1)[0]).\(random(1)[0]).bench.test", now: now, random: random)
    }
    print("  a leaf issued for a new name: \(format1(issue / 1000)) µs")

    let handshake = nanosecondsPerCall(rounds: rounds, iterations: 20, calls: 1) {
        var server = TLSServer(configuration: TLSServer.Configuration(
            certificate: { _ in (chain, leafKey) }, applicationProtocols: [Array("http/1.1".utf8)], randomBytes: random))
        var client = TLSClient(configuration: TLSClient.Configuration(
            serverName: "bench.test", applicationProtocols: [Array("http/1.1".utf8)], randomBytes: random,
            verifyChain: { (chain: [[UInt8]]) throws(TLSError) -> ServerPublicKey in
                guard let leaf = try? ChainVerifier.verify(chain: chain, host: "bench.test", now: now, trustStore: trust),
                      case .ecPublicKey(.p256, let point) = leaf.subjectPublicKeyInfo.publicKey,
                      let key = P256.PublicKey(x962Representation: point)
                else { throw TLSError(.badCertificate, "bench chain") }
                return .p256(key)
            }))
        guard let flight = try? server.receive(client.start()).toPeer,
              let finished = try? client.receive(flight).toPeer,
              (try? server.receive(finished))?.handshakeCompleted == true
        else { print("  handshake FAILED"); return }
    }
    print("  a whole handshake, both sides and the chain check: \(format1(handshake / 1000)) µs")

    let record = [UInt8](repeating: 0x5A, count: 16384)
    for suite in CipherSuite.allCases {
        var protection = RecordProtection(suite: suite, trafficSecret: [UInt8](repeating: 7, count: 32))
        let ns = nanosecondsPerCall(rounds: rounds, iterations: 50, calls: 1) { _ = protection.seal(record, type: .applicationData) }
        let path = suite == .chacha20Poly1305SHA256 ? (CryptoAcceleration.avx2 ? ", AVX2" : ", SSE2") : ""
        print("  \(suite) record of 16 KiB\(path): \(format1(ns / 1000)) µs (\(format1(16384 / ns * 1000)) MB/s)")
        if suite == .chacha20Poly1305SHA256, CryptoAcceleration.avx2 {
            // The baseline path too, on this CPU, for the ratio.
            CryptoAcceleration.avx2 = false
            defer { CryptoAcceleration.avx2 = true }
            let baseline = nanosecondsPerCall(rounds: rounds, iterations: 50, calls: 1) { _ = protection.seal(record, type: .applicationData) }
            print("  \(suite) record of 16 KiB, SSE2: \(format1(baseline / 1000)) µs (\(format1(16384 / baseline * 1000)) MB/s)")
        }
    }
}
