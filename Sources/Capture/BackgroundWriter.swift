// BackgroundWriter exists so logs (the flow log, the HAR file) are written
// off the event loop: the loop hands over whole chunks, or closures that make
// them, and a thread of ours makes them and does the write(2)s. The loop takes
// the queue's lock only to append, and the writer only to swap the queue out;
// it never holds it across disk I/O. Past `pendingLimit` bytes waiting, chunks
// are dropped and counted rather than letting a stuck disk grow memory
// without bound.
//
// With a `Framing`, the file is one document that stays complete on disk at
// every step (HAR is a single JSON object, so it cannot simply be appended
// to): the head is written at once, and each batch of chunks is written over
// the old tail, followed by the tail again. A reader that opens the file
// mid-run, or after Sluice was killed, finds a whole document.
internal import Sys
import Synchronization

final class BackgroundWriter {
    struct Statistics: Sendable, Equatable {
        var chunksWritten = 0
        var bytesWritten = 0
        var chunksDropped = 0
        var failure: String?
    }

    /// The frame of a document: `head`, then the chunks, `first` before the
    /// first and `separator` before each other, then the tail.
    struct Framing: Sendable {
        var head: [UInt8]
        var first: [UInt8]
        var separator: [UInt8]
        var tails: Tails
    }

    /// A document's end, with chunks and without.
    struct Tails: Sendable {
        var empty: [UInt8]
        var nonEmpty: [UInt8]
    }

    /// Bytes to write, or what makes them on the writer's thread (a HAR
    /// entry's JSON, whose bodies would cost the loop milliseconds to escape).
    enum Chunk: Sendable {
        case bytes([UInt8])
        case made(@Sendable () -> [UInt8])
    }

    let path: String
    private let shared: Shared
    private var thread: WorkerThread?

    init(path: String, append: Bool, pendingLimit: Int = 8 << 20, framing: Framing? = nil) throws(CaptureError) {
        let file: FileDescriptor
        do { file = try FileDescriptor.create(path, append: append && framing == nil) } catch {
            throw .cannotOpen(path: path, reason: error.description)
        }
        let wake: EventFD
        do { wake = try EventFD() } catch { throw .system("eventfd", error) }
        self.path = path
        let shared = Shared(file: file, wake: wake, pendingLimit: pendingLimit, path: path, framing: framing)
        self.shared = shared
        if let framing {
            do { try shared.write(framing.head + framing.tails.empty, at: 0) } catch {
                throw .writeFailed(path: path, reason: "\(error)")
            }
        }
        do { thread = try WorkerThread { shared.run() } } catch { throw .system("pthread_create", error) }
    }

    deinit { close() }

    /// Queues `bytes` to be written after everything queued before. Returns
    /// false when the chunk was dropped (too much pending, or closed).
    @discardableResult
    func append(_ bytes: [UInt8]) -> Bool {
        enqueue(.bytes(bytes), size: bytes.count)
    }

    /// Queues the chunk `make` returns, made on the writer's thread;
    /// `estimatedBytes` counts against the pending limit meanwhile.
    @discardableResult
    func append(estimatedBytes: Int, make: @escaping @Sendable () -> [UInt8]) -> Bool {
        enqueue(.made(make), size: estimatedBytes)
    }

    private func enqueue(_ chunk: Chunk, size: Int) -> Bool {
        let (accepted, wasEmpty) = shared.pending.withLock { pending -> (Bool, Bool) in
            guard !pending.closing, pending.bytes + size <= shared.pendingLimit else { return (false, false) }
            let wasEmpty = pending.chunks.isEmpty
            pending.chunks.append(chunk)
            pending.bytes += size
            return (true, wasEmpty)
        }
        if !accepted {
            shared.statistics.withLock { $0.chunksDropped += 1 }
            return false
        }
        // The writer drains everything on each wake-up, so only the first
        // chunk into an empty queue needs to wake it.
        if wasEmpty { _ = try? shared.wake.signal() }
        return true
    }

    var statistics: Statistics { shared.statistics.withLock { $0 } }

    /// Writes what is queued, closes the file and joins the thread. With a
    /// framing, `tails` (when given) replace its tails for good: a closing
    /// remark. Idempotent.
    @discardableResult
    func close(tails: Tails? = nil) -> Statistics {
        let first = shared.pending.withLock { pending -> Bool in
            defer { pending.closing = true }
            if !pending.closing { pending.finalTails = tails }
            return !pending.closing
        }
        if first {
            _ = try? shared.wake.signal()
            thread.take()?.join()
        }
        return statistics
    }

    final class Shared: Sendable {
        struct Pending {
            var chunks: [Chunk] = []
            var bytes = 0
            var closing = false
            var finalTails: Tails?
        }

        let file: FileDescriptor
        let wake: EventFD
        let pendingLimit: Int
        let path: String
        let framing: Framing?
        let pending = Mutex(Pending())
        let statistics = Mutex(Statistics())

        init(file: consuming FileDescriptor, wake: consuming EventFD, pendingLimit: Int, path: String, framing: Framing?) {
            self.file = file
            self.wake = wake
            self.pendingLimit = pendingLimit
            self.path = path
            self.framing = framing
        }

        func run() {
            var failed = false
            var batch: [UInt8] = []
            // With a framing: where the chunks end (the tail starts), and whether one was written.
            var end = framing?.head.count ?? 0
            var any = false
            while true {
                let (chunks, closing, finalTails) = pending.withLock { pending -> ([Chunk], Bool, Tails?) in
                    let chunks = pending.chunks
                    pending.chunks = []
                    pending.bytes = 0
                    return (chunks, pending.closing, pending.finalTails)
                }
                if chunks.isEmpty {
                    guard closing else {
                        _ = try? wake.wait(timeoutMilliseconds: 1000)
                        _ = try? wake.drain()
                        continue
                    }
                    if framing != nil, let finalTails, !failed {
                        let finalTail = any ? finalTails.nonEmpty : finalTails.empty
                        do {
                            try write(finalTail, at: end)
                            try file.truncate(to: end + finalTail.count)
                        } catch {
                            fail(error, dropping: 0)
                        }
                    }
                    break
                }
                if failed {
                    statistics.withLock { $0.chunksDropped += chunks.count }
                    continue
                }
                batch.removeAll(keepingCapacity: true)
                for chunk in chunks {
                    if let framing { batch += any ? framing.separator : framing.first }
                    switch chunk {
                    case let .bytes(bytes): batch += bytes
                    case let .made(make): batch += make()
                    }
                    any = true
                }
                let body = batch.count
                if let framing { batch += framing.tails.nonEmpty }
                do {
                    if framing != nil {
                        try write(batch, at: end)
                        end += body
                    } else {
                        try batch.withUnsafeBytes { try file.writeAll($0) }
                    }
                    statistics.withLock {
                        $0.chunksWritten += chunks.count
                        $0.bytesWritten += body
                    }
                } catch {
                    failed = true
                    fail(error, dropping: chunks.count)
                }
            }
        }

        func write(_ bytes: [UInt8], at offset: Int) throws {
            try bytes.withUnsafeBytes { try file.writeAll($0, at: offset) }
        }

        private func fail(_ error: any Error, dropping count: Int) {
            let message = CaptureError.writeFailed(path: path, reason: "\(error)").description
            statistics.withLock {
                if $0.failure == nil { $0.failure = message }
                $0.chunksDropped += count
            }
        }
    }
}
