/// A point in time, in nanoseconds from an origin the engine chooses. The
/// stack never reads a clock: the engine passes the current Instant into every
/// call, which is what makes packet-level tests deterministic.
public struct Instant: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    @inlinable public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static let zero = Instant(nanoseconds: 0)

    @inlinable public static func milliseconds(_ ms: Int64) -> Instant { Instant(nanoseconds: ms * 1_000_000) }

    @inlinable public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }

    @inlinable
    public static func + (a: Instant, d: Duration) -> Instant {
        Instant(nanoseconds: a.nanoseconds &+ d.nanoseconds)
    }

    /// The hot path's `+`: plain Int64 arithmetic, no Duration conversion.
    @inlinable
    public func advanced(byNanoseconds nanoseconds: Int64) -> Instant {
        Instant(nanoseconds: self.nanoseconds &+ nanoseconds)
    }

    @inlinable
    public static func - (a: Instant, b: Instant) -> Duration {
        .nanoseconds(a.nanoseconds &- b.nanoseconds)
    }

    public var description: String {
        let ms = nanoseconds / 1_000_000, frac = (nanoseconds % 1_000_000) / 1000
        return "t=\(ms).\(String(frac + 1000).dropFirst())ms"
    }
}

extension Duration {
    /// The whole duration in nanoseconds, saturating far beyond any timer we set.
    @inlinable
    public var nanoseconds: Int64 {
        let (s, atto) = components
        let (ns, overflow) = s.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (s < 0 ? .min : .max) : ns &+ atto / 1_000_000_000
    }
}
