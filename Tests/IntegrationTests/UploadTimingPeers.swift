import Foundation
import Testing
import TestSupport

/// An upload whose timings HAR and the flow log must split: `send` the
/// body going upstream, `wait` the origin's think time after it. Shared by
/// exec's HTTP mode and `sluice proxy`'s HTTP listener.
extension ServerPair {
    /// Starts an origin on 10.88.0.2:`port` (server namespace) that reads one
    /// request whole (its Content-Length body), thinks 400 ms and answers "ok".
    func startSlowReplyServer(port: Int) throws {
        let script = path("slow-reply-\(port).py")
        try """
        import socket, time
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("10.88.0.2", \(port))); s.listen(4); s.settimeout(60)
        c, _ = s.accept(); c.settimeout(60)
        data = b""
        while b"\\r\\n\\r\\n" not in data: data += c.recv(65536)
        head, body = data.split(b"\\r\\n\\r\\n", 1)
        length = int([l.split(b":")[1] for l in head.split(b"\\r\\n") if l.lower().startswith(b"content-length:")][0])
        while len(body) < length: body += c.recv(65536)
        time.sleep(0.4)
        c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok")
        c.close()
        """.write(toFile: script, atomically: true, encoding: .utf8)
        try net.start(["/usr/bin/python3", script], in: server)
        #expect(waitForListener("10.88.0.2:\(port)"))
    }

    /// The client's command: 300 kB uploaded at 300 kB/s (about a second),
    /// through `curlOptions` (a proxy, say), to that origin.
    static func slowUpload(port: Int, curlOptions: String = "") -> String {
        """
        head -c 300000 /dev/zero > /tmp/upload-\(port).bin
        curl -s -m 30 --limit-rate 300k \(curlOptions) --data-binary @/tmp/upload-\(port).bin http://10.88.0.2:\(port)/up; echo
        """
    }

    /// Checks the first HAR entry's send and wait and the flow log's first
    /// HTTP line's sendMs and waitMs: the upload is send (over 500 ms), the
    /// origin's 400 ms is wait.
    func expectUploadTimings(har: String, log: String) throws {
        let timings = try net.run(["/usr/bin/python3", "-c", """
        import json, sys
        t = json.load(open(sys.argv[1]))["log"]["entries"][0]["timings"]
        line = [json.loads(l) for l in open(sys.argv[2]) if '"kind":"http"' in l][0]["timings"]
        print(int(t["send"]), int(t["wait"]), int(line["sendMs"]), int(line["waitMs"]))
        """, har, log]).output
        let values = timings.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
        #expect(values.count == 4, "\(timings)")
        guard values.count == 4 else { return }
        #expect(values[0] >= 500 && values[2] >= 500, "send: \(timings)")
        #expect(values[1] >= 300 && values[1] < 900 && values[3] >= 300 && values[3] < 900, "wait: \(timings)")
    }
}
