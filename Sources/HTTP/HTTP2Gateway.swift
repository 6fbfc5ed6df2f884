/// An app's HTTP/2 connection (RFC 9113) served as one ordered stream of
/// HTTP/1.1 requests (RFC 9112), so that everything HTTP mode does to
/// HTTP/1.1 (rewrites, Map Local, rules, header rewrites, statistics, HAR)
/// applies to h2 unchanged: the engine's session reads the requests from
/// `takeRequestBytes()` and writes its HTTP/1.1 responses to `respond(_:)`,
/// which turns each into HEADERS and DATA frames on the stream it answers.
///
/// Streams are served in the order their requests arrived, one request at a
/// time toward the session, as HTTP/1.1 pipelining would: a request's body
/// must end before the next request starts, so later streams' DATA waits
/// here, bounded by the window each stream was given. Responses come back in
/// the same order, so they map to streams by position. Concurrency on the
/// app's side is kept (many streams open at once); the upstream sees a
/// kept-alive, pipelined HTTP/1.1 connection.
///
/// Flow control (§5.2): the connection window is given back as soon as DATA
/// arrives (what waits here is bounded per stream), a stream's window as its
/// bytes go on to the session. Sluice's DATA frames wait for the app's
/// windows; `respond` takes no more once `responseBufferLimit` bytes wait.
///
/// Errors: a malformed request is a stream error (RST_STREAM, §8.1.1); a
/// broken connection (bad frames, a bad header block) throws
/// `HTTP2ConnectionError` after queueing GOAWAY, and the caller ends the
/// connection once `takeOutput()` is sent.
public struct HTTP2Gateway: Sendable {
    public struct Limits: Sendable {
        /// SETTINGS_MAX_CONCURRENT_STREAMS Sluice announces.
        public var maximumConcurrentStreams = 100
        /// SETTINGS_INITIAL_WINDOW_SIZE Sluice announces: what one waiting stream may buffer here.
        public var initialWindowSize = 65535
        /// SETTINGS_MAX_HEADER_LIST_SIZE Sluice announces: a request whose
        /// decoded fields add up to more gets 431. A header block (HEADERS and
        /// its CONTINUATIONs) over four times this ends the connection
        /// (ENHANCE_YOUR_CALM): it is decoded to keep HPACK's tables in step,
        /// and that work must stay bounded.
        public var maximumHeaderBlock = 65536
        /// Response bytes `respond` holds for the app's windows before it takes no more.
        public var responseBufferLimit = 256 * 1024

        public init() {}
    }

    /// §3.4: what every client connection starts with.
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    public let limits: Limits
    var prefaceSeen = 0
    var settingsSeen = false
    var frames = HTTP2FrameReader()
    var decoder = HPACKDecoder()
    var encoder = HPACKEncoder()
    /// Header blocks, HEADERS and CONTINUATIONs (§6.10).
    var headerBlocks: HTTP2HeaderBlockAssembler
    /// The highest stream the app opened (§5.1.1: new ones must be higher).
    var highestStreamID: UInt32 = 0
    /// The app sent GOAWAY: no new streams will come.
    public private(set) var appWentAway = false
    /// Sluice sent GOAWAY: new streams are refused.
    public private(set) var wentAway = false
    var streams: [UInt32: HTTP2GatewayStream] = [:]
    /// Streams whose requests wait to go to the session, in arrival order.
    var waitingRequests: [UInt32] = []
    /// Streams Sluice reset lately: frames the app sent before it learned
    /// are ignored (§5.1), not taken for a reuse of a closed stream.
    var resetStreams: [UInt32] = []
    /// The stream whose request body is going to the session now.
    var currentRequest: UInt32?
    /// The highest stream whose request went to the session (GOAWAY's last stream).
    var lastForwarded: UInt32 = 0
    /// HTTP/1.1 request bytes for the session.
    var requestBytes: [UInt8] = []
    /// Where in `requestBytes` a request stops short: its stream was reset
    /// while its body was going on (`takeRequests`).
    var requestCuts: [Int] = []
    /// Frames for the app.
    var output: [UInt8] = []

    // The responses' side.
    var responses = HTTPResponseParser()
    /// Streams whose requests went to the session and wait for their responses, in order.
    var answering: [UInt32] = []
    /// Removes a chunked response's framing: HTTP/2 carries only its data.
    var dechunker: ChunkedReader?
    /// The app's connection-level window for Sluice's DATA.
    var sendWindow = 65535
    /// The app's SETTINGS_INITIAL_WINDOW_SIZE and SETTINGS_MAX_FRAME_SIZE.
    var peerInitialWindow = 65535
    var peerMaximumFrameSize = 16384
    /// Response data in the streams' queues, waiting for windows.
    var bufferedResponseBytes = 0
    /// Streams with response frames to send, in the order their responses came.
    var sending: [UInt32] = []

    public init(limits: Limits = Limits()) {
        self.limits = limits
        headerBlocks = HTTP2HeaderBlockAssembler(maximum: 4 * limits.maximumHeaderBlock)
        decoder = HPACKDecoder(maximumHeaderListSize: limits.maximumHeaderBlock)
        // §3.4: the server's preface is a SETTINGS frame, first.
        var settings: [UInt8] = []
        func setting(_ id: UInt16, _ value: Int) {
            settings += [UInt8(id >> 8), UInt8(id & 0xFF)] + HTTP2Frame.bigEndian(UInt32(value))
        }
        setting(HTTP2Setting.maxConcurrentStreams, limits.maximumConcurrentStreams)
        setting(HTTP2Setting.initialWindowSize, limits.initialWindowSize)
        setting(HTTP2Setting.maxHeaderListSize, limits.maximumHeaderBlock)
        output = HTTP2Frame(type: .settings, streamID: 0, payload: settings).encoded()
    }

    /// HTTP/1.1 request bytes for the session, in order, and the places
    /// among them where a request stops short: the app (or Sluice) reset its
    /// stream while its body was going on. No bytes can finish such a
    /// request, so the session abandons it there (and the connection it was
    /// going to), and the next request's bytes follow. Its stream stays
    /// among those awaiting a response, so that the session's next answer
    /// (dropped: the stream is gone) keeps the order.
    public mutating func takeRequests() -> (bytes: [UInt8], cuts: [Int]) {
        defer {
            requestBytes.removeAll(keepingCapacity: true)
            requestCuts.removeAll()
        }
        return (requestBytes, requestCuts)
    }

    /// Frames for the app.
    public mutating func takeOutput() -> [UInt8] {
        defer { output.removeAll(keepingCapacity: true) }
        return output
    }

    public var hasOutput: Bool { !output.isEmpty }

    /// Streams still open: requests waiting or being answered.
    public var openStreams: Int { streams.count }

    /// Bytes from the app (the plaintext inside TLS). A thrown error ends
    /// the connection: GOAWAY is queued in `takeOutput()`.
    public mutating func receive(_ bytes: [UInt8]) throws(HTTP2ConnectionError) {
        do {
            try receiveFrames(bytes)
        } catch {
            goAway(error.code, debug: error.reason)
            throw error
        }
    }

    private mutating func receiveFrames(_ bytes: [UInt8]) throws(HTTP2ConnectionError) {
        var input = bytes[...]
        if prefaceSeen < Self.preface.count {
            let n = min(Self.preface.count - prefaceSeen, input.count)
            guard input.prefix(n).elementsEqual(Self.preface[prefaceSeen ..< prefaceSeen + n]) else {
                throw HTTP2ConnectionError(.protocolError, "no HTTP/2 connection preface")
            }
            prefaceSeen += n
            input = input.dropFirst(n)
        }
        frames.append(Array(input))
        // Bounded by the bytes that arrived: every frame takes at least 9 of them.
        // Requests go on frame by frame, so what reached the session before a
        // connection error does not depend on how the bytes were cut.
        while let frame = try frames.next() {
            try handle(frame)
            forwardRequests()
        }
    }

    /// Sluice ends the connection: GOAWAY naming the last stream whose request
    /// went on (later ones the app may retry elsewhere, §6.8).
    public mutating func goAway(_ code: HTTP2ErrorCode = .noError, debug: String = "") {
        guard !wentAway else { return }
        wentAway = true
        // Streams past the last one named never go on: the app may send them again elsewhere (§6.8).
        for id in waitingRequests { streams[id] = nil }
        waitingRequests.removeAll()
        let payload = HTTP2Frame.bigEndian(lastForwarded & 0x7FFF_FFFF) + HTTP2Frame.bigEndian(code.rawValue) + Array(debug.utf8.prefix(256))
        output += HTTP2Frame(type: .goAway, streamID: 0, payload: payload).encoded()
    }

    // MARK: Frames from the app

    private mutating func handle(_ frame: HTTP2Frame) throws(HTTP2ConnectionError) {
        // §3.4: the client's preface ends with a SETTINGS frame.
        guard settingsSeen || frame.knownType == .settings else {
            throw HTTP2ConnectionError(.protocolError, "the first frame is \(frame), not SETTINGS")
        }
        try headerBlocks.admit(frame)
        guard let type = frame.knownType else { return } // §4.1: unknown types are ignored.
        switch type {
        case .data:
            try data(frame)
        case .headers:
            try headers(frame)
        case .continuation:
            if let block = try headerBlocks.continuation(frame) {
                try headerBlock(streamID: block.streamID, endStream: block.endStream, block: block.block)
            }
        case .priority:
            // §6.3: read and ignored (RFC 9113 deprecates the scheme).
            guard frame.streamID != 0 else { throw HTTP2ConnectionError(.protocolError, "PRIORITY on stream 0") }
            guard frame.payload.count == 5 else { try malformed(frame.streamID, .frameSizeError); return }
        case .rstStream:
            try rstStream(frame)
        case .settings:
            try settings(frame)
        case .pushPromise:
            // §8.4: only servers push.
            throw HTTP2ConnectionError(.protocolError, "PUSH_PROMISE from a client")
        case .ping:
            // §6.7.
            guard frame.streamID == 0 else { throw HTTP2ConnectionError(.protocolError, "PING on stream \(frame.streamID)") }
            guard frame.payload.count == 8 else { throw HTTP2ConnectionError(.frameSizeError, "PING of \(frame.payload.count) bytes") }
            if !frame.has(HTTP2Flags.ack) {
                output += HTTP2Frame(type: .ping, flags: HTTP2Flags.ack, streamID: 0, payload: frame.payload).encoded()
            }
        case .goAway:
            // §6.8: the app opens no more streams; those open finish.
            guard frame.streamID == 0 else { throw HTTP2ConnectionError(.protocolError, "GOAWAY on stream \(frame.streamID)") }
            guard frame.payload.count >= 8 else { throw HTTP2ConnectionError(.frameSizeError, "GOAWAY of \(frame.payload.count) bytes") }
            appWentAway = true
        case .windowUpdate:
            try windowUpdate(frame)
        }
    }

    private mutating func settings(_ frame: HTTP2Frame) throws(HTTP2ConnectionError) {
        // §6.5.
        guard frame.streamID == 0 else { throw HTTP2ConnectionError(.protocolError, "SETTINGS on stream \(frame.streamID)") }
        if frame.has(HTTP2Flags.ack) {
            guard frame.payload.isEmpty else { throw HTTP2ConnectionError(.frameSizeError, "a SETTINGS acknowledgment with a payload") }
            return
        }
        guard frame.payload.count % 6 == 0 else { throw HTTP2ConnectionError(.frameSizeError, "SETTINGS of \(frame.payload.count) bytes") }
        settingsSeen = true
        var offset = 0
        while offset < frame.payload.count {
            let p = frame.payload
            let id = UInt16(p[offset]) << 8 | UInt16(p[offset + 1])
            let value = Int(p[offset + 2]) << 24 | Int(p[offset + 3]) << 16 | Int(p[offset + 4]) << 8 | Int(p[offset + 5])
            offset += 6
            switch id {
            case HTTP2Setting.enablePush:
                guard value <= 1 else { throw HTTP2ConnectionError(.protocolError, "SETTINGS_ENABLE_PUSH of \(value)") }
            case HTTP2Setting.initialWindowSize:
                // §6.9.2: the change applies to every open stream's window.
                guard value <= Int(Int32.max) else { throw HTTP2ConnectionError(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE of \(value)") }
                let delta = value - peerInitialWindow
                peerInitialWindow = value
                for id in streams.keys {
                    streams[id]!.sendWindow += delta
                    guard streams[id]!.sendWindow <= Int(Int32.max) else {
                        throw HTTP2ConnectionError(.flowControlError, "a stream window past 2^31-1")
                    }
                }
            case HTTP2Setting.maxFrameSize:
                guard (16384 ... 16_777_215).contains(value) else { throw HTTP2ConnectionError(.protocolError, "SETTINGS_MAX_FRAME_SIZE of \(value)") }
                peerMaximumFrameSize = value
            default:
                // HEADER_TABLE_SIZE: Sluice's encoder keeps no dynamic table, so
                // any size fits. The rest (and unknown ids, §6.5.2) change nothing here.
                break
            }
        }
        output += HTTP2Frame(type: .settings, flags: HTTP2Flags.ack, streamID: 0).encoded()
        flushResponses()
    }

    private mutating func windowUpdate(_ frame: HTTP2Frame) throws(HTTP2ConnectionError) {
        // §6.9.
        guard frame.payload.count == 4 else { throw HTTP2ConnectionError(.frameSizeError, "WINDOW_UPDATE of \(frame.payload.count) bytes") }
        let p = frame.payload
        let increment = (Int(p[0]) << 24 | Int(p[1]) << 16 | Int(p[2]) << 8 | Int(p[3])) & 0x7FFF_FFFF
        if frame.streamID == 0 {
            guard increment > 0 else { throw HTTP2ConnectionError(.protocolError, "a WINDOW_UPDATE of 0 for the connection") }
            sendWindow += increment
            guard sendWindow <= Int(Int32.max) else { throw HTTP2ConnectionError(.flowControlError, "the connection window past 2^31-1") }
        } else if streams[frame.streamID] != nil {
            guard increment > 0 else { try malformed(frame.streamID, .protocolError); return }
            streams[frame.streamID]!.sendWindow += increment
            guard streams[frame.streamID]!.sendWindow <= Int(Int32.max) else { try malformed(frame.streamID, .flowControlError); return }
        } else if frame.streamID > highestStreamID {
            throw HTTP2ConnectionError(.protocolError, "WINDOW_UPDATE on idle stream \(frame.streamID)")
        }
        flushResponses()
    }

    private mutating func rstStream(_ frame: HTTP2Frame) throws(HTTP2ConnectionError) {
        // §6.4.
        guard frame.streamID != 0 else { throw HTTP2ConnectionError(.protocolError, "RST_STREAM on stream 0") }
        guard frame.payload.count == 4 else { throw HTTP2ConnectionError(.frameSizeError, "RST_STREAM of \(frame.payload.count) bytes") }
        guard frame.streamID <= highestStreamID else { throw HTTP2ConnectionError(.protocolError, "RST_STREAM on idle stream \(frame.streamID)") }
        cancel(frame.streamID)
    }

    /// RST_STREAM to the app: the stream ends here (a malformed request, a
    /// frame the stream's state does not allow). Its request never went on,
    /// or its response is read and dropped.
    mutating func resetStream(_ id: UInt32, _ code: HTTP2ErrorCode) {
        if !resetStreams.contains(id) {
            resetStreams.append(id)
            // What the app may still have in flight is a window's worth of frames, on few streams.
            if resetStreams.count > 256 { resetStreams.removeFirst(resetStreams.count - 256) }
        }
        output += HTTP2Frame(type: .rstStream, streamID: id, payload: HTTP2Frame.bigEndian(code.rawValue)).encoded()
        cancel(id)
    }

    /// The stream is gone for the app. A request not yet sent on is dropped;
    /// one whose response is awaited has that response read and dropped. A
    /// request whose body is being sent is cut where its bytes end
    /// (`takeRequests`): HTTP/1.1 has no way to stop a body short.
    mutating func cancel(_ id: UInt32) {
        guard var stream = streams[id] else { return }
        if let index = waitingRequests.firstIndex(of: id) {
            waitingRequests.remove(at: index)
            streams[id] = nil
            return
        }
        if currentRequest == id {
            // Cut where its bytes end. Not ended with a last chunk: the
            // origin would take a cancelled upload for a complete, shorter one.
            requestCuts.append(requestBytes.count)
            stream.appEnded = true
            currentRequest = nil
        }
        bufferedResponseBytes -= stream.responseData.count
        stream.responseData = []
        stream.cancelled = true
        streams[id] = stream
        sending.removeAll { $0 == id }
        // A response still to come is read and dropped; otherwise the stream is done.
        if !answering.contains(id) { streams[id] = nil }
        forwardRequests()
    }
}
