/// Deadlines of many flows, earliest first: a binary min-heap of (deadline, key).
///
/// The flow tables use it lazily. A flow's deadline moves on nearly every
/// packet (each ACK pushes the retransmission timer out, each datagram the
/// idle timer), and updating a heap entry on every packet would cost
/// O(log n) per packet for nothing. Instead an entry is only a promise that
/// the flow must be looked at by then: when it comes due, the table reads the
/// flow's real deadline and fires it or queues it again. An entry may be stale
/// (its flow left, or moved its deadline); the table checks before acting.
/// What this buys: finding the next deadline is O(1) instead of a scan of
/// every flow on every wake-up of the engine's loop, which at a thousand open
/// connections cost more than the packets themselves.
public struct DeadlineQueue<Key: Hashable> {
    public typealias Entry = (deadline: Instant, key: Key)
    private var heap: [Entry] = []

    public init() {}

    public var count: Int { heap.count }
    public var isEmpty: Bool { heap.isEmpty }
    /// The earliest entry's deadline: no flow in the queue is due before it.
    public var earliest: Instant? { heap.first?.deadline }

    public mutating func insert(_ deadline: Instant, _ key: Key) {
        heap.append((deadline, key))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest entry if it is due at `now`.
    public mutating func popDue(now: Instant) -> Entry? {
        guard let first = heap.first, first.deadline <= now else { return nil }
        let last = heap.removeLast()
        guard !heap.isEmpty else { return first }
        heap[0] = last
        siftDown(from: 0)
        return first
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }

    /// Keeps only the entries `isLive` accepts, in heap order again (O(n)).
    /// The tables call it when stale entries outnumber live flows, so that
    /// closed flows' entries (an idle timer can be minutes away) cannot pile
    /// up at a high rate of short flows.
    public mutating func compact(keeping isLive: (Entry) -> Bool) {
        heap.removeAll { !isLive($0) }
        var index = heap.count / 2
        while index > 0 {
            index -= 1
            siftDown(from: index)
        }
    }

    public mutating func removeAll() {
        heap.removeAll(keepingCapacity: true)
    }
}
