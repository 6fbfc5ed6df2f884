internal import HTTP
internal import Relay
internal import Rules
internal import Stack
internal import Sys
internal import TLS
internal import Wire

/// HTTPS interception in `sluice proxy`: a CONNECT or SOCKS5 tunnel to a
/// name in [MITM] hostname is answered at once, its ClientHello read as
/// `--sniff` reads first bytes, and, when Sluice's TLS server can answer it,
/// the tunnel becomes a kept-alive HTTP client of the HTTP listener's own
/// kind: each request inside is planned with https as its scheme
/// (`forward`), and goes to its origin over Sluice's TLS client. The relay
/// buffers and `received` hold plaintext; only the sockets' reads and
/// writes go through TLS (`readClientTLS`, `sealToClient`, and their
/// upstream twins), so keep-alive, HAR, the flow log and [Statistics] work
/// as for plain HTTP. docs/tls.md, "In the engine".
extension ProxyServer {
    /// A tunnel whose hello decides (`startInterception`): to a name [MITM]
    /// lists, or with `--sniff` to an address (its hello may name one).
    func mayIntercept(_ target: ProxyTarget) -> Bool {
        guard let mitm = director.profile?.mitm, !mitm.isEmpty, interception.ca != nil else { return false }
        switch target.host {
        case let .domain(name): return mitm.intercepts(host: name, port: target.port)
        case .ipv4, .ipv6: return configuration.sniffAddressTargets
        }
    }

    /// After the sniff: intercepts a TLS tunnel whose name (its SNI, else its
    /// target's) is in [MITM] and whose hello Sluice's server can answer.
    /// False relays it untouched, as before.
    func startInterception(_ connection: InboundConnection, target: ProxyTarget, facts: FlowFacts) -> Bool {
        guard let mitm = director.profile?.mitm, !mitm.isEmpty, interception.ca != nil else { return false }
        let name = facts.domain ?? target.host.description
        guard mitm.intercepts(host: name, port: target.port) else { return false }
        if let obstacle = InterceptionCheck.obstacle(inFirstRecords: connection.received, protocols: Interception.protocols) {
            trace("\(connection.description): \(name) is in [MITM] but passes through: \(obstacle)")
            connection.record?.error = "not intercepted: \(obstacle)"
            return false
        }
        // The tunnel's reply must be out before Sluice's first record: a client
        // sends its hello only after the reply, so it is.
        guard !connection.clientOwed else { return false }
        let tls = TLSOverSocket(interception.server(address: target.host.description), host: name)
        connection.clientTLS = tls
        let hello = connection.received
        connection.received = []
        connection.route = "[MITM] hostname: HTTPS intercepted, decided per request"
        noteRoute(connection, target: target, route: .direct, reason: connection.route, sniffed: facts)
        trace("\(connection.description): HTTPS intercepted (\(name))")
        do throws(TLSError) { try tls.absorb(hello, socket: connection.client) } catch {
            clientTLSFailed(connection, error)
            return true
        }
        // Waiting for the first request inside, as a kept-alive client waits for its next.
        connection.phase = .handshake
        connection.deadline = now + configuration.keepAliveIdle
        return true
    }

    /// Between requests: the client's records, decrypted into `received`, and the next request planned.
    func readInterceptedRequest(_ connection: InboundConnection) {
        guard let tls = connection.clientTLS else { return }
        readLoop: for _ in 0 ..< 8 {
            takeDecryptedRequest(connection)
            guard connection.received.count < Self.interceptedHeadLimit else { break }
            switch tls.read(into: plaintextScratch, socket: connection.client, scratch: scratch) {
            case let .plaintext(n):
                connection.received += UnsafeRawBufferPointer(plaintextScratch.sub(0, n))
            case .again:
                continue readLoop
            case .wouldBlock:
                break readLoop
            case .closed:
                trace("\(connection.description): the intercepted client closed between requests")
                finish(connection)
                return
            case let .failed(error):
                clientTLSFailed(connection, error)
                return
            case let .socketFailed(error):
                abort(connection, reason: "client: \(error)")
                return
            }
        }
        stepIntercepted(connection)
    }

    /// A request head (16 KiB, as the HTTP listener allows) and a little of what follows.
    static let interceptedHeadLimit = 20 * 1024

    /// Decrypted bytes the last exchange's reads left, into `received`.
    func takeDecryptedRequest(_ connection: InboundConnection) {
        guard let tls = connection.clientTLS, tls.hasPlaintextWaiting else { return }
        let room = Self.interceptedHeadLimit - connection.received.count
        guard room > 0 else { return }
        guard case let .plaintext(n) = tls.takeWaiting(into: plaintextScratch.sub(0, min(room, plaintextScratch.count)), socket: connection.client)
        else { return }
        connection.received += UnsafeRawBufferPointer(plaintextScratch.sub(0, n))
    }

    /// The next origin-form request in `received`, planned as the HTTP listener's are.
    func stepIntercepted(_ connection: InboundConnection) {
        guard connection.phase == .handshake, !connection.received.isEmpty, let target = connection.target else { return }
        var parser = HTTPRequestParser()
        let parsed = connection.received.withUnsafeBytes { buffer in Result { () throws(HTTPParseError) in try parser.parse(buffer) } }
        switch parsed {
        case .success(nil):
            guard connection.received.count >= Self.interceptedHeadLimit else { return }
            refuseIntercepted(connection, status: 431, reason: "Request Header Fields Too Large", text: "sluice: the request head is too large\n")
        case let .success(.head(_, consumed)?):
            let head = Array(connection.received.prefix(consumed))
            connection.received.removeFirst(consumed)
            connection.deadline = nil
            forward(connection, target: target, head: head, scheme: "https")
        case .success(.body?), .success(.end?), .success(.upgraded?):
            // A fresh parser's first step is a head or nothing.
            refuseIntercepted(connection, status: 400, reason: "Bad Request", text: "sluice: bad request\n")
        case let .failure(error):
            refuseIntercepted(connection, status: error.requestStatus.code, reason: error.requestStatus.reason, text: "sluice: bad request: \(error)\n")
        }
    }

    func refuseIntercepted(_ connection: InboundConnection, status: Int, reason: String, text: String) {
        statistics.handshakeFailures += 1
        noteEnd(connection, .failed, error: "\(status) \(reason)")
        close(connection, answer: HTTPResponse.simple(status: status, reason: reason, text: text, keepAlive: false))
    }

    /// The client's TLS failed (its alert is on its way): the connection ends,
    /// and a client that refused Sluice's certificate is named once on stderr.
    func clientTLSFailed(_ connection: InboundConnection, _ error: TLSError) {
        trace("\(connection.description): TLS with the client failed: \(error)")
        noteEnd(connection, .failed, error: "TLS with the client: \(error)")
        if let name = connection.clientTLS?.host, let warning = interception.refusalWarning(error, name: name) {
            note("sluice: proxy: \(connection.peer): \(warning)")
        }
        connection.phase = .closing
        connection.received = []
        connection.deadline = now + configuration.closingGrace
    }

    // MARK: The sockets' side of the relay buffers

    /// The client's records while a request streams up: plaintext into `toUpstream`.
    func readClientTLS(_ connection: InboundConnection, _ tls: TLSOverSocket<TLSServer>) {
        for _ in 0 ..< 8 {
            guard !connection.clientReadClosed, connection.toUpstream.hasRoom, readsClient(connection) else { return }
            let space = connection.toUpstream.freeSpace
            switch tls.read(into: space, socket: connection.client, scratch: scratch) {
            case let .plaintext(n):
                noteWebSocket(connection, space, n, fromClient: true)
                connection.toUpstream.commit(n)
                if let forwarding = connection.forwarding, !forwarding.passthrough {
                    scanRequest(connection)
                    guard connections[connection.id] === connection else { return }
                }
            case .again:
                continue
            case .wouldBlock:
                return
            case .closed:
                connection.clientReadClosed = true
                if let forwarding = connection.forwarding, forwarding.requests != nil, !forwarding.passthrough {
                    abort(connection, reason: "the client closed in the middle of its request")
                }
                return
            case let .failed(error):
                abort(connection, reason: "TLS with the client: \(error)")
                return
            case let .socketFailed(error):
                abort(connection, reason: "client: \(error)")
                return
            }
        }
    }

    /// The origin's records: plaintext into `toClient` (its caller scans the response).
    func readUpstreamTLS(_ connection: InboundConnection, _ upstream: SocketBox, _ tls: InterceptedUpstream) {
        for _ in 0 ..< 8 {
            guard !connection.upstreamReadClosed, upstreamHasRoom(connection) else { return }
            var window = connection.toClient.freeSpace
            if connection.forwarding?.heldFrom != nil {
                window = UnsafeMutableRawBufferPointer(rebasing: window.prefix(connection.toClient.storage.count / 2 - connection.toClient.count))
            }
            switch tls.read(into: window, socket: upstream.socket, scratch: scratch) {
            case let .plaintext(n):
                noteWebSocket(connection, window, n, fromClient: false)
                connection.toClient.commit(n)
            case .again:
                continue
            case .wouldBlock:
                return
            case .closed:
                connection.upstreamReadClosed = true
                return
            case let .failed(error):
                responseFailed(connection, reason: Interception.failureReason(error, host: tls.host))
                return
            case let .socketFailed(error):
                if retryOnFreshUpstream(connection) { return }
                abort(connection, reason: "upstream: \(error)")
                return
            }
        }
    }

    /// What `toClient` may send, sealed into records; false when the connection ended.
    /// The room that makes lets the origin's bytes already decrypted in (no
    /// epoll event would say they wait), and those go out too.
    func sealToClient(_ connection: InboundConnection, _ tls: TLSOverSocket<TLSServer>) -> Bool {
        for _ in 0 ..< 64 {
            var blocked = false
            while connection.sendableToClient > 0, !connection.clientWriteClosed {
                let sent = tls.write(UnsafeRawBufferPointer(rebasing: connection.toClient.readable.prefix(connection.sendableToClient)),
                                     to: connection.client)
                if sent.taken > 0 {
                    connection.sentToClient(sent.taken)
                    if connection.phase == .relaying { connection.bytesDown += sent.taken }
                }
                if sent.blocked || sent.taken == 0 {
                    blocked = sent.blocked
                    break
                }
            }
            if connection.sendableToClient == 0 { tls.flush(to: connection.client) }
            guard !blocked, connection.phase == .relaying, let origin = connection.upstreamTLS, origin.hasPlaintextWaiting,
                  !connection.upstreamReadClosed, upstreamHasRoom(connection) else { break }
            readUpstream(connection)
            guard connections[connection.id] === connection else { return false }
        }
        return connections[connection.id] === connection
    }

    /// What `toUpstream` holds, sealed into records for the origin; false when
    /// the connection ended. As `sealToClient`: the client's bytes already
    /// decrypted come in behind.
    func sealUpstream(_ connection: InboundConnection, _ upstream: SocketBox, _ tls: InterceptedUpstream) -> Bool {
        for _ in 0 ..< 64 {
            var blocked = false
            while !connection.toUpstream.isEmpty, !connection.upstreamWriteClosed {
                let sent = tls.write(connection.toUpstream.readable, to: upstream.socket)
                if sent.taken > 0 {
                    connection.sentUpstream(sent.taken, now: now)
                }
                if sent.blocked || sent.taken == 0 {
                    blocked = sent.blocked
                    break
                }
            }
            if connection.toUpstream.isEmpty { tls.flush(to: upstream.socket) }
            guard !blocked, let client = connection.clientTLS, client.hasPlaintextWaiting, !connection.clientReadClosed,
                  connection.toUpstream.hasRoom, readsClient(connection) else { break }
            readClient(connection)
            guard connections[connection.id] === connection else { return false }
        }
        return connections[connection.id] === connection
    }

    /// Reads what a TLS side decrypted earlier than its buffer had room for
    /// (epoll says nothing of it); true when the connection ended meanwhile.
    func takeWaitingPlaintext(_ connection: InboundConnection) -> Bool {
        if let tls = connection.upstreamTLS, tls.hasPlaintextWaiting, !connection.upstreamReadClosed, upstreamHasRoom(connection) {
            readUpstream(connection)
            guard connections[connection.id] === connection else { return true }
        }
        if let tls = connection.clientTLS, tls.hasPlaintextWaiting, connection.toUpstream.hasRoom, readsClient(connection) {
            readClient(connection)
            guard connections[connection.id] === connection else { return true }
        }
        return false
    }

    // MARK: The origin's handshake

    /// Connected to an https origin (after any proxy's handshake): Sluice's
    /// TLS client says hello; the exchange starts once it is up (`established`).
    func startOriginTLS(_ connection: InboundConnection, leftover: [UInt8]) {
        guard let upstream = connection.upstream, let target = connection.upstreamTarget else { return }
        let tls = InterceptedUpstream(interception.client(host: target.host), host: target.host)
        trace("\(connection.description): TLS to \(target.host):\(target.port)")
        connection.upstreamTLS = tls
        connection.phase = .originTLS
        connection.deadline = now + Self.originHandshakeLimit
        // A failure before the exchange starts drops only what this exchange would send.
        connection.forwarding?.heldFrom = connection.toClient.count
        tls.records.append(tls.machine.start())
        tls.flush(to: upstream.socket)
        if !leftover.isEmpty {
            do throws(TLSError) { try tls.absorb(leftover, socket: upstream.socket) } catch {
                responseFailed(connection, reason: Interception.failureReason(error, host: tls.host))
            }
        }
    }

    static let originHandshakeLimit: Duration = .seconds(10)

    func readOriginTLS(_ connection: InboundConnection) {
        guard let tls = connection.upstreamTLS, let upstream = connection.upstream else { return }
        for _ in 0 ..< 8 {
            switch tls.read(into: plaintextScratch, socket: upstream.socket, scratch: scratch) {
            case .again:
                guard tls.isConnected else { continue }
                trace("\(connection.description): TLS with \(tls.host) connected")
                connection.deadline = nil
                established(connection, leftover: UnsafeRawBufferPointer(start: nil, count: 0))
                return
            case .wouldBlock:
                return
            case .plaintext:
                // An HTTP server speaks only when asked.
                responseFailed(connection, reason: "TLS with \(tls.host): the origin sent data before the request")
                return
            case .closed:
                responseFailed(connection, reason: "TLS with \(tls.host): the origin closed during the handshake")
                return
            case let .failed(error):
                responseFailed(connection, reason: Interception.failureReason(error, host: tls.host))
                return
            case let .socketFailed(error):
                responseFailed(connection, reason: "upstream: \(error)")
                return
            }
        }
    }
}
