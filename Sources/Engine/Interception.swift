internal import Crypto
internal import Sys
internal import TLS
internal import Wire
internal import X509

/// What the engine needs for HTTPS: the CA that issues a leaf per name for
/// the app's side of an intercepted connection (loaded when the profile has
/// [MITM] hostnames), and the trust store the real servers' chains are
/// checked against (also for a plain request rewritten to an https URL).
/// One per tunnel.
final class Interception {
    var ca: InterceptionCA?
    /// Checking upstream chains is skipped ([MITM] skip-server-cert-verify).
    var skipsVerification = false
    private var loadedTrust: TrustStore?
    /// Why the trust store could not be read; every intercepted request
    /// then fails its chain check with this reason.
    private(set) var trustProblem: String?

    static let http1: [UInt8] = Array("http/1.1".utf8)
    static let http2: [UInt8] = Array("h2".utf8)
    /// Inside a connection `sluice proxy` intercepts it speaks HTTP/1.1.
    static let protocols: [[UInt8]] = [http1]

    /// With [MITM] h2 = true the tunnel speaks HTTP/2 too (`HTTP2Gateway`),
    /// with every app that offers it. Without, an app that offers only h2
    /// passes through untouched: such apps are mostly gRPC, whose servers
    /// speak only HTTP/2, and Sluice speaks HTTP/1.1 to origins, so
    /// intercepting them would answer every call 502.
    static func tunnelProtocols(prefersHTTP2: Bool) -> [[UInt8]] { prefersHTTP2 ? [http2, http1] : [http1] }

    init(ca: InterceptionCA?) {
        self.ca = ca
    }

    /// Sluice's own `SSL_CERT_FILE` names the roots it trusts upstream (as
    /// OpenSSL's tools read it), else Debian's bundle.
    static var trustStorePath: String { ProcessControl.environment("SSL_CERT_FILE") ?? "/etc/ssl/certs/ca-certificates.crt" }

    /// Reads the roots now, off the first intercepted request's path (the
    /// bundle is ~200 KB of PEM to parse), and says at once when it cannot.
    func loadTrust(log: (String) -> Void) {
        guard loadedTrust == nil else { return }
        _ = trustStore
        if let trustProblem { log("sluice: [MITM]: \(trustProblem); every origin's certificate will be refused") }
    }

    /// Read on first use (or by `loadTrust`): a tunnel that never intercepts never parses ~150 roots.
    var trustStore: TrustStore {
        if let loadedTrust { return loadedTrust }
        let path = Self.trustStorePath
        var store = TrustStore(certificates: [])
        if let bytes = Files.read(path, limit: 16 << 20) {
            do { store = try TrustStore(pemBundle: String(decoding: bytes, as: UTF8.self)) } catch {
                trustProblem = "\(path): \(error)"
            }
            if store.anchors.isEmpty, trustProblem == nil { trustProblem = "\(path) holds no certificates" }
        } else {
            trustProblem = "cannot read \(path) (set SSL_CERT_FILE to a CA bundle)"
        }
        loadedTrust = store
        return store
    }

    static var unixNow: Int64 { Int64(WallClock.now() / 1_000_000_000) }

    /// The server the app talks to: a leaf for the name it asked for (its
    /// SNI, else the address it connected to).
    func server(address: String, protocols: [[UInt8]] = Interception.protocols) -> TLSServer {
        TLSServer(configuration: TLSServer.Configuration(
            certificate: { [self] name in
                guard let chain = ca?.authority.chain(for: name ?? address, now: Self.unixNow, random: SystemRandom.bytes),
                      let key = ca?.authority.leafKey
                else { return nil }
                return (chain, key)
            },
            applicationProtocols: protocols, randomBytes: SystemRandom.bytes))
    }

    /// The client for the real server at `host` (a name, or an address literal, which gets no SNI).
    /// `protocols`: the ALPN offered (HTTP/1.1; h2 first too when the app speaks it).
    func client(host: String, protocols: [[UInt8]] = Interception.protocols) -> TLSClient {
        let isAddress = IPAddress(host) != nil
        let skips = skipsVerification
        return TLSClient(configuration: TLSClient.Configuration(
            serverName: isAddress ? nil : host, applicationProtocols: protocols, randomBytes: SystemRandom.bytes,
            verifyChain: { [self] (chain: [[UInt8]]) throws(TLSError) -> ServerPublicKey in
                let leaf: Certificate
                if skips {
                    guard let first = chain.first, let parsed = try? Certificate(derRepresentation: first) else {
                        throw TLSError(.badCertificate, "the server's certificate does not parse")
                    }
                    leaf = parsed
                } else {
                    let store = trustStore
                    do throws(ChainVerificationError) { leaf = try ChainVerifier.verify(chain: chain, host: host, now: Self.unixNow, trustStore: store) } catch {
                        switch error {
                        case .untrusted:
                            throw TLSError(.unknownCA, "\(error)" + (trustProblem.map { " (\($0))" } ?? ""))
                        case .expired, .notYetValid:
                            throw TLSError(.certificateExpired, "\(error)")
                        case .malformed, .nameMismatch, .notPermitted:
                            throw TLSError(.badCertificate, "\(error)")
                        }
                    }
                }
                return try Self.publicKey(of: leaf)
            }))
    }

    /// The 502's words for an origin's TLS failure, tunnel and proxy alike.
    static func failureReason(_ error: TLSError, host: String) -> String {
        switch error.alert {
        case .unknownCA, .badCertificate, .certificateExpired, .unsupportedCertificate, .certificateUnknown, .certificateRevoked:
            if !error.sentByPeer { return "\(host)'s certificate was refused: \(error.reason) (add -\(host) to [MITM] hostname to pass it through, or skip-server-cert-verify = true for a test server)" }
            return "TLS with \(host) failed: \(error)"
        case .protocolVersion:
            return "TLS with \(host) failed: \(error) (Sluice speaks TLS 1.3 and 1.2 upstream; add -\(host) to [MITM] hostname to pass it through)"
        case .closeNotify, .unexpectedMessage, .badRecordMAC, .recordOverflow, .handshakeFailure, .illegalParameter, .decodeError,
             .decryptError, .insufficientSecurity, .internalError, .inappropriateFallback, .userCanceled, .missingExtension,
             .unsupportedExtension, .unrecognizedName, .noApplicationProtocol:
            return "TLS with \(host) failed: \(error)"
        }
    }

    /// Names whose apps refused Sluice's certificate, said once each.
    private var refusedNames: Set<String> = []

    /// The line to say when an app's alert refuses Sluice's certificate for
    /// `name` (the usual first-run problem: the CA is not trusted), once per
    /// name and for at most 16 names; nil otherwise.
    func refusalWarning(_ error: TLSError, name: String) -> String? {
        let refusals: Set<TLSAlert> = [.unknownCA, .badCertificate, .certificateUnknown, .unsupportedCertificate]
        guard error.sentByPeer, refusals.contains(error.alert), refusedNames.count < 16, refusedNames.insert(name).inserted else { return nil }
        return "the app refused Sluice's certificate for \(name) (\(error.alert)): it does not trust Sluice's CA"
            + (ca.map { " (\($0.certificatePath))" } ?? "") + "; `sluice ca` says how"
    }

    static func publicKey(of leaf: Certificate) throws(TLSError) -> ServerPublicKey {
        switch leaf.subjectPublicKeyInfo.publicKey {
        case .ecPublicKey(curve: .p256, let point):
            if let key = P256.PublicKey(x962Representation: point) { return .p256(key) }
        case .ecPublicKey(curve: .p384, let point):
            if let key = P384.PublicKey(x962Representation: point) { return .p384(key) }
        case .rsaEncryption(let components):
            if let key = RSAPublicKey(modulus: components.modulus, publicExponent: components.publicExponent) { return .rsa(key) }
        default:
            break
        }
        throw TLSError(.unsupportedCertificate, "the server's key is of a kind Sluice cannot check")
    }
}
