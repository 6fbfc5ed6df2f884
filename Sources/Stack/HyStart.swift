public import Wire

/// HyStart++ (RFC 9406): the first slow start ends when the round trip starts
/// to grow, before a queue on the path overflows, instead of at the first loss.
///
/// Slow start doubles the window every round trip until something is lost.
/// On a path with a bottleneck queue (`--faults rate=`, a real slow link) the
/// queue fills first: the minimum round trip of a round rises above the last
/// round's. HyStart++ watches that minimum, one round at a time; when it has
/// risen by `threshold(lastRound:)` the window grows four times slower for a
/// while (Conservative Slow Start, CSS), in case the rise was noise; after
/// five such rounds slow start ends where the window is, with nothing lost.
/// A round whose minimum falls back below the one that started CSS resumes
/// slow start.
///
/// Only the connection's first slow start uses it (§4.3: ssthresh is still
/// infinite there); after a loss or a timeout slow start runs to ssthresh as
/// RFC 5681 says. It only reads round trips and sequence numbers:
/// `CongestionControl` asks it how to grow and when to stop.
public struct HyStart: Sendable, Equatable {
    /// §4.3's constants.
    static let minimumThresholdNanoseconds: Int64 = 4_000_000
    static let maximumThresholdNanoseconds: Int64 = 16_000_000
    static let thresholdDivisor: Int64 = 8
    static let samplesPerRound = 8
    static let conservativeGrowthDivisor = 4
    static let conservativeRounds = 5

    public enum Phase: Sendable, Equatable {
        /// Standard slow start, watching each round's minimum round trip.
        case slowStart
        /// CSS (§4.2): growth divided by four; `baseline` is the round minimum that started it.
        case conservative(baselineNanoseconds: Int64, roundsDone: Int)
        /// CSS ran its rounds: slow start is over, with ssthresh at the window.
        case done
    }

    public private(set) var phase = Phase.slowStart
    private var rounds = RoundTracker()
    private var lastRoundMinimum = Int64.max
    private var currentRoundMinimum = Int64.max
    private var samplesThisRound = 0

    public init() {}

    public enum Growth: Sendable, Equatable {
        /// Standard slow start: the ACK's growth as RFC 5681 gives it.
        case slowStart
        /// CSS: a quarter of that (§4.2, CSS_GROWTH_DIVISOR).
        case conservative
        /// CSS's rounds are over: ssthresh becomes the window (§4.2).
        case stop
    }

    /// The delay rise that ends standard slow start after a round whose
    /// minimum was `lastRound`: an eighth of it, within 4 and 16 ms (§4.2).
    static func threshold(lastRound: Int64) -> Int64 {
        max(minimumThresholdNanoseconds, min(lastRound / thresholdDivisor, maximumThresholdNanoseconds))
    }

    /// One ACK that acknowledged new data up to `acknowledgment`, while
    /// `highestSent` is SND.NXT, with its round-trip sample if it gave one.
    /// Returns how the window grows for this ACK.
    public mutating func onAck(acknowledgment: SequenceNumber, highestSent: SequenceNumber,
                               roundTripNanoseconds: Int64?) -> Growth {
        if rounds.beginsRound(acknowledgment: acknowledgment, highestSent: highestSent) {
            lastRoundMinimum = currentRoundMinimum
            currentRoundMinimum = .max
            samplesThisRound = 0
            if case let .conservative(baseline, roundsDone) = phase {
                phase = roundsDone + 1 >= Self.conservativeRounds ? .done : .conservative(baselineNanoseconds: baseline, roundsDone: roundsDone + 1)
            }
        }
        if let sample = roundTripNanoseconds, sample >= 0 {
            currentRoundMinimum = min(currentRoundMinimum, sample)
            samplesThisRound += 1
        }
        let enoughSamples = samplesThisRound >= Self.samplesPerRound
        switch phase {
        case .slowStart:
            if enoughSamples, lastRoundMinimum != .max, currentRoundMinimum != .max,
               currentRoundMinimum >= lastRoundMinimum + Self.threshold(lastRound: lastRoundMinimum) {
                // §4.2: the round trip grew: a queue is filling. CSS starts with this ACK.
                phase = .conservative(baselineNanoseconds: currentRoundMinimum, roundsDone: 0)
                return .conservative
            }
            return .slowStart
        case let .conservative(baseline, _):
            if enoughSamples, currentRoundMinimum < baseline {
                // §4.2: the rise was noise (the minimum fell below the one that started CSS).
                phase = .slowStart
                return .slowStart
            }
            return .conservative
        case .done:
            return .stop
        }
    }
}
