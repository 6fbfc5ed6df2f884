import Foundation
import Sys
import Testing
import TestSupport

/// `sluice proxy` from the client side: curl in a host namespace talks to
/// Sluice's SOCKS5 and HTTP listeners on 127.0.0.1 there, and Sluice relays to
/// nginx in the server namespace (ServerPair). Names are `.test` names given
/// addresses by the profile's [Host] section, resolved by Sluice itself.
@Suite(.enabled(if: TestNetwork.isRoot, "needs root: creates network namespaces"), .serialized)
final class ProxyServerTests {
    let pair: ServerPair
    var net: TestNetwork { pair.net }
    var host: String { pair.host }
    let sha1m: String

    static let hosts = """
    [Host]
    origin.test = 10.88.0.2
    blocked.test = 10.88.0.2
    """

    static let locations = """
    location = /echo { default_type text/plain; return 200 "method=$request_method host=$host env=$http_x_env token=$http_x_debug_token\\n"; }
    location = /fail { return 500 "failing\\n"; }
    location = /conn { default_type text/plain; return 200 "$connection $connection_requests"; }
    location ^~ /slow/ { limit_rate 100k; rewrite ^/slow/(.*)$ /$1 break; }
    """

    init() throws {
        pair = try ServerPair("inbound", locations: Self.locations)
        try pair.makeFile("1m.bin", bytes: 1_048_576)
        try "hello from nginx\n".write(to: pair.work.appendingPathComponent("hello.txt"), atomically: true, encoding: .utf8)
        sha1m = try pair.digest("1m.bin")
    }

    func profile(_ text: String, name: String = "proxy.conf") throws -> String {
        let path = pair.path(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A profile of `Self.hosts`, everything DIRECT, and `lines` as its [Body Rewrite] section.
    func bodyRewriteProfile(_ lines: String) throws -> String {
        try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)\n\n[Body Rewrite]\n\(lines)\n")
    }

    /// A running `sluice proxy` in the host namespace.
    struct Server {
        var child: ChildProcess
        var log: String

        /// SIGTERM, then the log (which ends with the exit summary).
        func stop() -> String {
            child.terminate(graceMilliseconds: 5000)
            return (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        }

        /// Waits (bounded) until `flowLog` holds `lines` lines, then stops.
        /// A client that has read its whole answer has not always seen the
        /// proxy end the connection yet (the upstream's close is a round trip
        /// more): stopping at once would log it cut off by the stop.
        func stop(once flowLog: String, has lines: Int) -> String {
            _ = TestNetwork.waitUntil(seconds: 10) {
                ((try? String(contentsOfFile: flowLog, encoding: .utf8)) ?? "").split(separator: "\n").count >= lines
            }
            return stop()
        }
    }

    /// Starts `sluice proxy ARGS` (through `through`, a command that execs it)
    /// and waits (bounded) until each port listens on loopback.
    func start(_ arguments: [String], ports: [Int], through: [String] = []) throws -> Server {
        let log = pair.path("sluice-proxy-\(ports.map(String.init).joined(separator: "-")).log")
        let child = try net.start(through + [sluiceBinary, "proxy"] + arguments, in: host, log: log)
        let listening = TestNetwork.waitUntil(seconds: 15) {
            let ss = (try? self.net.run(["ss", "-ltn"], in: self.host).output) ?? ""
            return ports.allSatisfy { ss.contains("127.0.0.1:\($0) ") }
        }
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(listening, "sluice proxy did not listen: \(text)")
        if !listening { throw TestNetwork.CommandFailed(command: ["sluice", "proxy"] + arguments, status: 1, output: text) }
        return Server(child: child, log: log)
    }

    /// Runs a shell script in the host namespace (where curl meets Sluice's listeners).
    func client(_ script: String, timeout: Double = 60) throws -> (status: Int32, output: String) {
        try net.run(["bash", "-c", script], in: host, check: false, timeout: timeout)
    }

    /// Each client and upstream connection holds a descriptor: started with a
    /// soft open-files limit of 256, the proxy lifts it to the hard one.
    @Test func theProxyLiftsItsSoftOpenFilesLimit() throws {
        let server = try start(["--listen", "127.0.0.1:11090"], ports: [11090], through: ["prlimit", "--nofile=256:20000", "--"])
        let limits = (try? String(contentsOfFile: "/proc/\(server.child.pid)/limits", encoding: .utf8)) ?? ""
        _ = server.stop()
        let openFiles = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }?.split(separator: " ", omittingEmptySubsequences: true)
        #expect(openFiles.map { Array($0[3...4]) } == ["20000", "20000"], "\(limits)")
    }

    /// With 20 descriptors for 30 clients: the ones that get descriptors are
    /// relayed, the others fail alone, and the proxy says why once instead of
    /// retrying accept(2) in a loop (the listener stays readable while its
    /// backlog holds clients it cannot take).
    @Test func runningOutOfDescriptorsIsSaidOnceAndDoesNotSpin() throws {
        let server = try start(["--listen", "127.0.0.1:11091"], ports: [11091], through: ["prlimit", "--nofile=20:20", "--"])
        let r = try client("for i in $(seq 30); do curl -s -m 20 -o /dev/null -w '%{http_code}\\n' --socks5 127.0.0.1:11091 http://10.88.0.2:8080/1m.bin & done; wait")
        let summary = server.stop()
        let codes = r.output.split(separator: "\n")
        #expect(codes.count == 30, "\(r.output)")
        #expect(codes.contains("200"), "\(r.output)\n\(summary)")
        let warnings = summary.components(separatedBy: "out of file descriptors (the limit is 20)").count - 1
        #expect(warnings == 1, "\(summary)")
        #expect(!summary.contains("accept on socks5 listener"), "\(summary)")
        #expect(summary.contains("proxy: 30 connections"), "every client was taken in the end: \(summary)")
    }

    @Test func socks5CarriesNamesAddressesAndBigFiles() throws {
        let path = try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)")
        let server = try start(["--listen", "127.0.0.1:11080", "--profile", path], ports: [11080])
        let r = try client("""
        curl -sS -m 10 --socks5-hostname 127.0.0.1:11080 http://origin.test:8080/hello.txt
        curl -sS -m 10 --socks5 127.0.0.1:11080 http://10.88.0.2:8080/hello.txt
        curl -sS -m 10 --socks5 127.0.0.1:11080 'http://[fd00:88::2]:8080/hello.txt'
        curl -sS -m 30 --socks5-hostname 127.0.0.1:11080 http://origin.test:8080/1m.bin | sha256sum | cut -c1-64
        curl -sS -m 30 --socks5 127.0.0.1:11080 http://10.88.0.2:8080/1m.bin | sha256sum | cut -c1-64
        """)
        let summary = server.stop()
        #expect(r.output == "hello from nginx\nhello from nginx\nhello from nginx\n\(sha1m)\n\(sha1m)\n", "\(r.output)\n\(summary)")
        #expect(summary.contains("proxy: 5 connections (5 relayed"), "\(summary)")
        #expect(summary.contains("signal 15: stopping"), "\(summary)")
    }

    /// Names as the host's programs know them: localhost (and /etc/hosts)
    /// without DNS, and a [Host] name written with its trailing dot, through
    /// the HTTP listener (absolute form and CONNECT) and SOCKS5. localhost
    /// got a 504 and `origin.test.` missed its [Host] line on CONNECT and SOCKS5.
    @Test func localhostAndTrailingDotsResolve() throws {
        let path = try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)")
        let web = pair.path("localhost-web")
        try FileManager.default.createDirectory(atPath: web, withIntermediateDirectories: true)
        try "on the host's loopback\n".write(toFile: web + "/hi.txt", atomically: true, encoding: .utf8)
        _ = try net.start(["/usr/bin/python3", "-m", "http.server", "18093", "--bind", "127.0.0.1", "--directory", web], in: host,
                          log: pair.path("localhost-web.log"))
        #expect(TestNetwork.waitUntil(seconds: 10) { ((try? self.net.run(["ss", "-ltn"], in: self.host).output) ?? "").contains("127.0.0.1:18093 ") })
        let server = try start(["--listen", "127.0.0.1:11094", "--http-listen", "127.0.0.1:18094", "--profile", path], ports: [11094, 18094])
        let r = try client("""
        curl -sS -m 10 --proxy http://127.0.0.1:18094 http://localhost:18093/hi.txt
        curl -sS -m 10 --socks5-hostname 127.0.0.1:11094 http://localhost:18093/hi.txt
        curl -sS -m 10 -p --proxy http://127.0.0.1:18094 http://origin.test.:8080/hello.txt
        curl -sS -m 10 --socks5-hostname 127.0.0.1:11094 http://origin.test.:8080/hello.txt
        """)
        let summary = server.stop()
        #expect(r.output == "on the host's loopback\non the host's loopback\nhello from nginx\nhello from nginx\n", "\(r.output)\n\(summary)")
    }

    @Test func httpProxyForwardsAbsoluteFormAndTunnelsConnect() throws {
        let path = try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)")
        let server = try start(["--listen", "127.0.0.1:11081", "--http-listen", "127.0.0.1:18081", "--profile", path],
                               ports: [11081, 18081])
        let r = try client("""
        curl -sS -m 10 --proxy http://127.0.0.1:18081 http://origin.test:8080/hello.txt
        curl -sS -m 10 -p --proxy http://127.0.0.1:18081 http://origin.test:8080/hello.txt
        curl -sS -m 10 --proxy http://127.0.0.1:18081 'http://[fd00:88::2]:8080/hello.txt'
        curl -sS -m 30 --proxy http://127.0.0.1:18081 http://origin.test:8080/1m.bin | sha256sum | cut -c1-64
        curl -sS -m 30 -p --proxy http://127.0.0.1:18081 http://10.88.0.2:8080/1m.bin | sha256sum | cut -c1-64
        curl -sS -m 10 -o /dev/null -w '%{http_code}\\n' --proxy http://127.0.0.1:18081 http://origin.test:8080/missing
        """)
        let summary = server.stop()
        #expect(r.output == "hello from nginx\nhello from nginx\nhello from nginx\n\(sha1m)\n\(sha1m)\n404\n", "\(r.output)\n\(summary)")
        #expect(summary.contains("proxy: 6 connections (6 relayed"), "\(summary)")
    }

    /// Plain HTTP through the HTTP listener meets the profile's HTTP rules as
    /// a tunnel's app does: URL Rewrite (a new upstream, a redirect), Map
    /// Local, Header Rewrite both ways, a 502 for an upstream that answers
    /// nothing, and [Statistics] in the exit summary. Until 2026-12-01 only
    /// the [Rule] lines applied here.
    @Test func httpRulesApplyToForwardedRequests() throws {
        _ = try net.start(["/usr/bin/python3", "-c", """
        import socket
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", 9105)); s.listen(4); s.settimeout(30)
        c, _ = s.accept(); c.settimeout(30); c.recv(65536); c.close()
        """], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9105"))
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)
        closed.test = 10.88.0.2

        [URL Rewrite]
        ^http://api\\.test/(.*) http://origin.test:8080/$1 header
        ^http://legacy\\.test/(.*) http://origin.test:8080/$1 302

        [Map Local]
        ^http://mock\\.test/config$ data-type=text data="{}" header="Content-Type:application/json"

        [Header Rewrite]
        http-request ^http://origin\\.test:8080/ header-add X-Env staging
        http-request ^http://origin\\.test:8080/ header-del X-Debug-Token
        http-response ^http://origin\\.test:8080/ header-add X-Seen-By sluice

        [Statistics]
        all = ".*", key=host
        """)
        let server = try start(["--http-listen", "127.0.0.1:18089", "--profile", path], ports: [18089])
        let proxy = "--proxy http://127.0.0.1:18089"
        let r = try client("""
        curl -sS -m 10 \(proxy) -H 'X-Debug-Token: secret' http://origin.test:8080/echo
        curl -sS -m 10 \(proxy) http://api.test/echo
        curl -s -m 10 -o /dev/null -w '%{http_code} %{redirect_url}\\n' \(proxy) http://legacy.test/hello.txt
        curl -s -m 10 -w ' %{http_code} %{content_type}\\n' \(proxy) http://mock.test/config
        curl -s -m 10 -D - -o /dev/null \(proxy) http://origin.test:8080/hello.txt | tr -d '\\r' | grep -i '^x-seen-by:'
        curl -s -m 10 -o /dev/null -w '%{http_code}\\n' \(proxy) http://origin.test:8080/fail
        curl -sS -m 30 \(proxy) http://origin.test:8080/1m.bin | sha256sum | cut -c1-64
        curl -s -m 10 -w ' %{http_code}\\n' \(proxy) http://closed.test:9105/
        curl -s -m 10 -o /dev/null -w '%{http_code}\\n' \(proxy) http://closed.test:9/
        """)
        let summary = server.stop()
        let lines = r.output.split(separator: "\n").map(String.init)
        #expect(lines == [
            "method=GET host=origin.test env=staging token=",
            "method=GET host=origin.test env=staging token=",
            "302 http://origin.test:8080/hello.txt",
            "{} 200 application/json",
            "X-Seen-By: sluice",
            "500",
            sha1m,
            "sluice: the upstream closed before answering",
            " 502",
            "502",
        ], "\(r.output)\n\(summary)")
        #expect(summary.contains("2 answered by the profile"), "\(summary)")
        // The table: origin.test 5 requests (4 × 2xx, 1 × 5xx), the redirect
        // and the mock under their own hosts, closed.test's two failures.
        let rows = summary.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        func row(_ key: String) -> [String]? { rows.first { $0.first == key }.map { Array($0.prefix(6)) } }
        #expect(row("origin.test") == ["origin.test", "5", "4", "0", "0", "1"], "\(summary)")
        #expect(row("legacy.test") == ["legacy.test", "1", "0", "1", "0", "0"], "\(summary)")
        #expect(row("mock.test") == ["mock.test", "1", "1", "0", "0", "0"], "\(summary)")
        #expect(row("closed.test") == ["closed.test", "2", "0", "0", "0", "0"], "\(summary)")
        #expect(summary.contains("refused 1"), "\(summary)")
    }

    /// A plain-HTTP client's connection is kept alive across requests, to
    /// one origin or several (the client's `num_connects` stays 0), and so
    /// is the upstream connection while the requests go to the same place
    /// (nginx's `$connection_requests` counts on); bodies of every framing
    /// cross intact. Until 2026-12-01 each request took its own connection.
    @Test func httpClientsAreKeptAliveAcrossRequests() throws {
        let path = try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)")
        let server = try start(["--http-listen", "127.0.0.1:18090", "--profile", path], ports: [18090])
        let proxy = "--proxy http://127.0.0.1:18090"
        let download = pair.path("kept-alive-1m.bin")
        let r = try client("""
        curl -sS -m 30 \(proxy) -w ' %{num_connects}\\n' http://origin.test:8080/conn \\
          --next \(proxy) -w ' %{num_connects}\\n' -d 'field=value' http://origin.test:8080/conn \\
          --next \(proxy) -o \(download) -w '%{http_code} %{num_connects}\\n' http://origin.test:8080/1m.bin \\
          --next \(proxy) -w ' %{num_connects}\\n' -H 'Transfer-Encoding: chunked' -d 'abc' http://origin.test:8080/conn \\
          --next \(proxy) -w ' %{num_connects}\\n' 'http://[fd00:88::2]:8080/conn' \\
          --next \(proxy) -o /dev/null -w '%{http_code} %{num_connects}\\n' http://origin.test:8080/missing \\
          --next \(proxy) -w ' %{num_connects}\\n' http://origin.test:8080/conn
        sha256sum \(download) | cut -c1-64
        """)
        let summary = server.stop()
        let lines = r.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(lines.count == 8, "\(r.output)\n\(summary)")
        guard lines.count == 8, lines.allSatisfy({ !$0.isEmpty }) else { return }
        // nginx's connection number, its request count on it, and curl's new connections.
        let first = lines[0][0]
        #expect(lines[0] == [first, "1", "1"], "\(r.output)")
        #expect(lines[1] == [first, "2", "0"], "\(r.output)")
        #expect(lines[2] == ["200", "0"], "\(r.output)")
        #expect(lines[3] == [first, "4", "0"], "\(r.output)")
        #expect(lines[4].count == 3 && lines[4][0] != first && lines[4][1] == "1" && lines[4][2] == "0", "another origin: \(r.output)")
        #expect(lines[5] == ["404", "0"], "\(r.output)")
        #expect(lines[6].count == 3 && lines[6][1] == "2" && lines[6][2] == "0", "back to the first origin, on a new upstream: \(r.output)")
        #expect(lines[7] == [sha1m], "\(r.output)")
        #expect(summary.contains("proxy: 1 connections (1 relayed"), "\(summary)")
    }

    /// Requests pipelined in one write are answered in order, each planned
    /// on its own; a response framed by chunks or by the origin's close ends
    /// where it should; an HTTP/1.0 client's origin is asked to close; and
    /// a 101 turns the connection into a tunnel that carries the bytes the
    /// client sent right behind its request.
    @Test func pipelinedChunkedAndUpgradedExchanges() throws {
        let origin = pair.path("origin-9107.py")
        try """
        import socket, threading
        def handle(c):
            c.settimeout(20); buf = b""
            try:
                while True:
                    while b"\\r\\n\\r\\n" not in buf:
                        d = c.recv(65536)
                        if not d: return
                        buf += d
                    head, buf = buf.split(b"\\r\\n\\r\\n", 1)
                    path = head.split(b" ")[1].decode()
                    conn = ([l.split(b":", 1)[1].strip() for l in head.split(b"\\r\\n")[1:] if l.lower().startswith(b"connection:")] or [b"-"])[0].decode()
                    length = int(([l.split(b":", 1)[1].strip() for l in head.split(b"\\r\\n")[1:] if l.lower().startswith(b"content-length:")] or [b"0"])[0])
                    while len(buf) < length:
                        d = c.recv(65536)
                        if not d: return
                        buf += d
                    body, buf = buf[:length], buf[length:]
                    if path == "/chunked":
                        c.sendall(b"HTTP/1.1 200 OK\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n5\\r\\nhello\\r\\n7\\r\\n world!\\r\\n0\\r\\n\\r\\n")
                    elif path == "/close10":
                        c.sendall(("HTTP/1.0 200 OK\\r\\n\\r\\nto the close, conn=%s\\n" % conn).encode()); return
                    elif path == "/ws":
                        c.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: test\\r\\nConnection: Upgrade\\r\\n\\r\\n")
                        data = buf
                        while True:
                            if data: c.sendall(b"echo:" + data)
                            data = c.recv(65536)
                            if not data: return
                    else:
                        msg = ("%s conn=%s%s\\n" % (path, conn, " body=%d" % len(body) if body else "")).encode()
                        c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(msg) + msg)
            finally:
                c.close()
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", 9107)); s.listen(16); s.settimeout(60)
        while True:
            c, _ = s.accept()
            threading.Thread(target=handle, args=(c,), daemon=True).start()
        """.write(toFile: origin, atomically: true, encoding: .utf8)
        _ = try net.start(["/usr/bin/python3", origin], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9107"))
        let path = try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)")
        let server = try start(["--http-listen", "127.0.0.1:18091", "--profile", path], ports: [18091])
        let r = try client("""
        get() { printf 'GET http://origin.test:9107/%s HTTP/1.1\\r\\nHost: origin.test:9107\\r\\n%b\\r\\n' "$1" "$2"; }
        { get one ''; get chunked ''; get two 'Connection: close\\r\\n'; } | nc -N 127.0.0.1 18091 | tr -d '\\r'
        echo ---
        # Two 60,000-byte bodies and a request behind them in one stream: more than a relay buffer holds at once.
        post() { printf 'POST http://origin.test:9107/%s HTTP/1.1\\r\\nHost: origin.test:9107\\r\\nContent-Length: 60000\\r\\n\\r\\n' "$1"; head -c 60000 /dev/zero; }
        { post big1; post big2; get last 'Connection: close\\r\\n'; } | nc -N 127.0.0.1 18091 | tr -d '\\r' | grep conn=
        echo ---
        curl -sS -m 10 --proxy http://127.0.0.1:18091 http://origin.test:9107/close10 --next --proxy http://127.0.0.1:18091 -w '%{num_connects}\\n' http://origin.test:9107/after
        curl -sS -m 10 --http1.0 --proxy http://127.0.0.1:18091 http://origin.test:9107/old
        echo ---
        { printf 'GET http://origin.test:9107/ws HTTP/1.1\\r\\nHost: origin.test:9107\\r\\nConnection: Upgrade\\r\\nUpgrade: test\\r\\n\\r\\nearly'; } | nc -N 127.0.0.1 18091 | tr -d '\\r'
        echo
        """)
        let summary = server.stop()
        #expect(r.output == """
        HTTP/1.1 200 OK
        Content-Length: 12

        /one conn=-
        HTTP/1.1 200 OK
        Transfer-Encoding: chunked

        5
        hello
        7
         world!
        0

        HTTP/1.1 200 OK
        Content-Length: 16

        /two conn=close
        ---
        /big1 conn=- body=60000
        /big2 conn=- body=60000
        /last conn=close
        ---
        to the close, conn=-
        /after conn=-
        1
        /old conn=close
        ---
        HTTP/1.1 101 Switching Protocols
        Upgrade: test
        Connection: Upgrade

        echo:early

        """, "\(r.output)\n\(summary)")
    }

    /// `--har` records the HTTP listener's plain-HTTP exchanges as exec's
    /// does: HAR 1.2, bodies, the URL before a rewrite, a local answer marked
    /// as such, and one connection id for a kept-alive client's requests.
    @Test func harRecordsTheHTTPListenersExchanges() throws {
        let har = pair.path("proxy.har")
        let path = try profile(ServerPair.harProfile(hosts: Self.hosts))
        let server = try start(["--http-listen", "127.0.0.1:18092", "--profile", path, "--har", har], ports: [18092])
        let proxy = "--proxy http://127.0.0.1:18092"
        let r = try client("""
        curl -s -o /dev/null \(proxy) http://origin.test:8080/hello.txt --next -o /dev/null \(proxy) http://origin.test:8080/missing
        curl -s -o /dev/null \(proxy) http://api.test/hello.txt
        curl -s -o /dev/null \(proxy) --data 'a=1' http://origin.test:8080/echo
        curl -s -o /dev/null \(proxy) http://mock.test/config
        """)
        let summary = server.stop()
        #expect(r.status == 0, "\(r.output)")
        #expect(summary.contains("HAR: 5 entries written"), "\(summary)")
        let out = try net.run(["/usr/bin/python3", "-c", ProfileTests.harValidator, har]).output
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.count == 5, "\(out)\n\(summary)")
        guard lines.count == 5 else { return }
        #expect(lines[0] == "GET http://origin.test:8080/hello.txt 200 DIRECT False None 'hello from nginx\\n' None 1", "\(out)")
        #expect(lines[1].hasPrefix("GET http://origin.test:8080/missing 404 DIRECT False None") && lines[1].hasSuffix(" 1"), "\(out)")
        #expect(lines[2].hasPrefix("GET http://origin.test:8080/hello.txt 200 DIRECT False http://api.test/hello.txt 'hello from nginx\\n'"), "\(out)")
        #expect(lines[3].hasPrefix("POST http://origin.test:8080/echo 200 DIRECT False None 'method=POST ") && lines[3].contains(" a=1 "), "\(out)")
        #expect(lines[4].hasPrefix("GET http://mock.test/config 200 local True None '{}'"), "\(out)")
    }

    /// A relayed client whose FIN went upstream is probed, as exec's apps
    /// are (`ExecTests.aPlainFlowEndsOnceItsAppIsGone`): once a closed
    /// client's socket is gone, the relay ends and the silent server's
    /// connection is reset; a half-closed client keeps its relay. The relay
    /// stayed for good.
    @Test func aRelayEndsOnceItsClientIsGone() throws {
        let events = try pair.startSilentAfterFINServer(port: 9114)
        let server = try start(["--listen", "127.0.0.1:11097"], ports: [11097])
        let prelude = """
        import socket, struct
        def socks(host, port):
            s = socket.create_connection(("127.0.0.1", 11097)); s.sendall(b"\\x05\\x01\\x00"); s.recv(2)
            s.sendall(b"\\x05\\x01\\x00\\x01" + socket.inet_aton(host) + struct.pack(">H", port)); s.recv(10)
            return s
        """
        let r = try client(ServerPair.closedThenHalfClosedClients(events: events, connect: "socks(\"10.88.0.2\", 9114)", prelude: prelude),
                           timeout: 150)
        let summary = server.stop()
        ServerPair.expectClosedClientReset(r.output, log: summary)
    }

    /// The same through an HTTP CONNECT tunnel that moved to pipes (past
    /// 256 KiB, `spliceIfWorthIt`): there the client's socket is no longer
    /// read once its FIN came, so only its probes' failure can end the relay.
    @Test func aSplicedRelayEndsOnceItsClientIsGone() throws {
        let events = try pair.startSilentAfterFINServer(port: 9115)
        let server = try start(["--http-listen", "127.0.0.1:18098"], ports: [18098], through: ["env", "SLUICE_DEBUG=1"])
        let prelude = """
        import socket
        def tunnel(host, port):
            s = socket.create_connection(("127.0.0.1", 18098))
            s.sendall(("CONNECT %s:%d HTTP/1.1\\r\\nHost: %s:%d\\r\\n\\r\\n" % (host, port, host, port)).encode())
            head = b""
            while b"\\r\\n\\r\\n" not in head: head += s.recv(1)
            assert head.startswith(b"HTTP/1.1 200"), head
            return s
        """
        let r = try client(ServerPair.closedThenHalfClosedClients(events: events, connect: "tunnel(\"10.88.0.2\", 9115)", prelude: prelude,
                                                                  payload: "b\"x\" * 400000"),
                           timeout: 150)
        let summary = server.stop()
        ServerPair.expectClosedClientReset(r.output, log: summary)
        #expect(summary.components(separatedBy: "spliced from here on").count - 1 == 2, "both tunnels spliced\n\(summary)")
    }

    /// The HTTP listener's HAR and flow log split an upload from the
    /// origin's think time as exec's do (`ExecTests.timingsTellTheUploadFromTheWait`):
    /// they had no send, and the upload counted as wait.
    @Test func timingsTellTheUploadFromTheWait() throws {
        try pair.startSlowReplyServer(port: 9203)
        let har = pair.path("proxy-timings.har"), log = pair.path("proxy-timings.flows")
        let server = try start(["--http-listen", "127.0.0.1:18097", "--har", har, "--flow-log", log], ports: [18097])
        let r = try client(ServerPair.slowUpload(port: 9203, curlOptions: "--proxy http://127.0.0.1:18097"))
        let summary = server.stop(once: log, has: 2)
        #expect(r.output == "ok\n", "\(r.output)\n\(summary)")
        try pair.expectUploadTimings(har: har, log: log)
    }

    /// A WebSocket through the HTTP listener is one HAR entry with its
    /// messages, as through exec (`ExecTests.webSocketMessagesAreInTheHAR`);
    /// it was its upgrade request alone, and spliced past 256 KiB.
    @Test func harRecordsAWebSocketThroughTheHTTPListener() throws {
        let clientScript = try pair.startWebSocketServer(port: 9200)
        let har = pair.path("proxy-ws.har")
        let server = try start(["--http-listen", "127.0.0.1:18096", "--har", har, "--har-body-limit", "1000"], ports: [18096])
        let r = try client("python3 \(clientScript) ws://10.88.0.2:9200/chat proxy 127.0.0.1:18096")
        let summary = server.stop()
        #expect(r.status == 0 && r.output.hasPrefix("echo: hello\necho: fragmented message\npong p1\n") && r.output.hasSuffix("70006\nclosed 1000\n"),
                "\(r.output)\n\(summary)")
        let entries = (try? net.run(["/usr/bin/python3", "-c", """
        import json, sys
        e = json.load(open(sys.argv[1]))["log"]["entries"]
        print(len(e), e[0]["request"]["url"], e[0]["response"]["status"], e[0]["_resourceType"])
        for m in e[0]["_webSocketMessages"]: print(m["type"], m["opcode"], len(m["data"]), m.get("_length"))
        """, har]).output) ?? "unreadable HAR"
        #expect(entries == """
        1 ws://10.88.0.2:9200/chat 101 websocket
        send 1 5 None
        receive 1 11 None
        send 1 18 None
        receive 1 24 None
        send 2 400 None
        receive 2 400 None
        send 1 1000 70000
        receive 1 1000 70006

        """, "\(entries)\n\(summary)")
    }

    /// The HTTP listener's HAR shows chunked bodies as their data, as exec's
    /// does (`ProfileTests.harShowsChunkedBodiesAsTheirData`).
    @Test func harShowsChunkedBodiesAsTheirData() throws {
        try ProfileTests.chunkedOrigin.write(toFile: pair.path("chunked-origin.py"), atomically: true, encoding: .utf8)
        try net.start(["/usr/bin/python3", pair.path("chunked-origin.py")], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9191"))
        let har = pair.path("proxy-chunked.har")
        let path = try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)\n")
        let server = try start(["--http-listen", "127.0.0.1:18094", "--profile", path, "--har", har, "--har-body-limit", "8"], ports: [18094])
        let r = try client("""
        curl -sS --proxy http://127.0.0.1:18094 http://origin.test:9191/down; echo
        printf 'abcdefghijklmnopqrstuvwxyz' | curl -sS -o /dev/null --proxy http://127.0.0.1:18094 -H 'Transfer-Encoding: chunked' --data-binary @- http://origin.test:9191/up
        """)
        let summary = server.stop()
        #expect(r.output == "hello world\n", "\(r.output)\n\(summary)")
        let out = try net.run(["/usr/bin/python3", "-c", ProfileTests.chunkedHARSummary, har]).output
        #expect(out.split(separator: "\n").map(String.init).sorted() == ProfileTests.chunkedHARExpected, "\(out)\n\(summary)")
    }

    /// `--flow-log` writes exec's format: a line per client connection (how
    /// it was routed and how it ended) and one per plain-HTTP request.
    @Test func theFlowLogHasALinePerConnectionAndPerRequest() throws {
        let log = pair.path("proxy-flows.jsonl")
        let path = try profile("""
        [Rule]
        DOMAIN,blocked.test,REJECT
        FINAL,DIRECT
        \(Self.hosts)
        closed.test = 10.88.0.2

        [Map Local]
        ^http://mock\\.test/config$ data-type=text data="{}" header="Content-Type:application/json"
        """)
        let server = try start(["--listen", "127.0.0.1:11093", "--http-listen", "127.0.0.1:18093", "--profile", path, "--flow-log", log],
                               ports: [11093, 18093])
        let proxy = "--proxy http://127.0.0.1:18093"
        let r = try client("""
        curl -s -o /dev/null --socks5-hostname 127.0.0.1:11093 http://origin.test:8080/hello.txt
        curl -s -o /dev/null --socks5-hostname 127.0.0.1:11093 http://blocked.test:8080/hello.txt
        curl -s -o /dev/null \(proxy) http://origin.test:8080/hello.txt --next -o /dev/null \(proxy) http://origin.test:8080/missing
        curl -s -o /dev/null \(proxy) http://mock.test/config
        curl -s -o /dev/null \(proxy) http://closed.test:9/
        true
        """)
        let summary = server.stop(once: log, has: 9)
        #expect(r.status == 0, "\(r.output)")
        #expect(summary.contains("flow log: "), "\(summary)")
        let out = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        for line in open(sys.argv[1]):
            r = json.loads(line)
            if r["kind"] == "connection":
                print("connection", r["connection"], r["domain"], r["destinationPort"], r["policy"], r["status"], r["bytesUp"] > 0)
            else:
                print("request", r["connection"], r["request"], r["method"], r["url"], r["status"], r["policy"])
                print("bodies", r["url"], r["requestBodyBytes"], r["responseBodyBytes"])
        """, log]).output
        let all = out.split(separator: "\n").map(String.init)
        // The bodies' sizes, not the heads' (hello.txt is 17 bytes; the Map Local answer's body is `{}`).
        #expect(all.contains("bodies http://origin.test:8080/hello.txt 0 17"), "\(out)")
        #expect(all.contains("bodies http://mock.test/config 0 2"), "\(out)")
        let lines = all.filter { !$0.hasPrefix("bodies ") }.sorted()
        #expect(lines == [
            "connection 1 origin.test 8080 DIRECT closed True",
            "connection 2 blocked.test 8080 REJECT blocked False",
            "connection 3 origin.test 8080 DIRECT closed True",
            "connection 4 mock.test 80 local closed False",
            "connection 5 closed.test 9 DIRECT refused False",
            "request 3 0 GET http://origin.test:8080/hello.txt 200 DIRECT",
            "request 3 1 GET http://origin.test:8080/missing 404 DIRECT",
            "request 4 0 GET http://mock.test/config 200 local",
            "request 5 0 GET http://closed.test:9/ None DIRECT",
        ], "\(out)\n\(summary)")
    }

    /// An origin that closes its kept-alive connection as the next request
    /// arrives (its idle timeout crossing the request): a GET goes again on
    /// a new connection and the client never knows (the flow log says it
    /// went again); a POST with a body is not sent twice, and its client
    /// gets a 502.
    @Test func aRequestOnAnUpstreamClosedUnderItIsRetriedWhenIdempotent() throws {
        let origin = pair.path("origin-9109.py")
        try """
        import socket
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", 9109)); s.listen(8); s.settimeout(30)
        def head(c, buf):
            while b"\\r\\n\\r\\n" not in buf:
                d = c.recv(65536)
                if not d: return None, b""
                buf += d
            h, rest = buf.split(b"\\r\\n\\r\\n", 1)
            n = int(([l.split(b":", 1)[1] for l in h.split(b"\\r\\n") if l.lower().startswith(b"content-length:")] or [b"0"])[0])
            while len(rest) < n: rest += c.recv(65536)
            return h, rest[n:]
        for conn in range(4):
            c, _ = s.accept(); c.settimeout(30)
            # Each connection answers one request, then closes on the next one without a word.
            h, buf = head(c, b"")
            if h is None: c.close(); continue
            path = h.split(b" ")[1]
            msg = b"answered " + path + b" on connection %d\\n" % conn
            c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(msg) + msg)
            head(c, buf)
            c.close()
        """.write(toFile: origin, atomically: true, encoding: .utf8)
        _ = try net.start(["/usr/bin/python3", origin], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9109"))
        let path = try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)")
        let log = pair.path("retried-9109.jsonl")
        let server = try start(["--http-listen", "127.0.0.1:18094", "--profile", path, "--flow-log", log], ports: [18094])
        let proxy = "--proxy http://127.0.0.1:18094"
        let r = try client("""
        curl -sS -m 10 \(proxy) -w '%{http_code} %{num_connects}\\n' http://origin.test:9109/a --next \(proxy) -w '%{http_code} %{num_connects}\\n' http://origin.test:9109/b
        curl -sS -m 10 \(proxy) -w '%{http_code}\\n' http://origin.test:9109/c --next \(proxy) -o /dev/null -w '%{http_code}\\n' -d 'x=1' http://origin.test:9109/d
        """)
        let summary = server.stop()
        #expect(r.output == """
        answered /a on connection 0
        200 1
        answered /b on connection 1
        200 0
        answered /c on connection 2
        200
        502

        """, "\(r.output)\n\(summary)")
        let retries = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
        print(" ".join("%s:%d" % (l["url"][-1], l["retries"]) for l in lines if l["kind"] == "http"))
        """, log]).output
        #expect(retries == "a:0 b:1 c:0 d:0\n", "\(retries)")
    }

    @Test func credentialsAreRequiredWhenSet() throws {
        let path = try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)")
        let server = try start(["--listen", "127.0.0.1:11082", "--http-listen", "127.0.0.1:18082", "--profile", path,
                                "--auth", "alice:s3cret"], ports: [11082, 18082])
        let r = try client("""
        curl -sS -m 10 --socks5-hostname alice:s3cret@127.0.0.1:11082 http://origin.test:8080/hello.txt
        curl -sS -m 10 --socks5-hostname alice:wrong@127.0.0.1:11082 http://origin.test:8080/hello.txt 2>/dev/null; echo "socks-wrong=$?"
        curl -sS -m 10 --socks5-hostname 127.0.0.1:11082 http://origin.test:8080/hello.txt 2>/dev/null; echo "socks-none=$?"
        curl -sS -m 10 --proxy http://127.0.0.1:18082 --proxy-user alice:s3cret http://origin.test:8080/hello.txt
        curl -sS -m 30 -p --proxy http://127.0.0.1:18082 --proxy-user alice:s3cret http://origin.test:8080/1m.bin | sha256sum | cut -c1-64
        curl -s -m 10 -o /dev/null -w 'http-wrong=%{http_code}\\n' --proxy http://127.0.0.1:18082 --proxy-user alice:wrong http://origin.test:8080/hello.txt
        curl -s -m 10 -o /dev/null -w 'http-none=%{http_code}\\n' --proxy http://127.0.0.1:18082 http://origin.test:8080/hello.txt
        """)
        let summary = server.stop()
        let lines = r.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 7, "\(r.output)\n\(summary)")
        guard lines.count == 7 else { return }
        #expect(lines[0] == "hello from nginx")
        // curl 97: the SOCKS5 proxy refused the handshake (RFC 1929 status ≠ 0, or no acceptable method).
        #expect(lines[1] == "socks-wrong=97", "\(summary)")
        #expect(lines[2] == "socks-none=97", "\(summary)")
        #expect(lines[3] == "hello from nginx")
        #expect(lines[4] == sha1m)
        #expect(lines[5] == "http-wrong=407")
        #expect(lines[6] == "http-none=407")
        #expect(summary.contains("wrong credentials"), "\(summary)")
        #expect(summary.contains("3 relayed"), "\(summary)")
    }

    @Test func rejectRulesReachTheClient() throws {
        let path = try profile("""
        [Rule]
        DOMAIN,blocked.test,REJECT
        IP-CIDR,10.88.0.99/32,REJECT
        URL-REGEX,"^http://origin\\.test:8080/secret",REJECT-TINYGIF
        FINAL,DIRECT
        \(Self.hosts)
        """)
        let server = try start(["--listen", "127.0.0.1:11083", "--http-listen", "127.0.0.1:18083", "--profile", path],
                               ports: [11083, 18083])
        let r = try client("""
        curl -sS -m 10 --socks5-hostname 127.0.0.1:11083 http://blocked.test:8080/hello.txt 2>&1; echo "socks-name=$?"
        curl -sS -m 10 --socks5 127.0.0.1:11083 http://10.88.0.99:8080/hello.txt 2>&1; echo "socks-address=$?"
        curl -s -m 10 -w ' %{http_code}\\n' --proxy http://127.0.0.1:18083 http://blocked.test:8080/hello.txt
        curl -s -m 10 -p -o /dev/null -w 'connect=%{http_connect}\\n' --proxy http://127.0.0.1:18083 http://blocked.test:8080/hello.txt
        curl -sS -m 10 --socks5-hostname 127.0.0.1:11083 http://origin.test:8080/hello.txt
        curl -s -m 10 -o /dev/null -w 'url=%{http_code} %{content_type} %{size_download}\\n' --proxy http://127.0.0.1:18083 http://origin.test:8080/secret/x.gif
        """)
        let summary = server.stop()
        let lines = r.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 9, "\(r.output)\n\(summary)")
        guard lines.count == 9 else { return }
        // REP 2: connection not allowed by ruleset; curl shows the code and exits 97.
        #expect(lines[0].contains("(2)"), "\(lines[0])")
        #expect(lines[1] == "socks-name=97")
        #expect(lines[2].contains("(2)"), "\(lines[2])")
        #expect(lines[3] == "socks-address=97")
        // The rule's own answer for a plain request (body "Blocked by Sluice\n", then curl's status).
        #expect(lines[4] == "Blocked by Sluice", "\(lines[4])")
        #expect(lines[5] == " 403", "\(lines[5])")
        #expect(lines[6] == "connect=403", "\(lines[6])")
        #expect(lines[7] == "hello from nginx")
        // URL rules see an absolute-form request's URL: the rule's own answer, a 43-byte GIF.
        #expect(lines[8] == "url=200 image/gif 43", "\(lines[8])")
        #expect(summary.contains("5 refused by rules"), "\(summary)")
        // The address target met a DOMAIN rule it could not be tested against: said once, with the way out.
        #expect(summary.components(separatedBy: "rules that need a name (DOMAIN...) cannot match it").count == 2, "\(summary)")
        #expect(summary.contains("or run with --sniff"), "\(summary)")
    }

    @Test func unreachableTargetsFailFast() throws {
        let path = try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)")
        let server = try start(["--listen", "127.0.0.1:11084", "--http-listen", "127.0.0.1:18084", "--profile", path],
                               ports: [11084, 18084])
        let r = try client("""
        curl -sS -m 10 --socks5 127.0.0.1:11084 http://10.88.0.2:9/ 2>&1; echo "socks-refused=$?"
        curl -s -m 10 -o /dev/null -w 'http-refused=%{http_code}\\n' --proxy http://127.0.0.1:18084 http://10.88.0.2:9/
        """)
        let summary = server.stop()
        let lines = r.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(r.output)\n\(summary)")
        guard lines.count == 3 else { return }
        // REP 5: connection refused.
        #expect(lines[0].contains("(5)"), "\(lines[0])")
        #expect(lines[1] == "socks-refused=97")
        #expect(lines[2] == "http-refused=502")
        #expect(summary.contains("2 unreachable"), "\(summary)")
    }

    @Test func namesWithoutHostEntriesGoThroughTheHostsResolver() throws {
        // The host namespace's resolver is dnsmasq in the server namespace (`ip netns exec` binds this file).
        try net.start(["dnsmasq", "--no-daemon", "--no-resolv", "--no-hosts", "--bind-interfaces",
                       "--listen-address=10.88.0.2", "--port=53", "--host-record=web.sluice.test,10.88.0.2",
                       "--host-record=v6only.sluice.test,fd00:88::2", "--log-facility=/dev/null"], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:53"))
        try FileManager.default.createDirectory(atPath: "/etc/netns/\(host)", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: "/etc/netns/\(host)") }
        try "nameserver 10.88.0.2\n".write(toFile: "/etc/netns/\(host)/resolv.conf", atomically: true, encoding: .utf8)
        let server = try start(["--listen", "127.0.0.1:11089", "--http-listen", "127.0.0.1:18089"], ports: [11089, 18089])
        let r = try client("""
        curl -sS -m 10 --socks5-hostname 127.0.0.1:11089 http://web.sluice.test:8080/hello.txt
        curl -sS -m 10 --proxy http://127.0.0.1:18089 http://web.sluice.test:8080/hello.txt
        curl -sS -m 10 --socks5-hostname 127.0.0.1:11089 http://v6only.sluice.test:8080/hello.txt
        curl -sS -m 15 --socks5-hostname 127.0.0.1:11089 http://nx.sluice.test:8080/hello.txt 2>&1; echo "nx=$?"
        curl -s -m 15 -o /dev/null -w 'http-nx=%{http_code}\\n' --proxy http://127.0.0.1:18089 http://nx.sluice.test:8080/hello.txt
        """)
        let summary = server.stop()
        let lines = r.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 6, "\(r.output)\n\(summary)")
        guard lines.count == 6 else { return }
        #expect(lines[0] == "hello from nginx")
        #expect(lines[1] == "hello from nginx")
        // No A record: the AAAA answer is used.
        #expect(lines[2] == "hello from nginx", "\(summary)")
        // REP 4, host unreachable; 504 on the HTTP listener.
        #expect(lines[3].contains("(4)"), "\(lines[3])")
        #expect(lines[4] == "nx=97")
        #expect(lines[5] == "http-nx=504", "\(summary)")
    }

    /// The profile's dns-server is what the proxy asks for its clients' names.
    @Test func theProfilesDNSServerAnswersForItsClients() throws {
        try net.start(["dnsmasq", "--no-daemon", "--no-resolv", "--no-hosts", "--bind-interfaces",
                       "--listen-address=fd00:88::2", "--port=53", "--host-record=only.sluice.test,10.88.0.2",
                       "--log-facility=/dev/null"], in: pair.server)
        #expect(pair.waitForListener("[fd00:88::2]:53"))
        // The host's own resolver (nothing listens at 10.88.0.2:53 in this test) knows no such name.
        try FileManager.default.createDirectory(atPath: "/etc/netns/\(host)", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: "/etc/netns/\(host)") }
        try "nameserver 10.88.0.2\n".write(toFile: "/etc/netns/\(host)/resolv.conf", atomically: true, encoding: .utf8)
        let profile = pair.work.appendingPathComponent("dns-server.conf").path
        try "[General]\ndns-server = fd00:88::2\n[Rule]\nFINAL,DIRECT\n".write(toFile: profile, atomically: true, encoding: .utf8)
        let server = try start(["--listen", "127.0.0.1:11093", "--profile", profile], ports: [11093])
        let r = try client("curl -sS -m 10 --socks5-hostname 127.0.0.1:11093 http://only.sluice.test:8080/hello.txt 2>&1")
        let summary = server.stop()
        #expect(r.output == "hello from nginx\n", "\(r.output)\n\(summary)")
    }

    /// A Surge profile's socks5-listen and http-listen are the listeners when
    /// the command line names none (one it names wins).
    @Test func theProfilesListenersAreUsedWhenNoneAreGiven() throws {
        let path = try profile("""
        [General]
        socks5-listen = 127.0.0.1:11097
        http-listen = 127.0.0.1:18097
        [Rule]
        FINAL,DIRECT
        """)
        let server = try start(["--profile", path], ports: [11097, 18097])
        let r = try client("""
        curl -sS -m 10 --socks5 127.0.0.1:11097 http://10.88.0.2:8080/hello.txt
        curl -sS -m 10 --proxy http://127.0.0.1:18097 http://10.88.0.2:8080/hello.txt
        """)
        let summary = server.stop()
        #expect(r.output == "hello from nginx\nhello from nginx\n", "\(r.output)\n\(summary)")
    }

    /// SRC-IP sees the proxy's client: one bound to 127.0.0.2 is refused, one
    /// from 127.0.0.1 goes through.
    @Test func sourceIPRulesSeeTheClientsAddress() throws {
        let path = try profile("""
        [Rule]
        SRC-IP,127.0.0.2,REJECT
        FINAL,DIRECT
        """)
        let server = try start(["--listen", "127.0.0.1:11095", "--profile", path], ports: [11095])
        let r = try client("""
        curl -sS -m 10 --interface 127.0.0.2 --socks5 127.0.0.1:11095 http://10.88.0.2:8080/hello.txt 2>/dev/null; echo "from-2=$?"
        curl -sS -m 10 --socks5 127.0.0.1:11095 http://10.88.0.2:8080/hello.txt
        """)
        let summary = server.stop()
        #expect(r.output == "from-2=97\nhello from nginx\n", "\(r.output)\n\(summary)")
    }

    /// A [Host] `server:` line (split DNS) is what the proxy asks for those
    /// names: here a resolver on an IPv6 address and a port of its own, while
    /// the host's resolver (and [General] dns-server) know nothing of them.
    @Test func serverLinesResolveTheirNamesForTheProxysClients() throws {
        try net.start(["dnsmasq", "--no-daemon", "--no-resolv", "--no-hosts", "--bind-interfaces",
                       "--listen-address=fd00:88::2", "--port=5353", "--host-record=web.corp.sluice.test,10.88.0.2",
                       "--log-facility=/dev/null"], in: pair.server)
        #expect(pair.waitForListener("[fd00:88::2]:5353"))
        try FileManager.default.createDirectory(atPath: "/etc/netns/\(host)", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: "/etc/netns/\(host)") }
        try "nameserver 10.88.0.2\n".write(toFile: "/etc/netns/\(host)/resolv.conf", atomically: true, encoding: .utf8)
        let profile = pair.work.appendingPathComponent("split-dns.conf").path
        try "[Host]\n*.corp.sluice.test = server:[fd00:88::2]:5353\n[Rule]\nFINAL,DIRECT\n".write(toFile: profile, atomically: true, encoding: .utf8)
        let server = try start(["--listen", "127.0.0.1:11094", "--profile", profile], ports: [11094])
        let r = try client("curl -sS -m 10 --socks5-hostname 127.0.0.1:11094 http://web.corp.sluice.test:8080/hello.txt 2>&1")
        let summary = server.stop()
        #expect(r.output == "hello from nginx\n", "\(r.output)\n\(summary)")
    }

    /// Owner rules for local clients: the program and user behind each client
    /// connection (the other end of its socket to the listener) decide.
    @Test func localClientsAreToldApartByProgramAndUser() throws {
        let path = try profile("""
        [Rule]
        PROCESS-NAME,wget,REJECT
        UID,65534,REJECT
        FINAL,DIRECT
        \(Self.hosts)
        """)
        let log = pair.path("proxy-owner.jsonl")
        let server = try start(["--listen", "127.0.0.1:11094", "--http-listen", "127.0.0.1:18094", "--profile", path, "--flow-log", log],
                               ports: [11094, 18094])
        let r = try client("""
        curl -s -o /dev/null -w 'curl %{http_code}\\n' --proxy http://127.0.0.1:18094 http://origin.test:8080/hello.txt
        http_proxy=http://127.0.0.1:18094 wget -q -O /dev/null http://origin.test:8080/hello.txt; echo "wget $?"
        setpriv --reuid=65534 --regid=65534 --clear-groups curl -s -o /dev/null -w 'nobody %{http_code}\\n' --proxy http://127.0.0.1:18094 http://origin.test:8080/hello.txt
        curl -sS -o /dev/null --socks5-hostname 127.0.0.1:11094 http://origin.test:8080/hello.txt; echo "socks $?"
        setpriv --reuid=65534 --regid=65534 --clear-groups curl -s -o /dev/null --socks5-hostname 127.0.0.1:11094 http://origin.test:8080/hello.txt; echo "socks-nobody $?"
        """, timeout: 60)
        let summary = server.stop()
        // wget 8: the proxy's 403; curl 97: the SOCKS5 server refused (REP 2).
        #expect(r.output == "curl 200\nwget 8\nnobody 403\nsocks 0\nsocks-nobody 97\n", "\(r.output)\n\(summary)")
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        let connections = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["kind"] as? String == "connection" }
        let owners = Set(connections.map { "\($0["process"] ?? "-") \($0["uid"] ?? "-")" })
        #expect(owners == ["curl 0", "wget 0", "curl 65534"], "\(lines)")
    }

    @Test func deadTargetsAndDeadProxiesFailTheirClientsOnly() throws {
        let path = try profile("""
        [Proxy]
        dead = socks5, 127.0.0.1, 9

        [Rule]
        DOMAIN,dead.test,dead
        FINAL,DIRECT
        \(Self.hosts)
        dead.test = 10.88.0.2
        """)
        let server = try start(["--listen", "127.0.0.1:11092", "--http-listen", "127.0.0.1:18092", "--profile", path],
                               ports: [11092, 18092])
        let r = try client("""
        curl -sS -m 20 --socks5 127.0.0.1:11092 http://10.88.0.77:8080/ 2>&1; echo "silent=$?"
        curl -sS -m 10 --socks5-hostname 127.0.0.1:11092 http://dead.test:8080/ 2>&1; echo "dead-proxy=$?"
        curl -s -m 10 -o /dev/null -w 'http-dead-proxy=%{http_code}\\n' --proxy http://127.0.0.1:18092 http://dead.test:8080/
        curl -sS -m 10 --socks5-hostname 127.0.0.1:11092 http://origin.test:8080/hello.txt
        """, timeout: 60)
        let summary = server.stop()
        let lines = r.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 6, "\(r.output)\n\(summary)")
        guard lines.count == 6 else { return }
        // No one at 10.88.0.77 (ARP fails, or the connect deadline passes): REP 4, host unreachable.
        #expect(lines[0].contains("(4)"), "\(lines[0])")
        #expect(lines[1] == "silent=97")
        // The upstream proxy refuses the connection: the client hears REP 5 / 502, at once.
        #expect(lines[2].contains("(5)"), "\(lines[2])")
        #expect(lines[3] == "dead-proxy=97")
        #expect(lines[4] == "http-dead-proxy=502")
        #expect(lines[5] == "hello from nginx")
    }

    @Test func upstreamProxyRulesChainThroughAnotherListener() throws {
        // The first Sluice's rules send everything through the second one's SOCKS5 (with credentials) or HTTP listener.
        let downstream = try start(["--listen", "127.0.0.1:11090", "--http-listen", "127.0.0.1:18090",
                                    "--auth", "bob:pw", "--profile", try profile("[Rule]\nDOMAIN,blocked.test,REJECT\nFINAL,DIRECT\n\(Self.hosts)", name: "up.conf")],
                                   ports: [11090, 18090])
        let path = try profile("""
        [Proxy]
        up-socks = socks5, 127.0.0.1, 11090, username=bob, password=pw
        up-http = http, 127.0.0.1, 18090, username=bob, password=pw
        wrong-http = http, 127.0.0.1, 18090, username=bob, password=nope

        [Rule]
        DOMAIN,origin.test,up-socks
        DOMAIN,wrong.test,wrong-http
        FINAL,up-http
        \(Self.hosts)
        wrong.test = 10.88.0.2
        """)
        let server = try start(["--listen", "127.0.0.1:11091", "--http-listen", "127.0.0.1:18091", "--profile", path],
                               ports: [11091, 18091])
        let r = try client("""
        curl -sS -m 30 --socks5-hostname 127.0.0.1:11091 http://origin.test:8080/1m.bin | sha256sum | cut -c1-64
        curl -sS -m 30 --proxy http://127.0.0.1:18091 http://10.88.0.2:8080/1m.bin | sha256sum | cut -c1-64
        curl -s -m 10 -p --proxy http://127.0.0.1:18091 -o /dev/null -w '%{http_connect}\\n' http://blocked.test:8080/hello.txt
        curl -sS -m 10 --socks5-hostname 127.0.0.1:11091 http://blocked.test:8080/hello.txt 2>&1 | grep -o 'connection to blocked.test. ([0-9])'
        curl -s -m 10 -D - -o /dev/null --proxy http://127.0.0.1:18091 http://wrong.test:8080/hello.txt | tr -d '\\r' | grep -i -E '^(HTTP/|proxy-authenticate|x-sluice-error)'
        """)
        let summary = server.stop()
        let downstreamSummary = downstream.stop()
        // The upstream proxy's refusal by rule reaches the client as one (403, SOCKS5 reply 2), not as
        // "host unreachable" (504, reply 4): the tunnel's refusals had no word for it.
        // The upstream proxy's 407 (wrong credentials) is Sluice's to answer, not the client's: a 502 naming it.
        #expect(r.output == "\(sha1m)\n\(sha1m)\n403\nconnection to blocked.test. (2)\nHTTP/1.1 502 Bad Gateway\nX-Sluice-Error: the proxy wrong-http refused Sluice's credentials (407)\n",
                "\(r.output)\n\(summary)\n\(downstreamSummary)")
        #expect(downstreamSummary.contains("proxy: 5 connections (2 relayed"), "\(downstreamSummary)")
    }

    /// A plain-HTTP request to an origin that never answers is not waited on
    /// for a client that has gone: a client that resets its connection ends
    /// the upstream's at once, one that closes its socket (curl's own
    /// timeout) once the kernel has dropped its FIN-WAIT-2 orphan (which
    /// acknowledges keepalive probes until then: tcp_fin_timeout, 60 s by
    /// default, 5 s in this test's namespace) and a probe meets a reset. A
    /// client that only half-closes still gets its late answer, probed all
    /// along. Until 2026-12-05 the upstream connection stayed open for good.
    @Test func plainHTTPToASilentOriginEndsWhenTheClientGoes() throws {
        let events = pair.path("silent-origin.events")
        try """
        import socket, threading, time
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", 9111)); s.listen(8); s.settimeout(90)
        def serve(c):
            c.settimeout(60); start = time.time(); path = "?"
            try:
                head = c.recv(65536); path = head.split(b" ")[1].decode()
                if path == "/late":
                    time.sleep(12); c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 5\\r\\nConnection: close\\r\\n\\r\\nlate\\n")
                while c.recv(65536): pass
                how = "eof"
            except Exception as e:
                how = type(e).__name__
            with open("\(events)", "a") as f: f.write("%s %s %.0f\\n" % (path, how, time.time() - start))
        for _ in range(3):
            c, _ = s.accept(); threading.Thread(target=serve, args=(c,)).start()
        """.write(toFile: pair.path("silent-origin.py"), atomically: true, encoding: .utf8)
        try net.start(["/usr/bin/python3", pair.path("silent-origin.py")], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9111"))
        let path = try profile("""
        [Rule]
        FINAL,DIRECT

        [Host]
        silent.test = 10.88.0.2
        """, name: "silent.conf")
        try net.run(["sysctl", "-qw", "net.ipv4.tcp_fin_timeout=5"], in: host)
        let server = try start(["--profile", path, "--listen", "127.0.0.1:11096", "--http-listen", "127.0.0.1:18096"], ports: [11096, 18096])
        func origin() -> String { (try? String(contentsOfFile: events, encoding: .utf8)) ?? "" }
        // A reset: the origin's connection ends at once.
        let reset = try client("""
        python3 -c '
        import socket, struct, time
        s = socket.create_connection(("127.0.0.1", 18096), timeout=10)
        s.sendall(b"GET http://silent.test:9111/reset HTTP/1.1\\r\\nHost: silent.test:9111\\r\\n\\r\\n")
        time.sleep(1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); s.close()
        '
        """)
        #expect(reset.status == 0, "\(reset.output)")
        #expect(TestNetwork.waitUntil(seconds: 5) { origin().contains("/reset ") }, "\(origin())")
        // A half-close still gets its answer, though it comes after keepalive's first probes.
        let late = try client("""
        python3 -c '
        import socket
        s = socket.create_connection(("127.0.0.1", 18096), timeout=30)
        s.sendall(b"GET http://silent.test:9111/late HTTP/1.1\\r\\nHost: silent.test:9111\\r\\n\\r\\n")
        s.shutdown(socket.SHUT_WR); data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
        print(data.decode().split("\\r\\n")[0], repr(data.split(b"\\r\\n\\r\\n", 1)[1]))
        '
        """)
        #expect(late.output == "HTTP/1.1 200 OK b'late\\n'\n", "\(late.output)\n\(origin())")
        // curl gives up and closes: its orphan drops the probes, and the origin's connection ends.
        let curl = try client("curl -sS -m 2 -o /dev/null --proxy http://127.0.0.1:18096 http://silent.test:9111/gone; echo $?")
        #expect(curl.output.hasSuffix("28\n"), "\(curl.output)")
        let ended = TestNetwork.waitUntil(seconds: 40) { origin().contains("/gone ") }
        let summary = server.stop()
        #expect(ended, "\(origin())\n\(summary)")
        if let line = origin().split(separator: "\n").first(where: { $0.hasPrefix("/gone") }), let seconds = Int(line.split(separator: " ").last ?? "") {
            #expect(seconds <= 20, "\(line)")
        }
    }

    /// -q (or the profile's `loglevel = error`) silences the per-connection
    /// lines and the summary, as in the tunnel; errors stay. The proxy said
    /// every refusal and failure, and ignored the profile's loglevel.
    @Test func quietMeansQuiet() throws {
        let path = try profile("""
        [General]
        loglevel = error

        [Rule]
        DOMAIN,blocked.test,REJECT
        FINAL,DIRECT
        \(Self.hosts)
        """, name: "quiet.conf")
        let server = try start(["--profile", path, "--http-listen", "127.0.0.1:18097", "--no-control"], ports: [18097])
        let r = try client("""
        curl -s -m 10 -o /dev/null -w '%{http_code}\\n' --proxy http://127.0.0.1:18097 http://blocked.test:8080/hello.txt
        curl -s -m 10 -o /dev/null -w '%{http_code}\\n' --proxy http://127.0.0.1:18097 http://origin.test:1/
        """)
        let log = server.stop()
        #expect(r.output == "403\n502\n", "\(r.output)")
        #expect(log.isEmpty, "\(log)")
    }

    /// Relayed connections have no idle timeout, and both of their sockets
    /// carry keepalive (ss shows its timer), so dead ends are found.
    @Test func relayedSocketsCarryKeepalive() throws {
        try net.start(["python3", "-c", """
        import socket, time
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", 9101)); s.listen(4); s.settimeout(30)
        c, _ = s.accept(); time.sleep(30)
        """], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9101"))
        let server = try start(["--listen", "127.0.0.1:11089"], ports: [11089])
        let r = try client("""
        python3 -c '
        import socket, time
        s = socket.create_connection(("127.0.0.1", 11089), timeout=20)
        s.sendall(b"\\x05\\x01\\x00"); assert s.recv(2) == b"\\x05\\x00"
        s.sendall(b"\\x05\\x01\\x00\\x01" + socket.inet_aton("10.88.0.2") + (9101).to_bytes(2, "big"))
        assert s.recv(10)[1] == 0
        time.sleep(3)
        ' &
        # The snapshot that showed both (a later one can catch the reply
        # unacknowledged, its retransmission timer shown instead).
        for i in $(seq 100); do
          out=$(ss -tnoH state established '( sport = :11089 or dport = :9101 )')
          [ "$(printf '%s\n' "$out" | grep -c keepalive)" = 2 ] && break
          sleep 0.05
        done
        printf '%s\n' "$out"
        wait
        """)
        let summary = server.stop()
        let lines = r.output.split(separator: "\n").filter { !$0.isEmpty }
        #expect(lines.count == 2 && lines.allSatisfy { $0.contains("timer:(keepalive,") }, "\(r.output)\n\(summary)")
    }

    /// Also what splicing must keep: a FIN that crosses while the pipe still
    /// holds bytes goes after them, and a slow reader stops the reading.
    @Test func halfClosesPassBothWaysAndSlowReadersGetEverything() throws {
        // An echo server that answers only after the client's FIN: the FIN must cross
        // Sluice while the other direction stays open, and the answer's FIN must follow.
        let echo = """
        import socket, hashlib
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", 9100)); s.listen(4); s.settimeout(30)
        for _ in range(3):
            c, _ = s.accept(); c.settimeout(30); data = b""
            while True:
                chunk = c.recv(65536)
                if not chunk: break
                data += chunk
            c.sendall(hashlib.sha256(data).hexdigest().encode() + b"\\n" + data); c.close()
        """
        try net.start(["python3", "-c", echo], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9100"))
        // Traced, to see each of these tunnels move to pipes (ProxyServer+Splice.swift) past 256 KiB.
        let server = try start(["--listen", "127.0.0.1:11088", "--http-listen", "127.0.0.1:18088"], ports: [11088, 18088],
                               through: ["env", "SLUICE_DEBUG=1"])
        let client = """
        import socket, hashlib, os, sys
        payload = os.urandom(3000000)
        def check(s):
            s.sendall(payload); s.shutdown(socket.SHUT_WR); data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            digest, _, body = data.partition(b"\\n")
            print(digest.decode() == hashlib.sha256(payload).hexdigest() and body == payload)
        s = socket.create_connection(("127.0.0.1", 11088), timeout=20)
        s.sendall(b"\\x05\\x01\\x00"); assert s.recv(2) == b"\\x05\\x00"
        s.sendall(b"\\x05\\x01\\x00\\x01" + socket.inet_aton("10.88.0.2") + (9100).to_bytes(2, "big"))
        reply = s.recv(10); assert reply[1] == 0, reply
        check(s)
        # Pipelined: greeting, request and the stream in one go, before any answer.
        s = socket.create_connection(("127.0.0.1", 11088), timeout=20)
        s.sendall(b"\\x05\\x01\\x00" + b"\\x05\\x01\\x00\\x01" + socket.inet_aton("10.88.0.2") + (9100).to_bytes(2, "big") + payload)
        s.shutdown(socket.SHUT_WR); data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
        assert data[:2] == b"\\x05\\x00" and data[3] == 0, data[:12]
        digest, _, body = data[12:].partition(b"\\n")
        print(digest.decode() == hashlib.sha256(payload).hexdigest() and body == payload)
        s = socket.create_connection(("127.0.0.1", 18088), timeout=20)
        s.sendall(b"CONNECT 10.88.0.2:9100 HTTP/1.1\\r\\nHost: 10.88.0.2:9100\\r\\n\\r\\n")
        head = b""
        while b"\\r\\n\\r\\n" not in head: head += s.recv(1)
        assert head.startswith(b"HTTP/1.1 200"), head
        check(s)
        """
        let r = try net.run(["python3", "-c", client], in: host, check: false, timeout: 60)
        // A slow reader (curl at 256 KiB/s) still gets every byte: Sluice stops reading nginx meanwhile.
        let slow = try self.client("curl -sS -m 30 --limit-rate 256k --socks5 127.0.0.1:11088 http://10.88.0.2:8080/1m.bin | sha256sum | cut -c1-64")
        let summary = server.stop()
        #expect(r.output == "True\nTrue\nTrue\n", "\(r.output)\n\(summary)")
        #expect(slow.output == "\(sha1m)\n", "\(slow.output)\n\(summary)")
        #expect(summary.contains("4 relayed"), "\(summary)")
        #expect(summary.contains(", 0 errors"), "\(summary)")
        #expect(summary.components(separatedBy: "spliced from here on").count - 1 == 4, "every tunnel spliced")
    }

    /// A UDP echo server on both families at `port` in the server namespace: it answers "echo:" and what it got.
    func startUDPEcho(port: Int) throws {
        let echo = """
        import socket, select
        socks = []
        for family, address in ((socket.AF_INET, "10.88.0.2"), (socket.AF_INET6, "fd00:88::2")):
            s = socket.socket(family, socket.SOCK_DGRAM); s.bind((address, \(port))); socks.append(s)
        for _ in range(100):
            ready, _, _ = select.select(socks, [], [], 30)
            if not ready: break
            for s in ready:
                data, peer = s.recvfrom(65535); s.sendto(b"echo:" + data, peer)
        """
        try net.start(["python3", "-c", echo], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:\(port)"))
    }

    /// Python for a SOCKS5 client with a UDP association through the listener
    /// at `listener` (it prints the method and the reply), then `asks`, lines
    /// of `ask(TARGET, b"PAYLOAD")` with TARGET `v4("a.b.c.d")`, `v6("…")` or
    /// `name("…")`, each printing the answer as "VER+FRAG SOURCE PORT PAYLOAD",
    /// or "PAYLOAD lost" after `wait` seconds.
    static func associationClient(listener: Int, targetPort: Int, wait: Int = 3, asks: String) -> String {
        """
        import socket
        s = socket.create_connection(("127.0.0.1", \(listener)), timeout=5)
        s.sendall(b"\\x05\\x01\\x00"); print(s.recv(2).hex())
        s.sendall(b"\\x05\\x03\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00"); reply = s.recv(10)
        print(reply[:4].hex(), socket.inet_ntoa(reply[4:8]))
        relay = ("127.0.0.1", int.from_bytes(reply[8:10], "big"))
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(\(wait))
        def v4(a): return b"\\x01" + socket.inet_aton(a)
        def v6(a): return b"\\x04" + socket.inet_pton(socket.AF_INET6, a)
        def name(n): return b"\\x03" + bytes([len(n)]) + n.encode()
        def ask(target, payload):
            u.sendto(b"\\x00\\x00\\x00" + target + (\(targetPort)).to_bytes(2, "big") + payload, relay)
            try:
                data, _ = u.recvfrom(65535)
            except socket.timeout:
                print(payload.decode(), "lost"); return
            if data[3] == 1: source, rest = socket.inet_ntoa(data[4:8]), data[8:]
            else: source, rest = socket.inet_ntop(socket.AF_INET6, data[4:20]), data[20:]
            print(data[:3].hex(), source, int.from_bytes(rest[:2], "big"), rest[2:].decode())
        \(asks)
        """
    }

    @Test func udpAssociateRelaysDatagramsByTheRules() throws {
        try startUDPEcho(port: 9300)
        let path = try profile("""
        [Rule]
        DOMAIN,blocked.test,REJECT
        FINAL,DIRECT
        \(Self.hosts)
        """)
        let server = try start(["--listen", "127.0.0.1:11085", "--profile", path], ports: [11085])
        let client = Self.associationClient(listener: 11085, targetPort: 9300, asks: """
        ask(v4("10.88.0.2"), b"ping0")
        ask(v6("fd00:88::2"), b"ping1")
        ask(name("origin.test"), b"ping2")
        ask(name("blocked.test"), b"nope")
        """)
        let r = try net.run(["python3", "-c", client], in: host, check: false, timeout: 30)
        let summary = server.stop()
        #expect(r.output == """
        0500
        05000001 127.0.0.1
        000000 10.88.0.2 9300 echo:ping0
        000000 fd00:88::2 9300 echo:ping1
        000000 10.88.0.2 9300 echo:ping2
        nope lost

        """, "\(r.output)\n\(summary)")
        #expect(summary.contains("1 UDP associations (3 datagrams up, 3 down, 1 dropped)"), "\(summary)")
    }

    /// `--sniff` for UDP: datagrams to an address that start a QUIC
    /// connection are decided by the name in their ClientHello, as in the
    /// tunnel. A hello over two datagrams to big.test: both held, then both
    /// relayed in order, and a later datagram to the target follows the same
    /// name; the same to far.test: REJECTed by name; the first half of one
    /// alone: let go without a name after 300 ms (FINAL, DIRECT).
    @Test func sniffedUDPAssociateDatagramsAreDecidedByTheirQUICName() throws {
        for port in [9301, 9302, 9303] { try startUDPEcho(port: port) }
        let halves = { (name: String) in QUICInitialBuilder.helloInTwoDatagrams(serverName: name) }
        for (name, datagrams) in [("big", halves("big.test")), ("far", halves("far.test")), ("lone", [halves("lone.test")[0]])] {
            for (i, datagram) in datagrams.enumerated() {
                try Data(datagram).write(to: URL(fileURLWithPath: pair.path("udp-\(name)-\(i).bin")))
            }
        }
        let path = try profile("""
        [Rule]
        DOMAIN,far.test,REJECT
        FINAL,DIRECT
        """, name: "udp-sniff.conf")
        let server = try start(["--listen", "127.0.0.1:11102", "--profile", path, "--sniff"], ports: [11102])
        let r = try net.run(["python3", "-c", """
        import socket
        s = socket.create_connection(("127.0.0.1", 11102), timeout=5)
        s.sendall(b"\\x05\\x01\\x00"); s.recv(2)
        s.sendall(b"\\x05\\x03\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00"); reply = s.recv(10)
        relay = ("127.0.0.1", int.from_bytes(reply[8:10], "big"))
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        def flow(name, count, port, expected, wait, extra=b""):
            header = b"\\x00\\x00\\x00\\x01" + socket.inet_aton("10.88.0.2") + port.to_bytes(2, "big")
            sent = [open("\(pair.work.path)/udp-%s-%d.bin" % (name, i), "rb").read() for i in range(count)] + ([extra] if extra else [])
            for datagram in sent: u.sendto(header + datagram, relay)
            u.settimeout(wait)
            replies = []
            try:
                while len(replies) < expected:
                    data, _ = u.recvfrom(65535)
                    replies.append(sent.index(data[10 + 5:]) if data[10 + 5:] in sent else -1)
            except socket.timeout: pass
            print(name, replies)
        flow("big", 2, 9301, 3, 5, extra=b"after")
        flow("far", 2, 9302, 1, 1)
        flow("lone", 1, 9303, 1, 5)
        """], in: host, check: false, timeout: 30)
        let summary = server.stop()
        #expect(r.output == "big [0, 1, 2]\nfar []\nlone [0]\n", "\(r.output)\n\(summary)")
        #expect(summary.contains("1 UDP associations (4 datagrams up, 4 down, 2 dropped)"), "\(summary)")
    }

    /// QUIC to a [MITM] name through UDP ASSOCIATE is dropped, so the client
    /// falls back to TCP, whose tunnel the proxy intercepts; QUIC to other
    /// names, and with auto-quic-block = false, is relayed.
    @Test func quicToAMITMNameThroughUDPAssociateIsDropped() throws {
        try startUDPEcho(port: 9304)
        for name in ["quic", "other"] {
            for (i, datagram) in QUICInitialBuilder.helloInTwoDatagrams(serverName: "\(name).test").enumerated() {
                try Data(datagram).write(to: URL(fileURLWithPath: pair.path("udp-\(name)-\(i).bin")))
            }
        }
        let client = """
        import socket
        s = socket.create_connection(("127.0.0.1", PORT), timeout=5)
        s.sendall(b"\\x05\\x01\\x00"); s.recv(2)
        s.sendall(b"\\x05\\x03\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00"); reply = s.recv(10)
        relay = ("127.0.0.1", int.from_bytes(reply[8:10], "big"))
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        def flow(name, wait):
            host = (name + ".test").encode()
            header = b"\\x00\\x00\\x00\\x03" + bytes([len(host)]) + host + (9304).to_bytes(2, "big")
            sent = [open("\(pair.work.path)/udp-%s-%d.bin" % (name, i), "rb").read() for i in range(2)]
            for datagram in sent: u.sendto(header + datagram, relay)
            u.settimeout(wait)
            replies = 0
            try:
                while replies < 2:
                    u.recvfrom(65535); replies += 1
            except socket.timeout: pass
            print(name, replies)
        flow("other", 5)
        flow("quic", 1)
        """
        var outputs: [String] = []
        for (port, block) in [(11106, ""), (11107, "auto-quic-block = false")] {
            let path = try profile("""
            [Rule]
            FINAL,DIRECT
            \(Self.hosts)
            quic.test = 10.88.0.2
            other.test = 10.88.0.2

            [MITM]
            hostname = quic.test:9304
            \(block)
            """, name: "udp-mitm-\(port).conf")
            let server = try start(["--listen", "127.0.0.1:\(port)", "--profile", path, "--ca-dir", pair.path("ca-\(port)")], ports: [port])
            let r = try net.run(["python3", "-c", client.replacingOccurrences(of: "PORT", with: "\(port)")], in: host, check: false, timeout: 30)
            let summary = server.stop()
            outputs.append(r.output + (r.output.hasSuffix("\n") ? "" : summary))
        }
        #expect(outputs == ["other 2\nquic 0\n", "other 2\nquic 2\n"], "\(outputs)")
    }

    /// Datagrams that the rules send through a SOCKS5 proxy with udp-relay go
    /// through our own UDP ASSOCIATE with it (here a second `sluice proxy`,
    /// with credentials), made on the first such datagram; the others still go
    /// DIRECT or are dropped, datagram by datagram. Names reach the proxy.
    @Test func udpAssociateGoesThroughAnUpstreamProxysAssociation() throws {
        try startUDPEcho(port: 9301)
        let upstream = try start(["--listen", "127.0.0.1:11097", "--auth", "bob:pw",
                                  "--profile", try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)", name: "udp-up.conf")],
                                 ports: [11097])
        let path = try profile("""
        [Proxy]
        up = socks5, 127.0.0.1, 11097, username=bob, password=pw, udp-relay=true

        [Rule]
        DOMAIN,blocked.test,REJECT
        DOMAIN,origin.test,up
        IP-CIDR,10.88.0.2/32,up
        FINAL,DIRECT

        [Host]
        blocked.test = 10.88.0.2
        """, name: "udp-front.conf")
        let server = try start(["--listen", "127.0.0.1:11098", "--profile", path], ports: [11098])
        let client = Self.associationClient(listener: 11098, targetPort: 9301, asks: """
        ask(v4("10.88.0.2"), b"ping0")
        ask(v6("fd00:88::2"), b"ping1")
        ask(name("origin.test"), b"ping2")
        ask(v4("10.88.0.2"), b"ping3")
        ask(name("blocked.test"), b"nope")
        """)
        let r = try net.run(["python3", "-c", client], in: host, check: false, timeout: 40)
        let summary = server.stop()
        let upstreamSummary = upstream.stop()
        #expect(r.output == """
        0500
        05000001 127.0.0.1
        000000 10.88.0.2 9301 echo:ping0
        000000 fd00:88::2 9301 echo:ping1
        000000 10.88.0.2 9301 echo:ping2
        000000 10.88.0.2 9301 echo:ping3
        nope lost

        """, "\(r.output)\n\(summary)\n\(upstreamSummary)")
        #expect(summary.contains("1 UDP associations (4 datagrams up, 4 down, 1 dropped)"), "\(summary)")
        // Three went through the upstream (one association, the name resolved there), one DIRECT.
        #expect(upstreamSummary.contains("1 UDP associations (3 datagrams up, 3 down, 0 dropped)"), "\(upstreamSummary)")
    }

    /// An upstream proxy that refuses us costs only the datagrams sent its
    /// way: said once, not retried for each datagram; DIRECT ones still go.
    @Test func aDeadUpstreamUDPProxyLosesOnlyItsOwnDatagrams() throws {
        try startUDPEcho(port: 9302)
        let path = try profile("""
        [Proxy]
        dead = socks5, 127.0.0.1, 11099, udp-relay=true

        [Rule]
        IP-CIDR,10.88.0.0/24,dead
        FINAL,DIRECT
        """, name: "udp-dead.conf")
        let server = try start(["--listen", "127.0.0.1:11100", "--profile", path], ports: [11100])
        let client = Self.associationClient(listener: 11100, targetPort: 9302, wait: 2, asks: """
        ask(v4("10.88.0.2"), b"ping0")
        ask(v6("fd00:88::2"), b"ping1")
        ask(v4("10.88.0.2"), b"ping2")
        ask(v4("10.88.0.2"), b"ping3")
        """)
        let r = try net.run(["python3", "-c", client], in: host, check: false, timeout: 40)
        let summary = server.stop()
        #expect(r.output == """
        0500
        05000001 127.0.0.1
        ping0 lost
        000000 fd00:88::2 9302 echo:ping1
        ping2 lost
        ping3 lost

        """, "\(r.output)\n\(summary)")
        #expect(summary.components(separatedBy: "UDP through dead: connect to 127.0.0.1:11099").count == 2, "said once: \(summary)")
        #expect(summary.contains("1 UDP associations (1 datagrams up, 1 down, 3 dropped)"), "\(summary)")
    }

    @Test func stalledClientsAreCutAtTheGreetingDeadline() throws {
        let server = try start(["--listen", "127.0.0.1:11086"], ports: [11086])
        let script = """
        import socket, time
        s = socket.create_connection(("127.0.0.1", 11086), timeout=15)
        s.sendall(b"\\x05"); start = time.time()
        data = s.recv(10)
        print(len(data), round(time.time() - start))
        """
        let r = try net.run(["python3", "-c", script], in: host, check: false, timeout: 30)
        let summary = server.stop()
        // Closed (EOF, 0 bytes) after the 5 s greeting deadline, not left open.
        let fields = r.output.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(fields.count == 2 && fields[0] == "0", "\(r.output)\n\(summary)")
        if fields.count == 2, let seconds = Int(fields[1]) { #expect((4 ... 7).contains(seconds), "\(r.output)") }
        #expect(summary.contains("no complete request in time"), "\(summary)")
    }

    /// `sluice proxy --control`: the control API and its clients as for a
    /// tunnel. A slow download through the SOCKS5 listener is listed (its
    /// target, rule, policy, bytes), counted in `status`, and closed; a select
    /// group is switched and kept across a reload; the socket goes on exit.
    @Test func theControlSocketListsSwitchesReloadsAndCloses() throws {
        try pair.makeFile("4m.bin", bytes: 4 * 1_048_576)
        let socket = pair.path("proxy-control.sock")
        let flows = pair.path("control-flows.jsonl")
        let done = pair.path("download-done")
        let path = try profile("""
        [Proxy Group]
        Choice = select, DIRECT, REJECT

        [Rule]
        DOMAIN,origin.test,Choice
        FINAL,DIRECT
        \(Self.hosts)
        """, name: "control.conf")
        let server = try start(["--listen", "127.0.0.1:11096", "--http-listen", "127.0.0.1:18096", "--profile", path,
                                "--control", socket, "--flow-log", flows], ports: [11096, 18096])
        func control(_ arguments: [String]) throws -> SluiceRun {
            try runSluice(arguments + ["--control", socket], timeout: 15)
        }
        func json(_ text: String) -> [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        }
        let download = try net.start(["bash", "-c", """
        curl -s -m 60 --socks5-hostname 127.0.0.1:11096 http://origin.test:8080/slow/4m.bin -o /dev/null; echo "download=$?" > \(done)
        """], in: host)
        defer { download.terminate(graceMilliseconds: 1000) }

        // The download appears, with its target, its rule and bytes coming down.
        var listed: [String: Any]?
        _ = TestNetwork.waitUntil(seconds: 15) {
            let list = json((try? control(["flows", "--json"]))?.stdout ?? "")["flows"] as? [[String: Any]] ?? []
            listed = list.first { ($0["destination-port"] as? Int) == 8080 && ($0["bytes-down"] as? Int ?? 0) > 0 }
            return listed != nil
        }
        let entry = try #require(listed, "the download never showed up in /flows: \(server.stop())")
        let id = try #require(entry["id"] as? Int)
        #expect(entry["transport"] as? String == "TCP", "\(entry)")
        #expect(entry["app-address"] as? String == "127.0.0.1", "\(entry)")
        #expect(entry["destination-address"] as? String == "origin.test", "\(entry)")
        #expect(entry["domain"] as? String == "origin.test", "\(entry)")
        #expect(entry["state"] as? String == "relaying", "\(entry)")
        #expect(entry["policy"] as? String == "Choice → DIRECT", "\(entry)")
        #expect(entry["rule"] as? String == "\(path):5: DOMAIN,origin.test,Choice", "\(entry)")
        #expect(entry["upstream"] as? String == "DIRECT", "\(entry)")
        #expect((entry["age-seconds"] as? Double ?? 0) > 0, "\(entry)")
        #expect((entry["bytes-up"] as? Int ?? 0) > 0, "the request went up: \(entry)")

        let table = try control(["flows"])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains("origin.test.8080"), "\(table.stdout)")
        #expect(table.stdout.contains("relaying"), "\(table.stdout)")
        #expect(table.stdout.contains("1 open flow\n"), "\(table.stdout)")

        let status = try control(["status"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.hasPrefix("Sluice proxy: up "), "\(status.stdout)")
        #expect(status.stdout.contains("profile \(path)"), "\(status.stdout)")
        #expect(status.stdout.contains("listening: SOCKS5 on 127.0.0.1:11096, HTTP on 127.0.0.1:18096"), "\(status.stdout)")
        #expect(status.stdout.contains("open: 1 connections (1 relaying"), "\(status.stdout)")
        #expect(status.stdout.contains("Choice (select): *DIRECT, REJECT"), "\(status.stdout)")
        let stats = json(try control(["status", "--json"]).stdout)["stats"] as? [String: Any] ?? [:]
        let counters = stats["proxy"] as? [String: Any] ?? [:]
        #expect(counters["connections"] as? Int == 1, "\(stats)")
        #expect((counters["bytes-down"] as? Int ?? 0) > 0, "open connections count as they go: \(stats)")

        // A request through the HTTP listener: its line, and its connection's once that ends, among the recent ones.
        let fetched = try client("curl -s -m 10 -o /dev/null -w '%{http_code}' --proxy http://127.0.0.1:18096 http://origin.test:8080/hello.txt")
        #expect(fetched.output == "200", "\(fetched.output)")
        var recent: [[String: Any]] = []
        var request: [String: Any]?, itsConnection: [String: Any]?
        _ = TestNetwork.waitUntil(seconds: 15) {
            let text = (try? control(["requests", "--json"]))?.stdout ?? ""
            recent = text.split(separator: "\n").map { json(String($0))["line"] as? [String: Any] ?? [:] }
            request = recent.first { $0["kind"] as? String == "http" && $0["url"] as? String == "http://origin.test:8080/hello.txt" }
            let id = request?["connection"] as? Int
            itsConnection = recent.first { $0["kind"] as? String == "connection" && $0["connection"] as? Int == id }
            return itsConnection != nil
        }
        #expect(request?["status"] as? Int == 200, "\(recent)")
        #expect(request?["policy"] as? String == "Choice → DIRECT", "\(recent)")
        #expect(itsConnection?["bytesDown"] as? Int ?? 0 > 0, "\(recent)")
        #expect(!recent.contains { $0["connection"] as? Int == id }, "the download is still open: \(recent)")
        let readable = try control(["requests", "--http", "--last", "5"])
        #expect(readable.stdout.contains(" GET http://origin.test:8080/hello.txt  200  "), "\(readable.stdout)")

        // The group switched: the next request for origin.test is refused; a member it lacks is not taken.
        let select = try control(["select", "Choice", "REJECT"])
        #expect(select.status == 0, "\(select.stderr)")
        #expect(select.stdout.contains("Choice: DIRECT → REJECT"), "\(select.stdout)")
        let wrong = try control(["select", "Choice", "Nope"])
        #expect(wrong.status == 1 && wrong.stderr.contains("'Nope' is not a member of 'Choice'"), "\(wrong.stderr)")
        let refused = try client("curl -s -m 10 -o /dev/null --socks5-hostname 127.0.0.1:11096 http://origin.test:8080/hello.txt; echo \"status=$?\"")
        #expect(refused.output == "status=97\n", "\(refused.output)")

        // A reload keeps the selection; one with errors changes nothing and says why.
        let reload = try control(["reload"])
        #expect(reload.status == 0 && reload.stdout.contains("reloaded \(path)"), "\(reload.stdout)\(reload.stderr)")
        #expect(try control(["status"]).stdout.contains("Choice (select): DIRECT, *REJECT"))
        let good = try String(contentsOfFile: path, encoding: .utf8)
        try (good + "\nbroken line\n").write(toFile: path, atomically: true, encoding: .utf8)
        let bad = try control(["reload"])
        #expect(bad.status == 1 && bad.stderr.contains("still using the previous profile") && bad.stderr.contains("control.conf:"), "\(bad.stderr)")

        // Closing the download cuts the client off, long before its 40 s at nginx's 100 kB/s.
        let close = try control(["close", String(id)])
        #expect(close.status == 0 && close.stdout.contains("flow \(id) closed"), "\(close.stdout)\(close.stderr)")
        let again = try control(["close", String(id)])
        #expect(again.status == 1 && again.stderr.contains("no open flow with id \(id)"), "\(again.stderr)")
        let ended = TestNetwork.waitUntil(seconds: 15) { FileManager.default.fileExists(atPath: done) }
        let result = (try? String(contentsOfFile: done, encoding: .utf8)) ?? ""
        #expect(ended && result != "download=0\n", "\(result)")

        let summary = server.stop()
        #expect(summary.contains("control on \(socket)"), "\(summary)")
        #expect(!FileManager.default.fileExists(atPath: socket), "the socket goes with Sluice")
        let log = (try? String(contentsOfFile: flows, encoding: .utf8)) ?? ""
        #expect(log.contains("\"connection\":\(id),") && log.contains("closed through the control API"), "\(log)")
    }

    /// `--sniff`: a SOCKS5 client that resolved the name itself sends an
    /// address; the listener answers first, reads the first bytes, and DOMAIN
    /// rules match the Host header or the TLS SNI, as in the tunnel. (Without
    /// the option, rejectRulesReachTheClient shows the precise replies and
    /// the hint.)
    @Test func domainRulesSeeTheNameBehindAnAddressTarget() throws {
        let log = pair.path("sniff-flows.jsonl")
        let path = try profile("""
        [Rule]
        DOMAIN,blocked.test,REJECT
        FINAL,DIRECT
        """, name: "sniff.conf")
        let server = try start(["--listen", "127.0.0.1:11101", "--http-listen", "127.0.0.1:18101", "--profile", path, "--flow-log", log, "--sniff"],
                               ports: [11101, 18101])
        let resolve = "--resolve origin.test:8080:10.88.0.2 --resolve blocked.test:8080:10.88.0.2 --resolve blocked.test:8443:10.88.0.2"
        let r = try client("""
        curl -sS -m 10 --socks5 127.0.0.1:11101 \(resolve) http://origin.test:8080/hello.txt
        curl -s -m 10 --socks5 127.0.0.1:11101 \(resolve) http://blocked.test:8080/hello.txt; echo "blocked by Host: $?"
        curl -s -m 10 -k --socks5 127.0.0.1:11101 \(resolve) https://blocked.test:8443/; echo "blocked by SNI: $?"
        curl -s -m 10 -p --proxy http://127.0.0.1:18101 \(resolve) http://blocked.test:8080/hello.txt; echo "blocked through CONNECT: $?"
        curl -sS -m 10 --socks5 127.0.0.1:11101 http://10.88.0.2:8080/hello.txt
        """)
        let summary = server.stop(once: log, has: 5)
        let lines = r.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 5, "\(r.output)\n\(summary)")
        if lines.count == 5 {
            #expect(lines[0] == "hello from nginx", "\(r.output)")
            // The client was told "succeeded" already: the refusal is a reset (curl: 52 empty reply, 56 receive error, 35 TLS).
            #expect(["blocked by Host: 52", "blocked by Host: 56"].contains(lines[1]), "\(r.output)")
            #expect(["blocked by SNI: 35", "blocked by SNI: 56"].contains(lines[2]), "\(r.output)")
            #expect(["blocked through CONNECT: 52", "blocked through CONNECT: 56"].contains(lines[3]), "\(r.output)")
            #expect(lines[4] == "hello from nginx", "\(r.output)")
        }
        let out = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        for line in open(sys.argv[1]):
            r = json.loads(line)
            if r["kind"] == "connection":
                print(r["domain"], r["domainSource"], r["policy"], r["status"])
        """, log]).output
        #expect(out.split(separator: "\n").map(String.init).sorted() == [
            "None None DIRECT closed",
            "blocked.test host REJECT blocked", "blocked.test host REJECT blocked", "blocked.test sni REJECT blocked",
            "origin.test host DIRECT closed",
        ], "\(out)\n\(summary)\n\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    @Test func sighupReloadsTheRules() throws {
        let path = try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)", name: "reload.conf")
        let server = try start(["--listen", "127.0.0.1:11093", "--profile", path], ports: [11093])
        let before = try client("curl -sS -m 10 --socks5-hostname 127.0.0.1:11093 http://origin.test:8080/hello.txt")
        try "[Rule]\nDOMAIN,origin.test,REJECT\nFINAL,DIRECT\n\(Self.hosts)".write(toFile: path, atomically: true, encoding: .utf8)
        server.child.signal(SIGHUP)
        let reloaded = TestNetwork.waitUntil(seconds: 10) {
            ((try? String(contentsOfFile: server.log, encoding: .utf8)) ?? "").contains("SIGHUP: reloaded")
        }
        let after = try client("curl -sS -m 10 --socks5-hostname 127.0.0.1:11093 http://origin.test:8080/hello.txt 2>&1; echo \"status=$?\"")
        // A profile with errors keeps the rules in force.
        try "[Rule]\nNONSENSE,x\n".write(toFile: path, atomically: true, encoding: .utf8)
        server.child.signal(SIGHUP)
        let kept = TestNetwork.waitUntil(seconds: 10) {
            ((try? String(contentsOfFile: server.log, encoding: .utf8)) ?? "").contains("still using the previous profile")
        }
        let still = try client("curl -sS -m 10 --socks5-hostname 127.0.0.1:11093 http://origin.test:8080/hello.txt 2>&1; echo \"status=$?\"")
        let summary = server.stop()
        #expect(before.output == "hello from nginx\n", "\(summary)")
        #expect(reloaded, "\(summary)")
        #expect(after.output.contains("(2)") && after.output.hasSuffix("status=97\n"), "\(after.output)")
        #expect(kept, "\(summary)")
        #expect(still.output.contains("(2)") && still.output.hasSuffix("status=97\n"), "\(still.output)")
    }

    @Test func nonLoopbackListenersNeedCredentials() throws {
        let refused = try runSluice(["proxy", "--listen", "10.88.0.1:11087"], in: host, timeout: 10)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("refusing to listen on 10.88.0.1:11087 without authentication"), "\(refused.stderr)")
        #expect(refused.stderr.contains("open proxy"), "\(refused.stderr)")
        let refusedAll = try runSluice(["proxy", "--http-listen", "0.0.0.0:18087"], in: host, timeout: 10)
        #expect(refusedAll.status == 1)
        #expect(refusedAll.stderr.contains("refusing to listen on 0.0.0.0:18087"), "\(refusedAll.stderr)")
        // With credentials the same address is accepted (and reachable from the host's veth address).
        let log = pair.path("sluice-proxy-open.log")
        let child = try net.start([sluiceBinary, "proxy", "--listen", "10.88.0.1:11087", "--auth", "carol:pw"], in: host, log: log)
        defer { child.terminate(graceMilliseconds: 3000) }
        let listening = TestNetwork.waitUntil(seconds: 15) {
            ((try? self.net.run(["ss", "-ltn"], in: self.host).output) ?? "").contains("10.88.0.1:11087 ")
        }
        #expect(listening, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        let r = try client("curl -sS -m 10 --socks5-hostname carol:pw@10.88.0.1:11087 http://10.88.0.2:8080/hello.txt")
        #expect(r.output == "hello from nginx\n")
    }
}
