import Foundation
import Testing
import TestSupport

/// HAR keeps bodies as the app read them: nginx's gzip (the app asked for
/// it) is decoded in the record, which says what the coding saved.
extension ProfileTests {
    @Test func harRecordsAGzipResponseDecoded() throws {
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)
        """)
        let har = work.appendingPathComponent("gzip.har").path
        let r = try pair.exec("curl -s --compressed http://origin.test:8080/gzip.txt | sha256sum",
                              options: ["--profile", path, "--har", har], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let recorded = try net.run(["/usr/bin/python3", "-c", """
        import hashlib, json, sys
        p = json.load(open(sys.argv[1]))["log"]["entries"][0]["response"]
        c = p["content"]
        encoding = [h["value"] for h in p["headers"] if h["name"].lower() == "content-encoding"]
        print(hashlib.sha256(c["text"].encode()).hexdigest(), c["size"], 0 < c["size"] - c["compression"] <= p["bodySize"],
              0 < p["bodySize"] < 1000, encoding, "encoding" in c)
        """, har]).output
        // The app's bytes and HAR's text are the same file; the wire carried it compressed
        // (the size less the bytes saved is the gzip data, in a chunked body no shorter).
        #expect(recorded == "\(r.stdout.prefix(64)) 5600 True True ['gzip'] False\n", "\(recorded)")
        #expect(r.stdout.prefix(64) == (try pair.digest("gzip.txt")), "\(r.stdout)")
    }

    /// br and zstd, which curl --compressed and browsers offer beside gzip,
    /// are decoded in the record too; the app, which asked for neither, reads
    /// the bytes as they came. HAR kept them in base64 until 2026-12-07.
    @Test(arguments: [("br", 9121), ("zstd", 9122)]) func harRecordsBrotliAndZstdResponsesDecoded(_ coding: String, _ port: Int) throws {
        let plain = pair.path("encoded-\(coding).txt"), encoded = pair.path("encoded-\(coding).bin")
        let text = (0 ..< 300).map { #"{"id":\#($0),"name":"sluice","tags":["tunnel","pcap","har"]}"# }.joined(separator: "\n")
        try text.write(toFile: plain, atomically: true, encoding: .utf8)
        try net.run(["/bin/sh", "-c", coding == "br" ? "brotli -q 11 -c \(plain) > \(encoded)" : "zstd -q -19 -c \(plain) > \(encoded)"])
        try pair.serveFileOnce(port: port, path: encoded, headers: "Content-Type: application/json\\r\\nContent-Encoding: \(coding)")
        let path = try profile("""
        [Rule]
        FINAL,DIRECT
        \(Self.hosts)
        """)
        let har = pair.path("encoded-\(coding).har")
        let r = try pair.exec("curl -s http://origin.test:\(port)/api | sha256sum", options: ["--profile", path, "--har", har], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let digests = try net.run(["/bin/sh", "-c", "sha256sum \(encoded) \(plain) | cut -c1-64; stat -c %s \(encoded)"]).output.split(separator: "\n")
        #expect(r.stdout.prefix(64) == digests[0], "the app read what the origin sent: \(r.stdout)")
        let recorded = try net.run(["/usr/bin/python3", "-c", """
        import hashlib, json, sys
        p = json.load(open(sys.argv[1]))["log"]["entries"][0]["response"]
        c = p["content"]
        encoding = [h["value"] for h in p["headers"] if h["name"].lower() == "content-encoding"]
        print(hashlib.sha256(c["text"].encode()).hexdigest(), c["size"], c["size"] - c["compression"], p["bodySize"], encoding, "encoding" in c)
        """, har]).output
        #expect(recorded == "\(digests[1]) \(text.utf8.count) \(digests[2]) \(digests[2]) ['\(coding)'] False\n", "\(recorded)")
    }
}
