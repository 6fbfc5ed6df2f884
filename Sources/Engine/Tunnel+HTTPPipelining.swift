internal import HTTP
internal import Rules

/// An h2 app's requests to an HTTP/1.1 origin, pipelined (RFC 9112 §9.3.2),
/// and the requests an HTTP/1.1 origin left unanswered sent again.
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
/// after its keep-alive limit, or on an idle timeout as a request arrives;
/// one that closes with requests unread resets the connection, and the
/// reset may take the response it had just written with it). So only
/// requests that may be repeated without harm are pipelined, and only
/// behind others of their kind: safe methods (RFC 9110 §9.2.1) without a
/// body, whose heads HTTP mode keeps (`HTTPExchange.resendHead`). When the
/// origin closes with such requests unanswered, or says in a response that
/// it will, those go again in their places on a new connection (§9.3.1
/// allows it for idempotent requests), and the session pipelines no more:
/// its origin is one that closes without warning, or after every response.
/// (One that says `Connection: close` after many, at its keep-alive limit,
/// is pipelined to again on the next connection.) Each goes again at most
/// `pipelineDepth` times, so an origin that answers one request a
/// connection still answers them all. Others (POST, a body) wait for the
/// responses before them.
///
/// The same holds for a safe request sent alone on a kept-alive connection
/// that the origin closed as it came (the keep-alive race), for any app:
/// curl and browsers send such a request again themselves when they talk to
/// the origin directly; behind Sluice it was a 502.
///
/// The requests go on in the app's order and the responses come back in it,
/// so HTTP mode, the gateway, rules and records are unchanged.
extension Tunnel {
    /// The most requests waiting for their responses on one HTTP/1.1 connection.
    static let pipelineDepth = 8

    /// Methods that change nothing at the origin (RFC 9110 §9.2.1).
    static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]

    /// `planned` may be pipelined behind `waiting` requests on `flow`, an
    /// HTTP/1.1 connection to the origin itself (plain HTTP, or TLS that is
    /// up, so that ALPN said which protocol; not a forward proxy's
    /// connection, which serves every origin behind it), the origin has not
    /// closed on pipelined requests before, and the request could go
    /// again, as could every request it would wait behind. (An
    /// origin that closes with requests unread resets the connection, and a
    /// reset may take the response it had just written with it: the request
    /// answered there must be one that can go again too.)
    func pipelines(_ planned: PlannedRequest, behind waiting: Int, in session: HTTPSession, on flow: TCPFlow) -> Bool {
        guard !session.pipeliningRefused, waiting < Self.pipelineDepth, Self.repeatable(planned.exchange),
              flow.connected, flow.handshake == nil, !flow.upstreamWriteClosed, flow.h2 == nil,
              let target = session.upstream, !target.host.isEmpty,
              target.tls ? flow.tls?.isConnected == true : flow.tls == nil else { return false }
        return session.inFlight.allSatisfy { $0.localAnswer != nil || Self.repeatable($0) }
    }

    /// A safe request without a body (HTTP mode kept its head): sending it twice does no harm.
    static func repeatable(_ exchange: HTTPExchange) -> Bool {
        exchange.resendHead != nil && safeMethods.contains(exchange.method)
    }

    /// The HTTP/1.1 origin closed (or failed, or said it closes) with
    /// requests unanswered that may go again (`mayGoAgain`): those
    /// pipelined to it, and a safe one sent on the connection after an
    /// earlier response (the keep-alive race: the origin closed the idle
    /// connection as the request came, which an app talking to the origin
    /// itself would try again, as browsers and curl do). They go again on a
    /// new connection. For an h2 app the others unanswered fail their
    /// streams as they would have (a 502, or a reset for one whose response
    /// had begun); an HTTP/1.1 app's go again only if all of them may, as
    /// its connection cannot fail one alone. With `refusing`, a session
    /// whose pipelined requests went unanswered pipelines no more. False,
    /// and nothing done, when none may go again.
    func sendAgainIfSafe(_ flow: TCPFlow, session: HTTPSession, reason: String, kind: ConnectionErrorKind,
                         refusing: Bool = true, sink: inout TunSink) -> Bool {
        // (Without a target to go to, nothing can go again: an HTTP/1.1 app's requests must not fail as streams.)
        guard flow.h2 == nil, session.upstream != nil, session.upstreamRoute != nil else { return false }
        let unanswered = session.inFlight.filter { $0.localAnswer == nil }
        let pipelined = unanswered.contains { $0.pipelined }
        let mayGoAgain = { (exchange: HTTPExchange) in Self.mayGoAgain(exchange, pipelinedBehind: pipelined) }
        if session.isHTTP2 {
            guard unanswered.contains(where: mayGoAgain) else { return false }
        } else {
            guard !unanswered.isEmpty, unanswered.allSatisfy(mayGoAgain) else { return false }
        }
        if refusing, pipelined { session.pipeliningRefused = true }
        sendUnansweredAgain(flow, session: session, reason: reason, otherwise: nil, kind: kind, sink: &sink, mayGoAgain: mayGoAgain)
        return true
    }

    /// A request an HTTP/1.1 origin left unanswered may go again: it is
    /// `repeatable`, nothing of its response came, it went at most
    /// `pipelineDepth` times, and it was pipelined, or went on a connection
    /// that had answered before or with requests pipelined behind it (whose
    /// reset may have taken its response).
    static func mayGoAgain(_ exchange: HTTPExchange, pipelinedBehind: Bool) -> Bool {
        repeatable(exchange) && exchange.responseBytes == 0 && exchange.resends < pipelineDepth
            && (exchange.pipelined || exchange.reusedConnection || pipelinedBehind)
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
        session.heldResponse = nil
        var heads: [UInt8] = []
        var resent = 0
        for index in session.inFlight.indices where session.inFlight[index].localAnswer == nil {
            let exchange = session.inFlight[index]
            // (Not one the origin began to answer after all: that answer went to the app.)
            if target != nil, route != nil, let head = exchange.resendHead, exchange.responseBytes == 0, mayGoAgain(exchange) {
                heads += head
                session.inFlight[index].resends += 1
                // On the new connection, those after the first are pipelined again; none went on it after an answer.
                session.inFlight[index].pipelined = resent > 0
                session.inFlight[index].reusedConnection = false
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
