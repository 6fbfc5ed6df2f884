import Foundation
import Testing
import TestSupport

/// [Body Rewrite] through `sluice exec --profile`: responses from nginx and
/// from raw listeners, rewritten on their way to the app.
extension ProfileTests {
    /// nginx's file goes to the app with both pairs applied in order and a
    /// Content-Length for the new body; the origin is asked for the body as
    /// it is, whatever the app accepts, since Sluice rewrites text, not gzip.
    @Test func aBodyRewriteChangesTheResponseBodyAndItsLength() throws {
        let path = try bodyRewriteProfile("""
        http-response ^http://origin\\.test:8080/hello\\.txt nginx Sluice ^hello goodbye
        http-response ^http://origin\\.test:8080/encoding$ accept-encoding= "the origin was asked for: "
        """)
        let har = work.appendingPathComponent("response-body.har").path
        let r = try pair.exec("""
        curl -s -D - http://origin.test:8080/hello.txt | tr -d '\\r' | grep -iE '^(content-length|transfer-encoding):|Sluice'
        curl -s --compressed http://origin.test:8080/encoding
        curl -s --compressed 'http://origin.test:8080/encoding?untouched' | grep -c gzip
        """, options: ["--profile", path, "--har", har], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == """
        Content-Length: 20
        goodbye from Sluice
        the origin was asked for: identity
        1

        """, "\(r.stdout)")
        // HAR has the response as the app received it.
        let recorded = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        entries = json.load(open(sys.argv[1]))["log"]["entries"]
        p = entries[0]["response"]
        print(repr(p["content"]["text"]), p["content"]["size"], p["bodySize"], [h["value"] for h in p["headers"] if h["name"].lower() == "content-length"],
              [e.get("_bodyRewrites") for e in entries])
        """, har]).output
        #expect(recorded == "'goodbye from Sluice\\n' 20 20 ['20'] [[9], [10], None]\n", "\(recorded)")
    }

    /// A chunked response is held whole, so a match across chunks is found;
    /// ^ and $ match at each line; $1 names a group. The response pipelined
    /// behind it, whose URL no line matches, comes as the origin sent it.
    @Test func aChunkedResponseIsRewrittenWholeAndTheNextOneIsUntouched() throws {
        _ = try net.start(["/usr/bin/python3", "-c", """
        import socket
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", 9105)); s.listen(4); s.settimeout(30)
        c, _ = s.accept(); c.settimeout(30); data = b""
        for _ in range(2):
            while b"\\r\\n\\r\\n" not in data:
                chunk = c.recv(4096)
                if not chunk: break
                data += chunk
            head, _, data = data.partition(b"\\r\\n\\r\\n")
            if b" /json " in head.split(b"\\r\\n")[0]:
                c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n"
                          b"9\\r\\n{\\"debug\\":\\r\\n" b"7\\r\\nfalse,\\n\\r\\n" b"e\\r\\n\\"name\\":\\"prod\\"}\\r\\n" b"0\\r\\n\\r\\n")
            else:
                c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 6\\r\\nConnection: close\\r\\n\\r\\nfalse\\n")
        c.close()
        """], in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:9105"))
        let client = try rawClient(port: 9105, connections: [["/json", "/plain"]])
        let path = try bodyRewriteProfile("""
        http-response ^http://origin\\.test:9105/json "\\"debug\\":false" "\\"debug\\":true"
        http-response ^http://origin\\.test:9105/json "^\\"name\\":\\"([a-z]+)\\"\\}$" "\\"name\\":\\"$1-staging\\"}"
        """)
        let r = try exec(client, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == #"""
        b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 37\r\n\r\n{"debug":true,\n"name":"prod-staging"}HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nfalse\n'

        """#, "\(r.stdout)")
    }

    /// A body that is not text (a megabyte from /dev/urandom) is held and
    /// goes on exactly as it came, though a line matches its URL.
    @Test func aBinaryBodyPassesUnchanged() throws {
        let path = try bodyRewriteProfile("""
        http-response ^http://origin\\.test:8080/1m\\.bin a b
        """)
        let r = try exec("curl -s http://origin.test:8080/1m.bin | sha256sum", profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.prefix(64) == (try pair.digest("1m.bin")), "\(r.stdout)")
    }

    /// A request's body is held until it ends, then goes rewritten with a
    /// Content-Length (a chunked one too). The app that expects 100
    /// Continue gets it from Sluice, which holds the head the origin would
    /// answer, and the origin never sees the Expect.
    @Test func aRequestBodyIsRewrittenBeforeItGoes() throws {
        let received = try rawListener(port: 9106)
        let path = try bodyRewriteProfile("""
        http-request ^http://origin\\.test:9106/upload token=([0-9]+) secret=$1
        """)
        let har = work.appendingPathComponent("request-body.har").path
        let r = try pair.exec("""
        curl -s -D - -H 'Expect: 100-continue' -H 'Transfer-Encoding: chunked' --data-binary 'token=123&x=1' http://origin.test:9106/upload | tr -d '\\r'
        """, options: ["--profile", path, "--har", har], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("HTTP/1.1 100 Continue\n\nHTTP/1.1 200 OK\n") && r.stdout.hasSuffix("\nok\n"), "\(r.stdout)")
        let request = String(decoding: try Data(contentsOf: URL(fileURLWithPath: received)), as: UTF8.self)
        #expect(request.hasPrefix("POST /upload HTTP/1.1\r\n"), "\(request)")
        #expect(request.hasSuffix("\r\nContent-Length: 14\r\n\r\nsecret=123&x=1"), "\(request)")
        #expect(!request.lowercased().contains("expect:") && !request.lowercased().contains("transfer-encoding"), "\(request)")
        // HAR has the request as the origin received it.
        let recorded = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        e = json.load(open(sys.argv[1]))["log"]["entries"][0]["request"]
        print(e["postData"]["text"], e["bodySize"], [h["value"] for h in e["headers"] if h["name"].lower() == "content-length"])
        """, har]).output
        #expect(recorded == "secret=123&x=1 14 ['14']\n", "\(recorded)")
    }

    /// A body that runs to the origin's close (no length) is held to the
    /// close, then goes with a Content-Length, and the app's connection
    /// closes after it as it would directly.
    @Test func aBodyThatRunsToTheCloseIsRewrittenAtTheClose() throws {
        #expect(try pair.serveOnce(port: 9108, response: #"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nthe body, to the close\n"#))
        let client = try rawClient(port: 9108, connections: [["/"]])
        let path = try bodyRewriteProfile("""
        http-response ^http://origin\\.test:9108/ "to the close" "rewritten at the close"
        """)
        let r = try exec(client, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == #"b'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 33\r\n\r\nthe body, rewritten at the close\n'"# + "\n", "\(r.stdout)")
    }

    /// An origin that sends a compressed body though Sluice asked for
    /// identity (gzip; br and zstd since 2026-12-07, which passed unchanged
    /// before, with a warning): the body is decoded for the lines and goes to
    /// the app plain, with a Content-Length and no Content-Encoding. HAR has
    /// it as the app got it.
    @Test(arguments: [("gzip", 9109), ("br", 9123), ("zstd", 9124)]) func aCompressedResponseIsDecodedForTheLines(_ coding: String, _ port: Int) throws {
        let plain = pair.path("rewrite-\(coding).json"), encoded = pair.path("rewrite-\(coding).bin")
        try (#"{"vip":false,"name":""# + String(repeating: "x", count: 3000) + #""}"#).write(toFile: plain, atomically: true, encoding: .utf8)
        let compress = ["gzip": "gzip -c", "br": "brotli -c", "zstd": "zstd -q -c"][coding] ?? ""
        try net.run(["/bin/sh", "-c", "\(compress) \(plain) > \(encoded)"])
        #expect(try pair.serveFileOnce(port: port, path: encoded, headers: "Content-Type: application/json\\r\\nContent-Encoding: \(coding)"))
        let path = try bodyRewriteProfile("""
        http-response ^http://origin\\.test:\(port)/ "\\"vip\\":false" "\\"vip\\":true"
        """)
        let har = work.appendingPathComponent("\(coding)-response.har").path
        let r = try pair.exec("curl -s -D - http://origin.test:\(port)/api | tr -d '\\r' | cut -c1-40", options: ["--profile", path, "--har", har], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == """
        HTTP/1.1 200 OK
        Content-Type: application/json
        Content-Length: 3022

        {"vip":true,"name":"xxxxxxxxxxxxxxxxxxxx

        """, "\(r.stdout)")
        let recorded = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        p = json.load(open(sys.argv[1]))["log"]["entries"][0]["response"]
        print(p["content"]["text"][:12], p["content"]["size"], p["bodySize"])
        """, har]).output
        #expect(recorded == "{\"vip\":true, 3022 3022\n", "\(recorded)")
    }

    /// A gzip request body is decoded for the lines and goes to the origin
    /// rewritten and plain, without its Content-Encoding.
    @Test func aGzipRequestBodyIsDecodedForTheLines() throws {
        let received = try rawListener(port: 9110)
        let path = try bodyRewriteProfile("""
        http-request ^http://origin\\.test:9110/upload token=([0-9]+) secret=$1
        """)
        let gz = work.appendingPathComponent("upload.gz").path
        let r = try exec("""
        printf 'token=123&x=1' | gzip > \(gz)
        curl -s -H 'Content-Encoding: gzip' --data-binary @\(gz) http://origin.test:9110/upload
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "ok\n", "\(r.stdout)")
        let request = String(decoding: try Data(contentsOf: URL(fileURLWithPath: received)), as: UTF8.self)
        #expect(request.hasSuffix("\r\nContent-Length: 14\r\n\r\nsecret=123&x=1"), "\(request)")
        #expect(!request.lowercased().contains("content-encoding"), "\(request)")
    }

    /// A large body goes to the rewriting thread: while eight regex pairs
    /// run over 2.6 MB, the loop answers other requests (none of them waits
    /// for the rewrite), and the rewritten response and its HAR entry come whole.
    @Test func aLargeBodyIsRewrittenOffTheLoop() throws {
        try LargeBodyRewrite.text.write(to: work.appendingPathComponent("large.txt"), atomically: true, encoding: .utf8)
        let path = try bodyRewriteProfile("""
        \(LargeBodyRewrite.line)
        """)
        let har = work.appendingPathComponent("large.har").path
        let script = LargeBodyRewrite.script(curl: "curl -s -m 60", out: work.appendingPathComponent("large.out").path,
                                             time: work.appendingPathComponent("large.time").path)
        let r = try pair.exec(script, options: ["--profile", path, "--har", har], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        LargeBodyRewrite.check(r.stdout, context: r.stderr)
        let recorded = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        entries = json.load(open(sys.argv[1]))["log"]["entries"]
        large = [e for e in entries if e["request"]["url"].endswith("/large.txt")][0]
        c = large["response"]["content"]
        print(len(entries) > 1, large.get("_bodyRewrites"), c["size"], c["text"][:17])
        """, har]).output
        #expect(recorded == "True [9] \(LargeBodyRewrite.rewrittenCount) line 0: value=0x8\n", "\(recorded)")
    }

    /// A large request body goes to the rewriting thread and then upstream,
    /// whole, though the app shut its sending side down right after it
    /// (`nc -N`'s way): the half-close waits for the request, and the
    /// response comes back.
    @Test func aLargeRequestBodyIsRewrittenOffTheLoop() throws {
        let received = try rawListener(port: 9111)
        let path = try bodyRewriteProfile("""
        http-request ^http://origin\\.test:9111/upload "v=([0-9]+);" "w=$1;"
        """)
        let client = work.appendingPathComponent("half-close-client.py").path
        try """
        import socket
        body = b"".join(b"v=%d;\\n" % i for i in range(30000))
        c = socket.create_connection(("origin.test", 9111), timeout=20)
        c.sendall(b"POST /upload HTTP/1.1\\r\\nHost: origin.test:9111\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body) + body)
        c.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = c.recv(65536)
            if not chunk: break
            data += chunk
        print(repr(data[-12:]))
        """.write(toFile: client, atomically: true, encoding: .utf8)
        let r = try exec("/usr/bin/python3 \(client)", profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == #"b'close\r\n\r\nok\n'"# + "\n", "\(r.stdout)")
        let request = try Data(contentsOf: URL(fileURLWithPath: received))
        let expected = (0 ..< 30000).map { "w=\($0);\n" }.joined()
        let text = String(decoding: request, as: UTF8.self)
        #expect(text.hasSuffix("\r\nContent-Length: \(expected.utf8.count)\r\n\r\n" + expected), "\(text.prefix(200))")
    }

    /// The second response on the app's connection runs to the origin's
    /// close and is larger than what is rewritten on the loop: it goes to the
    /// worker, then to the app whole, and the app's connection closes after it.
    @Test func aLargeBodyToTheCloseIsRewrittenOffTheLoop() throws {
        #expect(try pair.serveKeptAliveThenToTheClose(port: 9113, lines: 20_000))
        let path = try bodyRewriteProfile("""
        http-response ^http://origin\\.test:9113/ ^false$ true
        """)
        let r = try exec("curl -sS -m 20 http://origin.test:9113/a http://origin.test:9113/b | sort | uniq -c", profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) } == ["20001 true"], "\(r.stdout)")
    }

    /// The app resets its connection while its large response is on the
    /// rewriting thread: the exchange is still recorded (statistics, flow
    /// log, HAR), with the body the origin sent and why the app never got it.
    @Test func anAppThatLeavesDuringARewriteIsStillRecorded() throws {
        let (marker, line) = try LargeBodyRewrite.serveOnce(pair, port: 9114, marker: "large-sent")
        let path = try bodyRewriteProfile(line)
        let log = work.appendingPathComponent("leaving.jsonl").path
        let client = work.appendingPathComponent("leaving-client.py").path
        try LargeBodyRewrite.leavingClient(to: "origin.test", port: 9114, target: "/large.txt", authority: "origin.test:9114", originPort: 9114,
                                           sluiceSide: ["ip", "netns", "exec", pair.host], marker: marker, recordedIn: log)
            .write(toFile: client, atomically: true, encoding: .utf8)
        let r = try pair.exec("python3 \(client)", options: ["--profile", path, "--flow-log", log], timeout: 90)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == """
        held
        200 \(LargeBodyRewrite.text.utf8.count) [] the app closed the connection

        """, "\(r.stdout)\n\(r.stderr)")
    }

    /// A request answered here (Map Local) pipelined behind one whose large
    /// response is on the rewriting thread: its answer reaches the app after
    /// that response, and its record (flow log, HAR) comes after that one's,
    /// numbered in the order the app asked.
    @Test func aLocalAnswerPipelinedBehindARewriteWaitsForIt() throws {
        try LargeBodyRewrite.text.write(to: work.appendingPathComponent("large.txt"), atomically: true, encoding: .utf8)
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)

        [Body Rewrite]
        \(LargeBodyRewrite.line)

        [Map Local]
        ^http://origin\\.test:8080/mapped$ data-type=text data="mapped" status-code=200
        """)
        let log = work.appendingPathComponent("pipelined-rewrite.jsonl").path
        let client = work.appendingPathComponent("pipelined-client.py").path
        try """
        import socket
        c = socket.create_connection(("origin.test", 8080), timeout=30)
        c.sendall(b"GET /large.txt HTTP/1.1\\r\\nHost: origin.test:8080\\r\\n\\r\\nGET /mapped HTTP/1.1\\r\\nHost: origin.test:8080\\r\\n\\r\\n")
        data = b""
        def response():
            global data
            while b"\\r\\n\\r\\n" not in data:
                chunk = c.recv(65536)
                if not chunk: raise SystemExit("closed")
                data += chunk
            head, _, data = data.partition(b"\\r\\n\\r\\n")
            length = [int(l.split(b":")[1]) for l in head.split(b"\\r\\n") if l.lower().startswith(b"content-length:")][0]
            while len(data) < length:
                chunk = c.recv(65536)
                if not chunk: raise SystemExit("closed")
                data += chunk
            body, data = data[:length], data[length:]
            return body
        first, second = response(), response()
        print(len(first), first[:18], second)
        """.write(toFile: client, atomically: true, encoding: .utf8)
        let r = try pair.exec("python3 \(client)", options: ["--profile", path, "--flow-log", log], timeout: 90)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "\(LargeBodyRewrite.rewrittenCount) b'line 0: value=0x8;' b'mapped'\n", "\(r.stdout)\n\(r.stderr)")
        let order = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
        print(" ".join("%s:%s" % (l["request"], l["url"].split("/")[-1]) for l in lines if l["kind"] == "http"))
        """, log]).output
        #expect(order == "0:large.txt 1:mapped\n", "\(order)")
    }

    /// Sluice stops (its command exited, the app having only shut its
    /// sending side down) while a large response is on the rewriting thread:
    /// the exchange is recorded as cut off by the stop, with the body the
    /// origin sent.
    @Test func aRewriteCutOffByTheStopIsStillRecorded() throws {
        let (marker, line) = try LargeBodyRewrite.serveOnce(pair, port: 9116, marker: "large-sent-stop")
        let path = try bodyRewriteProfile(line)
        let log = work.appendingPathComponent("stopped.jsonl").path
        let client = work.appendingPathComponent("stopping-client.py").path
        try LargeBodyRewrite.leavingClient(to: "origin.test", port: 9116, target: "/large.txt", authority: "origin.test:9116", originPort: 9116,
                                           sluiceSide: ["ip", "netns", "exec", pair.host], marker: marker, recordedIn: log, resets: false)
            .write(toFile: client, atomically: true, encoding: .utf8)
        let r = try pair.exec("python3 \(client)", options: ["--profile", path, "--flow-log", log], timeout: 90)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "held\n", "\(r.stdout)\n\(r.stderr)")
        let recorded = try LargeBodyRewrite.recordedHTTP(log, net: net)
        #expect(recorded == "200 \(LargeBodyRewrite.text.utf8.count) Sluice stopped\n", "\(recorded)\n\(r.stderr)")
    }

    /// A request body past the 4 MiB limit goes as it came, and HAR keeps
    /// its start (what was held, then what followed), not the bytes that
    /// came after the hold.
    @Test func aRequestBodyPastTheLimitIsRecordedFromItsStart() throws {
        let received = try rawListener(port: 9117)
        let path = try bodyRewriteProfile("""
        http-request ^http://origin\\.test:9117/upload token=([0-9]+) secret=$1
        """)
        let upload = work.appendingPathComponent("upload-5m.txt").path
        // 5 MiB of numbered lines, each 16 bytes: "line 0000000000\n".
        try (0 ..< 327_680).map { String(format: "line %010d\n", $0) }.joined().write(toFile: upload, atomically: true, encoding: .utf8)
        let har = work.appendingPathComponent("request-past-limit.har").path
        let r = try pair.exec("curl -s --data-binary @\(upload) http://origin.test:9117/upload",
                              options: ["--profile", path, "--har", har], timeout: 90)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "ok\n", "\(r.stdout)\n\(r.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: received)).suffix(5 << 20) == (try Data(contentsOf: URL(fileURLWithPath: upload))))
        let recorded = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        e = json.load(open(sys.argv[1]))["log"]["entries"][0]["request"]
        text = e["postData"]["text"]
        print(len(text), text[:16].strip(), text[-16:].strip(), e["bodySize"])
        """, har]).output
        #expect(recorded == "1048576 line 0000000000 line 0000065535 5242880\n", "\(recorded)")
    }

    /// [General]'s `body-rewrite-limit` moves the 4 MiB limit: a body past
    /// it goes as it came, with a warning naming the setting; one within it
    /// is rewritten.
    @Test func theBodyRewriteLimitIsASetting() throws {
        try String(repeating: "false\n", count: 2000).write(to: work.appendingPathComponent("flags-12k.txt"), atomically: true, encoding: .utf8)
        try String(repeating: "false\n", count: 100).write(to: work.appendingPathComponent("flags-600.txt"), atomically: true, encoding: .utf8)
        let path = try profile("""
        [General]
        body-rewrite-limit = 2048

        [Rule]
        FINAL,DIRECT
        \(Self.hosts)

        [Body Rewrite]
        http-response ^http://origin\\.test:8080/flags ^false$ true
        """)
        let r = try exec("""
        curl -s http://origin.test:8080/flags-12k.txt | sort | uniq -c
        curl -s http://origin.test:8080/flags-600.txt | sort | uniq -c
        """, profile: path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) } == ["2000 false", "100 true"], "\(r.stdout)")
        #expect(r.stderr.contains("flags-12k.txt: the response's body passes 2 KiB; [Body Rewrite] leaves it as it came (body-rewrite-limit in [General] moves the limit)"),
                "\(r.stderr)")
    }
}
