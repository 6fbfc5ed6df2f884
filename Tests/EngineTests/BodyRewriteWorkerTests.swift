import HTTP
import Rules
import Sys
import Testing
@testable import Engine

/// Large bodies are rewritten on a thread of their own: outcomes come back
/// by id, in order, and the app's bytes wait at a hole meanwhile.
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

    @Test func outcomesComeBackByIDInOrder() throws {
        let profile = try ProfileParser.parse("[Body Rewrite]\nhttp-response ^http://a\\.test/ \"v=([0-9]+)\" \"w=$1\"\n[Rule]\nFINAL,DIRECT\n",
                                              file: "t.conf", baseDirectory: "/tmp").get()
        let rewriter = BodyRewriter(profile)
        let worker = try BodyRewriteWorker()
        let first = try #require(worker.submit(try held("v=1 v=2", rewriter: rewriter)))
        let second = try #require(worker.submit(try held("nothing here", rewriter: rewriter)))
        let third = try #require(worker.submit(try held(String(repeating: "v=42\n", count: 100_000), rewriter: rewriter)))
        let finished = collect(worker, count: 3)
        #expect(finished.map(\.id) == [first, second, third])
        guard finished.count == 3 else { return }
        #expect(try finished[0].outcome.get() == Array("w=1 w=2".utf8))
        #expect(try finished[1].outcome.get() == nil)
        #expect(try finished[2].outcome.get() == Array(String(repeating: "w=42\n", count: 100_000).utf8))
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
