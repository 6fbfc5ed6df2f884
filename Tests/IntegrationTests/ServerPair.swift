import Foundation
import TestSupport

/// A namespace that plays the host (Sluice runs there) joined by a veth link to
/// a server namespace running nginx over a directory of test files.
/// Addresses: host 10.88.0.1 / fd00:88::1, server 10.88.0.2 / fd00:88::2.
final class ServerPair {
    let net: TestNetwork
    let host: String
    let server: String
    let work: URL

    /// `locations` adds nginx `location` blocks to the server (for tests that need answers other than files).
    init(_ label: String, locations: String = "") throws {
        net = TestNetwork(label)
        host = try net.namespace("host")
        server = try net.namespace("srv")
        try net.link(host, "h0", server, "s0")
        try net.address(host, "h0", "10.88.0.1/24")
        try net.address(server, "s0", "10.88.0.2/24")
        try net.address(host, "h0", "fd00:88::1/64")
        try net.address(server, "s0", "fd00:88::2/64")
        work = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-\(net.tag)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try net.run(["chmod", "755", work.path])
        let conf = """
        daemon off; pid \(work.path)/nginx.pid; error_log \(work.path)/error.log; worker_rlimit_nofile 8192;
        events { worker_connections 4096; }
        http { access_log off; sendfile on; client_body_temp_path \(work.path); keepalive_requests 1000;
          server { listen 10.88.0.2:8080 backlog=4096; listen [fd00:88::2]:8080 backlog=4096; root \(work.path); \(locations) } }
        """
        try conf.write(to: work.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        try net.start(["nginx", "-c", work.appendingPathComponent("nginx.conf").path, "-p", work.path], in: server)
        guard waitForListener("10.88.0.2:8080") else {
            throw TestNetwork.CommandFailed(command: ["nginx"], status: 1, output: "nginx did not start")
        }
    }

    /// The profile both HAR tests record through: everything DIRECT, a
    /// header-mode URL rewrite (api.test to origin.test) and a Map Local mock.
    static func harProfile(hosts: String) -> String {
        """
        [Rule]
        FINAL,DIRECT
        \(hosts)

        [URL Rewrite]
        ^http://api\\.test/(.*) http://origin.test:8080/$1 header

        [Map Local]
        ^http://mock\\.test/config$ data-type=text data="{}" header="Content-Type:application/json"
        """
    }

    deinit {
        net.destroy()
        try? FileManager.default.removeItem(at: work)
    }

    func path(_ file: String) -> String { work.appendingPathComponent(file).path }

    /// Writes `bytes` random bytes to the served directory.
    func makeFile(_ name: String, bytes: Int) throws {
        try net.run(["sh", "-c", "head -c \(bytes) /dev/urandom > \(path(name))"], timeout: 120)
    }

    func digest(_ file: String) throws -> String {
        String(try net.run(["sha256sum", path(file)], timeout: 120).output.prefix(64))
    }

    /// A shell command that downloads `url` (plain HTTP, kept-alive) at about
    /// `bytesPerSecond`, reading a slice every 40 ms, and closes once the body
    /// is complete. Tests that need a flow to stay open use it: curl's
    /// --limit-rate (7.88) averages over seconds and has let a 4 MiB download
    /// at "100k" through in 6 s. Exit status: 0 the whole body, 3 the stream
    /// ended early, 4 reset, 5 still going after `seconds`. The body goes to
    /// `output` (a path in the command's namespace), or nowhere.
    func slowDownload(_ url: String, bytesPerSecond: Int, seconds: Int = 60, output: String = "/dev/null") throws -> String {
        let script = path("slow-download.py")
        if !FileManager.default.fileExists(atPath: script) {
            try Self.slowReader.write(toFile: script, atomically: true, encoding: .utf8)
        }
        return "python3 \(script) '\(url)' \(max(1, bytesPerSecond / 25)) \(seconds) \(output)"
    }

    private static let slowReader = """
    import signal, socket, sys, time, urllib.parse
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # killed by it, as curl is, not a traceback
    url, chunk, seconds = urllib.parse.urlsplit(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    output = open(sys.argv[4], "wb")
    end = time.monotonic() + seconds
    s = socket.create_connection((url.hostname, url.port or 80), timeout=seconds)
    s.sendall(b"GET " + (url.path or "/").encode() + (b"?" + url.query.encode() if url.query else b"")
              + b" HTTP/1.1\\r\\nHost: " + url.netloc.encode() + b"\\r\\n\\r\\n")
    buffered, length, body = b"", None, 0
    try:
        while time.monotonic() < end:
            if length is not None and body >= length:
                s.close(); output.close(); sys.exit(0)
            more = s.recv(chunk)
            if not more:
                sys.exit(3)
            if length is None:
                buffered += more
                if b"\\r\\n\\r\\n" in buffered:
                    head, _, rest = buffered.partition(b"\\r\\n\\r\\n")
                    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\\r\\n")
                                  if line.lower().startswith(b"content-length:"))
                    body = len(rest)
                    output.write(rest)
            else:
                body += len(more)
                output.write(more)
            time.sleep(0.04)
    except ConnectionResetError:
        sys.exit(4)
    sys.exit(5)
    """

    /// A one-connection origin at 10.88.0.2:`port` in the server namespace:
    /// it reads the request's first bytes, writes `response` (Python bytes
    /// syntax, escapes and all) and closes. Returns once it listens.
    func serveOnce(port: Int, response: String) throws -> Bool {
        try net.start(["/usr/bin/python3", "-c", """
        import socket
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", \(port))); s.listen(4); s.settimeout(30)
        c, _ = s.accept(); c.settimeout(30); c.recv(4096)
        c.sendall(b"\(response)"); c.close()
        """], in: server)
        return waitForListener("10.88.0.2:\(port)")
    }

    /// The start of a one-shot origin's Python script: it listens on
    /// 10.88.0.2:`port` (bounded waits), takes one connection as `c`, and
    /// reads into `data` until the request's head has come (with whatever
    /// came after it). Python names `socket`, `sys`, `s`, `c`, `data`.
    static func acceptOneRequest(port: Int) -> String {
        """
        import socket, sys
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", \(port))); s.listen(4); s.settimeout(30)
        c, _ = s.accept(); c.settimeout(30); data = b""
        while b"\\r\\n\\r\\n" not in data:
            chunk = c.recv(65536)
            if not chunk: break
            data += chunk
        """
    }

    /// A one-connection origin at 10.88.0.2:`port` that answers the
    /// request's head with 200, `headers` (Python bytes syntax) and the file
    /// at `path` as its body, with its Content-Length. Returns once it listens.
    @discardableResult
    func serveFileOnce(port: Int, path: String, headers: String) throws -> Bool {
        try net.start(["/usr/bin/python3", "-c", """
        body = open("\(path)", "rb").read()
        \(Self.acceptOneRequest(port: port))
        c.sendall(b"HTTP/1.1 200 OK\\r\\n\(headers)\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body) + body)
        c.close()
        """], in: server)
        return waitForListener("10.88.0.2:\(port)")
    }

    /// An origin on `port` for one connection and two requests: "false" with
    /// a Content-Length (kept alive), then `lines` lines "false" running to
    /// its close. True once it listens.
    func serveKeptAliveThenToTheClose(port: Int, lines: Int) throws -> Bool {
        try net.start(["/usr/bin/python3", "-c", """
        import socket
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", \(port))); s.listen(4); s.settimeout(30)
        c, _ = s.accept(); c.settimeout(30); data = b""
        for answer in [b"HTTP/1.1 200 OK\\r\\nContent-Length: 6\\r\\n\\r\\nfalse\\n",
                       b"HTTP/1.1 200 OK\\r\\nConnection: close\\r\\n\\r\\n" + b"false\\n" * \(lines)]:
            while b"\\r\\n\\r\\n" not in data:
                chunk = c.recv(4096)
                if not chunk: break
                data += chunk
            _, _, data = data.partition(b"\\r\\n\\r\\n")
            c.sendall(answer)
        c.close()
        """], in: server)
        return waitForListener("10.88.0.2:\(port)")
    }

    /// Polls `ss` in the server namespace until something listens on `address` (TCP or UDP).
    func waitForListener(_ address: String) -> Bool {
        TestNetwork.waitUntil(seconds: 10) {
            ((try? self.net.run(["ss", "-ltnu"], in: self.server).output) ?? "").contains(address)
        }
    }

    /// `sluice exec [options] -- bash -c script`, run in the host namespace.
    func exec(_ script: String, options: [String] = [], timeout: Double = 120) throws -> SluiceRun {
        try runSluice(["exec"] + options + ["--", "bash", "-c", script], in: host, timeout: timeout)
    }
}
