public import Wire

/// Whether the congestion window is what limits the sender (RFC 7661's
/// question; answered as Linux answers it): only then may an ACK grow it.
///
/// An app that asks for a kilobyte at a time never fills the window, yet
/// every ACK of those kilobytes used to grow it: after a few hundred
/// requests on a kept-alive connection the window was hundreds of segments
/// that had never been tried, and the first large response left in one
/// burst at that size, into whatever queue the path has (through a 4 Mbit/s
/// `--faults rate=` link, 86 of its packets overflowed the queue). Measured
/// per round (`RoundTracker`): the largest flight, and whether the window
/// held back data that waited.
public struct CongestionWindowUsage: Sendable, Equatable {
    /// The most in flight (bytes) since the round began.
    public private(set) var largestFlight = 0
    /// Data waited because the congestion window had no room for it this round.
    public private(set) var heldBack = false
    private var rounds = RoundTracker()

    public init() {}

    /// After sending: what is in flight, and whether the window held back data.
    public mutating func sent(flight: Int, heldBack held: Bool) {
        largestFlight = max(largestFlight, flight)
        if held { heldBack = true }
    }

    /// Whether an ACK now may grow the window. In slow start, while the
    /// window is under twice the largest flight (slow start doubles what is
    /// used, not what is allowed); after it, while the window held data
    /// back or the flight filled it to within a segment.
    public func limits(congestionWindow: Int, inSlowStart: Bool, segmentSize: Int) -> Bool {
        if inSlowStart { return congestionWindow < 2 * largestFlight }
        return heldBack || largestFlight + segmentSize >= congestionWindow
    }

    /// An ACK of new data up to `acknowledgment`, with `highestSent` sent
    /// and `flight` still out: a round that ended starts the next one.
    public mutating func acknowledged(upTo acknowledgment: SequenceNumber, highestSent: SequenceNumber, flight: Int) {
        guard rounds.beginsRound(acknowledgment: acknowledgment, highestSent: highestSent) else { return }
        largestFlight = flight
        heldBack = false
    }
}
