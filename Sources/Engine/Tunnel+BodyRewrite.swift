internal import HTTP
internal import Rules
internal import Stack

/// [Body Rewrite] on responses in HTTP mode: a response whose request's URL
/// a line matches is held from its head to its end (`HeldBody`), then goes
/// to the app rewritten, with a Content-Length for its new body. Everything
/// else streams as before.
extension Tunnel {
    /// At a final response head (as [Header Rewrite] left it): true when
    /// its message is held for rewriting, and nothing of it goes yet.
    func holdsResponse(_ head: HTTPResponseHead, session: HTTPSession) -> Bool {
        session.heldResponse = nil
        // Read in place: `inFlight.first` would copy the whole exchange.
        guard !session.inFlight.isEmpty,
              let body = HeldBody.forResponse(head, selection: session.inFlight[0].responseBodyRewrite,
                                              method: session.inFlight[0].method, url: session.inFlight[0].url) else { return false }
        session.heldResponse = (head, body)
        return true
    }

    /// The held response's next body bytes. Past the rewriter's `bodyLimit`
    /// what is held goes on as it came, and so does the rest.
    func holdResponseBody(_ bytes: UnsafeRawBufferPointer, session: HTTPSession, connection: TCPConnection) {
        guard var held = session.heldResponse else { return }
        // Taken out while it grows, so the array is not copied for the write-back.
        session.heldResponse = nil
        if held.body.take(bytes) {
            session.heldResponse = held
            return
        }
        EngineLog.warning("\(session.key): \(session.inFlight.isEmpty ? "" : session.inFlight[0].url): the response's body passes \(held.body.selection.rewriter.bodyLimitText); [Body Rewrite] leaves it as it came (body-rewrite-limit in [General] moves the limit)")
        releasedForFirst(held.head, held.body, rewritten: nil, session: session).withUnsafeBytes {
            writeApp($0, session: session, connection: connection)
        }
        writeApp(bytes, session: session, connection: connection)
        noteResponseBody(bytes[...], session: session)
    }

    /// The held response ended: it goes to the app, rewritten if the lines
    /// change it. A large body (`HeldBody.runsOffTheLoop`) goes to the
    /// worker instead, when `mayWait` and no other is under way for this
    /// session: the app's bytes wait at a hole in `toApp` (so does the
    /// upstream, which is not read while `toApp` is not empty), and true
    /// says the caller hands the exchange to `pendingResponseRewrite`
    /// rather than recording it: it is recorded when the body is known.
    func finishHeldResponse(_ session: HTTPSession, connection: TCPConnection, mayWait: Bool = true) -> Bool {
        guard let held = session.heldResponse else { return false }
        session.heldResponse = nil
        if mayWait, session.pendingResponseRewrite == nil, held.body.runsOffTheLoop, let id = submitBodyRewrite(held.body, session: session) {
            trace("\(session.key): \(session.inFlight.isEmpty ? "" : session.inFlight[0].url): rewriting \(held.body.wire.count) bytes on the worker")
            session.toApp.openHole()
            session.pendingResponseRewrite = PendingResponseRewrite(id: id, head: held.head, body: held.body)
            return true
        }
        let rewritten = held.body.rewritten(about: "\(session.key): \(session.inFlight.isEmpty ? "" : session.inFlight[0].url): the response")
        releasedForFirst(held.head, held.body, rewritten: rewritten, session: session).withUnsafeBytes {
            writeApp($0, session: session, connection: connection)
        }
        return false
    }

    /// `body` to the worker (started with the first) for `session`; nil when no thread could be started.
    private func submitBodyRewrite(_ body: HeldBody, session: HTTPSession) -> UInt64? {
        guard let id = BodyRewriteWorker.submit(body, to: &bodyRewriteWorker, watch: {
            (try? watch(rawDescriptor: $0, token: Self.bodyRewriteToken)) != nil
        }) else { return nil }
        pendingBodyRewrites[id] = session
        return id
    }

    /// The worker's outcomes: each response goes to the app in its place,
    /// its exchange is recorded, and the session moves on; each request goes
    /// upstream. A session that ended meanwhile is not there to take it.
    func bodyRewritesFinished() {
        guard let worker = bodyRewriteWorker else { return }
        for finished in worker.takeFinished() {
            guard let session = pendingBodyRewrites.removeValue(forKey: finished.id) else { continue }
            if session.pendingRequestRewrite == finished.id {
                session.pendingRequestRewrite = nil
                guard httpSessions[session.key] === session else { continue }
                var sink = TunSink(io: io)
                sendHeldRequest(session, outcome: finished.outcome, sink: &sink)
                pumpHTTP(session.key, sink: &sink)
                continue
            }
            guard let pending = session.pendingResponseRewrite, pending.id == finished.id else { continue }
            session.pendingResponseRewrite = nil
            guard httpSessions[session.key] === session, let connection = tcp.connection(session.key) else { continue }
            var exchange = pending.exchange ?? HTTPExchange.unrecorded
            let rewritten = HeldBody.rewritten(finished.outcome, about: "\(session.key): \(exchange.url): the response")
            session.toApp.fillHole(released(pending.head, pending.body, rewritten: rewritten, exchange: &exchange))
            if pending.exchange != nil { record(exchange, session: session) }
            flushToApp(session, connection: connection)
            deliverLocalAnswers(session, connection: connection)
            var sink = TunSink(io: io)
            pumpHTTP(session.key, sink: &sink)
        }
    }

    /// The session ends (`failure` says why) while its response is on the
    /// rewriting thread: the exchange is recorded all the same, with the
    /// body as the origin sent it and why the app never got it (its lines
    /// did not reach the app, so they are not counted).
    func recordUnreleasedResponse(_ session: HTTPSession, failure: String) {
        guard let pending = session.pendingResponseRewrite else { return }
        session.pendingResponseRewrite = nil
        guard var exchange = pending.exchange else { return }
        _ = released(pending.head, pending.body, rewritten: nil, exchange: &exchange)
        exchange.failure = exchange.failure ?? failure
        record(exchange, session: session)
    }

    /// `released` for the session's first exchange in flight, the one the held response answers.
    private func releasedForFirst(_ head: HTTPResponseHead, _ body: HeldBody, rewritten: [UInt8]?, session: HTTPSession) -> [UInt8] {
        guard !session.inFlight.isEmpty else {
            var unrecorded = HTTPExchange.unrecorded
            return released(head, body, rewritten: rewritten, exchange: &unrecorded)
        }
        return released(head, body, rewritten: rewritten, exchange: &session.inFlight[0])
    }

    /// The held message's bytes for the app, rewritten or as it came, and
    /// what `exchange` (its record) keeps of them.
    private func released(_ head: HTTPResponseHead, _ body: HeldBody, rewritten: [UInt8]?, exchange: inout HTTPExchange) -> [UInt8] {
        var head = head
        if let rewritten {
            trace("\(exchange.url): body rewritten (\(body.content.count) → \(rewritten.count) bytes)")
            HeldBody.reframe(&head.headers, length: rewritten.count)
            exchange.bodyRewrites += body.selection.lines
            exchange.responseHead = head
            // HAR keeps the new body, which has no chunk framing.
            exchange.responseContent = nil
        }
        let bodyBytes = rewritten ?? body.wire
        let headBytes = head.serialized()
        exchange.responseBytes += headBytes.count + bodyBytes.count
        exchange.responseBodyBytes += bodyBytes.count
        if har != nil {
            bodyBytes.withUnsafeBytes {
                HTTPChunkedContent.keep($0, content: &exchange.responseContent, into: &exchange.responseBody, limit: bodyLimitForHAR)
            }
        }
        return headBytes + bodyBytes
    }
}

/// A held response the worker is rewriting: what goes to the app when it is
/// done, and its exchange, recorded then.
struct PendingResponseRewrite {
    let id: UInt64
    let head: HTTPResponseHead
    let body: HeldBody
    var exchange: HTTPExchange?
}

/// [Body Rewrite] on requests in HTTP mode: a request with a body whose URL a
/// line matches is planned as usual, then held (`HeldRequest`) until its body
/// has ended; it goes on rewritten, with a Content-Length for the new body.
/// The app's next bytes are not read meanwhile beyond the body.
extension Tunnel {
    /// After planning: true when the request is held, and `dispatch` waits for its body.
    func holdsRequest(_ planned: PlannedRequest, head: HTTPRequestHead, session: HTTPSession) -> Bool {
        guard let selection = planned.exchange.requestBodyRewrite, head.hasBody else { return false }
        guard let body = HeldBody.forRequest(head, selection: selection, about: "\(session.key): \(planned.exchange.url)") else { return false }
        var parser = HTTPRequestParser()
        guard case let .head(plannedHead, _)? = planned.head.withUnsafeBytes({ try? parser.parse($0) }) else { return false }
        var forwarded = plannedHead
        forwarded.headers.remove(name: "Expect")
        session.heldRequest = HeldRequest(planned: planned, head: forwarded, body: body)
        if head.expectsContinue, !session.isHTTP2, session.inFlight.isEmpty, session.waiting == nil,
           let connection = tcp.connection(session.key) {
            // The origin cannot say 100 Continue to a head it has not seen
            // (RFC 9110 §10.1.1 lets a proxy say it): the app sends its body now,
            // rather than after its own timeout.
            Array("HTTP/1.1 100 Continue\r\n\r\n".utf8).withUnsafeBytes { writeApp($0, session: session, connection: connection) }
        }
        return true
    }

    /// The held request's next body bytes, all taken. Past
    /// the rewriter's `bodyLimit` the request goes with what is held as it
    /// came, and the rest of its body follows it as usual.
    func holdRequestBody(_ bytes: UnsafeRawBufferPointer, session: HTTPSession, sink: inout TunSink) {
        guard var held = session.heldRequest else { return }
        session.heldRequest = nil
        if held.body.take(bytes) {
            session.heldRequest = held
            return
        }
        EngineLog.warning("\(session.key): \(held.planned.exchange.url): the request's body passes \(held.body.selection.rewriter.bodyLimitText); [Body Rewrite] leaves it as it came (body-rewrite-limit in [General] moves the limit)")
        var planned = held.planned
        let body = held.body.wire + Array(bytes)
        planned.head = held.head.serialized() + body
        planned.exchange.requestBodyBytes = body.count
        if har != nil {
            // HAR's postData starts where the body does; the rest is kept as it passes.
            body.withUnsafeBytes { HTTPChunkedContent.keep($0, content: &planned.exchange.requestContent, into: &planned.exchange.requestBody, limit: bodyLimitForHAR) }
        }
        dispatch(planned, in: session, sink: &sink)
    }

    /// The held request's body ended: it goes, rewritten if the lines
    /// change it. A large body goes to the worker first (`pendingRequestRewrite`;
    /// `bodyRewritesFinished` sends it).
    func finishHeldRequest(_ session: HTTPSession, sink: inout TunSink) {
        guard let held = session.heldRequest, session.pendingRequestRewrite == nil else { return }
        if held.body.runsOffTheLoop, let id = submitBodyRewrite(held.body, session: session) {
            trace("\(session.key): \(held.planned.exchange.url): rewriting the request's \(held.body.wire.count) bytes on the worker")
            session.pendingRequestRewrite = id
            return
        }
        sendHeldRequest(session, outcome: held.body.rewrite(), sink: &sink)
    }

    /// The held request goes, rewritten as `outcome` says (or as it came).
    func sendHeldRequest(_ session: HTTPSession, outcome: Result<[UInt8]?, ContentDecoding.Failure>, sink: inout TunSink) {
        guard let held = session.heldRequest else { return }
        session.heldRequest = nil
        var planned = held.planned
        var head = held.head
        let body: [UInt8]
        if let rewritten = HeldBody.rewritten(outcome, about: "\(session.key): \(planned.exchange.url): the request") {
            trace("\(session.key): \(planned.exchange.url): request body rewritten (\(held.body.content.count) → \(rewritten.count) bytes)")
            HeldBody.reframe(&head.headers, length: rewritten.count)
            body = rewritten
            planned.exchange.requestContent = nil
            planned.exchange.bodyRewrites += held.body.selection.lines
        } else {
            body = held.body.wire
        }
        if planned.exchange.requestHead != nil { planned.exchange.requestHead = head }
        planned.head = head.serialized() + body
        planned.exchange.requestBodyBytes = body.count
        if har != nil {
            body.withUnsafeBytes { HTTPChunkedContent.keep($0, content: &planned.exchange.requestContent, into: &planned.exchange.requestBody, limit: bodyLimitForHAR) }
        }
        dispatch(planned, in: session, sink: &sink)
    }
}
