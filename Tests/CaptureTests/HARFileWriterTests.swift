import Foundation
import Glibc
import HTTP
import Synchronization
import Testing
@testable import Capture

/// `--har`'s writer: entries reach the file as they come, and the file is a
/// whole HAR document after every write, as it is at the end.
@Suite struct HARFileWriterTests {
    func entry(_ n: Int, body: String = "hello") -> HAREntry {
        HAREntry(startedDateTime: "2026-12-01T10:00:0\(n % 10).000Z",
                 request: HARRequest(method: "GET", url: "http://origin.test/\(n)", httpVersion: "HTTP/1.1", headers: [],
                                     queryString: [], headersSize: -1, bodySize: 0),
                 response: HARResponse(status: 200, statusText: "OK",
                                       content: HARContent(size: body.utf8.count, mimeType: "text/plain", body: HARBody(text: body)),
                                       redirectURL: "", headersSize: -1, bodySize: body.utf8.count),
                 timings: HARTimings(send: 0, wait: 1, receive: 1), connection: "\(n)")
    }

    /// Waits (bounded) until the writer has written `count` entries.
    func waitWritten(_ writer: HARFileWriter, _ count: Int) -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while writer.statistics.entriesWritten < count, ContinuousClock.now < deadline { usleep(500) }
        return writer.statistics.entriesWritten >= count
    }

    func entryURLs(_ path: String) throws -> [String] {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let entries = try #require((root["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        return entries.compactMap { ($0["request"] as? [String: Any])?["url"] as? String }
    }

    @Test func theFileIsAWholeDocumentAfterEveryWrite() throws {
        let dir = ScratchDirectory()
        let path = dir.file("flows.har")
        let writer = try HARFileWriter(path: path, creatorVersion: "0.1")
        // An empty archive from the start.
        #expect(try entryURLs(path) == [])
        var written: [HAREntry] = []
        for n in 1 ... 5 {
            let e = entry(n, body: String(repeating: "é\"\n", count: n * 100))
            written.append(e)
            #expect(writer.write(e))
            try #require(waitWritten(writer, n))
            #expect(try entryURLs(path) == (1 ... n).map { "http://origin.test/\($0)" })
        }
        let statistics = writer.close()
        #expect(statistics == HARFileWriter.Statistics(entriesWritten: 5, entriesDropped: 0, failure: nil))
        // What it wrote, byte for byte, is the pretty document of the same entries.
        let expected = HARLog(creatorVersion: "0.1", entries: written).json(pretty: true) + "\n"
        #expect(String(decoding: fileBytes(path), as: UTF8.self) == expected)
    }

    /// An entry made on the writer's thread (the engine's way: its bodies
    /// decoded and escaped there, not on the loop) is written as one given whole.
    @Test func anEntryMadeOnTheWritersThreadIsWrittenTheSame() throws {
        let dir = ScratchDirectory()
        let made = dir.file("made.har"), whole = dir.file("whole.har")
        let writer = try HARFileWriter(path: made, creatorVersion: "0.1")
        let loop = pthread_self()
        let madeOn = Mutex<pthread_t?>(nil)
        let e = entry(7, body: String(repeating: "ü\"\n", count: 300))
        #expect(writer.write(estimatedBodyBytes: 900) {
            madeOn.withLock { $0 = pthread_self() }
            return e
        })
        try #require(waitWritten(writer, 1))
        _ = writer.close()
        #expect(madeOn.withLock { $0 }.map { pthread_equal($0, loop) == 0 } == true, "made on another thread")
        let reference = try HARFileWriter(path: whole, creatorVersion: "0.1")
        #expect(reference.write(e))
        _ = reference.close()
        #expect(fileBytes(made) == fileBytes(whole))
    }

    @Test func aClosingCommentReplacesTheTail() throws {
        let dir = ScratchDirectory()
        for count in [0, 2] {
            let path = dir.file("c\(count).har")
            let writer = try HARFileWriter(path: path, creatorVersion: "0.1")
            let entries = (0 ..< count).map { entry($0) }
            for e in entries { writer.write(e) }
            writer.close(comment: "3 exchanges left out")
            let expected = HARLog(creatorVersion: "0.1", entries: entries, comment: "3 exchanges left out").json(pretty: true) + "\n"
            #expect(String(decoding: fileBytes(path), as: UTF8.self) == expected)
        }
    }

    @Test func entriesBeyondThePendingBoundAreDroppedAndTheFileStaysWhole() throws {
        let dir = ScratchDirectory()
        let path = dir.file("small.har")
        // Every entry is estimated at 2 KiB or more: a 1,000-byte bound takes none.
        let writer = try HARFileWriter(path: path, creatorVersion: "0.1", pendingLimit: 1000)
        #expect(!writer.write(entry(1)))
        #expect(!writer.write(entry(2)))
        let statistics = writer.close()
        #expect(statistics.entriesDropped == 2 && statistics.entriesWritten == 0)
        #expect(try entryURLs(path) == [])
    }

    @Test func aFailingDiskIsReportedAndAnUnwritablePathFailsAtOnce() throws {
        #expect(throws: CaptureError.self) { _ = try HARFileWriter(path: "/nonexistent-sluice-dir/flows.har", creatorVersion: "0.1") }
        // /dev/full refuses even the empty archive.
        #expect { _ = try HARFileWriter(path: "/dev/full", creatorVersion: "0.1") } throws: { error in
            "\(error)".contains("/dev/full: write failed: ENOSPC")
        }
    }
}
