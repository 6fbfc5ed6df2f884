import Testing
@testable import HTTP
import TestSupport

// HTTP2ClientSession driven by a scripted HTTP/2 origin written here: HTTP/1.1
// request bytes in (whole, byte by byte, in random pieces), the session's
// frames read and checked against RFC 9113 (windows, frame sizes, stream
// order), the origin's frames written back, and the HTTP/1.1 response bytes
// taken and read. Frames are built and cut with HTTP2TestPeer.swift's `H2` and
// `H2FrameCutter` (written from the RFC, not from HTTP2Frame.swift); only HPACK
// comes from the module.

// MARK: Helpers

private let clientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

private func hf(_ name: String, _ value: String) -> HPACKHeader { HPACKHeader(name, value) }
private func ev(_ name: String, _ value: String) -> H2Field { H2Field(name, value) }
private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
private func utf8(_ s: String) -> [UInt8] { Array(s.utf8) }

/// A body whose bytes say where they are, so that a reordering or a loss shows.
private func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0 ..< count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) % 251) }
}

private func limits(streamWindow: Int? = nil, connectionWindow: Int? = nil, pendingDataLimit: Int? = nil,
                    maximumConcurrentStreams: Int? = nil) -> HTTP2ClientSession.Limits
{
    var limits = HTTP2ClientSession.Limits()
    if let streamWindow { limits.streamWindow = streamWindow }
    if let connectionWindow { limits.connectionWindow = connectionWindow }
    if let pendingDataLimit { limits.pendingDataLimit = pendingDataLimit }
    if let maximumConcurrentStreams { limits.maximumConcurrentStreams = maximumConcurrentStreams }
    return limits
}

/// `bytes` as DATA frames on `stream` of at most 16384 bytes (the default
/// SETTINGS_MAX_FRAME_SIZE), END_STREAM on the last if `endStream`.
private func dataFrames(stream: UInt32, _ bytes: [UInt8], endStream: Bool = false) -> [UInt8] {
    var frames: [UInt8] = []
    var offset = 0
    // Bounded: each pass takes up to 16384 bytes; one pass for an empty body.
    repeat {
        let n = min(16384, bytes.count - offset)
        frames += H2.data(stream: stream, Array(bytes[offset ..< offset + n]), endStream: endStream && offset + n == bytes.count)
        offset += n
    } while offset < bytes.count
    return frames
}

/// A stream's failure as `takeFailedStream` gave it: its code (RFC 9113 §7, on the wire) and whether it was unprocessed.
private func expectFailure(_ failure: HTTP2ClientSession.StreamFailure?, code: UInt32, unprocessed: Bool, _ what: String = "the failure",
                           sourceLocation: SourceLocation = #_sourceLocation)
{
    guard let failure else {
        Issue.record("\(what): no failure, expected \(H2Code.name(code))", sourceLocation: sourceLocation)
        return
    }
    #expect(failure.code.rawValue == code, "\(what): \(failure.code), expected \(H2Code.name(code))", sourceLocation: sourceLocation)
    #expect(failure.unprocessed == unprocessed, "\(what): \(failure)", sourceLocation: sourceLocation)
}

/// A HTTP/1.1 head: its status line, its field lines, and what follows the blank line.
private struct H1Head: CustomStringConvertible {
    var statusLine: String
    var fields: [String]
    var rest: [UInt8]
    var description: String { "\(statusLine) \(fields) + \(rest.count) bytes" }
}

private func splitHead(_ bytes: [UInt8]) -> H1Head? {
    var lines: [String] = []
    var start = 0
    var i = 0
    while i + 1 < bytes.count {
        if bytes[i] == 0x0D, bytes[i + 1] == 0x0A {
            let line = text(Array(bytes[start ..< i]))
            i += 2
            start = i
            if line.isEmpty {
                guard let first = lines.first else { return nil }
                return H1Head(statusLine: first, fields: Array(lines.dropFirst()), rest: Array(bytes[i...]))
            }
            lines.append(line)
        } else {
            i += 1
        }
    }
    return nil
}

/// A chunked body (RFC 9112 §7.1) read strictly: its chunks, its trailer lines, and what follows it.
private func readChunked(_ bytes: [UInt8]) -> (chunks: [[UInt8]], trailers: [String], rest: [UInt8])? {
    var chunks: [[UInt8]] = []
    var i = 0
    func line() -> String? {
        var j = i
        while j + 1 < bytes.count {
            if bytes[j] == 0x0D, bytes[j + 1] == 0x0A {
                let s = text(Array(bytes[i ..< j]))
                i = j + 2
                return s
            }
            if bytes[j] == 0x0A || bytes[j] == 0x0D { return nil }
            j += 1
        }
        return nil
    }
    // Bounded: each chunk takes at least its size line.
    while true {
        guard let sizeLine = line(), let size = Int(sizeLine, radix: 16), size >= 0 else { return nil }
        if size == 0 {
            var trailers: [String] = []
            while true {
                guard let t = line() else { return nil }
                if t.isEmpty { return (chunks, trailers, Array(bytes[i...])) }
                trailers.append(t)
            }
        }
        guard i + size + 2 <= bytes.count, bytes[i + size] == 0x0D, bytes[i + size + 1] == 0x0A else { return nil }
        chunks.append(Array(bytes[i ..< i + size]))
        i += size + 2
    }
}

/// Compares bytes without handing Swift Testing large arrays to print and diff.
private func expectBytes(_ actual: [UInt8]?, _ expected: [UInt8], _ what: String = "bytes",
                         sourceLocation: SourceLocation = #_sourceLocation)
{
    guard let actual else {
        Issue.record("\(what): none, expected \(expected.count) bytes", sourceLocation: sourceLocation)
        return
    }
    guard actual != expected else { return }
    let first = (0 ..< min(actual.count, expected.count)).first { actual[$0] != expected[$0] } ?? min(actual.count, expected.count)
    var message = "\(what): \(actual.count) bytes, expected \(expected.count); they differ from byte \(first)"
    if actual.count + expected.count <= 400 { message += ": \(text(actual).debugDescription) vs \(text(expected).debugDescription)" }
    Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
}

/// RFC 7541 §6.2.2 by hand: a literal without indexing, literal name, no Huffman.
private func hpackLiteral(_ name: [UInt8], _ value: [UInt8]) -> [UInt8] {
    precondition(name.count < 127 && value.count < 127)
    return [0x00, UInt8(name.count)] + name + [UInt8(value.count)] + value
}

// MARK: The scripted origin

/// The origin's end of one `HTTP2ClientSession`, driving it as the engine
/// would: request bytes in (re-offered when `send` takes fewer), the frames
/// drained after every call, the origin's frames fed in pieces, and the
/// response bytes taken. It models both directions' windows (§6.9) and
/// records whatever the session does that RFC 9113 forbids.
private struct Origin: CustomStringConvertible {
    var session: HTTP2ClientSession
    let limits: HTTP2ClientSession.Limits
    var encoder = HPACKEncoder()
    private var decoder = HPACKDecoder()
    private var cutter = H2FrameCutter()
    private var ownFrames = H2FrameCutter()
    private var prefaceRead: [UInt8] = []
    private var openBlock: (stream: UInt32, endStream: Bool, bytes: [UInt8])?
    private let split: H2Split

    /// Every frame the session sent, decoded; and as read.
    private(set) var events: [H2Event] = []
    private(set) var rawFrames: [H2ReadFrame] = []
    private var eventsTaken = 0
    private(set) var violations: [String] = []
    private(set) var receiveError: HTTP2ConnectionError?
    private(set) var sendError: HTTP2ConnectionError?

    /// Response bytes taken from the session, all of them.
    private(set) var responses: [UInt8] = []
    private var responsesTaken = 0

    /// What the session granted this origin: what it may still send (§6.9).
    private var clientInitialWindow = 65535
    private(set) var connectionCredit = 65535
    private(set) var streamCredit: [UInt32: Int] = [:]
    /// DATA this origin sent (whole payloads, padding included).
    private(set) var dataSent: [UInt32: Int] = [:]
    private(set) var dataSentTotal = 0

    /// What this origin granted the session, and its frame size.
    private var serverInitialWindow = 65535
    private(set) var serverConnectionWindow = 65535
    private(set) var serverStreamWindows: [UInt32: Int] = [:]
    private(set) var serverMaxFrameSize = 16384
    private var highestOpened: UInt32 = 0
    private var endedByClient: Set<UInt32> = []
    /// Request DATA received, per stream (padding removed).
    private(set) var requestBodies: [UInt32: [UInt8]] = [:]

    /// Request bytes the session has not taken yet, in the pieces they came in.
    private var backlog: [[UInt8]] = []
    private(set) var requestBytesTaken = 0
    /// Every `send` call: how many bytes it was offered and how many it took.
    private(set) var sendCalls: [(offered: Int, taken: Int)] = []

    init(split: H2Split = .whole, limits: HTTP2ClientSession.Limits = HTTP2ClientSession.Limits(), handshake: Bool = true,
         settings: [(UInt16, UInt32)] = [])
    {
        self.limits = limits
        self.split = split
        session = HTTP2ClientSession(limits: limits)
        drain()
        if handshake {
            deliver(H2.settings(settings), split: .whole)
            _ = take()
        }
    }

    var pendingRequestBytes: Int { backlog.reduce(0) { $0 + $1.count } }

    // The session's state, without printing the whole session when an expectation fails.
    var isIdle: Bool { session.isIdle }
    var hasResponseBytes: Bool { session.hasResponseBytes }
    var goneAway: Bool { session.goneAway }
    var oldestStreamFailed: Bool { session.oldestStreamFailed }
    var isSendingBody: Bool { session.isSendingBody }
    var description: String { "Origin(\(events.count) frames read, \(responses.count) response bytes taken)" }

    /// The oldest stream's failure, if its turn has come (what it writes read).
    mutating func takeFailedStream() -> HTTP2ClientSession.StreamFailure? {
        defer { drain() }
        return session.takeFailedStream()
    }

    /// The request whose body goes is abandoned (what the session writes read; the requests that wait are not offered again).
    mutating func cancelSendingStream(reason: String) {
        session.cancelSendingStream(reason: reason)
        drain()
    }

    /// One takeResponseBytes call, its bytes not recorded.
    mutating func takeResponseBytes(maximum: Int) -> [UInt8] {
        defer { drain() }
        return session.takeResponseBytes(maximum: maximum)
    }

    // MARK: Requests in

    /// HTTP/1.1 request bytes for the session, cut as `split` (or the origin's split) says.
    mutating func request(_ bytes: [UInt8], split: H2Split? = nil) {
        var cutter = H2Splitter(split ?? self.split)
        var offset = 0
        for n in cutter.pieces(bytes.count) {
            backlog.append(Array(bytes[offset ..< offset + n]))
            offset += n
        }
        pump()
    }

    mutating func request(_ s: String, split: H2Split? = nil) { request(utf8(s), split: split) }

    /// Request bytes in pieces of `pieceSize`.
    mutating func request(_ bytes: [UInt8], pieceSize: Int) {
        var offset = 0
        while offset < bytes.count {
            let n = min(pieceSize, bytes.count - offset)
            backlog.append(Array(bytes[offset ..< offset + n]))
            offset += n
        }
        pump()
    }

    /// Offers the session what it has not taken, until it takes nothing.
    mutating func pump() {
        // Bounded: each pass removes a piece, shortens one, or returns.
        for _ in 0 ..< 10_000_000 {
            guard sendError == nil, let piece = backlog.first else { return }
            let result: Result<Int, HTTP2ConnectionError> = piece.withUnsafeBytes { raw in
                do throws(HTTP2ConnectionError) {
                    return .success(try session.send(raw))
                } catch {
                    return .failure(error)
                }
            }
            switch result {
            case let .failure(error):
                sendError = error
                drain()
                return
            case let .success(n):
                sendCalls.append((piece.count, n))
                guard n >= 0, n <= piece.count else {
                    violations.append("send returned \(n) for \(piece.count) bytes")
                    return
                }
                requestBytesTaken += n
                drain()
                if n == piece.count {
                    backlog.removeFirst()
                } else {
                    backlog[0] = Array(piece[n...])
                    if n == 0 { return }
                }
            }
        }
    }

    // MARK: Frames out of the session

    /// Reads what the session wrote.
    mutating func drain() {
        let output = session.takeOutput()
        if session.hasOutput { violations.append("hasOutput after takeOutput") }
        var rest = output[...]
        if prefaceRead.count < clientPreface.count {
            let n = min(clientPreface.count - prefaceRead.count, rest.count)
            prefaceRead += rest.prefix(n)
            rest = rest.dropFirst(n)
            if prefaceRead != Array(clientPreface.prefix(prefaceRead.count)) {
                violations.append("the output does not begin with the client preface: \(prefaceRead)")
            }
        }
        cutter.append(Array(rest))
        // Bounded: every frame takes at least 9 of the bytes appended.
        while let frame = cutter.next() { read(frame) }
    }

    /// Frames since the last call.
    mutating func take() -> [H2Event] {
        defer { eventsTaken = events.count }
        return Array(events[eventsTaken...])
    }

    private mutating func read(_ frame: H2ReadFrame) {
        rawFrames.append(frame)
        if frame.reservedBit { violations.append("reserved bit set: \(frame)") }
        if frame.payload.count > serverMaxFrameSize { violations.append("\(frame) is over SETTINGS_MAX_FRAME_SIZE \(serverMaxFrameSize)") }
        if let block = openBlock {
            guard frame.type == H2Type.continuation, frame.stream == block.stream else {
                violations.append("\(frame) inside a header block")
                openBlock = nil
                events.append(.other(frame))
                return
            }
            let bytes = block.bytes + frame.payload
            if frame.flags & H2Flag.endHeaders != 0 {
                openBlock = nil
                decodeBlock(stream: block.stream, endStream: block.endStream, bytes)
            } else {
                openBlock = (block.stream, block.endStream, bytes)
            }
            return
        }
        let p = frame.payload
        switch frame.type {
        case H2Type.settings:
            if frame.stream != 0 { violations.append("SETTINGS on stream \(frame.stream)") }
            if frame.flags & H2Flag.ack != 0 {
                if !p.isEmpty { violations.append("SETTINGS ACK with a payload") }
                events.append(.settingsAck)
                return
            }
            if p.count % 6 != 0 { violations.append("SETTINGS of \(p.count) bytes") }
            var values: [H2SettingValue] = []
            var i = 0
            while i + 6 <= p.count {
                let id = UInt16(p[i]) << 8 | UInt16(p[i + 1])
                let value = UInt32(p[i + 2]) << 24 | UInt32(p[i + 3]) << 16 | UInt32(p[i + 4]) << 8 | UInt32(p[i + 5])
                values.append(H2SettingValue(id: id, value: value))
                if id == H2Setting.initialWindowSize {
                    let delta = Int(value) - clientInitialWindow
                    clientInitialWindow = Int(value)
                    for key in streamCredit.keys { streamCredit[key]! += delta }
                }
                i += 6
            }
            events.append(.settings(values))
        case H2Type.ping:
            if frame.stream != 0 || p.count != 8 { violations.append("bad \(frame)") }
            events.append(frame.flags & H2Flag.ack != 0 ? .pingAck(p) : .ping(p))
        case H2Type.windowUpdate:
            guard p.count == 4 else {
                violations.append("bad \(frame)")
                events.append(.other(frame))
                return
            }
            if p[0] & 0x80 != 0 { violations.append("WINDOW_UPDATE with its reserved bit set") }
            let increment = (Int(p[0]) << 24 | Int(p[1]) << 16 | Int(p[2]) << 8 | Int(p[3])) & 0x7FFF_FFFF
            if increment == 0 { violations.append("WINDOW_UPDATE of 0 on stream \(frame.stream)") }
            if frame.stream == 0 {
                connectionCredit += increment
                let most = max(65535, limits.connectionWindow)
                if connectionCredit > most {
                    violations.append("the connection window given back is \(connectionCredit), more than the \(most) granted")
                }
            } else if streamCredit[frame.stream] != nil {
                streamCredit[frame.stream]! += increment
                if streamCredit[frame.stream]! > clientInitialWindow {
                    violations.append("stream \(frame.stream)'s window given back is \(streamCredit[frame.stream]!), more than the \(clientInitialWindow) granted")
                }
            } else {
                violations.append("WINDOW_UPDATE on stream \(frame.stream), never opened")
            }
            events.append(.windowUpdate(stream: frame.stream, increment: UInt32(increment)))
        case H2Type.rstStream:
            guard p.count == 4, frame.stream != 0 else {
                violations.append("bad \(frame)")
                events.append(.other(frame))
                return
            }
            endedByClient.insert(frame.stream)
            events.append(.rst(stream: frame.stream, code: UInt32(p[0]) << 24 | UInt32(p[1]) << 16 | UInt32(p[2]) << 8 | UInt32(p[3])))
        case H2Type.goAway:
            guard p.count >= 8, frame.stream == 0 else {
                violations.append("bad \(frame)")
                events.append(.other(frame))
                return
            }
            let w = p.map { UInt32($0) }
            events.append(.goAway(last: (w[0] << 24 | w[1] << 16 | w[2] << 8 | w[3]) & 0x7FFF_FFFF,
                                  code: w[4] << 24 | w[5] << 16 | w[6] << 8 | w[7], debug: text(Array(p[8...]))))
        case H2Type.headers:
            if frame.stream == 0 || frame.stream % 2 == 0 { violations.append("HEADERS on stream \(frame.stream)") }
            if endedByClient.contains(frame.stream) { violations.append("HEADERS on stream \(frame.stream) after it ended") }
            if frame.stream > highestOpened {
                highestOpened = frame.stream
                streamCredit[frame.stream] = clientInitialWindow
                serverStreamWindows[frame.stream] = serverInitialWindow
            } else if serverStreamWindows[frame.stream] == nil {
                violations.append("HEADERS opening stream \(frame.stream) after stream \(highestOpened)")
            }
            var payload = p[...]
            if frame.flags & H2Flag.padded != 0 {
                let padding = Int(payload.first ?? 0)
                payload = payload.dropFirst().dropLast(padding)
            }
            if frame.flags & H2Flag.priority != 0 { payload = payload.dropFirst(5) }
            let endStream = frame.flags & H2Flag.endStream != 0
            if frame.flags & H2Flag.endHeaders != 0 {
                decodeBlock(stream: frame.stream, endStream: endStream, Array(payload))
            } else {
                openBlock = (frame.stream, endStream, Array(payload))
            }
        case H2Type.data:
            if frame.stream == 0 { violations.append("DATA on stream 0") }
            if endedByClient.contains(frame.stream) { violations.append("DATA on stream \(frame.stream) after it ended") }
            serverConnectionWindow -= p.count
            if serverConnectionWindow < 0 { violations.append("DATA past the connection window (\(serverConnectionWindow))") }
            if let window = serverStreamWindows[frame.stream] {
                serverStreamWindows[frame.stream] = window - p.count
                if window - p.count < 0 { violations.append("DATA past stream \(frame.stream)'s window (\(window - p.count))") }
            } else {
                violations.append("DATA on stream \(frame.stream), never opened")
            }
            var payload = p[...]
            if frame.flags & H2Flag.padded != 0 {
                let padding = Int(payload.first ?? 0)
                payload = payload.dropFirst().dropLast(padding)
            }
            let endStream = frame.flags & H2Flag.endStream != 0
            if endStream { endedByClient.insert(frame.stream) }
            requestBodies[frame.stream, default: []] += payload
            events.append(.data(stream: frame.stream, bytes: Array(payload), endStream: endStream))
        case H2Type.continuation:
            violations.append("CONTINUATION with no header block open")
            events.append(.other(frame))
        default:
            events.append(.other(frame))
        }
    }

    private mutating func decodeBlock(stream: UInt32, endStream: Bool, _ bytes: [UInt8]) {
        do {
            let fields = try decoder.decode(bytes)
            if endStream { endedByClient.insert(stream) }
            events.append(.headers(stream: stream, fields: fields.map { H2Field($0.name, $0.value) }, endStream: endStream))
        } catch {
            violations.append("stream \(stream): a header block the origin cannot decode: \(error)")
        }
    }

    // MARK: Frames into the session

    /// The origin's bytes, cut as `split` (or the origin's split) says. Request
    /// bytes that wait are offered again afterwards, as the engine would.
    mutating func deliver(_ bytes: [UInt8], split: H2Split? = nil) {
        track(outgoing: bytes)
        var cutter = H2Splitter(split ?? self.split)
        var offset = 0
        for n in cutter.pieces(bytes.count) {
            guard receiveError == nil else { break }
            do {
                try session.receive(Array(bytes[offset ..< offset + n]))
            } catch {
                receiveError = error
            }
            offset += n
            drain()
        }
        pump()
    }

    /// The windows and settings this origin's own frames set.
    private mutating func track(outgoing bytes: [UInt8]) {
        ownFrames.append(bytes)
        while let frame = ownFrames.next() {
            let p = frame.payload
            switch frame.type {
            case H2Type.settings where frame.flags & H2Flag.ack == 0:
                var i = 0
                while i + 6 <= p.count {
                    let id = UInt16(p[i]) << 8 | UInt16(p[i + 1])
                    let value = Int(p[i + 2]) << 24 | Int(p[i + 3]) << 16 | Int(p[i + 4]) << 8 | Int(p[i + 5])
                    if id == H2Setting.initialWindowSize {
                        let delta = value - serverInitialWindow
                        serverInitialWindow = value
                        for key in serverStreamWindows.keys { serverStreamWindows[key]! += delta }
                    } else if id == H2Setting.maxFrameSize {
                        serverMaxFrameSize = value
                    }
                    i += 6
                }
            case H2Type.windowUpdate where p.count == 4:
                let increment = (Int(p[0]) << 24 | Int(p[1]) << 16 | Int(p[2]) << 8 | Int(p[3])) & 0x7FFF_FFFF
                if frame.stream == 0 {
                    serverConnectionWindow += increment
                } else if serverStreamWindows[frame.stream] != nil {
                    serverStreamWindows[frame.stream]! += increment
                }
            case H2Type.data:
                dataSent[frame.stream, default: 0] += p.count
                dataSentTotal += p.count
                connectionCredit -= p.count
                streamCredit[frame.stream, default: 0] -= p.count
            default:
                break
            }
        }
    }

    /// A HEADERS frame carrying `fields`.
    mutating func headers(_ stream: UInt32, _ fields: [HPACKHeader], endStream: Bool = false) -> [UInt8] {
        H2.headers(stream: stream, block: encoder.encode(fields), endStream: endStream)
    }

    /// A response head: :status, then `fields`.
    mutating func head(_ stream: UInt32, _ status: Int, _ fields: [HPACKHeader] = [], endStream: Bool = false) -> [UInt8] {
        headers(stream, [hf(":status", String(status))] + fields, endStream: endStream)
    }

    /// What the origin may send on `stream` now.
    func room(_ stream: UInt32) -> Int { min(connectionCredit, streamCredit[stream] ?? 0) }

    // MARK: Responses out

    /// Takes response bytes, `maximum` a call, until a call returns none (or once).
    mutating func takeResponses(maximum: Int = 1 << 20, once: Bool = false) {
        // Bounded: stops at the first empty call.
        for _ in 0 ..< 1_000_000 {
            let bytes = session.takeResponseBytes(maximum: maximum)
            if bytes.count > maximum { violations.append("takeResponseBytes(maximum: \(maximum)) returned \(bytes.count)") }
            responses += bytes
            drain()
            if bytes.isEmpty || once { break }
        }
    }

    /// Response bytes taken since the last call.
    mutating func newResponses() -> [UInt8] {
        defer { responsesTaken = responses.count }
        return Array(responses[responsesTaken...])
    }

    mutating func newResponseText() -> String { text(newResponses()) }
}

/// The pseudo-fields of a request, then `extra`.
private func requestFields(_ method: String, _ path: String, authority: String = "h.test", _ extra: [H2Field] = []) -> [H2Field] {
    [ev(":method", method), ev(":scheme", "https"), ev(":authority", authority), ev(":path", path)] + extra
}

private extension Array where Element == H2Event {
    var headerEvents: [H2Event] {
        filter { if case .headers = $0 { return true } else { return false } }
    }

    var dataEvents: [H2Event] {
        filter { if case .data = $0 { return true } else { return false } }
    }

    /// The DATA bytes on `stream`, joined.
    func body(_ stream: UInt32) -> [UInt8] {
        reduce(into: []) { sum, event in
            if case let .data(s, bytes, _) = event, s == stream { sum += bytes }
        }
    }

    /// Whether a frame on `stream` carried END_STREAM.
    func ended(_ stream: UInt32) -> Bool {
        contains { event in
            switch event {
            case let .data(s, _, end), let .headers(s, _, end): s == stream && end
            default: false
            }
        }
    }
}

// MARK: Tests

@Suite struct HTTP2ClientSessionTests {
    // MARK: 1. The connection's start

    @Test(arguments: zip([256 * 1024, 100_000, 65535, 16384, 1_000_000], [1024 * 1024, 3_000_000, 65535, 200_000, 1_000_000]))
    func startsWithPrefaceSettingsAndConnectionWindow(streamWindow: Int, connectionWindow: Int) throws {
        var session = HTTP2ClientSession(limits: limits(streamWindow: streamWindow, connectionWindow: connectionWindow))
        #expect(session.hasOutput)
        #expect(session.isIdle)
        #expect(!session.hasResponseBytes)
        let output = session.takeOutput()
        #expect(!session.hasOutput)
        #expect(session.takeOutput().isEmpty)
        try #require(output.count >= clientPreface.count)
        #expect(Array(output.prefix(clientPreface.count)) == clientPreface)
        var cutter = H2FrameCutter()
        cutter.append(Array(output.dropFirst(clientPreface.count)))
        var frames: [H2ReadFrame] = []
        while let frame = cutter.next() { frames.append(frame) }
        #expect(cutter.buffered == 0)
        let settings = try #require(frames.first)
        #expect(settings.type == H2Type.settings && settings.flags == 0 && settings.stream == 0 && !settings.reservedBit)
        #expect(settings.payload.count % 6 == 0)
        var values: [UInt16: UInt32] = [:]
        var i = 0
        while i + 6 <= settings.payload.count {
            let p = settings.payload
            let id = UInt16(p[i]) << 8 | UInt16(p[i + 1])
            #expect(values[id] == nil, "setting \(id) twice")
            values[id] = UInt32(p[i + 2]) << 24 | UInt32(p[i + 3]) << 16 | UInt32(p[i + 4]) << 8 | UInt32(p[i + 5])
            i += 6
        }
        #expect(values[H2Setting.enablePush] == 0)
        #expect(values[H2Setting.initialWindowSize] == UInt32(streamWindow))
        // Then the connection's window, raised to connectionWindow by one WINDOW_UPDATE.
        let rest = Array(frames.dropFirst())
        if connectionWindow > 65535 {
            #expect(rest.count == 1, "frames after SETTINGS: \(rest)")
            let update = try #require(rest.first)
            #expect(update.type == H2Type.windowUpdate && update.stream == 0 && update.flags == 0)
            #expect(update.payload == H2.be32(UInt32(connectionWindow - 65535)))
        } else {
            #expect(rest.isEmpty, "frames after SETTINGS: \(rest)")
        }
    }

    @Test(arguments: H2Split.all)
    func settingsAreAcknowledgedAndPingsAnswered(split: H2Split) {
        var origin = Origin(split: split, handshake: false)
        let start = origin.take()
        #expect(start.count == 2)
        if case let .settings(values)? = start.first {
            #expect(Set(values) == [H2SettingValue(id: H2Setting.enablePush, value: 0),
                                    H2SettingValue(id: H2Setting.initialWindowSize, value: 256 * 1024)])
        } else {
            Issue.record("the first frame is not SETTINGS: \(start)")
        }
        #expect(start.dropFirst().first == .windowUpdate(stream: 0, increment: UInt32(1024 * 1024 - 65535)))
        origin.deliver(H2.settings([(H2Setting.headerTableSize, 4096), (H2Setting.maxConcurrentStreams, 100),
                                    (H2Setting.maxHeaderListSize, 1 << 20), (0x99, 7)]))
        #expect(origin.take() == [.settingsAck])
        let opaque: [UInt8] = [1, 2, 3, 4, 250, 251, 252, 0]
        origin.deliver(H2.ping(opaque))
        #expect(origin.take() == [.pingAck(opaque)])
        // ACKs from the origin ask for nothing; a later SETTINGS and PING are answered too.
        origin.deliver(H2.ping(opaque, ack: true) + H2.settingsAck + H2.settings([]) + H2.ping([9, 8, 7, 6, 5, 4, 3, 2]))
        #expect(origin.take() == [.settingsAck, .pingAck([9, 8, 7, 6, 5, 4, 3, 2])])
        #expect(origin.receiveError == nil)
        #expect(origin.violations == [])
        #expect(origin.isIdle)
    }

    // MARK: 2. Requests

    @Test(arguments: H2Split.all)
    func getBecomesOneHeadersFrame(split: H2Split) throws {
        var origin = Origin(split: split)
        let request = "GET /p?q HTTP/1.1\r\nHost: h.test:8443\r\nAccept: x\r\nConnection: keep-alive\r\n\r\n"
        origin.request(request)
        #expect(origin.take() == [.headers(stream: 1, fields: requestFields("GET", "/p?q", authority: "h.test:8443", [ev("accept", "x")]),
                                           endStream: true)])
        let frame = try #require(origin.rawFrames.last)
        #expect(frame.type == H2Type.headers)
        #expect(frame.flags & H2Flag.endStream != 0 && frame.flags & H2Flag.endHeaders != 0, "flags 0x\(String(frame.flags, radix: 16))")
        #expect(origin.requestBytesTaken == request.utf8.count)
        #expect(origin.sendError == nil)
        #expect(origin.violations == [])
        #expect(!origin.isIdle)
    }

    @Test func connectionFieldsAreDroppedAndTeKeptOnlyAsTrailers() {
        var origin = Origin()
        origin.request("GET /a HTTP/1.1\r\nHost: h.test\r\nConnection: keep-alive, X-Hop\r\nKeep-Alive: timeout=5\r\n"
            + "Proxy-Connection: keep-alive\r\nX-Hop: 1\r\nX-Keep: 2\r\nTE: trailers\r\nUser-Agent: u/1\r\n\r\n")
        origin.request("GET /b HTTP/1.1\r\nHost: h.test\r\nTE: gzip, trailers\r\nX-A: 1\r\n\r\n")
        origin.request("GET /c HTTP/1.1\r\nX-B: 2\r\nHost: other.test\r\nConnection: close\r\nCookie: a=1\r\n\r\n")
        let events = origin.take()
        #expect(events == [
            .headers(stream: 1, fields: requestFields("GET", "/a", [ev("x-keep", "2"), ev("te", "trailers"), ev("user-agent", "u/1")]),
                     endStream: true),
            .headers(stream: 3, fields: requestFields("GET", "/b", [ev("x-a", "1")]), endStream: true),
            .headers(stream: 5, fields: requestFields("GET", "/c", authority: "other.test", [ev("x-b", "2"), ev("cookie", "a=1")]),
                     endStream: true),
        ])
        for case let .headers(_, fields, _) in events {
            for name in ["host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "x-hop"] {
                #expect(!fields.contains { $0.name == name }, "\(name) in \(fields)")
            }
        }
        #expect(origin.sendError == nil)
        #expect(origin.violations == [])
    }

    @Test func successiveRequestsUseOddStreamsInOrder() {
        var origin = Origin()
        origin.request("GET /1 HTTP/1.1\r\nHost: h.test\r\n\r\nGET /2 HTTP/1.1\r\nHost: h.test\r\n\r\nHEAD /3 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        #expect(origin.take() == [
            .headers(stream: 1, fields: requestFields("GET", "/1"), endStream: true),
            .headers(stream: 3, fields: requestFields("GET", "/2"), endStream: true),
            .headers(stream: 5, fields: requestFields("HEAD", "/3"), endStream: true),
        ])
        var frames: [UInt8] = []
        for id: UInt32 in [1, 3, 5] { frames += origin.head(id, 204, endStream: true) }
        origin.deliver(frames)
        origin.takeResponses()
        #expect(origin.isIdle)
        origin.request("DELETE /4 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.request("GET /5 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        #expect(origin.take().headerEvents == [
            .headers(stream: 7, fields: requestFields("DELETE", "/4"), endStream: true),
            .headers(stream: 9, fields: requestFields("GET", "/5"), endStream: true),
        ])
        #expect(origin.sendError == nil && origin.receiveError == nil)
        #expect(origin.violations == [])
    }

    @Test(arguments: H2Split.all)
    func postWithContentLengthSendsItsBodyAsData(split: H2Split) throws {
        var origin = Origin(split: split)
        let body = pattern(40000)
        let request = utf8("POST /up HTTP/1.1\r\nHost: h.test\r\nContent-Type: application/octet-stream\r\nContent-Length: 40000\r\n\r\n") + body
        origin.request(request)
        let events = origin.take()
        let heads = events.headerEvents
        #expect(heads.count == 1)
        if case let .headers(stream, fields, endStream)? = heads.first {
            #expect(stream == 1)
            #expect(!endStream, "HEADERS of a request with a body carry END_STREAM")
            #expect(Array(fields.prefix(4)) == requestFields("POST", "/up"))
            #expect(fields.contains(ev("content-type", "application/octet-stream")))
            #expect(!fields.contains { $0.name == "transfer-encoding" })
        }
        let headers = try #require(origin.rawFrames.first { $0.type == H2Type.headers })
        #expect(headers.flags & H2Flag.endHeaders != 0)
        if case .headers(1, _, _)? = events.first {} else { Issue.record("the first frame is not the HEADERS: \(events.prefix(1))") }
        expectBytes(events.body(1), body, "events.body(1)")
        let data = events.dataEvents
        for (index, event) in data.enumerated() {
            if case let .data(stream, _, endStream) = event {
                #expect(stream == 1)
                #expect(endStream == (index == data.count - 1), "END_STREAM on DATA \(index) of \(data.count)")
            }
        }
        #expect(origin.requestBytesTaken == request.count)
        #expect(origin.sendError == nil)
        #expect(origin.violations == [])
    }

    @Test(arguments: H2Split.all)
    func chunkedPostIsSentUnchunked(split: H2Split) {
        var origin = Origin(split: split)
        let request = "POST /up HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5\r\nhello\r\n6\r\n world\r\na\r\n0123456789\r\n0\r\n\r\n"
            + "GET /after HTTP/1.1\r\nHost: h.test\r\n\r\n"
        origin.request(request)
        let events = origin.take()
        #expect(events.normalized == [
            .headers(stream: 1, fields: requestFields("POST", "/up"), endStream: false),
            .data(stream: 1, bytes: utf8("hello world0123456789"), endStream: true),
            .headers(stream: 3, fields: requestFields("GET", "/after"), endStream: true),
        ])
        #expect(origin.requestBytesTaken == request.utf8.count)
        #expect(origin.sendError == nil)
        #expect(origin.violations == [])
    }

    /// The same requests in any pieces make the same frames.
    @Test(arguments: H2Split.all)
    func requestPiecesMakeTheSameFrames(split: H2Split) {
        let body = pattern(30000, seed: 3)
        let script = utf8("GET /one HTTP/1.1\r\nHost: h.test\r\nAccept: */*\r\n\r\n")
            + utf8("PUT /two HTTP/1.1\r\nHost: h.test\r\nContent-Length: 30000\r\n\r\n") + body
            + utf8("POST /three HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nx-t: 1\r\n\r\n")
            + utf8("HEAD /four HTTP/1.1\r\nHost: h.test\r\n\r\n")
        var origin = Origin(split: split)
        origin.request(script)
        #expect(origin.take().normalized == [
            .headers(stream: 1, fields: requestFields("GET", "/one", [ev("accept", "*/*")]), endStream: true),
            .headers(stream: 3, fields: requestFields("PUT", "/two", [ev("content-length", "30000")]), endStream: false),
            .data(stream: 3, bytes: body, endStream: true),
            .headers(stream: 5, fields: requestFields("POST", "/three"), endStream: false),
            .data(stream: 5, bytes: utf8("abc0123456789abcdef"), endStream: true),
            .headers(stream: 7, fields: requestFields("HEAD", "/four"), endStream: true),
        ])
        #expect(origin.requestBytesTaken == script.count)
        #expect(origin.sendError == nil)
        #expect(origin.violations == [])
    }

    /// DATA stays within the stream's window; WINDOW_UPDATEs and a larger SETTINGS_INITIAL_WINDOW_SIZE release it.
    @Test(arguments: [H2Split.whole, .byteByByte, .random(5)])
    func dataWaitsForTheStreamWindow(split: H2Split) {
        var origin = Origin(split: split, settings: [(H2Setting.initialWindowSize, 1000)])
        let body = pattern(5000)
        origin.request(utf8("POST /w HTTP/1.1\r\nHost: h.test\r\nContent-Length: 5000\r\n\r\n") + body)
        var events = origin.take()
        #expect(events.body(1).count == 1000)
        #expect(!events.ended(1))
        origin.deliver(H2.windowUpdate(stream: 1, 1500))
        events = origin.take()
        #expect(events.body(1).count == 1500)
        #expect(!events.ended(1))
        // The connection's window is not what holds it.
        origin.deliver(H2.windowUpdate(stream: 0, 100_000))
        #expect(origin.take().dataEvents == [])
        // §6.9.2: a larger initial window opens the open stream's window by the difference.
        origin.deliver(H2.settings([(H2Setting.initialWindowSize, 3000)]))
        events = origin.take()
        #expect(events.contains(.settingsAck))
        #expect(events.body(1).count == 2000)
        #expect(!events.ended(1))
        origin.deliver(H2.windowUpdate(stream: 1, 600))
        events = origin.take()
        #expect(events.body(1).count == 500)
        #expect(events.ended(1))
        expectBytes(origin.requestBodies[1], body, "origin.requestBodies[1]")
        #expect(origin.sendError == nil && origin.receiveError == nil)
        #expect(origin.violations == [])
    }

    @Test func dataWaitsForTheConnectionWindow() {
        var origin = Origin()
        origin.request(utf8("POST /1 HTTP/1.1\r\nHost: h.test\r\nContent-Length: 50000\r\n\r\n") + pattern(50000))
        #expect(origin.take().body(1).count == 50000)
        // Stream 3 has a stream window of 65535 but the connection only 15535 left.
        origin.request(utf8("POST /2 HTTP/1.1\r\nHost: h.test\r\nContent-Length: 50000\r\n\r\n") + pattern(50000, seed: 1))
        var events = origin.take()
        #expect(events.headerEvents.count == 1)
        #expect(events.body(3).count == 15535)
        origin.deliver(H2.windowUpdate(stream: 3, 100_000))
        #expect(origin.take().dataEvents == [])
        origin.deliver(H2.windowUpdate(stream: 0, 20000))
        events = origin.take()
        #expect(events.body(3).count == 20000)
        #expect(!events.ended(3))
        origin.deliver(H2.windowUpdate(stream: 0, 14465))
        events = origin.take()
        #expect(events.body(3).count == 14465)
        #expect(events.ended(3))
        expectBytes(origin.requestBodies[3], pattern(50000, seed: 1), "origin.requestBodies[3]")
        #expect(origin.sendError == nil && origin.receiveError == nil)
        #expect(origin.violations == [])
    }

    /// §6.9.2: a smaller SETTINGS_INITIAL_WINDOW_SIZE can make an open stream's window negative.
    @Test func aSmallerInitialWindowHoldsTheData() {
        var origin = Origin()
        let body = pattern(100_000, seed: 9)
        origin.request(utf8("POST /n HTTP/1.1\r\nHost: h.test\r\nContent-Length: 100000\r\n\r\n") + body)
        #expect(origin.take().body(1).count == 65535)
        origin.deliver(H2.windowUpdate(stream: 0, 200_000))
        #expect(origin.take().dataEvents == [])
        origin.deliver(H2.settings([(H2Setting.initialWindowSize, 1000)]))
        #expect(origin.take() == [.settingsAck])
        // The stream's window is now -64535: this brings it to 0.
        origin.deliver(H2.windowUpdate(stream: 1, 64535))
        #expect(origin.take().dataEvents == [])
        origin.deliver(H2.windowUpdate(stream: 1, 100))
        #expect(origin.take().body(1).count == 100)
        origin.deliver(H2.settings([(H2Setting.initialWindowSize, 40000)]))
        let events = origin.take()
        #expect(events.body(1).count == 34365)
        #expect(events.ended(1))
        expectBytes(origin.requestBodies[1], body, "origin.requestBodies[1]")
        #expect(origin.violations == [])
    }

    @Test func framesStayWithinTheMaximumFrameSize() {
        // The default 16384, for DATA and for a header block that needs CONTINUATION.
        var origin = Origin()
        let big = String(repeating: "a", count: 40000)
        origin.request(utf8("POST /f HTTP/1.1\r\nHost: h.test\r\nX-Big: \(big)\r\nContent-Length: 60000\r\n\r\n") + pattern(60000))
        let events = origin.take()
        #expect(events.headerEvents == [.headers(stream: 1, fields: requestFields("POST", "/f", [ev("x-big", big), ev("content-length", "60000")]),
                                                 endStream: false)])
        expectBytes(events.body(1), pattern(60000), "events.body(1)")
        #expect(events.ended(1))
        #expect(origin.rawFrames.allSatisfy { $0.payload.count <= 16384 })
        #expect(origin.violations == [])

        // A larger SETTINGS_MAX_FRAME_SIZE, with the windows open.
        var larger = Origin(settings: [(H2Setting.maxFrameSize, 20000), (H2Setting.initialWindowSize, 1_000_000)])
        larger.deliver(H2.windowUpdate(stream: 0, 1_000_000))
        larger.request(utf8("POST /g HTTP/1.1\r\nHost: h.test\r\nContent-Length: 100000\r\n\r\n") + pattern(100_000))
        let more = larger.take()
        expectBytes(more.body(1), pattern(100_000), "more.body(1)")
        #expect(more.ended(1))
        #expect(larger.rawFrames.allSatisfy { $0.payload.count <= 20000 })
        #expect(larger.violations == [])
    }

    /// `send` stops taking body bytes once more than pendingDataLimit of them wait for the windows.
    @Test(arguments: [100, 1000, 7])
    func sendTakesFewerBytesWhileTheBodyWaits(pieceSize: Int) {
        let limit = 1000
        var origin = Origin(limits: limits(pendingDataLimit: limit), settings: [(H2Setting.initialWindowSize, 0)])
        let head = utf8("POST /p HTTP/1.1\r\nHost: h.test\r\nContent-Length: 10000\r\n\r\n")
        let body = pattern(10000, seed: 5)
        origin.request(head)
        origin.request(body, pieceSize: pieceSize)
        #expect(origin.take().headerEvents.count == 1)
        let bodyTaken = origin.requestBytesTaken - head.count
        #expect(bodyTaken >= limit, "send took only \(bodyTaken) bytes of the body")
        #expect(bodyTaken <= limit + pieceSize, "\(bodyTaken) bytes of body wait, the limit being \(limit)")
        #expect(origin.sendCalls.last.map { $0.taken < $0.offered } == true, "the last send took everything: \(origin.sendCalls.suffix(3))")
        #expect(origin.pendingRequestBytes == head.count + body.count - origin.requestBytesTaken)
        // The windows open: the rest goes.
        origin.deliver(H2.settings([(H2Setting.initialWindowSize, 65535)]))
        let events = origin.take()
        expectBytes(events.body(1), body, "events.body(1)")
        #expect(events.ended(1))
        #expect(origin.pendingRequestBytes == 0)
        #expect(origin.requestBytesTaken == head.count + body.count)
        #expect(origin.violations == [])
    }

    /// The next request's HEADERS go only after the body before it has ended.
    @Test(arguments: ["POST /a HTTP/1.1\r\nHost: h.test\r\nContent-Length: 10\r\n\r\n0123456789",
                      "POST /a HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n0\r\n\r\n"])
    func theNextRequestWaitsForTheBodyBeforeIt(first: String) {
        var origin = Origin(settings: [(H2Setting.initialWindowSize, 0)])
        origin.request(first + "POST /b HTTP/1.1\r\nHost: h.test\r\nContent-Length: 3\r\n\r\nxyzGET /c HTTP/1.1\r\nHost: h.test\r\n\r\n")
        let before = origin.take()
        #expect(before.map(\.stream) == [1], "before stream 1's body went: \(before)")
        #expect(before.headerEvents.count == 1)
        origin.deliver(H2.windowUpdate(stream: 1, 10))
        let after = origin.take()
        #expect(after.normalized == [
            .data(stream: 1, bytes: utf8("0123456789"), endStream: true),
            .headers(stream: 3, fields: requestFields("POST", "/b", [ev("content-length", "3")]), endStream: false),
        ])
        origin.deliver(H2.windowUpdate(stream: 3, 3))
        #expect(origin.take().normalized == [
            .data(stream: 3, bytes: utf8("xyz"), endStream: true),
            .headers(stream: 5, fields: requestFields("GET", "/c"), endStream: true),
        ])
        expectBytes(origin.requestBodies[1], utf8("0123456789"), "origin.requestBodies[1]")
        expectBytes(origin.requestBodies[3], utf8("xyz"), "origin.requestBodies[3]")
        #expect(origin.pendingRequestBytes == 0)
        #expect(origin.sendError == nil)
        #expect(origin.violations == [])
    }

    enum EarlyResponse: String, CaseIterable, Sendable, CustomStringConvertible {
        case notYetTaken, taken
        var description: String { rawValue }
    }

    /// A response that ends before its request's body has all gone (§8.1: the
    /// origin may answer early). With no RST_STREAM the body goes on as the
    /// windows open, then the next request.
    @Test(arguments: EarlyResponse.allCases)
    func anEarlyResponseLeavesTheBodyToGoOn(when: EarlyResponse) {
        var origin = Origin()
        let body = pattern(100_000, seed: 6)
        origin.request(utf8("POST /up HTTP/1.1\r\nHost: h.test\r\nContent-Length: 100000\r\n\r\n") + body
            + utf8("GET /next HTTP/1.1\r\nHost: h.test\r\n\r\n"))
        #expect(origin.take().body(1).count == 65535)
        origin.deliver(origin.head(1, 200, [hf("content-length", "2")]) + H2.data(stream: 1, "ok", endStream: true))
        if when == .taken {
            origin.takeResponses()
            #expect(origin.newResponseText() == "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        }
        origin.deliver(H2.windowUpdate(stream: 0, 100_000) + H2.windowUpdate(stream: 1, 100_000))
        let events = origin.take()
        #expect(events.body(1).count == 100_000 - 65535)
        #expect(events.ended(1))
        #expect(events.headerEvents == [.headers(stream: 3, fields: requestFields("GET", "/next"), endStream: true)])
        expectBytes(origin.requestBodies[1], body, "stream 1's body")
        // The rest would answer a stream that was never opened.
        guard events.headerEvents.count == 1 else { return }
        origin.deliver(origin.head(3, 204, endStream: true))
        origin.takeResponses()
        #expect(origin.newResponseText().hasSuffix("HTTP/1.1 204 No Content\r\n\r\n"))
        #expect(origin.pendingRequestBytes == 0)
        #expect(origin.receiveError == nil && origin.sendError == nil)
        #expect(origin.violations == [])
        #expect(origin.isIdle)
    }

    /// §8.1: after a complete response, RST_STREAM NO_ERROR asks the client to
    /// stop sending the body without error: what is left of it does not go,
    /// and the next request is not held behind it.
    @Test(arguments: EarlyResponse.allCases)
    func resetNoErrorAfterAnEarlyResponseDropsTheRestOfTheBody(when: EarlyResponse) {
        var origin = Origin()
        origin.request(utf8("POST /up HTTP/1.1\r\nHost: h.test\r\nContent-Length: 100000\r\n\r\n") + pattern(100_000)
            + utf8("GET /next HTTP/1.1\r\nHost: h.test\r\n\r\n"))
        #expect(origin.take().body(1).count == 65535)
        origin.deliver(origin.head(1, 413, [hf("content-length", "0")], endStream: true) + H2.rst(stream: 1, H2Code.noError))
        #expect(origin.receiveError == nil)
        if when == .taken {
            origin.takeResponses()
            #expect(origin.newResponseText() == "HTTP/1.1 413 Content Too Large\r\ncontent-length: 0\r\n\r\n")
        }
        origin.deliver(H2.windowUpdate(stream: 0, 100_000))
        let events = origin.take()
        #expect(events.body(1).isEmpty, "\(events.body(1).count) more bytes on the reset stream")
        #expect(events.headerEvents == [.headers(stream: 3, fields: requestFields("GET", "/next"), endStream: true)])
        guard events.headerEvents.count == 1 else { return }
        origin.takeResponses()
        origin.deliver(origin.head(3, 204, endStream: true))
        origin.takeResponses()
        #expect(origin.newResponseText().hasSuffix("HTTP/1.1 204 No Content\r\n\r\n"))
        #expect(origin.receiveError == nil && origin.sendError == nil)
        #expect(origin.violations == [])
        #expect(origin.isIdle)
    }

    @Test(arguments: [
        "CONNECT h.test:443 HTTP/1.1\r\nHost: h.test:443\r\n\r\n",
        "GET /chat HTTP/1.1\r\nHost: h.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
    ])
    func connectAndUpgradesThrow(request: String) {
        var origin = Origin()
        origin.request(request)
        #expect(origin.sendError != nil, "send took \(origin.requestBytesTaken) bytes and sent \(origin.take())")
        #expect(origin.events.headerEvents == [])
    }

    // MARK: 3. Responses

    @Test(arguments: H2Split.all)
    func contentLengthResponseBecomesHTTP11(split: H2Split) {
        var origin = Origin(split: split)
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(1, 200, [hf("content-length", "5"), hf("server", "x")]) + H2.data(stream: 1, "he")
            + H2.data(stream: 1, "llo", endStream: true))
        origin.takeResponses()
        #expect(origin.newResponseText() == "HTTP/1.1 200 OK\r\ncontent-length: 5\r\nserver: x\r\n\r\nhello")
        #expect(origin.receiveError == nil)
        #expect(origin.isIdle)
        #expect(origin.violations == [])
    }

    @Test(arguments: [false, true])
    func aBodyWithoutContentLengthIsChunked(endOnEmptyData: Bool) throws {
        var origin = Origin()
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        let big = pattern(300)
        var frames = origin.head(1, 200, [hf("content-type", "text/plain"), hf("x-a", "1")])
        frames += H2.data(stream: 1, "abc") + H2.data(stream: 1, []) + H2.data(stream: 1, big) + H2.data(stream: 1, "defg", endStream: !endOnEmptyData)
        if endOnEmptyData { frames += H2.data(stream: 1, [], endStream: true) }
        origin.deliver(frames)
        origin.takeResponses()
        let head = try #require(splitHead(origin.newResponses()))
        #expect(head.statusLine == "HTTP/1.1 200 OK")
        #expect(head.fields.filter { $0 != "transfer-encoding: chunked" } == ["content-type: text/plain", "x-a: 1"])
        #expect(head.fields.filter { $0 == "transfer-encoding: chunked" }.count == 1, "\(head.fields)")
        let chunked = try #require(readChunked(head.rest), "not a chunked body: \(text(head.rest).debugDescription)")
        #expect(chunked.chunks == [utf8("abc"), big, utf8("defg")])
        #expect(chunked.trailers == [])
        #expect(chunked.rest == [])
        #expect(text(head.rest).hasSuffix("defg\r\n0\r\n\r\n"))
        #expect(origin.receiveError == nil)
        #expect(origin.isIdle)
    }

    @Test func trailersEndTheChunkedBody() throws {
        var origin = Origin()
        origin.request("POST /rpc HTTP/1.1\r\nHost: h.test\r\nTE: trailers\r\nContent-Length: 2\r\n\r\nhi")
        origin.deliver(origin.head(1, 200, [hf("content-type", "application/grpc")]) + H2.data(stream: 1, "x")
            + origin.headers(1, [hf("grpc-status", "0")], endStream: true))
        origin.takeResponses()
        let head = try #require(splitHead(origin.newResponses()))
        #expect(head.fields.contains("transfer-encoding: chunked"))
        #expect(text(head.rest) == "1\r\nx\r\n0\r\ngrpc-status: 0\r\n\r\n")
        // Two trailers, in order, and a body of no bytes.
        origin.request("GET /t HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(3, 200) + origin.headers(3, [hf("grpc-status", "13"), hf("grpc-message", "bad thing")], endStream: true))
        origin.takeResponses()
        let second = try #require(splitHead(origin.newResponses()))
        #expect(second.fields.contains("transfer-encoding: chunked"))
        #expect(text(second.rest) == "0\r\ngrpc-status: 13\r\ngrpc-message: bad thing\r\n\r\n")
        #expect(origin.receiveError == nil)
        #expect(origin.isIdle)
    }

    @Test(arguments: [200, 404, 500])
    func headersEndingTheStreamGetContentLengthZero(status: Int) throws {
        var origin = Origin()
        origin.request("GET /a HTTP/1.1\r\nHost: h.test\r\n\r\nGET /b HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(1, status, [hf("x-one", "1")], endStream: true)
            + origin.head(3, status, [hf("content-length", "0"), hf("x-two", "2")], endStream: true))
        origin.takeResponses()
        let reason = HTTPResponse.reasonPhrase(status)
        let first = try #require(splitHead(origin.newResponses()))
        #expect(first.statusLine == "HTTP/1.1 \(status) \(reason)")
        #expect(first.fields.filter { $0 != "content-length: 0" } == ["x-one: 1"])
        #expect(first.fields.filter { $0 == "content-length: 0" }.count == 1, "\(first.fields)")
        let second = try #require(splitHead(first.rest))
        #expect(second.statusLine == "HTTP/1.1 \(status) \(reason)")
        #expect(second.fields == ["content-length: 0", "x-two: 2"])
        #expect(second.rest == [])
        #expect(origin.isIdle)
    }

    enum BodylessCase: String, CaseIterable, Sendable, CustomStringConvertible {
        case headWithLength, headWithoutLength, noContent, notModifiedWithEmptyData, noContentWithEmptyData
        var description: String { rawValue }
    }

    /// HEAD requests, 204 and 304: the head as the origin sent it, no framing added, and the next response right after.
    @Test(arguments: BodylessCase.allCases)
    func bodylessResponsesGetNoFraming(kind: BodylessCase) {
        var origin = Origin()
        let method = kind == .headWithLength || kind == .headWithoutLength ? "HEAD" : "GET"
        origin.request("\(method) /x HTTP/1.1\r\nHost: h.test\r\n\r\nGET /next HTTP/1.1\r\nHost: h.test\r\n\r\n")
        var frames: [UInt8]
        let expected: String
        switch kind {
        case .headWithLength:
            frames = origin.head(1, 200, [hf("content-length", "1234"), hf("etag", "e")], endStream: true)
            expected = "HTTP/1.1 200 OK\r\ncontent-length: 1234\r\netag: e\r\n\r\n"
        case .headWithoutLength:
            frames = origin.head(1, 200, [hf("etag", "e")], endStream: true)
            expected = "HTTP/1.1 200 OK\r\netag: e\r\n\r\n"
        case .noContent:
            frames = origin.head(1, 204, [hf("x", "1")], endStream: true)
            expected = "HTTP/1.1 204 No Content\r\nx: 1\r\n\r\n"
        case .notModifiedWithEmptyData:
            frames = origin.head(1, 304, [hf("etag", "e")]) + H2.data(stream: 1, [], endStream: true)
            expected = "HTTP/1.1 304 Not Modified\r\netag: e\r\n\r\n"
        case .noContentWithEmptyData:
            frames = origin.head(1, 204) + H2.data(stream: 1, [], endStream: true)
            expected = "HTTP/1.1 204 No Content\r\n\r\n"
        }
        frames += origin.head(3, 200, [hf("content-length", "2")]) + H2.data(stream: 3, "ok", endStream: true)
        origin.deliver(frames)
        origin.takeResponses()
        #expect(origin.newResponseText() == expected + "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        #expect(origin.receiveError == nil)
        #expect(origin.isIdle)
    }

    @Test(arguments: H2Split.all)
    func interimHeadsComeBeforeTheFinalOne(split: H2Split) {
        var origin = Origin(split: split)
        origin.request("POST /i HTTP/1.1\r\nHost: h.test\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nz")
        origin.deliver(origin.head(1, 103, [hf("link", "</s.css>; rel=preload")]))
        #expect(origin.hasResponseBytes)
        origin.takeResponses()
        #expect(origin.newResponseText() == "HTTP/1.1 103 Early Hints\r\nlink: </s.css>; rel=preload\r\n\r\n")
        #expect(!origin.isIdle)
        origin.deliver(origin.head(1, 100) + origin.head(1, 200, [hf("content-length", "2")]) + H2.data(stream: 1, "ok", endStream: true))
        origin.takeResponses()
        #expect(origin.newResponseText() == "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        #expect(origin.receiveError == nil)
        #expect(origin.isIdle)
    }

    @Test(arguments: [H2Split.whole, .byteByByte, .random(11)])
    func responsesComeInRequestOrder(split: H2Split) {
        var origin = Origin(split: split)
        origin.request("GET /1 HTTP/1.1\r\nHost: h.test\r\n\r\nGET /3 HTTP/1.1\r\nHost: h.test\r\n\r\nGET /5 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(5, 200, [hf("content-length", "4")]) + H2.data(stream: 5, "five", endStream: true)
            + origin.head(3, 200) + H2.data(stream: 3, "thr"))
        // Stream 1's answer has not come: nothing to take yet.
        #expect(!origin.hasResponseBytes)
        #expect(origin.takeResponseBytes(maximum: 1000) == [])
        origin.deliver(origin.head(1, 200, [hf("content-length", "3")]) + H2.data(stream: 1, "one", endStream: true)
            + H2.data(stream: 3, "ee", endStream: true))
        origin.takeResponses()
        #expect(origin.newResponseText()
            == "HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\none"
            + "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nthr\r\n2\r\nee\r\n0\r\n\r\n"
            + "HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nfive")
        #expect(origin.receiveError == nil)
        #expect(origin.isIdle)
    }

    @Test func takeResponseBytesKeepsToItsMaximum() {
        var origin = Origin()
        origin.request("GET /1 HTTP/1.1\r\nHost: h.test\r\n\r\nGET /2 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(1, 200) + H2.data(stream: 1, pattern(1000)) + H2.data(stream: 1, [], endStream: true)
            + origin.head(3, 200, [hf("content-length", "500")]) + H2.data(stream: 3, pattern(500), endStream: true))
        var reference = origin
        reference.takeResponses()
        origin.takeResponses(maximum: 7)
        expectBytes(origin.responses, reference.responses, "origin.responses")
        #expect(origin.violations == [])
        #expect(origin.isIdle)
    }

    /// What the session makes of a mix of responses reads back through HTTPResponseParser.
    @Test(arguments: Split.all)
    func responsesParseWithTheResponseParser(split: Split) throws {
        var origin = Origin()
        let upload = pattern(40000, seed: 2)
        let requests: [(HTTPMethod, [UInt8])] = [
            (.get, utf8("GET /chunked HTTP/1.1\r\nHost: h.test\r\n\r\n")),
            (.head, utf8("HEAD /head HTTP/1.1\r\nHost: h.test\r\n\r\n")),
            (.get, utf8("GET /204 HTTP/1.1\r\nHost: h.test\r\n\r\n")),
            (.get, utf8("GET /interim HTTP/1.1\r\nHost: h.test\r\n\r\n")),
            (.post, utf8("POST /upload HTTP/1.1\r\nHost: h.test\r\nContent-Length: 40000\r\n\r\n") + upload),
            (.get, utf8("GET /304 HTTP/1.1\r\nHost: h.test\r\n\r\n")),
            (.get, utf8("GET /404 HTTP/1.1\r\nHost: h.test\r\n\r\n")),
        ]
        for (_, request) in requests { origin.request(request) }
        let sent = origin.take()
        #expect(sent.headerEvents.count == 7)
        expectBytes(sent.body(9), upload, "sent.body(9)")
        let big = pattern(20000, seed: 8)
        // Answered last to first.
        var frames = origin.head(13, 404, endStream: true)
        frames += origin.head(11, 304, [hf("etag", "\"v1\"")], endStream: true)
        frames += origin.head(9, 201) + H2.data(stream: 9, Array(big[..<16000])) + H2.data(stream: 9, Array(big[16000...]), endStream: true)
        frames += origin.head(7, 100) + origin.head(7, 200, [hf("content-length", "5")]) + H2.data(stream: 7, "fine.", endStream: true)
        frames += origin.head(5, 204, endStream: true)
        frames += origin.head(3, 200, [hf("content-length", "1234")], endStream: true)
        frames += origin.head(1, 200, [hf("content-type", "text/plain")]) + H2.data(stream: 1, "chunk one ") + H2.data(stream: 1, "chunk two")
            + origin.headers(1, [hf("x-checksum", "abc")], endStream: true)
        origin.deliver(frames)
        origin.takeResponses(maximum: 4096)
        #expect(origin.receiveError == nil)
        #expect(origin.isIdle)

        var parser = HTTPResponseParser()
        for (method, _) in requests { parser.expectResponse(to: method) }
        let trace = try drive(&parser, origin.responses, split)
        #expect(trace.messages.map(\.head.status) == [200, 200, 204, 100, 200, 201, 304, 404])
        #expect(trace.messages.map(\.ended) == [true, true, true, false, true, true, true, true])
        let bodies = trace.messages.map(\.body)
        #expect(bodies.count == 8)
        guard bodies.count == 8 else { return }
        // The chunked bodies as the wire has them; their data is what the origin sent.
        #expect(readChunked(bodies[0]).map { Array($0.chunks.joined()) } == utf8("chunk one chunk two"))
        #expect(readChunked(bodies[0])?.trailers == ["x-checksum: abc"])
        #expect(bodies[1] == [] && bodies[2] == [] && bodies[3] == [])
        #expect(bodies[4] == utf8("fine."))
        expectBytes(readChunked(bodies[5]).map { Array($0.chunks.joined()) }, big, "the 201's chunked data")
        #expect(bodies[6] == [] && bodies[7] == [])
        #expect(trace.messages[1].head.headers["content-length"] == "1234")
        #expect(parser.pendingResponses == 0)
        #expect(parser.isIdle)
    }

    // MARK: 4. Flow control toward the origin

    @Test(arguments: [20000, 256 * 1024], [false, true])
    func anOriginPastTheStreamWindowIsAFlowControlError(window: Int, fails: Bool) {
        let extra = fails ? 1 : 0
        var origin = Origin(limits: limits(streamWindow: window))
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        var frames = origin.head(1, 200)
        var left = window + extra
        while left > 0 {
            let n = min(left, 16384)
            frames += H2.data(stream: 1, pattern(n))
            left -= n
        }
        origin.deliver(frames)
        if fails {
            #expect(origin.receiveError?.code == .flowControlError, "\(String(describing: origin.receiveError))")
        } else {
            #expect(origin.receiveError == nil)
        }
    }

    /// Padding counts against the window (§6.9.1).
    @Test(arguments: [false, true])
    func paddingCountsAgainstTheWindow(over: Bool) {
        var origin = Origin(limits: limits(streamWindow: 20000))
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        // 16384 + 3600 = 19984; then 5 bytes + 1 + 10 of padding = 16 (exactly 20000), or 11 bytes of padding (20001).
        origin.deliver(origin.head(1, 200) + H2.data(stream: 1, pattern(16384)) + H2.data(stream: 1, pattern(3600))
            + H2.data(stream: 1, pattern(5), padding: over ? 11 : 10))
        if over {
            #expect(origin.receiveError?.code == .flowControlError, "\(String(describing: origin.receiveError))")
        } else {
            #expect(origin.receiveError == nil)
        }
    }

    /// One case of `anOriginPastTheConnectionWindowIsAFlowControlError`: the
    /// DATA on stream 1, then on stream 3, in one delivery.
    struct ConnectionWindowCase: Sendable, CustomStringConvertible {
        var connectionWindow: Int
        var first: Int
        var second: Int
        var fails: Bool
        /// The WINDOW_UPDATEs on stream 0 the session sends as the DATA arrives.
        var updates: [UInt32]
        var description: String { "window \(connectionWindow): \(first) + \(second)" }
    }

    /// The connection's window comes back as DATA arrives, once half of it
    /// has: what the origin may send is what Sluice granted plus what it gave
    /// back. A DATA frame past that is a FLOW_CONTROL_ERROR. Since at most
    /// half the window is ever unreturned, one frame (at most 16384 bytes)
    /// can cross it only when the window is below 32768: 20000 here, 9999
    /// bytes (no WINDOW_UPDATE due yet) then 10001 (exactly the window) or
    /// 10002 (one past). The old scenario (window 100000, 50000 then 50001)
    /// no longer overflows: its first 50000 bytes are half the window and
    /// come back before stream 3's DATA, and so does a batch at 20000.
    @Test(arguments: [
        ConnectionWindowCase(connectionWindow: 20000, first: 9999, second: 10001, fails: false, updates: [20000]),
        ConnectionWindowCase(connectionWindow: 20000, first: 9999, second: 10002, fails: true, updates: []),
        ConnectionWindowCase(connectionWindow: 20000, first: 10000, second: 10002, fails: false, updates: [10000, 10002]),
        ConnectionWindowCase(connectionWindow: 100_000, first: 50000, second: 50001, fails: false, updates: [50000, 50001]),
    ])
    func anOriginPastTheConnectionWindowIsAFlowControlError(_ test: ConnectionWindowCase) {
        var origin = Origin(limits: limits(streamWindow: 65535, connectionWindow: test.connectionWindow))
        origin.request("GET /1 HTTP/1.1\r\nHost: h.test\r\n\r\nGET /2 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(1, 200) + origin.head(3, 200))
        origin.takeResponses()
        _ = origin.take()
        origin.deliver(dataFrames(stream: 1, pattern(test.first)) + dataFrames(stream: 3, pattern(test.second)))
        if test.fails {
            #expect(origin.receiveError?.code == .flowControlError, "\(String(describing: origin.receiveError))")
        } else {
            #expect(origin.receiveError == nil)
        }
        // Nothing was taken: only the connection's window came back, as the DATA arrived.
        let updates = origin.take().compactMap { event -> UInt32? in
            if case let .windowUpdate(0, increment) = event { return increment }
            if case .windowUpdate = event { Issue.record("\(event) though nothing was taken") }
            return nil
        }
        #expect(updates == test.updates)
    }

    /// The stream's window comes back only as the session takes the bytes,
    /// and all of it once all are taken; taking gives nothing back to the
    /// connection, whose window comes back as DATA arrives (60000 bytes are
    /// less than half of it: none yet).
    @Test func streamWindowsComeBackAsBytesAreTaken() {
        var origin = Origin()
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        var frames = origin.head(1, 200, [hf("content-length", "100000")])
        for _ in 0 ..< 4 { frames += H2.data(stream: 1, pattern(15000)) }
        origin.deliver(frames)
        #expect(origin.take().filter(\.isWindowUpdate) == [], "window given back before anything was taken")
        #expect(origin.room(1) == 256 * 1024 - 60000)
        #expect(origin.connectionCredit == 1024 * 1024 - 60000)
        // Taking a little gives back at most that little.
        origin.takeResponses(maximum: 100, once: true)
        let first = origin.take()
        #expect(first.credit(1) <= 100)
        #expect(first.credit(0) == 0)
        origin.takeResponses()
        let events = origin.take()
        #expect(events.credit(1) > 0)
        #expect(events.credit(0) == 0, "the connection's window given back as bytes were taken")
        #expect(origin.streamCredit[1] == 256 * 1024, "stream 1's window after everything was taken")
        #expect(origin.connectionCredit == 1024 * 1024 - 60000, "the connection's window after everything was taken")
        #expect(origin.receiveError == nil)
        #expect(origin.violations == [])
    }

    /// What waits in the session stays within the stream window it granted: the
    /// window comes back for bytes taken, not for bytes still buffered.
    @Test(arguments: [10000, 70000, 200_000])
    func windowsComeBackOnlyForWhatWasTaken(takeSize: Int) {
        var origin = Origin()
        let total = 2 * 1024 * 1024
        origin.request("GET /big HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(1, 200, [hf("content-length", String(total))]))
        origin.takeResponses()
        let headBytes = origin.responses.count
        #expect(headBytes > 0)
        var sent = 0
        var rounds = 0
        while sent < total, rounds < 5000, origin.receiveError == nil {
            rounds += 1
            var frames: [UInt8] = []
            var room = origin.room(1)
            while room > 0, sent < total {
                let n = min(room, 16384, total - sent)
                frames += H2.data(stream: 1, pattern(n, seed: sent), endStream: sent + n == total)
                sent += n
                room -= n
            }
            if !frames.isEmpty { origin.deliver(frames) }
            let waiting = origin.dataSent[1, default: 0] - (origin.responses.count - headBytes)
            if waiting > 256 * 1024 {
                Issue.record("\(waiting) bytes of DATA wait in the session, more than the 262144 it granted (round \(rounds))")
                break
            }
            origin.takeResponses(maximum: takeSize, once: true)
        }
        origin.takeResponses()
        #expect(sent == total, "the origin could send only \(sent) bytes in \(rounds) rounds")
        #expect(origin.responses.count - headBytes == total)
        #expect(origin.receiveError == nil)
        #expect(origin.violations == [])
        #expect(origin.isIdle)
    }

    enum LargeBody: String, CaseIterable, Sendable, CustomStringConvertible {
        case contentLength, chunked, paddedChunked
        var description: String { rawValue }
    }

    /// A 3 MiB body, sent as fast as the windows the session gives back allow, arrives whole.
    @Test(arguments: LargeBody.allCases)
    func aLargeBodyFlowsAsItIsTaken(kind: LargeBody) throws {
        var origin = Origin()
        let total = 3 * 1024 * 1024
        let body = pattern(total, seed: 17)
        origin.request("GET /big HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(1, 200, kind == .contentLength ? [hf("content-length", String(total))] : []))
        var sent = 0
        var rounds = 0
        while sent < total, rounds < 10000, origin.receiveError == nil {
            rounds += 1
            var frames: [UInt8] = []
            var room = origin.room(1)
            while room > 0, sent < total {
                let padding = kind == .paddedChunked ? 20 : 0
                let n = min(room - (padding > 0 ? padding + 1 : 0), 16384 - (padding > 0 ? padding + 1 : 0), total - sent)
                guard n > 0 else { break }
                let last = sent + n == total
                frames += H2.data(stream: 1, Array(body[sent ..< sent + n]), endStream: last, padding: padding > 0 ? padding : nil)
                room -= n + (padding > 0 ? padding + 1 : 0)
                sent += n
            }
            if !frames.isEmpty { origin.deliver(frames) }
            origin.takeResponses(maximum: 50000, once: true)
            #expect(origin.violations == [])
            if origin.violations != [] { break }
        }
        origin.takeResponses()
        #expect(sent == total, "the origin could send only \(sent) bytes in \(rounds) rounds")
        #expect(origin.receiveError == nil)
        #expect(origin.isIdle)
        guard let head = splitHead(origin.responses) else {
            Issue.record("no response head in \(origin.responses.count) bytes")
            return
        }
        if kind == .contentLength {
            expectBytes(head.rest, body, "the body")
        } else if let chunked = readChunked(head.rest) {
            expectBytes(Array(chunked.chunks.joined()), body, "the chunks' data")
            #expect(chunked.rest.isEmpty)
        } else {
            Issue.record("not a chunked body (\(head.rest.count) bytes)")
        }
        // The DATA's share of the connection's window came back as it arrived, once half the window's worth had.
        #expect(origin.connectionCredit > 1024 * 1024 / 2 && origin.connectionCredit <= 1024 * 1024)
    }

    /// The connection's window is not given back after each response (a
    /// WINDOW_UPDATE per small response cost a TLS record and a write each)
    /// but once half the window's worth of DATA has arrived: 1,500
    /// responses of 1 KiB, one after another, more than the whole window,
    /// flow with two WINDOW_UPDATEs, and the window never falls below half.
    @Test func smallResponsesGiveTheConnectionWindowBackInBatches() {
        var origin = Origin()
        var lowest = Int.max
        var updates = 0
        for i in 0 ..< 1500 {
            let id = UInt32(2 * i + 1)
            origin.request("GET /\(i) HTTP/1.1\r\nHost: h.test\r\n\r\n")
            origin.deliver(origin.head(id, 200, [hf("content-length", "1024")]) + H2.data(stream: id, pattern(1024), endStream: true))
            lowest = min(lowest, origin.connectionCredit)
            origin.takeResponses()
            updates += origin.take().filter(\.isWindowUpdate).count
            if origin.receiveError != nil || origin.violations != [] { break }
        }
        #expect(origin.receiveError == nil)
        #expect(origin.violations == [])
        #expect(origin.responses.count > 1500 * 1024)
        #expect(updates == 2, "WINDOW_UPDATEs for 1,500 small responses")
        #expect(lowest >= 1024 * 1024 / 2 - 1024, "the connection window fell to \(lowest)")
    }

    /// Several streams at once, answered in any order: all complete, and no window is given back twice.
    @Test func concurrentBodiesFlowAndAreDeliveredInOrder() {
        var origin = Origin()
        let sizes = [400_000, 300_000, 350_000, 10]
        for i in sizes.indices { origin.request("GET /\(i) HTTP/1.1\r\nHost: h.test\r\n\r\n") }
        let ids: [UInt32] = [1, 3, 5, 7]
        var frames: [UInt8] = []
        for id in ids.reversed() { frames += origin.head(id, 200) }
        origin.deliver(frames)
        var sent = [Int](repeating: 0, count: ids.count)
        var rounds = 0
        while sent != sizes, rounds < 10000, origin.receiveError == nil {
            rounds += 1
            frames = []
            // The later streams first, so that they take the connection's window from the first.
            var connectionRoom = origin.connectionCredit
            for i in ids.indices.reversed() {
                var room = min(connectionRoom, origin.streamCredit[ids[i]] ?? 0)
                while room > 0, sent[i] < sizes[i] {
                    let n = min(room, 9000, sizes[i] - sent[i])
                    frames += H2.data(stream: ids[i], pattern(n, seed: sent[i] + i), endStream: sent[i] + n == sizes[i])
                    sent[i] += n
                    room -= n
                    connectionRoom -= n
                }
            }
            if !frames.isEmpty { origin.deliver(frames) }
            origin.takeResponses(maximum: 30000, once: true)
            if origin.violations != [] { break }
        }
        origin.takeResponses()
        #expect(sent == sizes, "after \(rounds) rounds")
        #expect(origin.receiveError == nil)
        #expect(origin.violations == [])
        #expect(origin.isIdle)
        var rest = origin.responses
        for i in sizes.indices {
            guard let head = splitHead(rest), let chunked = readChunked(head.rest) else {
                Issue.record("response \(i) does not parse")
                return
            }
            #expect(Array(chunked.chunks.joined()).count == sizes[i])
            rest = chunked.rest
        }
        #expect(rest == [])
    }

    // MARK: 5. What the origin does wrong

    enum ResetWhen: String, CaseIterable, Sendable, CustomStringConvertible {
        case beforeTheHead, inTheBody, inTheBodyAfterPartWasTaken, afterTheEnd, afterTaken
        var description: String { rawValue }
    }

    /// §6.4: RST_STREAM on a stream whose response has not ended fails that
    /// request alone (its code; processed): what of its response came before
    /// the reset is taken first (however much was taken when it came), then
    /// the failure; what the origin sends on it afterwards is ignored. After
    /// the end (§8.1: NO_ERROR) it changes nothing. The
    /// stream after it is answered, or reset, on its own.
    @Test(arguments: ResetWhen.allCases)
    func rstStreamFailsAResponseThatHasNotEnded(when: ResetWhen) {
        var origin = Origin()
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\nGET /2 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        let whole = "HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc"
        // What of stream 1's response is taken, what came before the reset and waits, and its failure's code.
        var taken = ""
        var pending = ""
        var failure: UInt32?
        switch when {
        case .beforeTheHead:
            origin.deliver(H2.rst(stream: 1, H2Code.refusedStream))
            failure = H2Code.refusedStream
        case .inTheBody:
            // Its head and "abc" wait, not taken: they come before the failure.
            origin.deliver(origin.head(1, 200, [hf("content-length", "10")]) + H2.data(stream: 1, "abc") + H2.rst(stream: 1, H2Code.internalError))
            pending = "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc"
            failure = H2Code.internalError
        case .inTheBodyAfterPartWasTaken:
            origin.deliver(origin.head(1, 200, [hf("content-length", "10")]) + H2.data(stream: 1, "abc"))
            origin.takeResponses()
            taken = "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc"
            origin.deliver(H2.data(stream: 1, "def") + H2.rst(stream: 1, H2Code.internalError))
            pending = "def"
            failure = H2Code.internalError
        case .afterTheEnd:
            origin.deliver(origin.head(1, 200, [hf("content-length", "3")]) + H2.data(stream: 1, "abc", endStream: true)
                + H2.rst(stream: 1, H2Code.noError))
            origin.takeResponses()
            taken = whole
        case .afterTaken:
            origin.deliver(origin.head(1, 200, [hf("content-length", "3")]) + H2.data(stream: 1, "abc", endStream: true))
            origin.takeResponses()
            origin.deliver(H2.rst(stream: 1, H2Code.noError))
            taken = whole
        }
        #expect(origin.receiveError == nil)
        #expect(origin.newResponseText() == taken)
        if let failure {
            // The origin's frames on it afterwards are ignored.
            origin.deliver(origin.head(1, 200, [hf("content-length", "4")]) + H2.data(stream: 1, "late", endStream: true))
            #expect(origin.receiveError == nil)
            #expect(origin.oldestStreamFailed == pending.isEmpty)
            #expect(origin.hasResponseBytes == !pending.isEmpty)
            origin.takeResponses()
            #expect(origin.newResponseText() == pending, "bytes of the reset stream")
            #expect(origin.oldestStreamFailed)
            #expect(!origin.hasResponseBytes)
            expectFailure(origin.takeFailedStream(), code: failure, unprocessed: false)
            // Also once its failure was taken (the fuzzer found this an error after, not before).
            origin.deliver(H2.data(stream: 1, "later"))
            #expect(origin.receiveError == nil)
        }
        #expect(!origin.oldestStreamFailed)
        #expect(origin.takeFailedStream() == nil)
        // Stream 3 awaits its response whatever happened to 1: a reset of it fails it alone.
        #expect(!origin.isIdle)
        origin.deliver(H2.rst(stream: 3, H2Code.cancel))
        #expect(origin.receiveError == nil)
        #expect(origin.oldestStreamFailed)
        origin.takeResponses()
        #expect(origin.newResponseText() == "")
        expectFailure(origin.takeFailedStream(), code: H2Code.cancel, unprocessed: false, "stream 3's failure")
        #expect(origin.isIdle)
        #expect(origin.violations == [])
    }

    /// §6.8: GOAWAY below a stream that waits: the origin never processed it,
    /// so it fails alone, unprocessed, with GOAWAY's code, in its turn.
    @Test func goAwayBelowAWaitingStreamLeavesItUnprocessed() {
        var origin = Origin()
        origin.request("GET /1 HTTP/1.1\r\nHost: h.test\r\n\r\nGET /2 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(1, 200, [hf("content-length", "1")]) + H2.data(stream: 1, "a", endStream: true))
        origin.takeResponses()
        #expect(origin.newResponseText() == "HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\na")
        #expect(origin.receiveError == nil)
        #expect(!origin.oldestStreamFailed)
        origin.deliver(H2.goAway(last: 1, H2Code.noError))
        #expect(origin.receiveError == nil)
        #expect(origin.goneAway)
        #expect(!origin.isIdle)
        #expect(origin.oldestStreamFailed)
        #expect(!origin.hasResponseBytes)
        origin.takeResponses()
        #expect(origin.newResponseText() == "")
        expectFailure(origin.takeFailedStream(), code: H2Code.noError, unprocessed: true)
        #expect(origin.takeFailedStream() == nil)
        #expect(origin.isIdle)
    }

    @Test func goAwayCoveringEveryStreamOnlyStopsNewRequests() {
        var origin = Origin()
        origin.request("GET /1 HTTP/1.1\r\nHost: h.test\r\n\r\nGET /2 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        #expect(!origin.goneAway)
        origin.deliver(H2.goAway(last: 3, H2Code.noError, debug: "bye"))
        #expect(origin.receiveError == nil)
        #expect(origin.goneAway)
        #expect(!origin.oldestStreamFailed)
        // The streams it covers are still answered.
        origin.deliver(origin.head(1, 200, [hf("content-length", "1")]) + H2.data(stream: 1, "a", endStream: true)
            + origin.head(3, 204, endStream: true))
        origin.takeResponses()
        #expect(origin.receiveError == nil)
        #expect(origin.newResponseText() == "HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\naHTTP/1.1 204 No Content\r\n\r\n")
        #expect(origin.takeFailedStream() == nil)
        #expect(origin.isIdle)
        _ = origin.take()
        // A new request is taken but not sent: it takes its turn as unprocessed (it may go on another connection).
        let late = utf8("GET /3 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        let before = origin.requestBytesTaken
        origin.request(late)
        #expect(origin.sendError == nil)
        #expect(origin.requestBytesTaken == before + late.count)
        let events = origin.take()
        #expect(events.headerEvents == [] && events.dataEvents == [], "\(events)")
        #expect(!origin.isIdle)
        #expect(origin.oldestStreamFailed)
        #expect(!origin.hasResponseBytes)
        expectFailure(origin.takeFailedStream(), code: H2Code.refusedStream, unprocessed: true)
        #expect(origin.isIdle)
        #expect(origin.violations == [])
    }

    @Test func goAwayWithNoRequestsLeavesTheNextOneUnprocessed() {
        var origin = Origin()
        origin.deliver(H2.goAway(last: 0, H2Code.noError))
        #expect(origin.receiveError == nil)
        #expect(origin.goneAway)
        #expect(origin.isIdle)
        #expect(!origin.oldestStreamFailed)
        _ = origin.take()
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        #expect(origin.sendError == nil)
        #expect(origin.take().headerEvents == [])
        #expect(!origin.isIdle)
        #expect(origin.oldestStreamFailed)
        #expect(!origin.hasResponseBytes)
        expectFailure(origin.takeFailedStream(), code: H2Code.refusedStream, unprocessed: true)
        #expect(origin.takeFailedStream() == nil)
        #expect(origin.isIdle)
    }

    @Test func pushPromiseFails() {
        var origin = Origin()
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(1, 200, [hf("content-length", "1")]))
        #expect(origin.receiveError == nil)
        let block = origin.encoder.encode([hf(":method", "GET"), hf(":scheme", "https"), hf(":authority", "h.test"), hf(":path", "/pushed")])
        origin.deliver(H2.frame(H2Type.pushPromise, flags: H2Flag.endHeaders, stream: 1, H2.be32(2) + block))
        #expect(origin.receiveError != nil)
    }

    enum StrayStream: String, CaseIterable, Sendable, CustomStringConvertible {
        case dataOnTheNextOdd, headersOnTheNextOdd, headersOnAnEven, dataOnAnEven, dataOnTheOpenStream, headersOnTheOpenStream
        var description: String { rawValue }
    }

    @Test(arguments: StrayStream.allCases)
    func framesOnStreamsNeverOpenedFail(kind: StrayStream) {
        var origin = Origin()
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        switch kind {
        case .dataOnTheNextOdd:
            origin.deliver(H2.data(stream: 3, "x", endStream: true))
        case .headersOnTheNextOdd:
            origin.deliver(origin.head(3, 200, endStream: true))
        case .headersOnAnEven:
            origin.deliver(origin.head(2, 200, endStream: true))
        case .dataOnAnEven:
            origin.deliver(H2.data(stream: 2, "x", endStream: true))
        case .dataOnTheOpenStream:
            // The control: the same frames on stream 1 are an answer.
            origin.deliver(origin.head(1, 200) + H2.data(stream: 1, "x", endStream: true))
        case .headersOnTheOpenStream:
            origin.deliver(origin.head(1, 200, endStream: true))
        }
        if kind == .dataOnTheOpenStream || kind == .headersOnTheOpenStream {
            #expect(origin.receiveError == nil)
        } else {
            #expect(origin.receiveError != nil)
        }
    }

    @Test(arguments: [-1, 0, 1])
    func aBodyOtherThanItsContentLengthFails(difference: Int) {
        var origin = Origin()
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(1, 200, [hf("content-length", "10")]) + H2.data(stream: 1, pattern(4))
            + H2.data(stream: 1, pattern(6 + difference, seed: 4), endStream: true))
        if difference == 0 {
            #expect(origin.receiveError == nil)
            origin.takeResponses()
            expectBytes(origin.newResponses(), utf8("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n") + pattern(4) + pattern(6, seed: 4), "origin.newResponses()")
        } else {
            #expect(origin.receiveError != nil)
        }
    }

    @Test func aShortBodyEndedByTrailersFails() {
        var origin = Origin()
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(1, 200, [hf("content-length", "10")]) + H2.data(stream: 1, "abc")
            + origin.headers(1, [hf("x-t", "1")], endStream: true))
        #expect(origin.receiveError != nil)
    }

    @Test(arguments: [false, true])
    func aResponseWithoutStatusFails(withStatus: Bool) {
        var origin = Origin()
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        let fields = (withStatus ? [hf(":status", "200")] : []) + [hf("content-length", "0"), hf("server", "s")]
        origin.deliver(origin.headers(1, fields, endStream: true))
        if withStatus {
            #expect(origin.receiveError == nil)
        } else {
            #expect(origin.receiveError != nil)
        }
    }

    @Test(arguments: ["a\rb", "a\nb", "a\r\nx-injected: 1", "ok value"])
    func aFieldValueWithCROrLFFails(value: String) {
        let clean = value == "ok value"
        for place in ["head", "trailers", "interim"] {
            var origin = Origin()
            origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
            let field = hpackLiteral(utf8("x-bad"), utf8(value))
            switch place {
            case "head":
                origin.deliver(H2.headers(stream: 1, block: origin.encoder.encode([hf(":status", "200")]) + field, endStream: true))
            case "trailers":
                origin.deliver(origin.head(1, 200) + H2.data(stream: 1, "x") + H2.headers(stream: 1, block: field, endStream: true))
            default:
                origin.deliver(H2.headers(stream: 1, block: origin.encoder.encode([hf(":status", "103")]) + field))
            }
            if clean {
                #expect(origin.receiveError == nil, "\(place)")
                origin.takeResponses()
                #expect(origin.newResponseText().contains("x-bad: ok value\r\n"), "\(place)")
            } else {
                #expect(origin.receiveError != nil, "\(place): \(value.debugDescription) was taken")
                origin.takeResponses()
                #expect(!origin.newResponseText().contains("x-injected"), "\(place)")
            }
        }
    }

    // MARK: 6. isIdle and hasResponseBytes

    @Test func isIdleAndHasResponseBytesFollowTheExchange() {
        var origin = Origin()
        #expect(origin.isIdle)
        #expect(!origin.hasResponseBytes)
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        #expect(!origin.isIdle)
        #expect(!origin.hasResponseBytes)
        origin.deliver(origin.head(1, 200))
        #expect(origin.hasResponseBytes)
        #expect(!origin.isIdle)
        origin.takeResponses()
        #expect(!origin.hasResponseBytes)
        #expect(!origin.isIdle)
        origin.deliver(H2.data(stream: 1, "body"))
        #expect(origin.hasResponseBytes)
        origin.takeResponses()
        #expect(!origin.hasResponseBytes)
        #expect(!origin.isIdle)
        origin.deliver(H2.data(stream: 1, [], endStream: true))
        #expect(origin.hasResponseBytes)
        origin.takeResponses()
        #expect(!origin.hasResponseBytes)
        #expect(origin.isIdle)
        #expect(text(origin.responses) == "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n")
    }

    @Test func aRequestWhoseBodyWaitsIsNotIdle() {
        var origin = Origin(settings: [(H2Setting.initialWindowSize, 0)])
        origin.request("POST / HTTP/1.1\r\nHost: h.test\r\nContent-Length: 3\r\n\r\nabc")
        #expect(!origin.isIdle)
        origin.deliver(H2.windowUpdate(stream: 1, 3))
        #expect(origin.take().ended(1))
        #expect(!origin.isIdle)
        origin.deliver(origin.head(1, 200, endStream: true))
        origin.takeResponses()
        #expect(origin.isIdle)
    }

    /// A content-length body taken whole before its END_STREAM (on an empty DATA) came: nothing is left to take.
    @Test func nothingLeftToTakeAfterTheLastBytesWereTaken() {
        var origin = Origin()
        origin.request("GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        origin.deliver(origin.head(1, 200, [hf("content-length", "5")]) + H2.data(stream: 1, "hello"))
        origin.takeResponses()
        #expect(origin.newResponseText() == "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello")
        origin.deliver(H2.data(stream: 1, [], endStream: true))
        #expect(origin.receiveError == nil)
        #expect(!origin.hasResponseBytes, "hasResponseBytes with no bytes to take")
        #expect(origin.isIdle, "not idle though the response has come and been taken whole")
        #expect(origin.takeResponseBytes(maximum: 100) == [])
        #expect(origin.isIdle)
    }

    // MARK: 7. Streams that fail alone, and the connection's limits

    enum MiddleReset: String, CaseIterable, Sendable, CustomStringConvertible {
        case beforeItsHead, inItsBodyAfterPartWasTaken
        var description: String { rawValue }
    }

    /// Three requests at once; the origin resets the middle one. The first
    /// response comes whole, then the middle one's failure (its code,
    /// processed), then the third response whole. What the origin sends on
    /// the reset stream afterwards is ignored, and still gives its share of
    /// the connection's window back.
    @Test(arguments: MiddleReset.allCases)
    func aResetMiddleStreamFailsAloneInItsTurn(when: MiddleReset) {
        // Half the connection's window is 50000: DATA reaching it, ignored or not, comes back in one WINDOW_UPDATE.
        var origin = Origin(limits: limits(streamWindow: 65535, connectionWindow: 100_000))
        origin.request("GET /1 HTTP/1.1\r\nHost: h.test\r\n\r\nGET /2 HTTP/1.1\r\nHost: h.test\r\n\r\nGET /3 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        #expect(origin.take().headerEvents.count == 3)
        let first = "HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\none"
        let third = "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nthree"
        let code: UInt32
        var late: [UInt8] = []
        switch when {
        case .beforeItsHead:
            // The reset first, then the third's answer, then the first's.
            origin.deliver(H2.rst(stream: 3, H2Code.enhanceYourCalm)
                + origin.head(5, 200, [hf("content-length", "5")]) + H2.data(stream: 5, "three", endStream: true))
            #expect(origin.receiveError == nil)
            // Stream 1's turn: nothing to take yet, and no failure before it.
            #expect(!origin.hasResponseBytes)
            #expect(!origin.oldestStreamFailed)
            #expect(origin.takeFailedStream() == nil)
            #expect(origin.takeResponseBytes(maximum: 1000) == [])
            origin.deliver(origin.head(1, 200, [hf("content-length", "3")]) + H2.data(stream: 1, "one", endStream: true))
            origin.takeResponses()
            #expect(origin.newResponseText() == first)
            code = H2Code.enhanceYourCalm
            late = origin.head(3, 200)
        case .inItsBodyAfterPartWasTaken:
            origin.deliver(origin.head(1, 200, [hf("content-length", "3")]) + H2.data(stream: 1, "one", endStream: true)
                + origin.head(3, 200) + H2.data(stream: 3, "abcd"))
            origin.takeResponses()
            #expect(origin.newResponseText() == first + "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nabcd\r\n")
            origin.deliver(H2.rst(stream: 3, H2Code.internalError)
                + origin.head(5, 200, [hf("content-length", "5")]) + H2.data(stream: 5, "three", endStream: true))
            code = H2Code.internalError
        }
        #expect(origin.receiveError == nil)
        // The reset stream's turn: no bytes (the third's wait behind it), then its failure.
        #expect(origin.oldestStreamFailed)
        #expect(!origin.hasResponseBytes)
        origin.takeResponses()
        #expect(origin.newResponseText() == "")
        // DATA on it now is ignored but counts: with it, half the connection's window has arrived.
        _ = origin.take()
        let ignored = 50000 - origin.dataSentTotal
        #expect(ignored > 49900)
        origin.deliver(late + dataFrames(stream: 3, pattern(ignored), endStream: true))
        #expect(origin.receiveError == nil)
        #expect(origin.take() == [.windowUpdate(stream: 0, increment: 50000)])
        #expect(origin.connectionCredit == 100_000)
        #expect(!origin.hasResponseBytes)
        expectFailure(origin.takeFailedStream(), code: code, unprocessed: false)
        #expect(origin.takeFailedStream() == nil)
        #expect(!origin.oldestStreamFailed)
        origin.takeResponses()
        #expect(origin.newResponseText() == third)
        #expect(origin.isIdle)
        #expect(origin.violations == [])
    }

    /// §6.8: GOAWAY naming stream 1 the last it processes, with streams 1, 3
    /// and 5 open: 1 is answered, 3 and 5 fail unprocessed with GOAWAY's code.
    /// Requests made after it are not sent (no HEADERS; a body is read and
    /// dropped, no DATA) and fail unprocessed (REFUSED_STREAM), each in its turn.
    @Test(arguments: [H2Split.whole, .random(3)])
    func goAwayLeavesTheStreamsAboveItsLastAndLaterRequestsUnprocessed(split: H2Split) {
        var origin = Origin(split: split)
        origin.request("GET /1 HTTP/1.1\r\nHost: h.test\r\n\r\nGET /2 HTTP/1.1\r\nHost: h.test\r\n\r\nGET /3 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        #expect(origin.take().headerEvents.count == 3)
        origin.deliver(H2.goAway(last: 1, H2Code.enhanceYourCalm, debug: "calm down"))
        #expect(origin.receiveError == nil)
        #expect(origin.goneAway)
        // Stream 1 is still to be answered, and comes first.
        #expect(!origin.oldestStreamFailed)
        #expect(origin.takeFailedStream() == nil)
        _ = origin.take()
        // After it: a GET, a POST of 100000 bytes (more than the windows and
        // than pendingDataLimit), a chunked PUT, a GET.
        let body = pattern(100_000, seed: 4)
        let requests = utf8("GET /4 HTTP/1.1\r\nHost: h.test\r\n\r\n")
            + utf8("POST /5 HTTP/1.1\r\nHost: h.test\r\nContent-Length: 100000\r\n\r\n") + body
            + utf8("PUT /6 HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
            + utf8("GET /7 HTTP/1.1\r\nHost: h.test\r\n\r\n")
        let before = origin.requestBytesTaken
        origin.request(requests)
        #expect(origin.sendError == nil)
        #expect(origin.requestBytesTaken == before + requests.count)
        #expect(origin.pendingRequestBytes == 0)
        let sent = origin.take()
        #expect(sent.headerEvents == [] && sent.dataEvents == [], "\(sent)")
        origin.deliver(origin.head(1, 200, [hf("content-length", "3")]) + H2.data(stream: 1, "one", endStream: true))
        #expect(origin.receiveError == nil)
        origin.takeResponses()
        #expect(origin.newResponseText() == "HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\none")
        // Then the others, in request order, with no bytes.
        let codes = [H2Code.enhanceYourCalm, H2Code.enhanceYourCalm, H2Code.refusedStream, H2Code.refusedStream, H2Code.refusedStream,
                     H2Code.refusedStream]
        for (i, code) in codes.enumerated() {
            #expect(origin.oldestStreamFailed, "request \(i + 2)")
            #expect(!origin.hasResponseBytes, "request \(i + 2)")
            expectFailure(origin.takeFailedStream(), code: code, unprocessed: true, "request \(i + 2)")
        }
        #expect(origin.takeFailedStream() == nil)
        #expect(origin.isIdle)
        let after = origin.take()
        #expect(after.headerEvents == [] && after.dataEvents == [], "\(after)")
        #expect(origin.receiveError == nil && origin.sendError == nil)
        #expect(origin.violations == [])
    }

    /// A request after GOAWAY whose failure is taken while its body still
    /// comes: the rest of the body is read and dropped, and the request after
    /// it is not sent either.
    @Test func aBodyAfterGoAwayIsDroppedThoughItsFailureWasTakenFirst() {
        var origin = Origin()
        origin.deliver(H2.goAway(last: 0, H2Code.noError))
        _ = origin.take()
        let body = pattern(30000, seed: 8)
        origin.request(utf8("POST /up HTTP/1.1\r\nHost: h.test\r\nContent-Length: 30000\r\n\r\n") + Array(body[..<10000]))
        #expect(origin.oldestStreamFailed)
        expectFailure(origin.takeFailedStream(), code: H2Code.refusedStream, unprocessed: true)
        origin.request(Array(body[10000...]) + utf8("GET /next HTTP/1.1\r\nHost: h.test\r\n\r\n"))
        #expect(origin.sendError == nil)
        #expect(origin.pendingRequestBytes == 0)
        expectFailure(origin.takeFailedStream(), code: H2Code.refusedStream, unprocessed: true, "the GET's failure")
        #expect(origin.takeFailedStream() == nil)
        #expect(origin.isIdle)
        let events = origin.take()
        #expect(events.headerEvents == [] && events.dataEvents == [], "\(events)")
        #expect(origin.violations == [])
    }

    /// §6.5.2: SETTINGS_MAX_CONCURRENT_STREAMS, unlimited until the origin
    /// sends it, bounds concurrentStreamLimit with limits.maximumConcurrentStreams.
    @Test func maxConcurrentStreamsBoundsTheConcurrentStreamLimit() {
        var origin = Origin(handshake: false)
        #expect(origin.session.peerMaximumConcurrentStreams == Int.max)
        #expect(origin.session.concurrentStreamLimit == 16)
        // SETTINGS without it change nothing.
        origin.deliver(H2.settings([(H2Setting.initialWindowSize, 70000), (H2Setting.maxFrameSize, 20000)]))
        #expect(origin.session.peerMaximumConcurrentStreams == Int.max)
        #expect(origin.session.concurrentStreamLimit == 16)
        for (value, limit) in [(100, 16), (5, 5), (16, 16), (17, 16), (0, 0), (1, 1), (1000, 16)] {
            origin.deliver(H2.settings([(H2Setting.maxConcurrentStreams, UInt32(value))]))
            #expect(origin.session.peerMaximumConcurrentStreams == value)
            #expect(origin.session.concurrentStreamLimit == limit, "SETTINGS_MAX_CONCURRENT_STREAMS \(value)")
        }
        // Acknowledged, and SETTINGS without it leave the last value.
        origin.deliver(H2.settings([(H2Setting.headerTableSize, 0)]))
        #expect(origin.session.peerMaximumConcurrentStreams == 1000)
        #expect(origin.take().filter { $0 == .settingsAck }.count == 9)
        #expect(origin.receiveError == nil)

        var fewer = Origin(limits: limits(maximumConcurrentStreams: 4), settings: [(H2Setting.maxConcurrentStreams, 10)])
        #expect(fewer.session.peerMaximumConcurrentStreams == 10)
        #expect(fewer.session.concurrentStreamLimit == 4)
        fewer.deliver(H2.settings([(H2Setting.maxConcurrentStreams, 3)]))
        #expect(fewer.session.concurrentStreamLimit == 3)
        #expect(fewer.receiveError == nil)
    }

    enum CancelWhen: String, CaseIterable, Sendable, CustomStringConvertible {
        /// The whole body was taken by `send` (it waits for the window) and the next request waits behind it.
        case bodyAllOffered
        /// Part of the body was offered; the rest never comes.
        case bodyPartlyOffered
        var description: String { rawValue }
    }

    /// The app abandons a request mid-upload: RST_STREAM CANCEL on its
    /// stream, no more of its body, and the next request's HEADERS go at
    /// once. The cancelled stream takes its turn as a failure (CANCEL) after
    /// the response before it; what the origin sends on it afterwards is ignored.
    @Test(arguments: CancelWhen.allCases)
    func cancelSendingStreamResetsItAndLetsTheNextRequestGo(when: CancelWhen) {
        // The origin's stream window of 1000: the body goes only partly.
        var origin = Origin(settings: [(H2Setting.initialWindowSize, 1000)])
        let body = pattern(5000, seed: 2)
        let post = utf8("POST /up HTTP/1.1\r\nHost: h.test\r\nContent-Length: 5000\r\n\r\n")
        let next = utf8("GET /b HTTP/1.1\r\nHost: h.test\r\n\r\n")
        #expect(!origin.isSendingBody)
        origin.request("GET /a HTTP/1.1\r\nHost: h.test\r\n\r\n")
        #expect(!origin.isSendingBody)
        switch when {
        case .bodyAllOffered:
            origin.request(post + body + next)
            // The GET waits behind the body.
            #expect(origin.pendingRequestBytes == next.count)
        case .bodyPartlyOffered:
            origin.request(post + Array(body[..<3000]))
            #expect(origin.pendingRequestBytes == 0)
        }
        #expect(origin.take().normalized == [
            .headers(stream: 1, fields: requestFields("GET", "/a"), endStream: true),
            .headers(stream: 3, fields: requestFields("POST", "/up", [ev("content-length", "5000")]), endStream: false),
            .data(stream: 3, bytes: Array(body[..<1000]), endStream: false),
        ])
        #expect(origin.isSendingBody)
        origin.cancelSendingStream(reason: "the app reset its stream")
        #expect(origin.take() == [.rst(stream: 3, code: H2Code.cancel)])
        #expect(!origin.isSendingBody)
        // The next request goes at once.
        if when == .bodyAllOffered { origin.pump() } else { origin.request(next) }
        #expect(origin.take() == [.headers(stream: 5, fields: requestFields("GET", "/b"), endStream: true)])
        #expect(origin.pendingRequestBytes == 0)
        // Stream 3's window opens: none of the rest of its body goes.
        origin.deliver(H2.windowUpdate(stream: 3, 10000) + H2.windowUpdate(stream: 0, 10000))
        #expect(origin.take().dataEvents == [])
        expectBytes(origin.requestBodies[3], Array(body[..<1000]), "stream 3's body")
        // The origin answers, stream 3 too (it had not seen the RST_STREAM yet): ignored.
        origin.deliver(origin.head(3, 200, [hf("content-length", "5")]) + H2.data(stream: 3, "early")
            + origin.head(5, 200, [hf("content-length", "1")]) + H2.data(stream: 5, "b", endStream: true))
        #expect(origin.receiveError == nil)
        // Stream 1 first: the cancelled stream waits its turn.
        #expect(!origin.oldestStreamFailed)
        #expect(origin.takeFailedStream() == nil)
        #expect(origin.takeResponseBytes(maximum: 1000) == [])
        origin.deliver(origin.head(1, 200, [hf("content-length", "1")]) + H2.data(stream: 1, "a", endStream: true))
        origin.takeResponses()
        #expect(origin.newResponseText() == "HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\na")
        #expect(origin.oldestStreamFailed)
        #expect(!origin.hasResponseBytes)
        #expect(origin.takeFailedStream() == HTTP2ClientSession.StreamFailure(code: .cancel, reason: "the app reset its stream", unprocessed: false))
        origin.takeResponses()
        #expect(origin.newResponseText() == "HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nb")
        #expect(origin.isIdle)
        // More on stream 3, after its turn was taken, is still ignored.
        origin.deliver(H2.data(stream: 3, "rest", endStream: true))
        #expect(origin.receiveError == nil)
        #expect(!origin.hasResponseBytes)
        #expect(origin.isIdle)
        #expect(origin.sendError == nil)
        #expect(origin.take().resets == [], "a second RST_STREAM")
        #expect(origin.violations == [])
    }

    /// Responses wait here in request order, so the connection's window
    /// cannot wait for the bytes to be taken: with a connection window of two
    /// stream windows, streams 3 and 5 fill theirs before stream 1 sends
    /// anything. The window comes back as their DATA arrives (one
    /// WINDOW_UPDATE per half window), so stream 1 can send its whole body,
    /// and all three responses come whole, in order, the origin never
    /// sending past what it was granted.
    @Test func laterStreamsCannotTakeTheConnectionWindowFromTheOldest() {
        let streamWindow = 65535
        let connectionWindow = 2 * streamWindow
        var origin = Origin(limits: limits(streamWindow: streamWindow, connectionWindow: connectionWindow))
        #expect(origin.connectionCredit == connectionWindow)
        let ids: [UInt32] = [1, 3, 5]
        let size = 100_000
        let bodies = ids.map { pattern(size, seed: Int($0)) }
        for id in ids { origin.request("GET /\(id) HTTP/1.1\r\nHost: h.test\r\n\r\n") }
        #expect(origin.take().headerEvents.count == 3)
        var frames: [UInt8] = []
        for id in ids { frames += origin.head(id, 200, [hf("content-length", String(size))]) }
        origin.deliver(frames)
        // The engine takes stream 1's head; 3's and 5's wait.
        origin.takeResponses()
        let heads = origin.newResponses()
        #expect(text(heads) == "HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n")
        _ = origin.take()
        var sent = [0, 0, 0]
        var updates: [UInt32] = []
        var granted = connectionWindow
        func record(_ events: [H2Event]) {
            for case let .windowUpdate(0, increment) in events {
                updates.append(increment)
                granted += Int(increment)
            }
        }
        // Streams 3 and 5: their whole stream windows, the connection's whole window, before stream 1's DATA.
        for i in [1, 2] {
            #expect(origin.room(ids[i]) == streamWindow)
            origin.deliver(dataFrames(stream: ids[i], Array(bodies[i][..<streamWindow])))
            sent[i] = streamWindow
            let events = origin.take()
            #expect(events == [.windowUpdate(stream: 0, increment: UInt32(streamWindow))], "after stream \(ids[i])'s window")
            record(events)
        }
        #expect(origin.receiveError == nil)
        #expect(origin.dataSentTotal == connectionWindow)
        #expect(origin.connectionCredit == connectionWindow)
        #expect(origin.room(ids[0]) == streamWindow, "what stream 1 may send")
        // Then as the windows allow, the later streams first, taking 20000 bytes a round.
        var rounds = 0
        while rounds < 1000, origin.receiveError == nil, sent != [size, size, size] || !origin.isIdle {
            rounds += 1
            for i in ids.indices.reversed() {
                let n = min(origin.room(ids[i]), size - sent[i])
                guard n > 0 else { continue }
                origin.deliver(dataFrames(stream: ids[i], Array(bodies[i][sent[i] ..< sent[i] + n]), endStream: sent[i] + n == size))
                sent[i] += n
                #expect(origin.dataSentTotal <= granted, "the origin sent \(origin.dataSentTotal) of the \(granted) granted")
                record(origin.take())
            }
            origin.takeResponses(maximum: 20000, once: true)
            record(origin.take())
        }
        #expect(sent == [size, size, size], "after \(rounds) rounds")
        #expect(rounds < 1000)
        #expect(origin.receiveError == nil)
        #expect(origin.violations == [])
        #expect(origin.isIdle)
        #expect(origin.connectionCredit >= 0 && origin.connectionCredit <= connectionWindow)
        // One WINDOW_UPDATE per half window of DATA, each giving back what had arrived.
        #expect(updates.allSatisfy { $0 >= UInt32(connectionWindow / 2) }, "\(updates)")
        #expect(origin.connectionCredit == granted - origin.dataSentTotal)
        #expect(3 * size - (granted - connectionWindow) < connectionWindow / 2, "\(3 * size) bytes arrived, \(granted - connectionWindow) came back")
        var expected: [UInt8] = []
        for i in ids.indices { expected += utf8("HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n") + bodies[i] }
        expectBytes(origin.responses, expected, "the three responses")
    }
}
