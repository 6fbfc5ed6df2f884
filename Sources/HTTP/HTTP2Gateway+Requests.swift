/// The requests' side of `HTTP2Gateway`: HEADERS and DATA from the app,
/// checked (RFC 9113 §8.1-§8.3) and turned into HTTP/1.1 requests that go to
/// the session one at a time, in the order they arrived.
extension HTTP2Gateway {
    /// §8.2.2: fields that belong to one HTTP/1.1 connection and make an
    /// HTTP/2 request malformed.
    static let connectionSpecific: Set<String> = ["connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade"]

    mutating func data(_ frame: HTTP2Frame) throws(HTTP2ConnectionError) {
        let id = frame.streamID
        guard id != 0 else { throw HTTP2ConnectionError(.protocolError, "DATA on stream 0") }
        let payload = try frame.unpaddedPayload()
        let flowLength = frame.payload.count
        // What waits here is bounded per stream, so the connection's window
        // comes back at once: one slow stream never holds the others' DATA.
        if flowLength > 0 { windowUpdate(stream: 0, flowLength) }
        guard var stream = streams[id], !stream.appEnded else {
            guard id <= highestStreamID else { throw HTTP2ConnectionError(.protocolError, "DATA on idle stream \(id)") }
            // §5.1: sent before the app learned of Sluice's RST_STREAM: ignored.
            if streams[id] == nil, resetStreams.contains(id) { return }
            // §5.1: half-closed (remote) or closed: a stream error.
            if streams[id]?.cancelled != true { resetStream(id, .streamClosed) }
            return
        }
        guard !stream.cancelled else { return }
        guard flowLength <= stream.receiveWindow else {
            try malformed(id, .flowControlError)
            return
        }
        stream.receiveWindow -= flowLength
        stream.receivedBody += payload.count
        if frame.has(HTTP2Flags.endStream) { stream.appEnded = true }
        // §8.1.1: the DATA must add up to content-length.
        if let length = stream.contentLength, stream.receivedBody > length || (stream.appEnded && stream.receivedBody != length) {
            streams[id] = stream
            try malformed(id, .protocolError)
            return
        }
        if currentRequest == id {
            appendBody(payload, chunked: stream.chunked)
            // Gone on to the session: the stream may send as much again.
            if !stream.appEnded, flowLength > 0 {
                stream.receiveWindow += flowLength
                windowUpdate(stream: id, flowLength)
            }
            streams[id] = stream
            if stream.appEnded { endBody(id) }
        } else {
            stream.body += Self.framed(payload, chunked: stream.chunked)
            stream.bodyPayload += payload.count
            // Padding is not kept: its share of the window comes back now.
            let padding = flowLength - payload.count
            if !stream.appEnded, padding > 0 {
                stream.receiveWindow += padding
                windowUpdate(stream: id, padding)
            }
            streams[id] = stream
        }
    }

    mutating func headers(_ frame: HTTP2Frame) throws(HTTP2ConnectionError) {
        let id = frame.streamID
        guard id != 0 else { throw HTTP2ConnectionError(.protocolError, "HEADERS on stream 0") }
        let fragment = try frame.unpaddedPayload(priorityBytes: frame.has(HTTP2Flags.priority) ? 5 : 0)
        if let block = try headerBlocks.headers(streamID: id, endStream: frame.has(HTTP2Flags.endStream),
                                                endHeaders: frame.has(HTTP2Flags.endHeaders), fragment: fragment) {
            try headerBlock(streamID: id, endStream: block.endStream, block: block.block)
        }
    }

    /// A whole header block: a new request, or the trailers of one.
    mutating func headerBlock(streamID id: UInt32, endStream: Bool, block: [UInt8]) throws(HTTP2ConnectionError) {
        // Decoded whatever becomes of the stream, so the HPACK tables stay in step (§4.3).
        let fields: [HPACKHeader]
        var listTooLarge = false
        do { fields = try decoder.decode(block) } catch {
            // A list over SETTINGS_MAX_HEADER_LIST_SIZE was decoded whole, so
            // the tables still agree: its request alone is refused (below).
            guard error == .headerListTooLarge else { throw HTTP2ConnectionError(.compressionError, "\(error)") }
            fields = []
            listTooLarge = true
        }
        if var stream = streams[id] {
            // §8.1: trailers end the stream; they carry no pseudo-fields and
            // obey the rules of any field (§8.2).
            guard !stream.appEnded, !stream.cancelled else {
                if !stream.cancelled { resetStream(id, .streamClosed) }
                return
            }
            guard endStream, !listTooLarge, fields.allSatisfy({ !$0.name.hasPrefix(":") && Self.malformation(ofField: $0) == nil }) else {
                try malformed(id, .protocolError)
                return
            }
            stream.appEnded = true
            stream.trailers = fields
            if let length = stream.contentLength, stream.receivedBody != length {
                streams[id] = stream
                try malformed(id, .protocolError)
                return
            }
            streams[id] = stream
            if currentRequest == id { endBody(id) }
            return
        }
        // §5.1: the app's frames on a stream Sluice reset, sent before it knew, are ignored.
        if resetStreams.contains(id) { return }
        // §5.1.1: a client's new stream is odd and higher than any before it.
        guard id % 2 == 1, id > highestStreamID else {
            throw HTTP2ConnectionError(.protocolError, "HEADERS opening stream \(id) after \(highestStreamID)")
        }
        highestStreamID = id
        // §6.8: after Sluice's GOAWAY new streams are ignored; the app retries them elsewhere.
        guard !wentAway else { return }
        guard streams.count < limits.maximumConcurrentStreams else {
            resetStream(id, .refusedStream)
            return
        }
        guard !listTooLarge else {
            refuse(id, status: 431, endStream: endStream)
            return
        }
        let request: (method: HTTPMethod, head: [UInt8], contentLength: Int?)
        switch Self.request(from: fields) {
        case let .success(value):
            request = value
        case let .failure(malformed):
            guard let status = malformed.status else {
                resetStream(id, .protocolError)
                return
            }
            refuse(id, status: status, endStream: endStream)
            return
        }
        if request.method == .connect {
            // CONNECT tunnels (§8.5) have no HTTP/1.1 request to become here.
            respondLocally(id, status: 501)
            return
        }
        if let length = request.contentLength, endStream, length != 0 {
            resetStream(id, .protocolError)
            return
        }
        streams[id] = HTTP2GatewayStream(method: request.method, head: request.head, contentLength: request.contentLength, appEnded: endStream,
                                         receiveWindow: limits.initialWindowSize, sendWindow: peerInitialWindow)
        waitingRequests.append(id)
    }

    /// Why a header block is not a request Sluice can send on.
    struct MalformedRequest: Error {
        var reason: String
        /// A request that is well formed but breaks one of Sluice's limits
        /// (HTTPParserLimits): answered with this status (414, 431), as over
        /// HTTP/1.1, rather than reset as malformed.
        var status: Int?
    }

    /// §8.3.1 and §8.2: a request's pseudo-fields and fields, as an HTTP/1.1
    /// head (RFC 9112 §3) without its framing field and final CRLF.
    static func request(from fields: [HPACKHeader]) -> Result<(method: HTTPMethod, head: [UInt8], contentLength: Int?), MalformedRequest> {
        var method: String?, scheme: String?, authority: String?, path: String?
        var host: String?
        var contentLength: Int?
        var cookies: [String] = []
        var lines: [UInt8] = []
        var regular = false
        for field in fields {
            let name = field.name, value = field.value
            guard !name.isEmpty else { return .failure(MalformedRequest(reason: "an empty field name")) }
            let bytes = bytesOf(value)
            if name.hasPrefix(":") {
                guard valueIsClean(bytes) else { return .failure(MalformedRequest(reason: "a bad value for \(name)")) }
                // §8.3: pseudo-fields come first, once each, and only these four.
                guard !regular else { return .failure(MalformedRequest(reason: "\(name) after a regular field")) }
                switch name {
                case ":method": guard method == nil else { return .failure(MalformedRequest(reason: "two :method")) }; method = value
                case ":scheme": guard scheme == nil else { return .failure(MalformedRequest(reason: "two :scheme")) }; scheme = value
                case ":authority": guard authority == nil else { return .failure(MalformedRequest(reason: "two :authority")) }; authority = value
                case ":path": guard path == nil else { return .failure(MalformedRequest(reason: "two :path")) }; path = value
                default: return .failure(MalformedRequest(reason: "the pseudo-field \(name)"))
                }
                continue
            }
            regular = true
            if let reason = malformation(ofField: field) { return .failure(MalformedRequest(reason: reason)) }
            switch name {
            case "te":
                lines += Array("te: trailers\r\n".utf8)
            case "cookie":
                // §8.2.3: split cookies become one field again for HTTP/1.1.
                cookies.append(value)
            case "host":
                guard host == nil else { return .failure(MalformedRequest(reason: "two host fields")) }
                host = value
            case "content-length":
                guard !value.isEmpty, value.utf8.count <= 15, value.utf8.allSatisfy({ (UInt8(ascii: "0") ... UInt8(ascii: "9")).contains($0) }),
                      let length = Int(value), contentLength == nil || contentLength == length
                else { return .failure(MalformedRequest(reason: "content-length: \(value)")) }
                contentLength = length
            default:
                lines += bytesOf(name) + [UInt8(ascii: ":"), 0x20] + bytes + [0x0D, 0x0A]
            }
        }
        guard let method, !method.isEmpty, method.utf8.allSatisfy(HTTPSyntax.isTokenByte) else {
            return .failure(MalformedRequest(reason: "no valid :method"))
        }
        let httpMethod = HTTPMethod(rawValue: method)
        if httpMethod == .connect { return .success((httpMethod, [], nil)) }
        // §8.3.1: :scheme and a non-empty :path; the authority from :authority, else host.
        guard scheme?.isEmpty == false, let path, !path.isEmpty, path.utf8.allSatisfy(HTTPSyntax.isTargetByte) else {
            return .failure(MalformedRequest(reason: "no valid :scheme or :path"))
        }
        guard let target = authority ?? host, !target.isEmpty, target.utf8.allSatisfy(HTTPSyntax.isTargetByte) else {
            return .failure(MalformedRequest(reason: "no authority"))
        }
        var head = Array("\(method) \(path) HTTP/1.1\r\nhost: ".utf8) + bytesOf(target) + [0x0D, 0x0A]
        head += lines
        if !cookies.isEmpty { head += Array("cookie: ".utf8) + bytesOf(cookies.joined(separator: "; ")) + [0x0D, 0x0A] }
        // The session reads it with the engine's own parser: a request that
        // parser would refuse (an odd host, a field too long) is refused here,
        // for its stream alone, rather than as a 400 that ends the connection.
        var check = HTTPRequestParser()
        let whole = head + [0x0D, 0x0A]
        let step: HTTPRequestStep?
        switch whole.withUnsafeBytes({ raw in Result { () throws(HTTPParseError) in try check.parse(raw) } }) {
        case let .success(parsed): step = parsed
        case let .failure(error):
            let status = error.requestStatus.code
            return .failure(MalformedRequest(reason: "\(error)", status: status == 400 ? nil : status))
        }
        guard case .head? = step else { return .failure(MalformedRequest(reason: "an incomplete head")) }
        return .success((httpMethod, head, contentLength))
    }

    /// §8.2 and §8.2.1-§8.2.2: why a regular field (or trailer) makes a
    /// request malformed, or nil: a name that is not a lowercase token, a
    /// connection field, te other than "trailers", a value with NUL, CR or
    /// LF or with whitespace at either end.
    static func malformation(ofField field: HPACKHeader) -> String? {
        let name = field.name
        guard !name.isEmpty, name.utf8.allSatisfy({ HTTPSyntax.isTokenByte($0) && !(UInt8(ascii: "A") ... UInt8(ascii: "Z")).contains($0) }) else {
            return "the field name \(name)"
        }
        guard !connectionSpecific.contains(name) else { return "the connection field \(name)" }
        guard name != "te" || field.value == "trailers" else { return "te: \(field.value)" }
        guard valueIsClean(bytesOf(field.value)) else { return "a bad value for \(name)" }
        return nil
    }

    /// §8.2.1: no NUL, CR or LF, and no whitespace at either end.
    static func valueIsClean(_ bytes: [UInt8]) -> Bool {
        !bytes.contains(where: { HTTPSyntax.isLineBreakOrNul($0) })
            && (bytes.first.map { $0 != 0x20 && $0 != 0x09 } ?? true) && (bytes.last.map { $0 != 0x20 && $0 != 0x09 } ?? true)
    }

    /// A field's octets (names and values hold one byte per scalar).
    static func bytesOf(_ text: String) -> [UInt8] { text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) } }

    /// Sends on the requests whose turn has come: each after the body of the one before has ended.
    mutating func forwardRequests() {
        // Bounded: each pass takes one waiting request.
        while currentRequest == nil, !waitingRequests.isEmpty {
            let id = waitingRequests.removeFirst()
            guard var stream = streams[id] else { continue }
            // The framing follows from the HEADERS alone (not from how much DATA
            // happened to arrive before the request's turn): a content-length
            // the app sent, none for a request that ended with its HEADERS,
            // else chunked.
            var head = stream.head
            if let length = stream.contentLength {
                head += Array("content-length: \(length)\r\n".utf8)
            } else if stream.endedWithHeaders {
                if [.post, .put, .patch].contains(stream.method) { head += Array("content-length: 0\r\n".utf8) }
            } else {
                head += Array("transfer-encoding: chunked\r\n".utf8)
            }
            requestBytes += head + [0x0D, 0x0A]
            responses.expectResponse(to: stream.method)
            answering.append(id)
            lastForwarded = id
            // What waited here goes on as it came, one chunk per DATA frame.
            requestBytes += stream.body
            let waited = stream.bodyPayload
            stream.body = []
            stream.bodyPayload = 0
            // The bytes that waited here went on: the app may send that much again.
            if !stream.appEnded, waited > 0 {
                stream.receiveWindow += waited
                windowUpdate(stream: id, waited)
            }
            streams[id] = stream
            if stream.appEnded {
                endBody(id, forwardNext: false)
            } else {
                currentRequest = id
            }
        }
    }

    mutating func appendBody(_ bytes: ArraySlice<UInt8>, chunked: Bool) {
        requestBytes += Self.framed(bytes, chunked: chunked)
    }

    /// One DATA frame's payload as it goes on: a chunk of its own, or as it is.
    static func framed(_ bytes: ArraySlice<UInt8>, chunked: Bool) -> [UInt8] {
        guard !bytes.isEmpty else { return [] }
        guard chunked else { return Array(bytes) }
        return Array(String(bytes.count, radix: 16).utf8) + [0x0D, 0x0A] + bytes + [0x0D, 0x0A]
    }

    /// The current request's body is complete (END_STREAM): a chunked one
    /// gets its last chunk and trailers; the next request may go.
    mutating func endBody(_ id: UInt32, forwardNext: Bool = true) {
        guard let stream = streams[id] else { return }
        if stream.chunked {
            requestBytes += Array("0\r\n".utf8)
            // Checked when they came (`headerBlock`); te means nothing in a trailer section.
            for field in stream.trailers where field.name != "te" {
                requestBytes += Self.bytesOf(field.name) + [UInt8(ascii: ":"), 0x20] + Self.bytesOf(field.value) + [0x0D, 0x0A]
            }
            requestBytes += [0x0D, 0x0A]
        }
        if currentRequest == id { currentRequest = nil }
        // The response went out before the body ended (a server may answer early).
        if stream.responseFinished { streams[id] = nil }
        if let code = stream.pendingReset { resetStream(id, code) }
        if forwardNext { forwardRequests() }
    }

    /// A stream error (§5.4.2), such as a malformed request (§8.1.1), unless
    /// the stream's body is already going on with a fixed length, which
    /// HTTP/1.1 cannot cut short: then the connection ends. (`resetStream`
    /// alone would leave that body waiting for bytes that never come.)
    /// §10.5.1 and §8.1: a request Sluice will not send on is answered here
    /// (431, 414: what HTTP/1.1 apps get for the same request); if the app
    /// has more of it to send, RST_STREAM NO_ERROR asks it to stop.
    mutating func refuse(_ id: UInt32, status: Int, endStream: Bool) {
        respondLocally(id, status: status)
        if !endStream { resetStream(id, .noError) }
    }

    mutating func malformed(_ id: UInt32, _ code: HTTP2ErrorCode) throws(HTTP2ConnectionError) {
        if currentRequest == id, streams[id]?.chunked == false {
            throw HTTP2ConnectionError(code, "stream \(id)'s body does not match its content-length")
        }
        resetStream(id, code)
    }

    mutating func windowUpdate(stream id: UInt32, _ increment: Int) {
        output += HTTP2Frame(type: .windowUpdate, streamID: id, payload: HTTP2Frame.bigEndian(UInt32(truncatingIfNeeded: increment) & 0x7FFF_FFFF)).encoded()
    }
}
