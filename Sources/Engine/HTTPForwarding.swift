internal import HTTP
internal import Stack

/// One plain-HTTP exchange of `sluice proxy`'s HTTP listener, as its bytes
/// cross the connection's two relay buffers: the request (the planned head,
/// then its body) entering `toUpstream`, the response entering `toClient`.
/// The parsers say where each message ends, so the client's next request
/// can be planned on its own (keep-alive), and where the response head is,
/// so it can be rewritten. Offsets are into the buffers' unsent bytes and
/// move as bytes are sent.
struct HTTPForwarding {
    var exchange: HTTPExchange
    /// Reads the request as it enters `toUpstream`; nil once it has ended.
    var requests: HTTPRequestParser? = HTTPRequestParser()
    /// How much of `toUpstream` the request parser has seen.
    var requestScanned = 0
    /// How much of `toUpstream` is this request, once the parser found its
    /// end: when it has all gone, the exchange's `lastSentAt` is set.
    var requestEnd: Int?
    /// Reads the response as it enters `toClient`; nil once it has ended.
    var responses: HTTPResponseParser?
    /// How much of `toClient` the response parser has seen.
    var responseScanned = 0
    /// Where the response head still being read starts in `toClient`: bytes
    /// from there wait until it is whole (it may be rewritten). nil once the
    /// final head has gone on.
    var heldFrom: Int? = 0
    /// Some of the response went on to the client (an interim head, or the final one).
    var responseStarted = false
    /// [Body Rewrite]: the request's head (without `Expect`) and body, held
    /// until its end, and where in `toUpstream` they go (`place`, which moves
    /// as bytes before it are sent); their bytes leave `toUpstream` as they
    /// are scanned.
    var heldRequest: (head: HTTPRequestHead, body: HeldBody, place: Int)?
    /// [Body Rewrite]: the response's head and body, held until its end
    /// (taken out of `toClient` as they are scanned; `heldFrom` stays where they go).
    var heldResponse: (head: HTTPResponseHead, body: HeldBody)?
    /// The held response has ended and `BodyRewriteWorker` rewrites it
    /// (this job): nothing more of the response is scanned or read, nothing
    /// past `heldFrom` goes to the client, and the exchange is not over.
    var pendingRewrite: UInt64?
    /// The held request has ended and the worker rewrites it (this job): it
    /// goes in its place when the outcome is back; the client is not read.
    var pendingRequestRewrite: UInt64?
    /// After a 101 Switching Protocols: opaque bytes both ways until the connection ends.
    var passthrough = false
    /// After a 101 to WebSocket, with a HAR: its messages, for its entry at the connection's end.
    var webSocket: WebSocketRecording?
    /// The connection ends after this exchange: the client asked (HTTP/1.0,
    /// `Connection: close`), the origin did, or its response ran to the close.
    var closeAfter: Bool
    /// The [Statistics] books have it.
    var recorded = false
    /// Where the request goes and the head it goes with, to send it again
    /// on a new connection (`retryOnFreshUpstream`).
    let route: FlowRoute
    let upstream: UpstreamTarget
    let head: [UInt8]
    let method: HTTPMethod
    /// It went out on an upstream connection an earlier exchange left open;
    /// and it has been sent again once already.
    var reusedUpstream = false
    var retried = false
    /// The connection's byte counts when the exchange began, for its own.
    let bytesUpAtStart: Int
    let bytesDownAtStart: Int

    init(exchange: HTTPExchange, method: HTTPMethod, route: FlowRoute, upstream: UpstreamTarget, head: [UInt8],
         closeAfter: Bool, responseHeadLimit: Int, bytesUp: Int, bytesDown: Int) {
        self.exchange = exchange
        self.method = method
        self.route = route
        self.upstream = upstream
        self.head = head
        var responses = HTTPResponseParser(limits: HTTPParserLimits(maxHeadBytes: responseHeadLimit))
        responses.expectResponse(to: method)
        self.responses = responses
        self.closeAfter = closeAfter
        bytesUpAtStart = bytesUp
        bytesDownAtStart = bytesDown
    }

    /// May go again on a new connection when a reused one closes before any
    /// of the response came (RFC 9112 §9.3.1): once, and only a request
    /// with no body and an idempotent method (RFC 9110 §9.2.2).
    var mayRetry: Bool {
        // No response head came: one held for [Body Rewrite] has, though none of it went on yet.
        guard reusedUpstream, !retried, !responseStarted, exchange.status == nil, requests == nil,
              exchange.requestBodyBytes == 0 else { return false }
        switch method {
        case .get, .head, .options, .trace, .put, .delete: return true
        default: return false
        }
    }

    /// Both messages have ended (and the connection did not become a tunnel).
    var isComplete: Bool { requests == nil && responses == nil && !passthrough }

    /// `n` bytes already scanned came into `toClient` ahead of the scan (`InboundConnection.refillToClient`).
    mutating func movedBeforeScan(_ n: Int) {
        if let held = heldFrom { heldFrom = held + n }
        responseScanned += n
    }

    mutating func sentToClient(_ n: Int) {
        if let held = heldFrom { heldFrom = held - n }
        responseScanned -= n
    }

    /// `n` bytes of `toUpstream` went upstream at `now`: the request's
    /// upload (HAR's and the flow log's `send`) runs from its first byte
    /// sent to its last.
    mutating func sentUpstream(_ n: Int, now: Instant) {
        requestScanned -= n
        heldRequest?.place -= n
        guard n > 0, !passthrough else { return }
        if exchange.firstSentAt == nil { exchange.firstSentAt = now }
        if let end = requestEnd {
            guard end > 0 else { return }
            requestEnd = end - n
            exchange.lastSentAt = now
        } else if requests != nil {
            exchange.lastSentAt = now
        }
    }
}
