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
}
