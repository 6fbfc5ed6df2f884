import Capture
import HTTP
import Testing
import TestSupport
import Wire
@testable import Engine

/// The ring behind `GET /requests`: ids, limits, what a reader that fell behind missed.
@Suite struct RecentRequestsTests {
    /// An entry that carries its own id (as its connection id), so a page can be checked against the ids it claims.
    static func entry(_ id: UInt64) -> RecentRequests.Entry {
        if id % 3 == 0 {
            return .connection(FlowRecord(connectionID: id, startTime: 0, transport: .tcp, source: .v4(.any), sourcePort: 1,
                                          destination: .v4(.any), destinationPort: 80))
        }
        return .http(HTTPRequestRecord(connectionID: id, requestIndex: 0, startTime: 0, method: "GET", url: "http://a.test/\(id)"))
    }

    static func carried(_ entry: RecentRequests.Entry) -> UInt64 {
        switch entry {
        case let .http(record): record.connectionID
        case let .connection(record): record.connectionID
        }
    }

    @Test func emptyThenTheNewest() {
        var ring = RecentRequests(capacity: 8)
        let empty = ring.page(after: nil, limit: 20)
        #expect(empty.entries.isEmpty && empty.newest == 0 && empty.missed == 0 && !empty.more)
        for id in 1 ... 5 as ClosedRange<UInt64> { ring.append(Self.entry(id)) }
        let newest = ring.page(after: nil, limit: 3)
        #expect(newest.entries.map(\.id) == [3, 4, 5])
        #expect(newest.entries.map { Self.carried($0.entry) } == [3, 4, 5])
        #expect(newest.newest == 5 && newest.missed == 0 && !newest.more)
        #expect(ring.page(after: nil, limit: 50).entries.map(\.id) == [1, 2, 3, 4, 5])
    }

    @Test func afterAnIdOldestFirstAndMore() {
        var ring = RecentRequests(capacity: 8)
        for id in 1 ... 5 as ClosedRange<UInt64> { ring.append(Self.entry(id)) }
        let first = ring.page(after: 2, limit: 2)
        #expect(first.entries.map(\.id) == [3, 4])
        #expect(first.more && first.missed == 0)
        let rest = ring.page(after: 4, limit: 2)
        #expect(rest.entries.map(\.id) == [5])
        #expect(!rest.more)
        // Nothing after the newest, nor after an id this ring never gave (an earlier Sluice's).
        for after: UInt64 in [5, 6, 1000, .max] {
            let page = ring.page(after: after, limit: 10)
            #expect(page.entries.isEmpty && page.newest == 5 && !page.more && page.missed == 0, "after \(after)")
        }
    }

    @Test func theOldestGiveWayAndAReaderBehindIsTold() {
        var ring = RecentRequests(capacity: 4)
        for id in 1 ... 10 as ClosedRange<UInt64> { ring.append(Self.entry(id)) }
        #expect(ring.count == 4 && ring.oldestID == 7)
        let page = ring.page(after: 2, limit: 10)
        #expect(page.missed == 4) // 3, 4, 5 and 6
        #expect(page.entries.map(\.id) == [7, 8, 9, 10])
        #expect(page.entries.map { Self.carried($0.entry) } == [7, 8, 9, 10])
        #expect(ring.page(after: 0, limit: 10).missed == 6)
        #expect(ring.page(after: 6, limit: 10).missed == 0)
    }

    /// A seeded walk of appends and looks against an array of every entry ever made.
    @Test func agreesWithAModel() {
        var generator = SeededRandom(seed: 42)
        for capacity in [1, 2, 3, 7, 16] {
            var ring = RecentRequests(capacity: capacity)
            var made: UInt64 = 0
            for _ in 0 ..< 400 {
                if Int.random(in: 0 ..< 3, using: &generator) > 0 {
                    made += 1
                    ring.append(Self.entry(made))
                    continue
                }
                let limit = Int.random(in: 1 ... 20, using: &generator)
                let oldest = made >= UInt64(capacity) ? made - UInt64(capacity) + 1 : 1
                if Bool.random(using: &generator) {
                    let page = ring.page(after: nil, limit: limit)
                    let held = made + 1 - oldest // 0 before the first
                    let count = Int(min(UInt64(limit), held))
                    let expected = (0 ..< count).map { made - UInt64(count) + 1 + UInt64($0) }
                    #expect(page.entries.map(\.id) == expected, "capacity \(capacity), newest \(made), limit \(limit)")
                    #expect(page.entries.map { Self.carried($0.entry) } == expected)
                } else {
                    let after = UInt64.random(in: 0 ... made + 2, using: &generator)
                    let page = ring.page(after: after, limit: limit)
                    let from = max(after + 1, oldest)
                    let expected = from > made ? [] : Array(from ... min(made, from + UInt64(limit) - 1))
                    #expect(page.entries.map(\.id) == expected, "capacity \(capacity), newest \(made), after \(after), limit \(limit)")
                    #expect(page.entries.map { Self.carried($0.entry) } == expected)
                    #expect(page.missed == (after < made && oldest > after + 1 ? oldest - after - 1 : 0))
                    #expect(page.more == (expected.last.map { $0 < made } ?? false))
                }
                #expect(ring.page(after: nil, limit: 1).newest == made)
            }
        }
    }
}
