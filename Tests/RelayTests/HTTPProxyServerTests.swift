import Testing
import Relay
import Wire

struct HTTPServerRun {
    var action: HTTPProxyServerHandshake.Action?
    var rest: [UInt8] = []
}

/// Feeds the listener's first request in chunks, as the engine would.
func driveHTTPServer(_ h: inout HTTPProxyServerHandshake, _ input: [UInt8], chunks: [Int] = []) -> HTTPServerRun {
    var run = HTTPServerRun()
    var buffer: [UInt8] = []
    var offset = 0
    var pieces = chunks
    while offset < input.count {
        let n = pieces.isEmpty ? input.count - offset : min(pieces.removeFirst(), input.count - offset)
        buffer += input[offset ..< offset + n]
        offset += n
        if run.action != nil { continue }
        if let action = buffer.withUnsafeBytes({ h.receive($0) }) {
            run.action = action
            switch action {
            case let .connect(_, consumed), let .forward(_, _, consumed): buffer.removeFirst(consumed)
            case .refuse: break
            }
        }
    }
    run.rest = buffer
    return run
}

func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

@Suite struct HTTPProxyServerTests {
    let alice = ProxyCredentials(username: "alice", password: "s3cret")
    // base64("alice:s3cret")
    let aliceAuthorization = "Basic YWxpY2U6czNjcmV0"

    @Test func connectTunnel() {
        let input = Array("CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n".utf8) + [0x16, 0x03]
        for chunks in splits(input.count) {
            var h = HTTPProxyServerHandshake(credentials: nil)
            let run = driveHTTPServer(&h, input, chunks: chunks)
            #expect(run.action == .connect(ProxyTarget(host: .domain("example.test"), port: 443), consumed: input.count - 2))
            #expect(run.rest == [0x16, 0x03])
            #expect(text(h.reply(for: .succeeded)) == "HTTP/1.1 200 Connection established\r\n\r\n")
            #expect(h.isOpen)
        }
    }

    @Test func absoluteFormIsForwardedInOriginForm() throws {
        let input = Array(("GET http://example.test:8080/a/b?c=d HTTP/1.1\r\nHost: wrong.test\r\nAccept: */*\r\n"
            + "Proxy-Authorization: \(aliceAuthorization)\r\nProxy-Connection: keep-alive\r\n\r\n").utf8) + Array("body".utf8)
        for chunks in splits(input.count) {
            var h = HTTPProxyServerHandshake(credentials: alice)
            let run = driveHTTPServer(&h, input, chunks: chunks)
            guard case let .forward(target, head, consumed) = run.action else {
                Issue.record("expected a forward, got \(String(describing: run.action))"); return
            }
            #expect(target == ProxyTarget(host: .domain("example.test"), port: 8080))
            #expect(text(head) == "GET /a/b?c=d HTTP/1.1\r\nHost: example.test:8080\r\nAccept: */*\r\n\r\n")
            #expect(consumed == input.count - 4)
            #expect(run.rest == Array("body".utf8))
            #expect(h.reply(for: .succeeded).isEmpty)
        }
    }

    @Test(arguments: [
        ("http://a.test", ProxyTarget(host: .domain("a.test"), port: 80), "/", "a.test"),
        ("http://a.test?x", ProxyTarget(host: .domain("a.test"), port: 80), "/?x", "a.test"),
        ("HTTP://10.0.0.1:81/p#frag", ProxyTarget(host: .ipv4(IPv4Address(10, 0, 0, 1)), port: 81), "/p", "10.0.0.1:81"),
        ("http://[::1]/", ProxyTarget(host: .ipv6(.loopback), port: 80), "/", "[::1]"),
        ("http://[::1]:8080/x", ProxyTarget(host: .ipv6(.loopback), port: 8080), "/x", "[::1]:8080"),
    ])
    func absoluteTargets(uri: String, target: ProxyTarget, path: String, host: String) {
        var h = HTTPProxyServerHandshake(credentials: nil)
        let run = driveHTTPServer(&h, Array("HEAD \(uri) HTTP/1.0\r\n\r\n".utf8))
        guard case let .forward(t, head, _) = run.action else { Issue.record("\(uri): \(String(describing: run.action))"); return }
        #expect(t == target)
        #expect(text(head) == "HEAD \(path) HTTP/1.0\r\nHost: \(host)\r\n\r\n")
    }

    @Test func missingOrWrongCredentialsGet407() {
        for header in ["", "Proxy-Authorization: Basic YWxpY2U6d3Jvbmc=\r\n", "Proxy-Authorization: Bearer xyz\r\n",
                       "Proxy-Authorization: Basic !!!\r\n", "Authorization: \(aliceAuthorization)\r\n"] {
            var h = HTTPProxyServerHandshake(credentials: alice)
            let run = driveHTTPServer(&h, Array("CONNECT a.test:443 HTTP/1.1\r\n\(header)\r\n".utf8))
            guard case let .refuse(bytes, reason) = run.action else { Issue.record("\(header)"); continue }
            #expect(reason == .authRejected)
            #expect(text(bytes).hasPrefix("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"sluice\"\r\n"))
        }
        // The scheme name is case-insensitive.
        var h = HTTPProxyServerHandshake(credentials: alice)
        let lower = Array("CONNECT a.test:443 HTTP/1.1\r\nproxy-authorization: basic YWxpY2U6czNjcmV0\r\n\r\n".utf8)
        let run = driveHTTPServer(&h, lower)
        #expect(run.action == .connect(ProxyTarget(host: .domain("a.test"), port: 443), consumed: lower.count))
    }

    @Test(arguments: [
        "GET / HTTP/1.1\r\nHost: a\r\n\r\n",                  // origin-form: not a proxy request
        "GET https://a.test/ HTTP/1.1\r\n\r\n",               // would need TLS
        "GET http://user@a.test/ HTTP/1.1\r\n\r\n",
        "GET http:// HTTP/1.1\r\n\r\n",
        "CONNECT a.test HTTP/1.1\r\n\r\n",
        "CONNECT a.test:99999 HTTP/1.1\r\n\r\n",
        "GET  http://a.test/ HTTP/1.1\r\n\r\n",
        "GET http://a.test/ HTTP/2.0\r\n\r\n",
        "GET http://a.test/ HTTP/1.1\r\nBad header\r\n\r\n",
        "\u{05}\u{01}\u{00}\r\n\r\n",
    ])
    func badRequests(request: String) {
        var h = HTTPProxyServerHandshake(credentials: nil)
        let run = driveHTTPServer(&h, Array(request.utf8))
        guard case let .refuse(bytes, _) = run.action else { Issue.record("\(request): \(String(describing: run.action))"); return }
        #expect(text(bytes).hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
    }

    @Test func oversizedHeadGets431() {
        var h = HTTPProxyServerHandshake(credentials: nil)
        let run = driveHTTPServer(&h, Array("GET http://a.test/ HTTP/1.1\r\nX: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 17000),
                                  chunks: [4096, 4096, 4096, 4096, 4096])
        guard case let .refuse(bytes, reason) = run.action else { Issue.record("no refusal"); return }
        #expect(reason == .protocolViolation(.headTooLarge))
        #expect(text(bytes).hasPrefix("HTTP/1.1 431 "))
    }

    @Test func partialHeadsWait() {
        let input = Array("CONNECT a.test:443 HTTP/1.1\r\n\r\n".utf8)
        for cut in 0 ..< input.count {
            var h = HTTPProxyServerHandshake(credentials: nil)
            #expect(driveHTTPServer(&h, Array(input.prefix(cut)), chunks: [1]).action == nil)
        }
    }

    @Test(arguments: [
        (RelayError.connectionRefused, "HTTP/1.1 502 Bad Gateway"), (.hostUnreachable, "HTTP/1.1 504 Gateway Timeout"),
        (.timedOut(.connect), "HTTP/1.1 504 Gateway Timeout"), (.notAllowed, "HTTP/1.1 403 Forbidden"),
        (.protocolViolation(.version), "HTTP/1.1 502 Bad Gateway"),
    ])
    func failedOutcomes(error: RelayError, statusLine: String) {
        var h = HTTPProxyServerHandshake(credentials: nil)
        _ = driveHTTPServer(&h, Array("CONNECT a.test:443 HTTP/1.1\r\n\r\n".utf8))
        let reply = text(h.reply(for: .failed(error)))
        #expect(reply.hasPrefix(statusLine + "\r\n"))
        #expect(reply.hasSuffix("\r\n\r\nsluice: \(error)\n"))
        #expect(reply.contains("Content-Length: \("sluice: \(error)\n".utf8.count)\r\n"))
    }

    /// Our CONNECT client against our CONNECT server, with credentials.
    @Test func roundTripAgainstTheClient() throws {
        var client = try HTTPConnectHandshake(target: ProxyTarget(host: .ipv6(IPv6Address("2001:db8::1")!), port: 443), credentials: alice)
        var server = HTTPProxyServerHandshake(credentials: alice)
        let request = client.start()
        let action = request.withUnsafeBytes { server.receive($0) }
        #expect(action == .connect(ProxyTarget(host: .ipv6(IPv6Address("2001:db8::1")!), port: 443), consumed: request.count))
        let reply = server.reply(for: .succeeded)
        #expect(try reply.withUnsafeBytes { try client.receive($0) } == .established(bound: nil, consumed: reply.count))
    }
}

@Suite struct ListenPolicyTests {
    @Test func loopbackIsAlwaysAllowed() throws {
        for text in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            try ListenPolicy.check(address: IPAddress(text)!, port: 1080, authenticated: false)
        }
    }

    @Test func otherAddressesNeedAuthentication() throws {
        for text in ["0.0.0.0", "::", "192.168.1.10", "::ffff:10.0.0.1", "fd00::1", "128.0.0.1"] {
            let address = IPAddress(text)!
            #expect(throws: ListenPolicy.Refusal.self) { try ListenPolicy.check(address: address, port: 1080, authenticated: false) }
            try ListenPolicy.check(address: address, port: 1080, authenticated: true)
        }
        do {
            try ListenPolicy.check(address: .v4(.any), port: 1080, authenticated: false)
            Issue.record("0.0.0.0 without credentials was accepted")
        } catch {
            #expect(error.description.hasPrefix("refusing to listen on 0.0.0.0:1080 without authentication"))
            #expect(error.description.contains("open proxy"))
        }
    }
}
