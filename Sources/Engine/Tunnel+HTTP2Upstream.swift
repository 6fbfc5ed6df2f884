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
}
