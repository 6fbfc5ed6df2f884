import HTTP
import Rules
import TestSupport
import Testing
@testable import Engine

/// A response body held for [Body Rewrite]: what is kept, when it is let go,
/// and the head that frames the new body.
struct HeldBodyTests {
    @Test func aChunkedBodyIsRewrittenWithoutItsFraming() throws {
        let profile = try loadProfile("[Body Rewrite]\nhttp-response ^http://a\\.test/ false true\n[Rule]\nFINAL,DIRECT\n")
        let rewriter = BodyRewriter(profile)
        var held = HeldBody(try #require(rewriter.select(.response, url: "http://a.test/")), chunked: true)
        for part in ["3\r\nfal\r\n", "2\r\nse\r\n0\r\n", "\r\n"] {
            #expect(Array(part.utf8).withUnsafeBytes { held.take($0) })
        }
        #expect(held.wire == Array("3\r\nfal\r\n2\r\nse\r\n0\r\n\r\n".utf8))
        #expect(held.content == Array("false".utf8))
        #expect(held.rewritten(about: "t") == Array("true".utf8))
    }

    /// Past the limit nothing more is taken: the caller sends what is held
    /// as it came. The limit is 4 MiB, or [General]'s `body-rewrite-limit`.
    @Test(arguments: [(nil, 4 << 20, "4 MiB"), (2048, 2048, "2 KiB"), (70_000, 70_000, "70000 bytes")])
    func aBodyPastTheLimitIsNotTaken(setting: Int?, limit: Int, text: String) throws {
        let general = setting.map { "[General]\nbody-rewrite-limit = \($0)\n" } ?? ""
        let rewriter = BodyRewriter(try loadProfile(general + "[Body Rewrite]\nhttp-response ^http://a\\.test/ a b\n[Rule]\nFINAL,DIRECT\n"))
        #expect(rewriter.bodyLimit == limit && rewriter.bodyLimitText == text)
        var held = HeldBody(try #require(rewriter.select(.response, url: "http://a.test/")), chunked: false)
        let most = [UInt8](repeating: 0x61, count: limit - 1)
        #expect(most.withUnsafeBytes { held.take($0) })
        #expect([UInt8]("b".utf8).withUnsafeBytes { held.take($0) })
        #expect(![UInt8]("c".utf8).withUnsafeBytes { held.take($0) })
        #expect(held.wire.count == limit)
        #expect(held.wire.last == 0x62)
    }

    @Test func theNewHeadSaysTheNewLengthAndNothingOfTheOldFraming() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain", "Transfer-Encoding": "chunked", "Trailer": "Digest", "ETag": "\"1\"",
                                    "Content-Encoding": "gzip"]
        headers.add(name: "Content-Digest", value: "sha-256=:x:")
        HeldBody.reframe(&headers, length: 42)
        #expect(HTTPResponseHead(status: 200, headers: headers).serialized()
            == Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nETag: \"1\"\r\nContent-Length: 42\r\n\r\n".utf8))
    }

    /// `{"vip":false}`, gzip (Python's `gzip.compress(mtime=0)`) and zlib (`zlib.compress`).
    static let gzipped: [UInt8] = QUICFixtures.hex("1f8b0800000000000203ab562acb2c50b24a4bcc294ead0500419543b10d000000")
    static let zlibbed: [UInt8] = QUICFixtures.hex("789cab562acb2c50b24a4bcc294ead0500203f04d1")
    // `brotli -c` and `zstd -c` of the same 13 bytes.
    static let brotlied: [UInt8] = QUICFixtures.hex("0f06807b22766970223a66616c73657d03")
    static let zstded: [UInt8] = QUICFixtures.hex("28b52ffd04586900007b22766970223a66616c73657d157767be")

    /// A gzip, deflate, br or zstd body is decoded for the lines (chunked or not), and
    /// the rewritten body is plain; one that does not decode is left alone.
    @Test func anEncodedBodyIsRewrittenDecoded() throws {
        let rewriter = BodyRewriter(try loadProfile("[Body Rewrite]\nhttp-response ^http://a\\.test/ false true\n[Rule]\nFINAL,DIRECT\n"))
        let selection = try #require(rewriter.select(.response, url: "http://a.test/"))
        for (coding, wire) in [("gzip", Self.gzipped), ("x-gzip", Self.gzipped), ("deflate", Self.zlibbed),
                               ("br", Self.brotlied), ("zstd", Self.zstded)] {
            var held = try #require(HeldBody(selection, chunked: true, headers: ["Content-Encoding": coding]))
            let framed = Array("\(String(wire.count, radix: 16))\r\n".utf8) + wire + Array("\r\n0\r\n\r\n".utf8)
            #expect(framed.withUnsafeBytes { held.take($0) })
            #expect(held.rewritten(about: "t") == Array(#"{"vip":true}"#.utf8))
        }
        var damaged = try #require(HeldBody(selection, chunked: false, headers: ["Content-Encoding": "gzip"]))
        #expect(Array(Self.gzipped.dropLast()).withUnsafeBytes { damaged.take($0) })
        #expect(damaged.rewritten(about: "t") == nil)
        #expect(throws: ContentDecoding.Failure.self) { try damaged.rewrite().get() }
        #expect(HeldBody(selection, chunked: false, headers: ["Content-Encoding": "compress"]) == nil)
    }

    /// An empty response labelled gzip (`Content-Length: 0`, or a chunked
    /// body of no chunks) has nothing to rewrite, and is no decoding failure
    /// to warn about.
    @Test func anEmptyEncodedBodyIsNoFailure() throws {
        let rewriter = BodyRewriter(try loadProfile("[Body Rewrite]\nhttp-response ^http://a\\.test/ false true\n[Rule]\nFINAL,DIRECT\n"))
        let selection = try #require(rewriter.select(.response, url: "http://a.test/"))
        for chunked in [false, true] {
            var held = try #require(HeldBody(selection, chunked: chunked, headers: ["Content-Encoding": "gzip"]))
            if chunked { #expect(Array("0\r\n\r\n".utf8).withUnsafeBytes { held.take($0) }) }
            let outcome = try held.rewrite().get()
            #expect(outcome == nil)
        }
    }

    /// Which bodies go to the rewriting thread: a plain one past 64 KiB, a
    /// compressed one past 1 KiB (what it decodes to is what costs).
    @Test func whichBodiesAreRewrittenOffTheLoop() throws {
        let rewriter = BodyRewriter(try loadProfile("[Body Rewrite]\nhttp-response ^http://a\\.test/ a b\n[Rule]\nFINAL,DIRECT\n"))
        let selection = try #require(rewriter.select(.response, url: "http://a.test/"))
        func held(_ count: Int, codings: [ContentDecoding.Coding]) -> HeldBody {
            var body = HeldBody(selection, chunked: false, codings: codings)
            _ = [UInt8](repeating: 0x61, count: count).withUnsafeBytes { body.take($0) }
            return body
        }
        #expect(!held(64 << 10, codings: []).runsOffTheLoop)
        #expect(held((64 << 10) + 1, codings: []).runsOffTheLoop)
        #expect(!held(1024, codings: [.gzip]).runsOffTheLoop)
        #expect(held(1025, codings: [.gzip]).runsOffTheLoop)
    }

    /// A request with a body in a coding Sluice cannot decode is not held.
    @Test func aRequestInCompressIsNotHeld() throws {
        let rewriter = BodyRewriter(try loadProfile("[Body Rewrite]\nhttp-request ^http://a\\.test/ false true\n[Rule]\nFINAL,DIRECT\n"))
        let selection = try #require(rewriter.select(.request, url: "http://a.test/"))
        var head = HTTPRequestHead(method: .post, target: "/", headers: ["Host": "a.test", "Content-Length": "3", "Content-Encoding": "compress"])
        #expect(HeldBody.forRequest(head, selection: selection, about: "t") == nil)
        head.headers.remove(name: "Content-Encoding")
        head.headers.add(name: "Content-Encoding", value: "gzip")
        #expect(HeldBody.forRequest(head, selection: selection, about: "t")?.codings == [.gzip])
    }

    /// Only a final response with a body, in plain text, is held.
    @Test func whichResponsesAreHeld() {
        #expect(HeldBody.mayHold(HTTPResponseHead(status: 200), requestMethod: "GET"))
        #expect(HeldBody.mayHold(HTTPResponseHead(status: 404, headers: ["Content-Encoding": "identity"]), requestMethod: "POST"))
        #expect(!HeldBody.mayHold(HTTPResponseHead(status: 200), requestMethod: "HEAD"))
        #expect(!HeldBody.mayHold(HTTPResponseHead(status: 204), requestMethod: "GET"))
        #expect(!HeldBody.mayHold(HTTPResponseHead(status: 304), requestMethod: "GET"))
        #expect(!HeldBody.mayHold(HTTPResponseHead(status: 100), requestMethod: "GET"))
        #expect(HeldBody.mayHold(HTTPResponseHead(status: 200, headers: ["Content-Encoding": "gzip"]), requestMethod: "GET"))
        #expect(HeldBody.mayHold(HTTPResponseHead(status: 200, headers: ["Content-Encoding": "deflate"]), requestMethod: "GET"))
        #expect(HeldBody.mayHold(HTTPResponseHead(status: 200, headers: ["Content-Encoding": "identity, br"]), requestMethod: "GET"))
        #expect(HeldBody.mayHold(HTTPResponseHead(status: 200, headers: ["Content-Encoding": "zstd"]), requestMethod: "GET"))
        #expect(!HeldBody.mayHold(HTTPResponseHead(status: 200, headers: ["Content-Encoding": "gzip, compress"]), requestMethod: "GET"))
    }

    func loadProfile(_ text: String) throws -> Profile {
        try ProfileParser.parse(text, file: "t.conf", baseDirectory: "/tmp").get()
    }
}
