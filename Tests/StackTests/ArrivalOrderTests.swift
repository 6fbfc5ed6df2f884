import Testing
@testable import Stack

/// The order the flow table's full queues give way in: oldest live first,
/// stale entries skipped, and storage bounded by the live entries however
/// many come and go.
@Suite struct ArrivalOrderTests {
    @Test func theOldestLiveKeyComesFirstAndStaleOnesAreSkipped() {
        var order = ArrivalOrder<Int>()
        var live: Set<Int> = []
        for key in 1 ... 5 {
            live.insert(key)
            order.append(key, liveCount: live.count) { live.contains($0) }
        }
        live.remove(1)
        live.remove(3)
        #expect(order.popOldest { live.contains($0) } == 2)
        #expect(order.popOldest { live.contains($0) } == 4)
        live.remove(5)
        #expect(order.popOldest { live.contains($0) } == nil)
    }

    /// A key let go and taken again many times, among keys that come and go
    /// by the thousand: what is kept stays near the live count, and a
    /// repeated key, made stale once given out (as the table does), is not
    /// given out again.
    @Test func storageStaysBoundedByTheLiveEntries() {
        var order = ArrivalOrder<Int>()
        var live: Set<Int> = [0]
        order.append(0, liveCount: 1) { live.contains($0) }
        for key in 1 ... 100_000 {
            live.insert(key)
            order.append(key, liveCount: live.count) { live.contains($0) }
            live.remove(key)
            order.append(0, liveCount: live.count) { live.contains($0) }
        }
        let keys = Mirror(reflecting: order).children.first { $0.label == "keys" }?.value as? [Int]
        #expect((keys?.count ?? .max) <= 2 * live.count + 64 + 1)
        #expect(order.popOldest { live.contains($0) } == 0)
        live.remove(0)
        #expect(order.popOldest { live.contains($0) } == nil)
    }
}
