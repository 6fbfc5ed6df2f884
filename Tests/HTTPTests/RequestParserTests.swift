import Testing
import HTTP

@Suite struct RequestParserTests {
    static let get = "GET /index.html?q=1 HTTP/1.1\r\nHost: a.test\r\nUser-Agent: curl/8\r\nAccept: */*\r\n\r\n"
    static let post = "POST /upload HTTP/1.1\r\nHost: a.test\r\nContent-Length: 11\r\n\r\nhello world"
    static let chunkedBody = "5;name=value\r\nhello\r\n6 ; ext\r\n world\r\n0\r\nChecksum: abc\r\nX-Trail: 1\r\n\r\n"
    static let chunked = "PUT /c HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody

    @Test(arguments: Split.all)
    func simpleGet(split: Split) throws {
        var parser = HTTPRequestParser()
        let trace = try drive(&parser, bytes(Self.get), split)
        #expect(trace.messages.count == 1)
        let message = try #require(trace.messages.first)
        #expect(message.head.method == .get)
        #expect(message.head.target == "/index.html?q=1")
        #expect(message.head.version == .http1_1)
        #expect(message.head.headers.fields == [
            HTTPHeader(name: "Host", value: "a.test"),
            HTTPHeader(name: "User-Agent", value: "curl/8"),
            HTTPHeader(name: "Accept", value: "*/*"),
        ])
        #expect(message.rawHead == bytes(Self.get))
        #expect(message.body.isEmpty && message.ended)
        #expect(trace.totalConsumed == Self.get.utf8.count)
        #expect(parser.isIdle)
        #expect(message.head.description == "GET /index.html?q=1 HTTP/1.1 host=a.test")
    }

    /// ASCII values take the short way in; UTF-8 ones are validated and kept
    /// as sent (serialising the head gives back its bytes).
    @Test(arguments: Split.all)
    func valuesKeepTheirBytes(split: Split) throws {
        let text = "GET / HTTP/1.1\r\nHost: a.test\r\nX-Name: café \u{1F600}\r\nX-Plain: a\tb ~\r\n\r\n"
        var parser = HTTPRequestParser()
        let trace = try drive(&parser, bytes(text), split)
        let message = try #require(trace.messages.first)
        #expect(message.head.headers["X-Name"] == "café \u{1F600}")
        #expect(message.head.headers["X-Plain"] == "a\tb ~")
        #expect(message.head.serialized() == bytes(text))
    }

    @Test(arguments: Split.all)
    func contentLengthBody(split: Split) throws {
        var parser = HTTPRequestParser()
        let trace = try drive(&parser, bytes(Self.post), split)
        let message = try #require(trace.messages.first)
        #expect(message.head.contentLength == 11)
        #expect(message.body == bytes("hello world"))
        #expect(message.ended)
        #expect(message.head.description == "POST /upload HTTP/1.1 host=a.test length=11")
    }

    @Test(arguments: Split.all)
    func chunkedWithExtensionsAndTrailers(split: Split) throws {
        var parser = HTTPRequestParser()
        let trace = try drive(&parser, bytes(Self.chunked), split)
        let message = try #require(trace.messages.first)
        #expect(message.head.isChunked)
        // Every framing byte is part of the body as forwarded.
        #expect(message.body == bytes(Self.chunkedBody))
        #expect(message.ended)
        #expect(trace.totalConsumed == Self.chunked.utf8.count)
    }

    @Test(arguments: Split.all)
    func pipelinedRequestsInOneStream(split: Split) throws {
        var parser = HTTPRequestParser()
        // A stray CRLF between messages is skipped (RFC 9112 §2.2).
        let stream = Self.get + Self.post + "\r\n" + Self.chunked + Self.get
        let trace = try drive(&parser, bytes(stream), split)
        #expect(trace.messages.map(\.head.method) == [.get, .post, .put, .get])
        #expect(trace.messages.map(\.body.count) == [0, 11, Self.chunkedBody.utf8.count, 0])
        #expect(trace.messages.allSatisfy { $0.ended })
        #expect(trace.totalConsumed == stream.utf8.count)
        #expect(parser.isIdle)
    }

    @Test func bodyStepsReportEveryByteOnce() throws {
        // Byte by byte, a body of n bytes is n-1 `.body` steps and an `.end` taking the last one.
        var parser = HTTPRequestParser()
        let trace = try drive(&parser, bytes(Self.post), .byteByByte)
        #expect(trace.messages[0].bodySteps == 10)
        #expect(trace.messages[0].body.count == 11)
    }

    @Test func stepSequenceWhenWhole() throws {
        var parser = HTTPRequestParser()
        let input = bytes(Self.post + Self.get)
        var steps: [String] = []
        try input.withUnsafeBytes { (all: UnsafeRawBufferPointer) throws -> Void in
            var rest = all[...]
            while let step = try parser.parse(UnsafeRawBufferPointer(rebasing: rest)) {
                steps.append(step.description)
                rest = rest.dropFirst(step.consumed)
            }
        }
        let postHead = Self.post.utf8.count - 11
        #expect(steps == [
            "head POST /upload HTTP/1.1 host=a.test length=11 (\(postHead) bytes)",
            "end 11",
            "head GET /index.html?q=1 HTTP/1.1 host=a.test (\(Self.get.utf8.count) bytes)",
            "end 0",
        ])
    }

    @Test(arguments: Split.all)
    func bareLineFeedsInTheHeadAreAccepted(split: Split) throws {
        var parser = HTTPRequestParser()
        let trace = try drive(&parser, bytes("GET / HTTP/1.0\nX: y\n\n"), split)
        #expect(trace.messages.first?.head.headers["x"] == "y")
        #expect(trace.messages.first?.head.version == .http1_0)
    }

    @Test func expectContinueSurfaces() throws {
        var parser = HTTPRequestParser()
        let trace = try drive(&parser, bytes("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n"), .whole)
        let head = try #require(trace.messages.first?.head)
        #expect(head.expectsContinue)
        #expect(trace.messages[0].ended == false)
        #expect(!parser.isIdle)
    }

    @Test(arguments: Split.all)
    func upgradeMakesTheRestOpaque(split: Split) throws {
        var parser = HTTPRequestParser()
        let head = "GET /chat HTTP/1.1\r\nHost: a.test\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n"
        let first = try drive(&parser, bytes(head), split)
        #expect(first.messages.first?.head.upgrade == "websocket")
        #expect(first.messages.first?.ended == true)
        // The engine calls upgrade() when the response parser reports `.upgraded`.
        parser.upgrade()
        let frames: [UInt8] = [0x81, 0x85, 0x00, 0x00, 0x00, 0x00, 0x0D, 0x0A, 0xFF] + bytes("GET / HTTP/1.1\r\n\r\n")
        let rest = try drive(&parser, frames, split, finish: true)
        #expect(rest.upgraded)
        #expect(rest.messages.isEmpty)
        #expect(rest.passthrough == frames)
    }

    @Test func upgradedParserPassesEveryByte() throws {
        var parser = HTTPRequestParser()
        parser.upgrade()
        let garbage: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0x05, 0x0D, 0x0A]
        try garbage.withUnsafeBytes { (all: UnsafeRawBufferPointer) throws -> Void in
            #expect(try parser.parse(all) == .upgraded)
            #expect(try parser.parse(all) == .body(consumed: garbage.count))
            #expect(try parser.parse(UnsafeRawBufferPointer(rebasing: all[0 ..< 0])) == nil)
        }
        #expect(try parser.finish() == nil)
    }

    @Test func connectHasNoBody() throws {
        var parser = HTTPRequestParser()
        let trace = try drive(&parser, bytes("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n"), .whole)
        let message = try #require(trace.messages.first)
        #expect(message.head.method == .connect)
        #expect(message.head.target == "a.test:443")
        #expect(message.ended)
        #expect(message.head.absoluteURL(defaultScheme: "https") == "https://a.test:443")
    }

    @Test func finishBetweenMessagesIsClean() throws {
        var parser = HTTPRequestParser()
        _ = try drive(&parser, bytes(Self.get + "\r\n"), .whole)
        #expect(try parser.finish() == nil)
    }

    @Test(arguments: [String(Self.post.dropLast(3)), String(Self.chunked.dropLast(2)), "GET / HTTP/1.1\r\nHost:"])
    func finishInsideAMessageThrows(prefix: String) throws {
        var parser = HTTPRequestParser()
        _ = try drive(&parser, bytes(prefix), .whole)
        #expect(throws: HTTPParseError.unexpectedEndOfStream) { try parser.finish() }
    }

    @Test func afterFinishDataIsAnError() throws {
        var parser = HTTPRequestParser()
        #expect(try parser.finish() == nil)
        #expect(throws: HTTPParseError.dataAfterClose) { try drive(&parser, bytes("GET"), .whole) }
    }

    @Test func parsesAWindowInTheMiddleOfAPoisonedBuffer() throws {
        // The parser sees only the bytes it is given: the poison around them
        // (which would be a valid continuation of the body) is never read.
        let message = bytes(Self.post)
        var buffer = [UInt8](repeating: 0xAA, count: message.count + 64)
        buffer.replaceSubrange(32 ..< 32 + message.count, with: message)
        var parser = HTTPRequestParser()
        var steps: [HTTPRequestStep] = []
        try buffer.withUnsafeBytes { (all: UnsafeRawBufferPointer) throws -> Void in
            var rest = UnsafeRawBufferPointer(rebasing: all[32 ..< 32 + message.count - 4])
            while let step = try parser.parse(rest) {
                steps.append(step)
                rest = UnsafeRawBufferPointer(rebasing: rest[step.consumed...])
            }
            rest = UnsafeRawBufferPointer(rebasing: all[32 + message.count - 4 ..< 32 + message.count])
            while let step = try parser.parse(rest) {
                steps.append(step)
                rest = UnsafeRawBufferPointer(rebasing: rest[step.consumed...])
            }
        }
        #expect(steps.map(\.consumed) == [message.count - 11, 7, 4])
        #expect(steps.last == .end(consumed: 4))
        #expect(parser.isIdle)
    }
}
