import Testing
@testable import Relay
import Wire

@Suite struct HTTPConnectTests {
    let example = ProxyTarget(host: .domain("example.test"), port: 443)

    @Test func requestBytes() throws {
        var plain = try HTTPConnectHandshake(target: example, credentials: nil)
        #expect(String(decoding: plain.start(), as: UTF8.self) == "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
        // RFC 7617 §2's example credentials.
        var auth = try HTTPConnectHandshake(target: ProxyTarget(host: .ipv6(IPv6Address("2001:db8::1")!), port: 22),
                                            credentials: ProxyCredentials(username: "Aladdin", password: "open sesame"))
        #expect(String(decoding: auth.start(), as: UTF8.self) ==
            "CONNECT [2001:db8::1]:22 HTTP/1.1\r\nHost: [2001:db8::1]:22\r\nProxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n")
    }

    @Test func establishedWithTrailingTunnelBytes() throws {
        let head = "HTTP/1.1 200 Connection established\r\nProxy-Agent: test\r\n\r\n"
        let input = Array(head.utf8) + [0x16, 0x03, 0x01]
        for chunks in splits(input.count) {
            var h = try HTTPConnectHandshake(target: example, credentials: nil)
            let run = try drive(&h, input, chunks: chunks)
            #expect(run.bound == .some(nil))
            #expect(run.rest == [0x16, 0x03, 0x01], "chunks \(chunks)")
            #expect(h.isEstablished)
        }
    }

    @Test func acceptsBareLineFeedsAndEmptyReasons() throws {
        for head in ["HTTP/1.0 200\n\n", "HTTP/1.1 204 No Content\r\n\r\n", "HTTP/1.1 200 OK\nVia: x\n\n"] {
            var h = try HTTPConnectHandshake(target: example, credentials: nil)
            let run = try drive(&h, Array(head.utf8) + [7])
            #expect(run.rest == [7], "\(head)")
        }
    }

    @Test(arguments: [
        ("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"x\"\r\n\r\n", RelayError.authRejected),
        ("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n", .authRejected),
        ("HTTP/1.1 403 Forbidden\r\n\r\n", .notAllowed),
        ("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 3\r\n\r\nbad", .httpStatus(502)),
        ("HTTP/1.1 503 Service Unavailable\r\n\r\n", .httpStatus(503)),
        ("HTTP/1.1 504 Gateway Timeout\r\n\r\n", .httpStatus(504)),
        ("HTTP/1.1 301 Moved\r\n\r\n", .httpStatus(301)),
        ("HTTP/2 200\r\n\r\n", .protocolViolation(.statusLine)),
        ("HTTP/1.1 20 OK\r\n\r\n", .protocolViolation(.statusLine)),
        ("HTTP/1.1 2000 OK\r\n\r\n", .protocolViolation(.statusLine)),
        ("HTTP/1.1 099 Low\r\n\r\n", .protocolViolation(.statusLine)),
        ("\u{05}\u{00}", .protocolViolation(.statusLine)),
        ("HTTP/1.1 200 OK\r\nBroken header\r\n\r\n", .protocolViolation(.headerSyntax)),
        ("HTTP/1.1 200 OK\r\n Folded: x\r\n\r\n", .protocolViolation(.headerSyntax)),
        ("HTTP/1.1 200 OK\r\nX: a\u{01}b\r\n\r\n", .protocolViolation(.headerSyntax)),
    ])
    func failures(head: String, error: RelayError) throws {
        let input = Array(head.utf8)
        for chunks in splits(input.count) {
            var h = try HTTPConnectHandshake(target: example, credentials: nil)
            #expect(throws: error) { try drive(&h, input, chunks: chunks) }
        }
    }

    @Test func statusesMapToTheApp() {
        #expect(RelayError.httpStatus(504).appFacing == .unreachable(.host))
        #expect(RelayError.httpStatus(502).appFacing == .badGateway)
    }

    @Test func oversizedHeadIsRefusedAtTheBound() throws {
        let filler = Array("HTTP/1.1 200 OK\r\n".utf8) + Array(repeating: UInt8(ascii: "X"), count: 16 * 1024)
        var h = try HTTPConnectHandshake(target: example, credentials: nil)
        #expect(throws: RelayError.protocolViolation(.headTooLarge)) { try drive(&h, filler, chunks: [1000]) }
        // Just under the bound, still waiting: a head may be 16 KiB long.
        var g = try HTTPConnectHandshake(target: example, credentials: nil)
        #expect(!(try drive(&g, Array(filler.prefix(16 * 1024 - 1)))).established)
        // 101 header lines.
        let many = "HTTP/1.1 200 OK\r\n" + String(repeating: "A: b\r\n", count: 101) + "\r\n"
        var m = try HTTPConnectHandshake(target: example, credentials: nil)
        #expect(throws: RelayError.protocolViolation(.tooManyHeaders)) { try drive(&m, Array(many.utf8)) }
    }

    /// The bound is exact and independent of how the bytes arrive: a head ending
    /// at byte 16384 is accepted, one ending at 16385 is not, whole or split.
    @Test func headBoundIsExact() throws {
        func head(length: Int) -> [UInt8] {
            let start = Array("HTTP/1.1 200 OK\r\nX: ".utf8), end = Array("\r\n\r\n".utf8)
            return start + Array(repeating: UInt8(ascii: "a"), count: length - start.count - end.count) + end + [1, 2]
        }
        for chunks in [[], [16383], [16384], [100, 16283], [8192, 8192]] {
            var ok = try HTTPConnectHandshake(target: example, credentials: nil)
            let run = try drive(&ok, head(length: 16384), chunks: chunks)
            #expect(run.established && run.rest == [1, 2], "chunks \(chunks)")
            var tooLong = try HTTPConnectHandshake(target: example, credentials: nil)
            #expect(throws: RelayError.protocolViolation(.headTooLarge)) { try drive(&tooLong, head(length: 16385), chunks: chunks) }
        }
    }

    @Test func truncatedAndClosed() throws {
        let head = Array("HTTP/1.1 200 OK\r\n\r\n".utf8)
        for cut in 0 ..< head.count {
            var h = try HTTPConnectHandshake(target: example, credentials: nil)
            #expect(!(try drive(&h, Array(head.prefix(cut)), chunks: [1])).established)
            #expect(h.inputClosed() == .unexpectedClose)
        }
    }

    @Test func credentialsBasicCannotCarry() {
        #expect(throws: RelayError.unrepresentable(.headerValue)) {
            try HTTPConnectHandshake(target: example, credentials: ProxyCredentials(username: "a:b", password: "c"))
        }
        #expect(throws: RelayError.unrepresentable(.headerValue)) {
            try HTTPConnectHandshake(target: example, credentials: ProxyCredentials(username: "a", password: "c\r\nX: y"))
        }
    }
}

@Suite struct Base64Tests {
    // RFC 4648 §10.
    static let vectors = [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                          ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")]

    @Test func rfc4648Vectors() {
        for (plain, encoded) in Self.vectors {
            #expect(Base64.encode(Array(plain.utf8)) == encoded)
            #expect(Base64.decode(encoded) == Array(plain.utf8))
        }
        let all = (0 ... 255).map { UInt8($0) }
        #expect(Base64.decode(Base64.encode(all)) == all)
    }

    @Test func strictDecoding() {
        for bad in ["Zg", "Zg=", "Z===", "Zh==", "Zm9=", "Zm9v!", "Zm9v Yg==", "Zg==Zg==", "===="] {
            #expect(Base64.decode(bad) == nil, "\(bad)")
        }
    }
}

@Suite struct HTTPForwardRequestTests {
    @Test func originFormBecomesAbsoluteWithAuthorization() throws {
        let head = try HTTPForwardRequest.absoluteFormHead(
            method: "GET", target: "/index.html?q=1", host: "example.test:8080",
            headers: [("Host", "example.test:8080"), ("Proxy-Authorization", "Basic app"), ("Accept", "*/*"),
                      ("proxy-connection", "keep-alive")],
            credentials: ProxyCredentials(username: "Aladdin", password: "open sesame"))
        #expect(String(decoding: head, as: UTF8.self) ==
            "GET http://example.test:8080/index.html?q=1 HTTP/1.1\r\nHost: example.test:8080\r\nAccept: */*\r\n"
            + "Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n")
    }

    @Test func asteriskAndAbsoluteTargets() throws {
        let options = try HTTPForwardRequest.absoluteFormHead(method: "OPTIONS", target: "*", version: "HTTP/1.0",
                                                              host: "[::1]:80", headers: [], credentials: nil)
        #expect(String(decoding: options, as: UTF8.self) == "OPTIONS http://[::1]:80 HTTP/1.0\r\n\r\n")
        let kept = try HTTPForwardRequest.absoluteFormHead(method: "GET", target: "http://a.test/x", host: "a.test",
                                                           headers: [], credentials: nil)
        #expect(String(decoding: kept, as: UTF8.self) == "GET http://a.test/x HTTP/1.1\r\n\r\n")
    }

    @Test func refusesSmuggling() {
        #expect(throws: RelayError.protocolViolation(.requestTarget)) {
            try HTTPForwardRequest.absoluteFormHead(method: "GET", target: "/ HTTP/1.1\r\nX: y", host: "a", headers: [], credentials: nil)
        }
        #expect(throws: RelayError.protocolViolation(.requestTarget)) {
            try HTTPForwardRequest.absoluteFormHead(method: "GET", target: "/", host: "a\r\nb", headers: [], credentials: nil)
        }
        #expect(throws: RelayError.protocolViolation(.requestTarget)) {
            try HTTPForwardRequest.absoluteFormHead(method: "GET", target: "relative", host: "a", headers: [], credentials: nil)
        }
        #expect(throws: RelayError.protocolViolation(.requestLine)) {
            try HTTPForwardRequest.absoluteFormHead(method: "G T", target: "/", host: "a", headers: [], credentials: nil)
        }
        #expect(throws: RelayError.unrepresentable(.headerValue)) {
            try HTTPForwardRequest.absoluteFormHead(method: "GET", target: "/", host: "a", headers: [("X", "1\r\nY: 2")], credentials: nil)
        }
        #expect(throws: RelayError.protocolViolation(.headerSyntax)) {
            try HTTPForwardRequest.absoluteFormHead(method: "GET", target: "/", host: "a", headers: [("X Y", "1")], credentials: nil)
        }
    }
}
