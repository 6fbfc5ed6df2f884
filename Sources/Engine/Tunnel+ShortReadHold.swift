internal import Stack
internal import Sys

/// The loop's side of `ShortReadHold`: a held flow's bytes sit in its send
/// ring unsent until more come (`readUpstream` and `readHTTPUpstream` end
/// the hold, as does an ACK the app is owed: `keepsHold`) or its window
/// passes (`flushHeld`, asked after every batch of events and before every
/// sleep, so nothing is held through a sleep).
extension Tunnel {
    func hold(_ flow: TCPFlow) {
        flow.heldAt = heldFlows.count
        heldFlows.append(flow)
        heldDeadline = min(heldDeadline, MonotonicClock.now() &+ ShortReadHold.window)
    }

    /// Ends `flow`'s hold without sending: the caller sends what it owes.
    /// The last held flow takes its place: no search, however many are held.
    func releaseHold(_ flow: TCPFlow) {
        guard let i = flow.heldAt else { return }
        flow.heldAt = nil
        let last = heldFlows.removeLast()
        if i < heldFlows.count {
            heldFlows[i] = last
            last.heldAt = i
        }
        if heldFlows.isEmpty { heldDeadline = .max }
    }

    /// Whether a held flow's pump leaves its bytes unsent: only while the
    /// app is owed nothing else. An ACK its bytes earned goes at once (the
    /// anchors' rule: ACKs go out as soon as the engine has drained the
    /// data), the hold ends, and the held bytes ride on that ACK.
    func keepsHold(_ flow: TCPFlow, _ connection: TCPConnection) -> Bool {
        guard flow.held else { return false }
        if connection.acknowledgmentDue {
            releaseHold(flow)
            return false
        }
        return true
    }

    /// Something came after a held read: the hold ends. Bytes go to the app
    /// with what was held (the caller flushes); before an end or an error
    /// (`sendingNow`), what was held goes first, as it would have without
    /// the hold. Returns whether the flow was held.
    func endHold(_ flow: TCPFlow, sendingNow: Bool, sink: inout TunSink) -> Bool {
        guard flow.held else { return false }
        releaseHold(flow)
        if sendingNow { tcp.flush(flow.key, now: now, sink: &sink) }
        return true
    }

    /// Sends what held flows owe once the first window has passed (or at
    /// once, with `force`). All go together: the deadline is the earliest's,
    /// and a later one's few microseconds are not worth another pass.
    func flushHeld(force: Bool) {
        guard !heldFlows.isEmpty, force || MonotonicClock.now() >= heldDeadline else { return }
        var sink = TunSink(io: io)
        let time = now
        for flow in heldFlows {
            flow.heldAt = nil
            flow.shortReads.expired()
            // A flow closed or replaced while held has nothing to send here.
            guard tcpFlows[flow.key] === flow, let connection = tcp.connection(flow.key) else { continue }
            tcp.flush(flow.key, connection: connection, now: time, sink: &sink)
        }
        heldFlows.removeAll(keepingCapacity: true)
        heldDeadline = .max
    }
}
