import Testing
@testable import HTTP
import TestSupport

// HTTP2Gateway driven whole by a scripted HTTP/2 client (HTTP2TestPeer.swift):
// client bytes in any split, the HTTP/1.1 requests the session would read,
// the session's HTTP/1.1 responses back, and the frames the app would read.

private func header(_ name: String, _ value: String) -> HPACKHeader { HPACKHeader(name, value) }

/// The response bytes: `head` (CRLF-joined lines, with the blank line added) and the body.
private func response(_ lines: [String], _ body: [UInt8] = []) -> [UInt8] {
    h2Bytes(lines.joined(separator: "\r\n") + "\r\n\r\n") + body
}

/// A body whose bytes say where they are, so that a reordering shows.
private func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0 ..< count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) % 251) }
}

/// The splits the heavier scripted tests run under.
private let someSplits: [H2Split] = [.whole, .byteByByte, .random(3)]

/// A peer past the handshake, its SETTINGS and ACK read.
private func connectedPeer(split: H2Split = .whole, limits: HTTP2Gateway.Limits = HTTP2Gateway.Limits(),
                           settings: [(UInt16, UInt32)] = []) -> H2Peer
{
    var peer = H2Peer(split: split, limits: limits, settings: settings)
    _ = peer.take()
    return peer
}

@Suite struct HTTP2GatewayTests {
    static let sluiceSettings: [H2SettingValue] = [
        H2SettingValue(id: H2Setting.maxConcurrentStreams, value: 100),
        H2SettingValue(id: H2Setting.initialWindowSize, value: 65535),
        H2SettingValue(id: H2Setting.maxHeaderListSize, value: 65536),
    ]

    // MARK: 1. The connection's start

    @Test func sluiceSettingsAreTheFirstOutput() throws {
        var gateway = HTTP2Gateway()
        #expect(gateway.hasOutput)
        var cutter = H2FrameCutter()
        cutter.append(gateway.takeOutput())
        let first = cutter.next()
        let frame = try #require(first)
        let second = cutter.next()
        #expect(second == nil)
        #expect(cutter.buffered == 0)
        #expect(frame.type == H2Type.settings)
        #expect(frame.flags == 0)
        #expect(frame.stream == 0)
        #expect(!frame.reservedBit)
        var values: [UInt16: UInt32] = [:]
        #expect(frame.payload.count == 18)
        var i = 0
        while i + 6 <= frame.payload.count {
            let p = frame.payload
            let id = UInt16(p[i]) << 8 | UInt16(p[i + 1])
            #expect(values[id] == nil, "setting \(id) twice")
            values[id] = UInt32(p[i + 2]) << 24 | UInt32(p[i + 3]) << 16 | UInt32(p[i + 4]) << 8 | UInt32(p[i + 5])
            i += 6
        }
        #expect(values == [H2Setting.maxConcurrentStreams: 100, H2Setting.initialWindowSize: 65535, H2Setting.maxHeaderListSize: 65536])
        #expect(!gateway.hasOutput)
        #expect(gateway.takeOutput().isEmpty)
        #expect(gateway.takeRequests().bytes.isEmpty)
        #expect(gateway.openStreams == 0)
        #expect(!gateway.wentAway && !gateway.appWentAway)
    }

    @Test(arguments: H2Split.all)
    func prefaceAndSettingsAreAcknowledgedAndPingsAnswered(split: H2Split) {
        var peer = H2Peer(split: split, handshake: false)
        #expect(peer.take() == [.settings(Self.sluiceSettings)])
        // The preface alone asks for nothing.
        peer.send(H2.preface)
        #expect(peer.take() == [])
        peer.send(H2.settings([(H2Setting.headerTableSize, 4096), (H2Setting.enablePush, 0), (H2Setting.maxConcurrentStreams, 50),
                               (0x99, 7)]))
        #expect(peer.take() == [.settingsAck])
        let opaque: [UInt8] = [1, 2, 3, 4, 250, 251, 252, 0]
        peer.send(H2.ping(opaque))
        #expect(peer.take() == [.pingAck(opaque)])
        // A PING ACK and a SETTINGS ACK from the app ask for nothing; a later SETTINGS is acknowledged too.
        peer.send(H2.ping(opaque, ack: true) + H2.settingsAck + H2.settings([]) + H2.ping([9, 9, 9, 9, 9, 9, 9, 9]))
        #expect(peer.take() == [.settingsAck, .pingAck([9, 9, 9, 9, 9, 9, 9, 9])])
        #expect(peer.error == nil)
        #expect(peer.requests.isEmpty)
        #expect(peer.violations == [])
    }

    // MARK: 2. One request, one response

    @Test(arguments: H2Split.all)
    func getBecomesExactHTTP11(split: H2Split) {
        var peer = connectedPeer(split: split)
        let fields = H2.request("GET", "/a/b?c=d", [
            header("user-agent", "t/1"), header("accept", "*/*"), header("te", "trailers"),
            header("cookie", "a=1"), header("cookie", "b=2"),
        ])
        peer.send(peer.headers(1, fields, endStream: true))
        #expect(peer.takeRequestText()
            == "GET /a/b?c=d HTTP/1.1\r\nhost: example.com\r\nuser-agent: t/1\r\naccept: */*\r\nte: trailers\r\ncookie: a=1; b=2\r\n\r\n")
        #expect(peer.take() == [])
        #expect(peer.gateway.openStreams == 1)
        #expect(peer.error == nil)
    }

    /// Cookies split over several fields come back as one, whatever lies between them (§8.2.3).
    @Test func cookiesAreJoinedIntoOneField() throws {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("GET", "/", [header("cookie", "a=1"), header("accept", "*/*"), header("cookie", "b=2"),
                                                          header("cookie", "c=3")]), endStream: true))
        let parsed = h1Requests(peer.takeRequests())
        let request = try #require(parsed.requests.first)
        #expect(parsed.requests.count == 1 && parsed.rest == 0 && parsed.error == nil)
        #expect(request.fields.filter { $0.hasPrefix("cookie:") } == ["cookie: a=1; b=2; c=3"])
        #expect(request.fields.contains("accept: */*"))
    }

    /// A header block in a padded HEADERS with priority, and CONTINUATIONs.
    @Test(arguments: H2Split.all)
    func headerBlockInPiecesWithPaddingAndPriority(split: H2Split) {
        var peer = connectedPeer(split: split)
        let block = peer.block(H2.request("GET", "/pieces", [header("x-a", String(repeating: "v", count: 40)), header("x-b", "2")]))
        let a = Array(block[0 ..< 5]), b = Array(block[5 ..< 20]), c = Array(block[20...])
        peer.send(H2.headers(stream: 1, block: a, endStream: true, endHeaders: false, padding: 7, priority: true)
            + H2.continuation(stream: 1, block: b, endHeaders: false)
            + H2.continuation(stream: 1, block: [], endHeaders: false)
            + H2.continuation(stream: 1, block: c, endHeaders: true))
        #expect(peer.takeRequestText()
            == "GET /pieces HTTP/1.1\r\nhost: example.com\r\nx-a: \(String(repeating: "v", count: 40))\r\nx-b: 2\r\n\r\n")
        #expect(peer.take() == [])
        #expect(peer.error == nil)
    }

    @Test func hostComesFromAuthorityElseFromTheHostField() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("GET", "/1", authority: "a.example", [header("host", "a.example"), header("x", "y")]),
                               endStream: true))
        peer.send(peer.headers(3, H2.request("GET", "/3", authority: nil, [header("host", "b.example:8443")]), endStream: true))
        #expect(peer.takeRequestText()
            == "GET /1 HTTP/1.1\r\nhost: a.example\r\nx: y\r\n\r\nGET /3 HTTP/1.1\r\nhost: b.example:8443\r\n\r\n")
        #expect(peer.take() == [])
    }

    @Test(arguments: H2Split.all)
    func postWithContentLength(split: H2Split) {
        var peer = connectedPeer(split: split)
        peer.send(peer.headers(1, H2.request("POST", "/upload", [header("content-type", "text/plain"), header("content-length", "11")]))
            + H2.data(stream: 1, "hello ") + H2.data(stream: 1, "world", endStream: true))
        #expect(peer.takeRequestText()
            == "POST /upload HTTP/1.1\r\nhost: example.com\r\ncontent-type: text/plain\r\ncontent-length: 11\r\n\r\nhello world")
        let events = peer.take()
        #expect(events.withoutWindowUpdates == [])
        // §6.9: every DATA byte the connection received is given back.
        #expect(events.credit(0) == 11)
        // The stream's window comes back only for bytes that went on before END_STREAM.
        #expect([0, 6].contains(events.credit(1)), "stream 1 credit \(events.credit(1))")
        #expect(peer.gateway.openStreams == 1)
    }

    @Test(arguments: H2Split.all)
    func requestsWithoutBodiesAndTheirFraming(split: H2Split) {
        var peer = connectedPeer(split: split)
        peer.send(peer.headers(1, H2.request("POST", "/p"), endStream: true)
            + peer.headers(3, H2.request("PUT", "/u"), endStream: true)
            + peer.headers(5, H2.request("PATCH", "/pa"), endStream: true)
            + peer.headers(7, H2.request("DELETE", "/d"), endStream: true)
            + peer.headers(9, H2.request("GET", "/g"), endStream: true)
            + peer.headers(11, H2.request("OPTIONS", "*"), endStream: true)
            + peer.headers(13, H2.request("HEAD", "/h"), endStream: true))
        #expect(peer.takeRequestText() == "POST /p HTTP/1.1\r\nhost: example.com\r\ncontent-length: 0\r\n\r\n"
            + "PUT /u HTTP/1.1\r\nhost: example.com\r\ncontent-length: 0\r\n\r\n"
            + "PATCH /pa HTTP/1.1\r\nhost: example.com\r\ncontent-length: 0\r\n\r\n"
            + "DELETE /d HTTP/1.1\r\nhost: example.com\r\n\r\n"
            + "GET /g HTTP/1.1\r\nhost: example.com\r\n\r\n"
            + "OPTIONS * HTTP/1.1\r\nhost: example.com\r\n\r\n"
            + "HEAD /h HTTP/1.1\r\nhost: example.com\r\n\r\n")
        #expect(peer.take() == [])
        #expect(peer.gateway.openStreams == 7)
    }

    /// A body whose end has not arrived when its request goes on is chunked:
    /// each DATA a chunk, END_STREAM the last chunk, trailers after it.
    @Test(arguments: H2Split.all)
    func aBodyOfUnknownLengthGoesOnChunked(split: H2Split) {
        var peer = connectedPeer(split: split)
        peer.send(peer.headers(1, H2.request("POST", "/c", [header("te", "trailers")])))
        #expect(peer.takeRequestText() == "POST /c HTTP/1.1\r\nhost: example.com\r\nte: trailers\r\ntransfer-encoding: chunked\r\n\r\n")
        #expect(peer.take() == [])
        peer.send(H2.data(stream: 1, "abc"))
        #expect(peer.takeRequestText() == "3\r\nabc\r\n")
        var events = peer.take()
        #expect(events.withoutWindowUpdates == [])
        #expect(events.credit(0) == 3 && events.credit(1) == 3)
        peer.send(H2.data(stream: 1, "de") + H2.data(stream: 1, "") )
        #expect(peer.takeRequestText() == "2\r\nde\r\n")
        events = peer.take()
        #expect(events.credit(0) == 2 && events.credit(1) == 2)
        peer.send(peer.headers(1, [header("x-checksum", "9")], endStream: true))
        #expect(peer.takeRequestText() == "0\r\nx-checksum: 9\r\n\r\n")
        #expect(peer.take() == [])
        #expect(peer.error == nil)
        #expect(peer.gateway.openStreams == 1)
    }

    /// A body that had all arrived by its request's turn goes on whole and
    /// in order behind the one before it. (Its framing follows from its
    /// HEADERS alone, chunked here, so the bytes must not depend on the split.)
    private func bodyThatArrivedBeforeItsTurn(_ split: H2Split) -> [UInt8] {
        var peer = connectedPeer(split: split)
        peer.send(peer.headers(1, H2.request("POST", "/first")))
        _ = peer.takeRequests()
        peer.send(peer.headers(3, H2.request("POST", "/second")) + H2.data(stream: 3, "xy") + H2.data(stream: 3, "z", endStream: true)
            + peer.headers(5, H2.request("GET", "/third")) + H2.data(stream: 5, "g", endStream: true))
        #expect(peer.takeRequests().isEmpty)
        peer.send(H2.data(stream: 1, "", endStream: true))
        #expect(peer.error == nil)
        return peer.takeRequests()
    }

    @Test(arguments: H2Split.all)
    func aBodyThatArrivedBeforeItsTurnGoesOnWhole(split: H2Split) throws {
        let bytes = bodyThatArrivedBeforeItsTurn(split)
        #expect(bytes.starts(with: h2Bytes("0\r\n\r\n")))
        let parsed = h1Requests(Array(bytes.dropFirst(5)))
        #expect(parsed.rest == 0 && parsed.error == nil)
        try #require(parsed.requests.count == 2)
        #expect(parsed.requests[0].line == "POST /second HTTP/1.1" && parsed.requests[0].bodyText == "xyz")
        #expect(parsed.requests[1].line == "GET /third HTTP/1.1" && parsed.requests[1].bodyText == "g")
        #expect(parsed.requests.allSatisfy { $0.framing != "none" })
        #expect(bytes == bodyThatArrivedBeforeItsTurn(.whole), "the request bytes depend on how the app's bytes were cut")
    }

    /// One GET and its response, the response split as `split` says.
    private func exchange(_ method: String, _ responseBytes: [UInt8], split: H2Split, then next: [UInt8]? = nil) -> H2Peer {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request(method, "/r"), endStream: true))
        if next != nil { peer.send(peer.headers(3, H2.request("GET", "/next"), endStream: true)) }
        _ = peer.takeRequests()
        let all = responseBytes + (next ?? [])
        let taken = peer.respond(all, split: split)
        #expect(taken == all.count)
        #expect(peer.respondError == nil)
        return peer
    }

    @Test(arguments: H2Split.all)
    func responseWithContentLength(split: H2Split) {
        let bytes = response(["HTTP/1.1 200 OK", "Content-Type: text/plain", "Content-Length: 5", "Connection: keep-alive, X-Hop",
                              "Keep-Alive: timeout=5", "Proxy-Connection: keep-alive", "X-Hop: 1", "Upgrade: h2c",
                              "Set-Cookie: a=1", "Set-Cookie: b=2", "X-Mixed-Case: Value"], h2Bytes("hello"))
        var peer = exchange("GET", bytes, split: split)
        let events = peer.take()
        let expected: [H2Event] = [
            .headers(stream: 1, fields: [H2Field(":status", "200"), H2Field("content-type", "text/plain"), H2Field("content-length", "5"),
                                         H2Field("set-cookie", "a=1"), H2Field("set-cookie", "b=2"), H2Field("x-mixed-case", "Value")],
                     endStream: false),
            .data(stream: 1, bytes: h2Bytes("hello"), endStream: true),
        ]
        #expect(events.normalized == expected)
        if case .whole = split { #expect(events == expected) }
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    /// The chunked body's data goes as DATA; its trailers end the stream as HEADERS (§8.1).
    @Test(arguments: H2Split.all)
    func chunkedResponseIsDechunkedAndItsTrailersEndTheStream(split: H2Split) {
        let bytes = response(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Content-Type: text/plain"],
                             h2Bytes("4\r\nWiki\r\n5;ext=1\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nExpires: never\r\n\r\n"))
        var peer = exchange("GET", bytes, split: split)
        let events = peer.take()
        #expect(events.normalized == [
            .headers(stream: 1, fields: [H2Field(":status", "200"), H2Field("content-type", "text/plain")], endStream: false),
            .data(stream: 1, bytes: h2Bytes("Wikipedia in\r\n\r\nchunks."), endStream: false),
            .headers(stream: 1, fields: [H2Field("expires", "never")], endStream: true),
        ])
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    @Test(arguments: H2Split.all)
    func headResponseHasNoBody(split: H2Split) throws {
        let head = response(["HTTP/1.1 200 OK", "Content-Length: 1234", "Content-Type: text/html"])
        let next = response(["HTTP/1.1 200 OK", "Content-Length: 4"], h2Bytes("next"))
        var peer = exchange("HEAD", head, split: split, then: next)
        let streams = peer.take().streams
        let one = try #require(streams[1])
        #expect(one.heads == [[H2Field(":status", "200"), H2Field("content-length", "1234"), H2Field("content-type", "text/html")]])
        #expect(one.body.isEmpty && one.ended && one.resets.isEmpty)
        #expect(streams[3]?.bodyText == "next" && streams[3]?.ended == true)
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    @Test(arguments: H2Split.all)
    func noContentResponse(split: H2Split) throws {
        let bytes = response(["HTTP/1.1 204 No Content", "Date: Mon, 01 Jan 2024 00:00:00 GMT"])
        let next = response(["HTTP/1.1 200 OK", "Content-Length: 2"], h2Bytes("ok"))
        var peer = exchange("GET", bytes, split: split, then: next)
        let streams = peer.take().streams
        let one = try #require(streams[1])
        #expect(one.heads == [[H2Field(":status", "204"), H2Field("date", "Mon, 01 Jan 2024 00:00:00 GMT")]])
        #expect(one.body.isEmpty && one.ended)
        #expect(streams[3]?.bodyText == "ok" && streams[3]?.ended == true)
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    @Test(arguments: H2Split.all)
    func interimResponsesAreHeadersOfTheirOwn(split: H2Split) {
        let bytes = response(["HTTP/1.1 100 Continue"]) + response(["HTTP/1.1 103 Early Hints", "Link: </s.css>; rel=preload"])
            + response(["HTTP/1.1 200 OK", "Content-Length: 3"], h2Bytes("abc"))
        var peer = exchange("GET", bytes, split: split)
        #expect(peer.take().normalized == [
            .headers(stream: 1, fields: [H2Field(":status", "100")], endStream: false),
            .headers(stream: 1, fields: [H2Field(":status", "103"), H2Field("link", "</s.css>; rel=preload")], endStream: false),
            .headers(stream: 1, fields: [H2Field(":status", "200"), H2Field("content-length", "3")], endStream: false),
            .data(stream: 1, bytes: h2Bytes("abc"), endStream: true),
        ])
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    /// A response head bigger than a frame goes as HEADERS and CONTINUATIONs.
    @Test func aLargeResponseHeadGoesInContinuations() throws {
        let big = String(repeating: "a", count: 40000)
        var peer = exchange("GET", response(["HTTP/1.1 200 OK", "X-Big: " + big, "Content-Length: 1"], h2Bytes("!")), split: .whole)
        let one = try #require(peer.take().streams[1])
        #expect(one.heads == [[H2Field(":status", "200"), H2Field("x-big", big), H2Field("content-length", "1")]])
        #expect(one.bodyText == "!" && one.ended)
        #expect(peer.violations == [])
    }

    /// Responses HTTP/2 cannot carry end the connection: GOAWAY INTERNAL_ERROR.
    @Test(arguments: [
        response(["HTTP/1.1 200 OK", "Content-Length: 0"]) + response(["HTTP/1.1 200 OK", "Content-Length: 0"]),
        response(["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: upgrade"]),
    ])
    func responsesWithNoStreamToCarryThem(bytes: [UInt8]) {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("GET", "/1"), endStream: true))
        _ = peer.takeRequests()
        peer.respond(bytes)
        #expect(peer.respondError?.code == .internalError)
        let events = peer.take()
        #expect(events.goAways.count == 1)
        if case let .goAway(last, code, _)? = events.last {
            #expect(last == 1 && code == H2Code.internalError)
        } else {
            Issue.record("no GOAWAY last: \(events)")
        }
        #expect(peer.gateway.wentAway)
    }

    // MARK: 3. Many streams at once

    /// Five streams opened at once, their bodies interleaved.
    private func fiveStreams(_ split: H2Split) -> H2Peer {
        var peer = connectedPeer(split: split)
        var script = peer.headers(1, H2.request("GET", "/1"), endStream: true)
        script += peer.headers(3, H2.request("POST", "/3", [header("content-length", "10")]))
        script += peer.headers(5, H2.request("POST", "/5", [header("content-type", "a/b")]))
        script += peer.headers(7, H2.request("PUT", "/7", [header("te", "trailers")]))
        script += peer.headers(9, H2.request("GET", "/9"), endStream: true)
        script += H2.data(stream: 3, "01234") + H2.data(stream: 5, "five-a") + H2.data(stream: 7, "seven")
        script += H2.data(stream: 3, "56789", endStream: true) + H2.data(stream: 5, "five-b", endStream: true)
        script += peer.headers(7, [header("x-t", "7")], endStream: true)
        peer.send(script)
        return peer
    }

    @Test(arguments: H2Split.all)
    func fiveStreamsAtOnceGoOnInOrderAndTheirResponsesLandRight(split: H2Split) throws {
        var peer = fiveStreams(split)
        #expect(peer.error == nil)
        let parsed = h1Requests(peer.takeRequests())
        #expect(parsed.rest == 0 && parsed.error == nil)
        try #require(parsed.requests.count == 5)
        let r = parsed.requests
        #expect(r.map(\.line) == ["GET /1 HTTP/1.1", "POST /3 HTTP/1.1", "POST /5 HTTP/1.1", "PUT /7 HTTP/1.1", "GET /9 HTTP/1.1"])
        #expect(r[0].fields == ["host: example.com"] && r[0].framing == "none" && r[0].body.isEmpty)
        #expect(r[1].fields == ["host: example.com"] && r[1].framing == "content-length: 10" && r[1].bodyText == "0123456789")
        #expect(r[2].fields == ["host: example.com", "content-type: a/b"] && r[2].bodyText == "five-afive-b")
        #expect(r[3].fields == ["host: example.com", "te: trailers"] && r[3].bodyText == "seven")
        // Trailers can only go with a chunked body.
        #expect(r[3].framing == "chunked" ? r[3].trailers == ["x-t: 7"] : r[3].trailers.isEmpty)
        #expect(r[4].fields == ["host: example.com"] && r[4].framing == "none" && r[4].body.isEmpty)
        var events = peer.take()
        #expect(events.withoutWindowUpdates == [])
        #expect(events.credit(0) == 10 + 12 + 5)
        #expect(peer.gateway.openStreams == 5)

        // The responses, in order, each its own way.
        let responses = response(["HTTP/1.1 200 OK", "Content-Length: 2"], h2Bytes("r1"))
            + response(["HTTP/1.1 201 Created", "Transfer-Encoding: chunked"], h2Bytes("2\r\nr3\r\n0\r\n\r\n"))
            + response(["HTTP/1.1 202 Accepted", "Content-Length: 0"])
            + response(["HTTP/1.1 100 Continue"]) + response(["HTTP/1.1 200 OK", "Content-Length: 2"], h2Bytes("r7"))
            + response(["HTTP/1.1 404 Not Found", "Content-Length: 2"], h2Bytes("r9"))
        #expect(peer.respond(responses, split: split) == responses.count)
        events = peer.take()
        let streams = events.streams
        #expect(Set(streams.keys) == [1, 3, 5, 7, 9])
        #expect(streams[1] == H2StreamResult(heads: [[H2Field(":status", "200"), H2Field("content-length", "2")]], body: h2Bytes("r1"),
                                             dataFrames: streams[1]?.dataFrames ?? 0, ended: true))
        #expect(streams[3]?.heads == [[H2Field(":status", "201")]] && streams[3]?.bodyText == "r3" && streams[3]?.ended == true)
        #expect(streams[5]?.heads == [[H2Field(":status", "202"), H2Field("content-length", "0")]] && streams[5]?.body == []
            && streams[5]?.ended == true)
        #expect(streams[7]?.heads == [[H2Field(":status", "100")], [H2Field(":status", "200"), H2Field("content-length", "2")]]
            && streams[7]?.bodyText == "r7" && streams[7]?.ended == true)
        #expect(streams[9]?.heads.first?.first == H2Field(":status", "404") && streams[9]?.bodyText == "r9" && streams[9]?.ended == true)
        #expect(events.resets == [] && events.goAways == [])
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])

        // Every split gives the same requests, as HTTP/1.1 reads them, and the same frames.
        if split.description != H2Split.whole.description {
            var baseline = fiveStreams(.whole)
            let baseRequests = h1Requests(baseline.takeRequests()).requests
            #expect(zip(baseRequests, r).allSatisfy { $0.line == $1.line && $0.fields == $1.fields && $0.body == $1.body })
            _ = baseline.take()
            baseline.respond(responses)
            // Frames of different streams may interleave differently; each stream's own do not.
            let base = baseline.take()
            for id: UInt32 in [1, 3, 5, 7, 9] {
                #expect(base.on(id).normalized == events.on(id).normalized, "stream \(id)")
            }
        }
    }

    /// Strictly one request at a time: the next head only after the body before it ended.
    @Test func requestsGoOnOneAtATime() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/1")))
        #expect(peer.takeRequestText() == "POST /1 HTTP/1.1\r\nhost: example.com\r\ntransfer-encoding: chunked\r\n\r\n")
        peer.send(peer.headers(3, H2.request("GET", "/3"), endStream: true))
        peer.send(peer.headers(5, H2.request("POST", "/5", [header("content-length", "3")])) + H2.data(stream: 5, "abc", endStream: true))
        #expect(peer.takeRequests().isEmpty)
        peer.send(H2.data(stream: 1, "x"))
        #expect(peer.takeRequestText() == "1\r\nx\r\n")
        peer.send(H2.data(stream: 1, "", endStream: true))
        #expect(peer.takeRequestText() == "0\r\n\r\nGET /3 HTTP/1.1\r\nhost: example.com\r\n\r\n"
            + "POST /5 HTTP/1.1\r\nhost: example.com\r\ncontent-length: 3\r\n\r\nabc")
        #expect(peer.take().withoutWindowUpdates == [])
        #expect(peer.gateway.openStreams == 3)
    }

    /// A hundred streams with bodies of every framing, DATA shuffled across them.
    @Test(arguments: [H2Split.whole, .byteByByte, .random(11), .random(12)])
    func aHundredStreamsAtOnce(split: H2Split) throws {
        var rng = SeededRandom(seed: 99)
        var peer = connectedPeer(split: split)
        struct Plan {
            var id: UInt32
            var body: [UInt8]
            var withLength: Bool
            var withTrailers: Bool
            var sent = 0
        }
        var plans: [Plan] = []
        var script: [UInt8] = []
        for i in 0 ..< 100 {
            let id = UInt32(2 * i + 1)
            let body = pattern(Int(rng.next() % 600), seed: i)
            let withLength = i % 3 == 0
            let withTrailers = !withLength && i % 5 == 1
            var extra = [header("x-stream", String(id))]
            if withLength { extra.append(header("content-length", String(body.count))) }
            let method = i % 2 == 0 ? "POST" : "PUT"
            script += peer.headers(id, H2.request(method, "/s\(id)", extra), endStream: body.isEmpty && !withTrailers)
            plans.append(Plan(id: id, body: body, withLength: withLength, withTrailers: withTrailers))
        }
        // Bounded: every turn sends at least one byte of some body, or ends a stream.
        var open = plans.indices.filter { !plans[$0].body.isEmpty || plans[$0].withTrailers }
        for _ in 0 ..< 100_000 where !open.isEmpty {
            let k = Int(rng.next() % UInt64(open.count))
            let index = open[k]
            let left = plans[index].body.count - plans[index].sent
            let n = min(left, 1 + Int(rng.next() % 200))
            let piece = Array(plans[index].body[plans[index].sent ..< plans[index].sent + n])
            plans[index].sent += n
            let last = plans[index].sent == plans[index].body.count
            script += H2.data(stream: plans[index].id, piece, endStream: last && !plans[index].withTrailers)
            if last {
                if plans[index].withTrailers {
                    script += peer.headers(plans[index].id, [header("x-sum", String(plans[index].id))], endStream: true)
                }
                open.remove(at: k)
            }
        }
        try #require(open.isEmpty)
        peer.send(script)
        #expect(peer.error == nil)
        let events = peer.take()
        #expect(events.withoutWindowUpdates == [])
        #expect(events.credit(0) == plans.reduce(0) { $0 + $1.body.count })
        let parsed = h1Requests(peer.takeRequests())
        #expect(parsed.rest == 0 && parsed.error == nil)
        try #require(parsed.requests.count == 100)
        for (plan, request) in zip(plans, parsed.requests) {
            let method = plan.id % 4 == 1 ? "POST" : "PUT"
            #expect(request.line == "\(method) /s\(plan.id) HTTP/1.1")
            #expect(request.fields == ["host: example.com", "x-stream: \(plan.id)"])
            #expect(request.body == plan.body, "stream \(plan.id)")
            if plan.withLength { #expect(request.framing == "content-length: \(plan.body.count)") }
            if plan.withTrailers, request.framing == "chunked" {
                #expect(request.trailers == ["x-sum: \(plan.id)"])
            } else {
                #expect(request.trailers.isEmpty)
            }
        }
        #expect(peer.gateway.openStreams == 100)

        // Their responses, in order, chunked or not, split up.
        var responses: [UInt8] = []
        var expected: [UInt32: [UInt8]] = [:]
        for plan in plans {
            let body = pattern(Int(rng.next() % 500), seed: Int(plan.id) * 7)
            expected[plan.id] = body
            if plan.id % 3 == 0 {
                var chunked: [UInt8] = []
                var offset = 0
                while offset < body.count {
                    let n = min(body.count - offset, 1 + Int(rng.next() % 100))
                    chunked += h2Bytes(String(n, radix: 16) + "\r\n") + body[offset ..< offset + n] + h2Bytes("\r\n")
                    offset += n
                }
                responses += response(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "X-Stream: \(plan.id)"], chunked + h2Bytes("0\r\n\r\n"))
            } else {
                responses += response(["HTTP/1.1 200 OK", "Content-Length: \(body.count)", "X-Stream: \(plan.id)"], body)
            }
        }
        #expect(peer.respond(responses, split: split) == responses.count)
        #expect(peer.respondError == nil)
        let streams = peer.take().streams
        #expect(streams.count == 100)
        for plan in plans {
            let result = streams[plan.id]
            #expect(result?.heads.count == 1)
            #expect(result?.heads.first?.first == H2Field(":status", "200"))
            #expect(result?.heads.first?.contains(H2Field("x-stream", String(plan.id))) == true, "stream \(plan.id)")
            #expect(result?.body == expected[plan.id], "stream \(plan.id)")
            #expect(result?.ended == true && result?.resets == [])
        }
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    // MARK: 4. Flow control

    @Test func aResponseStopsAtTheWindowsAndWindowUpdatesReleaseTheRest() throws {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("GET", "/big"), endStream: true))
        let body = pattern(100_000)
        let bytes = response(["HTTP/1.1 200 OK", "Content-Length: 100000"], body)
        #expect(peer.respond(bytes) == bytes.count)
        var events = peer.take()
        var data = events.compactMap { if case let .data(_, bytes, end) = $0 { (bytes.count, end) } else { nil } }
        #expect(data.map { $0.0 }.reduce(0, +) == 65535)
        #expect(data.allSatisfy { $0.0 <= 16384 && !$0.1 })
        #expect(events.streams[1]?.heads.count == 1)
        // The stream's window alone does not help: the connection's is spent.
        peer.send(H2.windowUpdate(stream: 1, 50000))
        #expect(peer.take() == [])
        peer.send(H2.windowUpdate(stream: 0, 10000))
        events = peer.take()
        #expect(events == [.data(stream: 1, bytes: Array(body[65535 ..< 75535]), endStream: false)])
        peer.send(H2.windowUpdate(stream: 0, 100_000))
        events = peer.take()
        data = events.compactMap { if case let .data(_, bytes, end) = $0 { (bytes.count, end) } else { nil } }
        #expect(data.map { $0.0 } == [16384, 24465 - 16384])
        #expect(data.map { $0.1 } == [false, true])
        #expect(peer.events.streams[1]?.body == body)
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    @Test func initialWindowSizeChangesApplyToOpenStreams() throws {
        var peer = connectedPeer()
        peer.send(H2.windowUpdate(stream: 0, 1_000_000))
        peer.send(peer.headers(1, H2.request("GET", "/1"), endStream: true))
        let one = pattern(100_000)
        peer.respond(response(["HTTP/1.1 200 OK", "Content-Length: 100000"], one))
        #expect(peer.take().streams[1]?.body.count == 65535)
        // §6.9.2: the difference applies to every open stream's window.
        peer.send(H2.settings([(H2Setting.initialWindowSize, 100_000)]))
        var events = peer.take()
        #expect(events.contains(.settingsAck))
        #expect(events.streams[1]?.body == Array(one[65535...]) && events.streams[1]?.ended == true)

        // A new stream starts with the new size; a smaller one can make its window negative.
        peer.send(peer.headers(3, H2.request("GET", "/3"), endStream: true))
        let three = pattern(150_000, seed: 3)
        peer.respond(response(["HTTP/1.1 200 OK", "Content-Length: 150000"], three))
        #expect(peer.take().streams[3]?.body.count == 100_000)
        peer.send(H2.settings([(H2Setting.initialWindowSize, 0)]))
        #expect(peer.take() == [.settingsAck])
        peer.send(H2.windowUpdate(stream: 3, 100_000))
        #expect(peer.take() == [], "the window is back to 0, not open")
        peer.send(H2.windowUpdate(stream: 3, 20000))
        events = peer.take()
        #expect(events.streams[3]?.body == Array(three[100_000 ..< 120_000]) && events.streams[3]?.ended == false)
        peer.send(H2.settings([(H2Setting.initialWindowSize, 30000)]))
        events = peer.take()
        #expect(events.streams[3]?.body == Array(three[120_000...]) && events.streams[3]?.ended == true)
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    @Test func aLargerMaxFrameSizeLetsDataFramesGrow() {
        var peer = connectedPeer(settings: [(H2Setting.maxFrameSize, 40000), (H2Setting.initialWindowSize, 1_000_000)])
        peer.send(H2.windowUpdate(stream: 0, 1_000_000))
        peer.send(peer.headers(1, H2.request("GET", "/1"), endStream: true))
        let body = pattern(100_000)
        peer.respond(response(["HTTP/1.1 200 OK", "Content-Length: 100000"], body))
        let events = peer.take()
        let sizes = events.compactMap { if case let .data(_, bytes, _) = $0 { bytes.count } else { nil } }
        #expect(sizes == [40000, 40000, 20000])
        #expect(events.streams[1]?.body == body && events.streams[1]?.ended == true)
        #expect(peer.violations == [])
    }

    @Test func respondTakesNoMoreThanTheResponseRoom() {
        var limits = HTTP2Gateway.Limits()
        limits.responseBufferLimit = 1000
        // The app's stream windows start closed: nothing can go out.
        var peer = connectedPeer(limits: limits, settings: [(H2Setting.initialWindowSize, 0)])
        peer.send(peer.headers(1, H2.request("GET", "/1"), endStream: true))
        let body = pattern(5000)
        let bytes = response(["HTTP/1.1 200 OK", "Content-Length: 5000"], body)
        #expect(peer.gateway.responseRoom == 1000)
        var taken = peer.respond(bytes)
        #expect(taken < bytes.count)
        // The head's bytes wait nowhere: only the body counts against the room.
        #expect(taken >= 1000 && taken <= 1000 + bytes.count - body.count, "took \(taken)")
        #expect(peer.gateway.responseRoom == 0)
        #expect(peer.respond(Array(bytes[taken...])) == 0)
        // Bounded: each round opens the window by 700 and takes what fits.
        for _ in 0 ..< 50 where taken < bytes.count {
            let room = peer.gateway.responseRoom
            let n = peer.respond(Array(bytes[taken...]))
            #expect(n <= max(room, 0))
            taken += n
            peer.send(H2.windowUpdate(stream: 1, 700))
        }
        #expect(taken == bytes.count)
        peer.send(H2.windowUpdate(stream: 1, 5000))
        #expect(peer.events.streams[1]?.body == body && peer.events.streams[1]?.ended == true)
        #expect(peer.gateway.responseRoom == 1000)
        #expect(peer.violations == [])
    }

    @Test func respondTakesLessThanOfferedWhenTheDefaultRoomRunsOut() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("GET", "/1"), endStream: true))
        let body = pattern(400_000)
        let bytes = response(["HTTP/1.1 200 OK", "Content-Length: 400000"], body)
        var taken = peer.respond(bytes)
        #expect(taken < bytes.count)
        #expect(peer.gateway.responseRoom == 0)
        for _ in 0 ..< 100 where taken < bytes.count {
            peer.send(H2.windowUpdate(stream: 0, 65535) + H2.windowUpdate(stream: 1, 65535))
            taken += peer.respond(Array(bytes[taken...]))
        }
        #expect(taken == bytes.count)
        for _ in 0 ..< 20 where peer.events.streams[1]?.ended != true {
            peer.send(H2.windowUpdate(stream: 0, 65535) + H2.windowUpdate(stream: 1, 65535))
        }
        #expect(peer.events.streams[1]?.body == body && peer.events.streams[1]?.ended == true)
        #expect(peer.violations == [])
    }

    /// The connection's window comes back at once; a stream's only as its bytes go on.
    @Test func uploadWindowsComeBackAsTheBytesGoOn() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/one")))
        peer.send(peer.headers(3, H2.request("POST", "/three")))
        _ = peer.takeRequests()
        peer.send(H2.data(stream: 3, pattern(1000)))
        #expect(peer.take() == [.windowUpdate(stream: 0, increment: 1000)])
        #expect(peer.takeRequests().isEmpty)
        peer.send(H2.data(stream: 1, pattern(10)))
        var events = peer.take()
        #expect(events.credit(0) == 10 && events.credit(1) == 10 && events.credit(3) == 0 && events.count == 2)
        #expect(peer.takeRequests() == h2Bytes("a\r\n") + pattern(10) + h2Bytes("\r\n"))
        peer.send(H2.data(stream: 1, [], endStream: true))
        events = peer.take()
        #expect(events == [.windowUpdate(stream: 3, increment: 1000)])
        #expect(peer.takeRequests() == h2Bytes("0\r\n\r\nPOST /three HTTP/1.1\r\nhost: example.com\r\ntransfer-encoding: chunked\r\n\r\n3e8\r\n")
            + pattern(1000) + h2Bytes("\r\n"))
        peer.send(H2.data(stream: 3, pattern(500), endStream: true))
        events = peer.take()
        #expect(events.credit(0) == 500 && events.credit(3) == 0)
        #expect(peer.violations == [])
    }

    @Test func paddingIsCreditedBackAtOnce() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/one")))
        peer.send(peer.headers(3, H2.request("POST", "/three")))
        _ = peer.takeRequests()
        peer.send(H2.data(stream: 3, h2Bytes("abc"), padding: 20))
        var events = peer.take()
        #expect(events.credit(0) == 24)
        #expect(events.credit(3) == 21)
        peer.send(H2.data(stream: 1, [], endStream: true))
        events = peer.take()
        #expect(events.credit(3) == 3)
        #expect(peer.takeRequestText().hasSuffix("transfer-encoding: chunked\r\n\r\n3\r\nabc\r\n"))
    }

    @Test func uploadPastAStreamWindowIsAFlowControlError() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/blocker")))
        peer.send(peer.headers(3, H2.request("POST", "/three")))
        _ = peer.takeRequests()
        for n in [16384, 16384, 16384, 16383] {
            peer.send(H2.data(stream: 3, pattern(n)))
        }
        var events = peer.take()
        #expect(events.withoutWindowUpdates == [])
        #expect(events.credit(0) == 65535 && events.credit(3) == 0)
        peer.send(H2.data(stream: 3, [1]))
        events = peer.take()
        #expect(events.resets == [.rst(stream: 3, code: H2Code.flowControlError)])
        #expect(peer.error == nil)
        peer.send(peer.headers(5, H2.request("GET", "/five"), endStream: true) + H2.data(stream: 1, [], endStream: true))
        #expect(peer.takeRequestText() == "0\r\n\r\nGET /five HTTP/1.1\r\nhost: example.com\r\n\r\n")
        #expect(peer.error == nil)
    }

    // MARK: 5. Stream errors

    struct StreamErrorCase: Sendable, CustomStringConvertible {
        enum Step: Sendable {
            case headers([HPACKHeader], endStream: Bool)
            case data(String, endStream: Bool)
            case raw([UInt8])
        }

        var name: String
        var steps: [Step]
        var code: UInt32 = H2Code.protocolError
        var description: String { name }

        static func bad(_ name: String, _ fields: [HPACKHeader]) -> StreamErrorCase {
            StreamErrorCase(name: name, steps: [.headers(fields, endStream: true)])
        }

        static func get(_ extra: [HPACKHeader]) -> [HPACKHeader] { H2.request("GET", "/bad", extra) }

        static func post(_ extra: [HPACKHeader] = []) -> Step { .headers(H2.request("POST", "/bad", extra), endStream: false) }

        static let all: [StreamErrorCase] = [
            bad("an uppercase field name", get([header("X-Upper", "1")])),
            bad("connection", get([header("connection", "keep-alive")])),
            bad("keep-alive", get([header("keep-alive", "timeout=5")])),
            bad("proxy-connection", get([header("proxy-connection", "keep-alive")])),
            bad("transfer-encoding", get([header("transfer-encoding", "chunked")])),
            bad("upgrade", get([header("upgrade", "websocket")])),
            bad("te: gzip", get([header("te", "gzip")])),
            bad("te: trailers, deflate", get([header("te", "trailers, deflate")])),
            bad("a pseudo-field after a regular one",
                [header(":method", "GET"), header(":scheme", "https"), header(":authority", "example.com"), header("accept", "*/*"),
                 header(":path", "/bad")]),
            bad("two :method", get([header(":method", "POST")])),
            bad("two :path", get([header(":path", "/other")])),
            bad("two :scheme", get([header(":scheme", "http")])),
            bad("two :authority", get([header(":authority", "other.example")])),
            bad("an unknown pseudo-field", get([header(":foo", "bar")])),
            bad("a response pseudo-field", get([header(":status", "200")])),
            bad(":protocol without SETTINGS_ENABLE_CONNECT_PROTOCOL", get([header(":protocol", "websocket")])),
            bad("no :method", [header(":scheme", "https"), header(":authority", "example.com"), header(":path", "/bad")]),
            bad("no :scheme", [header(":method", "GET"), header(":authority", "example.com"), header(":path", "/bad")]),
            bad("no :path", [header(":method", "GET"), header(":scheme", "https"), header(":authority", "example.com")]),
            bad("an empty :path", H2.request("GET", "")),
            bad("a space in :path", H2.request("GET", "/a b")),
            bad("CR in a value", get([header("x", "a\rb")])),
            bad("LF in a value", get([header("x", "a\nb")])),
            bad("CR LF in a value", get([header("x", "a\r\nx-injected: 1")])),
            bad("NUL in a value", get([header("x", "a\u{0}b")])),
            bad("LF in :authority", H2.request("GET", "/bad", authority: "example.com\nx: y")),
            bad("a leading space in a value", get([header("x", " a")])),
            bad("a trailing space in a value", get([header("x", "a ")])),
            bad("a trailing tab in a value", get([header("x", "a\t")])),
            bad("an empty field name", get([header("", "x")])),
            bad("a space in a field name", get([header("x y", "1")])),
            bad("a colon inside a field name", get([header("x:y", "1")])),
            bad("content-length that is not a number", get([header("content-length", "abc")])),
            bad("two different content-lengths", [header(":method", "POST"), header(":scheme", "https"), header(":authority", "e"),
                                                   header(":path", "/bad"), header("content-length", "5"), header("content-length", "6")]),
            bad("content-length 5 with END_STREAM on HEADERS", H2.request("POST", "/bad", [header("content-length", "5")])),
            StreamErrorCase(name: "DATA short of content-length",
                            steps: [post([header("content-length", "5")]), .data("abc", endStream: true)]),
            StreamErrorCase(name: "DATA past content-length",
                            steps: [post([header("content-length", "2")]), .data("abc", endStream: true)]),
            StreamErrorCase(name: "DATA past content-length before END_STREAM",
                            steps: [post([header("content-length", "3")]), .data("ab", endStream: false), .data("cd", endStream: false)]),
            StreamErrorCase(name: "trailers without END_STREAM",
                            steps: [post(), .data("x", endStream: false), .headers([header("x-t", "1")], endStream: false)]),
            StreamErrorCase(name: "trailers with a pseudo-field",
                            steps: [post(), .data("x", endStream: false), .headers([header(":path", "/x")], endStream: true)]),
            StreamErrorCase(name: "trailers with CR LF in a value",
                            steps: [post(), .data("x", endStream: false), .headers([header("x-t", "a\r\nx-injected: 1")], endStream: true)]),
            StreamErrorCase(name: "trailers with an uppercase name",
                            steps: [post(), .data("x", endStream: false), .headers([header("X-T", "1")], endStream: true)]),
            StreamErrorCase(name: "trailers with a connection-specific field",
                            steps: [post(), .data("x", endStream: false), .headers([header("connection", "close")], endStream: true)]),
            StreamErrorCase(name: "WINDOW_UPDATE of 0 on a stream",
                            steps: [.headers(get([]), endStream: true), .raw(H2.windowUpdate(stream: 3, 0))]),
            StreamErrorCase(name: "a stream window past 2^31-1",
                            steps: [.headers(get([]), endStream: true), .raw(H2.windowUpdate(stream: 3, 0x7FFF_FFFF))],
                            code: H2Code.flowControlError),
            StreamErrorCase(name: "PRIORITY of 4 bytes",
                            steps: [.headers(get([]), endStream: true), .raw(H2.frame(H2Type.priority, stream: 3, [0, 0, 0, 0]))],
                            code: H2Code.frameSizeError),
            StreamErrorCase(name: "DATA after END_STREAM",
                            steps: [.headers(get([]), endStream: true), .data("late", endStream: false)], code: H2Code.streamClosed),
            StreamErrorCase(name: "HEADERS after END_STREAM",
                            steps: [.headers(get([]), endStream: true), .headers([header("x-late", "1")], endStream: true)],
                            code: H2Code.streamClosed),
        ]
    }

    /// A malformed request on stream 3, waiting behind stream 1's body: RST_STREAM
    /// with the right code, nothing of it goes on, and streams 1 and 5 are served.
    @Test(arguments: StreamErrorCase.all, someSplits)
    func streamErrors(_ bad: StreamErrorCase, split: H2Split) {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/blocker")))
        #expect(peer.takeRequestText() == "POST /blocker HTTP/1.1\r\nhost: example.com\r\ntransfer-encoding: chunked\r\n\r\n")
        var script: [UInt8] = []
        for step in bad.steps {
            switch step {
            case let .headers(fields, endStream): script += peer.headers(3, fields, endStream: endStream)
            case let .data(text, endStream): script += H2.data(stream: 3, text, endStream: endStream)
            case let .raw(bytes): script += bytes
            }
        }
        script += peer.headers(5, H2.request("GET", "/ok"), endStream: true)
        script += H2.data(stream: 1, "b", endStream: true)
        peer.send(script, split: split)
        #expect(peer.error == nil)
        let events = peer.take()
        #expect(events.withoutWindowUpdates == [.rst(stream: 3, code: bad.code)])
        let requests = peer.takeRequestText()
        #expect(requests == "1\r\nb\r\n0\r\n\r\nGET /ok HTTP/1.1\r\nhost: example.com\r\n\r\n")
        #expect(!requests.contains("injected"))
        // The streams after it still get their responses.
        peer.respond(response(["HTTP/1.1 200 OK", "Content-Length: 1"], h2Bytes("1")) + response(["HTTP/1.1 200 OK", "Content-Length: 1"], h2Bytes("5")))
        let streams = peer.take().streams
        #expect(streams[1]?.bodyText == "1" && streams[1]?.ended == true)
        #expect(streams[5]?.bodyText == "5" && streams[5]?.ended == true)
        #expect(streams[3] == nil)
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    /// Trailers whose body is going on chunked are checked like any field section
    /// (§8.1.1, §8.2.1): they must not carry a line break, an uppercase name or a
    /// connection field into the HTTP/1.1 trailer section. The stream is reset
    /// and its request cut where its bytes end (no last chunk: the origin must
    /// not take it for whole); the next request follows.
    @Test(arguments: [
        [header("x-t", "a\r\nx-injected: 1")], [header("x-t", "a\u{0}b")], [header("X-Injected", "1")], [header("connection", "close")],
        [header("x-t", "a\nx-injected: 1")],
    ])
    func malformedTrailersOfABodyGoingOnAreAStreamError(trailers: [HPACKHeader]) throws {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/t", [header("te", "trailers")])))
        peer.send(H2.data(stream: 1, "abc"))
        peer.send(peer.headers(1, trailers, endStream: true))
        peer.send(peer.headers(3, H2.request("GET", "/next"), endStream: true))
        #expect(peer.error == nil)
        let events = peer.take()
        #expect(events.resets == [.rst(stream: 1, code: H2Code.protocolError)])
        let pieces = peer.takeRequestPieces()
        #expect(pieces.count == 2, "\(pieces)")
        #expect(pieces.first?.hasPrefix("POST /t HTTP/1.1\r\n") == true && pieces.first?.hasSuffix("\r\n\r\n3\r\nabc\r\n") == true, "\(pieces)")
        let parsed = h1Requests(Array((pieces.last ?? "").utf8))
        #expect(parsed.error == nil && parsed.rest == 0)
        #expect(parsed.requests.map(\.line) == ["GET /next HTTP/1.1"])
        let all = pieces.joined()
        #expect(!all.lowercased().contains("injected"))
        #expect(!all.utf8.contains(0))
    }

    @Test(arguments: H2Split.all)
    func hpackStaysInStepAcrossRejectedStreams(split: H2Split) {
        var peer = connectedPeer(split: split)
        // Stream 1 adds "x-one: 1" to the dynamic table and is malformed; stream 3 refers to it.
        let one = peer.block(H2.request("GET", "/1")) + H2.hpackLiteralIndexed("x-one", "1") + peer.block([header("X-Upper", "1")])
        let three = peer.block(H2.request("GET", "/3")) + H2.hpackIndexed(62)
        peer.send(H2.headers(stream: 1, block: one, endStream: true) + H2.headers(stream: 3, block: three, endStream: true))
        #expect(peer.take() == [.rst(stream: 1, code: H2Code.protocolError)])
        #expect(peer.takeRequestText() == "GET /3 HTTP/1.1\r\nhost: example.com\r\nx-one: 1\r\n\r\n")
        #expect(peer.error == nil)
    }

    @Test func streamsPastTheLimitAreRefused() {
        var peer = connectedPeer()
        var script: [UInt8] = []
        for i in 0 ..< 100 { script += peer.headers(UInt32(2 * i + 1), H2.request("GET", "/\(2 * i + 1)"), endStream: true) }
        peer.send(script)
        #expect(peer.gateway.openStreams == 100)
        _ = peer.takeRequests()
        // The 101st is refused, its header block still read: it adds to the dynamic table.
        peer.send(H2.headers(stream: 201, block: peer.block(H2.request("GET", "/201")) + H2.hpackLiteralIndexed("x-refused", "kept"),
                             endStream: true))
        #expect(peer.take() == [.rst(stream: 201, code: H2Code.refusedStream)])
        #expect(peer.takeRequests().isEmpty)
        #expect(peer.gateway.openStreams == 100)
        // One stream done makes room for another.
        peer.respond(response(["HTTP/1.1 200 OK", "Content-Length: 0"]))
        #expect(peer.gateway.openStreams == 99)
        peer.send(H2.headers(stream: 203, block: peer.block(H2.request("GET", "/203")) + H2.hpackIndexed(62), endStream: true))
        #expect(peer.takeRequestText() == "GET /203 HTTP/1.1\r\nhost: example.com\r\nx-refused: kept\r\n\r\n")
        #expect(peer.take().streams[203] == nil)
        #expect(peer.gateway.openStreams == 100)
        #expect(peer.error == nil)
    }

    /// A header block in HEADERS and CONTINUATIONs of at most 16,384 bytes each (SETTINGS_MAX_FRAME_SIZE's default).
    private func framed(_ stream: UInt32, _ block: [UInt8], endStream: Bool) -> [UInt8] {
        var pieces: [[UInt8]] = []
        var rest = block[...]
        repeat {
            pieces.append(Array(rest.prefix(16384)))
            rest = rest.dropFirst(16384)
        } while !rest.isEmpty
        var bytes = H2.headers(stream: stream, block: pieces[0], endStream: endStream, endHeaders: pieces.count == 1)
        for (i, piece) in pieces.enumerated().dropFirst() {
            bytes += H2.continuation(stream: stream, block: piece, endHeaders: i == pieces.count - 1)
        }
        return bytes
    }

    /// §10.5.1: a request whose fields add up to more than the
    /// SETTINGS_MAX_HEADER_LIST_SIZE Sluice announced (a cookie jar that
    /// grew) gets 431 on its stream, as an HTTP/1.1 app gets for the same
    /// head; its block is decoded all the same, so the tables stay in step
    /// and the connection goes on. It was a GOAWAY that ended every stream.
    @Test(arguments: [H2Split.whole, .random(7)])
    func aHeaderListTooLargeIsAnswered431(split: H2Split) {
        var peer = connectedPeer(split: split)
        let big = peer.block(H2.request("GET", "/big") + [header("cookie", String(repeating: "c", count: 70_000))])
            + H2.hpackLiteralIndexed("x-kept", "yes")
        peer.send(framed(1, big, endStream: true))
        #expect(peer.take().on(1).withoutWindowUpdates
            == [.headers(stream: 1, fields: [H2Field(":status", "431"), H2Field("content-length", "0")], endStream: true)])
        #expect(peer.takeRequests().isEmpty)
        // The field the refused block added to the table is there for the next request.
        peer.send(H2.headers(stream: 3, block: peer.block(H2.request("GET", "/next")) + H2.hpackIndexed(62), endStream: true))
        #expect(peer.takeRequestText() == "GET /next HTTP/1.1\r\nhost: example.com\r\nx-kept: yes\r\n\r\n")
        #expect(peer.error == nil)
        #expect(peer.violations == [])
    }

    /// What the HTTP/1.1 head Sluice makes of a request may break its
    /// parser's limits (HTTPParserLimits): a request line over 8 KiB gets
    /// 414, more than 100 fields 431, on their streams, as over HTTP/1.1;
    /// they were reset as malformed (PROTOCOL_ERROR), which names no cause.
    /// A request with a body to come is also asked to stop (RST_STREAM
    /// NO_ERROR, §8.1).
    @Test func requestsOverTheHeadLimitsAreAnsweredWithTheirStatus() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("GET", "/" + String(repeating: "u", count: 9000)), endStream: true))
        #expect(peer.take().on(1).withoutWindowUpdates
            == [.headers(stream: 1, fields: [H2Field(":status", "414"), H2Field("content-length", "0")], endStream: true)])
        let many = (0 ..< 150).map { header("x-field-\($0)", "v") }
        peer.send(peer.headers(3, H2.request("POST", "/upload") + many))
        #expect(peer.take().on(3).withoutWindowUpdates
            == [.headers(stream: 3, fields: [H2Field(":status", "431"), H2Field("content-length", "0")], endStream: true),
                .rst(stream: 3, code: H2Code.noError)])
        // The body the app had already sent is read past.
        peer.send(H2.data(stream: 3, h2Bytes("abc"), endStream: true) + peer.headers(5, H2.request("GET", "/5"), endStream: true))
        #expect(peer.takeRequestText() == "GET /5 HTTP/1.1\r\nhost: example.com\r\n\r\n")
        #expect(peer.take().goAways == [])
        #expect(peer.error == nil)
    }

    /// A header block over four times the announced list size ends the
    /// connection (ENHANCE_YOUR_CALM): decoding it to keep the tables in
    /// step is work an app could make without bound.
    @Test func aHeaderBlockBeyondAllReasonEndsTheConnection() {
        var peer = connectedPeer()
        let huge = peer.block(H2.request("GET", "/huge") + (0 ..< 10).map { header("x-\($0)", String(repeating: "h", count: 60_000)) })
        peer.send(framed(1, huge, endStream: true))
        let goAways = peer.take().goAways
        #expect(goAways.count == 1 && goAways.first.map { if case let .goAway(_, code, _) = $0 { code == H2Code.enhanceYourCalm } else { false } } == true, "\(goAways)")
        #expect(peer.error?.code == .enhanceYourCalm)
    }

    @Test(arguments: H2Split.all)
    func connectIsAnsweredHereWith501(split: H2Split) {
        var peer = connectedPeer(split: split)
        peer.send(peer.headers(1, [header(":method", "CONNECT"), header(":authority", "example.com:443")])
            + peer.headers(3, H2.request("GET", "/after"), endStream: true))
        let events = peer.take()
        #expect(events.on(1).withoutWindowUpdates.first
            == .headers(stream: 1, fields: [H2Field(":status", "501"), H2Field("content-length", "0")], endStream: true))
        #expect(events.goAways == [])
        #expect(peer.takeRequestText() == "GET /after HTTP/1.1\r\nhost: example.com\r\n\r\n")
        peer.respond(response(["HTTP/1.1 200 OK", "Content-Length: 2"], h2Bytes("ok")))
        let streams = peer.take().streams
        #expect(streams[3]?.bodyText == "ok" && streams[3]?.ended == true)
        #expect(streams[1] == nil)
        #expect(peer.error == nil)
        #expect(peer.violations == [])
    }

    /// Frames a server must read past: unknown types, unknown settings, PRIORITY
    /// (even on an idle stream), WINDOW_UPDATE on a closed stream.
    @Test(arguments: H2Split.all)
    func framesToIgnore(split: H2Split) {
        var peer = connectedPeer(split: split)
        peer.send(H2.frame(0x20, flags: 0xFF, stream: 0, [1, 2, 3]) + H2.frame(0x21, stream: 1, [])
            + H2.settings([(0x77, 1), (H2Setting.headerTableSize, 0)])
            + H2.priority(stream: 9, dependsOn: 0) + peer.headers(3, H2.request("GET", "/3"), endStream: true)
            + H2.priority(stream: 3, dependsOn: 1))
        #expect(peer.take() == [.settingsAck])
        #expect(peer.takeRequestText() == "GET /3 HTTP/1.1\r\nhost: example.com\r\n\r\n")
        peer.respond(response(["HTTP/1.1 200 OK", "Content-Length: 0"]))
        _ = peer.take()
        peer.send(H2.windowUpdate(stream: 3, 100) + H2.priority(stream: 3))
        #expect(peer.take() == [])
        #expect(peer.error == nil)
        #expect(peer.violations == [])
    }

    /// §5.1: "An endpoint MUST ignore frames that it receives on closed streams
    /// after it has sent a RST_STREAM frame." The app may have sent the rest of
    /// a request before the reset reached it.
    @Test func framesOnAStreamSluiceResetAreIgnored() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/bad", [header("X-Upper", "1")])))
        #expect(peer.take() == [.rst(stream: 1, code: H2Code.protocolError)])
        peer.send(H2.data(stream: 1, "abc"))
        peer.send(peer.headers(1, [header("x-trailer", "1")], endStream: true))
        peer.send(peer.headers(3, H2.request("GET", "/3"), endStream: true))
        let events = peer.take()
        #expect(peer.error == nil, "a trailer section in flight when Sluice reset the stream ended the connection")
        #expect(events.goAways == [])
        #expect(events.resets == [], "frames on a stream Sluice reset must be ignored, not answered")
        #expect(events.credit(0) == 3)
        #expect(peer.takeRequestText() == "GET /3 HTTP/1.1\r\nhost: example.com\r\n\r\n")
    }

    /// Sluice resetting a stream whose fixed-length body is on its way to the
    /// session (here for a WINDOW_UPDATE of 0, §6.9) leaves the session waiting
    /// for bytes the app will never send: the connection cannot go on.
    @Test(arguments: [
        H2.windowUpdate(stream: 1, 0), H2.frame(H2Type.priority, stream: 1, [0, 0, 0]), H2.windowUpdate(stream: 1, 0x7FFF_FFFF),
    ])
    func sluiceResettingAFixedLengthBodyInProgressDoesNotWedgeTheConnection(frame: [UInt8]) {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/up", [header("content-length", "10")])))
        peer.send(H2.data(stream: 1, "01234"))
        _ = peer.take()
        #expect(peer.takeRequestText() == "POST /up HTTP/1.1\r\nhost: example.com\r\ncontent-length: 10\r\n\r\n01234")
        peer.send(frame)
        peer.send(peer.headers(3, H2.request("GET", "/3"), endStream: true))
        let events = peer.take()
        let requests = peer.takeRequestText()
        // The stream is gone for the app, which sends no more of it: only ending
        // the connection unblocks the session.
        #expect(!events.goAways.isEmpty,
                "stream 1 ended (\(events.withoutWindowUpdates)) with 5 of its 10 body bytes sent; the session waits for the rest forever and GET /3 never goes on")
        #expect(!requests.contains("GET /3"), "GET /3 would be read as stream 1's body")
    }

    // MARK: 6. The app's RST_STREAM

    @Test(arguments: H2Split.all)
    func appResetOfAWaitingStream(split: H2Split) {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/up")))
        _ = peer.takeRequests()
        peer.send(peer.headers(3, H2.request("POST", "/3")) + H2.data(stream: 3, "three") + H2.rst(stream: 3, H2Code.cancel)
            + peer.headers(5, H2.request("GET", "/5"), endStream: true) + H2.data(stream: 1, "z", endStream: true), split: split)
        #expect(peer.takeRequestText() == "1\r\nz\r\n0\r\n\r\nGET /5 HTTP/1.1\r\nhost: example.com\r\n\r\n")
        // §5.4.2: no RST_STREAM in answer to one.
        #expect(peer.take().withoutWindowUpdates == [])
        #expect(peer.gateway.openStreams == 2)
        peer.respond(response(["HTTP/1.1 200 OK", "Content-Length: 1"], h2Bytes("1")) + response(["HTTP/1.1 200 OK", "Content-Length: 1"], h2Bytes("5")))
        let streams = peer.take().streams
        #expect(streams[1]?.bodyText == "1" && streams[5]?.bodyText == "5" && streams[3] == nil)
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.error == nil)
        #expect(peer.violations == [])
    }

    @Test(arguments: H2Split.all)
    func appResetWhileAwaitingTheResponse(split: H2Split) {
        var peer = connectedPeer()
        for id: UInt32 in [1, 3, 5, 7] { peer.send(peer.headers(id, H2.request("GET", "/\(id)"), endStream: true)) }
        _ = peer.takeRequests()
        peer.send(H2.rst(stream: 1, H2Code.cancel) + H2.rst(stream: 5, H2Code.cancel))
        #expect(peer.take() == [])
        let responses = response(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"], h2Bytes("5\r\nfirst\r\n0\r\n\r\n"))
            + response(["HTTP/1.1 200 OK", "Content-Length: 5"], h2Bytes("three"))
            + response(["HTTP/1.1 100 Continue"]) + response(["HTTP/1.1 200 OK", "Content-Length: 4"], h2Bytes("five"))
            + response(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"], h2Bytes("5\r\nseven\r\n0\r\n\r\n"))
        #expect(peer.respond(responses, split: split) == responses.count)
        let events = peer.take()
        let streams = events.streams
        #expect(streams[1] == nil && streams[5] == nil)
        #expect(streams[3]?.heads == [[H2Field(":status", "200"), H2Field("content-length", "5")]])
        #expect(streams[3]?.bodyText == "three" && streams[3]?.ended == true)
        #expect(streams[7]?.heads == [[H2Field(":status", "200")]])
        #expect(streams[7]?.bodyText == "seven" && streams[7]?.ended == true)
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    @Test func appResetInTheMiddleOfAResponse() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("GET", "/1"), endStream: true) + peer.headers(3, H2.request("GET", "/3"), endStream: true))
        let bytes = response(["HTTP/1.1 200 OK", "Content-Length: 100000"], pattern(100_000))
            + response(["HTTP/1.1 200 OK", "Content-Length: 2"], h2Bytes("ok"))
        #expect(peer.respond(bytes) == bytes.count)
        var streams = peer.take().streams
        #expect(streams[1]?.body.count == 65535)
        #expect(streams[3]?.heads.count == 1 && streams[3]?.body == [])
        peer.send(H2.rst(stream: 1, H2Code.cancel))
        #expect(peer.take() == [])
        #expect(peer.gateway.responseRoom == 256 * 1024 - 2, "the dropped response's waiting bytes still count")
        peer.send(H2.windowUpdate(stream: 0, 100))
        #expect(peer.gateway.responseRoom == 256 * 1024)
        streams = peer.take().streams
        #expect(streams[1] == nil)
        #expect(streams[3]?.bodyText == "ok" && streams[3]?.ended == true)
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.violations == [])
    }

    /// A request the app resets while its body goes on is cut where its
    /// bytes end: not finished with a last chunk, which would hand the
    /// origin a cancelled upload as a whole, shorter one.
    @Test func appResetOfTheStreamWhoseChunkedBodyIsGoingOn() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/up")) + H2.data(stream: 1, "abc"))
        peer.send(H2.rst(stream: 1, H2Code.cancel) + peer.headers(3, H2.request("GET", "/3"), endStream: true))
        #expect(peer.error == nil)
        #expect(peer.takeRequestPieces() == [
            "POST /up HTTP/1.1\r\nhost: example.com\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n",
            "GET /3 HTTP/1.1\r\nhost: example.com\r\n\r\n",
        ])
        _ = peer.take()
        // The session still answers stream 1's request: that answer is dropped.
        peer.respond(response(["HTTP/1.1 400 Bad Request", "Content-Length: 3"], h2Bytes("bad"))
            + response(["HTTP/1.1 200 OK", "Content-Length: 2"], h2Bytes("ok")))
        let streams = peer.take().streams
        #expect(streams[1] == nil)
        #expect(streams[3]?.bodyText == "ok" && streams[3]?.ended == true)
        #expect(peer.gateway.openStreams == 0)
    }

    /// The session may answer before the request's body has all gone (a 413, say).
    @Test func aResponseBeforeTheRequestBodyEnds() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/up")) + H2.data(stream: 1, "abc"))
        _ = peer.takeRequests()
        _ = peer.take()
        peer.respond(response(["HTTP/1.1 413 Content Too Large", "Content-Length: 4"], h2Bytes("nope")))
        var streams = peer.take().streams
        #expect(streams[1]?.heads == [[H2Field(":status", "413"), H2Field("content-length", "4")]])
        #expect(streams[1]?.bodyText == "nope" && streams[1]?.ended == true)
        #expect(peer.gateway.openStreams == 1)
        // Sluice is half-closed (local): the app's DATA is still welcome.
        peer.send(H2.data(stream: 1, "more", endStream: true) + peer.headers(3, H2.request("GET", "/3"), endStream: true))
        #expect(peer.take().withoutWindowUpdates == [])
        #expect(peer.takeRequestText() == "4\r\nmore\r\n0\r\n\r\nGET /3 HTTP/1.1\r\nhost: example.com\r\n\r\n")
        peer.respond(response(["HTTP/1.1 200 OK", "Content-Length: 2"], h2Bytes("ok")))
        streams = peer.take().streams
        #expect(streams[3]?.bodyText == "ok" && streams[3]?.ended == true)
        #expect(peer.gateway.openStreams == 0)
        #expect(peer.error == nil)
        #expect(peer.violations == [])
    }

    // MARK: 7. GOAWAY

    @Test(arguments: H2Split.all)
    func appGoAwayLetsOpenStreamsFinish(split: H2Split) {
        var peer = connectedPeer(split: split)
        peer.send(peer.headers(1, H2.request("GET", "/1"), endStream: true) + peer.headers(3, H2.request("GET", "/3"), endStream: true)
            + H2.goAway(last: 0, H2Code.noError, debug: "bye"))
        #expect(peer.gateway.appWentAway)
        #expect(!peer.gateway.wentAway)
        #expect(peer.take() == [])
        #expect(peer.error == nil)
        #expect(peer.takeRequestText() == "GET /1 HTTP/1.1\r\nhost: example.com\r\n\r\nGET /3 HTTP/1.1\r\nhost: example.com\r\n\r\n")
        peer.respond(response(["HTTP/1.1 200 OK", "Content-Length: 1"], h2Bytes("1")) + response(["HTTP/1.1 200 OK", "Content-Length: 1"], h2Bytes("3")),
                     split: split)
        let streams = peer.take().streams
        #expect(streams[1]?.bodyText == "1" && streams[3]?.bodyText == "3" && streams[1]?.ended == true && streams[3]?.ended == true)
        #expect(peer.gateway.openStreams == 0)
    }

    @Test func goAwayNamesTheLastForwardedStreamAndIgnoresNewOnes() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/1", [header("te", "trailers")])))
        peer.send(peer.headers(3, H2.request("GET", "/3"), endStream: true))
        _ = peer.takeRequests()
        peer.gateway.goAway()
        peer.collect()
        #expect(peer.take() == [.goAway(last: 1, code: H2Code.noError, debug: "")])
        #expect(peer.gateway.wentAway)
        peer.gateway.goAway(.internalError, debug: "again")
        peer.collect()
        #expect(peer.take() == [], "one GOAWAY")
        // A new stream after GOAWAY is ignored, its header block still read (it adds to the table).
        peer.send(H2.headers(stream: 5, block: peer.block(H2.request("GET", "/5")) + H2.hpackLiteralIndexed("x-five", "5"), endStream: true))
        #expect(peer.take() == [])
        #expect(peer.error == nil)
        #expect(!peer.takeRequestText().contains("/5"))
        // Stream 1 still finishes: its trailers refer to the entry stream 5 added.
        peer.send(H2.data(stream: 1, "x") + H2.headers(stream: 1, block: H2.hpackIndexed(62), endStream: true))
        #expect(peer.error == nil)
        #expect(peer.takeRequestText().hasPrefix("1\r\nx\r\n0\r\nx-five: 5\r\n\r\n"))
    }

    /// §6.8: the last stream id is the highest Sluice "might have taken some
    /// action on or might yet take action on"; the app retries the ones above
    /// it elsewhere, so they must never go on here.
    @Test func streamsAboveTheGoAwaysLastStreamNeverGoOn() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/1")))
        peer.send(peer.headers(3, H2.request("POST", "/3", [header("content-length", "1")])) + H2.data(stream: 3, "!", endStream: true))
        _ = peer.takeRequests()
        _ = peer.take()
        peer.gateway.goAway()
        peer.collect()
        let goAway = peer.take()
        #expect(goAway.count == 1)
        guard case let .goAway(last, code, _)? = goAway.first else {
            Issue.record("no GOAWAY: \(goAway)")
            return
        }
        #expect(code == H2Code.noError)
        peer.send(H2.data(stream: 1, "", endStream: true))
        let requests = peer.takeRequestText()
        if last < 3 {
            #expect(!requests.contains("POST /3"),
                    "GOAWAY said the last stream was \(last), yet stream 3's request went on afterwards (the app will retry it elsewhere)")
        }
    }

    @Test func goAwayCarriesItsCodeAndDebugData() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("GET", "/1"), endStream: true))
        peer.gateway.goAway(.enhanceYourCalm, debug: "slow down")
        peer.collect()
        #expect(peer.take() == [.goAway(last: 1, code: H2Code.enhanceYourCalm, debug: "slow down")])
        // Open streams still get their responses.
        peer.respond(response(["HTTP/1.1 200 OK", "Content-Length: 1"], h2Bytes("1")))
        #expect(peer.take().streams[1]?.bodyText == "1")
    }

    // MARK: 5. Connection errors

    struct ConnectionErrorCase: Sendable, CustomStringConvertible {
        var name: String
        /// Preface and SETTINGS first (sent whole, before the case's bytes).
        var handshake = true
        /// A GET on this stream before the case's bytes: GOAWAY's last stream is then this one.
        var open: UInt32? = nil
        var bytes: [UInt8]
        var code: UInt32
        var description: String { name }

        static func hpack(_ fields: [HPACKHeader]) -> [UInt8] {
            var encoder = HPACKEncoder()
            return encoder.encode(fields)
        }

        static let get3 = hpack(H2.request("GET", "/3"))

        static let all: [ConnectionErrorCase] = [
            ConnectionErrorCase(name: "an HTTP/1.1 request instead of the preface", handshake: false,
                                bytes: h2Bytes("GET / HTTP/1.1\r\nhost: x\r\n\r\n"), code: H2Code.protocolError),
            ConnectionErrorCase(name: "a preface wrong in its last byte", handshake: false,
                                bytes: h2Bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\r") + H2.settings([]), code: H2Code.protocolError),
            ConnectionErrorCase(name: "PING as the first frame", handshake: false,
                                bytes: H2.preface + H2.ping([0, 0, 0, 0, 0, 0, 0, 0]), code: H2Code.protocolError),
            ConnectionErrorCase(name: "HEADERS as the first frame", handshake: false,
                                bytes: H2.preface + H2.headers(stream: 1, block: hpack(H2.request("GET", "/")), endStream: true),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "a DATA frame over 16384 (its header alone)", open: 1,
                                bytes: H2.frame(H2Type.data, stream: 1, [], declaredLength: 16385), code: H2Code.frameSizeError),
            ConnectionErrorCase(name: "a HEADERS frame over 16384",
                                bytes: H2.headers(stream: 3, block: get3 + Array(repeating: 0x82, count: 16385 - get3.count)),
                                code: H2Code.frameSizeError),
            ConnectionErrorCase(name: "HPACK index 0", bytes: H2.headers(stream: 3, block: get3 + [0x80]), code: H2Code.compressionError),
            ConnectionErrorCase(name: "HPACK index past the tables", bytes: H2.headers(stream: 3, block: get3 + [0xBF]),
                                code: H2Code.compressionError),
            ConnectionErrorCase(name: "HPACK literal cut short", bytes: H2.headers(stream: 3, block: get3 + [0x40, 0x05, 0x61]),
                                code: H2Code.compressionError),
            ConnectionErrorCase(name: "HPACK integer cut short", bytes: H2.headers(stream: 3, block: get3 + [0xFF]),
                                code: H2Code.compressionError),
            ConnectionErrorCase(name: "HPACK table size update above 4096", bytes: H2.headers(stream: 3, block: [0x3F, 0xE2, 0x1F] + get3),
                                code: H2Code.compressionError),
            ConnectionErrorCase(name: "HPACK table size update after a field", bytes: H2.headers(stream: 3, block: get3 + [0x20]),
                                code: H2Code.compressionError),
            ConnectionErrorCase(name: "HPACK garbage in a header block split over CONTINUATION",
                                bytes: H2.headers(stream: 3, block: get3, endHeaders: false) + H2.continuation(stream: 3, block: [0x80], endHeaders: true),
                                code: H2Code.compressionError),
            ConnectionErrorCase(name: "HEADERS on an even stream", bytes: H2.headers(stream: 2, block: get3, endStream: true),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "HEADERS on stream 0", bytes: H2.headers(stream: 0, block: get3, endStream: true),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "a stream id lower than one already opened (never used)", open: 5,
                                bytes: H2.headers(stream: 3, block: get3, endStream: true),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "PUSH_PROMISE from the client", open: 1,
                                bytes: H2.frame(H2Type.pushPromise, flags: H2Flag.endHeaders, stream: 1, H2.be32(2) + get3),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "PING inside a header block",
                                bytes: H2.headers(stream: 3, block: get3, endStream: true, endHeaders: false) + H2.ping([1, 2, 3, 4, 5, 6, 7, 8]),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "DATA inside a header block",
                                bytes: H2.headers(stream: 3, block: get3, endHeaders: false) + H2.data(stream: 3, "x"),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "HEADERS of another stream inside a header block",
                                bytes: H2.headers(stream: 3, block: get3, endHeaders: false) + H2.headers(stream: 5, block: get3),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "CONTINUATION of another stream",
                                bytes: H2.headers(stream: 3, block: get3, endHeaders: false) + H2.continuation(stream: 5, block: [], endHeaders: true),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "an unknown frame type inside a header block",
                                bytes: H2.headers(stream: 3, block: get3, endHeaders: false) + H2.frame(0x20, stream: 0, [1]),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "CONTINUATION with no header block open", open: 1,
                                bytes: H2.continuation(stream: 1, block: get3, endHeaders: true), code: H2Code.protocolError),
            ConnectionErrorCase(name: "SETTINGS of 5 bytes", bytes: H2.frame(H2Type.settings, stream: 0, [0, 3, 0, 0, 0]),
                                code: H2Code.frameSizeError),
            ConnectionErrorCase(name: "SETTINGS ACK with a payload",
                                bytes: H2.frame(H2Type.settings, flags: H2Flag.ack, stream: 0, [0, 3, 0, 0, 0, 1]), code: H2Code.frameSizeError),
            ConnectionErrorCase(name: "SETTINGS on a stream", open: 1, bytes: H2.frame(H2Type.settings, stream: 1, []),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "SETTINGS_ENABLE_PUSH 2", bytes: H2.settings([(H2Setting.enablePush, 2)]), code: H2Code.protocolError),
            ConnectionErrorCase(name: "SETTINGS_INITIAL_WINDOW_SIZE 2^31", bytes: H2.settings([(H2Setting.initialWindowSize, 0x8000_0000)]),
                                code: H2Code.flowControlError),
            ConnectionErrorCase(name: "SETTINGS_MAX_FRAME_SIZE 16383", bytes: H2.settings([(H2Setting.maxFrameSize, 16383)]),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "SETTINGS_MAX_FRAME_SIZE 2^24", bytes: H2.settings([(H2Setting.maxFrameSize, 1 << 24)]),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "the preface's SETTINGS of 7 bytes", handshake: false,
                                bytes: H2.preface + H2.frame(H2Type.settings, stream: 0, [0, 4, 0, 0, 0, 0, 0]), code: H2Code.frameSizeError),
            ConnectionErrorCase(name: "PING of 7 bytes", bytes: H2.frame(H2Type.ping, stream: 0, [1, 2, 3, 4, 5, 6, 7]), code: H2Code.frameSizeError),
            ConnectionErrorCase(name: "PING of 9 bytes", bytes: H2.frame(H2Type.ping, stream: 0, [1, 2, 3, 4, 5, 6, 7, 8, 9]),
                                code: H2Code.frameSizeError),
            ConnectionErrorCase(name: "PING on a stream", open: 1, bytes: H2.frame(H2Type.ping, stream: 1, [1, 2, 3, 4, 5, 6, 7, 8]),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "WINDOW_UPDATE of 3 bytes", bytes: H2.frame(H2Type.windowUpdate, stream: 0, [0, 0, 1]),
                                code: H2Code.frameSizeError),
            ConnectionErrorCase(name: "WINDOW_UPDATE of 5 bytes on a stream", open: 1,
                                bytes: H2.frame(H2Type.windowUpdate, stream: 1, [0, 0, 0, 1, 0]), code: H2Code.frameSizeError),
            ConnectionErrorCase(name: "WINDOW_UPDATE of 0 on the connection", bytes: H2.windowUpdate(stream: 0, 0), code: H2Code.protocolError),
            ConnectionErrorCase(name: "the connection window past 2^31-1", bytes: H2.windowUpdate(stream: 0, 0x7FFF_FFFF),
                                code: H2Code.flowControlError),
            ConnectionErrorCase(name: "WINDOW_UPDATE on an idle stream", open: 1, bytes: H2.windowUpdate(stream: 7, 10),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "RST_STREAM on stream 0", bytes: H2.rst(stream: 0, H2Code.cancel), code: H2Code.protocolError),
            ConnectionErrorCase(name: "RST_STREAM of 3 bytes", open: 1, bytes: H2.frame(H2Type.rstStream, stream: 1, [0, 0, 8]),
                                code: H2Code.frameSizeError),
            ConnectionErrorCase(name: "RST_STREAM on an idle stream", open: 1, bytes: H2.rst(stream: 9, H2Code.cancel),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "DATA on stream 0", bytes: H2.data(stream: 0, "x"), code: H2Code.protocolError),
            ConnectionErrorCase(name: "DATA on an idle stream", open: 1, bytes: H2.data(stream: 3, "x"), code: H2Code.protocolError),
            ConnectionErrorCase(name: "DATA padding longer than its payload", open: 1,
                                bytes: H2.frame(H2Type.data, flags: H2Flag.padded, stream: 1, [10, 1, 2, 3]), code: H2Code.protocolError),
            ConnectionErrorCase(name: "DATA padded with no pad length", open: 1,
                                bytes: H2.frame(H2Type.data, flags: H2Flag.padded, stream: 1, []), code: H2Code.frameSizeError),
            ConnectionErrorCase(name: "HEADERS padding longer than its payload",
                                bytes: H2.frame(H2Type.headers, flags: H2Flag.padded | H2Flag.endHeaders, stream: 3, [200] + get3),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "GOAWAY on a stream", open: 1, bytes: H2.frame(H2Type.goAway, stream: 1, [UInt8](repeating: 0, count: 8)),
                                code: H2Code.protocolError),
            ConnectionErrorCase(name: "GOAWAY of 7 bytes", bytes: H2.frame(H2Type.goAway, stream: 0, [UInt8](repeating: 0, count: 7)),
                                code: H2Code.frameSizeError),
            ConnectionErrorCase(name: "PRIORITY on stream 0", bytes: H2.priority(stream: 0), code: H2Code.protocolError),
        ]
    }

    @Test(arguments: ConnectionErrorCase.all, H2Split.all)
    func connectionErrors(_ bad: ConnectionErrorCase, split: H2Split) {
        var peer = H2Peer(split: split, handshake: false)
        #expect(peer.take() == [.settings(Self.sluiceSettings)])
        if bad.handshake {
            peer.send(H2.preface + H2.settings([]), split: .whole)
            #expect(peer.take() == [.settingsAck])
        }
        if let id = bad.open {
            peer.send(peer.headers(id, H2.request("GET", "/\(id)"), endStream: true), split: .whole)
            #expect(peer.takeRequestText() == "GET /\(id) HTTP/1.1\r\nhost: example.com\r\n\r\n")
        }
        peer.send(bad.bytes)
        let events = peer.take()
        #expect(peer.error?.code.rawValue == bad.code, "threw \(String(describing: peer.error))")
        #expect(peer.receiveThrows == 1)
        #expect(peer.gateway.wentAway)
        #expect(events.goAways.count == 1)
        if case let .goAway(last, code, _)? = events.last {
            #expect(code == bad.code, "GOAWAY \(H2Code.name(code)), expected \(H2Code.name(bad.code))")
            #expect(last == bad.open ?? 0)
        } else {
            Issue.record("GOAWAY is not the last frame: \(events)")
        }
        #expect(peer.takeRequests().isEmpty)
        #expect(peer.violations == [])
    }

    /// A stream that ended both ways cannot be opened again (§5.1, §5.1.1).
    @Test func headersOnAClosedStreamIsAConnectionError() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("GET", "/1"), endStream: true))
        peer.respond(response(["HTTP/1.1 200 OK", "Content-Length: 0"]))
        _ = peer.take()
        #expect(peer.gateway.openStreams == 0)
        peer.send(peer.headers(1, H2.request("GET", "/again"), endStream: true))
        let code = peer.error?.code.rawValue
        #expect(code == H2Code.streamClosed || code == H2Code.protocolError, "threw \(String(describing: peer.error))")
        let events = peer.take()
        #expect(events.goAways.count == 1)
        if case let .goAway(last, goAwayCode, _)? = events.last {
            #expect(goAwayCode == code && last == 1)
        }
        #expect(!peer.takeRequestText().contains("/again"))
    }

    /// DATA in excess of content-length once the body is going on cannot be cut
    /// short in HTTP/1.1: the connection ends, and no excess byte goes on.
    @Test func dataPastContentLengthOfABodyGoingOn() {
        var peer = connectedPeer()
        peer.send(peer.headers(1, H2.request("POST", "/up", [header("content-length", "3")])))
        _ = peer.takeRequests()
        peer.send(H2.data(stream: 1, "abcd", endStream: true))
        let events = peer.take()
        #expect(peer.takeRequests().count <= 3)
        // An RST_STREAM alone would leave the session waiting for the body's 3 bytes.
        #expect(peer.error?.code.rawValue == H2Code.protocolError)
        #expect(events.goAways.count == 1 && events.goAways.first.map { if case let .goAway(_, code, _) = $0 { code == H2Code.protocolError } else { false } } == true,
                "\(events)")
    }
}

