import Testing
import HTTP
@testable import Rules

@Suite struct StatisticsTests {
    /// The issue's mix: 200, 404, 500 and refused, on two keys.
    func mixedBook() -> StatisticsBook {
        var book = StatisticsBook(name: "api-v1", failureStatus: 500 ... 599)
        for i in 0 ..< 6 {
            book.recordResponse(key: "users", status: 200, bytesUp: 100, bytesDown: 1000,
                                latencyNanoseconds: UInt64(10_000_000 + i * 1_000_000))
        }
        book.recordResponse(key: "users", status: 404, bytesUp: 100, bytesDown: 50, latencyNanoseconds: 5_000_000)
        book.recordResponse(key: "users", status: 500, bytesUp: 100, bytesDown: 60, latencyNanoseconds: 200_000_000)
        book.recordError(key: "users", kind: .refused, latencyNanoseconds: 300_000)
        book.recordError(key: "orders", kind: .refused)
        book.recordError(key: "orders", kind: .timedOut, latencyNanoseconds: 5_000_000_000)
        book.recordResponse(key: "orders", status: 503, latencyNanoseconds: 1_000_000)
        return book
    }

    @Test func countsAndFailureClasses() throws {
        let book = mixedBook()
        let users = try #require(book.entry(for: "users"))
        #expect(users.requests == 9)
        #expect(users.count(statusClass: 2) == 6)
        #expect(users.count(statusClass: 4) == 1)
        #expect(users.count(statusClass: 5) == 1)
        #expect(users.count(.refused) == 1)
        #expect(users.failures == 2)            // the 500 and the refusal; 404 is outside 500-599
        #expect(users.bytesUp == 800 && users.bytesDown == 6110)
        let orders = try #require(book.entry(for: "orders"))
        #expect(orders.requests == 3 && orders.failures == 3)
        #expect(orders.count(.refused) == 1 && orders.count(.timedOut) == 1)
        #expect(orders.latency.count == 2)      // the refusal without a latency is counted, not timed
    }

    @Test func failureRangeIsConfigurable() throws {
        var book = StatisticsBook(name: "strict", failureStatus: 400 ... 599)
        for status in [200, 404, 500, 302] { book.recordResponse(key: "h", status: status, latencyNanoseconds: 1) }
        book.recordError(key: "h", kind: .refused)
        let e = try #require(book.entry(for: "h"))
        #expect(e.failures == 3)
        #expect(e.count(statusClass: 3) == 1)
    }

    @Test func percentiles() throws {
        var h = LatencyHistogram()
        #expect(h.percentile(0.5) == nil)
        h.record(nanoseconds: 42)
        #expect(h.percentile(0.5) == 42 && h.percentile(0.99) == 42) // clamped to what was seen
        var g = LatencyHistogram()
        // 1 ms ... 100 ms, one each: p50 ≈ 50 ms, p99 ≈ 99 ms within the 12.5% bucket width.
        for ms in 1 ... 100 { g.record(nanoseconds: UInt64(ms) * 1_000_000) }
        let p50 = Double(try #require(g.percentile(0.5))), p99 = Double(try #require(g.percentile(0.99)))
        #expect(abs(p50 - 50e6) / 50e6 < 0.125, "p50 \(p50)")
        #expect(abs(p99 - 99e6) / 99e6 < 0.125, "p99 \(p99)")
        #expect(g.percentile(1.0) == 100_000_000 || Double(g.percentile(1.0)!) <= 100e6)
        #expect(g.count == 100 && g.minimum == 1_000_000 && g.maximum == 100_000_000)
    }

    @Test func histogramBucketsCoverEveryValue() {
        for v: UInt64 in [0, 1, 7, 8, 9, 15, 16, 1000, 123_456_789, UInt64.max / 3, UInt64.max] {
            let b = LatencyHistogram.bucket(v)
            let (lo, hi) = LatencyHistogram.bounds(b)
            #expect(b >= 0 && b < LatencyHistogram.bucketCount)
            #expect(lo <= v && v <= hi, "\(v) in bucket \(b) [\(lo), \(hi)]")
        }
        var h = LatencyHistogram()
        h.record(nanoseconds: .max)
        #expect(h.percentile(0.5) == .max)
    }

    @Test func mixPercentiles() throws {
        let users = try #require(mixedBook().entry(for: "users"))
        // Sorted: 0.3, 5, 10, 11, 12, 13, 14, 15, 200 ms: p50 is the 5th = 12 ms; p99 the 9th = 200 ms.
        let p50 = Double(try #require(users.latency.percentile(0.5)))
        #expect(abs(p50 - 12e6) / 12e6 < 0.125)
        #expect(users.latency.percentile(0.99) == 200_000_000)
    }

    @Test func keysAreBounded() {
        var book = StatisticsBook(name: "hosts", maximumKeys: 3)
        for i in 0 ..< 10 { book.recordResponse(key: "h\(i)", status: 200, latencyNanoseconds: 1) }
        #expect(book.entries.count == 3)
        #expect(book.entry(for: StatisticsBook.overflowKey)?.requests == 8)
        #expect(book.entry(for: "h1")?.requests == 1)
    }

    @Test func renderTable() {
        let text = mixedBook().render()
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines[0] == "api-v1 (failure-status 500-599)")
        #expect(lines.count == 4)
        #expect(lines[1].hasPrefix("key     requests  2xx"))
        #expect(lines[2].hasPrefix("orders         3    0    0    0    1  3 (100%)  refused 1, timeout 1"))
        #expect(lines[3].hasPrefix("users          9    6    0    1    1   2 (22%)  refused 1"))
        // Columns line up: "requests" ends where each count ends.
        let end = lines[1].firstRange(of: "requests")!.upperBound.utf16Offset(in: lines[1])
        #expect(Array(lines[2].utf16)[end - 1] == UInt16(UInt8(ascii: "3")))
        #expect(text.contains("5.0 s"))     // the timeout's latency, orders' p99
        #expect(StatisticsBook.formatBytes(6110) == "6.0 KiB")
        #expect(StatisticsBook.formatBytes(800) == "800 B")
        #expect(StatisticsBook.formatDuration(12_340_000) == "12.3 ms")
    }

    @Test func json() {
        var book = StatisticsBook(name: "x")
        book.recordResponse(key: "a", status: 200, bytesUp: 1, bytesDown: 2, latencyNanoseconds: 5)
        book.recordError(key: "a", kind: .refused)
        #expect(book.json() == #"{"name":"x","failure-status":[500,599],"keys":[{"key":"a","requests":2,"status":{"1xx":0,"2xx":1,"3xx":0,"4xx":0,"5xx":0},"failures":1,"errors":{"refused":1},"bytes-up":1,"bytes-down":2,"latency-p50-ns":5,"latency-p99-ns":5}]}"#)
    }

    @Test func keyFromDefinition() throws {
        let def = StatisticsDefinition(name: "api-v1", regex: try CompiledRegex(#"^http://api\.test/v1/([a-z]+)"#),
                                       key: .capture(1), line: 3)
        #expect(StatisticsBook.key(for: def, url: "http://api.test/v1/users?x=1", host: "api.test") == "users")
        #expect(StatisticsBook.key(for: def, url: "http://api.test/v2/users", host: "api.test") == nil)
        let byHost = StatisticsDefinition(name: "all", regex: try CompiledRegex(".*"), line: 4)
        #expect(StatisticsBook.key(for: byHost, url: "http://a.test/", host: "a.test") == "a.test")
    }
}

@Suite struct StatisticsLedgerTests {
    @Test func eachLineCountsUnderItsKey() throws {
        var ledger = StatisticsLedger(definitions: [
            StatisticsDefinition(name: "api-v1", regex: try CompiledRegex(#"^http://api\.test/v1/([a-z]+)"#), key: .capture(1), line: 1),
            StatisticsDefinition(name: "all-http", regex: try CompiledRegex(".*"), key: .host, failureStatus: 400 ... 599, line: 2),
            StatisticsDefinition(name: "unused", regex: try CompiledRegex("^http://never\\."), line: 3),
        ])
        ledger.recordResponse(url: "http://api.test/v1/users", host: "api.test", status: 200, latencyNanoseconds: 1_000_000)
        ledger.recordResponse(url: "http://api.test/v1/users", host: "api.test", status: 404, latencyNanoseconds: 2_000_000)
        ledger.recordResponse(url: "http://api.test/v1/orders", host: "api.test", status: 500, latencyNanoseconds: 3_000_000)
        ledger.recordError(url: "http://down.test/", host: "down.test", kind: .refused)
        #expect(ledger.books[0].entry(for: "users")?.requests == 2)
        #expect(ledger.books[0].entry(for: "users")?.failures == 0)      // 404 is outside 500-599
        #expect(ledger.books[0].entry(for: "orders")?.failures == 1)
        #expect(ledger.books[1].entry(for: "api.test")?.requests == 3)
        #expect(ledger.books[1].entry(for: "api.test")?.failures == 2)   // 404 and 500 inside 400-599
        #expect(ledger.books[1].entry(for: "down.test")?.count(.refused) == 1)
        #expect(ledger.books[2].entries.isEmpty)
        let text = ledger.render()
        #expect(text.hasPrefix("api-v1 (failure-status 500-599)\n"))
        #expect(text.contains("\nall-http (failure-status 400-599)\n"))
        #expect(!text.contains("unused"))
        var json = JSONWriter()
        ledger.writeJSON(into: &json)
        #expect(json.text.hasPrefix(#"[{"name":"api-v1""#) && json.text.contains(#"{"name":"unused","failure-status":[500,599],"keys":[]}"#))
    }
}
