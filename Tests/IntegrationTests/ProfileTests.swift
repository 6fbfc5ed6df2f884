import Foundation
import Testing
import TestSupport

/// The profile's actions through `sluice exec --profile`, against nginx and
/// raw listeners in a server namespace. Names are `.test` names given
/// addresses by the profile's [Host] section; nothing leaves the namespaces.
@Suite(.enabled(if: TestNetwork.isRoot, "needs root: creates network namespaces and TUN devices"), .serialized)
final class ProfileTests {
    let pair: ServerPair
    var net: TestNetwork { pair.net }
    var work: URL { pair.work }

    /// nginx answers with what it received, so the tests can see rewritten heads.
    static let locations = """
    location = /echo { default_type text/plain; return 200 "method=$request_method host=$host env=$http_x_env ua=$http_user_agent token=$http_x_debug_token\\n"; }
    location = /fail { return 500 "failing\\n"; }
    location = /cookie { add_header Set-Cookie "sid=1; Domain=api.staging.test; Path=/"; return 200 "ok\\n"; }
    location = /encoding { default_type text/plain; return 200 "accept-encoding=$http_accept_encoding\\n"; }
    location = /gzip.txt { gzip on; gzip_min_length 1; gzip_types text/plain; }
    """

    init() throws {
        pair = try ServerPair("profile", locations: Self.locations)
        try pair.makeFile("1m.bin", bytes: 1_048_576)
        try "hello from nginx\n".write(to: work.appendingPathComponent("hello.txt"), atomically: true, encoding: .utf8)
        try String(repeating: "a line that compresses well\n", count: 200).write(to: work.appendingPathComponent("gzip.txt"), atomically: true, encoding: .utf8)
    }

    /// Writes `text` as a profile in the test's folder and returns its path.
    func profile(_ text: String, name: String = "test.conf") throws -> String {
        let path = work.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A profile of `Self.hosts`, everything DIRECT, and `lines` as its [Body Rewrite] section.
    func bodyRewriteProfile(_ lines: String) throws -> String {
        try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)\n\n[Body Rewrite]\n\(lines)\n")
    }

    func exec(_ script: String, profile: String, timeout: Double = 60) throws -> SluiceRun {
        try pair.exec(script, options: ["--profile", profile], timeout: timeout)
    }

    /// A one-request HTTP server on the server at `port` that keeps the raw
    /// request (head and Content-Length body) in a file, then answers "ok".
    /// Returns the file's path once the server listens.
    func rawListener(port: Int) throws -> String {
        let received = work.appendingPathComponent("received-\(port).bin").path
        let script = """
        \(ServerPair.acceptOneRequest(port: port))
        head, _, body = data.partition(b"\\r\\n\\r\\n")
        length = 0
        for line in head.split(b"\\r\\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length": length = int(value)
        while len(body) < length:
            chunk = c.recv(65536)
            if not chunk: break
            body += chunk
        open(sys.argv[1], "wb").write(data[:len(head) + 4] + body)
        c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 3\\r\\nConnection: close\\r\\n\\r\\nok\\n"); c.close()
        """
        try net.start(["/usr/bin/python3", "-c", script, received], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:\(port)"))
        return received
    }

    /// A command that opens a connection to origin.test:`port` for each
    /// list of paths, sends their GETs at once (pipelined, when more than
    /// one), reads until the close, and prints what came as Python's repr,
    /// a line a connection.
    func rawClient(port: Int, connections: [[String]]) throws -> String {
        let client = work.appendingPathComponent("raw-client-\(port).py").path
        let lists = connections.map { "[" + $0.map { "b\"\($0)\"" }.joined(separator: ", ") + "]" }.joined(separator: ", ")
        try """
        import socket
        for paths in [\(lists)]:
            c = socket.create_connection(("origin.test", \(port)), timeout=10)
            c.sendall(b"".join(b"GET " + p + b" HTTP/1.1\\r\\nHost: origin.test:\(port)\\r\\n\\r\\n" for p in paths))
            data = b""
            while True:
                chunk = c.recv(4096)
                if not chunk: break
                data += chunk
            print(repr(data))
        """.write(toFile: client, atomically: true, encoding: .utf8)
        return "/usr/bin/python3 \(client)"
    }

    static let hosts = """
    [Host]
    origin.test = 10.88.0.2
    api.staging.test = 10.88.0.2
    new.test = 10.88.0.2
    """

    @Test func hostEntriesAreAnsweredByTheDNS() throws {
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)
        v6only.test = fd00:88::2
        dual.test = 10.88.0.2, fd00:88::2
        """)
        let r = try exec("""
        dig +short origin.test A; dig +short v6only.test AAAA; curl -sS http://origin.test:8080/hello.txt
        dig +short dual.test A; dig +short dual.test AAAA
        curl -sS -4 -w ' %{remote_ip}\n' http://dual.test:8080/hello.txt; curl -sS -6 -w ' %{remote_ip}\n' http://dual.test:8080/hello.txt
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "10.88.0.2\nfd00:88::2\nhello from nginx\n10.88.0.2\nfd00:88::2\nhello from nginx\n 10.88.0.2\nhello from nginx\n fd00:88::2\n",
                "\(r.stdout) \(r.stderr)")
    }

    @Test func rejectPoliciesAnswerAsTheySay() throws {
        let path = try profile("""
        [Proxy]
        deny451 = reject, status-code=451, body="Unavailable here"

        [Rule]
        DOMAIN-SUFFIX,ads.test,REJECT
        DOMAIN,reset.test,REJECT-RST
        DOMAIN,drop.test,REJECT-DROP
        DOMAIN,pixel.test,REJECT-TINYGIF
        DOMAIN,legal.test,deny451
        URL-REGEX,^http://sniffed\\.test/dropped,REJECT-DROP
        FINAL,DIRECT
        """)
        let r = try exec("""
        curl -s -o /dev/null -w '%{http_code}\\n' http://banner.ads.test/x
        curl -s http://banner.ads.test/x
        curl -sS http://reset.test/ 2>/dev/null; echo "rst=$?"
        curl -sS --max-time 2 http://drop.test/ 2>/dev/null; echo "drop=$?"
        curl -s -o /tmp/pixel -w '%{http_code} %{content_type} %{size_download}\\n' http://pixel.test/ad.gif
        curl -s -w ' %{http_code}\\n' http://legal.test/
        curl -sS --max-time 2 http://sniffed.test/dropped 2>/dev/null; echo "sniffed drop=$?"
        """, profile: path)
        let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.count >= 6, "\(r.stdout) \(r.stderr)")
        guard lines.count >= 6 else { return }
        #expect(lines[0] == "403")
        #expect(lines[1].contains("Blocked"))
        // curl: 56 = failure receiving data (the connection was reset), 7 = could not connect.
        #expect(lines[2] == "rst=7" || lines[2] == "rst=56", "\(lines[2])")
        #expect(lines[3] == "drop=28", "\(lines[3])")
        #expect(lines[4] == "200 image/gif 43")
        #expect(lines[5] == "Unavailable here 451")
        // Dropped once its request was read: still silence, not a reset 200 ms later (curl: 56).
        #expect(lines.count > 6 && lines[6] == "sniffed drop=28", "\(r.stdout)")
    }

    /// SRC-IP sees the address a flow comes from: here the app's, 10.233.0.1
    /// over IPv4 and fd00:233::1 over IPv6, so one rule can treat the two
    /// families of the same app apart.
    @Test func sourceIPRulesSeeWhereAFlowComesFrom() throws {
        let path = try profile("""
        [Rule]
        SRC-IP,10.233.0.1,REJECT-RST
        SRC-IP,fd00:233::/64,DIRECT
        FINAL,REJECT
        """)
        let r = try exec("""
        curl -sS http://10.88.0.2:8080/1m.bin -o /dev/null 2>/dev/null; echo "v4=$?"
        curl -sS 'http://[fd00:88::2]:8080/1m.bin' -o /dev/null; echo "v6=$?"
        """, profile: path)
        #expect(r.stdout == "v4=7\nv6=0\n", "\(r.stdout) \(r.stderr)")
    }

    /// A UDP flow a rule rejects: its datagrams never leave, the summary
    /// counts it apart from the relayed sessions, and its flow-log line
    /// says `blocked` at once, as a rejected TCP flow's does.
    @Test func aRejectedUDPFlowIsDroppedAndLoggedAsBlocked() throws {
        let received = pair.path("udp-rejected.bin")
        try net.start(["sh", "-c", "nc -u -l 10.88.0.2 9002 > \(received)"], in: pair.server)
        #expect(TestNetwork.waitUntil { ((try? self.net.run(["ss", "-lun"], in: self.pair.server).output) ?? "").contains("10.88.0.2:9002") })
        let path = try profile("""
        [Rule]
        PROTOCOL,UDP,REJECT
        FINAL,DIRECT
        """)
        let log = pair.path("udp-rejected.jsonl")
        let r = try pair.exec("echo rejected | nc -u -w 1 10.88.0.2 9002; true", options: ["--profile", path, "--flow-log", log])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("0 UDP sessions"), "\(r.stderr)")
        #expect(((try? Data(contentsOf: URL(fileURLWithPath: received))) ?? Data()).isEmpty)
        let summary = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        for line in open(sys.argv[1]):
            r = json.loads(line)
            print(r["transport"], r["destination"], r["destinationPort"], r["policy"], r["status"])
        """, log]).output
        #expect(summary.split(separator: "\n").map(String.init) == ["udp 10.88.0.2 9002 REJECT blocked"], "\(summary)")
    }

    /// REJECT-RST on UDP is what a closed port says: ICMP port unreachable,
    /// so the app's socket fails at once (ECONNREFUSED) instead of waiting
    /// out its timeout; REJECT and REJECT-DROP stay silent.
    @Test func rejectRSTTellsAUDPAppThePortIsClosed() throws {
        let path = try profile("""
        [Rule]
        DEST-PORT,9005,REJECT-RST
        DEST-PORT,9006,REJECT-DROP
        FINAL,REJECT
        """)
        let r = try pair.exec("""
        /usr/bin/python3 - <<'EOF'
        import socket, time
        for port in (9005, 9006, 9007):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("10.88.0.2", port)); s.settimeout(2)
            start = time.time()
            try:
                s.send(b"knock"); s.recv(16); print(port, "answered")
            except ConnectionRefusedError: print(port, "refused", "fast" if time.time() - start < 1 else "slow")
            except socket.timeout: print(port, "silence")
        EOF
        """, options: ["--profile", path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "9005 refused fast\n9006 silence\n9007 silence\n", "\(r.stdout)\(r.stderr)")
    }

    /// [Host] answers are real addresses: a flow that names itself no other
    /// way (raw TCP that sends nothing first) gets the name the last answer
    /// gave its address, when a rule needs one; before any lookup it has none.
    @Test func hostEntriesNameFlowsThatNameThemselvesNoOtherWay() throws {
        let path = try profile("""
        [Rule]
        DOMAIN,raw.test,REJECT-RST
        FINAL,DIRECT

        [Host]
        raw.test = 10.88.0.2
        """, name: "raw.conf")
        let r = try pair.exec("""
        /usr/bin/python3 - <<'EOF'
        import socket
        def probe(host):
            t = socket.socket(); t.settimeout(3)
            try:
                t.connect((host, 8080)); t.settimeout(1); print(host, "reset" if t.recv(10) == b"" else "data")
            except ConnectionResetError: print(host, "reset")
            except socket.timeout: print(host, "open")
        probe("10.88.0.2")
        probe(socket.gethostbyname("raw.test"))
        EOF
        """, options: ["--profile", path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "10.88.0.2 open\n10.88.0.2 reset\n", "\(r.stdout)\(r.stderr)")
    }

    @Test func headerRewritesChangeRequestsAndResponses() throws {
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)

        [Header Rewrite]
        http-request ^http://origin\\.test:8080/ header-add X-Env staging
        http-request ^http://origin\\.test:8080/ header-replace User-Agent "sluice-test/1.0"
        http-request ^http://([a-z0-9-]+\\.)*test(:[0-9]+)?/ header-del X-Debug-Token
        http-response ^http://origin\\.test:8080/cookie header-replace-regex Set-Cookie "(?i)domain=\\.?api\\.staging\\.test" "Domain=api.test"
        http-response ^http://origin\\.test:8080/ header-add X-Seen-By sluice
        """)
        let r = try exec("""
        curl -s -H 'X-Debug-Token: secret' http://origin.test:8080/echo
        curl -s -D - -o /dev/null http://origin.test:8080/cookie | tr -d '\\r' | grep -iE '^(set-cookie|x-seen-by):'
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("method=GET host=origin.test env=staging ua=sluice-test/1.0 token=\n"), "\(r.stdout)")
        #expect(r.stdout.contains("Set-Cookie: sid=1; Domain=api.test; Path=/"), "\(r.stdout)")
        #expect(r.stdout.contains("X-Seen-By: sluice"), "\(r.stdout)")
    }

    /// A response head no http-response line touches goes to the app with the
    /// server's own bytes (odd spacing kept); one that a line changes is
    /// written anew.
    @Test func anUntouchedResponseHeadKeepsTheServersBytes() throws {
        _ = try net.start(["/usr/bin/python3", "-c", """
        import socket
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", 9103)); s.listen(4); s.settimeout(30)
        for _ in range(2):
            c, _ = s.accept(); c.settimeout(30); data = b""
            while b"\\r\\n\\r\\n" not in data:
                chunk = c.recv(4096)
                if not chunk: break
                data += chunk
            c.sendall(b"HTTP/1.1 200 Fine\\r\\nX-Odd:tight\\r\\nX-Trail: v \\r\\nContent-Length: 3\\r\\nConnection: close\\r\\n\\r\\nok\\n"); c.close()
        """], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9103"))
        let client = try rawClient(port: 9103, connections: [["/raw"], ["/changed"]])
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)

        [Header Rewrite]
        http-request ^http://origin\\.test:9103/ header-add X-Env staging
        http-response ^http://origin\\.test:9103/changed header-add X-Seen-By sluice
        """)
        let r = try exec(client, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(r.stdout)")
        #expect(lines.first == #"b'HTTP/1.1 200 Fine\r\nX-Odd:tight\r\nX-Trail: v \r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n'"#, "\(r.stdout)")
        #expect(lines.last?.contains(#"X-Odd: tight\r\nX-Trail: v\r\n"#) == true && lines.last?.contains(#"X-Seen-By: sluice\r\n"#) == true, "\(r.stdout)")
    }

    /// An app that pipelines a request behind one whose response runs until
    /// the origin closes (no length) reads that body to its end and then the
    /// close, as it would directly: nothing after it. A 502 for the request
    /// left unanswered, or Map Local's answer to the one after it, written
    /// there, would read as the body's tail; a request that waited for
    /// another upstream (a rewrite to another port) does not go there.
    @Test func aBodyThatEndsWithTheCloseIsAllTheAppReads() throws {
        _ = try net.start(["/usr/bin/python3", "-c", """
        import socket, time
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", 9104)); s.listen(4); s.settimeout(30)
        for _ in range(3):
            c, _ = s.accept(); c.settimeout(30)
            c.recv(4096)
            # What came pipelined behind the first request is read before the close (else it resets).
            time.sleep(0.2)
            c.setblocking(False)
            try:
                while c.recv(4096): pass
            except BlockingIOError:
                pass
            c.setblocking(True)
            c.sendall(b"HTTP/1.1 200 OK\\r\\nConnection: close\\r\\n\\r\\nthe body, to the close\\n"); c.close()
        """], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9104"))
        let client = try rawClient(port: 9104, connections: [["/first", "/second"], ["/first", "/mapped"], ["/first", "/elsewhere"]])
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)

        [URL Rewrite]
        ^http://origin\\.test:9104/elsewhere http://origin.test:8080/hello.txt header

        [Header Rewrite]
        http-request ^http://origin\\.test:9104/ header-add X-Env staging

        [Map Local]
        ^http://origin\\.test:9104/mapped$ data-type=text data="mapped" status-code=200
        """)
        let log = work.appendingPathComponent("close-body.jsonl").path
        let r = try pair.exec(client, options: ["--profile", path, "--flow-log", log], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == String(repeating: #"b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nthe body, to the close\n'"# + "\n", count: 3), "\(r.stdout)")
        // The request left unanswered counts as the upstream's failure; the log says why each went unanswered.
        #expect(r.stderr.contains(" 1 upstream errors,"), "\(r.stderr)")
        let errors = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
        print("\\n".join("%s %s %s" % (l["url"].split("/")[-1], l["status"], l["error"]) for l in lines if l["kind"] == "http"))
        """, log]).output
        #expect(errors == """
        first 200 None
        second None the response before it ended with the origin's close
        first 200 None
        mapped 200 the response before it ended with the origin's close
        first 200 None
        hello.txt None the response before it ended with the origin's close

        """, "\(errors)")
    }

    @Test func headerModeRewriteKeepsMethodAndBody() throws {
        let received = try rawListener(port: 9100)
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)

        [URL Rewrite]
        ^http://api\\.test/(.*) http://origin.test:9100/v2/$1 header
        """)
        let r = try exec("curl -sS --data-binary @\(work.path)/1m.bin -H 'Content-Type: application/octet-stream' http://api.test/upload?x=1", profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "ok\n")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: received))
        let text = String(decoding: bytes.prefix(600), as: UTF8.self)
        #expect(text.hasPrefix("POST /v2/upload?x=1 HTTP/1.1\r\n"), "\(text)")
        #expect(text.contains("\r\nHost: origin.test:9100\r\n"), "\(text)")
        // The body arrives byte for byte after the head.
        guard let end = bytes.range(of: Data("\r\n\r\n".utf8)) else {
            Issue.record("no end of head in what arrived")
            return
        }
        let body = bytes[end.upperBound...]
        let original = try Data(contentsOf: work.appendingPathComponent("1m.bin"))
        #expect(body == original)
    }

    @Test func redirectWith307KeepsThePostBody() throws {
        let received = try rawListener(port: 9101)
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)

        [URL Rewrite]
        ^http://old\\.test/(.*) http://new.test:9101/$1 307
        ^http://legacy\\.test/(.*) http://new.test:8080/$1 302
        """)
        let r = try exec("""
        curl -s -o /dev/null -w '%{http_code} %{redirect_url}\\n' http://legacy.test/hello.txt
        curl -sL http://legacy.test/hello.txt
        curl -sSL --data-binary 'name=sluice&payload=0123456789' http://old.test/form
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("302 http://new.test:8080/hello.txt\nhello from nginx\nok\n"), "\(r.stdout)")
        let text = (try? String(contentsOfFile: received, encoding: .utf8)) ?? ""
        #expect(text.hasPrefix("POST /form HTTP/1.1\r\n"), "\(text)")
        #expect(text.hasSuffix("\r\n\r\nname=sluice&payload=0123456789"), "\(text)")
    }

    @Test func mapLocalAnswersFromTextFilesAndFolders() throws {
        let mocks = work.appendingPathComponent("mocks")
        try FileManager.default.createDirectory(at: mocks.appendingPathComponent("static"), withIntermediateDirectories: true)
        try "placeholder".write(to: mocks.appendingPathComponent("placeholder.txt"), atomically: true, encoding: .utf8)
        try "body { }".write(to: mocks.appendingPathComponent("static/site.css"), atomically: true, encoding: .utf8)
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)

        [Map Local]
        ^http://api\\.test/v1/config$ data-type=text data="{\\"feature\\":true}" status-code=200 header="Content-Type:application/json"
        ^http://api\\.test/v1/fail$ data-type=text data="" status-code=503
        ^http://img\\.test/.*\\.png$ data-type=file data="mocks/placeholder.txt" header="Content-Type:image/png|Cache-Control:no-store"
        ^http://static\\.test/assets/(.*)$ data-type=dir data="mocks/static"
        """)
        let r = try exec("""
        curl -s -w ' %{http_code} %{content_type}\\n' http://api.test/v1/config
        curl -s -o /dev/null -w '%{http_code}\\n' http://api.test/v1/fail
        curl -s -D /tmp/h -w ' %{http_code} %{content_type}\\n' http://img.test/a/b.png; grep -ic '^cache-control: no-store' /tmp/h
        curl -s -w ' %{http_code}\\n' http://static.test/assets/site.css
        curl -s -o /dev/null -w '%{http_code}\\n' --path-as-is 'http://static.test/assets/../../test.conf'
        curl -s -o /dev/null -w '%{http_code}\\n' --path-as-is 'http://static.test/assets/..%2f..%2ftest.conf'
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == """
        {"feature":true} 200 application/json
        503
        placeholder 200 image/png
        1
        body { } 200
        404
        404

        """, "\(r.stdout) \(r.stderr)")
    }

    @Test func statisticsCountStatusesAndErrors() throws {
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)
        closed.test = 10.88.0.2

        [Statistics]
        all-http = ".*", key=host
        """)
        let r = try exec("""
        for i in 1 2 3; do curl -s -o /dev/null http://origin.test:8080/hello.txt; done
        curl -s -o /dev/null http://origin.test:8080/missing
        curl -s -o /dev/null http://origin.test:8080/missing
        curl -s -o /dev/null http://origin.test:8080/fail
        curl -s -o /dev/null -w '%{http_code}\\n' http://closed.test:9/
        true
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "502\n", "\(r.stdout)")
        // The exit summary's table: origin.test saw 6 requests (3 × 200, 2 × 404, 1 × 500), closed.test one refusal.
        let rows = r.stderr.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        let origin = rows.first { $0.first == "origin.test" }
        let closed = rows.first { $0.first == "closed.test" }
        #expect(origin.map { Array($0.prefix(6)) } == ["origin.test", "6", "3", "0", "2", "1"], "\(r.stderr)")
        #expect(closed.map { Array($0.prefix(6)) } == ["closed.test", "1", "0", "0", "0", "0"], "\(r.stderr)")
        #expect(r.stderr.contains("refused 1"), "\(r.stderr)")
    }

    /// A request the policy answers itself (REJECT: 403) is counted with that
    /// status, as is a URL Rewrite's redirect; one it refuses (REJECT-RST)
    /// gets no response and is not, as `sluice match` says of each
    /// (ExplainerTests.rejectingPoliciesSkipTheRewrites).
    @Test func statisticsCountAnsweredRejectionsNotRefusedOnes() throws {
        let path = try profile("""
        [Rule]
        DOMAIN,blocked.test,REJECT
        DOMAIN,reset.test,REJECT-RST
        FINAL,DIRECT
        \(Self.hosts)
        blocked.test = 10.88.0.2
        reset.test = 10.88.0.2
        old.test = 10.88.0.2

        [URL Rewrite]
        ^http://old\\.test:8080/(.*) http://origin.test:8080/$1 307

        [Statistics]
        all-http = ".*", key=host
        """)
        let r = try exec("""
        curl -s -o /dev/null -w '%{http_code}\\n' http://old.test:8080/hello.txt
        curl -s -o /dev/null -w '%{http_code}\\n' http://blocked.test:8080/hello.txt
        curl -s -o /dev/null http://reset.test:8080/hello.txt; echo "reset curl=$?"
        curl -s -o /dev/null -w '%{http_code}\\n' http://origin.test:8080/hello.txt
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "307\n403\nreset curl=56\n200\n", "\(r.stdout) \(r.stderr)")
        let rows = r.stderr.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(rows.first { $0.first == "blocked.test" }.map { Array($0.prefix(6)) } == ["blocked.test", "1", "0", "0", "1", "0"], "\(r.stderr)")
        #expect(rows.first { $0.first == "origin.test" }.map { Array($0.prefix(6)) } == ["origin.test", "1", "1", "0", "0", "0"], "\(r.stderr)")
        #expect(rows.first { $0.first == "old.test" }.map { Array($0.prefix(6)) } == ["old.test", "1", "0", "1", "0", "0"], "\(r.stderr)")
        #expect(!rows.contains { $0.first == "reset.test" }, "\(r.stderr)")
    }

    /// Shell lines that ask origin.test until it answers 200 (a reload that
    /// allows it has been applied), then print "after CODE".
    static let untilOriginAnswers = """
    for i in $(seq 50); do
      code=$(curl -s -o /dev/null -w '%{http_code}' http://origin.test:8080/hello.txt)
      [ "$code" = 200 ] && break
      sleep 0.1
    done
    echo "after $code"
    """

    @Test func sighupReloadsWithoutDroppingOpenFlows() throws {
        let path = try profile("""
        [Rule]
        DOMAIN,origin.test,REJECT
        FINAL,DIRECT
        \(Self.hosts)
        """)
        // The command is Sluice's child: it can send Sluice the SIGHUP itself. The download
        // (paced: 1 MiB at 400 kB/s) is open across both reloads.
        let slow = try pair.slowDownload("http://10.88.0.2:8080/1m.bin", bytesPerSecond: 400_000, output: "/tmp/slow.bin")
        let r = try exec("""
        curl -s -o /dev/null -w 'before %{http_code}\\n' http://origin.test:8080/hello.txt
        \(slow) & slow=$!
        sleep 0.5
        sed -i 's/^DOMAIN,origin.test,REJECT$/DOMAIN,origin.test,DIRECT/' \(path)
        kill -HUP $PPID
        \(Self.untilOriginAnswers)
        printf 'broken line\\n' >> \(path)
        kill -HUP $PPID
        sleep 0.3
        curl -s -o /dev/null -w 'still %{http_code}\\n' http://origin.test:8080/hello.txt
        wait $slow; echo "slow=$?"
        sha256sum < /tmp/slow.bin | cut -c1-64
        """, profile: path, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let expected = try pair.digest("1m.bin")
        #expect(r.stdout == "before 403\nafter 200\nstill 200\nslow=0\n\(expected)\n", "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains("reloaded"), "\(r.stderr)")
        #expect(r.stderr.contains("test.conf:"), "\(r.stderr)")
        #expect(r.stderr.contains("still using the previous profile"), "\(r.stderr)")
    }

    /// A reload that changes what only a start reads ([Capture] here) says
    /// so; it applied the rest and said nothing of the capture.
    @Test func aReloadNamesTheSettingsOnlyAStartReads() throws {
        let pcap = work.appendingPathComponent("reload.pcap").path
        let path = try profile("""
        [Rule]
        DOMAIN,origin.test,REJECT
        FINAL,DIRECT
        [Capture]
        pcap = \(pcap)
        filter = tcp port 8080
        \(Self.hosts)
        """)
        let r = try exec("""
        sed -i -e 's/^DOMAIN,origin.test,REJECT$/DOMAIN,origin.test,DIRECT/' -e 's/^filter = tcp port 8080$/filter = udp/' \(path)
        kill -HUP $PPID
        \(Self.untilOriginAnswers)
        """, profile: path, timeout: 60)
        #expect(r.stdout == "after 200\n", "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains("test.conf: a reload does not apply [Capture] filter: it is read only when Sluice starts"), "\(r.stderr)")
    }

    /// RULE-SET and DOMAIN-SET lists are read from files beside the profile,
    /// and read again on SIGHUP: a list edited while the tunnel runs applies
    /// at the reload, as the profile's own lines do.
    @Test func ruleAndDomainSetsComeFromTheirFilesAndReloadWithThem() throws {
        let lists = work.appendingPathComponent("lists")
        try FileManager.default.createDirectory(at: lists, withIntermediateDirectories: true)
        let ads = lists.appendingPathComponent("ads.txt").path
        try "# blocked names\n.ads.test\n".write(toFile: ads, atomically: true, encoding: .utf8)
        try "DOMAIN,legal.test\nDOMAIN-SUFFIX,banner.ads.test\n".write(
            toFile: lists.appendingPathComponent("legal.list").path, atomically: true, encoding: .utf8)
        let path = try profile("""
        [Proxy]
        deny451 = reject, status-code=451, body="Unavailable here"

        [Rule]
        DOMAIN-SET,lists/ads.txt,REJECT
        RULE-SET,lists/legal.list,deny451
        FINAL,DIRECT
        \(Self.hosts)
        banner.ads.test = 10.88.0.2
        legal.test = 10.88.0.2
        """)
        let r = try exec("""
        curl -s -o /dev/null -w 'ads %{http_code}\\n' http://banner.ads.test:8080/hello.txt
        curl -s -o /dev/null -w 'legal %{http_code}\\n' http://legal.test:8080/hello.txt
        curl -s -o /dev/null -w 'origin %{http_code}\\n' http://origin.test:8080/hello.txt
        printf 'tracker.test\\n' > \(ads)
        kill -HUP $PPID
        for i in $(seq 50); do
          code=$(curl -s -o /dev/null -w '%{http_code}' http://banner.ads.test:8080/hello.txt)
          [ "$code" = 451 ] && break
          sleep 0.1
        done
        echo "after $code"
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        // After the reload the name is no longer in the domain set, and the
        // rule set below it decides.
        #expect(r.stdout == "ads 403\nlegal 451\norigin 200\nafter 451\n", "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains("reloaded"), "\(r.stderr)")
    }

    /// PROCESS-NAME, PROCESS-PATH and UID: the same URL, asked by different
    /// programs and users inside one `sluice exec`, goes different ways, and
    /// the flow log says who opened each flow.
    @Test func processAndUserRulesDecideByWhoOpensTheFlow() throws {
        let received = pair.path("udp-owner.txt")
        let queued = pair.path("udp-owner-queued.txt")
        try net.start(["sh", "-c", "nc -u -k -l 10.88.0.2 9003 > \(received)"], in: pair.server)
        try net.start(["sh", "-c", "nc -u -k -l 10.88.0.2 9004 > \(queued)"], in: pair.server)
        #expect(TestNetwork.waitUntil {
            let ss = (try? self.net.run(["ss", "-lun"], in: self.pair.server).output) ?? ""
            return ss.contains("10.88.0.2:9003") && ss.contains("10.88.0.2:9004")
        })
        let path = try profile("""
        [Rule]
        PROCESS-NAME,wg?t,REJECT
        UID,65000-65534,REJECT-RST
        AND,((PROTOCOL,UDP),(PROCESS-PATH,/usr/bin/python3*),(DEST-PORT,9003)),REJECT
        FINAL,DIRECT
        \(Self.hosts)
        """)
        let log = pair.path("owner.jsonl")
        let har = pair.path("owner.har")
        let r = try pair.exec("""
        curl -s -o /dev/null -w 'curl %{http_code}\\n' http://origin.test:8080/hello.txt
        wget -q -O /dev/null http://origin.test:8080/hello.txt; echo "wget $?"
        setpriv --reuid=65534 --regid=65534 --clear-groups curl -s -o /dev/null http://origin.test:8080/hello.txt; echo "nobody $?"
        /usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"from python\\n", ("10.88.0.2", 9003)); s.settimeout(0.5)
        try: s.recv(16)
        except OSError: pass'
        echo 'from nc' | nc -u -w 1 10.88.0.2 9003; true
        /usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); [s.sendto(w, ("10.88.0.2", 9004)) for w in (b"one\\n", b"two\\n", b"three\\n")]; s.settimeout(0.5)
        try: s.recv(16)
        except OSError: pass'
        """, options: ["--profile", path, "--flow-log", log, "--har", har])
        #expect(r.status == 0, "\(r.stderr)")
        // The HAR names the program behind each request (wget's answered by Sluice).
        let programs = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        entries = json.load(open(sys.argv[1]))["log"]["entries"]
        print(" ".join(sorted(e.get("_process", "-").split("[")[0] + ":" + str(e["response"]["status"]) for e in entries)))
        """, har]).output
        #expect(programs == "curl:200 wget:403\n", "\(programs)")
        // Six flows (two curls, wget, three UDP senders), each program still there when asked.
        #expect(r.stderr.contains("owners: 6 flows looked up, 0 not found"), "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        // wget: 8 = the server answered with an error (Sluice's 403); curl as
        // nobody: 7 or 56, the connection reset.
        #expect(lines.count == 3 && lines[0] == "curl 200" && lines[1] == "wget 8", "\(r.stdout) \(r.stderr)")
        #expect(lines.count == 3 && (lines[2] == "nobody 7" || lines[2] == "nobody 56"), "\(r.stdout)")
        #expect(TestNetwork.waitUntil { ((try? String(contentsOfFile: received, encoding: .utf8)) ?? "").contains("from nc") })
        #expect((try? String(contentsOfFile: received, encoding: .utf8)) == "from nc\n")
        // Datagrams sent while the flow waited for its process follow it, in order.
        #expect(TestNetwork.waitUntil { ((try? String(contentsOfFile: queued, encoding: .utf8)) ?? "").contains("three") })
        #expect((try? String(contentsOfFile: queued, encoding: .utf8)) == "one\ntwo\nthree\n")
        let summary = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        for line in open(sys.argv[1]):
            r = json.loads(line)
            if r["kind"] == "connection":
                print(r["transport"], r["process"], r["uid"], type(r["pid"]).__name__, r["policy"], r["status"])
        """, log]).output
        let flows = Set(summary.split(separator: "\n").map(String.init))
        #expect(flows.contains("tcp curl 0 int DIRECT closed"), "\(summary)")
        #expect(flows.contains("tcp wget 0 int REJECT closed"), "\(summary)")
        #expect(flows.contains("tcp curl 65534 int REJECT-RST blocked"), "\(summary)")
        #expect(flows.contains { $0.hasPrefix("udp python3") && $0.hasSuffix(" 0 int REJECT blocked") }, "\(summary)")
        #expect(flows.contains { $0.hasPrefix("udp python3") && $0.hasSuffix(" 0 int DIRECT closed") }, "\(summary)")
        #expect(flows.contains("udp nc.openbsd 0 int DIRECT closed") || flows.contains("udp nc.traditional 0 int DIRECT closed"), "\(summary)")
    }

    /// GEOIP and IP-ASN rules with MaxMind DBs written for the test (which
    /// Debian's mmdblookup reads the same way): the server's IPv4 network is
    /// in one country, its IPv6 network in an autonomous system.
    @Test func geoIPRulesDecideByTheServersCountry() throws {
        let database = work.appendingPathComponent("country.mmdb").path
        let bytes = MaxMindTestDatabase.build([("10.88.0.0/16", "NL"), ("fd00:88::/64", "JP")], registeredOnly: [("10.89.0.0/16", "US")])
        try Data(bytes).write(to: URL(fileURLWithPath: database))
        for (address, country) in [("10.88.0.2", "NL"), ("fd00:88::2", "JP")] {
            let lookup = try net.run(["mmdblookup", "--file", database, "--ip", address, "country", "iso_code"], timeout: 10)
            #expect(lookup.output.contains("\"\(country)\""), "mmdblookup \(address): \(lookup.output)")
        }
        let registered = try net.run(["mmdblookup", "--file", database, "--ip", "10.89.1.1", "registered_country", "iso_code"], timeout: 10)
        #expect(registered.output.contains("\"US\""), "\(registered.output)")
        let asnDatabase = work.appendingPathComponent("asn.mmdb").path
        try Data(MaxMindTestDatabase.buildASN([("fd00:88::/64", 64500)])).write(to: URL(fileURLWithPath: asnDatabase))
        let asn = try net.run(["mmdblookup", "--file", asnDatabase, "--ip", "fd00:88::2", "autonomous_system_number"], timeout: 10)
        #expect(asn.output.contains("64500"), "\(asn.output)")
        let path = try profile("""
        [General]
        geoip-database = country.mmdb
        asn-database = asn.mmdb
        [Proxy]
        deny451 = reject, status-code=451
        [Rule]
        GEOIP,NL,REJECT
        IP-ASN,AS64500,deny451
        FINAL,DIRECT
        """)
        let r = try exec("""
        curl -s -o /dev/null -w '%{http_code}\\n' http://10.88.0.2:8080/hello.txt
        curl -s -o /dev/null -w '%{http_code}\\n' 'http://[fd00:88::2]:8080/hello.txt'
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "403\n451\n", "\(r.stdout) \(r.stderr)")
    }

    /// A profile that takes seconds to read (120,000 patterns outside the byte
    /// matcher's subset, each compiled by Regex) is read on a worker thread:
    /// a request made while it is read is answered at once, from the old
    /// profile, and the new one applies when the read is done. The margins
    /// are wide (a second against the read's two or more), and the test says
    /// so when the read was too quick to tell.
    /// A profile that lets origin.test through, and one to reload over it that
    /// rejects it after 120,000 URL-REGEX lines outside the byte matcher's
    /// subset (each compiles a Swift Regex: seconds to read).
    func slowReloadProfiles() throws -> (path: String, bigPath: String) {
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)
        """)
        var big = "[Rule]\nDOMAIN,origin.test,REJECT\n"
        for i in 0 ..< 120_000 { big += "URL-REGEX,\"(?=x)\(i)\\b\",REJECT\n" }
        big += "FINAL,DIRECT\n" + Self.hosts + "\n"
        let bigPath = work.appendingPathComponent("big.conf").path
        try big.write(toFile: bigPath, atomically: true, encoding: .utf8)
        return (path, bigPath)
    }

    @Test func aSlowReloadDoesNotHoldTheTunnel() throws {
        let (path, bigPath) = try slowReloadProfiles()
        let r = try exec("""
        curl -s -o /dev/null -w 'before %{http_code}\\n' http://origin.test:8080/hello.txt
        cp \(bigPath) \(path)
        kill -HUP $PPID
        start=$(date +%s%N)
        curl -s -o /dev/null -w 'during %{http_code}\\n' http://origin.test:8080/hello.txt
        echo "during-ms $(( ($(date +%s%N) - start) / 1000000 ))"
        for i in $(seq 300); do
          code=$(curl -s -o /dev/null -w '%{http_code}' http://origin.test:8080/hello.txt)
          [ "$code" = 403 ] && break
          sleep 0.05
        done
        echo "after $code"
        echo "reload-ms $(( ($(date +%s%N) - start) / 1000000 ))"
        """, profile: path, timeout: 90)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "before 200" && lines.dropFirst().first == "during 200" && lines.contains("after 403"), "\(r.stdout)")
        let during = lines.first { $0.hasPrefix("during-ms ") }.flatMap { Int($0.dropFirst(10)) } ?? .max
        let reload = lines.first { $0.hasPrefix("reload-ms ") }.flatMap { Int($0.dropFirst(10)) } ?? 0
        #expect(reload >= 1_500, "the reload took \(reload) ms: too quick to tell whether it held the tunnel")
        #expect(during < 1_000, "a request during the reload took \(during) ms (the reload took \(reload) ms)")
        #expect(r.stderr.contains("reloaded"), "\(r.stderr)")
    }

    /// `POST /reload` (`sluice reload`) reads on the same worker thread as
    /// SIGHUP: while a long profile is read, the control socket answers other
    /// requests and the tunnel carries traffic, and the reload's own answer
    /// comes when the read is done. A client asks for the reload, then
    /// probes the control socket and the tunnel every 20 ms until its answer
    /// comes; on a loop that reads on its own thread a probe waits seconds.
    @Test func aSlowReloadThroughTheControlSocketHoldsNeitherTheTunnelNorTheSocket() throws {
        let (path, bigPath) = try slowReloadProfiles()
        let socket = work.appendingPathComponent("control.sock").path
        let client = work.appendingPathComponent("reload-client.py").path
        try """
        import json, shutil, socket, sys, time, urllib.request
        def ask(s, request):
            s.sendall(request)
            data = b""
            while b"\\r\\n\\r\\n" not in data:
                data += s.recv(65536)
            head, _, body = data.partition(b"\\r\\n\\r\\n")
            length = int([l.split(b":")[1] for l in head.split(b"\\r\\n") if l.lower().startswith(b"content-length")][0])
            while len(body) < length:
                body += s.recv(65536)
            return int(head.split(b" ")[1]), json.loads(body)
        def fetch():
            try:
                return urllib.request.urlopen("http://origin.test:8080/hello.txt", timeout=20).status
            except urllib.error.HTTPError as e:
                return e.code
        print("before", fetch())
        shutil.copy(sys.argv[2], sys.argv[1])
        reload = socket.socket(socket.AF_UNIX); reload.connect(sys.argv[3]); reload.settimeout(0)
        start = time.monotonic()
        reload.sendall(b"POST /reload HTTP/1.1\\r\\nHost: s\\r\\nContent-Length: 0\\r\\n\\r\\n")
        probe = socket.socket(socket.AF_UNIX); probe.connect(sys.argv[3]); probe.settimeout(20)
        worst, probes, answer, codes = 0.0, 0, b"", []
        while time.monotonic() - start < 60:
            try:
                answer += reload.recv(65536)
            except BlockingIOError:
                pass
            if b"\\r\\n\\r\\n" in answer:
                break
            t = time.monotonic()
            status, _ = ask(probe, b"GET /stats HTTP/1.1\\r\\nHost: s\\r\\n\\r\\n")
            code = fetch()
            worst = max(worst, time.monotonic() - t)
            probes += 1
            codes.append(code)
            if status != 200:
                print("probe", status)
            time.sleep(0.02)
        # The last probe may already meet the new profile: it is applied just before the answer is sent.
        if [c for c in codes[:-1] if c != 200]:
            print("probe", codes)
        print("reload-ms", int((time.monotonic() - start) * 1000))
        print("reload-status", answer.split(b" ")[1].decode() if answer else "none")
        print("probes", probes)
        print("worst-probe-ms", int(worst * 1000))
        print("after", fetch())
        """.write(toFile: client, atomically: true, encoding: .utf8)
        let r = try pair.exec("python3 \(client) \(path) \(bigPath) \(socket)",
                              options: ["--profile", path, "--control", socket], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        func number(_ name: String) -> Int { lines.first { $0.hasPrefix(name + " ") }.flatMap { Int($0.dropFirst(name.count + 1)) } ?? -1 }
        #expect(lines.first == "before 200", "\(r.stdout)")
        #expect(!lines.contains { $0.hasPrefix("probe ") }, "\(r.stdout)")
        #expect(number("reload-status") == 200, "\(r.stdout)")
        #expect(lines.last == "after 403", "the reloaded profile rejects origin.test: \(r.stdout)")
        let reload = number("reload-ms")
        #expect(reload >= 1_500, "the reload took \(reload) ms: too quick to tell whether it held anything")
        #expect(number("probes") >= 5, "\(r.stdout)")
        #expect(number("worst-probe-ms") < 1_000, "a probe during the reload waited: \(r.stdout)")
        #expect(r.stderr.contains("control: reloaded"), "\(r.stderr)")
    }

    @Test func aBadProfileStopsBeforeAnythingStarts() throws {
        let path = try profile("""
        [General]
        loglevel = info

        [Rule]
        DOMAIN-SUFIX,ads.test,REJECT
        FINAL,DIRECT
        """, name: "bad.conf")
        let r = try exec("echo ran", profile: path)
        #expect(r.status == 1)
        #expect(r.stdout == "")
        #expect(r.stderr.contains("bad.conf:5: error:"), "\(r.stderr)")
        #expect(r.stderr.contains("DOMAIN-SUFFIX"), "\(r.stderr)")
    }

    @Test func theFlowLogHasALinePerConnectionAndPerRequest() throws {
        let log = work.appendingPathComponent("flows.jsonl").path
        let path = try profile("""
        [Rule]
        DOMAIN,blocked.test,REJECT-RST
        FINAL,DIRECT
        \(Self.hosts)

        [Statistics]
        all = ".*", key=host
        """)
        let r = try pair.exec("""
        curl -s -o /dev/null http://origin.test:8080/hello.txt http://origin.test:8080/missing
        curl -s -o /dev/null http://blocked.test/ || true
        head -c 1000 /dev/zero | curl -s -o /dev/null --data-binary @- http://origin.test:8080/upload
        """, options: ["--profile", path, "--flow-log", log])
        #expect(r.status == 0, "\(r.stderr)")
        // Every line is JSON; the summary is what a user would grep for.
        let summary = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        for line in open(sys.argv[1]):
            r = json.loads(line)
            if r["kind"] == "connection":
                print("connection", r["domain"], r["policy"], r["status"], r["bytesUp"] > 0)
            else:
                print("request", r["connection"], r["method"], r["url"], r["status"])
                print("bodies", r["url"], r["requestBodyBytes"], r["responseBodyBytes"])
        """, log]).output
        let all = summary.split(separator: "\n").map(String.init)
        // The bodies' sizes, not the heads' (hello.txt is 17 bytes).
        #expect(all.contains("bodies http://origin.test:8080/hello.txt 0 17"), "\(summary)")
        #expect(all.contains { $0.hasPrefix("bodies http://origin.test:8080/upload 1000 ") }, "\(summary)")
        let lines = all.filter { !$0.hasPrefix("bodies ") && !$0.contains("/upload") }
        #expect(lines.contains("request 1 GET http://origin.test:8080/hello.txt 200"), "\(summary)")
        #expect(lines.contains("request 1 GET http://origin.test:8080/missing 404"), "\(summary)")
        #expect(lines.contains("connection origin.test DIRECT closed True") || lines.contains("connection origin.test HTTP mode: decided per request closed True"), "\(summary)")
        #expect(lines.contains("connection blocked.test REJECT-RST blocked False"), "\(summary)")
        #expect(lines.contains { $0.hasPrefix("request ") && $0.hasSuffix(" GET http://blocked.test/ None") }, "\(summary)")
        #expect(lines.count == 6, "two connections to origin.test (the upload's is new), blocked.test's, three requests: \(summary)")
    }

    /// An origin on 10.88.0.2:9191 that answers every request "hello world" in
    /// three chunks (after reading a POST's chunked body whole).
    static let chunkedOrigin = """
    import socket, threading
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("10.88.0.2", 9191)); s.listen(8); s.settimeout(60)
    def serve(c):
        c.settimeout(20)
        buf = b""
        while b"\\r\\n\\r\\n" not in buf: buf += c.recv(65536)
        head = buf.split(b"\\r\\n\\r\\n")[0]
        if head.startswith(b"POST"):
            while not buf.endswith(b"0\\r\\n\\r\\n"): buf += c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\\r\\nTransfer-Encoding: chunked\\r\\nContent-Type: text/plain\\r\\n\\r\\n5\\r\\nhello\\r\\n1\\r\\n \\r\\n5\\r\\nworld\\r\\n0\\r\\n\\r\\n")
        c.close()
    for _ in range(4):
        threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
    """

    /// Each HAR entry of a chunked exchange with `chunkedOrigin`: the request's
    /// kept data, whether its wire body was longer than its 26 bytes of data,
    /// and the response's kept text, data size and wire size.
    static let chunkedHARSummary = """
    import json, sys
    for e in json.load(open(sys.argv[1]))["log"]["entries"]:
        q, p = e["request"], e["response"]
        print(q["method"], q.get("postData", {}).get("text"), q["bodySize"] > 26, repr(p["content"].get("text")), p["content"]["size"], p["bodySize"])
    """
    /// With --har-body-limit 8. The response's wire body: 3+5+2 + 3+1+2 + 3+5+2 + 5 bytes.
    static let chunkedHARExpected = ["GET None False 'hello wo' 11 31", "POST abcdefgh True 'hello wo' 11 31"]

    /// HAR shows a chunked body as its data (HAR's `content` and `postData`
    /// are the body as sent, not its framing), `content.size` is the whole
    /// body's data even when only its first bytes are kept, and `bodySize`
    /// the body as it went on the wire. Until 2026-12-05 the text held the
    /// chunk-size lines, and the size stopped at what was kept.
    @Test func harShowsChunkedBodiesAsTheirData() throws {
        let origin = Self.chunkedOrigin
        try origin.write(toFile: work.appendingPathComponent("chunked-origin.py").path, atomically: true, encoding: .utf8)
        try net.start(["/usr/bin/python3", work.appendingPathComponent("chunked-origin.py").path], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9191"))
        let har = work.appendingPathComponent("chunked.har").path
        let path = try profile("[Rule]\nFINAL,DIRECT\n\(Self.hosts)\n", name: "chunked.conf")
        let r = try pair.exec("""
        curl -sS http://origin.test:9191/down; echo
        printf 'abcdefghijklmnopqrstuvwxyz' | curl -sS -o /dev/null -H 'Transfer-Encoding: chunked' -H 'Content-Type: text/plain' --data-binary @- http://origin.test:9191/up
        """, options: ["--profile", path, "--har", har, "--har-body-limit", "8"])
        #expect(r.stdout == "hello world\n", "\(r.stdout) \(r.stderr)")
        let out = try net.run(["/usr/bin/python3", "-c", Self.chunkedHARSummary, har]).output
        #expect(out.split(separator: "\n").map(String.init).sorted() == Self.chunkedHARExpected, "\(out)")
    }

    /// The required fields of HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) and their types.
    static let harValidator = """
    import json, sys
    def need(obj, fields, where):
        for name, kind in fields:
            assert name in obj, f"{where}: missing {name}"
            assert isinstance(obj[name], kind) and not (kind is int and isinstance(obj[name], bool)), f"{where}.{name}: {type(obj[name]).__name__}"
    NUM = (int, float)
    har = json.load(open(sys.argv[1]))
    need(har, [("log", dict)], "har")
    log = har["log"]
    need(log, [("version", str), ("creator", dict), ("entries", list)], "log")
    assert log["version"] == "1.2", log["version"]
    need(log["creator"], [("name", str), ("version", str)], "creator")
    for i, e in enumerate(log["entries"]):
        w = f"entries[{i}]"
        need(e, [("startedDateTime", str), ("time", NUM), ("request", dict), ("response", dict), ("cache", dict), ("timings", dict)], w)
        r = e["request"]
        need(r, [("method", str), ("url", str), ("httpVersion", str), ("cookies", list), ("headers", list), ("queryString", list), ("headersSize", int), ("bodySize", int)], w + ".request")
        for h in r["headers"] + r["queryString"]: need(h, [("name", str), ("value", str)], w + ".request.headers")
        if "postData" in r: need(r["postData"], [("mimeType", str)], w + ".request.postData")
        p = e["response"]
        need(p, [("status", int), ("statusText", str), ("httpVersion", str), ("cookies", list), ("headers", list), ("content", dict), ("redirectURL", str), ("headersSize", int), ("bodySize", int)], w + ".response")
        need(p["content"], [("size", int), ("mimeType", str)], w + ".response.content")
        need(e["timings"], [("send", NUM), ("wait", NUM), ("receive", NUM)], w + ".timings")
        assert e["startedDateTime"].endswith("Z") and "T" in e["startedDateTime"], e["startedDateTime"]
        print(r["method"], r["url"], p["status"], e.get("_policy"), e.get("_mocked"), e.get("_rewrittenFrom"), repr(p["content"].get("text", "")), r.get("postData", {}).get("text"), e["connection"])
    """

    @Test func harFilesFollowTheHAR12Structure() throws {
        let har = work.appendingPathComponent("flows.har").path
        let path = try profile(ServerPair.harProfile(hosts: Self.hosts))
        let r = try pair.exec("""
        curl -s -o /dev/null http://origin.test:8080/hello.txt http://origin.test:8080/missing
        curl -s -o /dev/null http://api.test/hello.txt
        curl -s -o /dev/null --data 'a=1' http://origin.test:8080/echo
        curl -s -o /dev/null http://mock.test/config
        # Each exchange reaches the file as it ends, in a whole document: readable while Sluice runs.
        for i in $(seq 100); do
          n=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["log"]["entries"]))' \(har) 2>/dev/null || echo unreadable)
          [ "$n" = 5 ] && break
          sleep 0.05
        done
        echo "while running: $n"
        """, options: ["--profile", path, "--har", har])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("while running: 5"), "\(r.stdout)")
        #expect(r.stderr.contains("HAR: 5 entries written"), "\(r.stderr)")
        let out = try net.run(["/usr/bin/python3", "-c", Self.harValidator, har]).output
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.count == 5, "\(out)")
        guard lines.count == 5 else { return }
        #expect(lines[0] == "GET http://origin.test:8080/hello.txt 200 DIRECT False None 'hello from nginx\\n' None 1", "\(out)")
        #expect(lines[1].hasPrefix("GET http://origin.test:8080/missing 404 DIRECT False None"), "\(out)")
        // Both requests of the kept-alive connection carry its connection id.
        #expect(lines[0].hasSuffix(" 1") && lines[1].hasSuffix(" 1"), "\(out)")
        #expect(lines[2].hasPrefix("GET http://origin.test:8080/hello.txt 200 DIRECT False http://api.test/hello.txt 'hello from nginx\\n'"), "\(out)")
        #expect(lines[3].hasPrefix("POST http://origin.test:8080/echo 200 DIRECT False None 'method=POST ") && lines[3].contains(" a=1 "), "\(out)")
        #expect(lines[4].hasPrefix("GET http://mock.test/config 200 local True None '{}'"), "\(out)")
        // A HAR path that cannot be written stops Sluice before anything runs.
        let bad = try pair.exec("echo ran", options: ["--har", work.appendingPathComponent("missing/flows.har").path])
        #expect(bad.status == 1 && !bad.stdout.contains("ran"), "\(bad.stdout) \(bad.stderr)")
        #expect(bad.stderr.contains("HAR: ") && bad.stderr.contains("missing/flows.har: cannot open"), "\(bad.stderr)")
    }

    @Test func checkAndMatchExplainAProfileFromTheCommandLine() throws {
        let path = try profile("""
        [Rule]
        DOMAIN,blocked.test,REJECT-RST
        FINAL,DIRECT

        [URL Rewrite]
        ^http://old\\.test/(.*) http://new.test/$1 307
        """)
        let check = try runSluice(["check", path])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.hasPrefix("\(path): ok (1 rule and FINAL"), "\(check.stdout)")
        let match = try runSluice(["match", path, "http://blocked.test/x", "--method", "POST"])
        #expect(match.status == 0, "\(match.stderr)")
        #expect(match.stdout.contains("Rule: line 2 (DOMAIN,blocked.test,REJECT-RST) matches"), "\(match.stdout)")
        #expect(match.stdout.contains("policy: REJECT-RST"), "\(match.stdout)")
        let redirect = try runSluice(["match", path, "http://old.test/form"])
        #expect(redirect.stdout.contains("307"), "\(redirect.stdout)")
        let bad = try profile("[Rule]\nDOMAIN,a.test\nFINAL,DIRECT\n", name: "bad-check.conf")
        let failed = try runSluice(["check", bad])
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("bad-check.conf:2: error:") || failed.stdout.contains("bad-check.conf:2: error:"), "\(failed.stdout) \(failed.stderr)")
    }

    @Test func quietAndVerboseSetWhatSluiceSays() throws {
        let quiet = try runSluice(["-q", "exec", "--no-control", "--", "curl", "-s", "-o", "/dev/null", "http://10.88.0.2:8080/hello.txt"], in: pair.host)
        #expect(quiet.status == 0)
        #expect(quiet.stderr == "", "\(quiet.stderr)")
        let normal = try runSluice(["exec", "--", "curl", "-s", "-o", "/dev/null", "http://10.88.0.2:8080/hello.txt"], in: pair.host)
        #expect(normal.stderr.contains("1 TCP flows"), "\(normal.stderr)")
        #expect(!normal.stderr.contains("debug:"), "\(normal.stderr)")
        let verbose = try runSluice(["-v", "exec", "--", "curl", "-s", "-o", "/dev/null", "http://10.88.0.2:8080/hello.txt"], in: pair.host)
        #expect(verbose.stderr.contains("debug:") && verbose.stderr.contains("upstream ready"), "\(verbose.stderr)")
    }

    /// Answers `Expect: 100-continue` with an interim 100 before reading the
    /// body, and `Upgrade: echo` with 101, after which it echoes raw bytes.
    static let upgradeServer = """
    import socket, threading
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("10.88.0.2", 9102)); s.listen(8); s.settimeout(60)
    def serve(c):
        c.settimeout(30); data = b""
        while b"\\r\\n\\r\\n" not in data:
            chunk = c.recv(65536)
            if not chunk: return
            data += chunk
        head, _, rest = data.partition(b"\\r\\n\\r\\n")
        lines = head.decode().split("\\r\\n")
        fields = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
        if fields.get("upgrade") == "echo":
            c.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n" + rest)
            while True:
                chunk = c.recv(65536)
                if not chunk: break
                c.sendall(chunk)
            c.close(); return
        if fields.get("expect", "").lower() == "100-continue":
            c.sendall(b"HTTP/1.1 100 Continue\\r\\n\\r\\n")
        length = int(fields.get("content-length", "0")); body = rest
        while len(body) < length:
            chunk = c.recv(65536)
            if not chunk: break
            body += chunk
        answer = f"got {len(body)} bytes\\n".encode()
        c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(answer) + answer); c.close()
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
    """

    static let upgradeClient = """
    import socket
    c = socket.create_connection(("origin.test", 9102), timeout=10)
    c.sendall(b"GET /chat HTTP/1.1\\r\\nHost: origin.test:9102\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n")
    data = b""
    while b"\\r\\n\\r\\n" not in data: data += c.recv(4096)
    print(data.split(b"\\r\\n")[0].decode())
    for message in [b"hello", b"\\x00\\xffbinary\\r\\n\\r\\nGET / HTTP/1.1\\r\\n\\r\\n"]:
        c.sendall(message); back = b""
        while len(back) < len(message): back += c.recv(4096)
        print(back == message)
    """

    @Test func upgradeAndExpectContinuePassThroughHTTPMode() throws {
        _ = try net.start(["/usr/bin/python3", "-c", Self.upgradeServer], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9102"))
        let client = work.appendingPathComponent("upgrade-client.py").path
        try Self.upgradeClient.write(toFile: client, atomically: true, encoding: .utf8)
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)

        [Header Rewrite]
        http-request ^http://origin\\.test:9102/ header-add X-Env staging
        """)
        let r = try pair.exec("""
        /usr/bin/python3 \(client)
        curl -sS --max-time 10 -H 'Expect: 100-continue' --data-binary @\(work.path)/1m.bin http://origin.test:9102/upload
        """, options: ["--profile", path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "HTTP/1.1 101 Switching Protocols\nTrue\nTrue\ngot 1048576 bytes\n", "\(r.stdout) \(r.stderr)")
    }

    /// HTTP mode's work a request allocates a handful of times, not a score:
    /// two runs through a profile with a rule list, a URL rewrite that does
    /// not match, two header rewrites that do and [Statistics], the second
    /// with 800 more kept-alive requests, counted by
    /// tools/alloc-check/count-mallocs.c. (Until 2026-12-07 a curl request
    /// cost 28: each head's fields grew one at a time, the decision's reason
    /// was joined and split again, and the normalized URL, the flow log's
    /// upstream and an emptied queue were made anew each time; 11 since.)
    @Test func anHTTPModeRequestAllocatesAHandful() throws {
        try pair.makeFile("1k.bin", bytes: 1024)
        let path = try profile("""
            [Rule]
            DOMAIN-SUFFIX,ads.test,REJECT
            USER-AGENT,"LegacyApp/*",REJECT-DROP
            FINAL,DIRECT

            [URL Rewrite]
            ^http://svc1\\.test/(.*) http://svc1.staging.test/$1 header

            [Header Rewrite]
            http-request ^http://10\\.88\\.0\\.2:8080/ header-add X-Env staging
            http-request ^http://[0-9.]+:8080/ header-del X-Debug-Token

            [Statistics]
            all-http = ".*", key=host
            """)
        let counter = try MallocCounter(net: net, work: work)
        func allocations(requests: Int) throws -> Int? {
            let label = "http-\(requests)"
            let r = try runSluice(["exec", "--profile", path, "--", "curl", "-sS", "-o", "/dev/null", "-w", "%{num_connects}\\n",
                                   "http://10.88.0.2:8080/1k.bin?[1-\(requests)]"],
                                  in: pair.host, environment: counter.environment(label), timeout: 60)
            #expect(r.status == 0, "\(r.stderr)")
            // curl reuses its connection: one connect, then none.
            #expect(r.stdout.split(separator: "\n") == ["1"] + Array(repeating: "0", count: requests - 1), "\(r.stdout.prefix(200))")
            #expect(r.stderr.contains("all-http"), "the statistics counted: \(r.stderr)")
            return counter.count(label, pid: r.pid)
        }
        let few = try allocations(requests: 100)
        let many = try allocations(requests: 900)
        #expect(few != nil && many != nil, "no count from Sluice's process")
        guard let few, let many else { return }
        #expect(few > 50, "the counter counted (\(few) allocations for a whole run)")
        let perRequest = Double(many - few) / 800
        #expect(perRequest <= 13, "\(perRequest) allocations a request (\(few) for 100 requests, \(many) for 900)")
    }
}
