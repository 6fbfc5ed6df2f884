import Foundation
import Testing
import TestSupport

/// HTTP mode's side of `ShortReadHold`: a response read part-way (a head
/// whose body follows a few microseconds later, as nginx sends it) waits
/// for its rest, so the app gets head and body in one segment, over plain
/// HTTP with a header rewrite and over intercepted TLS. A response whose end
/// came is never held.
extension InterceptionTests {
    /// An origin that answers each of 2,000 requests on a connection in two
    /// writes 3 µs apart, its body saying whether the request carried the
    /// profile's `X-Env` (so HTTP mode, not a relay, carried it). Each
    /// connection's thread runs on the peers' CPU (`CPUPinning`).
    func startSplittingOrigin(port: Int, plain: Bool) throws {
        try startThreadedTLSOrigin("splitting-origin-\(port)", port: port, connections: 4, serve: """
        import time, os
        def serve(raw):
            try:
                if \(CPUPinning.available ? "True" : "False"): os.sched_setaffinity(0, {1})
                raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                c = \(plain ? "raw" : "context.wrap_socket(raw, server_side=True)"); c.settimeout(30)
                buf = b""
                for _ in range(2000):
                    while b"\\r\\n\\r\\n" not in buf:
                        chunk = c.recv(65536)
                        if not chunk: return
                        buf += chunk
                    head, _, buf = buf.partition(b"\\r\\n\\r\\n")
                    c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 800\\r\\n\\r\\n")
                    t = time.perf_counter() + 3e-6
                    while time.perf_counter() < t: pass
                    c.sendall((b"b" if b"x-env: staging" in head.lower() else b"n") * 800)
            except Exception:
                pass
            finally:
                raw.close()
        """)
    }

    /// Before HTTP mode held a response read part-way, 3,700-3,920 data
    /// segments reached the app for these 2,000 answers over each scheme
    /// (three runs); with the hold, 2,002-2,089. The app's socket counts them (`ss -ti`, data_segs_in), and every
    /// answer must come whole, rewritten.
    ///
    /// As in `ExecTests.aServersHeadAndBodyReachTheAppAsOneSegment`, with two
    /// CPUs or more Sluice keeps CPU 0 and the Pythons CPU 1 (`CPUPinning`), so that the
    /// count measures the hold, not where the scheduler put three busy
    /// processes (the relayed test's CI failure, 2026-12-07).
    @Test func aResponsesHeadAndBodyReachTheAppTogetherInHTTPMode() throws {
        _ = try makeCADir()
        try startSplittingOrigin(port: 9128, plain: true)
        try startSplittingOrigin(port: 9458, plain: false)
        let path = try mitmProfile("hostname = web.test:9458", """
        [Header Rewrite]
        http-request ^https?://web\\.test:(9128|9458)/ header-add X-Env staging
        """, name: "split.conf")
        let client = """
        import socket, ssl, subprocess, re, sys
        port, scheme = int(sys.argv[1]), sys.argv[2]
        s = socket.create_connection(("web.test", port), timeout=10); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c = ssl.create_default_context(cafile=sys.argv[3]).wrap_socket(s, server_hostname="web.test") if scheme == "https" else s
        whole = 0; buf = b""
        for i in range(2000):
            c.sendall(b"GET /%d HTTP/1.1\\r\\nHost: web.test:%d\\r\\n\\r\\n" % (i, port))
            while b"\\r\\n\\r\\n" not in buf or len(buf.partition(b"\\r\\n\\r\\n")[2]) < 800:
                d = c.recv(65536)
                if not d: raise SystemExit("eof after %d answers" % whole)
                buf += d
            head, _, rest = buf.partition(b"\\r\\n\\r\\n")
            whole += head.startswith(b"HTTP/1.1 200") and rest[:800] == b"b" * 800
            buf = rest[800:]
        info = subprocess.run(["ss", "-tin", "dport", "= :%d" % port], capture_output=True, text=True).stdout
        print(whole, re.search(r"data_segs_in:(\\d+)", info).group(1))
        """
        try client.write(toFile: pair.path("split-client.py"), atomically: true, encoding: .utf8)
        let r = try exec("""
        \(CPUPinning.sluiceLine)
        \(CPUPinning.peerShellPrefix)python3 \(pair.path("split-client.py")) 9128 http \(caDir)/ca.pem
        \(CPUPinning.peerShellPrefix)python3 \(pair.path("split-client.py")) 9458 https \(caDir)/ca.pem
        """, profile: path, timeout: 90)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map { $0.split(separator: " ").compactMap { Int($0) } }
        #expect(lines.count == 2 && lines.allSatisfy { $0.count == 2 }, "\(r.stdout)\n\(r.stderr)")
        guard lines.count == 2, lines.allSatisfy({ $0.count == 2 }) else { return }
        for (scheme, numbers) in zip(["http", "https"], lines) {
            #expect(numbers[0] == 2000, "\(scheme): answers that arrived whole and rewritten")
            // TLS adds its records' few segments (handshake, tickets).
            #expect(numbers[1] <= 2400, "\(scheme): \(numbers[1]) data segments for 2,000 answers of two writes each")
        }
    }
}
