import Testing
import HTTP

@Suite struct ResponseParserTests {
    static let ok = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
    static let chunkedBody = "4\r\nWiki\r\n5;x=\"y\"\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nExpires: never\r\n\r\n"
    static let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody

    @Test(arguments: Split.all)
    func contentLength(split: Split) throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        let trace = try drive(&parser, bytes(Self.ok), split)
        let message = try #require(trace.messages.first)
        #expect(message.head.status == 200)
        #expect(message.head.reason == "OK")
        #expect(message.head.headers["content-type"] == "text/plain")
        #expect(message.body == bytes("hello") && message.ended)
        #expect(message.head.description == "HTTP/1.1 200 OK length=5")
        #expect(parser.pendingResponses == 0)
        #expect(parser.isIdle)
    }

    /// The engine forwards a head's own bytes when they all came in one read:
    /// the parser says where they lie, and says nothing for a head that began
    /// in an earlier read.
    @Test func saysWhereAWholeHeadLies() throws {
        let head = "HTTP/1.1 200 OK\r\nX-Odd:tight\r\nContent-Length: 2\r\n\r\n"
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        parser.expectResponse(to: .get)
        let input = bytes(head + "hi" + head)
        var step = try input.withUnsafeBytes { try parser.parse($0) }
        guard case let .head(_, consumed)? = step else { Issue.record("\(String(describing: step))"); return }
        #expect(consumed == head.utf8.count && parser.lastHeadInInput == 0 ..< head.utf8.count)
        step = try input[consumed...].withUnsafeBytes { try parser.parse($0) }
        guard case .end(2)? = step else { Issue.record("\(String(describing: step))"); return }
        // The second head, split across two reads.
        let second = Array(input[(consumed + 2)...])
        #expect(try second[..<10].withUnsafeBytes { try parser.parse($0) } == nil)
        step = try second[10...].withUnsafeBytes { try parser.parse($0) }
        guard case .head? = step else { Issue.record("\(String(describing: step))"); return }
        #expect(parser.lastHeadInInput == nil)
    }

    @Test(arguments: Split.all)
    func chunkedWithTrailers(split: Split) throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        let trace = try drive(&parser, bytes(Self.chunked), split)
        #expect(trace.messages.first?.body == bytes(Self.chunkedBody))
        #expect(trace.messages.first?.ended == true)
        #expect(trace.totalConsumed == Self.chunked.utf8.count)
    }

    @Test(arguments: Split.all)
    func readUntilClose(split: Split) throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        let input = "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<html>no length</html>"
        let trace = try drive(&parser, bytes(input), split, finish: true)
        let message = try #require(trace.messages.first)
        #expect(message.body == bytes("<html>no length</html>"))
        #expect(message.ended)
        #expect(parser.pendingResponses == 0)
    }

    @Test func readUntilCloseEndsOnlyAtFinish() throws {
        var parser = HTTPResponseParser()
        let trace = try drive(&parser, bytes("HTTP/1.1 200 OK\r\n\r\nabc"), .whole)
        #expect(trace.messages.first?.ended == false)
        #expect(try parser.finish() == .end(consumed: 0))
        #expect(try parser.finish() == nil)
    }

    /// The requests behind a response that ran to the close went again on a
    /// new connection: their responses are read from their heads, a HEAD's
    /// without the body its content-length names.
    @Test(arguments: Split.all)
    func responsesAfterACloseAreReadFromTheirHeads(split: Split) throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        parser.expectResponse(to: .head)
        parser.expectResponse(to: .get)
        _ = try drive(&parser, bytes("HTTP/1.0 200 OK\r\n\r\nto the close"), split)
        #expect(try parser.finish() == .end(consumed: 0))
        parser.startAfterClose()
        #expect(parser.pendingResponses == 2)
        let trace = try drive(&parser, bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"), split)
        #expect(trace.messages.map(\.head.status) == [200, 200])
        #expect(trace.messages.map(\.body) == [[], bytes("abc")])
        #expect(trace.messages.map(\.ended) == [true, true])
        #expect(parser.pendingResponses == 0)
    }

    @Test func unknownFinalCodingRunsToClose() throws {
        var parser = HTTPResponseParser()
        let trace = try drive(&parser, bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n\u{1F}x"), .whole,
                              finish: true)
        #expect(trace.messages.first?.body == bytes("\u{1F}x"))
    }

    @Test(arguments: Split.all)
    func pipelinedResponsesFollowTheMethodQueue(split: Split) throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        parser.expectResponse(to: .head)
        parser.expectResponse(to: .post)
        parser.expectResponse(to: .get)
        parser.expectResponse(to: .get)
        // The HEAD response carries Content-Length but no body; 204 and 304 none either.
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
        let noContent = "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n"
        let notModified = "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"
        let stream = Self.ok + head + noContent + notModified + Self.chunked
        let trace = try drive(&parser, bytes(stream), split)
        #expect(trace.messages.map(\.head.status) == [200, 200, 204, 304, 200])
        #expect(trace.messages.map(\.body.count) == [5, 0, 0, 0, Self.chunkedBody.utf8.count])
        #expect(trace.messages.allSatisfy { $0.ended })
        #expect(trace.totalConsumed == stream.utf8.count)
        #expect(parser.pendingResponses == 0)
    }

    @Test(arguments: Split.all)
    func interimResponsesDoNotEndTheExchange(split: Split) throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .post)
        parser.expectResponse(to: .head)
        let stream = "HTTP/1.1 100 Continue\r\n\r\n"
            + "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
            + Self.ok
            + "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
        let trace = try drive(&parser, bytes(stream), split)
        #expect(trace.messages.map(\.head.status) == [100, 103, 200, 200])
        #expect(trace.messages.map(\.ended) == [false, false, true, true])
        #expect(trace.messages.map(\.head.isInformational) == [true, true, false, false])
        // The second 200 answered the HEAD: no body although Content-Length says 5.
        #expect(trace.messages[3].body.isEmpty)
        #expect(parser.pendingResponses == 0)
    }

    @Test(arguments: Split.all)
    func switchingProtocols(split: Split) throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .get)
        let head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
        let frames: [UInt8] = [0x81, 0x05] + bytes("hello") + bytes("HTTP/1.1 200 OK\r\n\r\n")
        let trace = try drive(&parser, bytes(head) + frames, split, finish: true)
        #expect(trace.messages.count == 1)
        #expect(trace.messages[0].head.description == "HTTP/1.1 101 Switching Protocols upgrade=websocket")
        #expect(trace.upgraded)
        #expect(trace.passthrough == frames)
        #expect(parser.pendingResponses == 0)
    }

    @Test(arguments: Split.all)
    func connectEstablishesATunnel(split: Split) throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .connect)
        let tls: [UInt8] = [0x16, 0x03, 0x03, 0x00, 0x02, 0x02, 0x00]
        // Content-Length on a 2xx to CONNECT is meaningless (RFC 9110 §9.3.6): the tunnel starts after the head.
        let trace = try drive(&parser, bytes("HTTP/1.1 200 Connection Established\r\nContent-Length: 3\r\n\r\n") + tls,
                              split)
        #expect(trace.upgraded)
        #expect(trace.passthrough == tls)
    }

    @Test func refusedConnectStaysHTTP() throws {
        var parser = HTTPResponseParser()
        parser.expectResponse(to: .connect)
        parser.expectResponse(to: .get)
        let stream = "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 2\r\n\r\nno" + Self.ok
        let trace = try drive(&parser, bytes(stream), .byteByByte)
        #expect(!trace.upgraded)
        #expect(trace.messages.map(\.body) == [bytes("no"), bytes("hello")])
    }

    @Test func unsolicitedResponseIsReadAsAnsweringGet() throws {
        var parser = HTTPResponseParser()
        let trace = try drive(&parser, bytes("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n"), .whole)
        #expect(trace.messages.first?.ended == true)
        #expect(parser.pendingResponses == 0)
    }

    @Test func missingReasonPhraseIsAccepted() throws {
        var parser = HTTPResponseParser()
        let trace = try drive(&parser, bytes("HTTP/1.1 204\r\n\r\nHTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n"),
                              .byteByByte)
        #expect(trace.messages.map(\.head.reason) == ["", ""])
        #expect(trace.messages.map(\.head.status) == [204, 200])
    }

    static let errors: [(String, HTTPParseError)] = [
        ("HTTP/1.1 20 OK\r\n\r\n", .invalidStatus),
        ("HTTP/1.1 2000 OK\r\n\r\n", .invalidStatus),
        ("HTTP/1.1 099 Low\r\n\r\n", .invalidStatus),
        ("HTTP/1.1 abc OK\r\n\r\n", .invalidStatus),
        ("HTTP/1.1 200 O\u{0}K\r\n\r\n", .invalidStatus),
        ("HTTP/1.1  200 OK\r\n\r\n", .invalidStatus),
        ("HTTP/2 200\r\n\r\n", .invalidVersion),
        ("HTTP/2.0 200 OK\r\n\r\n", .unsupportedVersion),
        ("ICY 200 OK\r\n\r\n", .invalidVersion),
        ("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", .contentLengthWithTransferEncoding),
        ("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", .conflictingContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip, chunked\r\n\r\n", .unsupportedTransferEncoding),
        ("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", .obsoleteLineFolding),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nq\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", .unexpectedEndOfStream),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;" + String(repeating: "e", count: 4096) + "\r\n",
         .chunkLineTooLong),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: " + String(repeating: "t", count: 16384)
            + "\r\n\r\n", .trailersTooLarge),
        ("HTTP/1.1 200 OK\r\n" + String(repeating: "X: y\r\n", count: 101) + "\r\n", .tooManyHeaders),
        ("HTTP/1.1 200 OK\r\nX: " + String(repeating: "v", count: 65536) + "\r\n\r\n", .headTooLarge),
        ("HTTP/1.1 200 " + String(repeating: "R", count: 8192) + "\r\n\r\n", .startLineTooLong),
        ("HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", .invalidLineEnding),
        ("HTTP/1.1 200 OK\r\nX : a\r\n\r\n", .invalidHeaderName),
    ]

    @Test(arguments: errors)
    func rejected(input: String, error: HTTPParseError) {
        for split in [Split.whole, .byteByByte] {
            var parser = HTTPResponseParser()
            parser.expectResponse(to: .get)
            #expect(throws: error, "\(split)") { try drive(&parser, bytes(input), split, finish: true) }
        }
    }

    @Test func simpleResponsesParseBack() throws {
        let wire = HTTPResponse.simple(status: 403, headers: ["X-Sluice-Rule": "block ads", "Content-Length": "99"],
                                       text: "blocked by rule\n")
        var parser = HTTPResponseParser()
        let trace = try drive(&parser, wire, .whole)
        let message = try #require(trace.messages.first)
        #expect(message.head.status == 403)
        #expect(message.head.reason == "Forbidden")
        #expect(message.head.headers.values("Content-Length") == ["16"])
        #expect(message.head.headers["Connection"] == "close")
        #expect(message.head.headers["Content-Type"] == "text/plain; charset=utf-8")
        #expect(!message.head.keepAlive)
        #expect(message.body == bytes("blocked by rule\n"))
        let text = String(decoding: wire, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 403 Forbidden\r\nX-Sluice-Rule: block ads\r\n"))

        let redirect = HTTPResponse.simple(status: 302, headers: ["Location": "https://b.test/"], keepAlive: true)
        #expect(String(decoding: redirect, as: UTF8.self)
            == "HTTP/1.1 302 Found\r\nLocation: https://b.test/\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n")
    }
}
