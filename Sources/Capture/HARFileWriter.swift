// HARFileWriter is what the engine holds for `--har FILE`: each HTTP
// exchange goes to disk as it finishes, into one HAR 1.2 document that is
// complete at every step (the tail is rewritten after each batch; see
// BackgroundWriter's framing). So memory holds only what waits for the
// writer, not every exchange of the run with its bodies, and a HAR file is
// there to open while Sluice runs or after it was killed. The entry's JSON is
// made on the writer's thread: escaping a megabyte body is no work for the
// event loop.
public import HTTP

public final class HARFileWriter {
    public struct Statistics: Sendable, Equatable {
        public var entriesWritten = 0
        /// Entries lost because too much was pending (the disk fell behind) or after a write error.
        public var entriesDropped = 0
        public var failure: String?
    }

    public let path: String
    private let log: HARLog
    private let writer: BackgroundWriter

    /// Creates `path` with an empty archive at once, so that a path that
    /// cannot be written stops Sluice before anything runs. `pendingLimit`
    /// bounds the bytes of entries waiting for the writer.
    public init(path: String, creatorVersion: String, pendingLimit: Int = 64 << 20) throws(CaptureError) {
        self.path = path
        log = HARLog(creatorVersion: creatorVersion)
        let framing = BackgroundWriter.Framing(head: log.streamHead(), first: HARLog.streamSeparator(first: true),
                                               separator: HARLog.streamSeparator(first: false),
                                               tails: log.streamTails)
        writer = try BackgroundWriter(path: path, append: false, pendingLimit: pendingLimit, framing: framing)
    }

    deinit { close() }

    /// Queues one entry; false when it was dropped (see `Statistics.entriesDropped`).
    @discardableResult
    public func write(_ entry: HAREntry) -> Bool {
        let bodies = (entry.request.postData?.body.text.utf8.count ?? 0) + (entry.response.content.body?.text.utf8.count ?? 0)
        return writer.append(estimatedBytes: 2048 + bodies) { entry.streamed() }
    }

    /// Queues an entry that `make` builds on the writer's thread (decoding
    /// and escaping its bodies there, not on the event loop), as
    /// `write(_:)` does; `estimatedBodyBytes` bounds what waits.
    @discardableResult
    public func write(estimatedBodyBytes: Int, make: @escaping @Sendable () -> HAREntry) -> Bool {
        writer.append(estimatedBytes: 2048 + estimatedBodyBytes) { make().streamed() }
    }

    public var statistics: Statistics {
        let inner = writer.statistics
        return Statistics(entriesWritten: inner.chunksWritten, entriesDropped: inner.chunksDropped, failure: inner.failure)
    }

    /// Writes every entry still queued and closes the file, with `comment`
    /// as the archive's comment when given. Idempotent.
    @discardableResult
    public func close(comment: String? = nil) -> Statistics {
        var closing = log
        closing.comment = comment
        writer.close(tails: comment == nil ? nil : closing.streamTails)
        return statistics
    }
}

extension HARLog {
    var streamTails: BackgroundWriter.Tails {
        BackgroundWriter.Tails(empty: streamTail(empty: true), nonEmpty: streamTail(empty: false))
    }
}
