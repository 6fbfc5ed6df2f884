/// Seeded faults between the TUN and the stack: drop, duplicate, reorder,
/// corrupt and delay packets, and hold them to a link's rate, reproducibly.
/// Tests put it between two stacks in a deterministic simulation; the engine
/// can put it in front of its TUN to rehearse a lossy or slow path against
/// real peers.
public struct FaultInjector: Sendable {
    public struct Plan: Sendable, Equatable, CustomStringConvertible {
        /// Probabilities, each in 0…1, drawn independently per packet.
        public var drop = 0.0
        public var duplicate = 0.0
        public var reorder = 0.0
        public var corrupt = 0.0
        /// Every packet waits this long; a reordered one waits `reorderDelay` more.
        public var delay: Duration = .zero
        public var reorderDelay: Duration = .milliseconds(3)
        /// A link of this many bits a second: packets leave one after another,
        /// each after its own transmission time, from a queue that holds at
        /// most `queueLimit` of waiting (the rest is dropped at its tail, as a
        /// router's full buffer does). Nil: no rate limit.
        public var bitsPerSecond: Int?
        public var queueLimit: Duration = .milliseconds(200)

        public init(drop: Double = 0, duplicate: Double = 0, reorder: Double = 0, corrupt: Double = 0,
                    delay: Duration = .zero, reorderDelay: Duration = .milliseconds(3), bitsPerSecond: Int? = nil) {
            self.drop = drop; self.duplicate = duplicate; self.reorder = reorder; self.corrupt = corrupt
            self.delay = delay; self.reorderDelay = reorderDelay; self.bitsPerSecond = bitsPerSecond
        }

        public var description: String {
            "drop \(drop) duplicate \(duplicate) reorder \(reorder) corrupt \(corrupt) delay \(delay)"
                + (bitsPerSecond.map { " rate \($0) bit/s" } ?? "")
        }
    }

    public struct Counters: Sendable, Equatable {
        public var passed = 0, dropped = 0, duplicated = 0, reordered = 0, corrupted = 0
        /// Dropped because the rate-limited link's queue was full.
        public var overflowed = 0

        public init() {}
    }

    public let plan: Plan
    public private(set) var counters = Counters()
    private var random: SplitMix64
    /// Packets in flight, in arrival order of `push`; each with its release time.
    private var queue: [(release: Instant, order: Int, bytes: [UInt8])] = []
    private var order = 0
    /// With a rate: when the link has sent everything queued so far.
    private var linkFreeAt = Instant(nanoseconds: .min / 2)

    public init(plan: Plan, seed: UInt64) {
        self.plan = plan
        random = SplitMix64(seed: seed)
    }

    /// Offers one packet at `now`.
    public mutating func push(_ packet: [UInt8], now: Instant) {
        if chance(plan.drop) {
            counters.dropped += 1
            return
        }
        var bytes = packet
        if chance(plan.corrupt), !bytes.isEmpty {
            // Flip one bit: checksums must catch it.
            let index = Int(random.next() % UInt64(bytes.count))
            bytes[index] ^= UInt8(1 << (random.next() % 8))
            counters.corrupted += 1
        }
        var release = now
        if let rate = plan.bitsPerSecond, rate > 0 {
            // The packet waits for those before it, then takes its own transmission time.
            let transmission = Int64(bytes.count) * 8 * 1_000_000_000 / Int64(rate)
            let start = linkFreeAt > now ? linkFreeAt : now
            guard start.nanoseconds - now.nanoseconds <= plan.queueLimit.nanoseconds else {
                counters.overflowed += 1
                return
            }
            linkFreeAt = start.advanced(byNanoseconds: transmission)
            release = linkFreeAt
        }
        release = release + plan.delay
        if chance(plan.reorder) {
            release = release + plan.reorderDelay
            counters.reordered += 1
        }
        enqueue(bytes, at: release)
        if chance(plan.duplicate) {
            enqueue(bytes, at: release + .microseconds(10))
            counters.duplicated += 1
        }
        counters.passed += 1
    }

    /// The packets whose time has come, in release order.
    public mutating func pop(now: Instant) -> [[UInt8]] {
        var due: [(release: Instant, order: Int, bytes: [UInt8])] = []
        queue.removeAll { item in
            if item.release <= now { due.append(item); return true }
            return false
        }
        due.sort { ($0.release, $0.order) < ($1.release, $1.order) }
        return due.map(\.bytes)
    }

    /// When the next packet is due, if any is waiting.
    public var nextRelease: Instant? { queue.map(\.release).min() }

    public var isEmpty: Bool { queue.isEmpty }

    private mutating func enqueue(_ bytes: [UInt8], at release: Instant) {
        queue.append((release, order, bytes))
        order += 1
    }

    private mutating func chance(_ p: Double) -> Bool {
        guard p > 0 else { return false }
        return Double(random.next() >> 11) / Double(1 << 53) < p
    }
}

/// SplitMix64 (Steele, Lea and Flood 2014): tiny, fast, and good enough to
/// drive reproducible faults; not for anything secret.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
