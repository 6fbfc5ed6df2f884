import Crypto
import Foundation
import Glibc
import Sys
import Testing
import TestSupport
import TLS
import X509

/// Sluice's client against `openssl s_server -tls1_2` over loopback: each of
/// the four TLS 1.2 suites, both RSA signature forms, a CertificateRequest
/// answered and a required certificate refused, extended master secret on
/// and off, records in bulk both ways, and servers Sluice cannot reach (only
/// AES-256, no X25519, another name), which must fail promptly rather than
/// hang. The `-www` page is OpenSSL's own account of what was negotiated.
@Suite(.serialized) struct TLS12InteropTests {
    let folder: String
    let fixtures: TLSPeerFixtures

    init() throws {
        folder = NSTemporaryDirectory() + "/sluice-tls12-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        fixtures = try TLSPeerFixtures(folder: folder)
    }

    func freePort() throws -> UInt16 { try LoopbackListener().port }

    /// A self-signed RSA certificate for rsa.sluice.test (its own root), as TLSInteropTests makes one.
    func makeRSACertificate(_ network: TestNetwork) throws -> (certificate: String, key: String, roots: TrustStore) {
        try network.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", folder + "/rsa.key",
                         "-out", folder + "/rsa.pem", "-subj", "/CN=rsa.sluice.test", "-days", "2",
                         "-addext", "subjectAltName=DNS:rsa.sluice.test"])
        return (folder + "/rsa.pem", folder + "/rsa.key", try TrustStore(pemBundle: String(contentsOfFile: folder + "/rsa.pem", encoding: .utf8)))
    }

    /// `openssl s_server` on a fresh port with the ECDSA leaf (or `certificate`), serving one connection.
    func startServer(_ network: TestNetwork, _ options: [String], certificate: String? = nil, key: String? = nil,
                     prefix: [String] = [], name: String = "s_server") throws -> UInt16
    {
        let port = try freePort()
        try network.start(prefix + ["openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate ?? fixtures.leafPath,
                                    "-key", key ?? fixtures.leafKeyPath, "-naccept", "1"] + options,
                          log: folder + "/\(name).log")
        return port
    }

    func serverLog(_ name: String = "s_server") -> String {
        (try? String(contentsOfFile: folder + "/\(name).log", encoding: .utf8)) ?? ""
    }

    struct Session {
        var version: UInt16?
        var suiteName: String?
        var protocolName: String?
        var connected = false
        var received: [UInt8] = []
        var text: String { String(decoding: received, as: UTF8.self) }
    }

    /// One connection with Sluice's client: the handshake, `request` once
    /// connected, then whatever arrives until the server closes, `enough`
    /// says so, or `seconds` pass. Throws the client's TLSError (after
    /// sending its alert).
    func talk(port: UInt16, host: String, trustStore: TrustStore, request: [UInt8], seconds: Double = 20,
              enough: ([UInt8]) -> Bool = { _ in false }) throws -> Session
    {
        let connection = try #require(LoopbackConnection.connect(port: port))
        var client = TLSPeerFixtures.client(host: host, trustStore: trustStore)
        connection.write(client.start())
        var session = Session()
        var requested = false
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            guard let bytes = connection.read(milliseconds: 500) else { break } // end of stream
            if bytes.isEmpty { continue }
            let output: TLSOutput
            do { output = try client.receive(bytes) } catch {
                connection.write(client.alertRecord(for: error))
                throw error
            }
            connection.write(output.toPeer)
            session.received += output.applicationData
            if client.state == .connected, !requested {
                requested = true
                session.connected = true
                connection.write(client.send(request))
            }
            if output.peerClosed || enough(session.received) { break }
        }
        session.version = client.negotiatedVersion
        session.suiteName = client.negotiatedSuiteName
        session.protocolName = client.applicationProtocol.map { String(decoding: $0, as: UTF8.self) }
        return session
    }

    func get(_ host: String) -> [UInt8] { Array("GET / HTTP/1.0\r\nHost: \(host)\r\n\r\n".utf8) }

    /// Expects a refusal within `seconds`: a TLSError, never a hang or a session.
    func expectPromptRefusal(port: UInt16, host: String, trustStore: TrustStore, seconds: Double = 15,
                             sourceLocation: SourceLocation = #_sourceLocation) -> TLSError?
    {
        let started = Date()
        var caught: TLSError?
        do {
            let session = try talk(port: port, host: host, trustStore: trustStore, request: get(host), seconds: seconds)
            Issue.record("no error: connected \(session.connected), \(session.received.count) bytes", sourceLocation: sourceLocation)
        } catch let error as TLSError {
            caught = error
        } catch {
            Issue.record("not a TLS error: \(error)", sourceLocation: sourceLocation)
        }
        #expect(Date().timeIntervalSince(started) < seconds, "took \(Date().timeIntervalSince(started)) s", sourceLocation: sourceLocation)
        return caught
    }

    // MARK: The four suites

    struct Cipher12: Sendable, CustomTestStringConvertible {
        var openssl: String
        var iana: String
        var rsa: Bool
        var testDescription: String { openssl }
    }

    static let suites = [
        Cipher12(openssl: "ECDHE-ECDSA-CHACHA20-POLY1305", iana: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", rsa: false),
        Cipher12(openssl: "ECDHE-ECDSA-AES128-GCM-SHA256", iana: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", rsa: false),
        Cipher12(openssl: "ECDHE-RSA-CHACHA20-POLY1305", iana: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", rsa: true),
        Cipher12(openssl: "ECDHE-RSA-AES128-GCM-SHA256", iana: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", rsa: true),
    ]

    @Test(arguments: suites)
    func sluicesClientSpeaksTLS12ToOpenSSL(suite: Cipher12) throws {
        let network = TestNetwork("t12s")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        var host = TLSPeerFixtures.host
        var trustStore = fixtures.trustStore
        var certificate: String?, key: String?
        if suite.rsa {
            let rsa = try makeRSACertificate(network)
            (certificate, key, trustStore, host) = (rsa.certificate, rsa.key, rsa.roots, "rsa.sluice.test")
        }
        let port = try startServer(network, ["-tls1_2", "-cipher", suite.openssl, "-alpn", "http/1.1", "-www"], certificate: certificate, key: key)
        let session = try talk(port: port, host: host, trustStore: trustStore, request: get(host))
        let page = session.text
        #expect(session.connected)
        #expect(session.version == 0x0303)
        #expect(session.suiteName == suite.iana)
        #expect(session.protocolName == "http/1.1")
        #expect(page.hasPrefix("HTTP/1.0 200 ok"), "\(page.prefix(300)) / \(serverLog())")
        #expect(page.contains("New, TLSv1.2, Cipher is \(suite.openssl)\n"), "\(page)")
        #expect(page.contains("Protocol  : TLSv1.2"), "\(page)")
        // RFC 7627 and RFC 5746, as the server saw them.
        #expect(page.contains("Extended master secret: yes"), "\(page)")
        #expect(page.contains("Secure Renegotiation IS supported"), "\(page)")
        // The groups Sluice offered, X25519 first (which groups exactly: TLS12ClientHelloTests).
        #expect(page.contains("Supported groups: x25519"), "\(page)")
        #expect(page.contains("Shared groups: x25519"), "\(page)")
    }

    // RFC 5246 §7.4.1.4.1: ServerKeyExchange signed with PKCS#1 v1.5 (which TLS 1.2 allows, unlike 1.3) and with PSS.
    @Test(arguments: [("RSA+SHA256", "RSA+SHA256"), ("RSA-PSS+SHA256", "RSA-PSS+SHA256"), ("RSA+SHA384", "RSA+SHA384"),
                      ("RSA-PSS+SHA512", "RSA-PSS+SHA512")])
    func anRSAServerSignsItsKeyExchangeEitherWay(sigalgs: String, shown: String) throws {
        let network = TestNetwork("t12r")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let rsa = try makeRSACertificate(network)
        let port = try startServer(network, ["-tls1_2", "-sigalgs", sigalgs, "-cipher", "ECDHE-RSA-AES128-GCM-SHA256", "-www"],
                                   certificate: rsa.certificate, key: rsa.key)
        let session = try talk(port: port, host: "rsa.sluice.test", trustStore: rsa.roots, request: get("rsa.sluice.test"))
        #expect(session.version == 0x0303)
        #expect(session.suiteName == "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
        #expect(session.text.hasPrefix("HTTP/1.0 200 ok"), "\(session.text.prefix(300)) / \(serverLog())")
        // The server's shared list is the one scheme it was given: what it must have signed with.
        #expect(session.text.contains("Shared Signature Algorithms: \(shown)\n"), "\(session.text)")
    }

    // MARK: Client certificates

    // -verify: a certificate is asked for but optional; Sluice answers with none and goes on.
    @Test func anOptionalCertificateRequestIsAnsweredWithNone() throws {
        let network = TestNetwork("t12v")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let port = try startServer(network, ["-tls1_2", "-verify", "1", "-CAfile", fixtures.caPath, "-www"])
        let session = try talk(port: port, host: TLSPeerFixtures.host, trustStore: fixtures.trustStore, request: get(TLSPeerFixtures.host))
        #expect(session.version == 0x0303)
        #expect(session.text.hasPrefix("HTTP/1.0 200 ok"), "\(session.text.prefix(300)) / \(serverLog())")
        #expect(session.text.contains("no client certificate available"), "\(session.text)")
    }

    // -Verify: a certificate is required; the server refuses Sluice's empty one, with an alert, promptly.
    @Test func aRequiredCertificateFailsTheHandshake() throws {
        let network = TestNetwork("t12V")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let port = try startServer(network, ["-tls1_2", "-Verify", "1", "-CAfile", fixtures.caPath, "-www"])
        let error = expectPromptRefusal(port: port, host: TLSPeerFixtures.host, trustStore: fixtures.trustStore)
        #expect(error?.sentByPeer == true, "\(String(describing: error))")
    }

    // MARK: Extended master secret off

    // RFC 7627 §5.2: without the server's echo, the legacy master secret. OpenSSL
    // has no command-line switch for it; its config's Options can turn it off.
    @Test func aServerWithoutExtendedMasterSecretStillWorks() throws {
        let network = TestNetwork("t12e")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let config = folder + "/noems.cnf"
        try """
        openssl_conf = openssl_init
        [openssl_init]
        ssl_conf = ssl_sect
        [ssl_sect]
        noems = noems_sect
        [noems_sect]
        Options = -ExtendedMasterSecret

        """.write(toFile: config, atomically: true, encoding: .utf8)
        for suite in ["ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-ECDSA-AES128-GCM-SHA256"] {
            let port = try startServer(network, ["-tls1_2", "-ssl_config", "noems", "-cipher", suite, "-www"],
                                       prefix: ["env", "OPENSSL_CONF=\(config)"], name: "s_server-\(suite)")
            let session = try talk(port: port, host: TLSPeerFixtures.host, trustStore: fixtures.trustStore, request: get(TLSPeerFixtures.host))
            #expect(session.version == 0x0303)
            #expect(session.text.hasPrefix("HTTP/1.0 200 ok"), "\(session.text.prefix(300)) / \(serverLog("s_server-\(suite)"))")
            #expect(session.text.contains("Cipher is \(suite)\n"), "\(session.text)")
            #expect(session.text.contains("Extended master secret: no"), "\(session.text)")
        }
    }

    // MARK: Records in bulk

    // 300 KB down from -WWW (many records, OpenSSL's own GCM explicit nonces), and 100 KB up through -rev.
    @Test(arguments: ["ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-ECDSA-AES128-GCM-SHA256"])
    func manyRecordsEachWay(suite: String) throws {
        let network = TestNetwork("t12b")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let lines = (0 ..< 20000).map { "line \(String(format: "%010d", $0 * 7919))" }
        let file = lines.joined(separator: "\n") + "\n"
        try file.write(toFile: folder + "/big.txt", atomically: true, encoding: .utf8)
        #expect(file.utf8.count > 300_000)

        // -WWW serves files from its working directory.
        let port = try freePort()
        try network.start(["sh", "-c", "cd '\(folder)' && exec openssl s_server -accept 127.0.0.1:\(port) -cert '\(fixtures.leafPath)'"
                + " -key '\(fixtures.leafKeyPath)' -naccept 1 -tls1_2 -cipher \(suite) -WWW"], log: folder + "/www.log")
        let download = try talk(port: port, host: TLSPeerFixtures.host, trustStore: fixtures.trustStore,
                                request: Array("GET /big.txt HTTP/1.0\r\n\r\n".utf8), seconds: 30)
        #expect(download.suiteName?.hasPrefix("TLS_ECDHE_ECDSA_WITH_") == true)
        let text = download.text
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) }
        #expect(text.hasPrefix("HTTP/1.0 200 ok"), "\(text.prefix(200)) / \(serverLog("www"))")
        #expect(body?.utf8.count == file.utf8.count)
        #expect(body == file)

        // -rev answers each line reversed: 6,000 lines sent in one go.
        let upLines = (0 ..< 6000).map { "up \(String(format: "%012d", $0))" }
        let upload = Array((upLines.joined(separator: "\n") + "\n").utf8)
        let expected = Array(upLines.map { String($0.reversed()) + "\n" }.joined().utf8)
        let revPort = try startServer(network, ["-tls1_2", "-cipher", suite, "-rev"], name: "rev")
        let echoed = try talk(port: revPort, host: TLSPeerFixtures.host, trustStore: fixtures.trustStore, request: upload, seconds: 30) {
            $0.count >= expected.count
        }
        #expect(upload.count > 90000)
        #expect(echoed.received.count == expected.count, "\(echoed.received.count) of \(expected.count) / \(serverLog("rev").suffix(500))")
        #expect(echoed.received == expected)
    }

    // MARK: Servers Sluice cannot or must not reach

    @Test func aServerWithOnlyAES256FailsPromptly() throws {
        let network = TestNetwork("t12a")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let port = try startServer(network, ["-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384", "-www"])
        let error = expectPromptRefusal(port: port, host: TLSPeerFixtures.host, trustStore: fixtures.trustStore)
        #expect(error?.sentByPeer == true, "\(String(describing: error))")
        #expect(error?.alert == .handshakeFailure, "\(String(describing: error))")
    }

    // Without X25519 the server picks another group Sluice listed, P-256 or
    // P-384, and Sluice agrees in it (TLS 1.2's ServerKeyExchange; TLS 1.3's
    // HelloRetryRequest asking for a share in that group).
    @Test(arguments: [("-tls1_2", "P-256", "secp256r1"), ("-tls1_2", "P-384", "secp384r1"),
                      ("-tls1_3", "P-256", "secp256r1"), ("-tls1_3", "P-384", "secp384r1")])
    func aServerWithoutX25519AgreesInAnotherGroup(version: String, group: String, shown: String) throws {
        let network = TestNetwork("t12g")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let port = try startServer(network, [version, "-groups", group, "-www"])
        let session = try talk(port: port, host: TLSPeerFixtures.host, trustStore: fixtures.trustStore, request: get(TLSPeerFixtures.host))
        #expect(session.version == (version == "-tls1_2" ? 0x0303 : 0x0304))
        #expect(session.text.hasPrefix("HTTP/1.0 200 ok"), "\(session.text.prefix(300)) / \(serverLog())")
        #expect(session.text.contains("Shared groups: \(shown)"), "\(session.text)")
    }

    // A group Sluice does not list (X448): nothing in common, refused promptly.
    @Test func aServerWithOnlyAnUnlistedGroupFailsPromptly() throws {
        let network = TestNetwork("t12h")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let port = try startServer(network, ["-tls1_2", "-groups", "X448", "-www"])
        let error = expectPromptRefusal(port: port, host: TLSPeerFixtures.host, trustStore: fixtures.trustStore)
        #expect(error != nil)
    }

    // A TLS 1.2 OpenSSL server checks its ECDSA certificate's curve against the
    // client's supported_groups: a P-384 certificate needs secp384r1 listed.
    @Test func aTLS12ServerWithAP384CertificateIsReached() throws {
        let network = TestNetwork("t12p")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        try network.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384", "-nodes",
                         "-keyout", folder + "/p384.key", "-out", folder + "/p384.pem", "-subj", "/CN=p384.sluice.test", "-days", "2",
                         "-addext", "subjectAltName=DNS:p384.sluice.test"])
        let roots = try TrustStore(pemBundle: String(contentsOfFile: folder + "/p384.pem", encoding: .utf8))
        let port = try startServer(network, ["-tls1_2", "-www"], certificate: folder + "/p384.pem", key: folder + "/p384.key")
        let session = try talk(port: port, host: "p384.sluice.test", trustStore: roots, request: get("p384.sluice.test"))
        #expect(session.version == 0x0303)
        #expect(session.suiteName?.hasPrefix("TLS_ECDHE_ECDSA_WITH_") == true)
        #expect(session.text.hasPrefix("HTTP/1.0 200 ok"), "\(session.text.prefix(300)) / \(serverLog())")
    }

    // A server that has X25519 but prefers P-384 for its key exchange picks
    // from the client's supported_groups by its own order: whatever Sluice lists, it must be able to use.
    @Test func aTLS12ServerPreferringP384ButHavingX25519IsReached() throws {
        let network = TestNetwork("t12q")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let port = try startServer(network, ["-tls1_2", "-groups", "P-384:X25519", "-serverpref", "-www"])
        let session = try talk(port: port, host: TLSPeerFixtures.host, trustStore: fixtures.trustStore, request: get(TLSPeerFixtures.host))
        #expect(session.version == 0x0303)
        #expect(session.text.hasPrefix("HTTP/1.0 200 ok"), "\(session.text.prefix(300)) / \(serverLog())")
    }

    @Test func aTLS12ServerUnderAnotherNameIsRefused() throws {
        let network = TestNetwork("t12n")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let port = try startServer(network, ["-tls1_2", "-www"])
        let error = expectPromptRefusal(port: port, host: "other.sluice.test", trustStore: fixtures.trustStore)
        #expect(error?.alert == .badCertificate, "\(String(describing: error))")
        #expect(error?.sentByPeer == false)
    }

    @Test func aTLS12ServerWithAnUntrustedChainIsRefused() throws {
        let network = TestNetwork("t12u")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let port = try startServer(network, ["-tls1_2", "-www"])
        let error = expectPromptRefusal(port: port, host: TLSPeerFixtures.host, trustStore: TrustStore(certificates: []))
        #expect(error?.alert == .badCertificate, "\(String(describing: error))")
    }

    // MARK: TLS 1.3 is still preferred

    @Test func aServerThatSpeaksTLS13GetsTLS13() throws {
        let network = TestNetwork("t12t")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let port = try startServer(network, ["-alpn", "http/1.1", "-www"])
        let session = try talk(port: port, host: TLSPeerFixtures.host, trustStore: fixtures.trustStore, request: get(TLSPeerFixtures.host))
        #expect(session.version == 0x0304)
        let name = try #require(session.suiteName)
        #expect(["TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256"].contains(name))
        #expect(session.text.contains("New, TLSv1.3, Cipher is \(name)\n"), "\(session.text)")
        #expect(session.protocolName == "http/1.1")
    }
}
