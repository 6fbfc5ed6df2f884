import Testing
@testable import HTTP
import TestSupport

// The session ends a stream without an answer: HTTP2Gateway.resetNextResponse
// (RST_STREAM, the connection goes on), HTTP2Gateway.leaveNextResponseUnanswered
// (nothing at all, a rule's "drop"), and the parser's HTTPResponseParser.skipResponse
// under both. Driven by the scripted client of HTTP2TestPeer.swift.

private func header(_ name: String, _ value: String) -> HPACKHeader { HPACKHeader(name, value) }

/// The response bytes: `head` (CRLF-joined lines, with the blank line added) and the body.
private func response(_ lines: [String], _ body: [UInt8] = []) -> [UInt8] {
    h2Bytes(lines.joined(separator: "\r\n") + "\r\n\r\n") + body
}

/// A 200 (or `status`) with a content-length body.
private func ok(_ body: String, status: String = "200 OK") -> [UInt8] {
    response(["HTTP/1.1 \(status)", "Content-Length: \(body.utf8.count)"], h2Bytes(body))
}

/// The frames `ok(body)` becomes on `stream` (normalized: DATA joined).
private func okFrames(_ stream: UInt32, _ body: String, status: String = "200") -> [H2Event] {
    [.headers(stream: stream, fields: [H2Field(":status", status), H2Field("content-length", String(body.utf8.count))], endStream: false),
     .data(stream: stream, bytes: h2Bytes(body), endStream: true)]
}

/// Each stream's frames, normalized: frames of different streams may interleave
/// any way (HEADERS go out as heads are read, DATA as the windows allow).
private func byStream(_ events: [H2Event]) -> [UInt32: [H2Event]] {
    Dictionary(grouping: events, by: \.stream).mapValues { $0.normalized }.filter { !$0.value.isEmpty }
}

/// What the session reads for a GET from `getRequests`.
private func getText(_ id: UInt32) -> String { "GET /\(id) HTTP/1.1\r\nhost: example.com\r\n\r\n" }

/// A body whose bytes say where they are.
private func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0 ..< count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) % 251) }
}

/// A peer past the handshake, its SETTINGS and ACK read.
private func connectedPeer(split: H2Split = .whole, limits: HTTP2Gateway.Limits = HTTP2Gateway.Limits(),
                           settings: [(UInt16, UInt32)] = []) -> H2Peer
{
    var peer = H2Peer(split: split, limits: limits, settings: settings)
    _ = peer.take()
    return peer
}

/// The splits the scripted tests here run under.
private let splits: [H2Split] = [.whole, .byteByByte, .random(5)]

private extension H2Peer {
    /// The session gives the oldest stream awaiting a response none: RST_STREAM.
    mutating func resetNext(_ code: HTTP2ErrorCode) {
        gateway.resetNextResponse(code)
        collect()
    }

    /// The session gives the oldest stream awaiting a response nothing at all.
    mutating func leaveNextUnanswered() {
        gateway.leaveNextResponseUnanswered()
        collect()
    }

    /// GETs (ended with their HEADERS) on `ids`; returns what the session read.
    mutating func getRequests(_ ids: [UInt32]) -> String {
        var script: [UInt8] = []
        for id in ids { script += headers(id, H2.request("GET", "/\(id)"), endStream: true) }
        send(script)
        return takeRequestText()
    }

    /// The session's response bytes, all of them taken.
    mutating func respondAll(_ bytes: [UInt8], split: H2Split = .whole) {
        let taken = respond(bytes, split: split)
        #expect(taken == bytes.count, "respond took \(taken) of \(bytes.count) bytes; error \(String(describing: respondError))")
    }
}

@Suite struct HTTP2GatewayEndingTests {
    // MARK: 1. resetNextResponse

    @Test(arguments: splits)
    func aResetBetweenTwoResponsesEndsOnlyTheMiddleStream(split: H2Split) {
        var peer = connectedPeer(split: split)
        #expect(peer.getRequests([1, 3, 5]) == getText(1) + getText(3) + getText(5))
        #expect(peer.gateway.openStreams == 3)
        peer.respondAll(ok("one"), split: split)
        var events = peer.take()
        #expect(events.normalized == okFrames(1, "one"), "\(events)")
        peer.resetNext(.refusedStream)
        events = peer.take()
        #expect(events == [.rst(stream: 3, code: H2Code.refusedStream)], "\(events)")
        #expect(peer.gateway.openStreams == 1, "stream 3 is still open after its RST_STREAM")
        peer.respondAll(ok("five"), split: split)
        events = peer.take()
        #expect(events.normalized == okFrames(5, "five"), "stream 5's response: \(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.takeRequests().isEmpty)
        #expect(peer.error == nil && peer.respondError == nil)
        #expect(peer.violations == [])
    }

    @Test(arguments: [HTTP2ErrorCode.noError, .cancel, .refusedStream, .internalError, .enhanceYourCalm, HTTP2ErrorCode(rawValue: 0xD)])
    func theResetCarriesTheCodeItWasGiven(code: HTTP2ErrorCode) {
        var peer = connectedPeer()
        _ = peer.getRequests([1, 3])
        peer.resetNext(code)
        let events = peer.take()
        #expect(events == [.rst(stream: 1, code: code.rawValue)], "\(events)")
        peer.respondAll(ok("three"))
        let after = peer.take()
        #expect(after.normalized == okFrames(3, "three"), "\(after)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    @Test(arguments: splits)
    func aResetAfterTheResponseHeadForgetsIt(split: H2Split) {
        var peer = connectedPeer()
        _ = peer.getRequests([1, 3])
        peer.respondAll(response(["HTTP/1.1 200 OK", "Content-Length: 100", "X-One: 1"]), split: split)
        var events = peer.take()
        #expect(events == [.headers(stream: 1, fields: [H2Field(":status", "200"), H2Field("content-length", "100"), H2Field("x-one", "1")],
                                    endStream: false)], "\(events)")
        peer.resetNext(.internalError)
        events = peer.take()
        #expect(events == [.rst(stream: 1, code: H2Code.internalError)], "\(events)")
        // Read as a body of 100 bytes, this response would never reach stream 3.
        peer.respondAll(ok("three"), split: split)
        events = peer.take()
        #expect(events.normalized == okFrames(3, "three"), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.respondError == nil)
        #expect(peer.violations == [])
    }

    @Test(arguments: splits)
    func aResetAfterPartOfAContentLengthBodyForgetsTheRest(split: H2Split) {
        var peer = connectedPeer()
        _ = peer.getRequests([1, 3, 5])
        peer.respondAll(response(["HTTP/1.1 200 OK", "Content-Length: 10"], h2Bytes("0123")), split: split)
        var events = peer.take()
        #expect(events.normalized == [.headers(stream: 1, fields: [H2Field(":status", "200"), H2Field("content-length", "10")], endStream: false),
                                      .data(stream: 1, bytes: h2Bytes("0123"), endStream: false)], "\(events)")
        peer.resetNext(.cancel)
        events = peer.take()
        #expect(events == [.rst(stream: 1, code: H2Code.cancel)], "\(events)")
        // Six bytes short of stream 1's body: read as its rest, "HTTP/1" would vanish.
        peer.respondAll(ok("three") + ok("five"), split: split)
        events = peer.take()
        #expect(byStream(events) == byStream(okFrames(3, "three") + okFrames(5, "five")), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.respondError == nil)
        #expect(peer.violations == [])
    }

    @Test(arguments: splits)
    func aResetAfterPartOfAChunkedBodyForgetsTheRest(split: H2Split) {
        var peer = connectedPeer()
        _ = peer.getRequests([1, 3, 5])
        // Cut inside the second chunk's data.
        peer.respondAll(response(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"], h2Bytes("4\r\nWiki\r\n5\r\nped")), split: split)
        var events = peer.take()
        #expect(events.normalized == [.headers(stream: 1, fields: [H2Field(":status", "200")], endStream: false),
                                      .data(stream: 1, bytes: h2Bytes("Wikiped"), endStream: false)], "\(events)")
        peer.resetNext(.cancel)
        events = peer.take()
        #expect(events == [.rst(stream: 1, code: H2Code.cancel)], "\(events)")
        peer.respondAll(response(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"], h2Bytes("5\r\nthree\r\n0\r\n\r\n")) + ok("five"), split: split)
        events = peer.take()
        #expect(byStream(events) == byStream([.headers(stream: 3, fields: [H2Field(":status", "200")], endStream: false),
                                              .data(stream: 3, bytes: h2Bytes("three"), endStream: true)] + okFrames(5, "five")), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.respondError == nil)
        #expect(peer.violations == [])
    }

    struct PartialResponse: Sendable, CustomStringConvertible {
        var name: String
        var bytes: [UInt8]
        /// The body as the app would get it whole.
        var body: [UInt8]
        /// Where the body's raw bytes start, when they go to the app as they are (not chunked).
        var rawBodyStart: Int?
        var description: String { name }

        static let all: [PartialResponse] = {
            let lengthHead = response(["HTTP/1.1 200 OK", "Content-Length: 10", "X-A: 1"])
            let interim = response(["HTTP/1.1 100 Continue"]) + response(["HTTP/1.1 103 Early Hints", "Link: </a>"])
            let finalHead = response(["HTTP/1.1 200 OK", "Content-Length: 3"])
            return [
                PartialResponse(name: "content-length", bytes: lengthHead + h2Bytes("0123456789"), body: h2Bytes("0123456789"),
                                rawBodyStart: lengthHead.count),
                PartialResponse(name: "chunked with trailers",
                                bytes: response(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"], h2Bytes("4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nX-T: 1\r\n\r\n")),
                                body: h2Bytes("Wikipedia")),
                PartialResponse(name: "interim responses, then content-length", bytes: interim + finalHead + h2Bytes("abc"), body: h2Bytes("abc"),
                                rawBodyStart: interim.count + finalHead.count),
            ]
        }()
    }

    /// Every prefix of stream 1's response (part of a head, a head, heads and
    /// part of a body), then the reset: the next bytes are stream 3's whole response.
    @Test(arguments: PartialResponse.all, splits)
    func aResetAfterAnyPrefixOfAResponseLeavesTheNextResponseWhole(_ partial: PartialResponse, split: H2Split) {
        let crlf2 = h2Bytes("\r\n\r\n")
        for k in 0 ..< partial.bytes.count {
            var peer = connectedPeer()
            _ = peer.getRequests([1, 3])
            let prefix = Array(partial.bytes[0 ..< k])
            peer.respondAll(prefix, split: split)
            peer.resetNext(.cancel)
            peer.respondAll(ok("three"), split: split)
            let events = peer.take()
            let one = events.streams[1] ?? H2StreamResult()
            // HEADERS for each head complete in the prefix, no more.
            let heads = (0 ..< max(0, k - 3)).filter { Array(prefix[$0 ..< $0 + 4]) == crlf2 }.count
            #expect(one.heads.count == heads, "prefix \(k): \(events)")
            #expect(partial.body.starts(with: one.body), "prefix \(k): stream 1 got \(one.bodyText): \(events)")
            if let start = partial.rawBodyStart {
                #expect(one.body == Array(prefix[min(start, k)...]), "prefix \(k): \(events)")
            }
            #expect(!one.ended && one.resets == [H2Code.cancel], "prefix \(k): \(events)")
            #expect(events.on(1).last == .rst(stream: 1, code: H2Code.cancel), "prefix \(k): RST_STREAM is not stream 1's last frame: \(events)")
            #expect(events.on(3).normalized == okFrames(3, "three"), "prefix \(k): \(events)")
            #expect(peer.gateway.openStreams == 0, "prefix \(k)")
            #expect(peer.respondError == nil, "prefix \(k): \(String(describing: peer.respondError))")
            #expect(peer.violations == [], "prefix \(k)")
        }
    }

    /// Stream 1's window holds 4 bytes: the other 4 the session wrote wait here. After the reset they are never sent.
    @Test func dataOfTheResetStreamStillWaitingForTheWindowIsNeverSent() {
        var limits = HTTP2Gateway.Limits()
        limits.responseBufferLimit = 1000
        var peer = connectedPeer(limits: limits, settings: [(H2Setting.initialWindowSize, 4)])
        _ = peer.getRequests([1, 3])
        peer.respondAll(response(["HTTP/1.1 200 OK", "Content-Length: 20"], h2Bytes("01234567")))
        var events = peer.take()
        #expect(events == [.headers(stream: 1, fields: [H2Field(":status", "200"), H2Field("content-length", "20")], endStream: false),
                           .data(stream: 1, bytes: h2Bytes("0123"), endStream: false)], "\(events)")
        #expect(peer.gateway.responseRoom == 996)
        peer.resetNext(.cancel)
        events = peer.take()
        #expect(events == [.rst(stream: 1, code: H2Code.cancel)], "\(events)")
        #expect(peer.gateway.responseRoom == 1000, "the reset stream's waiting bytes are forgotten, yet still take room")
        // The app opens stream 1's window before it reads the RST_STREAM.
        peer.send(H2.windowUpdate(stream: 1, 1000) + H2.windowUpdate(stream: 0, 1000))
        events = peer.take()
        #expect(events == [], "the reset stream's waiting DATA went out: \(events)")
        peer.respondAll(ok("ok"))
        events = peer.take()
        #expect(events.normalized == okFrames(3, "ok"), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.error == nil && peer.respondError == nil)
        #expect(peer.violations == [])
    }

    /// A response the session wrote whole is answered, even while its DATA waits
    /// for the app's window: the reset is for the next stream.
    @Test func aResetIsForTheOldestStreamStillAwaitingItsResponseNotOneWaitingForTheWindow() {
        var peer = connectedPeer(settings: [(H2Setting.initialWindowSize, 4)])
        _ = peer.getRequests([1, 3, 5])
        peer.respondAll(ok("0123456789"))
        var events = peer.take()
        #expect(events.streams[1]?.body == h2Bytes("0123") && events.streams[1]?.ended == false, "\(events)")
        peer.resetNext(.refusedStream)
        events = peer.take()
        #expect(events == [.rst(stream: 3, code: H2Code.refusedStream)], "\(events)")
        peer.respondAll(ok("ab"))
        events = peer.take()
        #expect(events.normalized == okFrames(5, "ab"), "\(events)")
        peer.send(H2.windowUpdate(stream: 1, 100))
        events = peer.take()
        #expect(events == [.data(stream: 1, bytes: h2Bytes("456789"), endStream: true)], "stream 1's rest: \(events)")
        #expect(peer.events.streams[3]?.heads == [] && peer.events.streams[3]?.body == [], "\(peer.events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    /// A body that runs to the origin's close (no length) ends its stream
    /// with END_STREAM when the session says the close came; the responses
    /// after it, from a new connection, are read from their heads.
    @Test(arguments: splits)
    func aBodyThatRunsToTheCloseEndsItsStreamThere(split: H2Split) {
        var peer = connectedPeer()
        #expect(peer.getRequests([1, 3]) == getText(1) + getText(3))
        peer.respondAll(response(["HTTP/1.0 200 OK"], pattern(3000)), split: split)
        var events = peer.take()
        #expect(byStream(events) == [1: [.headers(stream: 1, fields: [H2Field(":status", "200")], endStream: false),
                                         .data(stream: 1, bytes: pattern(3000), endStream: false)]], "\(events)")
        peer.gateway.endResponseAtClose()
        peer.collect()
        events = peer.take()
        #expect(events == [.data(stream: 1, bytes: [], endStream: true)], "\(events)")
        peer.respondAll(ok("three"), split: split)
        events = peer.take()
        #expect(events.normalized == okFrames(3, "three"), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.error == nil && peer.respondError == nil)
        #expect(peer.violations == [])
    }

    /// Stream 3 is a HEAD: once stream 1's half-read response is skipped, the
    /// next head is read as a HEAD's, without the 100 bytes its content-length names.
    @Test(arguments: splits)
    func aHeadAfterTheResetStreamIsAnsweredWithoutABody(split: H2Split) {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("GET", "/1"), endStream: true) + peer.headers(3, H2.request("HEAD", "/3"), endStream: true)
            + peer.headers(5, H2.request("GET", "/5"), endStream: true))
        _ = peer.takeRequests()
        peer.respondAll(response(["HTTP/1.1 200 OK", "Content-Length: 100"], pattern(10)), split: split)
        peer.resetNext(.cancel)
        _ = peer.take()
        peer.respondAll(response(["HTTP/1.1 200 OK", "Content-Length: 100"]) + ok("five"), split: split)
        let events = peer.take()
        #expect(byStream(events) == byStream([.headers(stream: 3, fields: [H2Field(":status", "200"), H2Field("content-length", "100")], endStream: false),
                                              .data(stream: 3, bytes: [], endStream: true)] + okFrames(5, "five")), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.respondError == nil)
        #expect(peer.violations == [])
    }

    /// The reset stream is a HEAD: the next response is read as the GET's it is, body and all.
    @Test(arguments: splits)
    func aGetAfterAResetHeadIsAnsweredWithItsBody(split: H2Split) {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("HEAD", "/1"), endStream: true) + peer.headers(3, H2.request("GET", "/3"), endStream: true))
        _ = peer.takeRequests()
        peer.resetNext(.refusedStream)
        #expect(peer.take() == [.rst(stream: 1, code: H2Code.refusedStream)])
        peer.respondAll(ok("three"), split: split)
        let events = peer.take()
        #expect(events.normalized == okFrames(3, "three"), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.respondError == nil)
        #expect(peer.violations == [])
    }

    // MARK: 2. resetNextResponse while the request body is still coming

    @Test(arguments: splits)
    func aResetOfAStreamWhoseChunkedBodyIsStillComingWaitsForEndStream(split: H2Split) throws {
        var peer = connectedPeer(split: split)
        peer.send(peer.headers(1, H2.request("POST", "/up")) + H2.data(stream: 1, "abc"))
        peer.send(peer.headers(3, H2.request("GET", "/3"), endStream: true))
        var requests = peer.takeRequests()
        _ = peer.take()
        peer.resetNext(.refusedStream)
        var events = peer.take()
        #expect(events.withoutWindowUpdates == [], "RST_STREAM before the body ended: \(events)")
        peer.send(H2.data(stream: 1, "de"))
        events = peer.take()
        #expect(events.withoutWindowUpdates == [], "RST_STREAM before the body ended: \(events)")
        let more = peer.takeRequestText()
        #expect(more == "2\r\nde\r\n", "the body goes on to the session: \(more)")
        requests += h2Bytes(more)
        // The END_STREAM frame less its last byte: not yet.
        let end = H2.data(stream: 1, "", endStream: true)
        peer.send(Array(end.dropLast()), split: .whole)
        events = peer.take()
        #expect(events.resets == [], "\(events)")
        peer.send([end.last!], split: .whole)
        events = peer.take()
        #expect(events.withoutWindowUpdates == [.rst(stream: 1, code: H2Code.refusedStream)], "\(events)")
        requests += peer.takeRequests()
        let parsed = h1Requests(requests)
        #expect(parsed.rest == 0 && parsed.error == nil, "\(parsed)")
        try #require(parsed.requests.count == 2, "\(parsed.requests)")
        #expect(parsed.requests[0].line == "POST /up HTTP/1.1" && parsed.requests[0].framing == "chunked" && parsed.requests[0].bodyText == "abcde")
        #expect(parsed.requests[1].line == "GET /3 HTTP/1.1")
        #expect(peer.gateway.openStreams == 1)
        peer.respondAll(ok("three"))
        events = peer.take()
        #expect(events.normalized == okFrames(3, "three"), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.error == nil && peer.respondError == nil)
        #expect(peer.violations == [])
    }

    @Test(arguments: splits)
    func aResetOfAStreamWhoseContentLengthBodyIsStillComingWaitsForEndStream(split: H2Split) throws {
        var peer = connectedPeer(split: split)
        peer.send(peer.headers(1, H2.request("POST", "/up", [header("content-length", "10")])) + H2.data(stream: 1, "0123"))
        peer.send(peer.headers(3, H2.request("GET", "/3"), endStream: true))
        var requests = peer.takeRequests()
        _ = peer.take()
        peer.resetNext(.cancel)
        var events = peer.take()
        #expect(events.withoutWindowUpdates == [], "RST_STREAM before the body ended: \(events)")
        peer.send(H2.data(stream: 1, "456"))
        events = peer.take()
        #expect(events.withoutWindowUpdates == [], "RST_STREAM before the body ended: \(events)")
        let end = H2.data(stream: 1, "789", endStream: true)
        peer.send(Array(end.dropLast()), split: .whole)
        events = peer.take()
        #expect(events.resets == [], "\(events)")
        peer.send([end.last!], split: .whole)
        events = peer.take()
        #expect(events.withoutWindowUpdates == [.rst(stream: 1, code: H2Code.cancel)], "\(events)")
        requests += peer.takeRequests()
        let parsed = h1Requests(requests)
        #expect(parsed.rest == 0 && parsed.error == nil, "\(parsed)")
        try #require(parsed.requests.count == 2, "\(parsed.requests)")
        #expect(parsed.requests[0].line == "POST /up HTTP/1.1" && parsed.requests[0].framing == "content-length: 10"
            && parsed.requests[0].bodyText == "0123456789", "\(parsed.requests[0])")
        #expect(parsed.requests[1].line == "GET /3 HTTP/1.1")
        peer.respondAll(ok("three"))
        events = peer.take()
        #expect(events.normalized == okFrames(3, "three"), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.error == nil && peer.respondError == nil)
        #expect(peer.violations == [])
    }

    /// All the content-length bytes reached the session, but the app has not
    /// ended the stream: the RST_STREAM waits for its END_STREAM.
    @Test func aResetWaitsForAnEndStreamThatComesAfterTheLastBodyByte() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/up", [header("content-length", "3")])) + H2.data(stream: 1, "abc"))
        #expect(peer.takeRequestText() == "POST /up HTTP/1.1\r\nhost: example.com\r\ncontent-length: 3\r\n\r\nabc")
        _ = peer.take()
        peer.resetNext(.refusedStream)
        var events = peer.take()
        #expect(events.withoutWindowUpdates == [], "RST_STREAM before the app's END_STREAM: \(events)")
        peer.send(peer.headers(3, H2.request("GET", "/3"), endStream: true))
        events = peer.take()
        #expect(events.withoutWindowUpdates == [], "RST_STREAM before the app's END_STREAM: \(events)")
        peer.send(H2.data(stream: 1, "", endStream: true))
        events = peer.take()
        #expect(events.withoutWindowUpdates == [.rst(stream: 1, code: H2Code.refusedStream)], "\(events)")
        #expect(peer.takeRequestText() == getText(3))
        peer.respondAll(ok("three"))
        events = peer.take()
        #expect(events.normalized == okFrames(3, "three"), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.error == nil)
        #expect(peer.violations == [])
    }

    @Test func aResetWaitsForTheTrailersThatEndAChunkedBody() throws {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/up", [header("te", "trailers")])) + H2.data(stream: 1, "x"))
        var requests = peer.takeRequests()
        _ = peer.take()
        peer.resetNext(.cancel)
        #expect(peer.take().withoutWindowUpdates == [])
        peer.send(peer.headers(1, [header("x-t", "1")], endStream: true))
        let events = peer.take()
        #expect(events.withoutWindowUpdates == [.rst(stream: 1, code: H2Code.cancel)], "\(events)")
        requests += peer.takeRequests()
        let parsed = h1Requests(requests)
        #expect(parsed.rest == 0 && parsed.error == nil, "\(parsed)")
        try #require(parsed.requests.count == 1, "\(parsed.requests)")
        #expect(parsed.requests[0].bodyText == "x" && parsed.requests[0].trailers == ["x-t: 1"], "\(parsed.requests[0])")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    /// The session began a response (a 413, say) before the body ended, then
    /// gave the stream none: what it wrote is dropped, the RST_STREAM still waits
    /// for the body's end, and the next bytes answer stream 3.
    @Test(arguments: splits)
    func aResetOfAPartlyAnsweredStreamWhoseBodyIsStillComing(split: H2Split) {
        var peer = connectedPeer(settings: [(H2Setting.initialWindowSize, 2)])
        peer.send(peer.headers(1, H2.request("POST", "/up")) + H2.data(stream: 1, "abc"))
        peer.send(peer.headers(3, H2.request("GET", "/3"), endStream: true))
        _ = peer.takeRequests()
        _ = peer.take()
        peer.respondAll(response(["HTTP/1.1 413 Content Too Large", "Content-Length: 8"], h2Bytes("nope")), split: split)
        var events = peer.take()
        #expect(events.normalized == [.headers(stream: 1, fields: [H2Field(":status", "413"), H2Field("content-length", "8")], endStream: false),
                                      .data(stream: 1, bytes: h2Bytes("no"), endStream: false)], "\(events)")
        #expect(peer.gateway.responseRoom == 256 * 1024 - 2)
        peer.resetNext(.internalError)
        events = peer.take()
        #expect(events.withoutWindowUpdates == [], "\(events)")
        #expect(peer.gateway.responseRoom == 256 * 1024, "the two bytes that waited are forgotten, yet still take room")
        // The window opens: the two bytes that waited ("pe") are forgotten.
        peer.send(H2.windowUpdate(stream: 1, 100))
        events = peer.take()
        #expect(events == [], "\(events)")
        peer.send(H2.data(stream: 1, "more", endStream: true), split: split)
        events = peer.take()
        #expect(events.withoutWindowUpdates == [.rst(stream: 1, code: H2Code.internalError)], "\(events)")
        #expect(peer.takeRequestText() == "4\r\nmore\r\n0\r\n\r\n" + getText(3))
        peer.respondAll(ok("ok"), split: split)
        events = peer.take()
        #expect(events.normalized == okFrames(3, "ok"), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.error == nil && peer.respondError == nil)
        #expect(peer.violations == [])
    }

    // MARK: 3. Streams the app reset, and the app's frames after Sluice's RST_STREAM

    @Test(arguments: [false, true])
    func noResetGoesToAStreamTheAppResetWhileItAwaitedItsResponse(partlyAnswered: Bool) {
        var peer = connectedPeer()
        _ = peer.getRequests([1, 3])
        if partlyAnswered {
            peer.respondAll(response(["HTTP/1.1 200 OK", "Content-Length: 10"], h2Bytes("01")))
        }
        _ = peer.take()
        peer.send(H2.rst(stream: 1, H2Code.cancel))
        #expect(peer.take() == [])
        peer.resetNext(.refusedStream)
        var events = peer.take()
        #expect(events == [], "a RST_STREAM on a stream the app reset: \(events)")
        #expect(peer.gateway.openStreams == 1)
        peer.respondAll(ok("three"))
        events = peer.take()
        #expect(events.normalized == okFrames(3, "three"), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.error == nil && peer.respondError == nil)
        #expect(peer.violations == [])
    }

    /// A body of fixed length is cut the same way, and the connection goes
    /// on: before, this reset ended the app's whole connection (GOAWAY
    /// CANCEL), every other stream with it. Also when the app resets a
    /// stream whose body waited for its turn, and one whose body had not begun.
    @Test(arguments: H2Split.all)
    func appResetOfTheStreamWhoseFixedLengthBodyIsGoingOn(split: H2Split) {
        var peer = connectedPeer(split: split)
        peer.send(peer.headers(1, H2.request("PUT", "/up", [header("content-length", "10")])) + H2.data(stream: 1, "abc"))
        peer.send(peer.headers(3, H2.request("POST", "/waits", [header("content-length", "4")])) + H2.data(stream: 3, "wa"))
        peer.send(peer.headers(5, H2.request("GET", "/5"), endStream: true))
        // Stream 3 first, while its request waits behind stream 1's: it never goes on.
        peer.send(H2.rst(stream: 3, H2Code.cancel))
        peer.send(H2.rst(stream: 1, H2Code.cancel))
        peer.send(peer.headers(7, H2.request("POST", "/7", [header("content-length", "3")])))
        peer.send(H2.rst(stream: 7, H2Code.cancel) + peer.headers(9, H2.request("GET", "/9"), endStream: true))
        #expect(peer.error == nil)
        #expect(peer.takeRequestPieces() == [
            "PUT /up HTTP/1.1\r\nhost: example.com\r\ncontent-length: 10\r\n\r\nabc",
            getText(5) + "POST /7 HTTP/1.1\r\nhost: example.com\r\ncontent-length: 3\r\n\r\n",
            getText(9),
        ])
        #expect(peer.take().withoutWindowUpdates == [])
        // The session answers each request it read, the cut ones too: their answers are dropped.
        peer.respondAll(response(["HTTP/1.1 502 Bad Gateway", "Content-Length: 3"], h2Bytes("cut")) + ok("five")
            + response(["HTTP/1.1 502 Bad Gateway", "Content-Length: 3"], h2Bytes("cut")) + ok("nine"))
        let events = peer.take()
        #expect(events.on(5).normalized == okFrames(5, "five"), "\(events)")
        #expect(events.on(9).normalized == okFrames(9, "nine"), "\(events)")
        #expect(events.normalized.count == 4, "frames on the cut streams: \(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    /// The RST_STREAM waits for the body's end; the app resets the stream first.
    @Test func noResetGoesToAStreamTheAppResetWhileItsResetWaitedForItsBody() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/up")) + H2.data(stream: 1, "a"))
        peer.send(peer.headers(3, H2.request("GET", "/3"), endStream: true))
        _ = peer.takeRequests()
        _ = peer.take()
        peer.resetNext(.refusedStream)
        #expect(peer.take().withoutWindowUpdates == [])
        peer.send(H2.rst(stream: 1, H2Code.cancel))
        var events = peer.take()
        #expect(events.withoutWindowUpdates == [], "a RST_STREAM on a stream the app reset: \(events)")
        #expect(peer.error == nil)
        #expect(peer.takeRequestPieces() == ["", getText(3)], "stream 1's request is cut where its bytes ended")
        #expect(peer.gateway.openStreams == 1)
        peer.respondAll(ok("three"))
        events = peer.take()
        #expect(events.normalized == okFrames(3, "three"), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    /// §5.1: what the app sent before it read Sluice's RST_STREAM is ignored:
    /// no connection error, no RST_STREAM back, nothing to the session.
    @Test(arguments: splits)
    func framesTheAppSendsAfterSluicesResetAreIgnored(split: H2Split) {
        var peer = connectedPeer(split: split)
        peer.send(peer.headers(1, H2.request("POST", "/1", [header("content-length", "2")])) + H2.data(stream: 1, "ab", endStream: true))
        peer.send(peer.headers(3, H2.request("POST", "/3")))
        _ = peer.takeRequests()
        _ = peer.take()
        // Stream 1 at once; stream 3 once its body ends.
        peer.resetNext(.refusedStream)
        peer.resetNext(.cancel)
        #expect(peer.take() == [.rst(stream: 1, code: H2Code.refusedStream)])
        peer.send(H2.data(stream: 3, "x", endStream: true))
        #expect(peer.take().withoutWindowUpdates == [.rst(stream: 3, code: H2Code.cancel)])
        _ = peer.takeRequests()
        for id: UInt32 in [1, 3] {
            peer.send(H2.windowUpdate(stream: id, 10) + H2.priority(stream: id) + H2.data(stream: id, "late")
                + peer.headers(id, [header("x-late", "1")], endStream: true) + H2.rst(stream: id, H2Code.cancel))
            let events = peer.take()
            #expect(peer.error == nil, "stream \(id): \(String(describing: peer.error))")
            #expect(events.withoutWindowUpdates == [], "stream \(id): \(events)")
            #expect(events.on(id) == [], "stream \(id): \(events)")
        }
        #expect(peer.takeRequests().isEmpty)
        // The connection goes on.
        #expect(peer.getRequests([5]) == getText(5))
        peer.respondAll(ok("five"))
        let events = peer.take()
        #expect(events.normalized == okFrames(5, "five"), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    // MARK: 4. Many in a row

    @Test(arguments: splits)
    func manyResetsInARow(split: H2Split) {
        var peer = connectedPeer()
        let ids: [UInt32] = Array(stride(from: 1, through: 23, by: 2))
        #expect(peer.getRequests(ids) == ids.map(getText).joined())
        // 1 3 5 reset; 7 answered; 9 11 reset; 13 unanswered; 15 answered; 17 19 21 reset; 23 answered.
        peer.resetNext(.refusedStream)
        peer.resetNext(.cancel)
        peer.resetNext(.internalError)
        peer.respondAll(ok("seven"), split: split)
        peer.resetNext(.refusedStream)
        peer.resetNext(.refusedStream)
        peer.leaveNextUnanswered()
        peer.respondAll(ok("fifteen"), split: split)
        peer.resetNext(.cancel)
        peer.resetNext(.cancel)
        peer.resetNext(.cancel)
        peer.respondAll(ok("twenty-three"), split: split)
        let events = peer.take()
        let expected: [H2Event] = [.rst(stream: 1, code: H2Code.refusedStream), .rst(stream: 3, code: H2Code.cancel),
                                   .rst(stream: 5, code: H2Code.internalError)]
            + okFrames(7, "seven")
            + [.rst(stream: 9, code: H2Code.refusedStream), .rst(stream: 11, code: H2Code.refusedStream)]
            + okFrames(15, "fifteen")
            + [.rst(stream: 17, code: H2Code.cancel), .rst(stream: 19, code: H2Code.cancel), .rst(stream: 21, code: H2Code.cancel)]
            + okFrames(23, "twenty-three")
        #expect(events.normalized == expected, "\(events)")
        #expect(peer.gateway.openStreams == 1, "stream 13, unanswered, should be the one left")
        peer.send(H2.rst(stream: 13, H2Code.cancel))
        #expect(peer.take() == [])
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.error == nil && peer.respondError == nil)
        #expect(peer.violations == [])
    }

    /// Ten streams; every other one is answered in part (its head, part of a
    /// chunked body) and then reset, the rest answered whole.
    @Test(arguments: splits)
    func resetsAfterPartialResponsesAcrossManyStreams(split: H2Split) {
        var peer = connectedPeer()
        let ids: [UInt32] = Array(stride(from: 1, through: 19, by: 2))
        _ = peer.getRequests(ids)
        for (i, id) in ids.enumerated() {
            if i % 2 == 0 {
                let cut = i % 3 == 0 ? "3\r\nab" : "3\r\nabc\r\n1"
                peer.respondAll(response(["HTTP/1.1 502 Bad Gateway", "Transfer-Encoding: chunked", "X-Id: \(id)"], h2Bytes(cut)), split: split)
                peer.resetNext(.internalError)
            } else {
                let body = "#\(id)"
                let chunked = String(body.utf8.count, radix: 16) + "\r\n" + body + "\r\n0\r\n\r\n"
                peer.respondAll(response(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "X-Id: \(id)"], h2Bytes(chunked)), split: split)
            }
        }
        let events = peer.take()
        let streams = events.streams
        for (i, id) in ids.enumerated() {
            let result = streams[id]
            if i % 2 == 0 {
                #expect(result?.heads == [[H2Field(":status", "502"), H2Field("x-id", "\(id)")]], "stream \(id): \(events.on(id))")
                #expect(result?.bodyText == (i % 3 == 0 ? "ab" : "abc") && result?.ended == false, "stream \(id): \(events.on(id))")
                #expect(result?.resets == [H2Code.internalError] && events.on(id).last == .rst(stream: id, code: H2Code.internalError),
                        "stream \(id): \(events.on(id))")
            } else {
                #expect(result?.heads == [[H2Field(":status", "200"), H2Field("x-id", "\(id)")]], "stream \(id): \(events.on(id))")
                #expect(result?.bodyText == "#\(id)" && result?.ended == true && result?.resets == [], "stream \(id): \(events.on(id))")
            }
        }
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.respondError == nil)
        #expect(peer.violations == [])
    }

    // MARK: 5. leaveNextResponseUnanswered

    @Test(arguments: splits)
    func anUnansweredStreamGetsNoFrameWhileTheTwoAfterItGetTheirResponses(split: H2Split) {
        var peer = connectedPeer(split: split)
        _ = peer.getRequests([1, 3, 5])
        peer.leaveNextUnanswered()
        #expect(peer.take() == [])
        #expect(peer.gateway.openStreams == 3)
        peer.respondAll(ok("three") + ok("five"), split: split)
        var events = peer.take()
        #expect(byStream(events) == byStream(okFrames(3, "three") + okFrames(5, "five")), "\(events)")
        #expect(peer.gateway.openStreams == 1, "the unanswered stream stays open")
        // The app's window for it changes nothing.
        peer.send(H2.windowUpdate(stream: 1, 100))
        #expect(peer.take() == [])
        // The app gives up on it.
        peer.send(H2.rst(stream: 1, H2Code.cancel))
        events = peer.take()
        #expect(events == [], "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.error == nil)
        // Nothing broke: the next stream is served.
        #expect(peer.getRequests([7]) == getText(7))
        peer.respondAll(ok("seven"), split: split)
        events = peer.take()
        #expect(events.normalized == okFrames(7, "seven"), "\(events)")
        #expect(peer.events.on(1) == [], "frames on the unanswered stream: \(peer.events.on(1))")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.error == nil && peer.respondError == nil)
        #expect(peer.violations == [])
    }

    @Test(arguments: splits)
    func anUnansweredStreamsChunkedBodyStillGoesOn(split: H2Split) throws {
        var peer = connectedPeer(split: split)
        peer.send(peer.headers(1, H2.request("POST", "/drop")) + H2.data(stream: 1, "a"))
        peer.send(peer.headers(3, H2.request("GET", "/3"), endStream: true))
        var requests = peer.takeRequests()
        peer.leaveNextUnanswered()
        peer.send(H2.data(stream: 1, "b"))
        let more = peer.takeRequestText()
        #expect(more == "1\r\nb\r\n", "\(more)")
        requests += h2Bytes(more)
        peer.send(H2.data(stream: 1, "c", endStream: true))
        requests += peer.takeRequests()
        let parsed = h1Requests(requests)
        #expect(parsed.rest == 0 && parsed.error == nil, "\(parsed)")
        try #require(parsed.requests.count == 2, "\(parsed.requests)")
        #expect(parsed.requests[0].line == "POST /drop HTTP/1.1" && parsed.requests[0].bodyText == "abc", "\(parsed.requests[0])")
        #expect(parsed.requests[1].line == "GET /3 HTTP/1.1")
        #expect(peer.gateway.openStreams == 2)
        peer.respondAll(ok("three"), split: split)
        #expect(peer.gateway.openStreams == 1)
        peer.send(H2.rst(stream: 1, H2Code.cancel))
        #expect(peer.gateway.openStreams == 0)
        let events = peer.events
        #expect(events.on(1).withoutWindowUpdates == [], "frames on the unanswered stream: \(events.on(1))")
        #expect(events.on(3).normalized == okFrames(3, "three"), "\(events)")
        #expect(events.resets == [] && events.goAways == [], "\(events)")
        #expect(peer.takeRequests().isEmpty)
        #expect(peer.error == nil && peer.respondError == nil)
        #expect(peer.violations == [])
    }

    @Test func anUnansweredStreamsContentLengthBodyStillGoesOn() throws {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("PUT", "/drop", [header("content-length", "6")])) + H2.data(stream: 1, "abc"))
        peer.send(peer.headers(3, H2.request("GET", "/3"), endStream: true))
        var requests = peer.takeRequests()
        peer.leaveNextUnanswered()
        peer.send(H2.data(stream: 1, "def", endStream: true))
        requests += peer.takeRequests()
        let parsed = h1Requests(requests)
        #expect(parsed.rest == 0 && parsed.error == nil, "\(parsed)")
        try #require(parsed.requests.count == 2, "\(parsed.requests)")
        #expect(parsed.requests[0].framing == "content-length: 6" && parsed.requests[0].bodyText == "abcdef", "\(parsed.requests[0])")
        #expect(parsed.requests[1].line == "GET /3 HTTP/1.1")
        #expect(peer.gateway.openStreams == 2)
        peer.respondAll(ok("three"))
        #expect(peer.gateway.openStreams == 1, "the unanswered stream stays open")
        peer.send(H2.rst(stream: 1, H2Code.cancel))
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.events.on(1).withoutWindowUpdates == [], "\(peer.events.on(1))")
        #expect(peer.events.on(3).normalized == okFrames(3, "three"), "\(peer.events)")
        #expect(peer.error == nil)
        #expect(peer.violations == [])
    }

    /// The unanswered stream is no longer awaited: a reset after it is for the next stream.
    @Test func aResetAfterAnUnansweredStreamIsForTheStreamAfterIt() {
        var peer = connectedPeer()
        _ = peer.getRequests([1, 3, 5])
        peer.leaveNextUnanswered()
        peer.resetNext(.refusedStream)
        var events = peer.take()
        #expect(events == [.rst(stream: 3, code: H2Code.refusedStream)], "\(events)")
        peer.respondAll(ok("five"))
        events = peer.take()
        #expect(events.normalized == okFrames(5, "five"), "\(events)")
        #expect(peer.gateway.openStreams == 1)
        #expect(peer.events.on(1) == [])
        #expect(peer.violations == [])
    }

    @Test func anUnansweredStreamTheAppHadResetIsGone() {
        var peer = connectedPeer()
        _ = peer.getRequests([1, 3])
        peer.send(H2.rst(stream: 1, H2Code.cancel))
        peer.leaveNextUnanswered()
        #expect(peer.take() == [])
        #expect(peer.gateway.openStreams == 1)
        peer.respondAll(ok("three"))
        let events = peer.take()
        #expect(events.normalized == okFrames(3, "three"), "\(events)")
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    // MARK: 6. HTTPResponseParser.skipResponse

    @Test(arguments: Split.all)
    func aSkippedGETMakesTheNextResponseAHEADs(split: Split) throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        parser.expectResponse(to: .head)
        parser.expectResponse(to: .get)
        parser.skipResponse()
        #expect(parser.pendingResponses == 2)
        let got = try readResponses(&parser, bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n" + "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nhi"), split)
        #expect(got == [ReadResponse(200, "", ended: true), ReadResponse(201, "hi", ended: true)], "\(got)")
        #expect(parser.pendingResponses == 0)
        #expect(parser.isIdle)
    }

    @Test(arguments: Split.all)
    func aSkippedHEADMakesTheNextResponseAGETsWithItsBody(split: Split) throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .head)
        parser.expectResponse(to: .get)
        parser.skipResponse()
        let got = try readResponses(&parser, bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), split)
        #expect(got == [ReadResponse(200, "hello", ended: true)], "\(got)")
        #expect(parser.pendingResponses == 0)
        #expect(parser.isIdle)
    }

    /// Every prefix of a response read, then skipped: the next bytes are the next response, whole.
    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nX-A: 1\r\n\r\n0123456789",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nX-T: 1\r\n\r\n",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nruns to the close",
    ], [Split.whole, .byteByByte, .random(seed: 2)])
    func whatWasReadOfASkippedResponseIsForgotten(skipped: String, split: Split) throws {
        let input = bytes(skipped)
        let next = bytes("HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nxyz")
        for k in 1 ..< input.count {
            var parser = HTTPResponseParser()
            parser.expectResponse(to: .get)
            parser.expectResponse(to: .get)
            _ = try readResponses(&parser, Array(input[0 ..< k]), split)
            parser.skipResponse()
            #expect(parser.isIdle, "prefix \(k): what was read is not forgotten")
            #expect(parser.pendingResponses == 1, "prefix \(k)")
            let got: [ReadResponse]
            do {
                got = try readResponses(&parser, next, split)
            } catch {
                Issue.record("prefix \(k): the next response is not read: \(error)")
                continue
            }
            #expect(got == [ReadResponse(201, "xyz", ended: true)], "prefix \(k): \(got)")
            #expect(parser.pendingResponses == 0, "prefix \(k)")
            #expect(parser.isIdle, "prefix \(k)")
        }
    }

    /// A response read whole is not the one skipped: the next one is.
    @Test func aSkipAfterACompleteResponseSkipsTheNextOne() throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        parser.expectResponse(to: .head)
        parser.expectResponse(to: .get)
        var got = try readResponses(&parser, bytes("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na"), .whole)
        #expect(got == [ReadResponse(200, "a", ended: true)], "\(got)")
        #expect(parser.pendingResponses == 2)
        parser.skipResponse()
        #expect(parser.pendingResponses == 1)
        got = try readResponses(&parser, bytes("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nget"), .whole)
        #expect(got == [ReadResponse(200, "get", ended: true)], "read as the HEAD's: \(got)")
        #expect(parser.pendingResponses == 0)
    }

    /// An interim response read, then the skip: the final response will not come either.
    @Test func aSkipAfterAnInterimResponseSkipsItsExchange() throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        parser.expectResponse(to: .head)
        var got = try readResponses(&parser, bytes("HTTP/1.1 100 Continue\r\n\r\n"), .whole)
        #expect(got == [ReadResponse(100, "", ended: false)], "\(got)")
        #expect(parser.pendingResponses == 2)
        parser.skipResponse()
        #expect(parser.pendingResponses == 1)
        got = try readResponses(&parser, bytes("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n"), .whole)
        #expect(got == [ReadResponse(200, "", ended: true)], "read as the GET's: \(got)")
        #expect(parser.pendingResponses == 0)
        #expect(parser.isIdle)
    }

    /// The queue runs dry with a skip and fills again: the new methods count.
    @Test func methodsQueuedAfterASkipAreReadInOrder() throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        parser.skipResponse()
        #expect(parser.pendingResponses == 0)
        parser.expectResponse(to: .head)
        parser.expectResponse(to: .get)
        #expect(parser.pendingResponses == 2)
        let got = try readResponses(&parser, bytes("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n" + "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody"),
                                    .byteByByte)
        #expect(got == [ReadResponse(200, "", ended: true), ReadResponse(200, "body", ended: true)], "\(got)")
        #expect(parser.pendingResponses == 0)
    }
}

/// What a response parser made of some bytes: each head's status, the body
/// after it and whether it ended. A body step with no head before it shows as
/// a response of status nil (ParserDriver's `drive` would trap on it).
private struct ReadResponse: Equatable, CustomStringConvertible {
    var status: Int?
    var body: [UInt8]
    var ended: Bool

    init(_ status: Int?, _ body: String, ended: Bool) {
        self.status = status
        self.body = bytes(body)
        self.ended = ended
    }

    var description: String {
        "\(status.map(String.init) ?? "no head") body \"\(String(decoding: body, as: UTF8.self))\"\(ended ? " ended" : "")"
    }
}

/// Feeds `input` cut as `split` says, calling parse until nil on each rest, as the engine does.
private func readResponses(_ parser: inout HTTPResponseParser, _ input: [UInt8], _ split: Split) throws(HTTPParseError) -> [ReadResponse] {
    var result: [ReadResponse] = []
    var offset = 0
    for n in split.pieces(input.count) {
        let piece = Array(input[offset ..< offset + n])
        offset += n
        var start = 0
        // Bounded: a step takes bytes, or is an .end(0) or .upgraded that the next call does not repeat.
        for _ in 0 ..< 2 * piece.count + 8 {
            let result1: Result<HTTPResponseStep?, HTTPParseError> = piece.withUnsafeBytes { all in
                do throws(HTTPParseError) {
                    return .success(try parser.parse(UnsafeRawBufferPointer(rebasing: all[start...])))
                } catch { return .failure(error) }
            }
            guard let step = try result1.get() else { break }
            switch step {
            case let .head(head, _):
                result.append(ReadResponse(head.status, "", ended: false))
            case .body, .end, .upgraded:
                if result.last == nil || result.last!.ended { result.append(ReadResponse(nil, "", ended: false)) }
                result[result.count - 1].body += piece[start ..< start + step.consumed]
                if case .end = step { result[result.count - 1].ended = true }
            }
            start += step.consumed
        }
    }
    return result
}
