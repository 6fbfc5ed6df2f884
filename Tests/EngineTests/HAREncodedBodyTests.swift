import HTTP
import Stack
import TestSupport
import Testing
@testable import Engine

/// HAR 1.2 keeps a body as the app read it: a gzip or deflate body is
/// decoded, `content.size` is its decoded length and `compression` the
/// bytes the coding saved. A body cut at the limit, one in a coding Sluice
/// cannot undo, or one that does not decode stays as it came.
@Suite struct HAREncodedBodyTests {
    /// `{"vip":false}`, gzip (Python's `gzip.compress(mtime=0)`).
    static let gzipped: [UInt8] = QUICFixtures.hex("1f8b0800000000000203ab562acb2c50b24a4bcc294ead0500419543b10d000000")
    static let text = Array(#"{"vip":false}"#.utf8)

    func exchange(coding: String, requestCoding: String? = nil, body: [UInt8]) -> HTTPExchange {
        var exchange = HTTPExchange(method: "POST", url: "http://a.test/", rule: "", policy: "", rewrittenFrom: nil, mocked: false,
                                    started: Instant(nanoseconds: 0))
        var requestHeaders: HTTPHeaders = ["Host": "a.test", "Content-Length": String(body.count)]
        if let requestCoding { requestHeaders.add(name: "Content-Encoding", value: requestCoding) }
        exchange.requestHead = HTTPRequestHead(method: .post, target: "/", headers: requestHeaders)
        exchange.requestBody = body
        exchange.requestBodyBytes = body.count
        exchange.responseHead = HTTPResponseHead(status: 200, headers: ["Content-Encoding": coding, "Content-Length": String(body.count)])
        exchange.responseBody = body
        exchange.responseBodyBytes = body.count
        return exchange
    }

    func entry(_ exchange: HTTPExchange, limit: Int = 1 << 20) throws -> HAREntry {
        try #require(exchange.harEntry(bodyLimit: limit, startedAt: 0, now: Instant(nanoseconds: 0), serverIPAddress: nil,
                                       connection: "1", comment: ""))
    }

    @Test func aGzipBodyIsRecordedDecoded() throws {
        let recorded = try entry(exchange(coding: "gzip", requestCoding: "gzip", body: Self.gzipped))
        #expect(recorded.response.content.body == HARBody(text: #"{"vip":false}"#))
        #expect(recorded.response.content.size == Self.text.count)
        #expect(recorded.response.content.compression == Self.text.count - Self.gzipped.count)
        // bodySize stays the bytes on the wire.
        #expect(recorded.response.bodySize == Self.gzipped.count)
        #expect(recorded.request.postData?.body == HARBody(text: #"{"vip":false}"#))
        #expect(recorded.request.bodySize == Self.gzipped.count)
    }

    @Test func whatCannotBeDecodedStaysAsItCame() throws {
        for (coding, body, limit) in [("compress", Self.gzipped, 1 << 20), ("br", Self.gzipped, 1 << 20), ("gzip", Array(Self.gzipped.dropLast()), 1 << 20),
                                      // Cut at the limit: not whole, so not decoded.
                                      ("gzip", Self.gzipped, 10)] {
            var cut = exchange(coding: coding, body: body)
            cut.responseBody = Array(body.prefix(limit))
            let recorded = try entry(cut, limit: limit)
            #expect(recorded.response.content.body == HARBody(cut.responseBody), "\(coding) \(body.count) \(limit)")
            #expect(recorded.response.content.size == body.count)
            #expect(recorded.response.content.compression == nil)
        }
    }

    /// Written as HAR 1.2 names it.
    @Test func compressionIsWritten() throws {
        let json = HARLog(creatorVersion: "0", entries: [try entry(exchange(coding: "gzip", body: Self.gzipped))]).json()
        #expect(json.contains(#""content":{"size":13,"compression":-20,"mimeType":"","text":"{\"vip\":false}"}"#), "\(json)")
    }
}
