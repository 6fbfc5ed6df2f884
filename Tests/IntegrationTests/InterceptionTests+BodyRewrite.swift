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
}
