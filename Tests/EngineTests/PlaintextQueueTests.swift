import Testing
import TestSupport
@testable import Engine

/// The queue between an intercepted connection's TLS and HTTP mode. HTTP
/// mode parses `readable` in place, so besides keeping bytes in order the
/// queue must keep their address still except inside `append`.
@Suite struct PlaintextQueueTests {
    func contents(_ queue: PlaintextQueue) -> [UInt8] { Array(queue.readable) }

    func bytes(_ range: Range<Int>) -> [UInt8] { range.map { UInt8(truncatingIfNeeded: $0) } }

    @Test func startsEmpty() {
        let queue = PlaintextQueue(capacity: 64)
        #expect(queue.isEmpty)
        #expect(queue.count == 0)
        #expect(queue.readable.isEmpty)
    }

    @Test func appendThenConsumeInOrder() {
        let queue = PlaintextQueue(capacity: 64)
        queue.append(bytes(0 ..< 10))
        queue.append(bytes(10 ..< 16))
        #expect(queue.count == 16)
        #expect(contents(queue) == bytes(0 ..< 16))
        queue.consume(5)
        #expect(queue.count == 11)
        #expect(contents(queue) == bytes(5 ..< 16))
    }

    @Test func anEmptyAppendChangesNothing() {
        let queue = PlaintextQueue(capacity: 8)
        queue.append([])
        #expect(queue.isEmpty)
        queue.append([1, 2])
        queue.append([])
        #expect(contents(queue) == [1, 2])
    }

    /// Consuming only advances: what HTTP mode still holds a view into stays put.
    @Test func consumeDoesNotMoveTheRest() throws {
        let queue = PlaintextQueue(capacity: 64)
        queue.append(bytes(0 ..< 20))
        let before = try #require(queue.readable.baseAddress)
        queue.consume(7)
        #expect(queue.readable.baseAddress == before + 7)
        #expect(contents(queue) == bytes(7 ..< 20))
    }

    @Test func consumingMoreThanThereIsEmptiesIt() {
        let queue = PlaintextQueue(capacity: 16)
        queue.append([1, 2, 3])
        queue.consume(100)
        #expect(queue.isEmpty)
        #expect(queue.readable.isEmpty)
        queue.append([4])
        #expect(contents(queue) == [4])
    }

    /// Once everything is read the next bytes go to the start again, so a
    /// queue that is read as fast as it fills never compacts or grows.
    @Test func consumingEverythingRewindsToTheStart() throws {
        let queue = PlaintextQueue(capacity: 16)
        queue.append(bytes(0 ..< 10))
        let start = try #require(queue.readable.baseAddress)
        queue.consume(10)
        #expect(queue.isEmpty)
        #expect(queue.readable.count == 0)
        queue.append(bytes(10 ..< 26))
        #expect(queue.readable.baseAddress == start, "the whole capacity is free again")
        #expect(contents(queue) == bytes(10 ..< 26))
    }

    /// Past the end but within capacity: the unread bytes move to the front.
    @Test func reachingTheEndCompacts() throws {
        let queue = PlaintextQueue(capacity: 16)
        queue.append(bytes(0 ..< 12))
        let start = try #require(queue.readable.baseAddress)
        queue.consume(8)
        // 4 unread + 10 new fit in 16, though not after offset 12.
        queue.append(bytes(12 ..< 22))
        #expect(queue.readable.baseAddress == start, "compacted in place, not grown")
        #expect(contents(queue) == bytes(8 ..< 22))
    }

    /// Compaction's source and destination overlap when more is unread than was consumed.
    @Test func compactionWithOverlapKeepsTheBytes() throws {
        let queue = PlaintextQueue(capacity: 16)
        queue.append(bytes(0 ..< 14))
        queue.consume(3)
        queue.append(bytes(14 ..< 19))
        #expect(contents(queue) == bytes(3 ..< 19))
    }

    @Test func growingPastCapacityKeepsEveryByteInOrder() {
        let queue = PlaintextQueue(capacity: 8)
        queue.append(bytes(0 ..< 6))
        queue.consume(2)
        queue.append(bytes(6 ..< 20))
        #expect(contents(queue) == bytes(2 ..< 20))
        // One append far larger than double the capacity.
        queue.append(bytes(20 ..< 1000))
        #expect(queue.count == 998)
        #expect(contents(queue) == bytes(2 ..< 1000))
        queue.consume(998)
        #expect(queue.isEmpty)
    }

    @Test func aTinyCapacityStillGrows() {
        let queue = PlaintextQueue(capacity: 1)
        for value in 0 ..< 100 { queue.append([UInt8(value)]) }
        #expect(contents(queue) == bytes(0 ..< 100))
    }

    @Test func takeMovesOutUpToTheBuffersSize() {
        let queue = PlaintextQueue(capacity: 32)
        queue.append(bytes(0 ..< 10))
        var buffer = [UInt8](repeating: 0xEE, count: 4)
        let first = buffer.withUnsafeMutableBytes { queue.take(into: $0) }
        #expect(first == 4)
        #expect(buffer == bytes(0 ..< 4))
        #expect(contents(queue) == bytes(4 ..< 10))

        buffer = [UInt8](repeating: 0xEE, count: 16)
        let second = buffer.withUnsafeMutableBytes { queue.take(into: $0) }
        #expect(second == 6)
        #expect(buffer == bytes(4 ..< 10) + [UInt8](repeating: 0xEE, count: 10), "nothing past what it held is written")
        #expect(queue.isEmpty)

        let third = buffer.withUnsafeMutableBytes { queue.take(into: $0) }
        #expect(third == 0)
    }

    @Test func takeIntoAnEmptyBufferTakesNothing() {
        let queue = PlaintextQueue(capacity: 8)
        queue.append([1, 2, 3])
        var buffer: [UInt8] = []
        #expect(buffer.withUnsafeMutableBytes { queue.take(into: $0) } == 0)
        #expect(contents(queue) == [1, 2, 3])
    }

    /// Appends of every size against reads of every size, checked after each
    /// step against a plain array. A small capacity makes compaction and
    /// growth both common.
    @Test(arguments: [1, 64, 4096] as [Int])
    func agreesWithAnArrayUnderRandomUse(capacity: Int) {
        var random = SeededRandom(seed: 0x9E37_79B9 &+ UInt64(capacity))
        let queue = PlaintextQueue(capacity: capacity)
        var model: [UInt8] = []
        var next: UInt8 = 0
        for step in 0 ..< 10_000 {
            switch random.next() % 4 {
            case 0, 1:
                // Mostly small, now and then larger than the capacity.
                let length = random.next() % 8 == 0 ? Int(random.next() % 3000) : Int(random.next() % 200)
                let chunk = (0 ..< length).map { _ in
                    next &+= 1
                    return next
                }
                queue.append(chunk)
                model += chunk
            case 2:
                let n = Int(random.next() % UInt64(model.count + 10))
                queue.consume(n)
                model.removeFirst(min(n, model.count))
            default:
                var buffer = [UInt8](repeating: 0, count: Int(random.next() % 300))
                let taken = buffer.withUnsafeMutableBytes { queue.take(into: $0) }
                let expected = min(buffer.count, model.count)
                guard taken == expected, Array(buffer[..<taken]) == Array(model[..<expected]) else {
                    Issue.record("step \(step): take gave \(taken) bytes, expected \(expected)")
                    return
                }
                model.removeFirst(expected)
            }
            guard queue.count == model.count, queue.isEmpty == model.isEmpty, contents(queue) == model else {
                Issue.record("step \(step): the queue holds \(queue.count) bytes, the model \(model.count)")
                return
            }
        }
    }
}

