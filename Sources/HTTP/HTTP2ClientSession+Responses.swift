/// The origin's side of `HTTP2ClientSession`: its frames, and each
/// stream's response as HTTP/1.1 bytes for the session (RFC 9113 §8.1).
extension HTTP2ClientSession {
    /// Bytes from the origin (the plaintext inside TLS). A thrown error ends
    /// the connection: what it says is the request's failure.
    package mutating func receive(_ bytes: [UInt8]) throws(HTTP2ConnectionError) {
        frames.append(bytes)
        // Bounded by the bytes that arrived: every frame takes at least 9 of them.
        while let frame = try frames.next() {
            try handle(frame)
        }
        // A WINDOW_UPDATE or SETTINGS may have opened room for a body that waits.
        flushData()
        forgetFinishedStreams()
    }

    /// Streams at the front whose responses ended and were all taken are
    /// closed: nothing comes back for them (their DATA gave the
    /// connection's window back as it came).
    mutating func forgetFinishedStreams() {
        // Bounded by the streams open. A stream whose body still goes stays until it has gone.
        while let id = order.first, let stream = streams[id], stream.ended, stream.response.isEmpty, stream.failure == nil, id != sendingStream {
            order.removeFirst()
            streams[id] = nil
        }
    }

    /// DATA's share of the connection's window comes back as it arrives,
    /// once half the window's worth waits (a WINDOW_UPDATE per small
    /// response cost a TLS record and a write each). Holding it until the
    /// bytes were taken would deadlock: responses wait here in request
    /// order, so later streams' DATA could fill the connection's window
    /// while the oldest still needs more. What waits here is bounded by
    /// the streams' windows instead, times the streams HTTP mode lets run
    /// at once (`concurrentStreamLimit`).
    private mutating func connectionReceived(_ count: Int) {
        connectionReturnable += count
        if connectionReturnable >= limits.connectionWindow / 2 {
            output += HTTP2Frame(type: .windowUpdate, streamID: 0, payload: HTTP2Frame.bigEndian(UInt32(connectionReturnable))).encoded()
            connectionReturnable = 0
        }
    }

    /// HTTP/1.1 response bytes for the session, at most `maximum`, the
    /// oldest request's first. The windows of what is taken go back. They
    /// stop after what a failed stream received before it failed:
    /// `takeFailedStream` says what became of it.
    package mutating func takeResponseBytes(maximum: Int) -> [UInt8] {
        var taken: [UInt8] = []
        // Bounded: each pass empties or finishes one stream, or stops.
        while taken.count < maximum, let id = order.first, var stream = streams[id] {
            let n = min(maximum - taken.count, stream.response.count)
            taken += stream.response[0 ..< n]
            stream.response.removeFirst(n)
            if stream.ended, stream.response.isEmpty {
                streams[id] = stream
                forgetFinishedStreams()
                // Its body still goes: nothing after it can be answered yet.
                if order.first == id { break }
                continue
            }
            // The stream's window of what was taken comes back (what is still
            // buffered here holds at least as many bytes as DATA it came
            // from), once half a window's worth or all of it: few WINDOW_UPDATEs.
            let taken = max(0, stream.outstanding - stream.response.count)
            if stream.failure == nil, taken >= limits.streamWindow / 2 || taken > 0 && stream.response.isEmpty {
                output += HTTP2Frame(type: .windowUpdate, streamID: id, payload: HTTP2Frame.bigEndian(UInt32(taken))).encoded()
                stream.outstanding -= taken
            }
            streams[id] = stream
            if n == 0 { break }
        }
        return taken
    }

    /// Whether the session has response bytes to take.
    package var hasResponseBytes: Bool {
        guard let id = order.first, let stream = streams[id] else { return false }
        return !stream.response.isEmpty
    }

    /// The oldest request's stream failed, and what it received before was taken.
    package var oldestStreamFailed: Bool {
        guard let id = order.first, let stream = streams[id] else { return false }
        return stream.failure != nil && stream.response.isEmpty
    }

    /// The oldest request's failure, once every response before it was
    /// taken; the stream is forgotten, and the next one's bytes follow.
    /// Whatever of its response the session took before is all it gets.
    package mutating func takeFailedStream() -> StreamFailure? {
        guard let id = order.first, let stream = streams[id], let failure = stream.failure, stream.response.isEmpty else { return nil }
        order.removeFirst()
        streams[id] = nil
        // Frames the origin still had on their way for it are ignored, not errors.
        rememberReset(id)
        if id == sendingStream { endBody() }
        forgetFinishedStreams()
        return failure
    }

    /// A stream that will get no (more) response: no more frames on it are
    /// expected, and a body going on is dropped. What it received before
    /// is still taken first, so the outcome does not depend on how much
    /// the engine had taken when the failure came. A response that already
    /// ended whole stands (an origin whose GOAWAY names less than it
    /// answered is believed for what it sent).
    private mutating func fail(_ id: UInt32, _ failure: StreamFailure) {
        guard var stream = streams[id], stream.failure == nil, !stream.ended else { return }
        stream.failure = failure
        stream.ended = true
        streams[id] = stream
        if id == sendingStream { discardingBody = true }
    }

    private mutating func handle(_ frame: HTTP2Frame) throws(HTTP2ConnectionError) {
        try headerBlocks.admit(frame)
        guard let type = frame.knownType else { return } // §4.1: unknown types are ignored.
        switch type {
        case .data:
            try data(frame)
        case .headers:
            let fragment = try frame.unpaddedPayload(priorityBytes: frame.has(HTTP2Flags.priority) ? 5 : 0)
            if let block = try headerBlocks.headers(streamID: frame.streamID, endStream: frame.has(HTTP2Flags.endStream),
                                                    endHeaders: frame.has(HTTP2Flags.endHeaders), fragment: fragment) {
                try headerBlock(block.streamID, endStream: block.endStream, block: block.block)
            }
        case .continuation:
            if let block = try headerBlocks.continuation(frame) {
                try headerBlock(block.streamID, endStream: block.endStream, block: block.block)
            }
        case .priority:
            break
        case .rstStream:
            // §6.4: a stream whose response has not ended fails its request, alone.
            guard frame.payload.count == 4 else { throw HTTP2ConnectionError(.frameSizeError, "RST_STREAM of \(frame.payload.count) bytes") }
            if let stream = streams[frame.streamID], !stream.ended {
                let code = HTTP2ErrorCode(rawValue: Self.word(frame.payload, 0))
                fail(frame.streamID, StreamFailure(code: code, reason: "the origin reset the request's stream (\(code))", unprocessed: false))
                return
            }
            // §8.1: answered already, it wants no more of the body.
            if frame.streamID == sendingStream { discardingBody = true }
        case .settings:
            try settings(frame)
        case .pushPromise:
            // §8.4: Sluice said SETTINGS_ENABLE_PUSH 0.
            throw HTTP2ConnectionError(.protocolError, "the origin pushed (PUSH_PROMISE) after SETTINGS_ENABLE_PUSH 0")
        case .ping:
            guard frame.payload.count == 8 else { throw HTTP2ConnectionError(.frameSizeError, "PING of \(frame.payload.count) bytes") }
            if !frame.has(HTTP2Flags.ack) {
                output += HTTP2Frame(type: .ping, flags: HTTP2Flags.ack, streamID: 0, payload: frame.payload).encoded()
            }
        case .goAway:
            // §6.8: streams above the last one named were not processed.
            guard frame.payload.count >= 8 else { throw HTTP2ConnectionError(.frameSizeError, "GOAWAY of \(frame.payload.count) bytes") }
            // They fail alone, as unprocessed: HTTP mode may send them again.
            goneAway = true
            let last = Self.word(frame.payload, 0) & 0x7FFF_FFFF
            let code = HTTP2ErrorCode(rawValue: Self.word(frame.payload, 4))
            for id in order where id > last {
                fail(id, StreamFailure(code: code, reason: "the origin went away (GOAWAY, \(code)) before processing it", unprocessed: true))
            }
        case .windowUpdate:
            guard frame.payload.count == 4 else { throw HTTP2ConnectionError(.frameSizeError, "WINDOW_UPDATE of \(frame.payload.count) bytes") }
            let increment = Int(Self.word(frame.payload, 0) & 0x7FFF_FFFF)
            if frame.streamID == 0 {
                sendWindow += increment
            } else if streams[frame.streamID] != nil {
                streams[frame.streamID]!.sendWindow += increment
            }
        }
    }

    private mutating func settings(_ frame: HTTP2Frame) throws(HTTP2ConnectionError) {
        guard !frame.has(HTTP2Flags.ack) else { return }
        guard frame.payload.count % 6 == 0 else { throw HTTP2ConnectionError(.frameSizeError, "SETTINGS of \(frame.payload.count) bytes") }
        var offset = 0
        while offset < frame.payload.count {
            let id = UInt16(frame.payload[offset]) << 8 | UInt16(frame.payload[offset + 1])
            let value = Int(Self.word(frame.payload, offset + 2))
            offset += 6
            switch id {
            case HTTP2Setting.initialWindowSize:
                // §6.9.2: the change applies to every open stream's window.
                guard value <= Int(Int32.max) else { throw HTTP2ConnectionError(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE of \(value)") }
                for id in streams.keys { streams[id]!.sendWindow += value - peerInitialWindow }
                peerInitialWindow = value
            case HTTP2Setting.maxConcurrentStreams:
                peerMaximumConcurrentStreams = value
            case HTTP2Setting.maxFrameSize:
                guard (16384 ... 16_777_215).contains(value) else { throw HTTP2ConnectionError(.protocolError, "SETTINGS_MAX_FRAME_SIZE of \(value)") }
                peerMaximumFrameSize = value
            default:
                // HEADER_TABLE_SIZE: Sluice's encoder keeps no dynamic table. The rest change nothing here.
                break
            }
        }
        output += HTTP2Frame(type: .settings, flags: HTTP2Flags.ack, streamID: 0).encoded()
    }

    /// A whole header block: a response's head (interim or final), or its trailers.
    private mutating func headerBlock(_ id: UInt32, endStream: Bool, block: [UInt8]) throws(HTTP2ConnectionError) {
        // Decoded whatever becomes of the stream, so the HPACK tables stay in step (§4.3).
        let fields: [HPACKHeader]
        do { fields = try decoder.decode(block) } catch {
            throw HTTP2ConnectionError(.compressionError, "the origin's header block: \(error)")
        }
        if streams[id]?.failure != nil || resetStreams.contains(id) { return }
        guard var stream = streams[id], !stream.ended else {
            throw HTTP2ConnectionError(.protocolError, "the origin sent HEADERS on stream \(id), which awaits none")
        }
        for field in fields {
            guard HTTP2Gateway.valueIsClean(HTTP2Gateway.bytesOf(field.value)), !field.name.isEmpty,
                  field.name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") || $0 == UInt8(ascii: ":") && field.name.hasPrefix(":") })
            else {
                throw HTTP2ConnectionError(.protocolError, "the origin sent a field HTTP/1.1 cannot carry: \(field.name)")
            }
        }
        if stream.headReceived {
            // §8.1: trailers, which end the stream; a chunked body carries them.
            guard endStream else { throw HTTP2ConnectionError(.protocolError, "the origin's trailers on stream \(id) did not end it") }
            try end(&stream, trailers: fields.filter { !$0.name.hasPrefix(":") })
            streams[id] = stream
            return
        }
        guard let status = fields.first(where: { $0.name == ":status" }).flatMap({ Int($0.value) }), (100 ... 599).contains(status) else {
            throw HTTP2ConnectionError(.protocolError, "the origin's response on stream \(id) has no :status")
        }
        var head = Array("HTTP/1.1 \(status) \(HTTPResponse.reasonPhrase(status))\r\n".utf8)
        var contentLength: Int?
        for field in fields where !field.name.hasPrefix(":") {
            if field.name == "content-length" { contentLength = Int(field.value) }
            head += HTTP2Gateway.bytesOf(field.name) + [UInt8(ascii: ":"), 0x20] + HTTP2Gateway.bytesOf(field.value) + [0x0D, 0x0A]
        }
        if status < 200 {
            // Interim (100, 103): a head of its own; the final one is still to come.
            guard !endStream, status != 101 else { throw HTTP2ConnectionError(.protocolError, "the origin's interim \(status) ended its stream") }
            stream.response += head + [0x0D, 0x0A]
            streams[id] = stream
            return
        }
        stream.headReceived = true
        let bodyless = stream.method == .head || status == 204 || status == 304
        if !bodyless, contentLength == nil {
            // HTTP/1.1 needs the body's end: chunks, or nothing at all.
            if endStream {
                head += Array("content-length: 0\r\n".utf8)
            } else {
                head += Array("transfer-encoding: chunked\r\n".utf8)
                stream.chunked = true
            }
        }
        stream.contentLength = bodyless ? 0 : contentLength
        stream.response += head + [0x0D, 0x0A]
        if endStream { try end(&stream, trailers: []) }
        streams[id] = stream
    }

    private mutating func data(_ frame: HTTP2Frame) throws(HTTP2ConnectionError) {
        let payload = try frame.unpaddedPayload()
        if streams[frame.streamID]?.failure != nil || resetStreams.contains(frame.streamID) {
            // §6.4: sent before the origin saw Sluice's RST_STREAM (or after
            // its own): dropped, and its share of the connection's window comes back.
            connectionReceived(frame.payload.count)
            return
        }
        guard var stream = streams[frame.streamID], stream.headReceived, !stream.ended else {
            throw HTTP2ConnectionError(.protocolError, "the origin sent DATA on stream \(frame.streamID), which awaits none")
        }
        // §6.9: what Sluice granted bounds what waits here.
        stream.outstanding += frame.payload.count
        guard stream.outstanding <= limits.streamWindow, connectionReturnable + frame.payload.count <= limits.connectionWindow else {
            throw HTTP2ConnectionError(.flowControlError, "the origin sent past stream \(frame.streamID)'s window")
        }
        connectionReceived(frame.payload.count)
        stream.receivedBody += payload.count
        if !payload.isEmpty {
            if stream.chunked {
                stream.response += Array(String(payload.count, radix: 16).utf8) + [0x0D, 0x0A] + payload + [0x0D, 0x0A]
            } else {
                stream.response += payload
            }
        }
        if frame.has(HTTP2Flags.endStream) { try end(&stream, trailers: []) }
        streams[frame.streamID] = stream
    }

    /// END_STREAM: the body is complete (§8.1.1: as long as content-length said).
    private mutating func end(_ stream: inout Stream, trailers: [HPACKHeader]) throws(HTTP2ConnectionError) {
        if let length = stream.contentLength, stream.receivedBody != length {
            throw HTTP2ConnectionError(.protocolError, "the origin's body was \(stream.receivedBody) bytes, its content-length \(length)")
        }
        if stream.chunked {
            stream.response += Array("0\r\n".utf8)
            for field in trailers {
                stream.response += HTTP2Gateway.bytesOf(field.name) + [UInt8(ascii: ":"), 0x20] + HTTP2Gateway.bytesOf(field.value) + [0x0D, 0x0A]
            }
            stream.response += [0x0D, 0x0A]
        }
        stream.ended = true
    }

    static func word(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }
}
