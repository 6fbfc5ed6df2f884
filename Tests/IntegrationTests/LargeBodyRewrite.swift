import Foundation
import Testing
import TestSupport

/// What the tests of [Body Rewrite] off the loop share (the tunnel's and
/// `sluice proxy`'s): a 2.6 MB text, eight regex pairs over it (a good part
/// of a second on these machines), and a client that downloads it while it
/// times small requests beside it.
enum LargeBodyRewrite {
    /// 100,000 lines "line N: value=N;".
    static let text = (0 ..< 100_000).map { "line \($0): value=\($0);\n" }.joined()
    /// Its length once the pairs have run: each line gains "x8".
    static var rewrittenCount: Int { text.utf8.count + 100_000 * 2 }

    /// The [Body Rewrite] line for nginx's `large.txt`: value=N; becomes value=Nx1;, then x2, ... x8.
    static let line = "http-response ^http://origin\\.test:8080/large\\.txt"
        + (0 ..< 8).map { " \"value=([0-9]+)\($0 == 0 ? "" : "x\($0)");\" \"value=$1x\($0 + 1);\"" }.joined()

    /// A shell script: `curl` (with its proxy option, if any) fetches
    /// large.txt into `out` in the background, and hello.txt again and again
    /// until it is done (bounded: 400); prints the large one's time and the
    /// slowest other's, then the first and last lines and the size of what came.
    static func script(curl: String, out: String, time: String) -> String {
        """
        \(curl) -o \(out) -w '%{time_total}\\n' http://origin.test:8080/large.txt > \(time) &
        big=$!
        slowest=0
        for i in $(seq 1 400); do
          kill -0 $big 2>/dev/null || break
          t=$(\(curl) -o /dev/null -w '%{time_total}' http://origin.test:8080/hello.txt)
          slowest=$(echo "$t $slowest" | awk '{ print ($1 > $2) ? $1 : $2 }')
        done
        wait $big
        echo "$(cat \(time)) $slowest"
        sed -n '1p;100000p' \(out)
        wc -c < \(out)
        """
    }

    /// Starts `origin` on `port` in `pair`'s server namespace with large.txt
    /// (bounded wait until it listens); returns the path of the marker it
    /// writes and the [Body Rewrite] line that rewrites that URL.
    static func serveOnce(_ pair: ServerPair, port: Int, marker name: String) throws -> (marker: String, line: String) {
        let text = pair.path("large.txt")
        try Self.text.write(toFile: text, atomically: true, encoding: .utf8)
        let marker = pair.path(name)
        try pair.net.start(origin(port: port, file: text, marker: marker), in: pair.server)
        #expect(pair.waitForListener("10.88.0.2:\(port)"))
        return (marker, line.replacingOccurrences(of: ":8080/", with: ":\(port)/"))
    }

    /// The HTTP lines of the flow log at `log`: status, response body bytes and error, space-separated.
    static func recordedHTTP(_ log: String, net: TestNetwork) throws -> String {
        try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
        print(" ".join("%s %s %s" % (l["status"], l["responseBodyBytes"], l["error"]) for l in lines if l["kind"] == "http"))
        """, log]).output
    }

    /// A one-shot origin on 10.88.0.2:`port` (Python, for the server
    /// namespace) that answers one request with `file` (Content-Length),
    /// writes `marker` once the kernel has taken the whole body, and waits
    /// (bounded) for its client to go.
    static func origin(port: Int, file: String, marker: String) -> [String] {
        ["/usr/bin/python3", "-c", """
        \(ServerPair.acceptOneRequest(port: port))
        body = open(sys.argv[1], "rb").read()
        c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body) + body)
        open(sys.argv[2], "w").write("sent\\n")
        try:
            while c.recv(4096): pass
        except OSError: pass
        """, file, marker]
    }

    /// A Python client that asks `host`:`port` for `target` (a request
    /// line's form of large.txt's URL, at `authority`), waits (bounded)
    /// until the origin's `marker` says the whole body went and Sluice has
    /// read all of it (`ss`, run through `sluiceSide` in Sluice's namespace,
    /// shows nothing queued from 10.88.0.2:`originPort`; its rewrite takes a
    /// good part of a second from there), says whether any of the answer
    /// came yet, and resets its connection. Then it waits (bounded) until the
    /// flow log at `log` has a line for large.txt, and prints what it says.
    /// When not `resets`, it shuts its sending side down and exits instead.
    static func leavingClient(to host: String, port: Int, target: String, authority: String, originPort: Int, sluiceSide: [String],
                              marker: String, recordedIn log: String, resets: Bool = true) -> String {
        """
        import json, os, socket, struct, subprocess, time
        def drained():
            out = subprocess.run(\(sluiceSide) + ["ss", "-tnH", "dst", "10.88.0.2:\(originPort)"],
                                 capture_output=True, text=True).stdout.split("\\n")
            queues = [line.split()[1] for line in out if line.strip()]
            return queues != [] and all(q == "0" for q in queues)
        def parsed(line):
            try: return json.loads(line)
            except ValueError: return {}  # a line still being written
        c = socket.create_connection(("\(host)", \(port)), timeout=30)
        c.sendall(b"GET \(target) HTTP/1.1\\r\\nHost: \(authority)\\r\\n\\r\\n")
        deadline = time.monotonic() + 30
        while not (os.path.exists("\(marker)") and drained()) and time.monotonic() < deadline: time.sleep(0.01)
        c.setblocking(False)
        try: print("came", len(c.recv(65536)))
        except BlockingIOError: print("held")
        if not \(resets ? "True" : "False"):
            c.shutdown(socket.SHUT_WR)
            raise SystemExit(0)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            lines = [parsed(l) for l in open("\(log)") if l.strip()] if os.path.exists("\(log)") else []
            found = [l for l in lines if l.get("kind") == "http" and l.get("url", "").endswith("large.txt")]
            if found:
                l = found[0]
                print(l.get("status"), l.get("responseBodyBytes"), l.get("bodyRewrites"), l.get("error"))
                break
            time.sleep(0.02)
        else:
            print("not recorded")
        """
    }

    /// `script`'s output: the rewritten text came whole, and no other
    /// request waited for the rewrite (on the loop, the slowest would have
    /// waited for nearly all of it).
    static func check(_ output: String, context: String) {
        let lines = output.split(separator: "\n").map(String.init)
        let times = lines.first.map { $0.split(separator: " ").compactMap { Double($0) } } ?? []
        #expect(times.count == 2, "\(output)\n\(context)")
        if times.count == 2 {
            #expect(times[1] < times[0] / 3, "large \(times[0]) s, slowest other \(times[1]) s")
        }
        #expect(Array(lines.dropFirst()) == ["line 0: value=0x8;", "line 99999: value=99999x8;", "\(rewrittenCount)"],
                "\(output)\n\(context)")
    }
}
