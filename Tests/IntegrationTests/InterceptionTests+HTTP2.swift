import Foundation
import Testing
import TestSupport

/// HTTP/2 inside intercepted TLS (`HTTP2Gateway`): apps that speak h2 to
/// Sluice get the same rewrites, mocks, rules and records as HTTP/1.1 ones,
/// with Sluice speaking HTTP/1.1 to the origin. With [MITM] h2 = true every
/// app that offers h2 speaks it; without, only apps that offer nothing else.
extension InterceptionTests {
    static let http2Sections = """
    [URL Rewrite]
    ^https://old\\.test/(.*) https://web.test/$1 302
    [Map Local]
    ^https://mock\\.test/config$ data-type=text data="{}" header="Content-Type:application/json"
    [Header Rewrite]
    http-request ^https://web\\.test/ header-add X-Env staging
    http-response ^https://web\\.test/ header-add X-Seen-By sluice
    """

    /// curl offers h2 and http/1.1; with h2 = true it gets h2: a header rewrite
    /// each way, Map Local, a 302 rewrite, HEAD, 1 MiB down sha256-checked,
    /// twelve requests multiplexed on one connection, and each in the flow
    /// log and in HAR (responses as HTTP/2.0, requests as forwarded: h2 to
    /// nginx, which offers it).
    @Test func http2RequestsAreInterceptedWithH2() throws {
        _ = try makeCADir()
        let log = pair.path("h2.jsonl"), har = pair.path("h2.har")
        let path = try mitmProfile("hostname = *.test\nh2 = true", Self.http2Sections, name: "h2.conf")
        let urls = (0 ..< 12).map { "-o /dev/null https://web.test/echo?n=\($0)" }.joined(separator: " ")
        let r = try exec("""
        curl -sS -w ' %{http_version}\\n' https://web.test/echo
        curl -sS -D - -o /dev/null https://web.test/hello.txt | tr -d '\\r' | grep -i -E '^(HTTP/|x-seen-by:)'
        curl -sS -w ' %{http_code} %{http_version}\\n' https://mock.test/config
        curl -sS -o /dev/null -w '%{http_code} %{redirect_url} %{http_version}\\n' https://old.test/hello.txt
        curl -sS -I -w '%{http_code} %{size_download}\\n' -o /dev/null https://web.test/1m.bin
        curl -sS https://web.test/1m.bin | sha256sum | cut -c1-64
        curl -sS -Z --parallel-max 12 -w '%{http_code} %{http_version} %{num_connects}\\n' \(urls) | sort | uniq -c | sed 's/^ *//'
        """, profile: path, options: ["--flow-log", log, "--har", har], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        let versions = try net.run(["/usr/bin/python3", "-c", """
        import collections, json, sys
        entries = json.load(open(sys.argv[1]))["log"]["entries"]
        print(sorted(collections.Counter((e["request"]["httpVersion"], e["response"]["httpVersion"]) for e in entries).items()))
        """, har]).output
        // Sluice spoke h2 to nginx too; the Map Local answer and the 302 never went there.
        #expect(versions == "[(('HTTP/1.1', 'HTTP/2.0'), 2), (('HTTP/2.0', 'HTTP/2.0'), 16)]\n", "\(versions)")
        let digest = try pair.digest("1m.bin")
        let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // One connection for the twelve: the transfer that made it counts 1, the others 0.
        #expect(Array(lines.prefix(8)) + [lines.dropFirst(8).joined(separator: "|")] == [
            "method=GET scheme=https host=web.test port=443 uri=/echo env=staging", " 2",
            "HTTP/2 200 ", "x-seen-by: sluice",
            "{} 200 2",
            "302 https://web.test/hello.txt 2",
            "200 0",
            digest,
            "11 200 2 0|1 200 2 1|",
        ], "\(r.stdout) \(r.stderr)")
        // Every request is in the flow log as HTTP/1.1's are: 18 of them.
        let requests = requestURLs(log)
        #expect(requests.count == 18, "\(requests)")
        #expect(requests.filter { $0.hasPrefix("https://web.test/echo?n=") }.count == 12, "\(requests)")
    }

    /// An h2 app's streams reach an h2 origin together, not one after
    /// another: eight requests curl multiplexes on one connection, each of
    /// which the origin (nginx, h2, in front of a backend that takes 400 ms
    /// per request and counts how many it serves at once) holds, are all at
    /// the backend at the same time. Sent one at a time, they took 3.2 s and
    /// the backend never saw two at once. This nginx speaks TLS 1.2 only (its
    /// default before 1.23.4), where the origin's first h2 frames often come
    /// in the same read as its Finished: the handshake's end was then lost,
    /// and every request went as HTTP/1.1 to an origin that chose h2 (502).
    @Test func http2StreamsReachAnH2OriginTogether() throws {
        _ = try makeCADir()
        let backend = """
        import http.server, socketserver, sys, threading, time
        lock = threading.Lock(); now = 0; most = 0
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *args): pass
            def do_GET(self):
                global now, most
                with lock:
                    now += 1; most = max(most, now)
                    open(sys.argv[1], "w").write(str(most))
                time.sleep(0.4)
                with lock: now -= 1
                body = ("slow " + self.path + "\\n").encode()
                self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
                self.wfile.write(body)
        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
        Server(("10.88.0.2", 9191), Handler).serve_forever()
        """
        try backend.write(toFile: pair.path("slow-backend.py"), atomically: true, encoding: .utf8)
        try net.start(["/usr/bin/python3", pair.path("slow-backend.py"), pair.path("slow-most.txt")], in: pair.server,
                      log: pair.path("slow-backend.log"))
        let w = pair.work.path
        let conf = """
        daemon off; pid \(w)/nginx-slow.pid; error_log \(w)/error-slow.log;
        events { worker_connections 256; }
        http { access_log off; client_body_temp_path \(w);
        server { listen 10.88.0.2:9447 ssl http2; ssl_certificate \(webCertificate); ssl_certificate_key \(webKey);
                 location / { proxy_pass http://10.88.0.2:9191; } }
        }
        """
        try conf.write(toFile: pair.path("nginx-slow.conf"), atomically: true, encoding: .utf8)
        try net.start(["nginx", "-c", pair.path("nginx-slow.conf"), "-p", w], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9191"), "\(read(pair.path("slow-backend.log")))")
        #expect(pair.waitForListener("10.88.0.2:9447"), "\(read(pair.path("error-slow.log")))")
        // Listening is not ready: nginx answers once its worker runs (and the backend behind it).
        #expect(TestNetwork.waitUntil(seconds: 10) {
            ((try? self.net.run(["curl", "-sk", "--resolve", "web.test:9447:10.88.0.2", "https://web.test:9447/ready"], in: self.pair.host).output) ?? "") == "slow /ready\n"
        }, "\(read(pair.path("error-slow.log")))")
        try "0".write(toFile: pair.path("slow-most.txt"), atomically: true, encoding: .utf8)
        let path = try mitmProfile("hostname = web.test:9447\nh2 = true", name: "h2-together.conf")
        let urls = (1 ... 8).map { "-o /dev/null https://web.test:9447/n\($0)" }.joined(separator: " ")
        let r = try exec("""
        curl -sS -Z --parallel-max 8 -m 20 -w '%{http_code} %{http_version} %{num_connects}\\n' \(urls) | sort | uniq -c | sed 's/^ *//'
        """, profile: path, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        // One connection: the transfer that opened it counts 1, the other seven 0.
        #expect(r.stdout == "7 200 2 0\n1 200 2 1\n", "\(r.stdout) \(r.stderr)")
        let most = Int(read(pair.path("slow-most.txt")).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        // All eight at once, unless curl opened its streams a little apart.
        #expect(most >= 6, "the backend served at most \(most) requests at once")
    }

    /// A Python TLS origin on 10.88.0.2:`port` (the web.test certificate)
    /// whose `serve(raw)`, given as Python with `context` in scope, runs in a
    /// thread for each of up to `connections` connections; started in the
    /// server namespace as `name`.py, and listening when this returns.
    func startThreadedTLSOrigin(_ name: String, port: Int, connections: Int, serve: String) throws {
        let server = Self.pythonTLSOrigin(port: port, backlog: 16, timeout: 120) + "import threading\n" + serve + """

        for _ in range(\(connections)):
            raw, _ = s.accept()
            threading.Thread(target=serve, args=(raw,), daemon=True).start()
        """
        try server.write(toFile: pair.path("\(name).py"), atomically: true, encoding: .utf8)
        try net.start(["/usr/bin/python3", pair.path("\(name).py"), webCertificate, webKey], in: pair.server,
                      log: pair.path("\(name).log"))
        #expect(pair.waitForListener("10.88.0.2:\(port)"), "\(read(pair.path("\(name).log")))")
    }

    /// An HTTP/1.1 origin (one that answers each batch of requests it has
    /// read 300 ms later, as across a network, and writes down how many a
    /// batch held and how many connections it took, and in `stats.batches`
    /// each batch's connection and how many requests it had read by then,
    /// and in `stats.methods` the methods of those it answered), for the
    /// pipelining tests. With
    /// `limit`, it closes a connection once it has answered that many
    /// requests on it, as at a keep-alive limit: without a word, or with
    /// `announce` saying `Connection: close` in the last response. With
    /// `dropAfter`, it closes a connection that has answered that many when
    /// the next request comes, unanswered: an idle close that crossed it.
    /// With `resetFirst`, its first connection resets (SO_LINGER 0) once it
    /// has read more than one request, answering none: as a close with
    /// requests unread does, when the reset takes the response just written.
    /// With `plain`, it speaks plain HTTP/1.1, without TLS.
    func startPipelineOrigin(port: Int, limit: Int, announce: Bool = false, dropAfter: Int = 0, resetFirst: Bool = false,
                             plain: Bool = false) throws -> String {
        let stats = pair.path("pipeline-\(port).txt")
        try startThreadedTLSOrigin("pipeline-origin-\(port)", port: port, connections: 100, serve: """
        import time
        most = 0; connections = 0; limit = \(limit); announce = \(announce ? "True" : "False"); drop = \(dropAfter); reset = \(resetFirst ? "True" : "False")
        def serve(raw):
            global most, connections
            try:
                c = \(plain ? "raw" : "context.wrap_socket(raw, server_side=True)"); c.settimeout(30)
                connections += 1; number = connections
                buf = b""; answered = 0
                while limit == 0 or answered < limit:
                    while b"\\r\\n\\r\\n" not in buf:
                        chunk = c.recv(65536)
                        if not chunk: return
                        buf += chunk
                    if drop and answered >= drop: return
                    deadline = time.time() + 0.3
                    while time.time() < deadline:
                        c.settimeout(max(0.01, deadline - time.time()))
                        try:
                            chunk = c.recv(65536)
                        except (socket.timeout, ssl.SSLWantReadError):
                            continue
                        if not chunk: break
                        buf += chunk
                    c.settimeout(30)
                    heads = []
                    while b"\\r\\n\\r\\n" in buf and (limit == 0 or answered + len(heads) < limit):
                        head, _, buf = buf.partition(b"\\r\\n\\r\\n"); heads.append(head)
                    if reset and number == 1 and len(heads) + buf.count(b"\\r\\n\\r\\n") > 1:
                        import struct
                        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        return
                    most = max(most, len(heads)); answered += len(heads)
                    open("\(stats)", "w").write("%d %d" % (most, connections))
                    # Every request read so far: those answered now, and those the limit leaves unanswered.
                    open("\(stats).batches", "a").write("%d %d\\n" % (number, len(heads) + buf.count(b"\\r\\n\\r\\n")))
                    open("\(stats).methods", "a").write(" ".join(h.split(b" ")[0].decode() for h in heads) + "\\n")
                    out = b""
                    for i, head in enumerate(heads):
                        method, path = head.split(b" ")[:2]
                        body = path + b"\\n"
                        last = announce and answered - len(heads) + i + 1 == limit
                        out += b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n%s\\r\\n" % (len(body), b"Connection: close\\r\\n" if last else b"") + (b"" if method == b"HEAD" else body)
                    c.sendall(out)
            except Exception:
                pass
            finally:
                raw.close()
        """)
        return stats
    }

    /// `count` GETs curl multiplexes on one h2 connection, to `port` (or
    /// under `base`), each saved to its own file; then the files, which
    /// must each hold their path.
    static func pipelinedGETs(_ count: Int = 8, port: Int, folder: String, base: String? = nil) -> String {
        let urls = (1 ... count).map { "-o \(folder)/n\($0) \(base ?? "https://web.test:\(port)")/n\($0)" }.joined(separator: " ")
        return """
        rm -rf \(folder) && mkdir -p \(folder)
        curl -sS -Z --parallel-max \(count) -m 20 -w '%{http_code} %{http_version} %{num_connects}\\n' \(urls) | sort | uniq -c | sed 's/^ *//'
        cat \((1 ... count).map { "\(folder)/n\($0)" }.joined(separator: " "))
        """
    }

    /// What `pipelinedGETs` prints when every request got its own answer on one app connection.
    static func pipelinedAnswers(_ count: Int = 8) -> String {
        "\(count - 1) 200 2 0\n1 200 2 1\n" + (1 ... count).map { "/n\($0)\n" }.joined()
    }

    /// An h2 app's streams reach an HTTP/1.1 origin together, pipelined on
    /// one connection, and each gets its own response. Sent one at a time,
    /// each waited for the one before it: eight round trips (here 2.4 s),
    /// and the origin never read two requests at once.
    @Test func http2StreamsArePipelinedToAnHTTP11Origin() throws {
        _ = try makeCADir()
        let stats = try startPipelineOrigin(port: 9448, limit: 0)
        let path = try mitmProfile("hostname = web.test:9448\nh2 = true", name: "h2-pipelined.conf")
        let r = try exec(Self.pipelinedGETs(port: 9448, folder: pair.path("pipelined")), profile: path, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        // One app connection: the transfer that opened it counts 1, the other seven 0.
        #expect(r.stdout == Self.pipelinedAnswers(), "\(r.stdout) \(r.stderr)")
        let seen = read(stats).split(separator: " ").compactMap { Int($0) }
        // All eight in one read, unless curl opened its streams a little apart; one origin connection.
        #expect(seen.count == 2 && seen[0] >= 6 && seen[1] == 1, "the origin's most requests at once, and connections: \(seen)")
    }

    /// The same to an origin that speaks plain HTTP, where a URL Rewrite
    /// sends the app's requests (a test environment on the developer's own
    /// machine): HTTP/1.1 with no ALPN to wait for. Those a plain origin
    /// leaves unanswered when it closes go again as over TLS.
    @Test func http2StreamsArePipelinedToAPlainHTTPOrigin() throws {
        _ = try makeCADir()
        let stats = try startPipelineOrigin(port: 9455, limit: 0, plain: true)
        let closing = try startPipelineOrigin(port: 9456, limit: 3, plain: true)
        let path = try mitmProfile("hostname = web.test\nh2 = true", """
        [URL Rewrite]
        ^https://web\\.test/pipe/(.*) http://web.test:9455/$1 header
        ^https://web\\.test/closing/(.*) http://web.test:9456/$1 header
        """, name: "h2-pipelined-plain.conf")
        let r = try exec(Self.pipelinedGETs(port: 443, folder: pair.path("pipelined-plain"), base: "https://web.test/pipe"), profile: path, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == Self.pipelinedAnswers(), "\(r.stdout) \(r.stderr)")
        let seen = read(stats).split(separator: " ").compactMap { Int($0) }
        #expect(seen.count == 2 && seen[0] >= 6 && seen[1] == 1, "the origin's most requests at once, and connections: \(seen)")

        let again = try exec(Self.pipelinedGETs(port: 443, folder: pair.path("closing-plain"), base: "https://web.test/closing"), profile: path, timeout: 60)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout == Self.pipelinedAnswers(), "\(again.stdout) \(again.stderr)")
        // Three, three and one: each connection answered as many as it would.
        let closed = read(closing).split(separator: " ").compactMap { Int($0) }
        #expect(closed.count == 2 && closed[1] == 3, "the origin's most requests at once, and connections: \(closed)")
    }

    /// An HTTP/1.1 origin that closes after three requests, without saying
    /// so (a keep-alive limit), with more pipelined to it: those go again on
    /// a new connection, and every stream gets its own response (one of
    /// them Map Local's, in its place).
    @Test func pipelinedRequestsGoAgainWhenTheOriginCloses() throws {
        _ = try makeCADir()
        let stats = try startPipelineOrigin(port: 9449, limit: 3)
        // One request among them answered by Sluice: its answer keeps its place between the origin's.
        let path = try mitmProfile("hostname = web.test:9449\nh2 = true", """
        [Map Local]
        ^https://web\\.test:9449/n5$ data-type=text data="mocked"
        """, name: "h2-pipelined-closing.conf")
        let r = try exec(Self.pipelinedGETs(port: 9449, folder: pair.path("pipelined-closing")), profile: path, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == Self.pipelinedAnswers().replacingOccurrences(of: "/n5\n", with: "mocked"), "\(r.stdout) \(r.stderr)")
        let seen = read(stats).split(separator: " ").compactMap { Int($0) }
        // Three, three and one: each connection answered as many as it would.
        #expect(seen.count == 2 && seen[1] == 3, "the origin's most requests at once, and connections: \(seen)")
    }

    /// An origin that resets its connection with pipelined requests unread
    /// (and, as a reset may, its answer to the first with them): the first
    /// goes again with the others. It was a 502: sent first, it was not
    /// pipelined.
    @Test func theRequestAheadOfAPipelineGoesAgainAfterAReset() throws {
        _ = try makeCADir()
        let stats = try startPipelineOrigin(port: 9453, limit: 0, resetFirst: true)
        let path = try mitmProfile("hostname = web.test:9453\nh2 = true", name: "h2-pipelined-reset.conf")
        let r = try exec(Self.pipelinedGETs(port: 9453, folder: pair.path("pipelined-reset")), profile: path, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == Self.pipelinedAnswers(), "\(r.stdout) \(r.stderr)")
        #expect(read(stats).split(separator: " ").last == "2", "connections: \(read(stats))")
    }

    /// Only requests that may go again are pipelined: a DELETE (without a
    /// body, but not safe) waits for the responses before it, and is the
    /// first of what the origin reads with it.
    @Test func onlySafeRequestsArePipelined() throws {
        _ = try makeCADir()
        let stats = try startPipelineOrigin(port: 9451, limit: 0)
        let path = try mitmProfile("hostname = web.test:9451\nh2 = true", name: "h2-pipelined-safe.conf")
        let folder = pair.path("pipelined-safe")
        func get(_ n: Int) -> String { "-o \(folder)/n\(n) https://web.test:9451/n\(n)" }
        let r = try exec("""
        rm -rf \(folder) && mkdir -p \(folder)
        curl -sS -Z --parallel-max 8 -m 20 \(get(1)) \(get(2)) \(get(3)) --next -X DELETE \(get(4)) --next \(get(5)) \(get(6)) \
          --next -X DELETE \(get(7)) --next \(get(8))
        cat \((1 ... 8).map { "\(folder)/n\($0)" }.joined(separator: " "))
        """, profile: path, timeout: 60)
        #expect(r.status == 0 && r.stdout == (1 ... 8).map { "/n\($0)\n" }.joined(), "\(r.stdout) \(r.stderr)")
        let batches = read(stats + ".methods").split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(batches.flatMap { $0 }.sorted() == ["DELETE", "DELETE"] + Array(repeating: "GET", count: 6), "\(batches)")
        #expect(batches.allSatisfy { !$0.dropFirst().contains("DELETE") }, "a DELETE went behind another request: \(batches)")
        #expect(batches.contains { $0.count > 1 }, "nothing was pipelined: \(batches)")
    }

    /// A request that crosses the origin's idle close (it came on a
    /// kept-alive connection as the origin closed it, unanswered) goes again
    /// on a new connection, as curl and browsers would send it again
    /// themselves: for an HTTP/1.1 app and for an h2 app's lone request.
    /// It was a 502. The flow log and HAR say which requests went again.
    @Test func aRequestThatCrossesAnIdleCloseGoesAgain() throws {
        _ = try makeCADir()
        let stats = try startPipelineOrigin(port: 9452, limit: 0, dropAfter: 1)
        let path = try mitmProfile("hostname = web.test:9452\nh2 = true", name: "keepalive-race.conf")
        let urls = ["a", "b", "c"].map { "https://web.test:9452/\($0)" }.joined(separator: " ")
        let log = pair.path("keepalive-race.jsonl"), har = pair.path("keepalive-race.har")
        let r = try exec("""
        curl -sS --http1.1 -w '%{http_code} %{num_connects}\\n' \(urls)
        curl -sS --http2 -w '%{http_code} %{http_version} %{num_connects}\\n' \(urls)
        """, profile: path, options: ["--flow-log", log, "--har", har], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        // Each app used one connection; the origin answered one request on each of its six.
        #expect(r.stdout == "/a\n200 1\n/b\n200 0\n/c\n200 0\n/a\n200 2 1\n/b\n200 2 0\n/c\n200 2 0\n", "\(r.stdout) \(r.stderr)")
        #expect(read(stats).split(separator: " ").last == "6", "\(read(stats))")
        let retries = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
        print(" ".join("%s:%d" % (l["url"][-1], l["retries"]) for l in lines if l["kind"] == "http"))
        print(" ".join("%s:%s" % (e["request"]["url"][-1], e.get("_retries", "-")) for e in json.load(open(sys.argv[2]))["log"]["entries"]))
        """, log, har]).output
        // b and c went again, once each, for each app.
        #expect(retries == "a:0 b:1 c:1 a:0 b:1 c:1\na:- b:1 c:1 a:- b:1 c:1\n", "\(retries)")
    }

    /// An origin that says `Connection: close` at its keep-alive limit (here
    /// after three requests) is pipelined to again on the next connection:
    /// the requests that wait join those sent again there. (One that closes
    /// without a word is not: its later connections get their requests one
    /// at a time.)
    @Test func pipeliningGoesOnPastAnAnnouncedKeepAliveLimit() throws {
        _ = try makeCADir()
        let stats = try startPipelineOrigin(port: 9450, limit: 3, announce: true)
        let path = try mitmProfile("hostname = web.test:9450\nh2 = true", name: "h2-pipelined-limit.conf")
        let r = try exec(Self.pipelinedGETs(16, port: 9450, folder: pair.path("pipelined-limit")), profile: path, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == Self.pipelinedAnswers(16), "\(r.stdout) \(r.stderr)")
        // Each connection read its three (or the last ones) in one batch: those sent again, and those
        // that joined them. Not pipelined to, a connection reads its requests one batch each.
        let batches = read(stats + ".batches").split(separator: "\n").map { $0.split(separator: " ").compactMap { Int($0) } }
        #expect(batches.map { $0.first ?? 0 } == Array(1 ... 6), "batches (connection, requests read): \(batches)")
    }

    /// Uploads over h2 reach the origin intact: with a content-length (curl's
    /// --data-binary) and without one (the gateway sends it on chunked).
    @Test func http2UploadsCrossTheGatewayIntact() throws {
        _ = try makeCADir()
        try net.start(["/usr/bin/python3", "-c", Self.digestServer, webCertificate, webKey], in: pair.server,
                      log: pair.path("digest-server.log"))
        #expect(pair.waitForListener("10.88.0.2:9443"), "\(read(pair.path("digest-server.log")))")
        try pair.makeFile("upload-h2.bin", bytes: 1_048_576 + 333)
        let upload = pair.path("upload-h2.bin")
        let path = try mitmProfile("hostname = web.test:9443\nh2 = true", name: "h2-upload.conf")
        let r = try exec("""
        curl -sS -H 'Expect:' --data-binary @\(upload) https://web.test:9443/upload
        curl -sS -H 'Expect:' -H 'Transfer-Encoding: chunked' --data-binary @\(upload) https://web.test:9443/upload
        curl -sS -w '%{http_version}\\n' -o /dev/null -H 'Expect:' --data-binary @\(upload) https://web.test:9443/upload
        """, profile: path, timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        let up = try pair.digest("upload-h2.bin")
        #expect(r.stdout == "POST 1048909 \(up)\nPOST 1048909 \(up)\n2\n", "\(r.stdout) \(r.stderr)")
    }

    /// Without h2 = true, curl (h2 and http/1.1 offered) speaks HTTP/1.1 to
    /// Sluice, and an app that offers only h2 (as gRPC clients do) passes
    /// through untouched: Python's ssl sees the server's own certificate and
    /// its h2, nghttp gets nginx's answer without the header rewrite, and
    /// reaches nghttpd, a server that speaks only h2. With h2 = true those
    /// apps are intercepted with h2, and Sluice speaks h2 to nghttpd
    /// (`HTTP2ClientSession`): nghttp's request, and curl's 3 MiB download
    /// and 1 MiB upload, held to nghttpd's windows and to Sluice's.
    @Test func h2OnlyAppsPassThroughUnlessH2IsOn() throws {
        let caDir = try makeCADir()
        try FileManager.default.createDirectory(atPath: pair.path("h2root"), withIntermediateDirectories: true)
        try "hello from nghttpd\n".write(toFile: pair.path("h2root/hello.txt"), atomically: true, encoding: .utf8)
        try pair.makeFile("h2root/3m.bin", bytes: 3 * 1_048_576)
        try pair.makeFile("h2-upload.bin", bytes: 1_048_576)
        try net.start(["/usr/sbin/nghttpd", "--address=10.88.0.2", "-d", pair.path("h2root"), "9445", webKey, webCertificate], in: pair.server,
                      log: pair.path("nghttpd.log"))
        #expect(pair.waitForListener("10.88.0.2:9445"), "\(read(pair.path("nghttpd.log")))")
        let leaf = pair.path("h2-only-leaf.pem")
        let client = """
        import socket, ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.set_alpn_protocols(["h2"])
        with socket.create_connection(("web.test", 443), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="web.test") as tls:
                open("\(leaf)", "w").write(ssl.DER_cert_to_PEM_cert(tls.getpeercert(binary_form=True)))
                print("ALPN protocol: " + str(tls.selected_alpn_protocol()))
        """
        try client.write(toFile: pair.path("h2-only.py"), atomically: true, encoding: .utf8)
        let script = """
        curl -sS -w ' %{http_version}\\n' https://web.test/echo
        python3 \(pair.path("h2-only.py"))
        nghttp https://web.test/echo; echo
        nghttp -v https://web.test:9445/hello.txt | grep -o -E '^hello from nghttpd|:status: [0-9]+'
        curl -sS -w ' %{http_code}\\n' https://web.test:9445/hello.txt
        """
        let names = "hostname = web.test, mock.test, web.test:9445"

        let log = pair.path("h2-default.jsonl")
        let r = try exec(script, profile: try mitmProfile(names, Self.http2Sections, name: "h2-default.conf"), options: ["--flow-log", log])
        #expect(r.status == 0, "\(r.stderr)")
        let echo = "method=GET scheme=https host=web.test port=443 uri=/echo env="
        // curl speaks HTTP/1.1 to Sluice, and so Sluice to nghttpd, which hangs up: the 502 says why and what to change.
        let hint = "sluice: the upstream closed before answering (its TLS chose no protocol: a server that speaks only HTTP/2 does that; "
            + "with h2 = true in [MITM], apps that speak h2 reach it)\n 502\n"
        #expect(r.stdout == "\(echo)staging\n 1.1\nALPN protocol: h2\n\(echo)\n\n:status: 200\nhello from nghttpd\n" + hint, "\(r.stdout) \(r.stderr)")
        #expect(issuer(leaf) == subject(originCA), "the h2-only app saw '\(issuer(leaf))', not the server's certificate")
        #expect(read(log).components(separatedBy: "not intercepted: the app offers only h2").count - 1 == 3, "\(read(log))")

        let on = try exec(script + "\n" + """
        curl -sS https://web.test:9445/3m.bin | sha256sum | cut -c1-64
        curl -sS -w ' %{http_code} %{http_version}\\n' -H 'Expect:' --data-binary @\(pair.path("h2-upload.bin")) https://web.test:9445/hello.txt
        """, profile: try mitmProfile(names + "\nh2 = true", Self.http2Sections, name: "h2-on.conf"), timeout: 120)
        #expect(on.status == 0, "\(on.stderr)")
        let digest = try pair.digest("h2root/3m.bin")
        #expect(on.stdout == "\(echo)staging\n 2\nALPN protocol: h2\n\(echo)staging\n\n:status: 200\nhello from nghttpd\nhello from nghttpd\n 200\n\(digest)\nhello from nghttpd\n 200 2\n",
                "\(on.stdout) \(on.stderr)")
        #expect(issuer(leaf) == subject(caDir + "/ca.pem"), "the h2-only app saw '\(issuer(leaf))', not Sluice's certificate")
    }

    /// On h2 a request's failure ends its stream, not the connection the
    /// app's other streams share: REJECT-RST resets the stream (curl: 92),
    /// REJECT-DROP leaves it unanswered (curl gives up: 28), REJECT answers
    /// 403, an origin that refuses the connection 502; the five other
    /// requests, multiplexed with them on one connection, are answered.
    @Test func http2StreamsFailAlone() throws {
        _ = try makeCADir()
        let log = pair.path("h2-alone.jsonl")
        let path = try profile("""
        [Rule]
        URL-REGEX,^https://web\\.test/ads/rst,REJECT-RST
        URL-REGEX,^https://web\\.test/ads/drop,REJECT-DROP
        URL-REGEX,^https://web\\.test/ads/page,REJECT
        FINAL,DIRECT

        \(Self.hosts)

        [MITM]
        hostname = web.test
        h2 = true

        [URL Rewrite]
        ^https://web\\.test/down https://web.test:9/down header
        """, name: "h2-alone.conf")
        let urls = ["echo?n=1", "ads/rst", "echo?n=2", "ads/page", "down", "echo?n=3", "ads/drop", "echo?n=4", "echo?n=5"]
        let r = try exec("""
        curl -s -Z --parallel-max 9 -m 6 -w '%{url_effective} %{http_code} %{exitcode} %{num_connects}\\n' \(urls.map { "-o /dev/null https://web.test/\($0)" }.joined(separator: " ")) | sort
        """, profile: path, options: ["--flow-log", log], timeout: 60)
        // Sorted by URL; the transfer that opened the one connection counts 1, every other 0.
        let lines = r.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(lines.map { $0.prefix(3).joined(separator: " ") } == [
            "https://web.test/ads/drop 000 28",
            "https://web.test/ads/page 403 0",
            "https://web.test/ads/rst 000 92",
            "https://web.test/down 502 0",
            "https://web.test/echo?n=1 200 0",
            "https://web.test/echo?n=2 200 0",
            "https://web.test/echo?n=3 200 0",
            "https://web.test/echo?n=4 200 0",
            "https://web.test/echo?n=5 200 0",
        ], "\(r.stdout) \(r.stderr)")
        #expect(lines.map { Int($0.last ?? "") ?? -1 }.reduce(0, +) == 1, "more than one connection: \(r.stdout)")
        #expect(requestURLs(log).count == urls.count, "\(requestURLs(log))")
    }

    /// An origin that closes its connection after every response (it says
    /// `Connection: close`) costs the app's h2 connection nothing: each
    /// request goes on a new upstream connection, none is lost. A response
    /// the origin cuts off in the middle resets its stream alone.
    @Test func http2OutlivesAnOriginThatClosesAfterEachResponse() throws {
        _ = try makeCADir()
        try startThreadedTLSOrigin("closing-server", port: 9444, connections: 200, serve: """
        count = 0
        def serve(raw):
            global count
            try:
                c = context.wrap_socket(raw, server_side=True); c.settimeout(30)
                buf = b""
                while b"\\r\\n\\r\\n" not in buf:
                    chunk = c.recv(65536)
                    if not chunk: return
                    buf += chunk
                count += 1
                path = buf.split(b" ")[1].decode()
                if path == "/cut":
                    c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 1000\\r\\n\\r\\n" + b"x" * 10)
                    return
                if path == "/trailers":
                    c.sendall(b"HTTP/1.1 200 OK\\r\\nTransfer-Encoding: chunked\\r\\nConnection: close\\r\\n\\r\\n5\\r\\nhello\\r\\n0\\r\\nGrpc-Status: 0\\r\\ngrpc-message: ok\\r\\n\\r\\n")
                    return
                body = (path + " on connection %d\\n" % count).encode()
                c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n" % len(body) + body)
                c.close()
            except Exception:
                pass
            finally:
                raw.close()
        """)
        let path = try mitmProfile("hostname = web.test:9444\nh2 = true", name: "h2-closing.conf")
        let urls = ["r1", "r2", "r3", "cut", "r4", "r5", "r6"].map { "-o \($0 == "cut" ? "/dev/null" : "-") https://web.test:9444/\($0)" }
        let r = try exec("""
        curl -s -Z --parallel-max 7 -m 20 -w '%{url_effective} %{http_code} %{http_version} %{exitcode} %{num_connects}\\n' \(urls.joined(separator: " ")) | sort
        """, profile: path, timeout: 60)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        // Each origin connection answered one request; the app used one connection.
        let bodies = lines.filter { $0.hasPrefix("/r") }
        #expect(Set(bodies.map { $0.split(separator: " ").first.map(String.init) ?? "" }) == Set((1 ... 6).map { "/r\($0)" }), "\(r.stdout) \(r.stderr)")
        #expect(Set(bodies.compactMap { $0.split(separator: " ").last }).count == 6, "\(r.stdout)")
        let statuses = lines.filter { $0.hasPrefix("https://") }.map { $0.split(separator: " ").map(String.init) }
        #expect(statuses.map { $0.dropLast().joined(separator: " ") } == [
            "https://web.test:9444/cut 200 2 92",
            "https://web.test:9444/r1 200 2 0", "https://web.test:9444/r2 200 2 0", "https://web.test:9444/r3 200 2 0",
            "https://web.test:9444/r4 200 2 0", "https://web.test:9444/r5 200 2 0", "https://web.test:9444/r6 200 2 0",
        ], "\(r.stdout) \(r.stderr)")
        #expect(statuses.compactMap { Int($0.last ?? "") }.reduce(0, +) == 1, "\(r.stdout)")

        // A chunked body's trailers (gRPC's status) end the app's stream as HEADERS.
        let trailers = try exec("""
        nghttp -v https://web.test:9444/trailers | grep -E 'recv HEADERS frame|recv \\(stream_id=[0-9]+\\) grpc-' | sed -E 's/.*recv HEADERS frame <length=[0-9]+, (flags=0x[0-9a-f]+).*/HEADERS \\1/; s/.*recv \\(stream_id=[0-9]+\\) //'
        """, profile: path, timeout: 60)
        #expect(trailers.stdout == """
        HEADERS flags=0x04
        grpc-status: 0
        grpc-message: ok
        HEADERS flags=0x05

        """, "\(trailers.stdout) \(trailers.stderr)")
    }

    /// A response whose body runs until the origin closes (no length, as
    /// HTTP/1.0 servers send) ends its stream whole (END_STREAM after the
    /// last byte), and the app's h2 connection goes on: the requests behind
    /// it, pipelined to the origin, go again on a new connection.
    @Test func http2StreamsEndWhereAnOriginsCloseEndsTheBody() throws {
        _ = try makeCADir()
        let stats = pair.path("close-body-stats.txt")
        try startThreadedTLSOrigin("close-body-server", port: 9454, connections: 50, serve: """
        import time
        connections = 0
        def serve(raw):
            global connections
            try:
                connections += 1
                c = context.wrap_socket(raw, server_side=True); c.settimeout(30)
                buf = b""
                while True:
                    while b"\\r\\n\\r\\n" not in buf:
                        chunk = c.recv(65536)
                        if not chunk: return
                        buf += chunk
                    head, _, buf = buf.partition(b"\\r\\n\\r\\n")
                    path = head.split(b" ")[1]
                    if path == b"/close":
                        # Those pipelined behind it are all read first (a close
                        # with requests unread would reset the connection).
                        time.sleep(0.3)
                        c.setblocking(False)
                        try:
                            while True:
                                chunk = c.recv(65536)
                                if not chunk: break
                                buf += chunk
                        except (ssl.SSLWantReadError, BlockingIOError):
                            pass
                        c.setblocking(True)
                        open("\(stats)", "w").write("%d behind" % buf.count(b"\\r\\n\\r\\n"))
                        c.sendall(b"HTTP/1.1 200 OK\\r\\nConnection: close\\r\\n\\r\\n" + b"to the close " * 100 + b"\\n")
                        c.close(); return
                    body = path + b" answered on %d\\n" % connections
                    c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body) + body)
            except Exception:
                pass
            finally:
                raw.close()
        """)
        let path = try mitmProfile("hostname = web.test:9454\nh2 = true", name: "h2-close-body.conf")
        let folder = pair.path("close-body")
        let names = ["a", "close", "b", "c", "d"]
        let r = try exec("""
        rm -rf \(folder) && mkdir -p \(folder)
        curl -sS -Z --parallel-max 5 -m 20 -w '%{http_code} %{http_version} %{exitcode}\\n' \(names.map { "-o \(folder)/\($0) https://web.test:9454/\($0)" }.joined(separator: " ")) | sort | uniq -c | sed 's/^ *//'
        wc -c < \(folder)/close
        cat \(names.filter { $0 != "close" }.map { "\(folder)/\($0)" }.joined(separator: " "))
        """, profile: path, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        // The body whole and its stream ended cleanly (curl's 92 is a stream reset); /a on the
        // first connection, ahead of it; the rest on the second, as they went again.
        #expect(r.stdout == "5 200 2 0\n1301\n/a answered on 1\n/b answered on 2\n/c answered on 2\n/d answered on 2\n",
                "\(r.stdout) \(r.stderr)")
        // They were pipelined behind it (all three, unless curl opened its streams a little apart).
        #expect(["1 behind", "2 behind", "3 behind"].contains(read(stats)), "\(read(stats))")
    }

    /// An upload the app cancels (RST_STREAM while its body goes on) ends
    /// its stream alone: the origin's connection for it is reset, never
    /// handed a whole request (a chunked one used to get its last chunk:
    /// a cancelled upload, taken for a complete, shorter one), and the app's
    /// next request on the same connection is answered (a body of fixed
    /// length used to end the whole connection with GOAWAY).
    @Test func http2UploadsTheAppCancelsEndTheirStreamsAlone() throws {
        _ = try makeCADir()
        let origin = Self.pythonTLSOrigin(port: 9445, backlog: 16, timeout: 120) + """
        import threading
        log = open(sys.argv[3], "a", buffering=1)
        def serve(raw):
            buf = b""
            def more():
                nonlocal buf
                chunk = c.recv(65536)
                if not chunk: raise EOFError
                buf += chunk
            try:
                c = context.wrap_socket(raw, server_side=True); c.settimeout(30)
                for _ in range(100):
                    while b"\\r\\n\\r\\n" not in buf: more()
                    head, buf = buf.split(b"\\r\\n\\r\\n", 1)
                    lines = head.decode().split("\\r\\n")
                    fields = dict((l.split(":", 1)[0].lower(), l.split(":", 1)[1].strip()) for l in lines[1:])
                    size = 0
                    if "content-length" in fields:
                        size = int(fields["content-length"])
                        while len(buf) < size: more()
                        buf = buf[size:]
                    elif fields.get("transfer-encoding") == "chunked":
                        while True:
                            while b"\\r\\n" not in buf: more()
                            line, rest = buf.split(b"\\r\\n", 1)
                            n = int(line, 16)
                            while len(rest) < n + 2: buf = line + b"\\r\\n" + rest; more(); line, rest = buf.split(b"\\r\\n", 1)
                            buf = rest[n + 2:]
                            size += n
                            if n == 0: break
                    log.write("whole %s %d\\n" % (lines[0], size))
                    body = ("%s %d\\n" % (lines[0].split(" ")[1], size)).encode()
                    c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body) + body)
            except Exception as e:
                log.write("cut after %d bytes: %s\\n" % (len(buf), type(e).__name__))
            finally:
                raw.close()
        for _ in range(50):
            raw, _ = s.accept()
            threading.Thread(target=serve, args=(raw,), daemon=True).start()
        """
        // The app: one h2 connection per case, its upload reset after 1,000
        // bytes, then a GET; it prints what came back on each stream.
        let app = """
        import socket, ssl, struct, sys
        def field(name, value): return b"\\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value
        def frame(kind, flags, stream, payload): return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload
        def request(stream, method, path, extra=(), end=False):
            block = field(b":method", method) + field(b":scheme", b"https") + field(b":path", path) + field(b":authority", b"web.test:9445")
            for name, value in extra: block += field(name, value)
            return frame(1, 4 | (1 if end else 0), stream, block)
        def case(label, upload):
            context = ssl.create_default_context(); context.set_alpn_protocols(["h2"])
            c = context.wrap_socket(socket.create_connection(("web.test", 9445), timeout=15), server_hostname="web.test")
            assert c.selected_alpn_protocol() == "h2"
            c.sendall(b"PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n" + frame(4, 0, 0, b"")
                      + request(1, b"POST", b"/" + label.encode(), upload) + frame(0, 0, 1, b"a" * 1000)
                      + frame(3, 0, 1, struct.pack(">I", 8)) + request(3, b"GET", b"/after-" + label.encode(), end=True))
            buf, seen, body = b"", [], b""
            while True:
                while len(buf) < 9 or len(buf) < 9 + int.from_bytes(buf[:3], "big"):
                    chunk = c.recv(65536)
                    if not chunk: print(label, "connection closed:", seen); return
                    buf += chunk
                n = int.from_bytes(buf[:3], "big"); kind, flags = buf[3], buf[4]; stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                payload, buf = buf[9:9 + n], buf[9 + n:]
                if kind == 4 and not flags & 1: c.sendall(frame(4, 1, 0, b""))
                if kind in (0, 1, 3, 7) and stream != 0 or kind == 7: seen.append((kind, stream))
                if kind == 0 and stream == 3: body += payload
                if kind == 0 and stream == 3 and flags & 1: break
                if kind == 7: print(label, "GOAWAY"); return
            print(label, sorted(set(seen)), body.decode().strip())
        case("fixed", [(b"content-length", b"100000")])
        case("chunked", [])
        """
        try origin.write(toFile: pair.path("upload-origin.py"), atomically: true, encoding: .utf8)
        try app.write(toFile: pair.path("upload-app.py"), atomically: true, encoding: .utf8)
        let originLog = pair.path("upload-origin.log")
        try net.start(["/usr/bin/python3", pair.path("upload-origin.py"), webCertificate, webKey, originLog], in: pair.server,
                      log: pair.path("upload-origin.err"))
        #expect(pair.waitForListener("10.88.0.2:9445"), "\(read(pair.path("upload-origin.err")))")
        let log = pair.path("h2-cancel.jsonl")
        let path = try mitmProfile("hostname = web.test:9445\nh2 = true", name: "h2-cancel.conf")
        let r = try exec("python3 \(pair.path("upload-app.py"))", profile: path, options: ["--flow-log", log], timeout: 60)
        // Only stream 3 answered (HEADERS 1, DATA 0): nothing on the reset stream 1.
        #expect(r.stdout == """
        fixed [(0, 3), (1, 3)] /after-fixed 0
        chunked [(0, 3), (1, 3)] /after-chunked 0

        """, "\(r.stdout) \(r.stderr)")
        // The origin got the two GETs whole and never an upload.
        _ = TestNetwork.waitUntil(seconds: 5) { self.read(originLog).contains("whole GET /after-chunked") }
        let seen = read(originLog).split(separator: "\n").map(String.init)
        #expect(seen.filter { $0.hasPrefix("whole") }.sorted() == ["whole GET /after-chunked HTTP/1.1 0", "whole GET /after-fixed HTTP/1.1 0"], "\(seen)")
        // The flow log says why the uploads got nothing.
        let errors = read(log).split(separator: "\n").compactMap { line -> String? in
            guard let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], record["kind"] as? String != "connection",
                  let url = record["url"] as? String, url.hasSuffix("/fixed") || url.hasSuffix("/chunked") else { return nil }
            return "\(url) \(record["error"] as? String ?? "-")"
        }.sorted()
        #expect(errors == [
            "https://web.test:9445/chunked the app reset its stream before the request body ended",
            "https://web.test:9445/fixed the app reset its stream before the request body ended",
        ], "\(read(log))")
    }

    /// nginx closes a kept-alive connection after 1,000 requests (its
    /// keepalive_requests) and says so: h2load's 2,500 requests over one h2
    /// connection all succeed. (When h2's requests were pipelined upstream,
    /// those behind the 1,000th were lost: 1,000 succeeded.)
    @Test func http2OutlivesNginxsKeepAliveLimit() throws {
        _ = try makeCADir()
        let path = try mitmProfile("hostname = web.test\nh2 = true", name: "h2-nginx-limit.conf")
        let r = try exec("""
        h2load -n 2500 -c 1 -m 10 https://web.test/hello.txt | grep -E '^requests:'
        """, profile: path, timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "requests: 2500 total, 2500 started, 2500 done, 2500 succeeded, 0 failed, 0 errored, 0 timeout\n", "\(r.stdout) \(r.stderr)")
    }
}
