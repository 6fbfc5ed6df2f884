import Foundation
import Testing
import Wire
@testable import Capture

@Suite struct FlowLogTests {
    static let start: UInt64 = 1_764_517_251_123_456_789 // 2025-11-30T15:40:51.123456Z

    func connection(_ id: UInt64) -> FlowRecord {
        var record = FlowRecord(
            connectionID: id, startTime: Self.start, transport: .tcp,
            source: .v4(IPv4Address(10, 233, 0, 2)), sourcePort: 40000,
            destination: .v4(IPv4Address(198, 18, 0, 7)), destinationPort: 443
        )
        record.endTime = Self.start + 1_500_000_000
        record.domain = "example.com"
        record.domainSource = .sni
        record.process = "curl"
        record.processID = 4242
        record.userID = 1000
        record.rule = "DOMAIN-SUFFIX,example.com"
        record.policy = "DIRECT"
        record.upstream = "direct"
        record.bytesUp = 517
        record.bytesDown = 4096
        record.status = .closed
        return record
    }

    func request(_ id: UInt64) -> HTTPRequestRecord {
        var record = HTTPRequestRecord(connectionID: id, requestIndex: 1, startTime: Self.start + 1000, method: "GET",
                                       url: "http://example.com/a?b=\"c\"")
        record.status = 200
        record.responseBodyBytes = 1234
        record.timings = .init(send: 250_000, wait: 12_000_000, receive: 3_000_000)
        record.rule = "URL-REGEX,^http://example"
        record.policy = "REJECT"
        return record
    }

    func parse(_ line: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func connectionRecordsCarryEveryField() throws {
        let object = try parse(connection(12).json)
        #expect(object["kind"] as? String == "connection")
        #expect(object["connection"] as? Int == 12)
        #expect(object["start"] as? String == "2025-11-30T15:40:51.123456Z")
        #expect(object["end"] as? String == "2025-11-30T15:40:52.623456Z")
        #expect(object["durationMs"] as? Double == 1500)
        #expect(object["transport"] as? String == "tcp")
        #expect(object["source"] as? String == "10.233.0.2")
        #expect(object["sourcePort"] as? Int == 40000)
        #expect(object["destination"] as? String == "198.18.0.7")
        #expect(object["destinationPort"] as? Int == 443)
        #expect(object["domain"] as? String == "example.com")
        #expect(object["domainSource"] as? String == "sni")
        #expect(object["rule"] as? String == "DOMAIN-SUFFIX,example.com")
        #expect(object["policy"] as? String == "DIRECT")
        #expect(object["upstream"] as? String == "direct")
        #expect(object["bytesUp"] as? Int == 517)
        #expect(object["bytesDown"] as? Int == 4096)
        #expect(object["status"] as? String == "closed")
        #expect(object["error"] is NSNull)
        #expect(object["process"] as? String == "curl")
        #expect(object["pid"] as? Int == 4242)
        #expect(object["uid"] as? Int == 1000)
        #expect(object.count == 22)
        #expect(connection(12).description == "#12 TCP 10.233.0.2.40000 > 198.18.0.7.443 (example.com via sni) by curl[4242] rule=DOMAIN-SUFFIX,example.com policy=DIRECT upstream=direct up 517 down 4096 closed")
    }

    @Test func unknownFieldsAreNullNotMissing() throws {
        let record = FlowRecord(connectionID: 3, startTime: 0, transport: .udp,
                                source: .v6(try #require(IPv6Address("fd00:233::2"))), sourcePort: 5353,
                                destination: .v6(try #require(IPv6Address("2001:db8::1"))), destinationPort: 53)
        let object = try parse(record.json)
        #expect(object.count == 22)
        #expect(object["start"] as? String == "1970-01-01T00:00:00.000000Z")
        for key in ["end", "durationMs", "domain", "domainSource", "process", "pid", "uid", "rule", "policy", "upstream", "error"] {
            #expect(object[key] is NSNull, "\(key)")
        }
        #expect(object["source"] as? String == "fd00:233::2")
        #expect(object["status"] as? String == "open")
    }

    @Test func httpRequestRecords() throws {
        let object = try parse(request(12).json)
        #expect(object["kind"] as? String == "http")
        #expect(object["connection"] as? Int == 12)
        #expect(object["request"] as? Int == 1)
        #expect(object["method"] as? String == "GET")
        #expect(object["url"] as? String == "http://example.com/a?b=\"c\"")
        #expect(object["status"] as? Int == 200)
        #expect(object["responseBodyBytes"] as? Int == 1234)
        let timings = try #require(object["timings"] as? [String: Any])
        #expect(timings["sendMs"] as? Double == 0.25)
        #expect(timings["waitMs"] as? Double == 12)
        #expect(timings["receiveMs"] as? Double == 3)
        #expect(timings["totalMs"] as? Double == 15.25)
        #expect(object["policy"] as? String == "REJECT")
        #expect(object["retries"] as? Int == 0)
        #expect(object["bodyRewrites"] as? [Int] == [])
        #expect(object.count == 16)
        var retried = request(12)
        retried.retries = 2
        #expect(try parse(retried.json)["retries"] as? Int == 2)
        #expect(retried.description == "#12.1 GET http://example.com/a?b=\"c\" 200 rule=URL-REGEX,^http://example policy=REJECT retries=2")
        var rewritten = request(12)
        rewritten.bodyRewrites = [7, 9]
        #expect(try parse(rewritten.json)["bodyRewrites"] as? [Int] == [7, 9])
        #expect(rewritten.description.hasSuffix(" body-rewrites=7,9"))
        var noResponse = HTTPRequestRecord(connectionID: 1, requestIndex: 0, startTime: 0, method: "POST", url: "http://x/")
        noResponse.error = "upstream reset"
        let parsed = try parse(noResponse.json)
        #expect(parsed["status"] is NSNull)
        #expect((parsed["timings"] as? [String: Any])?["totalMs"] is NSNull)
        #expect(noResponse.description == "#1.0 POST http://x/ -: upstream reset")
    }

    @Test func theFileIsOneJSONObjectPerLineInOrder() throws {
        let dir = ScratchDirectory()
        let path = dir.file("flows.jsonl")
        let log = try FlowLogWriter(path: path)
        for id in 0 ..< 2000 {
            var record = connection(UInt64(id))
            // Text that must be escaped: quotes, backslashes, control characters, non-ASCII.
            record.error = id % 7 == 0 ? "said \"no\"\\\n\t\u{1}, naïve ✓" : nil
            log.write(record)
            if id % 10 == 0 { log.write(request(UInt64(id))) }
        }
        let statistics = log.close()
        #expect(statistics.linesWritten == 2200)
        #expect(statistics.linesDropped == 0)
        #expect(statistics.failure == nil)

        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2201 && lines.last == "")
        var expected = 0
        for line in lines.dropLast() {
            let object = try parse(String(line))
            if object["kind"] as? String == "connection" {
                #expect(object["connection"] as? Int == expected)
                if expected % 7 == 0 { #expect(object["error"] as? String == "said \"no\"\\\n\t\u{1}, naïve ✓") }
                expected += 1
            }
        }
        #expect(expected == 2000)
        if Tool.has("python3") {
            // An independent parser agrees, line by line.
            let output = try Tool.run(["/usr/bin/python3", "-c", "import json,sys; print(len([json.loads(l) for l in open(sys.argv[1])]))", path])
            #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "2200")
        }
    }

    @Test func appendKeepsWhatWasThere() throws {
        let dir = ScratchDirectory()
        let path = dir.file("flows.jsonl")
        let first = try FlowLogWriter(path: path)
        first.write(connection(1))
        first.close()
        let second = try FlowLogWriter(path: path, append: true)
        second.write(connection(2))
        second.close()
        let ids = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { try parse(String($0))["connection"] as? Int }
        #expect(ids == [1, 2])
        // Without append, the file starts over.
        let third = try FlowLogWriter(path: path)
        third.write(connection(3))
        third.close()
        #expect(try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count == 1)
        // Writes after close are dropped and counted.
        third.write(connection(4))
        #expect(third.statistics.linesDropped == 1)
    }

    @Test func aFailingDiskIsReported() throws {
        let log = try FlowLogWriter(path: "/dev/full")
        log.write(connection(1))
        log.write(connection(2))
        let statistics = log.close()
        #expect(statistics.linesWritten == 0)
        #expect(statistics.linesDropped == 2)
        #expect(statistics.failure?.hasPrefix("/dev/full: write failed: ENOSPC") == true, "\(statistics)")
    }

    /// A reader that stops reading (a FIFO nobody drains) stalls the writer
    /// in write(2): the queue then holds at most its bound, the rest is
    /// dropped and counted, and appending never blocks.
    @Test func aStalledWriterDropsLinesBeyondTheBound() throws {
        let dir = ScratchDirectory()
        let fifo = dir.file("pipe")
        try #require(mkfifo(fifo, 0o600) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        try #require(reader >= 0)
        defer { close(reader) }
        let writer = try BackgroundWriter(path: fifo, append: false, pendingLimit: 10_000)
        let line = [UInt8](repeating: 0x61, count: 999) + [0x0a]
        // 60 lines one at a time, each written before the next: 60,000 bytes in the 64 KiB pipe.
        for i in 1 ... 60 {
            #expect(writer.append(line))
            let deadline = ContinuousClock.now + .seconds(5)
            while writer.statistics.chunksWritten < i, ContinuousClock.now < deadline { usleep(200) }
        }
        #expect(writer.statistics.chunksWritten == 60)
        // Then 140 at once: a few fill the pipe, the writer blocks in write(2)
        // with one batch, at most 10 lines (the bound) wait, the rest are dropped.
        // At most: the 5 whole lines the pipe's 5,536 free bytes hold, the
        // blocked batch (all that was pending when the writer took it: 10 lines
        // at most), and 10 waiting. (80 assumed the first two shared the 10; a
        // writer thread scheduled between the appends takes several batches.)
        var accepted = 60
        let start = ContinuousClock.now
        for _ in 0 ..< 140 where writer.append(line) { accepted += 1 }
        #expect(ContinuousClock.now - start < .seconds(2))
        #expect(accepted > 60 && accepted <= 60 + 5 + 10 + 10, "\(accepted) accepted")
        #expect(writer.statistics.chunksDropped == 200 - accepted)

        var received = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = ContinuousClock.now + .seconds(10)
        while received < accepted * 1000, ContinuousClock.now < deadline {
            let n = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
            if n > 0 { received += n } else { usleep(1000) }
        }
        let statistics = writer.close()
        #expect(received == accepted * 1000)
        #expect(statistics.chunksWritten == accepted)
        #expect(statistics.chunksDropped == 200 - accepted)
        #expect(statistics.failure == nil)
    }

    @Test func anUnwritablePathFailsAtOnce() {
        #expect {
            _ = try FlowLogWriter(path: "/nonexistent-sluice-dir/flows.jsonl")
        } throws: { error in
            guard case let .cannotOpen(_, reason)? = error as? CaptureError else { return false }
            return reason.hasPrefix("ENOENT")
        }
    }

    @Test func calendarTimeMatchesFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var generator = SystemRandomNumberGenerator()
        // Leap days, century years and the 2038 boundary, then random instants up to year 2200.
        let seconds: [UInt64] = [0, 68_169_600, 951_782_400, 951_868_800, 4_107_542_400, 2_147_483_647, 2_147_483_648, 1_709_164_800]
            + (0 ..< 2000).map { _ in UInt64.random(in: 0 ..< 7_258_118_400, using: &generator) }
        for second in seconds {
            let text = CalendarTime.rfc3339(second * 1_000_000_000 + 999_999)
            // Foundation prints milliseconds; ours has microseconds: compare up to the seconds.
            let reference = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(second)))
            #expect(text.prefix(19) == reference.prefix(19), "\(second)")
            #expect(text.hasSuffix(".000999Z"))
        }
    }
}
