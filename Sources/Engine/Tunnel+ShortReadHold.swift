internal import Stack
internal import Sys

/// The loop's side of `ShortReadHold`: a held flow's bytes sit in its send
/// ring unsent until more come (`holdsRead`), the upstream ends or fails
/// (`sendHeld`), an ACK is owed to the app (`keepsHold`), or its window
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

    /// After a read that brought `count` bytes: a hold it joins ends (the
    /// caller sends both together), or else the read itself may be held
    /// (`eligible`, and `ShortReadHold.shouldHold`). Returns true when it
    /// is: the caller leaves its bytes unsent.
    func holdsRead(_ flow: TCPFlow, count: Int, socketEmptied: Bool, eligible: Bool = true) -> Bool {
        if flow.held {
            // A read that brought nothing (an empty record) leaves the hold as it was.
            if count == 0 { return true }
            releaseHold(flow)
            flow.shortReads.joined()
            return false
        }
        guard eligible, flow.shortReads.shouldHold(count: count, socketEmptied: socketEmptied,
                                                   mayPoll: configuration.busyPollMicroseconds > 0) else { return false }
        hold(flow)
        return true
    }

    /// The upstream ended or failed: what a hold kept goes first, as it
    /// would have without the hold, before the end, the error or the reset.
    func sendHeld(_ flow: TCPFlow, sink: inout TunSink) {
        guard flow.held else { return }
        releaseHold(flow)
        tcp.flush(flow.key, now: now, sink: &sink)
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
            // A flow closed while held has no connection left; one replaced while
            // held (a request sent again) still owes the app's connection its bytes.
            guard let connection = tcp.connection(flow.key) else { continue }
            tcp.flush(flow.key, connection: connection, now: time, sink: &sink)
        }
        heldFlows.removeAll(keepingCapacity: true)
        heldDeadline = .max
    }
}
