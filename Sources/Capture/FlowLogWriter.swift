// FlowLogWriter is what the engine holds for `--flow-log FILE`: one JSON line
// per finished connection and per HTTP request. The line is built on the
// caller's thread (once per connection or request, not per packet) and
// written by a BackgroundWriter, so the event loop never waits for the disk.
internal import Sys

public final class FlowLogWriter {
    public struct Statistics: Sendable, Equatable, CustomStringConvertible {
        public var linesWritten = 0
        /// Lines lost because too much was pending (a stalled disk) or after a write error.
        public var linesDropped = 0
        public var failure: String?
        public var description: String {
            "\(linesWritten) lines written, \(linesDropped) dropped" + (failure.map { "; \($0)" } ?? "")
        }
    }

    public let path: String
    private let writer: BackgroundWriter

    /// Creates `path` (or appends to it when `append`); fails at once when it cannot.
    public init(path: String, append: Bool = false) throws(CaptureError) {
        self.path = path
        writer = try BackgroundWriter(path: path, append: append)
    }

    deinit { close() }

    public func write(_ record: FlowRecord) { writeLine(record.json) }

    public func write(_ record: HTTPRequestRecord) { writeLine(record.json) }

    private func writeLine(_ json: String) {
        var line = Array(json.utf8)
        line.append(UInt8(ascii: "\n"))
        writer.append(line)
    }

    public var statistics: Statistics {
        let inner = writer.statistics
        return Statistics(linesWritten: inner.chunksWritten, linesDropped: inner.chunksDropped, failure: inner.failure)
    }

    /// Writes every line still queued, closes the file and joins the writer. Idempotent.
    @discardableResult
    public func close() -> Statistics {
        writer.close()
        return statistics
    }
}
