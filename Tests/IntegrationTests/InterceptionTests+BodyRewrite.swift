import Foundation
import Testing
import TestSupport

/// [Body Rewrite] inside intercepted TLS: the same held-and-rewritten
/// response whether the app speaks HTTP/1.1 or HTTP/2 to Sluice.
extension InterceptionTests {
    @Test func responseBodiesAreRewrittenInsideInterceptedTLS() throws {
        _ = try makeCADir()
        let path = try mitmProfile("hostname = *.test\nh2 = true", """
        [Body Rewrite]
        http-response ^https://web\\.test/hello\\.txt nginx Sluice
        """, name: "body.conf")
        let r = try exec("""
        curl -sS -w '%{http_version} %{size_download}\\n' https://web.test/hello.txt
        curl -sS --http1.1 -w '%{http_version} %{size_download}\\n' https://web.test/hello.txt
        curl -sS -w '%{http_version}\\n' https://web.test/echo
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == """
        hello from Sluice
        2 18
        hello from Sluice
        1.1 18
        method=GET scheme=https host=web.test port=443 uri=/echo env=
        2

        """, "\(r.stdout)")
    }

    /// `sluice proxy` rewrites inside the tunnels it intercepts: a response
    /// larger than the connection's relay buffer, then another on the same
    /// connection.
    @Test func theProxyRewritesResponseBodiesInsideInterceptedTunnels() throws {
        _ = try makeCADir()
        try String(repeating: "false\n", count: 50_000).write(to: pair.work.appendingPathComponent("flags.txt"), atomically: true, encoding: .utf8)
        let path = try mitmProfile("hostname = web.test", """
        [Body Rewrite]
        http-response ^https://web\\.test/hello\\.txt nginx Sluice
        http-response ^https://web\\.test/flags\\.txt ^false$ true
        """, name: "proxy-body.conf")
        let proxy = try startProxy(["--http-listen", "127.0.0.1:11196", "--profile", path], port: 11196)
        let r = try net.run(["bash", "-c", """
        curl -sS -m 30 --cacert \(caDir)/ca.pem --proxy http://127.0.0.1:11196 -w '%{num_connects}\\n' https://web.test/flags.txt https://web.test/hello.txt | sha256sum | cut -c1-64
        (for i in $(seq 50000); do echo true; done; printf '1\\nhello from Sluice\\n0\\n') | sha256sum | cut -c1-64
        """], in: pair.host, check: false, timeout: 60)
        let summary = stopProxy(proxy)
        let lines = r.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && lines[0] == lines[1], "\(r.output)\n\(summary)")
    }

    /// A request body is rewritten inside intercepted TLS too: from an h2
    /// app (the gateway's request, with a content-length and without) and
    /// from an HTTP/1.1 one.
    @Test func requestBodiesAreRewrittenInsideInterceptedTLS() throws {
        _ = try makeCADir()
        try net.start(["/usr/bin/python3", "-c", Self.digestServer, webCertificate, webKey], in: pair.server,
                      log: pair.path("digest-body.log"))
        #expect(pair.waitForListener("10.88.0.2:9443"), "\(read(pair.path("digest-body.log")))")
        let path = try mitmProfile("hostname = web.test:9443\nh2 = true", """
        [Body Rewrite]
        http-request ^https://web\\.test:9443/upload token=([0-9]+) secret=$1
        """, name: "request-body.conf")
        let r = try exec("""
        curl -sS -w ' %{http_version}\\n' --data-binary 'token=123&x=1' https://web.test:9443/upload
        curl -sS -w ' %{http_version}\\n' -H 'Transfer-Encoding: chunked' --data-binary 'token=123&x=1' https://web.test:9443/upload
        curl -sS -w ' %{http_version}\\n' --http1.1 --data-binary 'token=123&x=1' https://web.test:9443/upload
        printf 'secret=123&x=1' | sha256sum | cut -c1-64
        """, profile: path, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 7 && lines[0 ..< 6] == ["POST 14 \(lines[6])", " 2", "POST 14 \(lines[6])", " 2", "POST 14 \(lines[6])", " 1.1"],
                "\(r.stdout) \(r.stderr)")
    }
}
