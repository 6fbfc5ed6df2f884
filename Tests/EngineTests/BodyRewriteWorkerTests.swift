import HTTP
import Rules
import Synchronization
import Sys
import Testing
@testable import Engine

/// Large bodies are rewritten on threads of their own: outcomes come back
/// by id, a long job does not hold the next, and the app's bytes wait at a
/// hole meanwhile.
@Suite struct BodyRewriteWorkerTests {
    func held(_ text: String, rewriter: BodyRewriter) throws -> HeldBody {
        var body = HeldBody(try #require(rewriter.select(.response, url: "http://a.test/")), chunked: false)
        #expect(Array(text.utf8).withUnsafeBytes { body.take($0) })
        return body
    }

    /// Polls (bounded: 10 s) until `count` outcomes are back.
    func collect(_ worker: BodyRewriteWorker, count: Int) -> [BodyRewriteWorker.Finished] {
        var finished: [BodyRewriteWorker.Finished] = []
        for _ in 0 ..< 10_000 where finished.count < count {
            finished += worker.takeFinished()
            if finished.count < count { ProcessControl.sleep(milliseconds: 1) }
        }
        return finished
    }

    @Test func outcomesComeBackByID() throws {
        let profile = try ProfileParser.parse("[Body Rewrite]\nhttp-response ^http://a\\.test/ \"v=([0-9]+)\" \"w=$1\"\n[Rule]\nFINAL,DIRECT\n",
                                              file: "t.conf", baseDirectory: "/tmp").get()
        let rewriter = BodyRewriter(profile)
        let worker = try BodyRewriteWorker()
        let first = try #require(worker.submit(try held("v=1 v=2", rewriter: rewriter)))
        let second = try #require(worker.submit(try held("nothing here", rewriter: rewriter)))
        let third = try #require(worker.submit(try held(String(repeating: "v=42\n", count: 100_000), rewriter: rewriter)))
        // Two threads: in the order they finish, which need not be the order given.
        let finished = collect(worker, count: 3).sorted { $0.id < $1.id }
        #expect(finished.map(\.id) == [first, second, third])
        guard finished.count == 3 else { return }
        #expect(try finished[0].outcome.get() == Array("w=1 w=2".utf8))
        #expect(try finished[1].outcome.get() == nil)
        #expect(try finished[2].outcome.get() == Array(String(repeating: "w=42\n", count: 100_000).utf8))
    }

    /// While a job runs long, a second thread takes the next: its outcome
    /// comes back first. No more than two threads run.
    @Test func aLongJobDoesNotHoldTheNext() throws {
        final class Gate: Sendable {
            let open = Mutex(false)
        }
        let gate = Gate()
        let worker = try BodyRewriteWorker()
        let long = try #require(worker.submit {
            // Bounded: 10 s.
            for _ in 0 ..< 10_000 where !gate.open.withLock({ $0 }) { ProcessControl.sleep(milliseconds: 1) }
            return .success(Array("long".utf8))
        })
        let short = try #require(worker.submit { .success(Array("short".utf8)) })
        let first = collect(worker, count: 1)
        #expect(first.map(\.id) == [short], "the short job came back while the long one ran")
        #expect(worker.threadCount == 2)
        gate.open.withLock { $0 = true }
        let second = collect(worker, count: 1)
        #expect(second.map(\.id) == [long])
        #expect(try second.first?.outcome.get() == Array("long".utf8))
        // Idle threads take what comes; none is added past two.
        let more = (0 ..< 4).compactMap { index in worker.submit { .success([UInt8(index)]) } }
        #expect(collect(worker, count: 4).map(\.id).sorted() == more)
        #expect(worker.threadCount == 2)
    }

    /// What is appended behind a hole waits; what fills it drains first.
    @Test func aHoleHoldsWhatComesAfterIt() {
        var queue = OutgoingBytes()
        queue.append(Array("ab".utf8))
        queue.openHole()
        queue.append(Array("ef".utf8))
        var written: [UInt8] = []
        queue.drain { bytes in written += bytes; return bytes.count }
        #expect(written == Array("ab".utf8))
        #expect(!queue.isEmpty)
        // Draining again stops at the hole.
        queue.drain { bytes in written += bytes; return bytes.count }
        #expect(written == Array("ab".utf8))
        queue.fillHole(Array("cd".utf8))
        // A short write, then the rest.
        queue.drain { bytes in written += bytes.prefix(1); return 1 }
        queue.drain { bytes in written += bytes; return bytes.count }
        #expect(written == Array("abcdef".utf8))
        #expect(queue.isEmpty)
        // A hole in an empty queue: nothing drains until it is filled.
        queue.openHole()
        #expect(!queue.isEmpty)
        queue.append(Array("y".utf8))
        queue.fillHole(Array("x".utf8))
        queue.drain { bytes in written += bytes; return bytes.count }
        #expect(written == Array("abcdefxy".utf8))
    }
}
