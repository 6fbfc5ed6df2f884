internal import HTTP
internal import Sys
internal import TLS

/// HTTP/2 to origins: when an app speaks h2 inside intercepted TLS, Sluice's
/// TLS client offers the origin h2 too, and an origin that chooses it gets
/// an `HTTP2ClientSession` inside that TLS. HTTP mode still writes and reads
/// HTTP/1.1: the session turns each request into a stream and each stream's
/// response back into HTTP/1.1, so an origin that speaks only h2 (nghttpd, a
/// gRPC server) is reached, and nothing else in HTTP mode changes.
extension Tunnel {
    /// The upstream's TLS handshake ended: HTTP/2 inside it if the origin chose h2.
    func upstreamTLSConnected(_ flow: TCPFlow) {
        guard let tls = flow.tls, tls.machine.applicationProtocol == Interception.http2 else { return }
        trace("\(flow.key): HTTP/2 with \(tls.host)")
        flow.h2 = HTTP2ClientSession()
        _ = flushH2(flow)
    }

    /// The h2 session's frames for the origin, sealed behind those waiting.
    /// False while the socket is full.
    func flushH2(_ flow: TCPFlow) -> Bool {
        guard let tls = flow.tls, flow.h2 != nil else { return true }
        if flow.h2!.hasOutput { flow.h2Frames.append(flow.h2!.takeOutput()) }
        var blocked = false
        flow.h2Frames.drain { bytes in
            let sent = tls.write(bytes, to: flow.socket)
            if sent.blocked || sent.taken < bytes.count { blocked = true }
            return sent.taken
        }
        return !blocked
    }

    /// HTTP/1.1 request bytes for an h2 origin: how many the session took,
    /// and whether the socket is full. A request it cannot send fails.
    func writeH2(_ flow: TCPFlow, _ bytes: UnsafeRawBufferPointer) -> (taken: Int, blocked: Bool, failure: String?) {
        guard flushH2(flow) else { return (0, true, nil) }
        let taken: Int
        do { taken = try flow.h2!.send(bytes) } catch {
            return (0, true, "HTTP/2 with \(flow.tls?.host ?? "the origin"): \(error.reason)")
        }
        return (taken, !flushH2(flow), nil)
    }

    /// The origin's decrypted bytes into the h2 session, and its HTTP/1.1
    /// response bytes (at most `room`) into `scratch`: their count, or the
    /// failure the origin's frames make.
    func readH2(_ flow: TCPFlow, received: Int, room: Int, session: HTTPSession) -> Result<Int, HTTP2ConnectionError> {
        if received > 0 {
            do { try flow.h2!.receive(Array(UnsafeRawBufferPointer(scratch.sub(0, received)))) } catch {
                return .failure(error)
            }
            // GOAWAY: the requests it covers finish; the next goes on a new connection.
            if flow.h2!.goneAway { session.upstreamSpent = true }
            _ = flushH2(flow)
        }
        let bytes = flow.h2!.takeResponseBytes(maximum: room)
        bytes.withUnsafeBytes { scratch.sub(0, bytes.count).copyMemory(from: $0) }
        // Taking gave windows back.
        _ = flushH2(flow)
        return .success(bytes.count)
    }

    /// The h2 session has the app's next turn: response bytes, or a failed stream.
    func h2HasTurn(_ flow: TCPFlow) -> Bool {
        guard let h2 = flow.h2 else { return false }
        return h2.hasResponseBytes || h2.oldestStreamFailed
    }

    /// Failed streams whose turn has come end alone: the origin reset them
    /// (a 502, RST_STREAM REFUSED_STREAM when it refused one, or its own
    /// code when part of a response had gone), or Sluice cancelled them. One
    /// the origin left unprocessed goes again with those after it
    /// (`resendUnprocessed`), on a new connection: then true, and `flow` is
    /// gone (also when the turn let a waiting request open another).
    func takeH2Failures(_ flow: TCPFlow, session: HTTPSession, sink: inout TunSink) -> Bool {
        guard flow.h2 != nil, let connection = tcp.connection(flow.key) else { return false }
        // Bounded by the streams open.
        while let failure = flow.h2!.takeFailedStream() {
            if failure.unprocessed {
                resendUnprocessed(flow, session: session, reason: failure.reason, sink: &sink)
                return true
            }
            guard let index = session.inFlight.firstIndex(where: { $0.localAnswer == nil }) else { continue }
            trace("\(flow.key): \(session.inFlight[index].url): \(failure.reason)")
            io.statistics.upstreamErrors += 1
            session.responses.skipResponse()
            session.heldResponse = nil
            failStream(session, at: index, reason: failure.reason, kind: failure.code == .cancel ? .reset : .protocolError,
                       unanswered: failure.code == .refusedStream ? .reset(.refusedStream) : nil,
                       resetCode: failure.code == .noError ? .internalError : failure.code)
            deliverLocalAnswers(session, connection: connection)
            // Its turn let a waiting request go, on a new connection if it went elsewhere.
            if tcpFlows[flow.key] !== flow { return true }
        }
        return false
    }

    /// The origin went away (GOAWAY) without processing the oldest request
    /// waiting on it, and so none after it (RFC 9113 §6.8): each goes again,
    /// in its place, on a new connection (§8.7: safe, as nothing was done).
    /// Only requests without a body can (HTTP mode keeps only their heads),
    /// and only once: the others' streams get REFUSED_STREAM, which tells
    /// the app the same.
    func resendUnprocessed(_ flow: TCPFlow, session: HTTPSession, reason: String, sink: inout TunSink) {
        sendUnansweredAgain(flow, session: session, reason: reason, otherwise: .reset(.refusedStream), kind: .reset, sink: &sink) { exchange in
            exchange.resends == 0
        }
    }
}
