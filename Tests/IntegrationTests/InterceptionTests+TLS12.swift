import Foundation
import Testing
import TestSupport

/// Origins that speak TLS 1.2 alone, behind [MITM] names: Sluice's client
/// falls back to TLS 1.2 (docs/tls.md), so the rules apply to them as to
/// TLS 1.3 origins; a TLS 1.2 origin with no suite Sluice speaks is a 502
/// that says so.
extension InterceptionTests {
    /// nginx in the server namespace with TLS 1.2 alone: :9443 ECDSA
    /// (web.test's certificate), :9444 RSA (api.test, from the same test CA),
    /// :9445 ECDSA with AES-256 alone (origin.test).
    func startTLS12Origins() throws {
        let pki = pair.work.appendingPathComponent("pki").path
        let rsaCertificate = pki + "/rsa.pem", rsaKey = pki + "/rsa.key"
        try """
        subjectAltName = DNS:api.test
        basicConstraints = CA:FALSE
        keyUsage = critical, digitalSignature, keyEncipherment
        extendedKeyUsage = serverAuth

        """.write(toFile: pki + "/rsa.ext", atomically: true, encoding: .utf8)
        try net.run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", rsaKey, "-out", pki + "/rsa.csr", "-subj", "/CN=api.test"])
        try net.run(["openssl", "x509", "-req", "-in", pki + "/rsa.csr", "-CA", originCA, "-CAkey", pki + "/origin-ca.key", "-set_serial", "12",
                     "-days", "2", "-extfile", pki + "/rsa.ext", "-out", rsaCertificate])
        let w = pair.work.path
        func server(_ port: Int, _ certificate: String, _ key: String, ciphers: String) -> String {
            """
            server { listen 10.88.0.2:\(port) ssl; ssl_certificate \(certificate); ssl_certificate_key \(key);
                     ssl_protocols TLSv1.2; ssl_ciphers \(ciphers); root \(w); \(Self.locations) }
            """
        }
        let conf = """
        daemon off; pid \(w)/nginx-tls12.pid; error_log \(w)/error-tls12.log;
        events { worker_connections 1024; }
        http { access_log off; client_body_temp_path \(w); keepalive_requests 1000;
        \(server(9443, webCertificate, webKey, ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305"))
        \(server(9444, rsaCertificate, rsaKey, ciphers: "ECDHE-RSA-CHACHA20-POLY1305"))
        \(server(9445, webCertificate, webKey, ciphers: "ECDHE-ECDSA-AES256-GCM-SHA384"))
        }
        """
        let confPath = pair.path("nginx-tls12.conf")
        try conf.write(toFile: confPath, atomically: true, encoding: .utf8)
        try net.start(["nginx", "-c", confPath, "-p", w], in: pair.server)
        guard pair.waitForListener("10.88.0.2:9443"), pair.waitForListener("10.88.0.2:9444"), pair.waitForListener("10.88.0.2:9445") else {
            throw TestNetwork.CommandFailed(command: ["nginx", "-c", confPath], status: 1, output: read(w + "/error-tls12.log"))
        }
    }

    /// Through `sluice exec`: a header rewrite reaches both TLS 1.2 origins
    /// (ECDHE-ECDSA with AES-128-GCM, ECDHE-RSA with ChaCha20), the app sees
    /// Sluice's certificate, 1 MiB arrives intact over TLS 1.2 records, two
    /// requests share a connection, and the AES-256-only origin is a 502
    /// naming the failure.
    @Test func tls12OnlyOriginsAreIntercepted() throws {
        _ = try makeCADir()
        try startTLS12Origins()
        let leaf = pair.path("tls12-leaf.pem"), failure = pair.path("tls12-failure.txt")
        let path = try mitmProfile("hostname = web.test:9443, api.test:9444, origin.test:9445", """
        [Header Rewrite]
        http-request ^https://(web|api)\\.test: header-add X-Env tls12
        """)
        let r = try exec("""
        curl -sS https://web.test:9443/echo
        curl -sS https://api.test:9444/echo
        curl -sS https://web.test:9443/1m.bin | sha256sum | cut -c1-64
        curl -sS -o /dev/null -o /dev/null -w '%{http_code} %{num_connects}\\n' https://api.test:9444/hello.txt https://api.test:9444/echo
        curl -sS -o \(failure) -w '%{http_code}\\n' https://origin.test:9445/hello.txt
        \(Self.saveLeaf("web.test", port: 9443, to: leaf))
        """, profile: path, timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        let digest = try pair.digest("1m.bin")
        #expect(r.stdout == """
        method=GET scheme=https host=web.test port=9443 uri=/echo env=tls12
        method=GET scheme=https host=api.test port=9444 uri=/echo env=tls12
        \(digest)
        200 1
        200 0
        502

        """, "\(r.stdout) \(r.stderr)")
        #expect(issuer(leaf) == subject(caDir + "/ca.pem"), "the app saw '\(issuer(leaf))': \(r.stderr)")
        let body = read(failure)
        #expect(body.hasPrefix("sluice: TLS with origin.test failed:") && body.contains("handshake_failure"), "\(body)")
    }

    /// `sluice proxy` reaches a TLS 1.2 origin the same way, and an upload
    /// crosses it intact (Content-Length and chunked).
    @Test func theProxyInterceptsTLS12OnlyOrigins() throws {
        _ = try makeCADir()
        try startTLS12Origins()
        let digestServer = Self.digestServer.replacingOccurrences(of: "9443", with: "9446")
            .replacingOccurrences(of: "context.load_cert_chain", with: "context.maximum_version = ssl.TLSVersion.TLSv1_2; context.load_cert_chain")
        try net.start(["/usr/bin/python3", "-c", digestServer, webCertificate, webKey], in: pair.server, log: pair.path("digest12.log"))
        #expect(pair.waitForListener("10.88.0.2:9446"), "\(read(pair.path("digest12.log")))")
        try pair.makeFile("upload12.bin", bytes: 1_048_576)
        let path = try mitmProfile("hostname = web.test:9443, api.test:9444, web.test:9446", """
        [Header Rewrite]
        http-request ^https://(web|api)\\.test: header-add X-Env tls12
        """)
        let proxy = try startProxy(["--http-listen", "127.0.0.1:11191", "--listen", "127.0.0.1:11190", "--profile", path], port: 11191)
        let ca = caDir + "/ca.pem", upload = pair.path("upload12.bin")
        let r = try net.run(["bash", "-c", """
        curl -sS -m 20 --cacert \(ca) --proxy http://127.0.0.1:11191 https://web.test:9443/echo
        curl -sS -m 20 --cacert \(ca) --socks5-hostname 127.0.0.1:11190 https://api.test:9444/echo
        curl -sS -m 60 --cacert \(ca) --proxy http://127.0.0.1:11191 -H 'Expect:' --data-binary @\(upload) https://web.test:9446/upload
        curl -sS -m 60 --cacert \(ca) --proxy http://127.0.0.1:11191 -H 'Expect:' -H 'Transfer-Encoding: chunked' --data-binary @\(upload) https://web.test:9446/upload
        """], in: pair.host, check: false, timeout: 150)
        let summary = stopProxy(proxy)
        let up = try pair.digest("upload12.bin")
        #expect(r.output == """
        method=GET scheme=https host=web.test port=9443 uri=/echo env=tls12
        method=GET scheme=https host=api.test port=9444 uri=/echo env=tls12
        POST 1048576 \(up)
        POST 1048576 \(up)

        """, "\(r.output)\n\(summary)")
    }
}
