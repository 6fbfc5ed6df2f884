public import Wire

/// Which window growth and reduction a connection uses.
public enum CongestionAlgorithm: Sendable, Equatable {
    /// RFC 5681: halve at a congestion event, one segment per window after.
    case newReno
    /// RFC 9438, Linux's default: fall to 0.7, grow as a cubic function of time.
    case cubic
}

/// Congestion control: slow start from RFC 5681 §3.1, fast retransmit and
/// fast recovery from RFC 5681 §3.2 with the NewReno partial-ACK rule of
/// RFC 6582 §3.2, and an initial window of ten segments (RFC 6928); the
/// reduction at a congestion event and the growth in congestion avoidance
/// are NewReno's (RFC 5681) or CUBIC's (RFC 9438, `CubicGrowth`). The
/// first slow start may end before any loss, when the round trip starts to
/// grow (HyStart++, RFC 9406, `HyStart`). A congestion event found spurious
/// is undone (RFC 9438 §4.9, `undoReduction`; TCPConnection+Undo.swift).
///
/// It only counts; the connection asks it how much may be in flight, tells it
/// what the ACKs said, and performs the retransmission it returns.
public struct CongestionControl: Sendable, Equatable {
    public let maximumSegmentSize: Int
    public let algorithm: CongestionAlgorithm
    public private(set) var congestionWindow: Int
    public private(set) var slowStartThreshold: Int = .max
    public private(set) var duplicateAcks = 0
    /// Set while in fast recovery: the highest sequence sent when loss was
    /// detected (RFC 6582 "recover").
    public private(set) var recoveryPoint: SequenceNumber?
    /// Bytes acknowledged in congestion avoidance not yet turned into window (RFC 5681 §3.1, appropriate byte counting).
    private var bytesAckedInAvoidance = 0
    private var cubic = CubicGrowth()
    /// Watches the first slow start's round trips (its phase `.done` when it
    /// ended that slow start); nil after a loss or a timeout, or when turned
    /// off: later slow starts run to ssthresh (RFC 9406 §4.3).
    public private(set) var hyStart: HyStart?
    /// What the last congestion event changed, for `undoReduction` when the
    /// event proves spurious (RFC 9438 §4.9); nil once undone.
    private var beforeReduction: Snapshot?

    /// The state a congestion event reduces: the windows, CUBIC's plateau
    /// and epoch, and HyStart++ (which a loss ends).
    private struct Snapshot: Sendable, Equatable {
        var congestionWindow: Int
        var slowStartThreshold: Int
        var cubic: CubicGrowth
        var hyStart: HyStart?
    }

    public enum Action: Equatable, Sendable {
        case none
        /// Retransmit the first unacknowledged segment now.
        case retransmitFirstUnacknowledged
    }

    /// With SACK, loss recovery follows RFC 6675: the window is not inflated
    /// by duplicate ACKs or deflated by partial ones, because the sender
    /// counts what is in the network (the "pipe") from the scoreboard instead.
    public var selectiveAcknowledgments = false

    public init(maximumSegmentSize: Int, algorithm: CongestionAlgorithm = .cubic, hyStart: Bool = true) {
        precondition(maximumSegmentSize > 0)
        self.maximumSegmentSize = maximumSegmentSize
        self.algorithm = algorithm
        self.hyStart = hyStart ? HyStart() : nil
        congestionWindow = min(10 * maximumSegmentSize, max(2 * maximumSegmentSize, 14600))
    }

    public var inFastRecovery: Bool { recoveryPoint != nil }

    /// An ACK that acknowledged `acked` new bytes. `highestAcked` is the new
    /// SND.UNA, `flightSize` what was outstanding before this ACK. CUBIC's
    /// growth reads the clock and the smoothed round trip; HyStart++ reads
    /// SND.NXT (`highestSent`, its rounds) and this ACK's round-trip sample,
    /// and stays out without the first. `windowLimited` says whether the
    /// window limited the sender lately (`CongestionWindowUsage`): an ACK
    /// of an app that does not use the window does not grow it.
    public mutating func onNewAck(acked: Int, highestAcked: SequenceNumber, flightSize: Int, now: Instant,
                                  smoothedRoundTripNanoseconds: Int64? = nil,
                                  highestSent: SequenceNumber? = nil, roundTripSampleNanoseconds: Int64? = nil,
                                  windowLimited: Bool = true) -> Action {
        duplicateAcks = 0
        let smss = maximumSegmentSize
        if let recover = recoveryPoint {
            if highestAcked >= recover {
                // RFC 6582 §3.2 step 3, full acknowledgment: deflate the window and leave recovery.
                congestionWindow = min(slowStartThreshold, max(flightSize - acked, smss) + smss)
                recoveryPoint = nil
                return .none
            }
            if selectiveAcknowledgments { return .none } // RFC 6675: the scoreboard picks what to resend
            // Partial acknowledgment: retransmit the next hole, deflate by what
            // was acked, add back one segment (RFC 6582 §3.2 step 3, partial).
            congestionWindow = max(congestionWindow - acked + smss, smss)
            return .retransmitFirstUnacknowledged
        }
        if congestionWindow < slowStartThreshold {
            // Slow start: grow by at most one SMSS per ACK (RFC 5681 eq. 2).
            var growth = min(acked, smss)
            // (A HyStart++ that is `.done` set ssthresh to the window: slow start is not reached again.)
            if let highestSent, hyStart != nil {
                switch hyStart!.onAck(acknowledgment: highestAcked, highestSent: highestSent, roundTripNanoseconds: roundTripSampleNanoseconds) {
                case .slowStart:
                    break
                case .conservative:
                    growth /= HyStart.conservativeGrowthDivisor
                case .stop:
                    // RFC 9406 §4.2: CSS's rounds are over; congestion avoidance from this window.
                    slowStartThreshold = congestionWindow
                    growth = 0
                }
            }
            // RFC 7661: a window the app does not use is not grown (its rounds still count for HyStart++).
            if !windowLimited { growth = 0 }
            congestionWindow += growth
        } else if !windowLimited {
            // RFC 9438 §5.8: nor in congestion avoidance; the cubic function
            // starts again from this window when the app uses it, not from
            // where the time since the last epoch would have taken it.
            cubic.restartEpoch()
        } else if algorithm == .cubic {
            // Congestion avoidance, RFC 9438 §4.2–4.5.
            congestionWindow = cubic.grow(congestionWindow: congestionWindow, acked: acked, segmentSize: smss, now: now,
                                          smoothedRoundTripNanoseconds: smoothedRoundTripNanoseconds)
        } else {
            // Congestion avoidance: one SMSS per window of acknowledged data (RFC 5681 §3.1).
            bytesAckedInAvoidance += acked
            if bytesAckedInAvoidance >= congestionWindow {
                bytesAckedInAvoidance -= congestionWindow
                congestionWindow += smss
            }
        }
        return .none
    }

    /// A duplicate ACK (RFC 5681 §2 definition, checked by the caller).
    public mutating func onDuplicateAck(flightSize: Int, highestSent: SequenceNumber) -> Action {
        let smss = maximumSegmentSize
        if inFastRecovery {
            // RFC 5681 §3.2 step 4: inflate for each segment that left the network.
            if !selectiveAcknowledgments { congestionWindow += smss }
            return .none
        }
        duplicateAcks += 1
        guard duplicateAcks == 3 else { return .none }
        enterRecovery(flightSize: flightSize, highestSent: highestSent)
        return .retransmitFirstUnacknowledged
    }

    /// Loss detected (three duplicate ACKs, or RFC 6675's IsLost(SND.UNA)):
    /// RFC 5681 §3.2 steps 2 and 3, RFC 6675 §5 step 4.2; RFC 6582 records
    /// where recovery ends. CUBIC keeps 0.7 of the flight instead of half (RFC 9438 §4.6).
    public mutating func enterRecovery(flightSize: Int, highestSent: SequenceNumber) {
        let smss = maximumSegmentSize
        beforeReduction = snapshot
        slowStartThreshold = max(reducedWindow(flightSize: flightSize, repeatedTimeout: false), 2 * smss)
        congestionWindow = selectiveAcknowledgments ? slowStartThreshold : slowStartThreshold + 3 * smss
        recoveryPoint = highestSent
        bytesAckedInAvoidance = 0
        hyStart = nil // RFC 9406 §4.2: a loss in slow start or CSS ends them
    }

    /// The retransmission timer expired (RFC 5681 §3.1 eq. 4 and the loss
    /// window; RFC 9438 §4.8: CUBIC sets ssthresh with its own β). True when
    /// it is a congestion event of its own; false for one that repeats the
    /// timeout before it with nothing acknowledged between (an undo then
    /// restores what came before that one).
    @discardableResult
    public mutating func onTimeout(flightSize: Int) -> Bool {
        // Still the loss window: nothing was acknowledged since the last timeout.
        let repeated = congestionWindow <= maximumSegmentSize
        let newEvent = !repeated || beforeReduction == nil
        if newEvent { beforeReduction = snapshot }
        slowStartThreshold = max(reducedWindow(flightSize: flightSize, repeatedTimeout: repeated), 2 * maximumSegmentSize)
        congestionWindow = maximumSegmentSize
        recoveryPoint = nil
        duplicateAcks = 0
        bytesAckedInAvoidance = 0
        hyStart = nil
        return newEvent
    }

    /// What a congestion event is about to reduce.
    private var snapshot: Snapshot {
        Snapshot(congestionWindow: congestionWindow, slowStartThreshold: slowStartThreshold, cubic: cubic, hyStart: hyStart)
    }

    /// The last congestion event was spurious (every segment it made the
    /// sender retransmit reached the receiver twice, as D-SACKs said): RFC
    /// 9438 §4.9 restores what it reduced (cwnd_prior, ssthresh_prior, W_max
    /// and the epoch), as Linux's undo does, and leaves recovery. Neither
    /// window falls: what grew since stays. False when there is nothing to
    /// undo (no event, or it was undone already).
    public mutating func undoReduction() -> Bool {
        guard let before = beforeReduction else { return false }
        beforeReduction = nil
        congestionWindow = max(congestionWindow, before.congestionWindow)
        slowStartThreshold = max(slowStartThreshold, before.slowStartThreshold)
        cubic = before.cubic
        if hyStart == nil { hyStart = before.hyStart }
        recoveryPoint = nil
        duplicateAcks = 0
        bytesAckedInAvoidance = 0
        return true
    }

    /// ssthresh after a congestion event, before its floor of two segments.
    private mutating func reducedWindow(flightSize: Int, repeatedTimeout: Bool) -> Int {
        switch algorithm {
        case .newReno: flightSize / 2 // RFC 5681 §3.1 eq. 4
        case .cubic: cubic.reduce(congestionWindow: congestionWindow, flightSize: flightSize, samePlateau: repeatedTimeout) // RFC 9438 §4.6
        }
    }
}
