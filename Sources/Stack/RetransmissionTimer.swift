/// The retransmission timeout, computed as RFC 6298 says, with one deliberate
/// deviation documented in docs/tcp.md: the floor is 200 ms (Linux's
/// TCP_RTO_MIN), not RFC 6298's 1 s (§2.4), because the peer is an app on the
/// same host, where a second-long stall after one lost segment would be absurd.
public struct RetransmissionTimer: Sendable, Equatable {
    public static let initial: Duration = .seconds(1)       // RFC 6298 §2.1
    public static let minimum: Duration = .milliseconds(200)
    public static let maximum: Duration = .seconds(60)      // RFC 6298 §2.5 allows a cap of at least 60 s
    /// Clock granularity G (RFC 6298 §2): the engine's timers are 1 ms.
    public static let granularity: Duration = .milliseconds(1)

    public private(set) var smoothedRTT: Duration?
    public private(set) var rttVariance: Duration = .zero
    /// The timeout before backoff.
    public private(set) var baseTimeout: Duration = RetransmissionTimer.initial
    /// How many times the timer has expired for the same data (exponential backoff, §5.5).
    public private(set) var backoff = 0

    public init() {}

    /// The timeout to arm now: the base doubled once per expiry, capped.
    public var timeout: Duration {
        var t = baseTimeout
        for _ in 0 ..< min(backoff, 16) {
            t = t * 2
            if t >= Self.maximum { return Self.maximum }
        }
        return t
    }

    /// Takes one RTT measurement (never of a retransmitted segment unless
    /// timestamps disambiguate it: Karn's rule, §3).
    public mutating func sample(_ rtt: Duration) {
        let r = max(rtt, .zero)
        if let srtt = smoothedRTT {
            // §2.3: RTTVAR ← 3/4·RTTVAR + 1/4·|SRTT − R'|, then SRTT ← 7/8·SRTT + 1/8·R'.
            let delta = srtt > r ? srtt - r : r - srtt
            rttVariance = rttVariance * 3 / 4 + delta / 4
            smoothedRTT = srtt * 7 / 8 + r / 8
        } else {
            // §2.2: the first measurement.
            smoothedRTT = r
            rttVariance = r / 2
        }
        let candidate = smoothedRTT! + max(Self.granularity, rttVariance * 4)
        baseTimeout = min(max(candidate, Self.minimum), Self.maximum)
        // §5.7: a new measurement after backoff ends the backoff.
        backoff = 0
    }

    /// The timer expired: back off (§5.5).
    public mutating func expired() { backoff += 1 }

    /// New data was acknowledged without a measurement: §5.7 lets the backoff stop.
    public mutating func acknowledged() { backoff = 0 }
}
