internal import HTTP
internal import Relay
internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// The HTTP listener's absolute-form requests (`GET http://host/path`), planned
/// as a tunnel's HTTP request is (`FlowDirector.plan`: URL Rewrite, Map Local,
/// the rule, Header Rewrite), so a client pointed at `sluice proxy` sees the
/// profile's HTTP rules as an app in the tunnel does. The response head gets
/// the http-response rewrites; [Statistics] record each exchange. A client's
/// connection is kept alive across requests, and so is the upstream one while
/// the requests go to the same place (`HTTPForwarding`, docs/proxy-server.md).
extension ProxyServer {
    /// `scheme`: https for a request read inside an intercepted tunnel.
    func forward(_ connection: InboundConnection, target: ProxyTarget, head bytes: [UInt8], scheme: String = "http") {
        connection.target = target
        // Relay's machine made this head (origin form, Host from the URI); read it back as HTTP's head.
        var parser = HTTPRequestParser()
        let parsed = bytes.withUnsafeBytes { buffer in Result { () throws(HTTPParseError) in try parser.parse(buffer) } }
        guard case let .success(.head(head, _)?) = parsed else {
            let error: HTTPParseError = if case let .failure(failure) = parsed { failure } else { .invalidTarget }
            refuse(connection, bytes: HTTPResponse.simple(status: error.requestStatus.code, reason: error.requestStatus.reason, text: "sluice: bad request: \(error)\n"),
                   reason: .protocolViolation(.requestLine))
            return
        }
        let planned = director.plan(head, facts: flowFacts(for: connection, target: target), now: now, scheme: scheme)
        connection.route = planned.exchange.rule.isEmpty ? planned.exchange.policy : planned.exchange.rule
        // The connection's line names its latest request's decision, as a tunnel's HTTP-mode flow's does.
        noteRoute(connection, target: target, route: planned.route, reason: planned.exchange.rule, policy: planned.exchange.policy)
        trace("\(connection.description): \(head.method.rawValue) \(planned.exchange.url) → \(planned.route) (\(connection.route))")
        switch planned.route {
        case let .answer(bytes):
            // A redirect or mock of URL Rewrite, a Map Local file, or a rule's REJECT page.
            if planned.exchange.mocked {
                statistics.answeredHere += 1
            } else {
                statistics.refusedByRules += 1
                noteEnd(connection, .blocked)
            }
            note("sluice: proxy: \(connection.peer) → \(planned.exchange.url): answered here: \(connection.route)")
            var exchange = planned.exchange
            exchange.localAnswer = bytes
            director.record(exchange, now: now)
            addToHAR(exchange, connection)
            logRequest(exchange, connection)
            close(connection, answer: bytes)
            return
        case .refuse:
            statistics.refusedByRules += 1
            fail(connection, .notAllowed, reason: "refused: \(connection.route)", counted: false)
            return
        case .direct, .proxy:
            break
        }
        let closeAfter = !head.keepAlive || connection.clientReadClosed
        let forwarded = InboundConnection.forwardedHead(planned.head, close: closeAfter, upgrade: head.upgrade != nil)
        connection.forwarding = HTTPForwarding(exchange: planned.exchange, method: head.method, route: planned.route, upstream: planned.target,
                                               head: forwarded, closeAfter: closeAfter, responseHeadLimit: responseHeadLimit,
                                               bytesUp: connection.bytesUp, bytesDown: connection.bytesDown)
        connection.forwardHead = forwarded
        let upstream = planned.target
        if connection.upstream != nil, connection.upstreamTarget == upstream {
            // Kept alive from the last exchange, and still quiet (an idle upstream that spoke or closed was dropped).
            trace("\(connection.description): reusing the upstream connection to \(upstream)")
            connection.forwarding?.reusedUpstream = true
            connection.phase = .relaying
            connection.deadline = nil
            startExchange(connection)
            return
        }
        openUpstream(connection, route: planned.route, upstream: upstream)
    }

    /// Connects to where a plain-HTTP request goes: the origin, an upstream
    /// HTTP proxy (which takes the absolute form itself), or through a SOCKS5 proxy.
    func openUpstream(_ connection: InboundConnection, route: FlowRoute, upstream: UpstreamTarget) {
        dropUpstream(connection)
        connection.upstreamTarget = upstream
        switch route {
        case let .proxy(proxy) where proxy.kind == .http && !upstream.tls:
            // A forward proxy takes the absolute-form head itself (with our credentials): no CONNECT.
            connect(connection, host: proxy.host, port: proxy.port)
        case let .proxy(proxy):
            guard let host = ProxyTarget.Host(name: upstream.host) else {
                fail(connection, .generalFailure, reason: "cannot name \(upstream.host) to proxy \(proxy.name)")
                return
            }
            do { connection.proxyHandshake = try ProxyHandshake(proxy: proxy, target: ProxyTarget(host: host, port: upstream.port)) } catch {
                fail(connection, .generalFailure, reason: error.message)
                return
            }
            connect(connection, host: proxy.host, port: proxy.port)
        case .direct, .answer, .refuse:
            connect(connection, host: upstream.host, port: upstream.port)
        }
    }

    /// The path is open: the parsers start where this exchange's bytes
    /// start, and the request goes to the upstream's buffer.
    func startExchange(_ connection: InboundConnection) {
        guard var forwarding = connection.forwarding else { return }
        forwarding.requestScanned = connection.toUpstream.count
        forwarding.responseScanned = connection.toClient.count
        forwarding.heldFrom = connection.toClient.count
        connection.forwarding = forwarding
        feedRequest(connection)
    }

    /// Moves the planned head, then whatever the client sent after its
    /// request head (`received`), into the upstream's buffer as far as there
    /// is room; the rest waits for the next pump. (The last request's body
    /// may still fill the buffer, and pipelined bytes may be many.) The
    /// client is read again only once `received` is empty, so bytes keep
    /// their order.
    func feedRequest(_ connection: InboundConnection) {
        // A held request let go waits whole (`toUpstreamLater`): nothing may pass it.
        guard let forwarding = connection.forwarding, !forwarding.passthrough, forwarding.requests != nil,
              connection.toUpstreamLater.isEmpty else { return }
        if let head = connection.forwardHead {
            guard connection.toUpstream.append(head) else { return }
            connection.forwardHead = nil
        }
        guard !connection.received.isEmpty else {
            scanRequest(connection)
            return
        }
        let n = min(connection.received.count, connection.toUpstream.room)
        guard n > 0 else { return }
        _ = connection.received.withUnsafeBytes { connection.toUpstream.append(UnsafeRawBufferPointer(rebasing: $0[0 ..< n])) }
        connection.received.removeFirst(n)
        scanRequest(connection)
    }

    /// Follows the request into `toUpstream`. Whatever the client sent after
    /// its end is its next request: it waits in `received` until this
    /// exchange is over, and the client is not read meanwhile.
    func scanRequest(_ connection: InboundConnection) {
        guard var forwarding = connection.forwarding, var parser = forwarding.requests else { return }
        // A request that ends with its head (no body) is reported by a call
        // on what is left, even when nothing is; nil means "all taken, more wanted".
        for _ in 0 ..< 4096 {
            let readable = connection.toUpstream.readable
            let step: HTTPRequestStep?
            do { step = try parser.parse(UnsafeRawBufferPointer(rebasing: readable[forwarding.requestScanned...])) } catch {
                // The head was read before, so this is the body's framing (a bad chunk): cut the connection.
                forwarding.requests = nil
                connection.forwarding = forwarding
                abort(connection, reason: "bad request body: \(error)")
                return
            }
            switch step {
            case nil, .upgraded?:
                // (`.upgraded` comes only after `upgrade()`, which is never asked for here.)
                forwarding.requestScanned = readable.count
            case let .head(head, consumed)?:
                // (The planned head, as `forward` put it here.)
                if holdsRequest(head, connection, &forwarding, length: consumed) { continue }
                forwarding.requestScanned += consumed
                continue
            case let .body(consumed)?, let .end(consumed)?:
                var pastLimit = false
                if forwarding.heldRequest != nil {
                    pastLimit = !holdRequestBody(connection, &forwarding, consumed: consumed)
                } else {
                    noteBody(readable, from: forwarding.requestScanned, count: consumed, into: &forwarding.exchange.requestBody,
                             content: &forwarding.exchange.requestContent, total: &forwarding.exchange.requestBodyBytes)
                    forwarding.requestScanned += consumed
                }
                guard case .end? = step else {
                    if pastLimit { releaseHeldRequest(connection, &forwarding, rewrite: false) }
                    continue
                }
                // (The buffer's count, not `readable`'s: a held body's bytes have left it.)
                let next = forwarding.requestScanned
                if next < connection.toUpstream.count {
                    connection.received = Array(connection.toUpstream.readable[next...]) + connection.received
                    connection.toUpstream.truncate(to: next)
                }
                forwarding.requests = nil
                if forwarding.heldRequest != nil {
                    // A large body: rewritten off the loop; it goes when it is back (`bodyRewritesFinished`).
                    if !pastLimit, requestRewritesOffTheLoop(connection, &forwarding) {
                        connection.forwarding = forwarding
                        return
                    }
                    releaseHeldRequest(connection, &forwarding, rewrite: !pastLimit)
                }
                // All of the request is what `toUpstream` holds to its scan, and what waits behind it.
                forwarding.requestEnd = forwarding.requestScanned + connection.toUpstreamLater.count
                connection.forwarding = forwarding
                return
            }
            break
        }
        forwarding.requests = parser
        connection.forwarding = forwarding
    }

    /// The response ended (`parser` has said so): a held one goes to the
    /// client, or first to the worker when it is large, the response then
    /// ending when it is back (`bodyRewritesFinished`).
    func responseEnded(_ connection: InboundConnection, _ forwarding: inout HTTPForwarding, parser: HTTPResponseParser) {
        if forwarding.heldResponse != nil {
            if rewritesOffTheLoop(connection, &forwarding) {
                forwarding.responses = parser
                return
            }
            releaseHeldResponse(connection, &forwarding, rewrite: true)
        }
        forwarding.responses = nil
    }

    /// The longest response head taken: a quarter of the relay buffer (16 KiB;
    /// nginx's own default buffer for one is 4–8 KiB), so rewrites have room.
    var responseHeadLimit: Int { configuration.bufferSize / 4 }

    /// Follows the response into `toClient`. Interim (1xx) heads go on as
    /// they came; the final one waits until it is whole and takes the
    /// profile's http-response rewrites in place; the body passes as it is
    /// read, until the parser says where it ends.
    func scanResponse(_ connection: InboundConnection) {
        guard connections[connection.id] === connection, var forwarding = connection.forwarding,
              forwarding.pendingRewrite == nil, var parser = forwarding.responses else { return }
        // A message that ends with its head (a HEAD's answer, 204, 304) is
        // reported by a call on what is left, even when nothing is.
        for _ in 0 ..< 4096 {
            let readable = connection.toClient.readable
            let rest = UnsafeRawBufferPointer(rebasing: readable[forwarding.responseScanned...])
            let step: HTTPResponseStep?
            do { step = try parser.parse(rest) } catch {
                connection.forwarding = forwarding
                responseFailed(connection, reason: "bad response: \(error)")
                return
            }
            switch step {
            case nil:
                forwarding.responseScanned = readable.count
            case let .head(head, consumed)?:
                let end = forwarding.responseScanned + consumed
                forwarding.responseScanned = end
                if head.isInformational, head.status != 101 {
                    forwarding.heldFrom = end
                    forwarding.responseStarted = true
                    continue
                }
                forwarding.exchange.status = head.status
                forwarding.exchange.headAt = now
                let rewritten = director.rewriteResponse(head, url: forwarding.exchange.url, forwardProxy: forwarding.exchange.forwardProxy)
                forwarding.exchange.responseHead = rewritten ?? head
                if har != nil, head.isChunked { forwarding.exchange.responseContent = HTTPChunkedContent() }
                if !head.keepAlive { forwarding.closeAfter = true }
                if let held = forwarding.heldFrom, holdsResponse(rewritten ?? head, in: &forwarding) {
                    // [Body Rewrite]: the head goes with the new body at its end; `heldFrom` keeps its place.
                    _ = connection.toClient.replace(held ..< end, with: [])
                    forwarding.responseScanned = held
                    continue
                }
                if let rewritten, let held = forwarding.heldFrom {
                    let bytes = rewritten.serialized()
                    guard connection.toClient.replace(held ..< end, with: bytes) else {
                        connection.forwarding = forwarding
                        responseFailed(connection, reason: "the rewritten response head does not fit the buffer")
                        return
                    }
                    forwarding.responseScanned = held + bytes.count
                }
                forwarding.heldFrom = nil
                forwarding.responseStarted = true
                continue
            case let .body(consumed)?, let .end(consumed)?:
                if forwarding.heldResponse != nil {
                    holdResponseBody(connection, &forwarding, consumed: consumed)
                } else {
                    noteBody(readable, from: forwarding.responseScanned, count: consumed, into: &forwarding.exchange.responseBody,
                             content: &forwarding.exchange.responseContent, total: &forwarding.exchange.responseBodyBytes)
                    forwarding.responseScanned += consumed
                }
                guard case .end? = step else { continue }
                // (The buffer's count, not `readable`'s: a held body's bytes have left it.)
                if forwarding.responseScanned < connection.toClient.count {
                    // Bytes after the response nobody asked for: not a connection to use again.
                    trace("\(connection.description): \(connection.toClient.count - forwarding.responseScanned) bytes after the response; dropped")
                    connection.toClient.truncate(to: forwarding.responseScanned)
                    forwarding.closeAfter = true
                }
                responseEnded(connection, &forwarding, parser: parser)
                connection.forwarding = forwarding
                return
            case .upgraded?:
                // 101 Switching Protocols: opaque bytes both ways from here, the
                // client's early ones (held in `received`) first.
                forwarding.passthrough = true
                forwarding.responses = nil
                forwarding.requests = nil
                if let har, WebSocketRecording.isWebSocket(forwarding.exchange) {
                    let webSocket = WebSocketRecording(exchange: forwarding.exchange, keepLimit: har.bodyLimit)
                    // The server's first frames may have come with its 101.
                    webSocket.read(UnsafeRawBufferPointer(rebasing: readable[forwarding.responseScanned...]), fromApp: false, time: wallSeconds)
                    forwarding.webSocket = webSocket
                }
                forwarding.responseScanned = readable.count
                connection.forwarding = forwarding
                // Statistics and the flow log have the upgrade now; a WebSocket's HAR entry waits for its end.
                recordExchange(connection)
                feedEarlyBytes(connection)
                return
            }
            break
        }
        forwarding.responses = parser
        connection.forwarding = forwarding
    }

    /// After a 101, the bytes the client sent behind its request go first, as far as there is room.
    func feedEarlyBytes(_ connection: InboundConnection) {
        let n = min(connection.received.count, connection.toUpstream.room)
        guard n > 0 else { return }
        _ = connection.received.withUnsafeBytes { connection.toUpstream.append(UnsafeRawBufferPointer(rebasing: $0[0 ..< n])) }
        if let webSocket = connection.forwarding?.webSocket {
            connection.received.withUnsafeBytes { webSocket.read(UnsafeRawBufferPointer(rebasing: $0[0 ..< n]), fromApp: true, time: wallSeconds) }
        }
        connection.received.removeFirst(n)
    }

    /// A reused upstream connection closed (or was reset) before any of the
    /// response came: the origin had closed it as idle while the request was
    /// on its way. The request goes again on a new connection, when it may
    /// (`HTTPForwarding.mayRetry`). Returns whether it does.
    func retryOnFreshUpstream(_ connection: InboundConnection) -> Bool {
        guard let old = connection.forwarding, old.mayRetry, connection.toClient.count == old.heldFrom else { return false }
        trace("\(connection.description): the reused upstream closed before answering; sending the request again on a new connection")
        var fresh = HTTPForwarding(exchange: old.exchange, method: old.method, route: old.route, upstream: old.upstream, head: old.head,
                                   closeAfter: old.closeAfter, responseHeadLimit: responseHeadLimit,
                                   bytesUp: old.bytesUpAtStart, bytesDown: old.bytesDownAtStart)
        fresh.retried = true
        fresh.exchange.resends += 1
        // Until the new connection is up, what the client still has to take of earlier responses goes on.
        fresh.heldFrom = connection.toClient.count
        fresh.responseScanned = connection.toClient.count
        connection.forwarding = fresh
        connection.forwardHead = old.head
        // Only this request's head can be waiting there (it has no body, and the last exchange had ended).
        connection.toUpstream.truncate(to: 0)
        openUpstream(connection, route: old.route, upstream: old.upstream)
        return true
    }

    /// The upstream closed: a response that runs to the close ends here; one
    /// cut short fails.
    func upstreamClosedDuringExchange(_ connection: InboundConnection) {
        if retryOnFreshUpstream(connection) { return }
        guard var forwarding = connection.forwarding, !forwarding.passthrough else { return }
        forwarding.closeAfter = true
        guard forwarding.pendingRewrite == nil, var parser = forwarding.responses else {
            connection.forwarding = forwarding
            return
        }
        let step = try? parser.finish()
        if case .end? = step {
            // A held body that ran to the close goes now.
            responseEnded(connection, &forwarding, parser: parser)
            connection.forwarding = forwarding
            return
        }
        connection.forwarding = forwarding
        responseFailed(connection, reason: forwarding.responseStarted ? "the upstream closed in the middle of the response" : "the upstream closed before answering")
    }

    /// After each pump: an exchange whose request and response have both
    /// ended is recorded; then the connection closes (once the client has
    /// the last bytes) or waits for the client's next request.
    /// Returns whether it did (the connection then wants another pump).
    @discardableResult
    func finishExchangeIfDone(_ connection: InboundConnection) -> Bool {
        guard connection.phase == .relaying, let forwarding = connection.forwarding, !forwarding.passthrough else { return false }
        guard forwarding.responses == nil, forwarding.requests == nil || forwarding.closeAfter else { return false }
        recordExchange(connection)
        connection.forwarding = nil
        connection.requestsServed += 1
        if forwarding.closeAfter || connection.clientReadClosed || connection.upstreamReadClosed {
            // The client learns the end from the response (its framing, or
            // `Connection: close`); then we close, however slowly it reads
            // what is left (no grace period: this is no refusal).
            close(connection, answer: [])
            connection.deadline = nil
            return true
        }
        trace("\(connection.description): exchange done; waiting for the next request")
        connection.phase = .handshake
        connection.http = HTTPProxyServerHandshake(credentials: configuration.credentials)
        connection.deadline = now + configuration.keepAliveIdle
        if connection.clientTLS != nil {
            // Inside TLS the next request is origin-form, and may be decrypted already.
            takeDecryptedRequest(connection)
            stepIntercepted(connection)
        } else if !connection.received.isEmpty {
            stepHTTP(connection)
        }
        return true
    }

    /// A plain-HTTP exchange whose request has gone and whose client is not
    /// read until the response is over (what it sent since waits in the
    /// kernel): only its close is watched meanwhile, so that an origin that
    /// never answers is not waited on for a client that has gone.
    func watchesClientClose(_ connection: InboundConnection) -> Bool {
        guard let forwarding = connection.forwarding, !forwarding.passthrough else { return false }
        return !connection.clientReadClosed && !readsClient(connection)
    }

    /// The client's FIN came while it waited. A half-close ("no more
    /// requests", as `nc -N` sends) still gets its response, so the exchange
    /// goes on; but a client that closed its socket (Ctrl-C, its own timeout)
    /// sends the same FIN. Keepalive probes tell them apart: a half-closed
    /// socket acknowledges them for as long as it lives; a closed one lingers
    /// as an orphan in FIN-WAIT-2 that acknowledges them too, until the
    /// kernel drops it (tcp_fin_timeout, 60 s by default), and then a probe
    /// meets a reset, which ends the exchange and the upstream's connection.
    /// (nginx and Squid take any FIN for an abort, and so fail half-closing
    /// clients; a probe every 5 s costs nothing.)
    func clientHalfClosed(_ connection: InboundConnection) {
        trace("\(connection.description): the client's FIN came while it waits for the response")
        probeClient(connection)
    }

    /// Keepalive probes on the client's socket, once its FIN came
    /// (`FlowFacts.closedClientProbe`): while an exchange waits
    /// (`clientHalfClosed`), and on a plain relay once the FIN went upstream.
    func probeClient(_ connection: InboundConnection) {
        connection.clientFinSeen = true
        trace("\(connection.description): probing the client, whose FIN came")
        let probe = FlowFacts.closedClientProbe
        connection.client.setKeepalive(idleSeconds: probe.idleSeconds, intervalSeconds: probe.intervalSeconds, count: probe.count)
    }

    /// The client's socket failed (a reset, or unanswered keepalive probes)
    /// while its exchange waited: the exchange ends and the upstream's
    /// connection with it.
    func clientLeft(_ connection: InboundConnection) {
        if var forwarding = connection.forwarding, forwarding.exchange.status == nil, forwarding.exchange.failure == nil {
            forwarding.exchange.failure = "the client went away before the response"
            forwarding.exchange.failureKind = .other
            connection.forwarding = forwarding
        }
        cut(connection, reason: "the client went away")
    }

    /// An upstream kept for the next request spoke or closed: it cannot be used again.
    func idleUpstreamStirred(_ connection: InboundConnection) {
        if let tls = connection.upstreamTLS, let upstream = connection.upstream, tls.isConnected {
            // TLS 1.3 servers send session tickets after the handshake: no reason to drop the connection.
            switch tls.read(into: plaintextScratch, socket: upstream.socket, scratch: scratch) {
            case .again, .wouldBlock: return
            case .plaintext, .closed, .failed, .socketFailed: break
            }
        }
        trace("\(connection.description): the idle upstream connection closed; dropped")
        dropUpstream(connection)
    }

    /// No usable response came (the upstream closed first, or sent something
    /// that is not HTTP): a 502 if the client has seen none of it yet, else a reset.
    func responseFailed(_ connection: InboundConnection, reason: String) {
        guard var forwarding = connection.forwarding else {
            abort(connection, reason: reason)
            return
        }
        forwarding.exchange.failure = reason
        forwarding.exchange.failureKind = .protocolError
        forwarding.responses = nil
        connection.forwarding = forwarding
        noteEnd(connection, .failed, error: reason)
        note("sluice: proxy: \(connection.peer) → \(forwarding.exchange.url): \(reason)")
        guard !forwarding.responseStarted, let held = forwarding.heldFrom else {
            abort(connection, reason: reason)
            return
        }
        statistics.errors += 1
        recordExchange(connection)
        dropUpstream(connection)
        // What an earlier response left unsent stays; this one's bytes go.
        connection.toClient.truncate(to: held)
        close(connection, answer: HTTPResponse.simple(status: 502, reason: "Bad Gateway", text: "sluice: \(reason)\n"))
    }

    /// The exchange's record for the [Statistics] books.
    func recordExchange(_ connection: InboundConnection) {
        guard var forwarding = connection.forwarding, !forwarding.recorded else { return }
        forwarding.exchange.requestBytes = connection.bytesUp - forwarding.bytesUpAtStart
        forwarding.exchange.responseBytes = connection.bytesDown - forwarding.bytesDownAtStart
        if forwarding.exchange.status == nil, forwarding.exchange.failure == nil {
            forwarding.exchange.failure = "the connection ended before a response"
            forwarding.exchange.failureKind = .other
        }
        if let held = forwarding.heldResponse {
            // The client left while [Body Rewrite] held the response (on the
            // rewriting thread, or still coming): its record keeps the body
            // as the origin sent it, and says why the client never got it.
            held.body.wire.withUnsafeBytes {
                noteBody($0, from: 0, count: $0.count, into: &forwarding.exchange.responseBody,
                         content: &forwarding.exchange.responseContent, total: &forwarding.exchange.responseBodyBytes)
            }
            forwarding.exchange.failure = forwarding.exchange.failure ?? "the client closed the connection while [Body Rewrite] held its response"
            forwarding.exchange.failureKind = forwarding.exchange.failureKind ?? .other
        }
        director.record(forwarding.exchange, now: now)
        if forwarding.webSocket == nil { addToHAR(forwarding.exchange, connection) }
        logRequest(forwarding.exchange, connection)
        forwarding.recorded = true
        connection.forwarding = forwarding
    }

    /// Body bytes as they pass: counted, and with `--har` kept up to its
    /// limit (a chunked body's data, without its framing, through `content`).
    func noteBody(_ buffer: UnsafeRawBufferPointer, from offset: Int, count: Int, into kept: inout [UInt8],
                  content: inout HTTPChunkedContent?, total: inout Int) {
        total += count
        guard let har, count > 0 else { return }
        HTTPChunkedContent.keep(UnsafeRawBufferPointer(rebasing: buffer[offset ..< offset + count]), content: &content, into: &kept, limit: har.bodyLimit)
    }

    /// A recorded WebSocket's entry, with its messages, as its connection ends.
    func finishWebSocket(_ connection: InboundConnection) {
        guard let webSocket = connection.forwarding?.webSocket else { return }
        connection.forwarding?.webSocket = nil
        addToHAR(webSocket.exchange, connection, webSocket: webSocket)
    }

    /// Bytes just read into a relay buffer (`space`'s first `n`), for a recorded WebSocket.
    func noteWebSocket(_ connection: InboundConnection, _ space: UnsafeMutableRawBufferPointer, _ n: Int, fromClient: Bool) {
        guard n > 0, let webSocket = connection.forwarding?.webSocket else { return }
        webSocket.read(UnsafeRawBufferPointer(rebasing: space[0 ..< n]), fromApp: fromClient, time: wallSeconds)
    }

    /// Now, in seconds since the epoch (HAR's WebSocket message times).
    var wallSeconds: Double { Double(wallTime(now)) / 1e9 }

    func addToHAR(_ exchange: HTTPExchange, _ connection: InboundConnection, webSocket: WebSocketRecording? = nil) {
        guard let har else { return }
        let server = connection.upstreamAddress.map { "\($0)" }
        if webSocket == nil, let head = exchange.requestHead {
            // Built on the writer's thread (decoding and escaping its bodies), as the tunnel's are.
            let startedAt = wallTime(exchange.started), now = self.now, limit = har.bodyLimit, id = "\(connection.id)"
            let comment = "\(connection.peer) via \(connection.listener) listener", process = connection.owner?.label
            har.add(estimatedBodyBytes: exchange.bodyBytesForHAR) {
                exchange.harEntry(head: head, bodyLimit: limit, startedAt: startedAt, now: now, serverIPAddress: server,
                                  connection: id, comment: comment, process: process)
            }
            return
        }
        let entry = exchange.harEntry(bodyLimit: har.bodyLimit, startedAt: wallTime(exchange.started),
                                      now: now, serverIPAddress: server, connection: "\(connection.id)",
                                      comment: "\(connection.peer) via \(connection.listener) listener", process: connection.owner?.label)
        guard var entry else { return }
        webSocket?.decorate(&entry)
        har.add(entry)
    }

    static func errorKind(for error: RelayError) -> ConnectionErrorKind {
        switch error {
        case .connectionRefused: return .refused
        case .hostUnreachable, .networkUnreachable, .ttlExpired: return .unreachable
        case .timedOut: return .timedOut
        case .unexpectedClose: return .reset
        case .httpStatus, .protocolViolation: return .protocolError
        case .generalFailure, .notAllowed, .commandNotSupported, .addressTypeNotSupported, .authRejected,
             .noAcceptableMethod, .unrepresentable:
            return .other
        }
    }
}
