import Crypto
import Foundation
import Glibc
import Testing
import TLS
import X509

/// A listening TCP socket on 127.0.0.1 with a port the kernel chose, blocking,
/// closed when the value goes.
final class LoopbackListener {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, listen(fd, 4) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        descriptor = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(descriptor) }

    /// The next connection, waiting at most `seconds`.
    func accept(seconds: Int32 = 20) -> LoopbackConnection? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, seconds * 1000) == 1 else { return nil }
        let connection = Glibc.accept(descriptor, nil, nil)
        return connection >= 0 ? LoopbackConnection(descriptor: connection) : nil
    }
}

/// One blocking TCP connection, with reads bounded in time.
final class LoopbackConnection {
    let descriptor: Int32

    init(descriptor: Int32) { self.descriptor = descriptor }

    /// Connects to 127.0.0.1:`port`, retrying while the server comes up (at most `seconds`).
    static func connect(port: UInt16, seconds: Double = 10) -> LoopbackConnection? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            address.sin_port = port.bigEndian
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if result == 0 { return LoopbackConnection(descriptor: descriptor) }
            close(descriptor)
            usleep(20_000)
        }
        return nil
    }

    deinit { close(descriptor) }

    func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { return }
            offset += written
        }
    }

    /// What arrives within `milliseconds`: nil at end of stream, [] on timeout.
    func read(milliseconds: Int32 = 10000) -> [UInt8]? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds) == 1 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        return count > 0 ? Array(buffer.prefix(count)) : nil
    }
}

/// A CA and a leaf for shop.sluice.test made by Sluice's own builder and
/// signer, written where OpenSSL's tools can read them, and the two halves
/// of a session over a loopback connection.
struct TLSPeerFixtures {
    static let host = "shop.sluice.test"

    let caPath: String
    let leafPath: String
    let leafKeyPath: String
    let trustStore: TrustStore
    private let leafCertificate: [UInt8]
    private let leafKey: P256.PrivateKey

    static func randomBytes(_ count: Int) -> [UInt8] { (0 ..< count).map { _ in UInt8.random(in: 0 ... 255) } }

    init(folder: String) throws {
        let now = Int64(time(nil))
        let caKey = try #require(P256.PrivateKey(randomBytes: Self.randomBytes(48)))
        leafKey = try #require(P256.PrivateKey(randomBytes: Self.randomBytes(48)))
        let caName = DistinguishedName(commonName: "Sluice Interop CA", organizationName: "Sluice")
        func sign(_ tbs: [UInt8]) -> [UInt8]? { caKey.signature(forDigest: SHA256.hash(tbs)).derRepresentation }
        let ca = try CertificateBuilder.issue(
            CertificateTemplate(serialNumber: [1], issuer: caName, subject: caName, notBefore: now - 3600, notAfter: now + 86400,
                                subjectPublicKey: caKey.publicKey.x962Representation, profile: .certificateAuthority(pathLenConstraint: 0)),
            signature: sign)
        leafCertificate = try CertificateBuilder.issue(
            CertificateTemplate(serialNumber: [2], issuer: caName, subject: DistinguishedName(commonName: Self.host),
                                notBefore: now - 3600, notAfter: now + 86400, subjectPublicKey: leafKey.publicKey.x962Representation,
                                profile: .leaf(dnsNames: [Self.host], ipAddresses: [])),
            signature: sign)
        trustStore = TrustStore(certificates: [try Certificate(derRepresentation: ca)])
        caPath = folder + "/ca.pem"
        leafPath = folder + "/leaf.pem"
        leafKeyPath = folder + "/leaf.key"
        try PEM.encode(label: "CERTIFICATE", derBytes: ca).write(toFile: caPath, atomically: true, encoding: .utf8)
        try PEM.encode(label: "CERTIFICATE", derBytes: leafCertificate).write(toFile: leafPath, atomically: true, encoding: .utf8)
        try PEM.encode(label: "EC PRIVATE KEY", derBytes: ECPrivateKeyDER.encode(leafKey))
            .write(toFile: leafKeyPath, atomically: true, encoding: .utf8)
    }

    struct Fetched {
        var protocolName: String?
        var text: String
    }

    /// Sluice's client for `host` (SNI, http/1.1), the chain checked against
    /// `trustStore` by X509's verifier, as the engine's is.
    static func client(host: String, trustStore: TrustStore) -> TLSClient {
        TLSClient(configuration: TLSClient.Configuration(
            serverName: host, applicationProtocols: [Array("http/1.1".utf8)], randomBytes: Self.randomBytes,
            verifyChain: { (chain: [[UInt8]]) throws(TLSError) -> ServerPublicKey in
                let leaf: Certificate
                do { leaf = try ChainVerifier.verify(chain: chain, host: host, now: Int64(time(nil)), trustStore: trustStore) } catch {
                    throw TLSError(.badCertificate, "\(error)")
                }
                switch leaf.subjectPublicKeyInfo.publicKey {
                case .ecPublicKey(.p256, let point):
                    guard let key = P256.PublicKey(x962Representation: point) else { break }
                    return .p256(key)
                case .ecPublicKey(.p384, let point):
                    guard let key = P384.PublicKey(x962Representation: point) else { break }
                    return .p384(key)
                case .rsaEncryption(let components):
                    guard let key = RSAPublicKey(modulus: components.modulus, publicExponent: components.publicExponent) else { break }
                    return .rsa(key)
                default: break
                }
                throw TLSError(.unsupportedCertificate, "an unsupported key")
            }))
    }

    /// `GET /` with Sluice's client, the chain checked against `trustStore`.
    func fetch(port: UInt16, host: String, trustStore: TrustStore) throws -> Fetched {
        let connection = try #require(LoopbackConnection.connect(port: port))
        var client = Self.client(host: host, trustStore: trustStore)
        connection.write(client.start())
        var text: [UInt8] = []
        var requested = false
        for _ in 0 ..< 200 {
            guard let bytes = connection.read(), !bytes.isEmpty else { break }
            let output: TLSOutput
            do { output = try client.receive(bytes) } catch {
                connection.write(client.alertRecord(for: error))
                throw error
            }
            connection.write(output.toPeer)
            text += output.applicationData
            if client.state == .connected, !requested {
                requested = true
                connection.write(client.send(Array("GET / HTTP/1.0\r\nHost: \(host)\r\n\r\n".utf8)))
            }
            if output.peerClosed { break }
        }
        return Fetched(protocolName: client.applicationProtocol.map { String(decoding: $0, as: UTF8.self) },
                       text: String(decoding: text, as: UTF8.self))
    }

    struct Served {
        var request: String
        var suite: CipherSuite?
    }

    /// Accepts one connection, answers its first request with `body`, closes.
    func serveOne(_ listener: LoopbackListener, body: String) throws -> Served {
        let connection = try #require(listener.accept())
        let chain = [leafCertificate]
        let key = leafKey
        var server = TLSServer(configuration: TLSServer.Configuration(
            certificate: { name in name == Self.host ? (chain, key) : nil },
            applicationProtocols: [Array("http/1.1".utf8)], randomBytes: Self.randomBytes))
        var request: [UInt8] = []
        var suite: CipherSuite?
        for _ in 0 ..< 200 {
            guard let bytes = connection.read(), !bytes.isEmpty else { break }
            let output: TLSOutput
            do { output = try server.receive(bytes) } catch {
                connection.write(server.alertRecord(for: error))
                throw error
            }
            connection.write(output.toPeer)
            suite = server.negotiatedSuite ?? suite
            request += output.applicationData
            if String(decoding: request, as: UTF8.self).contains("\r\n\r\n") {
                let response = "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
                connection.write(server.send(Array(response.utf8)))
                connection.write(server.close())
                break
            }
        }
        return Served(request: String(decoding: request, as: UTF8.self), suite: suite)
    }
}
