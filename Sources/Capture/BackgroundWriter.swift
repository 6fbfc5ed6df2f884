// BackgroundWriter exists so logs (the flow log now, HAR later) are written
// off the event loop: the loop hands over whole lines, a thread of ours does
// the write(2)s. The loop takes the queue's lock only to append, and the
// writer only to swap the queue out; it never holds it across disk I/O. Past
// `pendingLimit` bytes waiting, lines are dropped and counted rather than
// letting a stuck disk grow memory without bound.
internal import Sys
import Synchronization

final class BackgroundWriter {
    struct Statistics: Sendable, Equatable {
        var chunksWritten = 0
        var bytesWritten = 0
        var chunksDropped = 0
        var failure: String?
    }

    let path: String
    private let shared: Shared
    private var thread: WorkerThread?

    init(path: String, append: Bool, pendingLimit: Int = 8 << 20) throws(CaptureError) {
        let file: FileDescriptor
        do { file = try FileDescriptor.create(path, append: append) } catch {
            throw .cannotOpen(path: path, reason: error.description)
        }
        let wake: EventFD
        do { wake = try EventFD() } catch { throw .system("eventfd", error) }
        self.path = path
        let shared = Shared(file: file, wake: wake, pendingLimit: pendingLimit, path: path)
        self.shared = shared
        do { thread = try WorkerThread { shared.run() } } catch { throw .system("pthread_create", error) }
    }

    deinit { close() }

    /// Queues `bytes` to be written after everything queued before. Returns
    /// false when the chunk was dropped (too much pending, or closed).
    @discardableResult
    func append(_ bytes: [UInt8]) -> Bool {
        let (accepted, wasEmpty) = shared.pending.withLock { pending -> (Bool, Bool) in
            guard !pending.closing, pending.bytes + bytes.count <= shared.pendingLimit else { return (false, false) }
            let wasEmpty = pending.chunks.isEmpty
            pending.chunks.append(bytes)
            pending.bytes += bytes.count
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

    /// Writes what is queued, closes the file and joins the thread. Idempotent.
    @discardableResult
    func close() -> Statistics {
        let first = shared.pending.withLock { pending -> Bool in
            defer { pending.closing = true }
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
            var chunks: [[UInt8]] = []
            var bytes = 0
            var closing = false
        }

        let file: FileDescriptor
        let wake: EventFD
        let pendingLimit: Int
        let path: String
        let pending = Mutex(Pending())
        let statistics = Mutex(Statistics())

        init(file: consuming FileDescriptor, wake: consuming EventFD, pendingLimit: Int, path: String) {
            self.file = file
            self.wake = wake
            self.pendingLimit = pendingLimit
            self.path = path
        }

        func run() {
            var failed = false
            var batch: [UInt8] = []
            while true {
                let (chunks, closing) = pending.withLock { pending -> ([[UInt8]], Bool) in
                    let chunks = pending.chunks
                    pending.chunks = []
                    pending.bytes = 0
                    return (chunks, pending.closing)
                }
                if chunks.isEmpty {
                    if closing { break }
                    _ = try? wake.wait(timeoutMilliseconds: 1000)
                    _ = try? wake.drain()
                    continue
                }
                batch.removeAll(keepingCapacity: true)
                for chunk in chunks { batch.append(contentsOf: chunk) }
                if failed {
                    statistics.withLock { $0.chunksDropped += chunks.count }
                    continue
                }
                do {
                    try batch.withUnsafeBytes { try file.writeAll($0) }
                    statistics.withLock {
                        $0.chunksWritten += chunks.count
                        $0.bytesWritten += batch.count
                    }
                } catch {
                    failed = true
                    let message = CaptureError.writeFailed(path: path, reason: "\(error)").description
                    statistics.withLock {
                        $0.failure = message
                        $0.chunksDropped += chunks.count
                    }
                }
            }
        }
    }
}
