/// The retransmission timeout, computed as RFC 6298 says, with one deliberate
/// deviation documented in docs/tcp.md: the floor is 200 ms (Linux's
/// TCP_RTO_MIN), not RFC 6298's 1 s (§2.4), because the peer is an app on the
/// same host, where a second-long stall after one lost segment would be absurd.
///
/// The arithmetic is on nanoseconds in Int64: it runs on every acknowledgment,
/// and Duration's 128-bit attoseconds cost several times more per operation.
/// The Duration properties are for readers and tests.
public struct RetransmissionTimer: Sendable, Equatable {
    public static let initial: Duration = .seconds(1)       // RFC 6298 §2.1
    public static let minimum: Duration = .milliseconds(200)
    public static let maximum: Duration = .seconds(60)      // RFC 6298 §2.5 allows a cap of at least 60 s
    /// Clock granularity G (RFC 6298 §2): the engine's timers are 1 ms.
    public static let granularity: Duration = .milliseconds(1)

    static let initialNanoseconds: Int64 = 1_000_000_000
    static let minimumNanoseconds: Int64 = 200_000_000
    static let maximumNanoseconds: Int64 = 60_000_000_000
    static let granularityNanoseconds: Int64 = 1_000_000

    /// SRTT in nanoseconds, nil before the first measurement.
    public private(set) var smoothedRTTNanoseconds: Int64?
    var rttVarianceNanoseconds: Int64 = 0
    var baseTimeoutNanoseconds: Int64 = RetransmissionTimer.initialNanoseconds
    /// How many times the timer has expired for the same data (exponential backoff, §5.5).
    public private(set) var backoff = 0
    /// The timeout to arm now: the base doubled once per expiry, capped.
    public private(set) var timeoutNanoseconds: Int64 = RetransmissionTimer.initialNanoseconds

    public init() {}

    public var smoothedRTT: Duration? { smoothedRTTNanoseconds.map { .nanoseconds($0) } }
    public var rttVariance: Duration { .nanoseconds(rttVarianceNanoseconds) }
    /// The timeout before backoff.
    public var baseTimeout: Duration { .nanoseconds(baseTimeoutNanoseconds) }
    public var timeout: Duration { .nanoseconds(timeoutNanoseconds) }

    /// Takes one RTT measurement (never of a retransmitted segment unless
    /// timestamps disambiguate it: Karn's rule, §3).
    public mutating func sample(_ rtt: Duration) { sample(nanoseconds: rtt.nanoseconds) }

    public mutating func sample(nanoseconds rtt: Int64) {
        let r = max(rtt, 0)
        if let srtt = smoothedRTTNanoseconds {
            // §2.3: RTTVAR ← 3/4·RTTVAR + 1/4·|SRTT − R'|, then SRTT ← 7/8·SRTT + 1/8·R'.
            let delta = srtt > r ? srtt - r : r - srtt
            rttVarianceNanoseconds = rttVarianceNanoseconds * 3 / 4 + delta / 4
            smoothedRTTNanoseconds = srtt * 7 / 8 + r / 8
        } else {
            // §2.2: the first measurement.
            smoothedRTTNanoseconds = r
            rttVarianceNanoseconds = r / 2
        }
        let candidate = smoothedRTTNanoseconds! + max(Self.granularityNanoseconds, rttVarianceNanoseconds * 4)
        baseTimeoutNanoseconds = min(max(candidate, Self.minimumNanoseconds), Self.maximumNanoseconds)
        // §5.7: a new measurement after backoff ends the backoff.
        backoff = 0
        timeoutNanoseconds = baseTimeoutNanoseconds
    }

    /// The timer expired: back off (§5.5).
    public mutating func expired() {
        backoff += 1
        var t = baseTimeoutNanoseconds
        for _ in 0 ..< min(backoff, 16) {
            t *= 2
            if t >= Self.maximumNanoseconds { t = Self.maximumNanoseconds; break }
        }
        timeoutNanoseconds = t
    }

    /// New data was acknowledged without a measurement: §5.7 lets the backoff stop.
    public mutating func acknowledged() {
        backoff = 0
        timeoutNanoseconds = baseTimeoutNanoseconds
    }
}
