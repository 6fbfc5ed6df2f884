/// Seeded faults between the TUN and the stack: drop, duplicate, reorder,
/// corrupt and delay packets, reproducibly. Tests put it between two stacks
/// in a deterministic simulation; the engine can put it in front of its TUN
/// to rehearse a lossy path against real peers.
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

        public init(drop: Double = 0, duplicate: Double = 0, reorder: Double = 0, corrupt: Double = 0,
                    delay: Duration = .zero, reorderDelay: Duration = .milliseconds(3)) {
            self.drop = drop; self.duplicate = duplicate; self.reorder = reorder; self.corrupt = corrupt
            self.delay = delay; self.reorderDelay = reorderDelay
        }

        public var description: String {
            "drop \(drop) duplicate \(duplicate) reorder \(reorder) corrupt \(corrupt) delay \(delay)"
        }
    }

    public struct Counters: Sendable, Equatable {
        public var passed = 0, dropped = 0, duplicated = 0, reordered = 0, corrupted = 0
    }

    public let plan: Plan
    public private(set) var counters = Counters()
    private var random: SplitMix64
    /// Packets in flight, in arrival order of `push`; each with its release time.
    private var queue: [(release: Instant, order: Int, bytes: [UInt8])] = []
    private var order = 0

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
        var release = now + plan.delay
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
