/// Latencies in a fixed log-scale histogram: eight buckets per power of two
/// (so any reported percentile is within 12.5% of a recorded value), from 1 ns
/// to 2^64 ns, 496 counters allocated once. Recording never allocates, so a
/// key that sees a million requests costs what a key that sees one does.
public struct LatencyHistogram: Sendable, Equatable {
    static let bucketCount = 496

    private var buckets: [UInt32]
    public private(set) var count: UInt64 = 0
    public private(set) var minimum: UInt64 = .max
    public private(set) var maximum: UInt64 = 0

    public init() { buckets = Array(repeating: 0, count: Self.bucketCount) }

    public mutating func record(nanoseconds value: UInt64) {
        let b = Self.bucket(value)
        if buckets[b] < .max { buckets[b] += 1 }
        count += 1
        if value < minimum { minimum = value }
        if value > maximum { maximum = value }
    }

    /// The value below which a fraction `p` (0...1) of recordings fall: the
    /// middle of the bucket holding that rank, clamped to what was seen; the first and
    /// last ranks report the exact minimum and maximum. Nil when empty.
    public func percentile(_ p: Double) -> UInt64? {
        guard count > 0 else { return nil }
        // Rounded up by hand: Double.rounded calls libm's ceil, which a pure layer cannot count on being linked.
        let exact = Swift.max(0, Swift.min(p, 1)) * Double(count)
        var rank = UInt64(exact)
        if Double(rank) < exact { rank += 1 }
        if rank < 1 { rank = 1 }
        if rank > count { rank = count }
        // The extremes are known exactly; only the ranks between are estimates.
        if rank == count { return maximum }
        if rank == 1 { return minimum }
        var seen: UInt64 = 0
        for b in 0 ..< Self.bucketCount {
            seen += UInt64(buckets[b])
            if seen >= rank {
                let (lower, upper) = Self.bounds(b)
                let middle = lower + (upper - lower) / 2
                return Swift.min(Swift.max(middle, minimum), maximum)
            }
        }
        return maximum
    }

    static func bucket(_ value: UInt64) -> Int {
        if value < 8 { return Int(value) }
        let exponent = 63 - value.leadingZeroBitCount
        let mantissa = Int(value >> UInt64(exponent - 3) & 7)
        return 8 + (exponent - 3) * 8 + mantissa
    }

    static func bounds(_ bucket: Int) -> (lower: UInt64, upper: UInt64) {
        if bucket < 8 { return (UInt64(bucket), UInt64(bucket)) }
        let exponent = (bucket - 8) / 8 + 3, mantissa = UInt64((bucket - 8) % 8)
        let width = UInt64(1) << UInt64(exponent - 3)
        let lower = (8 + mantissa) << UInt64(exponent - 3)
        return (lower, lower + (width - 1))
    }
}
