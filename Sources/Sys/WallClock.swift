// WallClock exists because capture files and flow logs carry calendar time
// (CLOCK_REALTIME), while everything that measures spans uses the monotonic
// clock. One vDSO call, no allocation: cheap enough per packet.
import Glibc

public enum WallClock {
    /// Nanoseconds since the Unix epoch.
    public static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }
}
