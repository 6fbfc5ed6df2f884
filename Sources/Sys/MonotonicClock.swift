// MonotonicClock exists because the loop reads the time several times per
// packet: one vDSO clock_gettime, returned as plain Int64 nanoseconds, where
// ContinuousClock's Duration arithmetic costs 128-bit multiplications and
// divisions on every read.
import Glibc

public enum MonotonicClock {
    /// Nanoseconds on CLOCK_MONOTONIC (the clock timerfd counts on), from an
    /// unspecified origin: subtract two readings.
    public static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)
    }
}
