import HTTP
import Rules
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
        #expect(held.rewritten == Array("true".utf8))
    }

    /// Past the limit nothing more is taken: the caller sends what is held as it came.
    @Test func aBodyPastTheLimitIsNotTaken() throws {
        let rewriter = BodyRewriter(try loadProfile("[Body Rewrite]\nhttp-response ^http://a\\.test/ a b\n[Rule]\nFINAL,DIRECT\n"))
        var held = HeldBody(try #require(rewriter.select(.response, url: "http://a.test/")), chunked: false)
        let most = [UInt8](repeating: 0x61, count: BodyRewriter.bodyLimit - 1)
        #expect(most.withUnsafeBytes { held.take($0) })
        #expect([UInt8]("b".utf8).withUnsafeBytes { held.take($0) })
        #expect(![UInt8]("c".utf8).withUnsafeBytes { held.take($0) })
        #expect(held.wire.count == BodyRewriter.bodyLimit)
        #expect(held.wire.last == 0x62)
    }

    @Test func theNewHeadSaysTheNewLengthAndNothingOfTheOldFraming() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain", "Transfer-Encoding": "chunked", "Trailer": "Digest", "ETag": "\"1\""]
        headers.add(name: "Content-Digest", value: "sha-256=:x:")
        HeldBody.reframe(&headers, length: 42)
        #expect(HTTPResponseHead(status: 200, headers: headers).serialized()
            == Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nETag: \"1\"\r\nContent-Length: 42\r\n\r\n".utf8))
    }

    /// Only a final response with a body, in plain text, is held.
    @Test func whichResponsesAreHeld() {
        #expect(HeldBody.mayHold(HTTPResponseHead(status: 200), requestMethod: "GET"))
        #expect(HeldBody.mayHold(HTTPResponseHead(status: 404, headers: ["Content-Encoding": "identity"]), requestMethod: "POST"))
        #expect(!HeldBody.mayHold(HTTPResponseHead(status: 200), requestMethod: "HEAD"))
        #expect(!HeldBody.mayHold(HTTPResponseHead(status: 204), requestMethod: "GET"))
        #expect(!HeldBody.mayHold(HTTPResponseHead(status: 304), requestMethod: "GET"))
        #expect(!HeldBody.mayHold(HTTPResponseHead(status: 100), requestMethod: "GET"))
        #expect(!HeldBody.mayHold(HTTPResponseHead(status: 200, headers: ["Content-Encoding": "gzip"]), requestMethod: "GET"))
        #expect(!HeldBody.mayHold(HTTPResponseHead(status: 200, headers: ["Content-Encoding": "identity, br"]), requestMethod: "GET"))
    }

    func loadProfile(_ text: String) throws -> Profile {
        try ProfileParser.parse(text, file: "t.conf", baseDirectory: "/tmp").get()
    }
}
