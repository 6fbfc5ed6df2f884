internal import HTTP
internal import Rules
internal import Relay
internal import Stack
internal import Sys
internal import Wire

/// HTTP mode: the loop's side of `HTTPSession`. The app's bytes are parsed in
/// place in the connection's receive ring and written upstream from there;
/// the upstream's bytes are read at most as far as the app's send ring has
/// room, so only rewritten heads (and local answers) are ever copied.
extension Tunnel {
    /// Starts HTTP mode on an accepted flow whose first bytes are an HTTP request.
    func startHTTP(_ key: FlowKey, facts: FlowFacts, sink: inout TunSink) {
        trace("\(key): HTTP mode")
        noteDecision(key, route: .direct, reason: "HTTP mode: decided per request", facts: facts)
        httpSessions[key] = HTTPSession(key: key, facts: facts)
        pumpHTTP(key, sink: &sink)
    }

    /// Moves what can move: queued bytes both ways, then the app's next requests.
    func pumpHTTP(_ key: FlowKey, sink: inout TunSink) {
        guard let session = httpSessions[key] else { return }
        guard let connection = tcp.connection(key), connection.state != .closed else {
            endHTTP(session, sink: &sink)
            // A connection the app's last ACK closed leaves the table only through a
            // flush: without it, each HTTP-mode connection the app closed first stayed
            // for good, and 16,384 of them refused every new flow.
            tcp.flush(key, now: now, sink: &sink)
            return
        }
        let events = connection.takeEvents()
        if let app = session.app {
            if app.exchange(with: connection) {
                let alpn = app.server.applicationProtocol.map { String(decoding: $0, as: UTF8.self) } ?? "no ALPN"
                trace("\(key): TLS with the app: \(app.server.negotiatedSuite.map { "\($0)" } ?? "?"), \(app.server.serverName ?? "no SNI"), \(alpn)")
                tlsHandshakeDeadlines[key] = nil
            }
            if let failure = app.http2Failure, flowRecords[key]?.record.error == nil {
                trace("\(key): HTTP/2 with the app ended: \(failure)")
                flowRecords[key]?.record.error = "HTTP/2 with the app: \(failure)"
            }
            if let failure = app.failure {
                appTLSFailed(session, failure, connection: connection)
                tcp.flush(key, now: now, sink: &sink)
                if connection.state == .closed || connection.state == .timeWait { endHTTP(session, sink: &sink) }
                return
            }
        }
        let flow = tcpFlows[key]
        if events.contains(.peerKeepalive), let flow, flow.connected { followKeepalive(flow, connection) }
        var upstreamBlocked = false
        if let flow, flow.connected, flow.handshake == nil, let upstream = session.upstream, upstream.tls {
            if flow.tls == nil {
                if !startUpstreamTLS(flow, target: upstream) { upstreamBlocked = true }
            } else if !flow.tls!.flush(to: flow.socket) || !flushH2(flow) {
                upstreamBlocked = true
            }
        }
        var h2Failure: String?
        let upstreamReady = flow.map { $0.connected && $0.handshake == nil && !$0.upstreamWriteClosed && ($0.tls?.isConnected ?? true) } ?? false
        if let flow { letGiveWayIfAppLeft(flow, connection, upstreamReady: upstreamReady || flow.upstreamWriteClosed) }
        func writeUpstream(_ bytes: UnsafeRawBufferPointer) -> Int {
            guard upstreamReady, let flow, !upstreamBlocked else { return 0 }
            let n: Int
            if flow.h2 != nil {
                let sent = writeH2(flow, bytes)
                if sent.blocked { upstreamBlocked = true }
                if let failure = sent.failure { h2Failure = failure }
                n = sent.taken
            } else if let tls = flow.tls {
                let (taken, blocked) = tls.write(bytes, to: flow.socket)
                if blocked { upstreamBlocked = true }
                n = taken
            } else {
                guard let result = try? flow.socket.write(bytes) else {
                    upstreamBlocked = true
                    return 0
                }
                guard case let .value(written) = result else {
                    upstreamBlocked = true
                    return 0
                }
                if written < bytes.count { upstreamBlocked = true }
                n = written
            }
            io.statistics.bytesFromApp += n
            countBytes(key, up: n)
            if n > 0, let last = session.inFlight.indices.last {
                session.inFlight[last].requestBytes += n
                if session.inFlight[last].firstSentAt == nil { session.inFlight[last].firstSentAt = now }
                session.inFlight[last].lastSentAt = now
            }
            return n
        }
        flushToApp(session, connection: connection)
        if session.closeAfterAnswer, session.inFlight.isEmpty, session.toApp.isEmpty { appShutdownWrite(session, connection) }
        session.toUpstream.drain(writeUpstream)

        requestLoop: for _ in 0 ..< 64 {
            session.toUpstream.drain(writeUpstream)
            if let app = session.app, app.plaintext.isEmpty, app.hasRecordsWaiting(in: connection) {
                // The app's records wait in the connection (decrypted only as
                // far as the read-ahead allows): more plaintext, now that it is read.
                _ = app.exchange(with: connection)
                if app.failure != nil { break }
            }
            if let app = session.app, app.atCut {
                requestCut(session, app: app)
                continue
            }
            if session.waiting != nil { dispatchWaiting(session, sink: &sink) }
            guard appReadableCount(session, connection) > 0, session.waiting == nil else { break }
            let data = appReadable(session, connection)
            if session.passthrough {
                let n = writeUpstream(data)
                if n > 0, let webSocket = session.webSocket {
                    webSocket.read(UnsafeRawBufferPointer(rebasing: data.prefix(n)), fromApp: true, time: wallSeconds)
                }
                appConsume(n, session, connection)
                if n == 0 { break }
                continue
            }
            if session.requestBodyPending > 0, session.heldRequest != nil {
                // [Body Rewrite]: the body is held, then the request goes with it.
                let n = min(session.requestBodyPending, data.count)
                holdRequestBody(UnsafeRawBufferPointer(rebasing: data[0 ..< n]), session: session, sink: &sink)
                appConsume(n, session, connection)
                session.requestBodyPending -= n
                if session.requestBodyPending == 0, session.heldRequest?.ended == true { finishHeldRequest(session, sink: &sink) }
                continue
            }
            if session.requestBodyPending > 0 {
                let n = min(session.requestBodyPending, data.count)
                let taken = session.skippingRequestBody ? n : writeUpstream(UnsafeRawBufferPointer(rebasing: data[0 ..< n]))
                if let last = session.inFlight.indices.last {
                    session.inFlight[last].requestBodyBytes += taken
                    if har != nil { keepForHAR(UnsafeRawBufferPointer(rebasing: data[0 ..< taken]), of: session, at: last, body: \.requestBody, content: \.requestContent) }
                }
                appConsume(taken, session, connection)
                session.requestBodyPending -= taken
                if taken < n { break }
                continue
            }
            if session.closeAfterAnswer, !session.isHTTP2 {
                // An HTTP/1.1 app's connection that closes after what is
                // queued: nothing could answer a new request on it.
                appConsume(data.count, session, connection)
                continue
            }
            // (Nor while a held request's body is on the rewriting thread: the next request goes after it.)
            guard session.toUpstream.isEmpty, session.pendingRequestRewrite == nil else { break }
            let step: HTTPParseStep<HTTPRequestHead>?
            do { step = try session.requests.parse(data) } catch {
                trace("\(key): bad request: \(error)")
                let status = error.requestStatus
                answerAndClose(session, status: status.code, reason: status.reason, body: "sluice: bad request: \(error)\n", sink: &sink)
                return
            }
            switch step {
            case nil:
                // The parser keeps the partial head itself.
                appConsume(data.count, session, connection)
                break requestLoop
            case let .head(head, consumed)?:
                appConsume(consumed, session, connection)
                plan(head, in: session, sink: &sink)
            case let .body(consumed)?, let .end(consumed)?:
                // The last body bytes come with `.end`: forwarded (or skipped) like the rest.
                session.requestBodyPending = consumed
                if case .end? = step, session.heldRequest != nil {
                    session.heldRequest!.ended = true
                    if consumed == 0 { finishHeldRequest(session, sink: &sink) }
                }
            case .upgraded?:
                session.passthrough = true
            }
        }
        if let app = session.app, let failure = app.failure {
            appTLSFailed(session, failure, connection: connection)
            tcp.flush(key, now: now, sink: &sink)
            return
        }
        if let h2Failure, let flow {
            upstreamFailed(flow, session: session, reason: h2Failure, sink: &sink)
            tcp.flush(key, now: now, sink: &sink)
            return
        }
        // A head planned in the loop above goes out now, not with the app's next segment.
        session.toUpstream.drain(writeUpstream)
        deliverLocalAnswers(session, connection: connection)
        probeAppThatClosed(session, connection)
        if let flow = tcpFlows[key], flow.connected, flow.handshake == nil {
            // The app closed its side and nothing waits: so does the upstream's.
            if appIsReadClosed(session, connection), session.inFlight.isEmpty, session.toUpstream.isEmpty, session.waiting == nil,
               session.pendingRequestRewrite == nil, !flow.upstreamWriteClosed {
                if let upstream = session.upstream, case .proxy = upstream.route, upstream.host.isEmpty {
                    // A forward proxy's connection outlives the app's: only the app's side closes,
                    // and the connection is parked for the next session (endHTTP).
                    appShutdownWrite(session, connection)
                } else {
                    // TLS ends with close_notify before the FIN (RFC 8446 §6.1).
                    if let tls = flow.tls, tls.isConnected { _ = tls.close(flow.socket) }
                    flow.socket.shutdown(.write)
                    flow.upstreamWriteClosed = true
                }
            }
            var wanted: Epoll.Events = []
            // Reading goes on while the upstream's TLS handshake runs, whatever the app's room.
            let handshaking = flow.tls.map { !$0.isConnected } ?? false
            if !flow.upstreamClosed, handshaking || (appRoom(session, connection) > 0 && session.toApp.isEmpty) { wanted.insert(.readable) }
            if upstreamBlocked { wanted.insert(.writable) }
            watch(flow, for: wanted)
            // Room opened for the upstream's bytes: read them now. Decrypted bytes
            // that already wait (the read loop's bound stopped before them) get
            // no epoll event of their own: they are read now too. (Also when
            // reading went on all along: this read often finds the response to
            // the request just sent, and the app's ACK rides on it. Reading
            // only when reading resumes cut a kept-alive request's reads from
            // 1.7 to 1.0 but cost more CPU a request: docs/engine.md.)
            let decryptedWaiting = flow.tls.map(\.hasPlaintextWaiting) ?? false || h2HasTurn(flow)
            if events.contains(.writable) || decryptedWaiting, wanted.contains(.readable) { readHTTPUpstream(flow, session: session, sink: &sink) }
        } else if appIsReadClosed(session, connection), session.inFlight.isEmpty, session.waiting == nil, session.toApp.isEmpty,
                  session.pendingRequestRewrite == nil {
            appShutdownWrite(session, connection)
        }
        // A response read part-way waits for its rest (`mayHoldResponse`) unless an ACK is owed.
        if !(flow.map { keepsHold($0, connection) } ?? false) { tcp.flush(key, now: now, sink: &sink) }
        if connection.state == .closed || connection.state == .timeWait { endHTTP(session, sink: &sink) }
    }

    /// Writes to the app, keeping order behind bytes that already wait.
    /// The app's FIN came while a request waits for its response. A
    /// half-close still gets the response, but an app that gave up (curl's
    /// -m, Ctrl-C) sends the same FIN, and an origin that never answers would
    /// then hold the upstream connection for good. So the app is probed: its
    /// kernel answers for a half-closed socket as long as it lives, and for a
    /// closed one's orphan until it drops it (tcp_fin_timeout, 60 s by
    /// default); then the probes go unanswered, the connection resets, and
    /// the session with its upstream ends (`sluice proxy` does the same with
    /// its client's socket).
    func probeAppThatClosed(_ session: HTTPSession, _ connection: TCPConnection) {
        guard !session.appProbed, !session.passthrough, session.awaitsUpstream || session.waiting != nil,
              appIsReadClosed(session, connection) else { return }
        session.appProbed = true
        trace("\(session.key): the app's FIN came while its request waits")
        probeClosedApp(session.key, connection)
    }

    /// Probes an app whose FIN came (`FlowFacts.closedClientProbe`): its
    /// kernel answers for a half-closed socket as long as it lives, and for
    /// a closed one's orphan until it drops it (tcp_fin_timeout, 60 s by
    /// default); then the probes go unanswered and the connection resets.
    /// HTTP mode probes while a request waits (`probeAppThatClosed`); a
    /// plain flow once the FIN went upstream, where a server that stays
    /// silent and open held the flow and its socket for good after the app
    /// was gone (without Sluice, the app's kernel forgets it after
    /// tcp_fin_timeout).
    func probeClosedApp(_ key: FlowKey, _ connection: TCPConnection) {
        trace("\(key): probing the app, whose FIN came")
        let probe = FlowFacts.closedClientProbe
        connection.startKeepalive(idle: .seconds(probe.idleSeconds), interval: .seconds(probe.intervalSeconds), probes: probe.count, now: now)
    }

    func writeApp(_ bytes: UnsafeRawBufferPointer, session: HTTPSession, connection: TCPConnection) {
        if session.toApp.isEmpty {
            let n = appWrite(bytes, session, connection)
            io.statistics.bytesToApp += n
            countBytes(session.key, down: n)
            if n < bytes.count { session.toApp.append(Array(UnsafeRawBufferPointer(rebasing: bytes[n...]))) }
        } else {
            session.toApp.append(Array(bytes))
        }
    }

    func flushToApp(_ session: HTTPSession, connection: TCPConnection) {
        session.toApp.drain { bytes in
            let n = appWrite(bytes, session, connection)
            io.statistics.bytesToApp += n
            countBytes(session.key, down: n)
            return n
        }
    }

    /// Local answers whose turn has come (responses go back in request order).
    func deliverLocalAnswers(_ session: HTTPSession, connection: TCPConnection) {
        // Read in place: `inFlight.first` would copy the whole exchange, and
        // this runs after every request and response.
        // Not past a response on the rewriting thread: its record comes first (`bodyRewritesFinished` calls again).
        while session.pendingResponseRewrite == nil, !session.inFlight.isEmpty, let answer = session.inFlight[0].localAnswer {
            if let ending = session.inFlight[0].streamEnding {
                // The gateway maps responses to streams in order: the bytes before it go first.
                guard session.toApp.isEmpty, let app = session.app else { break }
                app.endNextStream(ending, connection: connection)
                session.inFlight.removeFirst()
                continue
            }
            answer.withUnsafeBytes { writeApp($0, session: session, connection: connection) }
            var exchange = session.inFlight.removeFirst()
            exchange.responseBytes = answer.count
            if !exchange.recorded { record(exchange, session: session) }
        }
        if session.waiting != nil {
            var sink = TunSink(io: io)
            dispatchWaiting(session, sink: &sink)
        }
        if session.closeAfterAnswer, session.inFlight.isEmpty, session.toApp.isEmpty {
            appShutdownWrite(session, connection)
        }
    }

    /// Decides one request: answered here, or sent to the session's upstream (switching upstreams if the plan says so).
    func plan(_ head: HTTPRequestHead, in session: HTTPSession, sink: inout TunSink) {
        var planned = director.plan(head, facts: session.facts, now: now, scheme: session.app == nil ? "http" : "https")
        if !head.hasBody { planned.exchange.resendHead = planned.head }
        trace("\(session.key): \(head.method.rawValue) \(planned.exchange.url) → \(planned.route) (\(planned.exchange.rule))")
        session.skippingRequestBody = false
        switch planned.route {
        case let .answer(bytes):
            var exchange = planned.exchange
            exchange.localAnswer = bytes
            session.inFlight.append(exchange)
            session.skippingRequestBody = true
            io.statistics.tcpAnswered += 1
        case let .refuse(refusal):
            io.statistics.tcpRejected += 1
            flowRecords[session.key]?.record.rule = planned.exchange.rule
            flowRecords[session.key]?.record.policy = planned.exchange.policy
            logRequest(planned.exchange, session: session)
            session.skippingRequestBody = true
            if session.isHTTP2 {
                // One stream of the app's many: it alone ends, in its turn
                // (RST_STREAM; nothing at all for REJECT-DROP).
                var exchange = planned.exchange
                exchange.localAnswer = []
                exchange.streamEnding = refusal == .drop ? .unanswered : .reset(.cancel)
                exchange.recorded = true
                session.inFlight.append(exchange)
                return
            }
            finishRecord(session.key, status: .blocked)
            if let connection = tcp.connection(session.key) {
                if refusal == .drop { tcp.silence(session.key, until: now + Self.dropSilence) } else { connection.abort() }
            }
        case .direct, .proxy:
            if holdsRequest(planned, head: head, session: session) { return }
            dispatch(planned, in: session, sink: &sink)
        }
    }

    /// Sends a planned request on: on the session's upstream when it goes
    /// there and may take it now, else on a new connection once the
    /// responses in flight have finished.
    ///
    /// HTTP/2's streams go on together (`takesAnotherStream`): to an h2
    /// origin as streams of its own, where GOAWAY says which were not
    /// processed and those go again (`resendUnprocessed`); to an HTTP/1.1
    /// origin pipelined, as far as they could safely go again
    /// (`pipelines`); the others wait for the responses before them.
    func dispatch(_ planned: PlannedRequest, in session: HTTPSession, sink: inout TunSink) {
        if session.upstream == planned.target, !session.upstreamSpent, let flow = tcpFlows[session.key] {
            let behind = session.isHTTP2 && session.awaitsUpstream
            guard !behind || takesAnotherStream(session, flow, planned) else {
                session.waiting = planned
                return
            }
            var exchange = planned.exchange
            exchange.pipelined = behind && flow.h2 == nil
            exchange.reusedConnection = session.answeredOnUpstream > 0
            session.toUpstream.append(planned.head)
            session.inFlight.append(exchange)
            session.responses.expectResponse(to: HTTPMethod(rawValue: planned.exchange.method))
        } else if session.inFlight.isEmpty {
            switchUpstream(session, to: planned, sink: &sink)
        } else {
            session.waiting = planned
        }
    }

    /// An h2 app's request may join those in flight: the upstream speaks
    /// h2, has not gone away, and takes as many streams at once; or it
    /// speaks HTTP/1.1 and the request may be pipelined to it.
    func takesAnotherStream(_ session: HTTPSession, _ flow: TCPFlow, _ planned: PlannedRequest) -> Bool {
        // Counted by HTTP mode, not the session: requests whose heads wait in `toUpstream` count too.
        var waiting = 0
        for exchange in session.inFlight where exchange.localAnswer == nil { waiting += 1 }
        guard let h2 = flow.h2 else { return pipelines(planned, behind: waiting, in: session, on: flow) }
        return !h2.goneAway && waiting < h2.concurrentStreamLimit
    }

    /// The request that waited for its upstream goes, when it may now.
    func dispatchWaiting(_ session: HTTPSession, sink: inout TunSink) {
        guard let waiting = session.waiting else { return }
        let joins = session.upstream == waiting.target && !session.upstreamSpent
            && tcpFlows[session.key].map { takesAnotherStream(session, $0, waiting) } == true
        guard session.inFlight.isEmpty || joins else { return }
        session.waiting = nil
        dispatch(waiting, in: session, sink: &sink)
    }

    /// Closes the session's upstream (if any) and opens the one `planned` names.
    func switchUpstream(_ session: HTTPSession, to planned: PlannedRequest, sink: inout TunSink) {
        let key = session.key
        if let old = tcpFlows[key] {
            trace("\(key): leaving upstream \(session.upstream.map { "\($0)" } ?? "?")")
            removeTCP(old, keepConnection: true, keepSession: true)
        }
        session.responses = HTTPResponseParser()
        session.heldResponse = nil
        session.toUpstream = OutgoingBytes()
        session.toUpstream.append(planned.head)
        session.inFlight.append(planned.exchange)
        session.responses.expectResponse(to: HTTPMethod(rawValue: planned.exchange.method))
        connectSession(session, to: planned.target, through: planned.route, sink: &sink)
    }

    /// Connects the session to `target` through `route`; what waits in
    /// `toUpstream` goes once it is connected.
    func connectSession(_ session: HTTPSession, to target: UpstreamTarget, through route: FlowRoute, sink: inout TunSink) {
        let key = session.key
        session.upstream = target
        session.upstreamRoute = route
        session.upstreamSpent = false
        session.answeredOnUpstream = 0
        switch route {
        case .direct:
            // The origin the app itself connected to (by its fake IP's name, the
            // name it sniffed with, or its address) is reached where the app was
            // going: no second lookup that could answer differently.
            if target.host == session.originHost || target.host == session.facts.domain?.lowercased(), target.port == key.destinationPort {
                if let destination = realDestination(for: key, sink: &sink) {
                    openUpstream(for: key, to: destination, port: target.port, handshake: nil, sink: &sink)
                }
            } else {
                connect(key, toHost: target.host, port: target.port, sink: &sink)
            }
        case let .proxy(proxy):
            if proxy.kind == .http, !target.tls {
                // A forward proxy takes the absolute-form request itself: no CONNECT,
                // and a kept-alive connection another app connection left is as good as new.
                if takePooledProxyConnection(proxy.name, for: key) != nil {
                    pumpHTTP(key, sink: &sink)
                } else {
                    connect(key, toHost: proxy.host, port: proxy.port, sink: &sink)
                }
            } else {
                connect(key, through: proxy, target: ProxyTarget.Host(name: target.host).map { ProxyTarget(host: $0, port: target.port) }, sink: &sink)
            }
        case .answer, .refuse:
            break
        }
    }

    /// The upstream's bytes, as far as the app's side has room: response heads rewritten, bodies passed on.
    func readHTTPUpstream(_ flow: TCPFlow, session: HTTPSession, sink: inout TunSink) {
        guard let connection = tcp.connection(flow.key) else { return }
        readLoop: for _ in 0 ..< 16 {
            flushToApp(session, connection: connection)
            if session.answerIsNext {
                // An answer whose turn came as those bytes went (a stream that
                // ended at an earlier connection's close) goes before the next response.
                deliverLocalAnswers(session, connection: connection)
                if tcpFlows[flow.key] !== flow { break }
            }
            guard session.toApp.isEmpty, !flow.upstreamClosed else { break }
            let handshaking = flow.tls.map { !$0.isConnected } ?? false
            let room = min(handshaking ? scratch.count : appRoom(session, connection), scratch.count)
            guard room > 0 else { break }
            var n: Int
            if let tls = flow.tls {
                // HTTP/2's responses (or failed streams) that wait in its session go first.
                let waiting = h2HasTurn(flow)
                switch waiting ? .plaintext(0) : tls.read(into: scratch.sub(0, room), socket: flow.socket, scratch: relayScratch) {
                case let .plaintext(count):
                    n = count
                    if flow.h2 != nil {
                        switch readH2(flow, received: count, room: room, session: session) {
                        case let .success(bytes): n = bytes
                        case let .failure(error):
                            upstreamFailed(flow, session: session, reason: "HTTP/2 with \(tls.host): \(error.reason)", sink: &sink)
                            return
                        }
                        if n == 0 {
                            // A failed stream's turn, or nothing yet.
                            if takeH2Failures(flow, session: session, sink: &sink) { return }
                            continue readLoop
                        }
                    }
                case .wouldBlock:
                    break readLoop
                case let .again(handshakeFinished):
                    if handshakeFinished {
                        trace("\(flow.key): TLS with \(tls.host) connected")
                        tlsHandshakeDeadlines[flow.key] = nil
                        upstreamTLSConnected(flow)
                    }
                    continue readLoop
                case .closed:
                    flow.upstreamClosed = true
                    upstreamEnded(flow, session: session, sink: &sink)
                    break readLoop
                case let .failed(error):
                    upstreamFailed(flow, session: session, reason: Interception.failureReason(error, host: tls.host), sink: &sink)
                    return
                case let .socketFailed(error):
                    upstreamFailed(flow, session: session, reason: "\(error)", kind: error == .connectionReset ? .reset : .other, sink: &sink)
                    return
                }
            } else {
                let result: SysResult<Int>
                do { result = try flow.socket.read(into: scratch.sub(0, room)) } catch {
                    upstreamFailed(flow, session: session, reason: "\(error)", kind: error == .connectionReset ? .reset : .other, sink: &sink)
                    return
                }
                guard case let .value(count) = result else { break }
                if count == 0 {
                    flow.upstreamClosed = true
                    upstreamEnded(flow, session: session, sink: &sink)
                    break
                }
                n = count
            }
            let data = UnsafeRawBufferPointer(scratch.sub(0, n))
            var offset = 0
            // Until the parser says it needs more: a message that ends with its
            // head (204, 304, a HEAD's answer) or a 101's switch to raw bytes is
            // reported by a call on what is left, even when nothing is.
            parseLoop: for _ in 0 ..< 4096 {
                let rest = data.suffix(from: offset)
                if session.passthrough {
                    if !rest.isEmpty {
                        writeApp(rest, session: session, connection: connection)
                        session.webSocket?.read(rest, fromApp: false, time: wallSeconds)
                    }
                    offset = n
                    break
                }
                let step: HTTPParseStep<HTTPResponseHead>?
                do { step = try session.responses.parse(rest) } catch {
                    upstreamFailed(flow, session: session, reason: "bad response: \(error)", sink: &sink)
                    return
                }
                switch step {
                case nil:
                    offset = n
                    break parseLoop
                case let .head(head, consumed)?:
                    offset += consumed
                    let rewritten = session.inFlight.isEmpty ? nil
                        : director.rewriteResponse(head, url: session.inFlight[0].url, forwardProxy: session.inFlight[0].forwardProxy)
                    if head.status >= 200, !head.keepAlive { session.upstreamSpent = true }
                    // The final head, or a 101's (the upgrade's exchange ends with it).
                    if head.status >= 200 || head.status == 101, !session.inFlight.isEmpty {
                        if har != nil, head.isChunked { session.inFlight[0].responseContent = HTTPChunkedContent() }
                        session.inFlight[0].forwardedOverHTTP2 = flow.h2 != nil
                        session.inFlight[0].status = head.status
                        session.inFlight[0].headAt = now
                        if let remote = flow.remote { session.inFlight[0].serverAddress = remote.address.wireAddress }
                        session.inFlight[0].responseHead = rewritten ?? head
                    }
                    let written: Int
                    if head.status >= 200, head.status != 101, holdsResponse(rewritten ?? head, session: session) {
                        // [Body Rewrite]: the head goes with the new body, at its end.
                        written = 0
                    } else if rewritten == nil, let whole = session.responses.lastHeadInInput {
                        // Unchanged and all in this read: the server's bytes go on as they came.
                        writeApp(UnsafeRawBufferPointer(rebasing: rest[rest.startIndex + whole.lowerBound ..< rest.startIndex + whole.upperBound]),
                                 session: session, connection: connection)
                        written = whole.count
                    } else {
                        let bytes = (rewritten ?? head).serialized()
                        bytes.withUnsafeBytes { writeApp($0, session: session, connection: connection) }
                        written = bytes.count
                    }
                    if !session.inFlight.isEmpty { session.inFlight[0].responseBytes += written }
                case let .body(consumed)?:
                    if session.heldResponse != nil {
                        holdResponseBody(UnsafeRawBufferPointer(rebasing: rest[0 ..< consumed]), session: session, connection: connection)
                    } else {
                        writeApp(UnsafeRawBufferPointer(rebasing: rest[0 ..< consumed]), session: session, connection: connection)
                        noteResponseBody(rest[0 ..< consumed], session: session)
                    }
                    offset += consumed
                case let .end(consumed)?:
                    var rewriting = false
                    if session.heldResponse != nil {
                        holdResponseBody(UnsafeRawBufferPointer(rebasing: rest[0 ..< consumed]), session: session, connection: connection)
                        rewriting = finishHeldResponse(session, connection: connection)
                    } else {
                        writeApp(UnsafeRawBufferPointer(rebasing: rest[0 ..< consumed]), session: session, connection: connection)
                        noteResponseBody(rest[0 ..< consumed], session: session)
                    }
                    offset += consumed
                    if !session.inFlight.isEmpty {
                        // A body on the worker: its exchange is recorded when it is back (`bodyRewritesFinished`).
                        if rewriting { session.pendingResponseRewrite?.exchange = session.inFlight.removeFirst() }
                        else { record(session.inFlight.removeFirst(), session: session) }
                    }
                    session.answeredOnUpstream += 1
                    deliverLocalAnswers(session, connection: connection)
                    // It said it closes (`Connection: close`): the requests pipelined behind it will not be
                    // answered here. An origin that said so at its keep-alive limit may be pipelined to again;
                    // one that says so after every response may not.
                    if session.upstreamSpent, session.isHTTP2,
                       sendAgainIfSafe(flow, session: session, reason: "the origin closed after the response before them", kind: .other,
                                          refusing: session.answeredOnUpstream == 1, sink: &sink) {
                        tcp.flush(flow.key, now: now, sink: &sink)
                        return
                    }
                    // A request waits for another upstream: this one has nothing more to say
                    // unless responses pipelined behind this one (h2) are still to come.
                    if session.waiting != nil && !session.awaitsUpstream || tcpFlows[flow.key] !== flow { break parseLoop }
                case .upgraded?:
                    // 101 Switching Protocols (or a CONNECT's 2xx): opaque bytes both ways from here.
                    session.passthrough = true
                    session.requests.upgrade()
                    upgraded(session)
                }
            }
            if tcpFlows[flow.key] !== flow {
                releaseHold(flow)
                tcp.flush(flow.key, now: now, sink: &sink)
                return
            }
            // A response read part-way: its rest is likely a few microseconds
            // away (a head, then its body from sendfile) and goes with what came.
            if holdsRead(flow, count: n, socketEmptied: n < room, eligible: mayHoldResponse(flow, session: session)) {
                // Plain, a short read emptied the socket; TLS may have records waiting.
                if flow.tls == nil { break readLoop }
                continue readLoop
            }
            tcp.flush(flow.key, now: now, sink: &sink)
            // A short plain read emptied the socket: asking again would only return
            // EAGAIN (epoll is level-triggered and says when more arrives).
            if flow.tls == nil, n < room { break }
        }
        pumpHTTP(flow.key, sink: &sink)
    }

    /// Whether a short read from the origin may wait for what follows
    /// (`holdsRead`). HTTP mode knows what relayed flows guess: only a
    /// response read part-way is held, never one whose end came (its bytes
    /// go at once, however few). HTTP/2's session and upgraded connections
    /// are not held.
    func mayHoldResponse(_ flow: TCPFlow, session: HTTPSession) -> Bool {
        flow.h2 == nil && !session.passthrough && session.toApp.isEmpty && !session.responses.isIdle
    }

    /// Why an upstream closed before answering, as the 502 says it. An origin
    /// whose TLS chose no protocol when Sluice offered it HTTP/1.1 alone and
    /// then hung up is most likely one that speaks only HTTP/2 (nghttpd, a
    /// gRPC server): the reason says so, and what to change.
    func closedBeforeAnswering(_ flow: TCPFlow, session: HTTPSession) -> String {
        let reason = "the upstream closed before answering"
        // (Not one that answered before: that one speaks HTTP/1.1.)
        guard let tls = flow.tls, tls.isConnected, tls.machine.applicationProtocol == nil, !session.isHTTP2,
              session.answeredOnUpstream == 0 else { return reason }
        if director.profile?.mitm.prefersHTTP2 ?? false {
            return reason + " (its TLS chose no protocol: a server that speaks only HTTP/2 does that; Sluice speaks h2 to it only for an app that speaks h2)"
        }
        return reason + " (its TLS chose no protocol: a server that speaks only HTTP/2 does that; with h2 = true in [MITM], apps that speak h2 reach it)"
    }

    /// The upstream closed: a response read until close ends here; requests
    /// still waiting go again when they may (`sendAgainIfSafe`), else fail.
    func upstreamEnded(_ flow: TCPFlow, session: HTTPSession, sink: inout TunSink) {
        sendHeld(flow, sink: &sink)
        guard let connection = tcp.connection(flow.key) else { return }
        // An h2 origin that went away and closed: the requests it left unprocessed go again.
        if takeH2Failures(flow, session: session, sink: &sink) { return }
        var endedByClose = false
        if case .end? = try? session.responses.finish(), !session.inFlight.isEmpty {
            endedByClose = true
            // (On the loop for an h2 app, whose stream's end below needs the body in place. Off it,
            // the app's connection closes, `closeAfterAnswer`, once the hole is filled and drained.)
            let rewriting = finishHeldResponse(session, connection: connection, mayWait: !session.isHTTP2)
            if rewriting {
                session.pendingResponseRewrite?.exchange = session.inFlight.removeFirst()
            } else if session.isHTTP2 {
                // Its stream ends once all of its body went (the gateway read it as running to the close too).
                var exchange = session.inFlight[0]
                record(exchange, session: session)
                exchange.recorded = true
                exchange.localAnswer = []
                exchange.streamEnding = .atClose
                session.inFlight[0] = exchange
            } else {
                record(session.inFlight.removeFirst(), session: session)
            }
        }
        if endedByClose { session.answeredOnUpstream += 1 }
        let reason = closedBeforeAnswering(flow, session: session)
        // (Not behind a response that ended with the close for an HTTP/1.1
        // app: it learns that body's end only from its connection's close.)
        if !endedByClose || session.isHTTP2, sendAgainIfSafe(flow, session: session, reason: reason, kind: .other, sink: &sink) { return }
        let unanswered = session.awaitsUpstream
        removeTCP(flow, keepConnection: true, keepSession: true)
        session.upstream = nil
        if endedByClose, !session.isHTTP2 {
            // Behind a response that ended with the close, which only the
            // app connection's close tells the app, nothing can follow it
            // (a 502, or Map Local's answer, would read as that body's
            // tail): the requests behind it go unanswered, as they would
            // directly, and the app sends them again on a new connection
            // if it may. Its connection closes below, as after any close.
            if unanswered { io.statistics.upstreamErrors += 1 }
            let behind = session.inFlight + (session.waiting.map { [$0.exchange] } ?? [])
            for var exchange in behind where !exchange.recorded {
                exchange.failure = "the response before it ended with the origin's close"
                exchange.failureKind = .other
                record(exchange, session: session)
            }
            session.inFlight.removeAll()
            session.waiting = nil
            session.skippingRequestBody = true
        } else if unanswered {
            upstreamFailed(nil, session: session, reason: reason, sink: &sink)
            return
        }
        if session.isHTTP2 {
            // The origin closed between responses (its keep-alive ran out),
            // or to end one: the app's streams go on, the next request on a
            // new connection.
            deliverLocalAnswers(session, connection: connection)
            tcp.flush(flow.key, now: now, sink: &sink)
            return
        }
        // The server closed, as a direct connection would show the app: its
        // side closes too once what is queued is out (a response read until
        // the close ends only there).
        session.closeAfterAnswer = true
        deliverLocalAnswers(session, connection: connection)
        tcp.flush(flow.key, now: now, sink: &sink)
    }

    /// The upstream failed: the request waiting for it gets a 502 and the app's connection ends after it.
    func upstreamFailed(_ flow: TCPFlow?, session: HTTPSession, reason: String, kind: ConnectionErrorKind = .protocolError, sink: inout TunSink) {
        if let flow { sendHeld(flow, sink: &sink) }
        // Requests that may go again do (an origin that closes with requests unread resets its connection): no error yet.
        if let flow, sendAgainIfSafe(flow, session: session, reason: reason, kind: kind, sink: &sink) { return }
        io.statistics.upstreamErrors += 1
        if let flow { removeTCP(flow, keepConnection: true, keepSession: true) }
        session.upstream = nil
        guard let connection = tcp.connection(session.key) else { return }
        if session.isHTTP2 {
            failStreams(session, reason: reason, kind: kind)
            tcp.flush(session.key, now: now, sink: &sink)
            return
        }
        if let index = session.inFlight.firstIndex(where: { $0.localAnswer == nil }) {
            var exchange = session.inFlight[index]
            let started = exchange.status != nil
            exchange.failure = reason
            exchange.failureKind = kind
            exchange.status = nil
            session.inFlight.remove(at: index)
            record(exchange, session: session)
            if started {
                // Part of a response already went to the app: only a reset tells it the truth.
                connection.abort()
                tcp.flush(session.key, now: now, sink: &sink)
                return
            }
        }
        session.inFlight.removeAll { $0.localAnswer == nil }
        answerAndClose(session, status: 502, reason: "Bad Gateway", body: "sluice: \(reason)\n", sink: &sink)
    }

    /// HTTP/2: the upstream failed the requests waiting on it (one, as they
    /// go on one at a time), and only their streams fail: a 502 each, or
    /// RST_STREAM for a response already partly on its way. The next
    /// request opens a new connection.
    func failStreams(_ session: HTTPSession, reason: String, kind: ConnectionErrorKind) {
        // What was still to go to the failed upstream goes nowhere: the
        // request's head, and the rest of its body, read and dropped.
        session.toUpstream = OutgoingBytes()
        session.skippingRequestBody = true
        for index in session.inFlight.indices where session.inFlight[index].localAnswer == nil {
            failStream(session, at: index, reason: reason, kind: kind)
        }
        // The answers go, and the app's next requests are read, when the
        // session is pumped at the end of this turn of the loop: not here,
        // inside the failed upstream's handling (whose caller still holds
        // it), where a next upstream that failed at once would recurse.
        if !touched.contains(session.key) { touched.append(session.key) }
    }

    /// HTTP/2: one request's response will not come (whole). It is recorded
    /// as failed, and its stream gets, in its turn, `unanswered` if given,
    /// else a 502, or RST_STREAM with `resetCode` when part of a response
    /// already went to the app.
    func failStream(_ session: HTTPSession, at index: Int, reason: String, kind: ConnectionErrorKind,
                    unanswered: StreamEnding? = nil, resetCode: HTTP2ErrorCode = .internalError) {
        var exchange = session.inFlight[index]
        let started = exchange.responseBytes > 0
        exchange.failure = reason
        exchange.failureKind = kind
        exchange.status = nil
        record(exchange, session: session)
        exchange.recorded = true
        if started {
            exchange.localAnswer = []
            exchange.streamEnding = .reset(resetCode)
        } else if let unanswered {
            exchange.localAnswer = []
            exchange.streamEnding = unanswered
        } else {
            exchange.localAnswer = HTTPResponse.simple(status: 502, reason: "Bad Gateway", text: "sluice: \(reason)\n", keepAlive: true)
        }
        session.inFlight[index] = exchange
    }

    /// HTTP/2: the app reset the stream whose request HTTP mode was reading,
    /// before its body ended (`HTTP2Gateway.takeRequests`), and HTTP mode has
    /// read all that came of it. The request can never end, so it goes no
    /// further: a request answered here had its body dropped anyway; one
    /// that waited for its upstream is dropped with it; one whose body was
    /// going upstream leaves that connection reset (the origin must not take
    /// a cut upload for a whole one), and the next request opens another.
    /// Whatever answer it gets is dropped by the gateway.
    func requestCut(_ session: HTTPSession, app: InterceptedApp) {
        app.passCut()
        trace("\(session.key): the app reset a stream before its request body ended")
        session.requests = HTTPRequestParser()
        session.requestBodyPending = 0
        let reason = "the app reset its stream before the request body ended"
        if var planned = session.waiting {
            session.waiting = nil
            planned.exchange.failure = reason
            planned.exchange.failureKind = .reset
            record(planned.exchange, session: session)
            planned.exchange.recorded = true
            planned.exchange.localAnswer = []
            planned.exchange.streamEnding = .unanswered
            session.inFlight.append(planned.exchange)
            if !touched.contains(session.key) { touched.append(session.key) }
            return
        }
        if session.skippingRequestBody {
            session.skippingRequestBody = false
            return
        }
        if let flow = tcpFlows[session.key], flow.h2 != nil, session.toUpstream.isEmpty, flow.h2!.isSendingBody {
            // To an h2 origin the upload alone ends (RST_STREAM CANCEL), and
            // the requests beside it go on; its failure comes in its turn.
            flow.h2!.cancelSendingStream(reason: reason)
            _ = flushH2(flow)
            if !touched.contains(session.key) { touched.append(session.key) }
            return
        }
        if let flow = tcpFlows[session.key] {
            flow.socket.setResetOnClose()
            removeTCP(flow, keepConnection: true, keepSession: true)
        }
        session.upstream = nil
        failStreams(session, reason: reason, kind: .reset)
        session.skippingRequestBody = false
    }

    /// A local error response, after which the app's connection closes.
    func answerAndClose(_ session: HTTPSession, status: Int, reason: String, body: String, sink: inout TunSink) {
        guard let connection = tcp.connection(session.key) else { return }
        let bytes = HTTPResponse.simple(status: status, reason: reason, text: body, keepAlive: false)
        session.waiting = nil
        session.passthrough = false
        session.requestBodyPending = 0
        session.skippingRequestBody = true
        session.closeAfterAnswer = true
        bytes.withUnsafeBytes { writeApp($0, session: session, connection: connection) }
        // Whatever else the app sends is read and dropped until it closes.
        if let app = session.app { app.consume(app.plaintext.count) }
        if connection.readableCount > 0, session.app == nil { connection.consume(connection.readableCount) }
        appShutdownWrite(session, connection)
        tcp.flush(session.key, now: now, sink: &sink)
    }

    /// Why an HTTP session's requests in flight were cut off, most often.
    static let appClosed = "the app closed the connection"

    /// The session ends; its requests in flight are recorded as cut off by
    /// `reason` (unless an earlier failure says more).
    func endHTTP(_ session: HTTPSession, reason: String = Tunnel.appClosed, sink: inout TunSink) {
        finishWebSocket(session)
        httpSessions[session.key] = nil
        tlsHandshakeDeadlines[session.key] = nil
        recordCutOff(session, reason: reason)
        if let flow = tcpFlows[session.key], !parkProxyConnection(flow, session: session) {
            removeTCP(flow, keepConnection: true)
        } else {
            // The upstream ended first, or its connection is parked for the next
            // app connection: removeTCP does not count the app's connection then.
            if let counters = tcp.connection(session.key)?.counters { countRetransmissions(counters) }
            releasePin(session.key)
        }
    }

    func noteResponseBody(_ bytes: Slice<UnsafeRawBufferPointer>, session: HTTPSession) {
        guard !session.inFlight.isEmpty else { return }
        session.inFlight[0].responseBytes += bytes.count
        session.inFlight[0].responseBodyBytes += bytes.count
        if har != nil { keepForHAR(UnsafeRawBufferPointer(rebasing: bytes), of: session, at: 0, body: \.responseBody, content: \.responseContent) }
    }

    /// HAR keeps a body's first bytes: its data, without chunk framing.
    func keepForHAR(_ bytes: UnsafeRawBufferPointer, of session: HTTPSession, at index: Int,
                    body: WritableKeyPath<HTTPExchange, [UInt8]>, content: WritableKeyPath<HTTPExchange, HTTPChunkedContent?>) {
        // Taken out while it grows, so the array is not copied for the write-back.
        var kept = session.inFlight[index][keyPath: body]
        session.inFlight[index][keyPath: body] = []
        var decoder = session.inFlight[index][keyPath: content]
        HTTPChunkedContent.keep(bytes, content: &decoder, into: &kept, limit: bodyLimitForHAR)
        session.inFlight[index][keyPath: body] = kept
        session.inFlight[index][keyPath: content] = decoder
    }

    /// The upgrade's exchange is done once its 101 (or a CONNECT's 2xx) is
    /// through: statistics and the flow log learn of it now, and the HAR too,
    /// except for a WebSocket's, whose entry waits for its messages.
    func upgraded(_ session: HTTPSession) {
        guard !session.inFlight.isEmpty else { return }
        let exchange = session.inFlight.removeFirst()
        guard har != nil, WebSocketRecording.isWebSocket(exchange) else {
            record(exchange, session: session)
            return
        }
        session.webSocket = WebSocketRecording(exchange: exchange, keepLimit: bodyLimitForHAR)
        record(exchange, session: session, toHAR: false)
    }

    /// A recorded WebSocket ends (the connection, or Sluice): its HAR entry, with its messages.
    func finishWebSocket(_ session: HTTPSession) {
        guard let webSocket = session.webSocket else { return }
        session.webSocket = nil
        guard let har, var entry = harEntry(webSocket.exchange, session: session) else { return }
        webSocket.decorate(&entry)
        har.add(entry)
    }

    /// Now, in seconds since the epoch (HAR's WebSocket message times).
    var wallSeconds: Double { Double(wallTime(now)) / 1e9 }

    /// Statistics, HAR and the flow log learn how a request went.
    func record(_ exchange: HTTPExchange, session: HTTPSession, toHAR: Bool = true) {
        director.record(exchange, now: now)
        // The connection's record names what its latest request got.
        if let open = flowRecords[session.key] {
            open.record.rule = exchange.rule
            open.record.policy = exchange.policy
            // Described once per route, not once per request.
            if let route = session.upstream?.route {
                if open.describedRoute != route {
                    open.record.upstream = "\(route)"
                    open.describedRoute = route
                }
            } else {
                open.record.upstream = exchange.localAnswer != nil ? "local" : nil
                open.describedRoute = nil
            }
        }
        logRequest(exchange, session: session)
        if toHAR { addToHAR(exchange, session: session) }
    }
}
