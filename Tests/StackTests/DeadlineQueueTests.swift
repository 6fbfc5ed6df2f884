import Testing
@testable import Stack

/// The heap under the flow tables' timers: earliest first, due only at its time,
/// and compaction keeps exactly the live entries in order.
@Suite struct DeadlineQueueTests {
    @Test func popsInDeadlineOrderAndOnlyWhenDue() {
        var queue = DeadlineQueue<Int>()
        var random = SplitMix64(seed: 7)
        var inserted: [Int64] = []
        for key in 0 ..< 500 {
            let ms = Int64(random.next() % 1000)
            inserted.append(ms)
            queue.insert(.milliseconds(ms), key)
        }
        #expect(queue.count == 500 && queue.earliest == .milliseconds(inserted.min()!))
        #expect(queue.popDue(now: .milliseconds(inserted.min()! - 1)) == nil)
        var popped: [Int64] = []
        var keys = Set<Int>()
        while let (deadline, key) = queue.popDue(now: .milliseconds(499)) {
            popped.append(deadline.nanoseconds / 1_000_000)
            keys.insert(key)
        }
        #expect(popped == inserted.filter { $0 <= 499 }.sorted())
        #expect(keys == Set(inserted.indices.filter { inserted[$0] <= 499 }))
        #expect(queue.earliest == .milliseconds(inserted.filter { $0 > 499 }.min()!))
        while queue.popDue(now: .milliseconds(1000)) != nil {}
        #expect(queue.isEmpty && queue.earliest == nil)
    }

    @Test func compactionKeepsTheLiveEntriesInOrder() {
        var queue = DeadlineQueue<Int>()
        var random = SplitMix64(seed: 11)
        var inserted: [(Int64, Int)] = []
        for key in 0 ..< 300 {
            let ms = Int64(random.next() % 10_000)
            inserted.append((ms, key))
            queue.insert(.milliseconds(ms), key)
        }
        queue.compact { $0.key % 3 == 0 }
        let live = inserted.filter { $0.1 % 3 == 0 }
        #expect(queue.count == live.count)
        var popped: [(Int64, Int)] = []
        while let (deadline, key) = queue.popDue(now: .milliseconds(10_000)) { popped.append((deadline.nanoseconds / 1_000_000, key)) }
        #expect(popped.map(\.0) == live.map(\.0).sorted())
        #expect(Set(popped.map(\.1)) == Set(live.map(\.1)))
    }
}
