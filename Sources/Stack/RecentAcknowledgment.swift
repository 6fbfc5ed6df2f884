import Wire

/// RACK's state (RFC 8985 §6.1): the most recently *sent* segment that the
/// peer has delivered, and how long deliveries take. A segment sent before
/// that one and still not delivered after one round trip and a reordering
/// window is lost (`TCPConnection+LossDetection.swift`).
///
/// Times are nanoseconds of the engine's clock: the peer of a TUN answers in
/// tens of microseconds, far below the millisecond of TCP timestamps.
struct RecentAcknowledgment: Sendable, Equatable {
    /// The most recently sent delivered segment's place in the order of
    /// transmissions (`SentSegments.Record.order`): RACK.xmit_ts with
    /// RACK.end_seq's tie-break, exact where one `output` sends many segments
    /// at the same instant. Nil before the first delivery.
    var order: UInt64?
    /// RACK.rtt: the round trip of that segment.
    var roundTrip: Int64 = 0
    /// RACK.min_RTT, from segments sent once.
    var minimumRoundTrip: Int64 = .max
    /// RACK.fack: the highest sequence delivered.
    var highestDelivered: SequenceNumber?
    /// RACK.reordering_seen: a segment sent once was delivered below one delivered before it.
    var reorderingSeen = false
    /// RACK.reo_wnd_mult: grows with each round trip that brought a D-SACK
    /// (our retransmission was spurious: the window was too short).
    var windowMultiplier = 1
    var lastMultiplierIncrease: Int64?
    var recoveriesSinceMultiplierIncrease = 0

    /// RFC 8985 §6.2 steps 2 and 3: one segment delivered at `now`.
    mutating func delivered(_ record: SentSegments.Record, now: Int64) {
        let rtt = now - record.sentAt
        // Step 2: an ACK sooner than the minimum round trip after a
        // retransmission acknowledges the original; it says nothing of when
        // the retransmission arrived.
        if record.retransmitted, minimumRoundTrip != .max, rtt < minimumRoundTrip { return }
        if !record.retransmitted { minimumRoundTrip = min(minimumRoundTrip, max(rtt, 0)) }
        if order.map({ $0 < record.order }) ?? true {
            order = record.order
            roundTrip = max(rtt, 0)
        }
        // Step 3.
        if let highest = highestDelivered, record.end < highest {
            if !record.retransmitted { reorderingSeen = true }
        } else {
            highestDelivered = record.end
        }
    }

    /// RFC 8985 §6.2 step 4: no window while recovering or once DupThresh
    /// segments were selectively acknowledged, as long as the path never
    /// reordered; otherwise a quarter of the minimum round trip, times the
    /// multiplier, at most a smoothed round trip.
    func reorderingWindow(inRecovery: Bool, selectivelyAcknowledged: Int, smoothedRoundTrip: Int64?) -> Int64 {
        if !reorderingSeen, inRecovery || selectivelyAcknowledged >= 3 { return 0 }
        guard minimumRoundTrip != .max else { return 0 }
        let bound = max(smoothedRoundTrip ?? 0, roundTrip)
        return min(minimumRoundTrip / 4 * Int64(windowMultiplier), bound)
    }

    /// RFC 8985 §6.2 step 4: a D-SACK grows the window, once per round trip, up to the bound.
    mutating func sawDuplicateSelectiveAcknowledgment(now: Int64) {
        if let last = lastMultiplierIncrease, now - last <= roundTrip { return }
        lastMultiplierIncrease = now
        windowMultiplier = min(windowMultiplier + 1, 64)
        recoveriesSinceMultiplierIncrease = 0
    }

    /// After 16 recoveries without a D-SACK the window shrinks back (RFC 8985 §6.2 step 4).
    mutating func recoveryEnded() {
        recoveriesSinceMultiplierIncrease += 1
        if recoveriesSinceMultiplierIncrease >= 16 {
            windowMultiplier = 1
            recoveriesSinceMultiplierIncrease = 0
        }
    }
}
