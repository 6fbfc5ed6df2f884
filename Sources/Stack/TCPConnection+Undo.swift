import Wire

/// Undoing a congestion event that was not one (RFC 9438 §4.9). A segment
/// that a reordering path delays past RACK's window, or an ACK that a
/// timeout did not wait for, makes the sender retransmit data the receiver
/// already has, and cut its window for a loss that never happened. The
/// receiver says so: it reports each copy it got twice in a D-SACK block
/// (RFC 2883). When every segment retransmitted since the event is reported
/// that way, nothing was lost, and `CongestionControl.undoReduction`
/// restores the window, ssthresh and CUBIC's state from before it. The
/// counting is Linux's (`undo_marker`, `undo_retrans`: a D-SACK block
/// counts its segments, and a new event starts the count afresh; a timeout
/// that repeats the one before continues it). Linux also finds a spurious
/// timeout from timestamps (RFC 3522); this does not.
///
/// Only with SACK: without it no D-SACK comes. docs/tcp.md, "Undoing a
/// spurious congestion event", says more.
extension TCPConnection {
    /// A congestion event reduced the window (`CongestionControl` kept what
    /// it reduced): its retransmissions are counted from here. A timeout
    /// that repeats the one before is no new event: the count goes on.
    func beginUndoEpisode() {
        guard sackPermitted, configuration.undoSpuriousCongestionEvents else { return }
        undoMarker = sendUnacknowledged
        undoRetransmissions = 0
    }

    /// One segment went out again.
    func noteRetransmissionForUndo() {
        if undoMarker != nil { undoRetransmissions += 1 }
    }

    /// A D-SACK block: the receiver got [left, right) twice. Each segment it
    /// covers is one retransmission that was not needed. When none of the
    /// event's retransmissions is left unreported, and none of the segments
    /// it declared lost still waits to be resent (its retransmission could
    /// still prove a loss), the event is undone.
    func noteDuplicateSelectiveAcknowledgment(left: SequenceNumber, right: SequenceNumber) {
        guard let marker = undoMarker, undoRetransmissions > 0, marker <= left else { return }
        let segments = max(1, (right - left + sendMaximumSegmentSize - 1) / sendMaximumSegmentSize)
        undoRetransmissions = max(0, undoRetransmissions - segments)
        guard undoRetransmissions == 0, sentSegments.lostBytes == 0 else { return }
        let wasRecovering = congestion.inFastRecovery
        guard congestion.undoReduction() else { return }
        undoMarker = nil
        counters.congestionEventsUndone += 1
        if wasRecovering {
            rack.recoveryEnded()
            retransmissionOwed = false
        }
    }
}
