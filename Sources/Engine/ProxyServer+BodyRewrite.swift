internal import HTTP
internal import Rules

/// [Body Rewrite] on responses of `sluice proxy`'s plain-HTTP exchanges
/// (and of the HTTPS ones it intercepts): as in the tunnel
/// (`Tunnel+BodyRewrite.swift`), a response whose request's URL a line
/// matches is held from its head to its end. Its bytes leave `toClient` as
/// they are scanned, `heldFrom` keeping the place they go; at its end the
/// whole message goes there, through `toClientLater` when `toClient` cannot
/// take it all.
extension ProxyServer {
    /// At a final response head (as [Header Rewrite] left it): true when its message is held.
    func holdsResponse(_ head: HTTPResponseHead, in forwarding: inout HTTPForwarding) -> Bool {
        guard let body = HeldBody.forResponse(head, selection: forwarding.exchange.responseBodyRewrite,
                                              method: forwarding.exchange.method, url: forwarding.exchange.url) else { return false }
        forwarding.heldResponse = (head, body)
        return true
    }

    /// The held response's next `consumed` body bytes, at the scan's place
    /// in `toClient`, taken out of it. Past the rewriter's `bodyLimit` the
    /// held bytes go as they came, these after them, and the rest follows.
    func holdResponseBody(_ connection: InboundConnection, _ forwarding: inout HTTPForwarding, consumed: Int) {
        let start = forwarding.responseScanned
        let bytes = UnsafeRawBufferPointer(rebasing: connection.toClient.readable[start ..< start + consumed])
        if forwarding.heldResponse!.body.take(bytes) {
            _ = connection.toClient.replace(start ..< start + consumed, with: [])
            return
        }
        EngineLog.warning("\(connection.description): \(forwarding.exchange.url): the response's body passes \(forwarding.heldResponse!.body.selection.rewriter.bodyLimitText); [Body Rewrite] leaves it as it came (body-rewrite-limit in [General] moves the limit)")
        forwarding.responseScanned += consumed
        releaseHeldResponse(connection, &forwarding, rewrite: false)
    }

    /// At the held response's end: true when its body is large and goes to
    /// the worker (`pendingRewrite`), the client getting nothing past its
    /// place meanwhile and the upstream not read.
    func rewritesOffTheLoop(_ connection: InboundConnection, _ forwarding: inout HTTPForwarding) -> Bool {
        guard let held = forwarding.heldResponse, held.body.runsOffTheLoop, let id = submitBodyRewrite(held.body, connection: connection) else { return false }
        trace("\(connection.description): \(forwarding.exchange.url): rewriting \(held.body.wire.count) bytes on the worker")
        forwarding.pendingRewrite = id
        return true
    }

    /// At the held request's end: true when its body is large and goes to
    /// the worker (`pendingRequestRewrite`); nothing of it goes upstream meanwhile.
    func requestRewritesOffTheLoop(_ connection: InboundConnection, _ forwarding: inout HTTPForwarding) -> Bool {
        guard let held = forwarding.heldRequest, held.body.runsOffTheLoop, let id = submitBodyRewrite(held.body, connection: connection) else { return false }
        trace("\(connection.description): \(forwarding.exchange.url): rewriting the request's \(held.body.wire.count) bytes on the worker")
        forwarding.pendingRequestRewrite = id
        return true
    }

    /// `body` to the worker (started with the first) for `connection`; nil when no thread could be started.
    private func submitBodyRewrite(_ body: HeldBody, connection: InboundConnection) -> UInt64? {
        guard let id = BodyRewriteWorker.submit(body, to: &bodyRewriteWorker, watch: {
            (try? watch(rawDescriptor: $0, token: Self.bodyRewriteToken)) != nil
        }) else { return nil }
        pendingBodyRewrites[id] = connection
        return id
    }

    /// The worker's outcomes: each request goes upstream in its place; each
    /// response goes to the client in its place, and its exchange ends. A
    /// connection that ended meanwhile is not there to take it.
    func bodyRewritesFinished() {
        guard let worker = bodyRewriteWorker else { return }
        for finished in worker.takeFinished() {
            guard let connection = pendingBodyRewrites.removeValue(forKey: finished.id), connections[connection.id] === connection,
                  var forwarding = connection.forwarding else { continue }
            if forwarding.pendingRequestRewrite == finished.id {
                forwarding.pendingRequestRewrite = nil
                releaseHeldRequest(connection, &forwarding, rewrite: true, outcome: finished.outcome)
                forwarding.requestEnd = forwarding.requestScanned + connection.toUpstreamLater.count
            } else if forwarding.pendingRewrite == finished.id {
                forwarding.pendingRewrite = nil
                releaseHeldResponse(connection, &forwarding, rewrite: true, outcome: finished.outcome)
                forwarding.responses = nil
            } else {
                continue
            }
            connection.forwarding = forwarding
            pump(connection)
        }
    }

    /// The held message goes to the client in its place, rewritten when
    /// `rewrite` and the lines change it (`outcome`: what the worker made of
    /// it, else it is rewritten here), else as it came.
    func releaseHeldResponse(_ connection: InboundConnection, _ forwarding: inout HTTPForwarding, rewrite: Bool,
                             outcome: Result<[UInt8]?, ContentDecoding.Failure>? = nil) {
        guard let held = forwarding.heldResponse, let place = forwarding.heldFrom else { return }
        forwarding.heldResponse = nil
        var head = held.head
        let about = "\(connection.description): \(forwarding.exchange.url): the response"
        let rewritten = rewrite ? HeldBody.rewritten(outcome ?? held.body.rewrite(), about: about) : nil
        if let rewritten {
            trace("\(connection.description): \(forwarding.exchange.url): body rewritten (\(held.body.content.count) → \(rewritten.count) bytes)")
            HeldBody.reframe(&head.headers, length: rewritten.count)
            forwarding.exchange.responseHead = head
            forwarding.exchange.bodyRewrites += held.body.selection.lines
            // HAR keeps the new body, which has no chunk framing.
            forwarding.exchange.responseContent = nil
        }
        forwarding.heldFrom = nil
        forwarding.responseStarted = true
        forwarding.responseScanned = Self.put(head.serialized(), rewritten ?? held.body.wire, at: place, in: connection.toClient,
                                              later: &connection.toClientLater) { part in
            noteBody(part, from: 0, count: part.count, into: &forwarding.exchange.responseBody,
                     content: &forwarding.exchange.responseContent, total: &forwarding.exchange.responseBodyBytes)
        }
    }

    /// `head` and `body`, then the bytes the scan passed after `place` (a
    /// body past the limit: the bytes that passed it), go in place of those
    /// bytes: as many as `buffer` has room for, the rest in `later`. `note`
    /// sees the body and those bytes. Returns where the scan is now.
    static func put(_ head: [UInt8], _ body: [UInt8], at place: Int, in buffer: RelayBuffer, later: inout OutgoingBytes,
                    note: (UnsafeRawBufferPointer) -> Void) -> Int {
        let after = Array(buffer.readable[place...])
        body.withUnsafeBytes(note)
        after.withUnsafeBytes(note)
        var message = head + body + after
        buffer.truncate(to: place)
        let n = min(message.count, buffer.room)
        _ = message.withUnsafeBytes { buffer.append(UnsafeRawBufferPointer(rebasing: $0[0 ..< n])) }
        if n < message.count {
            message.removeFirst(n)
            later.append(message)
        }
        return place + n
    }
}

/// [Body Rewrite] on requests through `sluice proxy`: the planned head, when
/// a line matches its URL and it has a body, is taken out of `toUpstream` as
/// it is scanned, the body after it; at the body's end the request goes
/// whole in their place (through `toUpstreamLater` when it does not fit),
/// and the client is not read until it has.
extension ProxyServer {
    /// At the planned head's scan: true when the request is held (its bytes are out of `toUpstream`).
    func holdsRequest(_ head: HTTPRequestHead, _ connection: InboundConnection, _ forwarding: inout HTTPForwarding, length: Int) -> Bool {
        guard let selection = forwarding.exchange.requestBodyRewrite, head.hasBody else { return false }
        guard let body = HeldBody.forRequest(head, selection: selection, about: "\(connection.description): \(forwarding.exchange.url)") else { return false }
        let place = forwarding.requestScanned
        _ = connection.toUpstream.replace(place ..< place + length, with: [])
        var forwarded = head
        forwarded.headers.remove(name: "Expect")
        forwarding.heldRequest = (forwarded, body, place)
        if head.expectsContinue, connection.toClientLater.isEmpty, forwarding.heldFrom == connection.toClient.count {
            // The origin cannot say 100 Continue to a head it has not seen (RFC 9110 §10.1.1 lets a proxy say it).
            if connection.toClient.append(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) {
                forwarding.heldFrom = connection.toClient.count
                forwarding.responseScanned = connection.toClient.count
            }
        }
        return true
    }

    /// The held request's next `consumed` body bytes, at the scan's place,
    /// taken out of `toUpstream`; false, taking nothing, past
    /// the rewriter's `bodyLimit` (they stay, scanned, and the request goes as it came).
    func holdRequestBody(_ connection: InboundConnection, _ forwarding: inout HTTPForwarding, consumed: Int) -> Bool {
        let start = forwarding.requestScanned
        if forwarding.heldRequest!.body.take(UnsafeRawBufferPointer(rebasing: connection.toUpstream.readable[start ..< start + consumed])) {
            _ = connection.toUpstream.replace(start ..< start + consumed, with: [])
            return true
        }
        EngineLog.warning("\(connection.description): \(forwarding.exchange.url): the request's body passes \(forwarding.heldRequest!.body.selection.rewriter.bodyLimitText); [Body Rewrite] leaves it as it came (body-rewrite-limit in [General] moves the limit)")
        forwarding.requestScanned += consumed
        return false
    }

    /// The held request goes in its place: rewritten when `rewrite` and the
    /// lines change it, else as it came; scanned bytes after the place (a
    /// body past the limit) follow it.
    func releaseHeldRequest(_ connection: InboundConnection, _ forwarding: inout HTTPForwarding, rewrite: Bool,
                            outcome: Result<[UInt8]?, ContentDecoding.Failure>? = nil) {
        guard let held = forwarding.heldRequest else { return }
        forwarding.heldRequest = nil
        var head = held.head
        let about = "\(connection.description): \(forwarding.exchange.url): the request"
        let rewritten = rewrite ? HeldBody.rewritten(outcome ?? held.body.rewrite(), about: about) : nil
        if let rewritten {
            trace("\(connection.description): \(forwarding.exchange.url): request body rewritten (\(held.body.content.count) → \(rewritten.count) bytes)")
            HeldBody.reframe(&head.headers, length: rewritten.count)
            forwarding.exchange.requestContent = nil
            forwarding.exchange.bodyRewrites += held.body.selection.lines
        }
        if forwarding.exchange.requestHead != nil { forwarding.exchange.requestHead = head }
        forwarding.requestScanned = Self.put(head.serialized(), rewritten ?? held.body.wire, at: held.place, in: connection.toUpstream,
                                             later: &connection.toUpstreamLater) { part in
            noteBody(part, from: 0, count: part.count, into: &forwarding.exchange.requestBody,
                     content: &forwarding.exchange.requestContent, total: &forwarding.exchange.requestBodyBytes)
        }
    }
}
