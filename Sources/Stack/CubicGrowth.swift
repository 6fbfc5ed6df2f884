/// CUBIC's part of congestion control (RFC 9438): how far the window falls
/// at a congestion event (β_cubic = 0.7 instead of Reno's 0.5, §4.6, with
/// fast convergence, §4.7) and how it grows in congestion avoidance, as a
/// cubic function of the time since the last reduction (§4.2) that is never
/// slower than Reno's estimate (§4.3) and moves towards the function's value
/// one round trip ahead, at most 1.5 times the window (§4.4, §4.5).
///
/// Windows are bytes (the RFC counts segments: C is scaled by the SMSS);
/// time is the connection's clock, passed in. `CongestionControl` keeps
/// slow start and loss recovery; this only decides the two numbers that
/// differ from NewReno.
struct CubicGrowth: Sendable, Equatable {
    /// β_cubic (RFC 9438 §4.6).
    static let beta = 0.7
    /// C, in segments per second cubed (§5).
    static let c = 0.4
    /// α_cubic, Reno's additive increase for the same average rate given β (§4.3).
    static let renoAlpha = 3 * (1 - beta) / (1 + beta)

    /// W_max: the window the cubic function plateaus at (bytes).
    private(set) var plateau = 0.0
    /// cwnd_prior: the window just before the last reduction; once Reno's
    /// estimate passes it, the estimate grows by one segment per window (§4.3).
    private var priorWindow = 0.0
    /// t_epoch: when the current congestion avoidance stage began; nil until
    /// its first ACK (a reduction or a timeout ends the stage).
    private(set) var epochStart: Instant?
    /// K, in seconds: when the function reaches W_max (§4.2, eq. 2).
    private(set) var secondsToPlateau = 0.0
    /// W_est, Reno's window had it been in charge since the epoch (bytes).
    private(set) var renoEstimate = 0.0
    /// The window with its fraction: growth per ACK is often under a byte.
    private var window = 0.0

    /// A congestion event with `congestionWindow` in use and `flightSize`
    /// outstanding: records W_max and returns the new ssthresh before any
    /// floor (§4.6: flight size times β, as RFC 5681 uses flight size).
    /// `samePlateau` is for a timeout that repeats one before it with nothing
    /// acknowledged between: the window is the loss window then, not a
    /// measure of the path, and W_max stays (as Linux keeps its ssthresh).
    mutating func reduce(congestionWindow: Int, flightSize: Int, samePlateau: Bool = false) -> Int {
        epochStart = nil
        if samePlateau { return Int(Double(flightSize) * Self.beta) }
        let current = Double(congestionWindow)
        // §4.7 fast convergence: a window that fell short of the last W_max
        // means a new flow is competing; plateau lower to leave it room.
        plateau = current < plateau ? current * (1 + Self.beta) / 2 : current
        priorWindow = current
        return Int(Double(flightSize) * Self.beta)
    }

    /// The app left the window unused: the next growth starts a new epoch from the window then.
    mutating func restartEpoch() { epochStart = nil }

    /// One ACK of `acked` new bytes in congestion avoidance. Returns the new
    /// congestion window (bytes, never below the current one).
    mutating func grow(congestionWindow: Int, acked: Int, segmentSize: Int, now: Instant,
                       smoothedRoundTripNanoseconds: Int64?) -> Int {
        let smss = Double(segmentSize)
        // A window set outside this stage (recovery's end, slow start) starts a new epoch from it.
        if epochStart == nil || Int(window) != congestionWindow {
            epochStart = now
            window = Double(congestionWindow)
            renoEstimate = window
            if plateau <= window {
                // Past the last W_max (or none yet): the function starts at its inflection point (§4.2).
                plateau = window
                secondsToPlateau = 0
            } else {
                secondsToPlateau = Self.cubeRoot((plateau - window) / (Self.c * smss))
            }
        }
        let elapsed = Double(max(0, now.nanoseconds &- (epochStart ?? now).nanoseconds)) / 1e9
        let roundTrip = Double(max(0, smoothedRoundTripNanoseconds ?? 0)) / 1e9
        // §4.3: Reno's estimate, α_cubic per window until it passes cwnd_prior, then one segment.
        let alpha = renoEstimate >= priorWindow ? 1.0 : Self.renoAlpha
        renoEstimate += alpha * Double(acked) * smss / window
        if cubicWindow(elapsed, segmentSize: smss) < renoEstimate {
            // The Reno-friendly region (§4.3). The window, aimed at W_cubic one
            // round trip ahead, may already be past the estimate: it stays.
            window = max(window, renoEstimate)
        } else {
            // §4.4, §4.5: towards W_cubic(t + RTT), bounded to [cwnd, 1.5·cwnd].
            let target = min(max(cubicWindow(elapsed + roundTrip, segmentSize: smss), window), 1.5 * window)
            window += (target - window) * Double(acked) / window
        }
        return max(congestionWindow, Int(window))
    }

    /// W_cubic(t) = C·(t − K)³ + W_max (§4.2, eq. 1), in bytes.
    func cubicWindow(_ seconds: Double, segmentSize: Double) -> Double {
        let offset = seconds - secondsToPlateau
        return Self.c * segmentSize * offset * offset * offset + plateau
    }

    /// The real cube root of a non-negative number, by Newton's method from
    /// a power of two within a factor of two of it (the stack has no libm).
    static func cubeRoot(_ value: Double) -> Double {
        guard value > 0, value.isFinite else { return 0 }
        var root = Double(sign: .plus, exponent: value.exponent / 3, significand: 1)
        for _ in 0 ..< 60 {
            let next = (2 * root + value / (root * root)) / 3
            if abs(next - root) <= root * 1e-12 { return next }
            root = next
        }
        return root
    }
}
