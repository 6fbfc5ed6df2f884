public import Wire

/// Round trips counted in sequence numbers, as RFC 9406 §4.2 counts them: a
/// round ends once the byte at SND.NXT when it began is acknowledged, and
/// the ACK that does so begins the next one. HyStart++ judges a round's
/// round trips; `CongestionWindowUsage` a round's flight.
public struct RoundTracker: Sendable, Equatable {
    /// SND.NXT when the current round began; nil before the first ACK.
    private var end: SequenceNumber?

    public init() {}

    /// An ACK up to `acknowledgment` with `highestSent` sent: true when it
    /// begins a new round (the first ACK always does).
    public mutating func beginsRound(acknowledgment: SequenceNumber, highestSent: SequenceNumber) -> Bool {
        guard end.map({ acknowledgment > $0 }) ?? true else { return false }
        end = highestSent
        return true
    }
}
