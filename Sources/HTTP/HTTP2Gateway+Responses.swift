/// The responses' side of `HTTP2Gateway`: the session's HTTP/1.1 responses,
/// in request order, as HEADERS and DATA frames on their streams (RFC 9113
/// §8.1), DATA held to the app's windows (§6.9).
extension HTTP2Gateway {
    /// How many response bytes `respond` takes now.
    public var responseRoom: Int { max(0, limits.responseBufferLimit - bufferedResponseBytes) }

    /// The session's next response bytes (any piece of them). Returns how
    /// many were taken. Throws when they are not HTTP/1.1 a stream can carry
    /// (an upgrade, a response with no request): the connection ends.
    public mutating func respond(_ bytes: UnsafeRawBufferPointer) throws(HTTP2ConnectionError) -> Int {
        let n = min(bytes.count, responseRoom)
        let input = UnsafeRawBufferPointer(rebasing: bytes[0 ..< n])
        var offset = 0
        do throws(HTTP2ConnectionError) {
            // Bounded: every step consumes bytes, or ends a message that has none left.
            for _ in 0 ..< 4096 {
                let rest = UnsafeRawBufferPointer(rebasing: input[offset...])
                let step: HTTPResponseStep?
                do { step = try responses.parse(rest) } catch {
                    throw HTTP2ConnectionError(.internalError, "a response Sluice cannot read: \(error)")
                }
                guard let step else { break }
                switch step {
                case let .head(head, consumed):
                    offset += consumed
                    try responseHead(head)
                case let .body(consumed):
                    try responseBody(UnsafeRawBufferPointer(rebasing: rest[0 ..< consumed]))
                    offset += consumed
                case let .end(consumed):
                    try responseBody(UnsafeRawBufferPointer(rebasing: rest[0 ..< consumed]))
                    offset += consumed
                    endResponse()
                case .upgraded:
                    throw HTTP2ConnectionError(.internalError, "an HTTP/1.1 upgrade, which HTTP/2 cannot carry")
                }
            }
        } catch {
            goAway(error.code, debug: error.reason)
            throw error
        }
        flushResponses()
        return n
    }

    private mutating func responseHead(_ head: HTTPResponseHead) throws(HTTP2ConnectionError) {
        guard let id = answering.first else { throw HTTP2ConnectionError(.internalError, "a response with no request") }
        if head.isInformational {
            // §8.1: interim responses (100, 103) are HEADERS of their own; 101 has no HTTP/2 form.
            guard head.status != 101 else { throw HTTP2ConnectionError(.internalError, "101 Switching Protocols") }
            if streams[id]?.cancelled == false { sendHeaders(id, Self.responseFields(head), endStream: false) }
            return
        }
        dechunker = head.isChunked ? ChunkedReader() : nil
        dechunker?.keepsTrailers = true
        if streams[id]?.cancelled == false {
            sendHeaders(id, Self.responseFields(head), endStream: false)
        }
    }

    /// §8.3.2 and §8.2.2: :status, then the fields in lowercase, less those of
    /// the HTTP/1.1 connection (and any the Connection field names).
    static func responseFields(_ head: HTTPResponseHead) -> [HPACKHeader] {
        let named = Set(head.headers.tokens("Connection").map { $0.lowercased() })
        var fields = [HPACKHeader(":status", String(head.status))]
        for field in head.headers {
            let name = field.name.lowercased()
            guard !connectionSpecific.contains(name), !named.contains(name) else { continue }
            // HPACK's strings hold one octet per character; the head's values are
            // the octets the origin sent, read as UTF-8.
            fields.append(HPACKHeader(name, HPACKHeader.string(latin1: Array(field.value.utf8))))
        }
        return fields
    }

    private mutating func responseBody(_ bytes: UnsafeRawBufferPointer) throws(HTTP2ConnectionError) {
        guard !bytes.isEmpty, let id = answering.first else { return }
        if var reader = dechunker {
            var data: [UInt8] = []
            do {
                _ = try reader.advance(bytes, limits: HTTPParserLimits(), data: { data += bytes[$0] })
            } catch {
                throw HTTP2ConnectionError(.internalError, "a chunked response Sluice cannot read: \(error)")
            }
            dechunker = reader
            queueData(id, data)
        } else {
            queueData(id, Array(bytes))
        }
    }

    private mutating func queueData(_ id: UInt32, _ data: [UInt8]) {
        guard !data.isEmpty, var stream = streams[id], !stream.cancelled else { return }
        stream.responseData += data
        bufferedResponseBytes += data.count
        streams[id] = stream
        if !sending.contains(id) { sending.append(id) }
    }

    private mutating func endResponse() {
        let id = answering.removeFirst()
        let trailers = dechunker.map { Self.trailerFields($0.trailerSection) } ?? []
        dechunker = nil
        guard var stream = streams[id] else { return }
        if stream.cancelled {
            streams[id] = nil
            return
        }
        stream.responseEnded = true
        stream.responseTrailers = trailers
        streams[id] = stream
        if !sending.contains(id) { sending.append(id) }
    }

    /// DATA as far as the windows allow, oldest response first; END_STREAM
    /// with the last of each. A stream whose both sides ended is forgotten.
    mutating func flushResponses() {
        var index = 0
        // Bounded: each pass sends on one stream or moves past it.
        while index < sending.count {
            let id = sending[index]
            guard var stream = streams[id] else {
                sending.remove(at: index)
                continue
            }
            while !stream.responseData.isEmpty, sendWindow > 0, stream.sendWindow > 0 {
                let n = min(stream.responseData.count, sendWindow, stream.sendWindow, peerMaximumFrameSize)
                let last = n == stream.responseData.count && stream.responseEnded && stream.responseTrailers.isEmpty
                output += HTTP2Frame(type: .data, flags: last ? HTTP2Flags.endStream : 0, streamID: id,
                                     payload: Array(stream.responseData[0 ..< n])).encoded()
                stream.responseData.removeFirst(n)
                sendWindow -= n
                stream.sendWindow -= n
                bufferedResponseBytes -= n
                if last { stream.responseFinished = true }
            }
            if stream.responseData.isEmpty, stream.responseEnded, !stream.responseFinished {
                if stream.responseTrailers.isEmpty {
                    // Everything went with earlier frames: an empty DATA ends the stream.
                    output += HTTP2Frame(type: .data, flags: HTTP2Flags.endStream, streamID: id).encoded()
                } else {
                    // §8.1: the trailers end it (gRPC's status is there).
                    sendHeaders(id, stream.responseTrailers, endStream: true)
                }
                stream.responseFinished = true
            }
            if stream.responseFinished || stream.cancelled, stream.responseData.isEmpty {
                // The response is complete (or dropped). The stream is kept only
                // while its request body is still going on to the session.
                sending.remove(at: index)
                if currentRequest == id, !stream.appEnded {
                    streams[id] = stream
                } else {
                    streams[id] = nil
                }
                continue
            }
            streams[id] = stream
            index += 1
        }
    }

    /// HEADERS (and CONTINUATIONs past the app's frame size) for `fields`.
    mutating func sendHeaders(_ id: UInt32, _ fields: [HPACKHeader], endStream: Bool) {
        output += HTTP2Frame.headerFrames(streamID: id, block: encoder.encode(fields), maximumFrameSize: peerMaximumFrameSize, endStream: endStream)
    }

    /// The session gives the oldest stream awaiting a response none (a rule
    /// refused its request, or the upstream failed in the middle of its
    /// response): RST_STREAM with `code`, and the connection goes on. What
    /// part of a response the session wrote for it is forgotten. A request
    /// whose body is still going on is reset when the body ends: the
    /// session reads a refused request's body to its end, and HTTP/1.1
    /// cannot cut a body of fixed length short.
    public mutating func resetNextResponse(_ code: HTTP2ErrorCode) {
        guard let id = skipNextResponse(), var stream = streams[id] else { return }
        guard !stream.cancelled else {
            // The app reset it already; only the response it waited for kept it.
            streams[id] = nil
            return
        }
        if currentRequest == id {
            stream.pendingReset = code
            streams[id] = stream
        } else {
            resetStream(id, code)
        }
        flushResponses()
    }

    /// The session gives the oldest stream awaiting a response none, and
    /// nothing else either (REJECT-DROP): the stream stays open, its request
    /// body still read, until the app gives up on it (RST_STREAM). The other
    /// streams go on.
    public mutating func leaveNextResponseUnanswered() {
        guard let id = skipNextResponse(), let stream = streams[id] else { return }
        if stream.cancelled { streams[id] = nil }
        flushResponses()
    }

    /// The session's upstream closed, and with it ended a response whose
    /// body runs to the close (no length, RFC 9112 §6.3): its stream ends
    /// after the last byte (END_STREAM), and the responses still to come
    /// are read from their heads, as they come on a new connection.
    /// (HTTP/1.1 tells the app such a body's end only by closing its
    /// connection; HTTP/2 ends the stream, and the connection goes on.)
    public mutating func endResponseAtClose() {
        let step = try? responses.finish()
        responses.startAfterClose()
        if case .end? = step, !answering.isEmpty { endResponse() }
        flushResponses()
    }

    /// Takes the oldest stream off the list of those awaiting a response,
    /// with whatever of its response was read or waits for the windows.
    private mutating func skipNextResponse() -> UInt32? {
        guard !answering.isEmpty else { return nil }
        let id = answering.removeFirst()
        responses.skipResponse()
        dechunker = nil
        if var stream = streams[id] {
            bufferedResponseBytes -= stream.responseData.count
            stream.responseData = []
            stream.responseEnded = false
            streams[id] = stream
        }
        sending.removeAll { $0 == id }
        return id
    }

    /// A chunked body's trailer section (lines ending in CR LF, checked by
    /// the reader) as HTTP/2 fields: lowercase names, values trimmed, none
    /// of those that belong to the HTTP/1.1 connection.
    static func trailerFields(_ section: [UInt8]) -> [HPACKHeader] {
        var fields: [HPACKHeader] = []
        for line in section.split(separator: 0x0A) {
            let text = line.last == 0x0D ? line.dropLast() : line
            guard let colon = text.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = String(decoding: text[text.startIndex ..< colon], as: UTF8.self).lowercased()
            let value = HTTPSyntax.trimmed(Substring(String(decoding: text[(colon + 1)...], as: UTF8.self)))
            guard !connectionSpecific.contains(name), name != "te" else { continue }
            fields.append(HPACKHeader(name, HPACKHeader.string(latin1: Array(value.utf8))))
        }
        return fields
    }

    /// An answer Sluice gives itself, without the session (CONNECT, which
    /// has no HTTP/1.1 form here).
    mutating func respondLocally(_ id: UInt32, status: Int) {
        sendHeaders(id, [HPACKHeader(":status", String(status)), HPACKHeader("content-length", "0")], endStream: true)
    }
}
