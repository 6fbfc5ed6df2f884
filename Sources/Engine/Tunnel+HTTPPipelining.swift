internal import HTTP
internal import Rules

/// An h2 app's requests to an HTTP/1.1 origin, pipelined (RFC 9112 §9.3.2).
///
/// The app sends its streams together and waits for them together; one
/// HTTP/1.1 connection answers them in order. Sent one at a time, each
/// request waited a round trip to the origin behind the response before it
/// (a page's twenty small requests, twenty round trips). Pipelined, they
/// reach the origin together, and it answers them in order as HTTP/1.1 asks.
///
/// What makes it safe is that a pipelined request may go again: the one
/// thing HTTP/1.1 cannot say is whether an origin that closed read the
/// requests behind its last response (it closes after `Connection: close`,
/// after its keep-alive limit, or on an idle timeout as a request arrives).
/// So only requests that may be repeated without harm are pipelined: safe
/// methods (RFC 9110 §9.2.1) without a body, whose heads HTTP mode keeps
/// (`HTTPExchange.resendHead`). When the origin closes with pipelined
/// requests unanswered, or says in a response that it will, those go again
/// in their places on a new connection (§9.3.1 allows it for idempotent
/// requests), and the session pipelines no more: its origin is one that
/// closes without warning, or after every response. (One that says
/// `Connection: close` after many, at its keep-alive limit, is pipelined to
/// again on the next connection.) Each goes again at most `pipelineDepth`
/// times, so an origin that answers one request a connection still answers
/// them all. Others (POST, a body) wait for the responses before them.
///
/// The requests go on in the app's order and the responses come back in it,
/// so HTTP mode, the gateway, rules and records are unchanged.
extension Tunnel {
    /// The most requests waiting for their responses on one HTTP/1.1 connection.
    static let pipelineDepth = 8

    /// Methods that change nothing at the origin (RFC 9110 §9.2.1).
    static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]

    /// `planned` may be pipelined behind `waiting` requests on `flow`, an
    /// HTTP/1.1 connection: its TLS is up (so its protocol is known), the
    /// origin has not closed on pipelined requests before, and the request
    /// could go again.
    func pipelines(_ planned: PlannedRequest, behind waiting: Int, in session: HTTPSession, on flow: TCPFlow) -> Bool {
        guard !session.pipeliningRefused, waiting < Self.pipelineDepth, planned.exchange.resendHead != nil,
              Self.safeMethods.contains(planned.exchange.method),
              flow.connected, flow.handshake == nil, !flow.upstreamWriteClosed, flow.h2 == nil,
              let tls = flow.tls, tls.isConnected else { return false }
        return true
    }

    /// The HTTP/1.1 origin closed (or failed, or said it closes) with
    /// requests pipelined to it unanswered: they go again on a new
    /// connection, the others unanswered fail as they would have (a 502, or
    /// a reset stream for one whose response had begun). With `refusing`,
    /// the session pipelines no more. False, and nothing done, when no
    /// pipelined request waits.
    func sendPipelinedAgain(_ flow: TCPFlow, session: HTTPSession, reason: String, kind: ConnectionErrorKind,
                            refusing: Bool = true, sink: inout TunSink) -> Bool {
        guard session.isHTTP2, flow.h2 == nil,
              session.inFlight.contains(where: { $0.localAnswer == nil && $0.pipelined && $0.responseBytes == 0 }) else { return false }
        if refusing { session.pipeliningRefused = true }
        sendUnansweredAgain(flow, session: session, reason: reason, otherwise: nil, kind: kind, sink: &sink) { exchange in
            exchange.pipelined && exchange.resends < Self.pipelineDepth
        }
        return true
    }

    /// The requests `flow` left unanswered go again, in their places, on a
    /// new connection to the same target, when they can: nothing of their
    /// response came, HTTP mode kept their heads, and `mayGoAgain` says so.
    /// The others fail their streams (`failStream`: `otherwise`, or a 502,
    /// or a reset for one whose response had begun). `flow` is gone afterwards.
    func sendUnansweredAgain(_ flow: TCPFlow, session: HTTPSession, reason: String, otherwise: StreamEnding?,
                             kind: ConnectionErrorKind, sink: inout TunSink, mayGoAgain: (HTTPExchange) -> Bool) {
        trace("\(flow.key): \(reason): sending those requests again on a new connection")
        removeTCP(flow, keepConnection: true, keepSession: true)
        let target = session.upstream, route = session.upstreamRoute
        session.upstream = nil
        session.toUpstream = OutgoingBytes()
        session.responses = HTTPResponseParser()
        var heads: [UInt8] = []
        var resent = 0
        for index in session.inFlight.indices where session.inFlight[index].localAnswer == nil {
            let exchange = session.inFlight[index]
            // (Not one the origin began to answer after all: that answer went to the app.)
            if target != nil, route != nil, let head = exchange.resendHead, exchange.responseBytes == 0, mayGoAgain(exchange) {
                heads += head
                session.inFlight[index].resends += 1
                // On the new connection, those after the first are pipelined again.
                session.inFlight[index].pipelined = resent > 0
                resent += 1
                session.responses.expectResponse(to: HTTPMethod(rawValue: exchange.method))
            } else {
                failStream(session, at: index, reason: reason, kind: kind, unanswered: otherwise)
                // The newest request may still be sending its body: it goes nowhere now.
                if index == session.inFlight.indices.last { session.skippingRequestBody = true }
            }
        }
        if let target, let route, !heads.isEmpty {
            session.toUpstream.append(heads)
            connectSession(session, to: target, through: route, sink: &sink)
        }
        if !touched.contains(session.key) { touched.append(session.key) }
    }
}
