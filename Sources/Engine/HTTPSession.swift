internal import HTTP
internal import Rules
internal import Stack
internal import Wire

/// One app connection relayed in HTTP mode: every request head is planned
/// (URL rewrite, Map Local, rule, header rewrite) before it goes upstream, and
/// every response head is rewritten and recorded on its way back. Bodies pass
/// through unchanged and uncopied: the parsers only say how many bytes are body.
///
/// The session outlives upstream connections: a request whose plan names
/// another upstream (a rewritten host, another policy) waits until the
/// responses in flight have finished, then the old upstream is closed and the
/// new one opened.
final class HTTPSession {
    var requests = HTTPRequestParser()
    var responses = HTTPResponseParser()
    /// Requests sent upstream (or answered locally) whose responses have not finished, oldest first.
    var inFlight: [HTTPExchange] = []
    /// The oldest request in flight is answered locally: its bytes go next.
    /// (Asked of the element in place: `inFlight.first` would copy it whole.)
    var answerIsNext: Bool { !inFlight.isEmpty && inFlight[0].localAnswer != nil }
    /// A request planned for another upstream, waiting for `inFlight` to empty.
    var waiting: PlannedRequest?
    /// Bytes for the upstream before anything else: a rewritten request head.
    var toUpstream = OutgoingBytes()
    /// Bytes for the app before anything else: a rewritten response head, a local answer.
    var toApp = OutgoingBytes()
    /// Body bytes the request parser already counted that still have to be forwarded (or skipped).
    var requestBodyPending = 0
    /// The current request is answered locally: its body is read and dropped.
    var skippingRequestBody = false
    /// Response body bytes counted but not yet written to the app (they wait in `responseHold`).
    var responseHold: [UInt8] = []
    /// A request [Body Rewrite] changes: planned, and held with its body until the body ends.
    var heldRequest: HeldRequest?
    /// A response [Body Rewrite] changes: its head and body, held until its end.
    var heldResponse: (head: HTTPResponseHead, body: HeldBody)?
    /// A held response the worker rewrites (`Tunnel.finishHeldResponse`); at most one.
    var pendingResponseRewrite: PendingResponseRewrite?
    /// The worker's job for `heldRequest`, whose body has ended: no later
    /// request is read meanwhile, and the session counts as busy.
    var pendingRequestRewrite: UInt64?
    /// After an Upgrade (WebSocket) or a CONNECT, bytes are opaque both ways.
    var passthrough = false
    /// After a 101 to WebSocket, with a HAR: its messages, for its entry (`WebSocketRecording`).
    var webSocket: WebSocketRecording?
    /// The upstream this session talks to now, and the route that reaches it.
    var upstream: UpstreamTarget? { didSet { upstreamLabel = upstream?.description } }
    /// `upstream` as each request's record names it: made once per upstream, not per request.
    private(set) var upstreamLabel: String?
    var upstreamRoute: FlowRoute?
    /// The last request was answered with `Connection: close`: the app's side ends after it.
    var closeAfterAnswer = false
    /// The upstream's last response said it closes (`Connection: close`, or
    /// HTTP/1.0's default): the next request goes on a new connection.
    var upstreamSpent = false
    /// An HTTP/1.1 origin closed with requests pipelined to it unanswered,
    /// without warning or after a single response: the session's later
    /// requests go one at a time.
    var pipeliningRefused = false
    /// Responses the current upstream connection has given.
    var answeredOnUpstream = 0
    /// Requests seen on this connection (the flow log numbers them).
    var requestCount = 0
    /// The app closed its side while a request waited, and is probed since (`Tunnel.probeAppThatClosed`).
    var appProbed = false
    /// Set for intercepted HTTPS: the TLS Sluice terminates on the app's
    /// connection, whose plaintext is what the parsers read and write.
    var app: InterceptedApp?
    /// The app's connection.
    let key: FlowKey

    /// The app speaks HTTP/2 inside its TLS: many streams share the
    /// connection, so a request's failure ends its stream, not the connection.
    var isHTTP2: Bool { app?.gateway != nil }

    /// A request in flight waits for the upstream's response.
    var awaitsUpstream: Bool { inFlight.contains { $0.localAnswer == nil } }
    /// The first request's facts (domain from DNS or Host), for later requests' rules.
    var facts: FlowFacts

    init(key: FlowKey, facts: FlowFacts) {
        self.key = key
        self.facts = facts
    }

    /// The origin the app connected to: its fake IP's name, or the address itself.
    var originHost: String {
        if facts.domainSource == .dns, let domain = facts.domain { return domain }
        switch key.destinationAddress {
        case let .v4(address): return address.description
        case let .v6(address): return address.description
        }
    }
}

/// Bytes queued ahead of a stream, written as the other side takes them.
struct OutgoingBytes {
    var bytes: [UInt8] = []
    var offset = 0
    /// Where the bytes of a message still being rewritten off the loop go
    /// (`BodyRewriteWorker`): draining stops there, and what is appended
    /// meanwhile waits behind it.
    private(set) var hole: Int?

    var isEmpty: Bool { offset == bytes.count && hole == nil }
    /// Bytes not yet written.
    var count: Int { bytes.count - offset }

    /// Keeps the place after the bytes queued so far for bytes to come.
    mutating func openHole() {
        precondition(hole == nil, "one hole at a time")
        hole = bytes.count
    }

    /// Puts `more` in the hole's place: they drain next, then what waited behind.
    mutating func fillHole(_ more: [UInt8]) {
        guard let hole else { return }
        bytes.insert(contentsOf: more, at: hole)
        self.hole = nil
    }

    mutating func append(_ more: [UInt8]) {
        if isEmpty {
            // (With a hole, never: its place would move.)
            bytes = more
            offset = 0
        } else {
            bytes += more
        }
    }

    /// Hands the unwritten bytes to `write`, which returns how many it took.
    mutating func drain(_ write: (UnsafeRawBufferPointer) -> Int) {
        let end = hole ?? bytes.count
        guard offset < end else { return }
        let n = bytes.withUnsafeBytes { write(UnsafeRawBufferPointer(rebasing: $0[offset ..< end])) }
        offset += n
        if isEmpty {
            // Not removeAll(keepingCapacity:): the next append takes its
            // bytes' own array, and a buffer still shared (with the plan that
            // made it) would be copied into a new one for nothing.
            bytes = []
            offset = 0
        }
    }
}

/// Where requests of a session go: the route and the origin behind it.
struct UpstreamTarget: Equatable, CustomStringConvertible {
    var route: FlowRoute.Identity
    var host: String
    var port: UInt16
    /// The URL is https: Sluice's TLS client talks to the origin.
    var tls = false

    var description: String { "\(tls ? "https://" : "")\(host):\(port) via \(route)" }
}

/// One request on its way: what the plan decided, for the response and the records.
struct HTTPExchange: Sendable {
    /// Somewhere to note bytes that belong to no exchange (none in flight).
    static var unrecorded: HTTPExchange {
        HTTPExchange(method: "", url: "", rule: "", policy: "", mocked: false, started: .zero)
    }

    var method: String
    var url: String
    var rule: String
    var policy: String
    var rewrittenFrom: String?
    /// The URL's host as the rules saw it; nil for a request answered before
    /// the rules ran (statistics then take it from the URL).
    var host: String?
    var mocked: Bool
    var started: Instant
    var requestBytes = 0
    var responseBytes = 0
    var status: Int?
    /// Why no (whole) response came: a connection error, for the statistics.
    var failure: String?
    var failureKind: ConnectionErrorKind?
    /// When the response head arrived (the statistics' latency ends there).
    var headAt: Instant?
    /// When its first and its last byte went upstream (HAR's blocked and send).
    var firstSentAt: Instant?
    var lastSentAt: Instant?
    /// For HAR: the heads as forwarded and received, and the first bytes of the bodies.
    var requestHead: HTTPRequestHead?
    var responseHead: HTTPResponseHead?
    var requestBody: [UInt8] = []
    var responseBody: [UInt8] = []
    var requestBodyBytes = 0
    var responseBodyBytes = 0
    /// HAR: a chunked body's data, kept without its framing (and counted).
    var requestContent: HTTPChunkedContent?
    var responseContent: HTTPChunkedContent?
    /// [Body Rewrite]'s lines for the request's body and the response's; nil (the usual case) when none matched.
    var requestBodyRewrite: BodyRewriteSelection?
    var responseBodyRewrite: BodyRewriteSelection?
    /// The profile lines of those that changed a body, for the flow log and HAR.
    var bodyRewrites: [Int] = []
    /// Local answers are not waited for upstream: their bytes go to the app when their turn comes.
    var localAnswer: [UInt8]?
    /// It went to the origin over HTTP/2 (`HTTP2ClientSession`).
    var forwardedOverHTTP2 = false
    /// It went in absolute form to this forward proxy (an `http` proxy, plain HTTP).
    var forwardProxy: String?
    /// The address its response came from (HAR's serverIPAddress): the
    /// origin's real one behind a fake IP, or the proxy's. Kept as an
    /// address and spelled only for HAR.
    var serverAddress: IPAddress?
    /// HTTP/2: its stream gets no HTTP/1.1 response (or no more of one), but this, when its turn comes.
    var streamEnding: StreamEnding?
    /// A request without a body: the head as sent, so that one the origin
    /// left unanswered goes again on a new connection: to an h2 origin that
    /// left it unprocessed (GOAWAY, RFC 9113 §8.7), once; to an HTTP/1.1
    /// origin that closed with it pipelined, or with it sent alone after an
    /// earlier response (RFC 9112 §9.3.1), up to `Tunnel.pipelineDepth`
    /// times in all (`resends`, `Tunnel.mayGoAgain`).
    var resendHead: [UInt8]?
    var resends = 0
    /// It went to an HTTP/1.1 origin behind another request still waiting
    /// for its response (`Tunnel.pipelines`).
    var pipelined = false
    /// It went on an upstream connection that had answered a request before.
    var reusedConnection = false
    /// The statistics, HAR and flow log have it already (a refusal, a
    /// failure): its local answer, if any, only goes to the app.
    var recorded = false
}

/// How HTTP/2's gateway ends a stream the session gives no response, or
/// no more of one (HTTP/1.1 would end the app's whole connection instead).
enum StreamEnding {
    /// RST_STREAM: a refused request (REJECT-RST, REJECT), a response the upstream cut off.
    case reset(HTTP2ErrorCode)
    /// Nothing at all (REJECT-DROP): the app gives up on the stream in its own time.
    case unanswered
    /// END_STREAM: its response's body ran to the origin's close, and all of it went.
    case atClose
}

/// A planned request whose body [Body Rewrite] changes: it goes (is
/// dispatched) once its body has ended, with the new body and a head that
/// frames it.
struct HeldRequest {
    var planned: PlannedRequest
    /// The planned head, without `Expect` (Sluice answered 100 Continue itself, or the app did not ask).
    var head: HTTPRequestHead
    var body: HeldBody
    /// The request parser reported the body's end: once its bytes are taken, it goes.
    var ended = false
}

/// A planned request that waits for its upstream.
struct PlannedRequest {
    var head: [UInt8]
    var target: UpstreamTarget
    var route: FlowRoute
    var exchange: HTTPExchange
}
