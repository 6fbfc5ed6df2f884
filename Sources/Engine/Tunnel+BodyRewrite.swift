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

    /// The held response's next body bytes. Past `BodyRewriter.bodyLimit`
    /// what is held goes on as it came, and so does the rest.
    func holdResponseBody(_ bytes: UnsafeRawBufferPointer, session: HTTPSession, connection: TCPConnection) {
        guard var held = session.heldResponse else { return }
        // Taken out while it grows, so the array is not copied for the write-back.
        session.heldResponse = nil
        if held.body.take(bytes) {
            session.heldResponse = held
            return
        }
        EngineLog.warning("\(session.key): \(session.inFlight.isEmpty ? "" : session.inFlight[0].url): the response's body passes \(BodyRewriter.bodyLimit >> 20) MiB; [Body Rewrite] leaves it as it came")
        releaseHeldResponse(held.head, held.body, rewritten: nil, session: session, connection: connection)
        writeApp(bytes, session: session, connection: connection)
        noteResponseBody(bytes[...], session: session)
    }

    /// The held response ended: it goes to the app, rewritten if the lines change it.
    func finishHeldResponse(_ session: HTTPSession, connection: TCPConnection) {
        guard let held = session.heldResponse else { return }
        session.heldResponse = nil
        let rewritten = held.body.rewritten(about: "\(session.key): \(session.inFlight.isEmpty ? "" : session.inFlight[0].url): the response")
        if rewritten != nil, !session.inFlight.isEmpty {
            trace("\(session.key): \(session.inFlight[0].url): body rewritten (\(held.body.content.count) → \(rewritten!.count) bytes)")
        }
        releaseHeldResponse(held.head, held.body, rewritten: rewritten, session: session, connection: connection)
    }

    private func releaseHeldResponse(_ head: HTTPResponseHead, _ body: HeldBody, rewritten: [UInt8]?,
                                     session: HTTPSession, connection: TCPConnection) {
        var head = head
        if let rewritten {
            HeldBody.reframe(&head.headers, length: rewritten.count)
            if !session.inFlight.isEmpty {
                session.inFlight[0].bodyRewrites += body.selection.lines
                session.inFlight[0].responseHead = head
                // HAR keeps the new body, which has no chunk framing.
                session.inFlight[0].responseContent = nil
            }
        }
        let headBytes = head.serialized()
        headBytes.withUnsafeBytes { writeApp($0, session: session, connection: connection) }
        if !session.inFlight.isEmpty { session.inFlight[0].responseBytes += headBytes.count }
        (rewritten ?? body.wire).withUnsafeBytes { bytes in
            writeApp(bytes, session: session, connection: connection)
            noteResponseBody(bytes[...], session: session)
        }
    }
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
    /// `BodyRewriter.bodyLimit` the request goes with what is held as it
    /// came, and the rest of its body follows it as usual.
    func holdRequestBody(_ bytes: UnsafeRawBufferPointer, session: HTTPSession, sink: inout TunSink) {
        guard var held = session.heldRequest else { return }
        session.heldRequest = nil
        if held.body.take(bytes) {
            session.heldRequest = held
            return
        }
        EngineLog.warning("\(session.key): \(held.planned.exchange.url): the request's body passes \(BodyRewriter.bodyLimit >> 20) MiB; [Body Rewrite] leaves it as it came")
        var planned = held.planned
        planned.head = held.head.serialized() + held.body.wire + Array(bytes)
        planned.exchange.requestBodyBytes = held.body.wire.count + bytes.count
        dispatch(planned, in: session, sink: &sink)
    }

    /// The held request's body ended: it goes, rewritten if the lines change it.
    func finishHeldRequest(_ session: HTTPSession, sink: inout TunSink) {
        guard let held = session.heldRequest else { return }
        session.heldRequest = nil
        var planned = held.planned
        var head = held.head
        let body: [UInt8]
        if let rewritten = held.body.rewritten(about: "\(session.key): \(planned.exchange.url): the request") {
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
