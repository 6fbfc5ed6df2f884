import Crypto
import Testing
import TLS
import X509

/// A deterministic stand-in for the engine's random source (xorshift64*),
/// so a handshake's bytes are the same on every run.
final class SeededRandom: @unchecked Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed | 1 }

    func bytes(_ count: Int) -> [UInt8] {
        (0 ..< count).map { _ in
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return UInt8(truncatingIfNeeded: (state &* 0x2545_F491_4F6C_DD1D) >> 56)
        }
    }
}

/// A CA and a leaf made with Sluice's own builder and signer, as the
/// interception path will make them, and the configurations that use them.
struct HandshakeFixtures {
    static let now: Int64 = 1_796_400_000 // 2026-12-04
    static let host = "shop.sluice.test"

    let random = SeededRandom(seed: 0x5151_1CE5)
    let caKey: P256.PrivateKey
    let caCertificate: [UInt8]
    let leafKey: P256.PrivateKey
    let leafCertificate: [UInt8]
    let trustStore: TrustStore

    init() throws {
        caKey = try #require(P256.PrivateKey(randomBytes: random.bytes(48)))
        leafKey = try #require(P256.PrivateKey(randomBytes: random.bytes(48)))
        let caName = DistinguishedName(commonName: "Sluice Test CA", organizationName: "Sluice")
        let caKey = caKey
        func sign(_ tbs: [UInt8]) -> [UInt8]? { caKey.signature(forDigest: SHA256.hash(tbs)).derRepresentation }
        caCertificate = try CertificateBuilder.issue(
            CertificateTemplate(serialNumber: [1], issuer: caName, subject: caName, notBefore: Self.now - 86400,
                                notAfter: Self.now + 365 * 86400, subjectPublicKey: caKey.publicKey.x962Representation,
                                profile: .certificateAuthority(pathLenConstraint: 0)),
            signature: sign)
        leafCertificate = try CertificateBuilder.issue(
            CertificateTemplate(serialNumber: [2], issuer: caName, subject: DistinguishedName(commonName: Self.host),
                                notBefore: Self.now - 3600, notAfter: Self.now + 30 * 86400,
                                subjectPublicKey: leafKey.publicKey.x962Representation,
                                profile: .leaf(dnsNames: [Self.host], ipAddresses: [])),
            signature: sign)
        trustStore = TrustStore(certificates: [try Certificate(derRepresentation: caCertificate)])
    }

    func serverConfiguration(protocols: [String] = ["http/1.1"]) -> TLSServer.Configuration {
        let chain = [leafCertificate]
        let key = leafKey
        let random = random
        return TLSServer.Configuration(
            certificate: { name in name == Self.host ? (chain, key) : nil },
            applicationProtocols: protocols.map { Array($0.utf8) },
            randomBytes: { random.bytes($0) })
    }

    func clientConfiguration(host: String = Self.host, protocols: [String] = ["http/1.1"],
                             suites: [CipherSuite] = TLSServer.suitePreference) -> TLSClient.Configuration
    {
        let trustStore = trustStore
        let random = random
        var configuration = TLSClient.Configuration(
            serverName: host, applicationProtocols: protocols.map { Array($0.utf8) }, randomBytes: { random.bytes($0) },
            verifyChain: { (chain: [[UInt8]]) throws(TLSError) -> ServerPublicKey in
                let leaf: Certificate
                do {
                    leaf = try ChainVerifier.verify(chain: chain, host: host, now: Self.now, trustStore: trustStore)
                } catch {
                    throw TLSError(.badCertificate, "\(error)")
                }
                guard case .ecPublicKey(.p256, let point) = leaf.subjectPublicKeyInfo.publicKey,
                      let key = P256.PublicKey(x962Representation: point)
                else { throw TLSError(.unsupportedCertificate, "not a P-256 key") }
                return .p256(key)
            })
        configuration.cipherSuites = suites
        return configuration
    }
}
