/// Finds the end of a head in a stream that arrives in pieces, buffering the
/// part seen so far (bounded by the limits). A head that arrives whole is
/// parsed straight from the input, without a copy.
struct HeadReader: Sendable {
    private var buffer: [UInt8] = []
    /// Bytes of the current line so far, without its LF.
    private var lineLength = 0
    private var lastByte: UInt8 = 0
    private var inStartLine = true
    /// Empty lines before a request line are ignored (RFC 9112 §2.2): some
    /// clients send an extra CRLF after a POST body.
    private var skippingBlankLines = true
    private var total = 0
    /// Where the head `read` last returned lies in that call's input, when
    /// all of it was there; nil when part of it came in an earlier input.
    private(set) var lastHeadInInput: Range<Int>?

    /// Nothing of a head has been seen (blank lines do not count).
    var isEmpty: Bool { skippingBlankLines }

    mutating func reset() {
        buffer.removeAll()
        lineLength = 0
        lastByte = 0
        inStartLine = true
        skippingBlankLines = true
        total = 0
    }

    /// Scans `input`. When the head's empty line is in it, calls `parse` on
    /// the whole head (start line through the empty line) and returns its
    /// value with the bytes of `input` taken; otherwise buffers and returns nil.
    mutating func read<Head>(
        _ input: UnsafeRawBufferPointer, limits: HTTPParserLimits,
        parse: (UnsafeRawBufferPointer) throws(HTTPParseError) -> Head
    ) throws(HTTPParseError) -> (Head, consumed: Int)? {
        var start = 0
        var end: Int? = nil
        var i = 0
        while i < input.count {
            let byte = input[i]
            i += 1
            total += 1
            if total > limits.maxHeadBytes { throw .headTooLarge }
            if skippingBlankLines {
                if byte == 0x0D || byte == 0x0A {
                    start = i
                    continue
                }
                skippingBlankLines = false
            }
            if byte == 0x0A {
                if lineLength == 0 || (lineLength == 1 && lastByte == 0x0D) {
                    end = i
                    break
                }
                inStartLine = false
                lineLength = 0
            } else {
                lineLength += 1
                // The limit is on the line's content; its CR does not count.
                if inStartLine && lineLength > limits.maxStartLineBytes
                    && !(lineLength == limits.maxStartLineBytes + 1 && byte == 0x0D)
                {
                    throw .startLineTooLong
                }
            }
            lastByte = byte
        }
        guard let end else {
            if start < input.count { buffer.append(contentsOf: input.window(start, input.count - start)) }
            return nil
        }
        let head: Head
        if buffer.isEmpty {
            head = try parse(input.window(start, end - start))
            lastHeadInInput = start ..< end
        } else {
            lastHeadInInput = nil
            buffer.append(contentsOf: input.window(start, end - start))
            // withUnsafeBytes rethrows untyped errors; a Result keeps the type.
            let result: Result<Head, HTTPParseError> = buffer.withUnsafeBytes { bytes in
                do throws(HTTPParseError) { return .success(try parse(bytes)) } catch { return .failure(error) }
            }
            head = try result.get()
        }
        reset()
        return (head, end)
    }
}

extension UnsafeRawBufferPointer {
    /// A rebased view of `count` bytes from `offset` (as Wire's `sub`, kept
    /// here so the HTTP layer stands without Wire).
    @inline(__always)
    func window(_ offset: Int, _ count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[offset ..< offset + count])
    }
}
