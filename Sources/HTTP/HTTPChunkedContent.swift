/// The data of a chunked body without its framing (RFC 9112 §7.1), for
/// records that show a body as its sender meant it: HAR's `content` and
/// `postData`. The engine forwards a body's bytes as they came (chunk-size
/// lines and all) and hands them here as well.
package struct HTTPChunkedContent: Sendable {
    private var reader = ChunkedReader()
    /// Data bytes seen, all of them (what is kept may be fewer).
    package private(set) var count = 0

    package init() {}

    /// A body's next bytes on the wire, kept for a record until `kept`
    /// holds `limit` bytes: through `content` when the body is chunked
    /// (its data alone), else as they came.
    package static func keep(_ bytes: UnsafeRawBufferPointer, content: inout HTTPChunkedContent?, into kept: inout [UInt8], limit: Int) {
        if content != nil {
            content!.take(bytes, into: &kept, limit: limit)
        } else if kept.count < limit {
            kept += bytes.prefix(limit - kept.count)
        }
    }

    /// Appends the chunk data in `bytes` (the body's next bytes on the wire)
    /// to `kept`, until `kept` holds `limit` bytes; counts all of it. The
    /// parser that framed the message read the same bytes, so they are well
    /// formed; should they not be, collecting stops there.
    package mutating func take(_ bytes: UnsafeRawBufferPointer, into kept: inout [UInt8], limit: Int) {
        var reader = self.reader
        var data = 0
        var offset = 0
        // Bounded: every pass consumes bytes, or stops.
        while offset < bytes.count {
            let input = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            guard let step = try? reader.advance(input, limits: HTTPParserLimits(), data: { range in
                data += range.count
                let room = limit - kept.count
                if room > 0 { kept += input[range.lowerBound ..< range.lowerBound + min(room, range.count)] }
            }) else { break }
            offset += step.consumed
            if step.done || step.consumed == 0 { break }
        }
        self.reader = reader
        count += data
    }
}
