import Testing
@testable import Engine

/// The pure pieces of `sluice proxy`: option parsing, the relay buffer, and
/// the head rewrite of a forwarded request (hop-by-hop lines out).
/// (The loop itself is tested end to end in IntegrationTests/ProxyServerTests.)
struct ProxyServerUnitTests {
    /// The client's Connection and Keep-Alive lines were for the proxy; the
    /// origin is asked to close only on the connection's last exchange.
    @Test func forwardedHeadsLoseTheClientsHopByHopLines() {
        let head = Array("GET /a?b HTTP/1.1\r\nHost: origin.test\r\nConnection: keep-alive, Upgrade\r\nkeep-alive: timeout=5\r\nX-Bin: ".utf8)
            + [0xff, 0xfe] + Array("\r\nAccept: */*\r\n\r\n".utf8)
        let kept = Array("GET /a?b HTTP/1.1\r\nHost: origin.test\r\nX-Bin: ".utf8) + [0xff, 0xfe] + Array("\r\nAccept: */*\r\n".utf8)
        #expect(InboundConnection.forwardedHead(head, close: false) == kept + Array("\r\n".utf8))
        #expect(InboundConnection.forwardedHead(head, close: true) == kept + Array("Connection: close\r\n\r\n".utf8))
        #expect(InboundConnection.forwardedHead(head, close: false, upgrade: true) == kept + Array("Connection: upgrade\r\n\r\n".utf8))
        // A head without Connection gets one when asked; the request line is never taken for a header.
        #expect(InboundConnection.forwardedHead(Array("GET / HTTP/1.0\r\n\r\n".utf8), close: true)
            == Array("GET / HTTP/1.0\r\nConnection: close\r\n\r\n".utf8))
    }

    @Test func relayBufferIsBoundedAndCompacts() {
        let buffer = RelayBuffer(capacity: 8)
        #expect(buffer.isEmpty && buffer.hasRoom)
        #expect(buffer.append([1, 2, 3, 4, 5]))
        buffer.consume(3)
        #expect(Array(buffer.readable) == [4, 5])
        // Room exists only by sliding the unsent bytes to the front.
        #expect(buffer.append([6, 7, 8, 9, 10]))
        #expect(Array(buffer.readable) == [4, 5, 6, 7, 8, 9, 10])
        #expect(buffer.freeSpace.count == 1)
        #expect(!buffer.append([11, 12]), "a message that does not fit is refused whole")
        #expect(buffer.count == 7)
        buffer.freeSpace[0] = 11
        buffer.commit(1)
        #expect(!buffer.hasRoom)
        buffer.consume(8)
        #expect(buffer.isEmpty && buffer.freeSpace.count == 8)
    }

    /// A response head rewritten in place: what follows it moves, longer or shorter.
    @Test func relayBufferReplacesARangeOfTheUnsentBytes() {
        let buffer = RelayBuffer(capacity: 10)
        #expect(buffer.append([0, 1, 2, 3, 4, 5]))
        buffer.consume(2)
        #expect(buffer.replace(1 ..< 3, with: [7, 7, 7, 7]))
        #expect(Array(buffer.readable) == [2, 7, 7, 7, 7, 5])
        #expect(buffer.replace(0 ..< 5, with: [9]))
        #expect(Array(buffer.readable) == [9, 5])
        #expect(buffer.replace(2 ..< 2, with: Array(repeating: 1, count: 8)))
        #expect(buffer.count == 10)
        #expect(!buffer.replace(0 ..< 1, with: [1, 2]), "one byte too many: nothing changes")
        #expect(Array(buffer.readable) == [9, 5] + Array(repeating: 1, count: 8))
        buffer.truncate(to: 3)
        #expect(Array(buffer.readable) == [9, 5, 1])
        buffer.truncate(to: 0)
        #expect(buffer.isEmpty && buffer.freeSpace.count == 10)
    }

    /// `GET /stats` counts every phase a connection can be in, each once.
    @Test func theControlStatesCoverEveryPhase() {
        #expect(ProxyServer.controlStates == ["handshake", "sniffing", "resolving", "connecting", "proxy-handshake", "origin-tls", "relaying",
                                              "associated", "closing", "idle"])
        #expect(ProxyServer.controlState(.handshake, idle: true) == "idle")
    }

    @Test func optionsDefaultToLoopbackSOCKS() throws {
        let none = try ProxyCommand.parse([]).get()
        #expect(none == ProxyCommand.Options(socksListen: "127.0.0.1:1080"))
        #expect(!none.listenersGiven, "the profile's socks5-listen and http-listen may still say")
        let httpOnly = try ProxyCommand.parse(["--http-listen", "127.0.0.1:8080"]).get()
        #expect(httpOnly.socksListen == nil && httpOnly.httpListen == "127.0.0.1:8080")
        let all = try ProxyCommand.parse(["--listen", "[::1]:1080", "--profile", "p.conf", "--auth", "a:b"]).get()
        var expected = ProxyCommand.Options(socksListen: "[::1]:1080", profile: "p.conf", auth: "a:b")
        expected.listenersGiven = true
        #expect(all == expected)
        #expect(throws: UsageError.self) { try ProxyCommand.parse(["--listen"]).get() }
        #expect(throws: UsageError.self) { try ProxyCommand.parse(["--socks"]).get() }
        let har = try ProxyCommand.parse(["--http-listen", "127.0.0.1:8080", "--har", "x.har", "--har-body-limit", "0"]).get()
        #expect(har.har == "x.har" && har.harBodyLimit == 0)
        #expect(try ProxyCommand.parse(["--flow-log", "f.jsonl"]).get().flowLog == "f.jsonl")
        #expect(throws: UsageError.self) { try ProxyCommand.parse(["--har-body-limit", "-1"]).get() }
        #expect(throws: UsageError.self) { try ProxyCommand.parse(["--har"]).get() }
        // The control socket: the standard one unless told otherwise, as for exec and run.
        #expect(none.control == .standard)
        #expect(try ProxyCommand.parse(["--control", "/tmp/p.sock"]).get().control == .path("/tmp/p.sock"))
        #expect(try ProxyCommand.parse(["--no-control"]).get().control == .off)
        #expect(try ProxyCommand.parse(["--sniff"]).get().sniff && !none.sniff)
        #expect(throws: UsageError.self) { try ProxyCommand.parse(["--control"]).get() }
        // The command line's addresses and credentials are usage errors (exit 2), found before anything starts.
        for bad in [["--listen", "127.0.0.1"], ["--http-listen", "foo:80"], ["--auth", "nopass"], ["--auth", ":x"],
                    ["--listen", "127.0.0.1:1080", "--http-listen", "127.0.0.1:1080"], ["--listen", "127.0.0.1:1", "--listen", "127.0.0.1:2"]] {
            #expect(throws: UsageError.self, "\(bad)") { try ProxyCommand.parse(bad[...]).get() }
        }
    }

    @Test func listenAddressesAreAddresses() throws {
        let (v6, _) = try ProxyCommand.listenAddress("[::1]:1080", option: "--listen")
        #expect(v6.description == "[::1]:1080")
        for bad in ["localhost:1080", "127.0.0.1", "127.0.0.1:0", "::1:1080"] {
            #expect(throws: EngineError.self, "\(bad)") { try ProxyCommand.listenAddress(bad, option: "--listen") }
        }
    }

    @Test func credentialsSplitAtTheFirstColon() throws {
        let credentials = try #require(try ProxyCommand.credentials("alice:pa:ss"))
        #expect(credentials.username == "alice" && credentials.password == "pa:ss")
        #expect(try ProxyCommand.credentials(nil) == nil)
        for bad in ["alice", ":pw", "alice:"] {
            #expect(throws: EngineError.self, "\(bad)") { try ProxyCommand.credentials(bad) }
        }
    }
}
