import Testing
import HTTP

/// Each malformed input throws its own error, whether it arrives whole or
/// byte by byte, and the parser keeps throwing it afterwards.
@Suite struct RequestErrorTests {
    struct Case: CustomStringConvertible, Sendable {
        var input: [UInt8]
        var error: HTTPParseError
        var limits = HTTPParserLimits()
        var description: String { "\(error): \(String(decoding: input.prefix(60), as: UTF8.self).debugDescription)" }

        init(_ input: String, _ error: HTTPParseError, limits: HTTPParserLimits = HTTPParserLimits()) {
            self.input = Array(input.utf8)
            self.error = error
            self.limits = limits
        }

        init(bytes: [UInt8], _ error: HTTPParseError) {
            input = bytes
            self.error = error
        }
    }

    static let host = "Host: a.test\r\n"
    static func chunked(_ body: String) -> String {
        "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n" + body
    }

    static let cases: [Case] = [
        // Start line.
        Case("G@T / HTTP/1.1\r\n\(host)\r\n", .invalidMethod),
        Case(" GET / HTTP/1.1\r\n\(host)\r\n", .invalidMethod),
        Case("GET\r\n\r\n", .invalidMethod),
        Case("GET  / HTTP/1.1\r\n\(host)\r\n", .invalidTarget),
        Case("GET /a b HTTP/1.1\r\n\(host)\r\n", .invalidVersion),
        Case("GET /\u{7F} HTTP/1.1\r\n\(host)\r\n", .invalidTarget),
        Case("GET /é HTTP/1.1\r\n\(host)\r\n", .invalidTarget),
        Case("GET / HTTP/1.1 \r\n\(host)\r\n", .invalidVersion),
        Case("GET / http/1.1\r\n\(host)\r\n", .invalidVersion),
        Case("GET / HTTP/1.10\r\n\(host)\r\n", .invalidVersion),
        Case("GET / HTTP/1\r\n\(host)\r\n", .invalidVersion),
        Case("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", .unsupportedVersion),
        Case("GET / HTTP/0.9\r\n\r\n", .unsupportedVersion),
        // Header section.
        Case("GET / HTTP/1.1\r\n\(host)Bad Name: x\r\n\r\n", .invalidHeaderName),
        Case("GET / HTTP/1.1\r\n\(host)Host : x\r\n\r\n", .invalidHeaderName),
        Case("GET / HTTP/1.1\r\n\(host): x\r\n\r\n", .invalidHeaderName),
        Case("GET / HTTP/1.1\r\n\(host)NoColon\r\n\r\n", .invalidHeaderName),
        Case("GET / HTTP/1.1\r\n\(host)X: a\u{0}b\r\n\r\n", .invalidHeaderValue),
        Case("GET / HTTP/1.1\r\n\(host)X: a\u{1B}b\r\n\r\n", .invalidHeaderValue),
        Case(bytes: Array("GET / HTTP/1.1\r\n\(host)X: a".utf8) + [0xFF, 0xFE] + Array("\r\n\r\n".utf8), .invalidHeaderValue),
        Case("GET / HTTP/1.1\r\n\(host)X: a\rb\r\n\r\n", .invalidLineEnding),
        Case("GET / HTTP/1.1\r\n\(host)X: a\r\n folded\r\n\r\n", .obsoleteLineFolding),
        Case("GET / HTTP/1.1\r\n\(host)X: a\r\n\tfolded\r\n\r\n", .obsoleteLineFolding),
        Case("GET / HTTP/1.1\r\nX: a\r\n\r\n", .missingHost),
        Case("GET / HTTP/1.1\r\n\(host)Host: b.test\r\n\r\n", .multipleHost),
        Case("GET / HTTP/1.0\r\nHost: a\r\nHOST: b\r\n\r\n", .multipleHost),
        Case("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", .invalidHost),
        Case("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", .invalidHost),
        Case("GET / HTTP/1.1\r\nHost: user@a\r\n\r\n", .invalidHost),
        // Content-Length.
        Case("POST / HTTP/1.1\r\n\(host)Content-Length: abc\r\n\r\n", .invalidContentLength),
        Case("POST / HTTP/1.1\r\n\(host)Content-Length: -1\r\n\r\n", .invalidContentLength),
        Case("POST / HTTP/1.1\r\n\(host)Content-Length: +1\r\n\r\n", .invalidContentLength),
        Case("POST / HTTP/1.1\r\n\(host)Content-Length: 1 2\r\n\r\n", .invalidContentLength),
        Case("POST / HTTP/1.1\r\n\(host)Content-Length:\r\n\r\n", .invalidContentLength),
        Case("POST / HTTP/1.1\r\n\(host)Content-Length: 5,\r\n\r\n", .invalidContentLength),
        Case("POST / HTTP/1.1\r\n\(host)Content-Length: ,5\r\n\r\n", .invalidContentLength),
        Case("POST / HTTP/1.1\r\n\(host)Content-Length: 5,,5\r\n\r\n", .invalidContentLength),
        Case("POST / HTTP/1.1\r\n\(host)Content-Length: 0x10\r\n\r\n", .invalidContentLength),
        Case("POST / HTTP/1.1\r\n\(host)Content-Length: 99999999999999999999\r\n\r\n", .invalidContentLength),
        Case("POST / HTTP/1.1\r\n\(host)Content-Length: 5, 6\r\n\r\n", .conflictingContentLength),
        Case("POST / HTTP/1.1\r\n\(host)Content-Length: 5\r\nContent-Length: 6\r\n\r\n", .conflictingContentLength),
        // Transfer-Encoding.
        Case("POST / HTTP/1.1\r\n\(host)Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
             .contentLengthWithTransferEncoding),
        Case("POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n",
             .contentLengthWithTransferEncoding),
        Case("POST / HTTP/1.1\r\n\(host)Transfer-Encoding: gzip\r\n\r\n", .unsupportedTransferEncoding),
        Case("POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked, gzip\r\n\r\n", .unsupportedTransferEncoding),
        Case("POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
             .unsupportedTransferEncoding),
        Case("POST / HTTP/1.1\r\n\(host)Transfer-Encoding: \"chunked\"\r\n\r\n", .unsupportedTransferEncoding),
        Case("POST / HTTP/1.1\r\n\(host)Transfer-Encoding: ,\r\n\r\n", .unsupportedTransferEncoding),
        Case("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", .unsupportedTransferEncoding),
        // Chunked framing.
        Case(chunked("z\r\n"), .invalidChunkSize),
        Case(chunked(";x\r\n"), .invalidChunkSize),
        Case(chunked("-1\r\n"), .invalidChunkSize),
        Case(chunked("\r\n"), .invalidChunkSize),
        Case(chunked("1000000000000000\r\n"), .chunkSizeTooLarge),
        Case(chunked("ffffffffffffffffff\r\n"), .chunkSizeTooLarge),
        Case(chunked("5\nhello\r\n0\r\n\r\n"), .invalidChunkSize),
        Case(chunked("5\r\rhello"), .invalidChunkFraming),
        Case(chunked("5\r\nhelloX\r\n"), .invalidChunkFraming),
        Case(chunked("5\r\nhello\rX"), .invalidChunkFraming),
        Case(chunked("5\r\nhello\n0\r\n\r\n"), .invalidChunkFraming),
        Case(chunked("5 x\r\nhello\r\n"), .invalidChunkExtension),
        Case(chunked("5 \r\nhello\r\n"), .invalidChunkExtension),
        Case(chunked("5;a\u{0}\r\nhello\r\n"), .invalidChunkExtension),
        Case(chunked("5;" + String(repeating: "a", count: 5000) + "\r\n"), .chunkLineTooLong),
        Case(chunked("0\r\nNoColon\r\n\r\n"), .invalidTrailer),
        Case(chunked("0\r\nBad Name: x\r\n\r\n"), .invalidTrailer),
        Case(chunked("0\r\nX: a\r\n folded\r\n\r\n"), .invalidTrailer),
        Case(chunked("0\r\nX: a\u{1}\r\n\r\n"), .invalidTrailer),
        Case(chunked("0\r\nX: a\r\r\n"), .invalidChunkFraming),
        Case(chunked("0\r\n\rX"), .invalidChunkFraming),
        Case(chunked("0\r\nX: " + String(repeating: "a", count: 17000) + "\r\n\r\n"), .trailersTooLarge),
        // Limits.
        Case("GET /" + String(repeating: "a", count: 8200) + " HTTP/1.1\r\n\r\n", .startLineTooLong),
        Case("GET / HTTP/1.1\r\n\(host)" + String(repeating: "X-Pad: \(String(repeating: "p", count: 1000))\r\n", count: 70)
             + "\r\n", .headTooLarge),
        Case("GET / HTTP/1.1\r\n" + String(repeating: "X: y\r\n", count: 100) + "\(host)\r\n", .tooManyHeaders),
        Case(String(repeating: "\r\n", count: 40000), .headTooLarge),
        Case("GET / HTTP/1.1\r\n\(host)X: y\r\n\r\n", .tooManyHeaders, limits: HTTPParserLimits(maxHeaderCount: 1)),
        Case("GET /abcdef HTTP/1.1\r\n\(host)\r\n", .startLineTooLong, limits: HTTPParserLimits(maxStartLineBytes: 16)),
        Case("GET / HTTP/1.1\r\n\(host)\r\n", .headTooLarge, limits: HTTPParserLimits(maxHeadBytes: 20)),
    ]

    @Test(arguments: cases)
    func rejectedWhole(_ c: Case) {
        var parser = HTTPRequestParser(limits: c.limits)
        #expect(throws: c.error) { try drive(&parser, c.input, .whole) }
        // A failed parser stays failed.
        #expect(throws: c.error) { try drive(&parser, bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), .whole) }
    }

    @Test(arguments: cases)
    func rejectedByteByByte(_ c: Case) {
        var parser = HTTPRequestParser(limits: c.limits)
        #expect(throws: c.error) { try drive(&parser, c.input, .byteByByte) }
    }

    @Test func limitsAreInclusive() throws {
        // Exactly 100 fields, an 8 KiB request line: accepted.
        var parser = HTTPRequestParser()
        let many = "GET / HTTP/1.1\r\n\(Self.host)" + String(repeating: "X: y\r\n", count: 99) + "\r\n"
        #expect(try drive(&parser, bytes(many), .whole).messages.first?.head.headers.count == 100)
        let line = "GET /" + String(repeating: "a", count: 8192 - 14) + " HTTP/1.1"
        #expect(line.utf8.count == 8192)
        var second = HTTPRequestParser()
        #expect(try drive(&second, bytes(line + "\r\n\(Self.host)\r\n"), .byteByByte).messages.count == 1)
    }

    @Test func sameContentLengthRepeatedIsAccepted() throws {
        var parser = HTTPRequestParser()
        let input = "POST / HTTP/1.1\r\n\(Self.host)Content-Length: 3, 3\r\nContent-Length:3\r\n\r\nabc"
        let trace = try drive(&parser, bytes(input), .byteByByte)
        #expect(trace.messages.first?.body == bytes("abc"))
        #expect(trace.messages.first?.head.contentLength == 3)
    }

    @Test func transferCodingsBeforeChunkedAreForwarded() throws {
        var parser = HTTPRequestParser()
        let input = "POST / HTTP/1.1\r\n\(Self.host)Transfer-Encoding: gzip, Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        let trace = try drive(&parser, bytes(input), .whole)
        #expect(trace.messages.first?.body == bytes("3\r\nabc\r\n0\r\n\r\n"))
        #expect(trace.messages.first?.head.isChunked == true)
    }

    @Test func errorsDescribeThemselves() {
        #expect(HTTPParseError.contentLengthWithTransferEncoding.description
            == "HTTP: both Content-Length and Transfer-Encoding")
        #expect(HTTPParseError.obsoleteLineFolding.description == "HTTP: obsolete line folding")
    }
}
