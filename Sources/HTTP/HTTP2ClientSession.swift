/// Sluice's HTTP/2 connection to an origin (RFC 9113), driven by HTTP/1.1:
/// each request the session writes (`send`) becomes a stream, and each
/// stream's response comes back as HTTP/1.1 bytes (`takeResponseBytes`), in
/// the order of the requests, so HTTP mode reads an origin that speaks h2
/// as it reads one that speaks HTTP/1.1. `HTTP2Gateway`'s mirror. Requests
/// may follow each other before their responses come (HTTP mode sends an h2
/// app's streams on together, up to `concurrentStreamLimit`): the
/// origin works on them at once, and the responses wait here, in order.
///
/// A request's HEADERS carry its method, `https`, its Host as :authority
/// and its target as :path, then its fields in lowercase less those of the
/// HTTP/1.1 connection (§8.2.2); its body goes as DATA held to the origin's
/// windows (a chunked one without its chunking). The next request waits
/// until the body before it has gone (the session sends one at a time
/// anyway). A response's HEADERS become a status line and fields; a body
/// without content-length is chunked, and trailers end the chunked body.
///
/// Flow control (§5.2): Sluice grants each stream `streamWindow` and gives
/// it back as the session takes the stream's bytes, so what waits here is
/// bounded by the stream windows (the connection's comes back as DATA
/// arrives: `connectionReceived` says why). Errors the origin makes (bad frames, a stream it
/// a GOAWAY before an answer) throw `HTTP2ConnectionError`: the engine then
/// fails the requests, as it does for a broken HTTP/1.1 upstream. A stream
/// the origin resets, or leaves unprocessed when it goes away (GOAWAY),
/// fails alone: its turn comes as a `StreamFailure` (`takeFailedStream`)
/// instead of response bytes, and the streams after it go on.
package struct HTTP2ClientSession: Sendable {
    package struct Limits: Sendable {
        /// SETTINGS_INITIAL_WINDOW_SIZE Sluice announces: what one response buffers here.
        package var streamWindow = 256 * 1024
        /// The connection's window Sluice keeps open.
        package var connectionWindow = 1024 * 1024
        /// Requests HTTP mode lets wait on the connection at once (fewer if
        /// the origin says so): what the responses buffer here is at most
        /// this many stream windows.
        package var maximumConcurrentStreams = 16
        /// Request body bytes `send` holds for the origin's windows.
        package var pendingDataLimit = 64 * 1024
        /// A response header block larger than this is refused.
        package var maximumHeaderBlock = 65536

        package init() {}
    }

    /// Why the oldest request's response will not come, or not whole.
    package struct StreamFailure: Sendable, Equatable, CustomStringConvertible {
        /// The origin's RST_STREAM code, or GOAWAY's.
        package var code: HTTP2ErrorCode
        package var reason: String
        /// The origin never processed the request (§8.7: a stream above
        /// GOAWAY's last, or a request made after it): it may go again, on
        /// another connection.
        package var unprocessed: Bool

        package var description: String { "\(unprocessed ? "unprocessed" : "failed"): \(reason)" }
    }

    /// One request's stream.
    struct Stream {
        let method: HTTPMethod
        /// How much DATA Sluice may send on it.
        var sendWindow: Int
        /// The final response's head arrived; its body is chunked here.
        var headReceived = false
        var chunked = false
        /// content-length, checked against the DATA (§8.1.1).
        var contentLength: Int?
        var receivedBody = 0
        /// HTTP/1.1 bytes for the session, and whether the response ended.
        var response: [UInt8] = []
        var ended = false
        /// DATA received whose window is not given back yet (given back as
        /// the session takes the stream's bytes).
        var outstanding = 0
        /// Its response will not come: reported in its turn (`takeFailedStream`).
        var failure: StreamFailure?
    }

    package let limits: Limits
    var output: [UInt8] = []
    var encoder = HPACKEncoder()
    var decoder = HPACKDecoder()
    var frames = HTTP2FrameReader()
    var requests = HTTPRequestParser()
    var nextStreamID: UInt32 = 1
    var streams: [UInt32: Stream] = [:]
    /// Streams whose responses the session reads next, in request order.
    var order: [UInt32] = []
    /// The request whose body goes now, with its DATA waiting for the windows.
    var sendingStream: UInt32?
    var dechunker: ChunkedReader?
    var pendingData: [UInt8] = []
    var pendingEnd = false
    /// The origin answered and reset the stream before the body had gone
    /// (§8.1: RST_STREAM NO_ERROR after a complete response): the rest of
    /// the body is read from the session and dropped.
    var discardingBody = false
    /// The origin's windows and settings.
    var sendWindow = 65535
    var peerInitialWindow = 65535
    var peerMaximumFrameSize = 16384
    /// SETTINGS_MAX_CONCURRENT_STREAMS (§6.5.2: unlimited until the origin says).
    package internal(set) var peerMaximumConcurrentStreams = Int.max
    /// The origin's header blocks, HEADERS and CONTINUATIONs (§6.10).
    var headerBlocks: HTTP2HeaderBlockAssembler
    /// DATA received on all streams whose connection window is not given
    /// back yet: given back once it is half the window (`connectionReceived`).
    var connectionReturnable = 0
    /// Streams Sluice reset (`cancelSendingStream`) or that failed, lately:
    /// frames the origin sent before it learned (or after its own
    /// RST_STREAM or GOAWAY) are ignored (§5.1), not taken for errors.
    var resetStreams: [UInt32] = []
    /// The origin sent GOAWAY: no new request may go on this connection.
    package internal(set) var goneAway = false

    package init(limits: Limits = Limits()) {
        self.limits = limits
        headerBlocks = HTTP2HeaderBlockAssembler(maximum: limits.maximumHeaderBlock, sender: "the origin sent ")
        // §3.4: the preface, then SETTINGS: no push, Sluice's stream window; then the connection's window.
        output = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        var settings: [UInt8] = []
        for (id, value) in [(HTTP2Setting.enablePush, 0), (HTTP2Setting.initialWindowSize, limits.streamWindow)] {
            settings += [UInt8(id >> 8), UInt8(id & 0xFF)] + HTTP2Frame.bigEndian(UInt32(value))
        }
        output += HTTP2Frame(type: .settings, streamID: 0, payload: settings).encoded()
        if limits.connectionWindow > 65535 {
            output += HTTP2Frame(type: .windowUpdate, streamID: 0, payload: HTTP2Frame.bigEndian(UInt32(limits.connectionWindow - 65535))).encoded()
        }
    }

    /// Frames for the origin.
    package mutating func takeOutput() -> [UInt8] {
        defer { output.removeAll(keepingCapacity: true) }
        return output
    }

    package var hasOutput: Bool { !output.isEmpty }

    /// No request is waiting for its response.
    package var isIdle: Bool { order.isEmpty && sendingStream == nil }

    /// How many requests may wait on this connection at once.
    package var concurrentStreamLimit: Int { min(peerMaximumConcurrentStreams, limits.maximumConcurrentStreams) }

    /// A stream that failed or that Sluice reset: the last 16 are remembered.
    mutating func rememberReset(_ id: UInt32) {
        guard !resetStreams.contains(id) else { return }
        resetStreams.append(id)
        if resetStreams.count > 16 { resetStreams.removeFirst() }
    }

    /// A request's body is going to the origin now.
    package var isSendingBody: Bool { sendingStream != nil }

    /// The request whose body is going on is abandoned (the app reset its
    /// stream mid-upload): RST_STREAM CANCEL tells the origin (§8.1), the
    /// rest of the body is dropped, and the stream takes its turn as failed.
    /// The next request may go at once.
    package mutating func cancelSendingStream(reason: String) {
        guard let id = sendingStream else { return }
        if streams[id]?.failure == nil {
            output += HTTP2Frame(type: .rstStream, streamID: id, payload: HTTP2Frame.bigEndian(HTTP2ErrorCode.cancel.rawValue)).encoded()
            rememberReset(id)
            streams[id]?.failure = StreamFailure(code: .cancel, reason: reason, unprocessed: false)
            streams[id]?.ended = true
            streams[id]?.response = []
        }
        requests = HTTPRequestParser()
        pendingData = []
        pendingEnd = false
        sendingStream = nil
        dechunker = nil
        discardingBody = false
    }

    // MARK: Requests

    /// The session's HTTP/1.1 request bytes (any piece of them). Returns how
    /// many were taken: fewer while a body waits for the origin's windows.
    package mutating func send(_ bytes: UnsafeRawBufferPointer) throws(HTTP2ConnectionError) -> Int {
        var offset = 0
        // Bounded: each step takes bytes, or ends a request that has none left.
        for _ in 0 ..< 4096 {
            guard pendingData.count < limits.pendingDataLimit else { break }
            // A new request waits until the body before it has gone, its end included.
            if pendingEnd { break }
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let step: HTTPParseStep<HTTPRequestHead>?
            do { step = try requests.parse(rest) } catch {
                throw HTTP2ConnectionError(.internalError, "a request Sluice cannot send: \(error)")
            }
            guard let step else {
                offset = bytes.count
                break
            }
            switch step {
            case let .head(head, consumed):
                offset += consumed
                try open(head)
            case let .body(consumed):
                try body(UnsafeRawBufferPointer(rebasing: rest[0 ..< consumed]))
                offset += consumed
            case let .end(consumed):
                try body(UnsafeRawBufferPointer(rebasing: rest[0 ..< consumed]))
                offset += consumed
                if sendingStream != nil { pendingEnd = true }
            case .upgraded:
                throw HTTP2ConnectionError(.internalError, "an HTTP/1.1 upgrade, which HTTP/2 cannot carry")
            }
            flushData()
            if offset == bytes.count, case .end = step { break }
        }
        flushData()
        return offset
    }

    /// §8.3.1: a request's HEADERS.
    private mutating func open(_ head: HTTPRequestHead) throws(HTTP2ConnectionError) {
        guard head.method != .connect else { throw HTTP2ConnectionError(.internalError, "CONNECT, which Sluice does not send over HTTP/2") }
        // §8.6: HTTP/2 has no Upgrade.
        guard head.upgrade == nil else { throw HTTP2ConnectionError(.internalError, "an HTTP/1.1 upgrade, which HTTP/2 cannot carry") }
        let framing: BodyFraming
        do { framing = try HTTPFraming.requestFraming(head) } catch {
            throw HTTP2ConnectionError(.internalError, "a request Sluice cannot send: \(error)")
        }
        let id = nextStreamID
        nextStreamID += 2
        let hasBody: Bool
        switch framing {
        case .none, .length(0): hasBody = false
        case .length, .chunked, .untilClose, .upgrade: hasBody = true
        }
        if goneAway {
            // §6.8: no new stream after GOAWAY. The request is not sent; it
            // takes its turn as unprocessed (its body, if any, is dropped).
            var stream = Stream(method: head.method, sendWindow: 0)
            stream.ended = true
            stream.failure = StreamFailure(code: .refusedStream, reason: "the origin went away (GOAWAY) before it was sent", unprocessed: true)
            streams[id] = stream
            order.append(id)
            if hasBody {
                sendingStream = id
                discardingBody = true
                dechunker = nil
            }
            return
        }
        var fields = [HPACKHeader(":method", head.method.rawValue), HPACKHeader(":scheme", "https"),
                      HPACKHeader(":authority", head.host ?? ""), HPACKHeader(":path", head.target)]
        let named = Set(head.headers.tokens("Connection").map { $0.lowercased() })
        for field in head.headers {
            let name = field.name.lowercased()
            guard !HTTP2Gateway.connectionSpecific.contains(name), !named.contains(name), name != "host" else { continue }
            // §8.2.2: te may stay, saying only "trailers".
            if name == "te", !HTTPSyntax.equalsIgnoringCase(HTTPSyntax.trimmed(Substring(field.value)), "trailers") { continue }
            fields.append(HPACKHeader(name, HPACKHeader.string(latin1: Array(field.value.utf8))))
        }
        sendHeaders(id, fields, endStream: !hasBody)
        streams[id] = Stream(method: head.method, sendWindow: peerInitialWindow)
        order.append(id)
        if hasBody {
            sendingStream = id
            dechunker = framing == .chunked ? ChunkedReader() : nil
        }
    }

    /// A piece of the current request's body, unchunked, into the DATA that waits.
    private mutating func body(_ bytes: UnsafeRawBufferPointer) throws(HTTP2ConnectionError) {
        guard !bytes.isEmpty, sendingStream != nil, !discardingBody else { return }
        if var reader = dechunker {
            var data: [UInt8] = []
            do { _ = try reader.advance(bytes, limits: HTTPParserLimits(), data: { data += bytes[$0] }) } catch {
                throw HTTP2ConnectionError(.internalError, "a chunked request body Sluice cannot read: \(error)")
            }
            dechunker = reader
            pendingData += data
        } else {
            pendingData += bytes
        }
    }

    /// DATA as far as the windows allow; END_STREAM with the last of a body.
    mutating func flushData() {
        guard let id = sendingStream else { return }
        if discardingBody {
            pendingData = []
            if pendingEnd { endBody() }
            return
        }
        guard var stream = streams[id] else { return }
        // Bounded: each pass sends bytes or ends the body.
        while !pendingData.isEmpty || pendingEnd {
            let n = min(pendingData.count, sendWindow, stream.sendWindow, peerMaximumFrameSize)
            let last = pendingEnd && n == pendingData.count
            guard n > 0 || last else { break }
            output += HTTP2Frame(type: .data, flags: last ? HTTP2Flags.endStream : 0, streamID: id, payload: Array(pendingData[0 ..< n])).encoded()
            pendingData.removeFirst(n)
            sendWindow -= n
            stream.sendWindow -= n
            if last {
                streams[id] = stream
                endBody()
                return
            }
        }
        streams[id] = stream
    }

    /// The current request's body has gone (or was dropped): the next request may go.
    mutating func endBody() {
        pendingEnd = false
        sendingStream = nil
        dechunker = nil
        discardingBody = false
        // Its response may have ended and been taken already (an early answer).
        forgetFinishedStreams()
    }

    /// HEADERS (and CONTINUATIONs past the origin's frame size).
    private mutating func sendHeaders(_ id: UInt32, _ fields: [HPACKHeader], endStream: Bool) {
        output += HTTP2Frame.headerFrames(streamID: id, block: encoder.encode(fields), maximumFrameSize: peerMaximumFrameSize, endStream: endStream)
    }
}
