import Crypto
import Foundation
import Glibc
import Sys
import Testing
import TestSupport
import TLS
import X509

/// Sluice's TLS client and server against OpenSSL's, over loopback: the
/// client against `openssl s_server` (ECDSA P-256 and RSA certificates, each
/// suite), the server against curl and `openssl s_client`. The in-memory tests
/// (TLSTests) prove the two halves agree with each other; these prove they
/// agree with the implementation most apps use.
@Suite(.serialized) struct TLSInteropTests {
    let folder: String
    let fixtures: TLSPeerFixtures

    init() throws {
        folder = NSTemporaryDirectory() + "/sluice-tls-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        fixtures = try TLSPeerFixtures(folder: folder)
    }

    /// A port for openssl s_server that nothing else of this run uses.
    func freePort() throws -> UInt16 {
        let listener = try LoopbackListener()
        return listener.port
    }

    @Test(arguments: ["TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256"])
    func sluicesClientTalksToOpenSSLsServer(suite: String) throws {
        let network = TestNetwork("tlsc")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let port = try freePort()
        try network.start(["openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", fixtures.leafPath, "-key", fixtures.leafKeyPath,
                           "-tls1_3", "-ciphersuites", suite, "-alpn", "http/1.1", "-www", "-naccept", "1"],
                          log: folder + "/s_server.log")
        let response = try fixtures.fetch(port: port, host: TLSPeerFixtures.host, trustStore: fixtures.trustStore)
        #expect(response.protocolName == "http/1.1")
        #expect(response.text.hasPrefix("HTTP/1.0 200 ok"), "\(response.text.prefix(200))")
        #expect(response.text.contains("Cipher is \(suite)") || response.text.contains(suite), "\(response.text)")
    }

    // RSA certificates sign TLS 1.3's CertificateVerify with PSS (§4.2.3).
    @Test func sluicesClientVerifiesAnRSAServer() throws {
        let network = TestNetwork("tlsr")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        try network.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", folder + "/rsa.key",
                         "-out", folder + "/rsa.pem", "-subj", "/CN=rsa.sluice.test", "-days", "2",
                         "-addext", "subjectAltName=DNS:rsa.sluice.test"])
        let rsaRoots = try TrustStore(pemBundle: String(contentsOfFile: folder + "/rsa.pem", encoding: .utf8))
        let port = try freePort()
        try network.start(["openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", folder + "/rsa.pem", "-key", folder + "/rsa.key",
                           "-tls1_3", "-www", "-naccept", "1"], log: folder + "/s_server.log")
        let response = try fixtures.fetch(port: port, host: "rsa.sluice.test", trustStore: rsaRoots)
        #expect(response.text.hasPrefix("HTTP/1.0 200 ok"))
        // The same server under a name it does not have: refused before any data.
        let port2 = try freePort()
        try network.start(["openssl", "s_server", "-accept", "127.0.0.1:\(port2)", "-cert", folder + "/rsa.pem", "-key", folder + "/rsa.key",
                           "-tls1_3", "-www", "-naccept", "1"], log: folder + "/s_server2.log")
        #expect(throws: TLSError.self) { try fixtures.fetch(port: port2, host: "other.sluice.test", trustStore: rsaRoots) }
    }

    @Test(arguments: ["TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256"])
    func curlTalksToSluicesServer(suite: String) throws {
        let network = TestNetwork("tlss")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let listener = try LoopbackListener()
        let curl = try network.start(["curl", "-sS", "--max-time", "20", "--cacert", fixtures.caPath, "--tlsv1.3", "--tls13-ciphers", suite,
                                      "--resolve", "\(TLSPeerFixtures.host):\(listener.port):127.0.0.1",
                                      "-o", folder + "/body", "-w", "%{http_code} %{http_version}",
                                      "https://\(TLSPeerFixtures.host):\(listener.port)/hello"],
                                     log: folder + "/curl.log")
        let served = try fixtures.serveOne(listener, body: "hello from sluice\n")
        #expect(served.request.hasPrefix("GET /hello HTTP/1.1\r\n"))
        #expect(served.suite?.description == suite)
        var exit: ChildProcess.Exit?
        #expect(try TestNetwork.waitUntil(seconds: 20) { exit = try curl.poll(); return exit != nil })
        #expect(exit == .exited(0), "\((try? String(contentsOfFile: folder + "/curl.log", encoding: .utf8)) ?? "")")
        #expect((try? String(contentsOfFile: folder + "/body", encoding: .utf8)) == "hello from sluice\n")
        #expect((try? String(contentsOfFile: folder + "/curl.log", encoding: .utf8)) == "200 1.1")
    }

    @Test func opensslsClientVerifiesSluicesChain() throws {
        let network = TestNetwork("tlso")
        defer { network.destroy(); try? FileManager.default.removeItem(atPath: folder) }
        let listener = try LoopbackListener()
        try "GET / HTTP/1.1\r\nHost: shop.sluice.test\r\n\r\n".write(toFile: folder + "/request", atomically: true, encoding: .utf8)
        let client = try ChildProcess.spawn(["openssl", "s_client", "-connect", "127.0.0.1:\(listener.port)",
                                             "-servername", TLSPeerFixtures.host, "-verify_hostname", TLSPeerFixtures.host,
                                             "-CAfile", fixtures.caPath, "-verify_return_error", "-tls1_3", "-alpn", "http/1.1",
                                             "-ign_eof"],
                                            output: folder + "/s_client.log", input: folder + "/request")
        defer { client.terminate(graceMilliseconds: 500) }
        _ = try fixtures.serveOne(listener, body: "ok\n")
        var exit: ChildProcess.Exit?
        #expect(try TestNetwork.waitUntil(seconds: 20) { exit = try client.poll(); return exit != nil })
        let log = (try? String(contentsOfFile: folder + "/s_client.log", encoding: .utf8)) ?? ""
        #expect(exit == .exited(0), "\(log)")
        #expect(log.contains("Verify return code: 0 (ok)"), "\(log)")
        #expect(log.contains("ALPN protocol: http/1.1"), "\(log)")
        #expect(log.contains("Peer signature type: ECDSA"), "\(log)")
        #expect(log.contains("ok\n"))
    }
}
