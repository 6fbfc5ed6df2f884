@testable import HTTP
import TestSupport

// A scripted HTTP/2 client for HTTP2GatewayTests: its own frame builder and
// frame reader, written from RFC 9113 §4.1 and §6 (not HTTP2Frame.swift), a
// model of the flow-control windows it granted, and a small HTTP/1.1 request
// reader (RFC 9112) for what the gateway hands the session. Only HPACK comes
// from the module (HPACKEncoder / HPACKDecoder).

// MARK: RFC 9113 numbers

/// §6: frame types.
enum H2Type {
    static let data: UInt8 = 0x0
    static let headers: UInt8 = 0x1
    static let priority: UInt8 = 0x2
    static let rstStream: UInt8 = 0x3
    static let settings: UInt8 = 0x4
    static let pushPromise: UInt8 = 0x5
    static let ping: UInt8 = 0x6
    static let goAway: UInt8 = 0x7
    static let windowUpdate: UInt8 = 0x8
    static let continuation: UInt8 = 0x9
}

/// §6: flags.
enum H2Flag {
    static let endStream: UInt8 = 0x1
    static let ack: UInt8 = 0x1
    static let endHeaders: UInt8 = 0x4
    static let padded: UInt8 = 0x8
    static let priority: UInt8 = 0x20
}

/// §7: error codes.
enum H2Code {
    static let noError: UInt32 = 0x0
    static let protocolError: UInt32 = 0x1
    static let internalError: UInt32 = 0x2
    static let flowControlError: UInt32 = 0x3
    static let streamClosed: UInt32 = 0x5
    static let frameSizeError: UInt32 = 0x6
    static let refusedStream: UInt32 = 0x7
    static let cancel: UInt32 = 0x8
    static let compressionError: UInt32 = 0x9
    static let enhanceYourCalm: UInt32 = 0xB

    static func name(_ code: UInt32) -> String {
        switch code {
        case 0x0: "NO_ERROR"
        case 0x1: "PROTOCOL_ERROR"
        case 0x2: "INTERNAL_ERROR"
        case 0x3: "FLOW_CONTROL_ERROR"
        case 0x4: "SETTINGS_TIMEOUT"
        case 0x5: "STREAM_CLOSED"
        case 0x6: "FRAME_SIZE_ERROR"
        case 0x7: "REFUSED_STREAM"
        case 0x8: "CANCEL"
        case 0x9: "COMPRESSION_ERROR"
        case 0xA: "CONNECT_ERROR"
        case 0xB: "ENHANCE_YOUR_CALM"
        default: "0x" + String(code, radix: 16)
        }
    }
}

/// §6.5.2: setting identifiers.
enum H2Setting {
    static let headerTableSize: UInt16 = 0x1
    static let enablePush: UInt16 = 0x2
    static let maxConcurrentStreams: UInt16 = 0x3
    static let initialWindowSize: UInt16 = 0x4
    static let maxFrameSize: UInt16 = 0x5
    static let maxHeaderListSize: UInt16 = 0x6
}

// MARK: Frame builder

enum H2 {
    /// §3.4.
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func be32(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }

    /// §4.1: Length (24), Type (8), Flags (8), R (1) + Stream Identifier (31), payload.
    /// `declaredLength` lies about the length (for FRAME_SIZE tests).
    static func frame(_ type: UInt8, flags: UInt8 = 0, stream: UInt32, _ payload: [UInt8] = [],
                      declaredLength: Int? = nil, reservedBit: Bool = false) -> [UInt8]
    {
        let n = declaredLength ?? payload.count
        precondition(n >= 0 && n < 1 << 24)
        let id = stream & 0x7FFF_FFFF | (reservedBit ? 0x8000_0000 : 0)
        return [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, flags] + be32(id) + payload
    }

    /// §6.1, §6.2: Pad Length, the payload, then that many zero octets.
    static func pad(_ payload: [UInt8], _ padding: Int) -> [UInt8] {
        [UInt8(padding)] + payload + Array(repeating: 0, count: padding)
    }

    /// §6.5.
    static func settings(_ values: [(UInt16, UInt32)]) -> [UInt8] {
        var payload: [UInt8] = []
        for (id, value) in values { payload += [UInt8(id >> 8), UInt8(id & 0xFF)] + be32(value) }
        return frame(H2Type.settings, stream: 0, payload)
    }

    static let settingsAck = frame(H2Type.settings, flags: H2Flag.ack, stream: 0)

    /// §6.7.
    static func ping(_ opaque: [UInt8], ack: Bool = false) -> [UInt8] {
        frame(H2Type.ping, flags: ack ? H2Flag.ack : 0, stream: 0, opaque)
    }

    /// §6.9.
    static func windowUpdate(stream: UInt32, _ increment: UInt32) -> [UInt8] {
        frame(H2Type.windowUpdate, stream: stream, be32(increment))
    }

    /// §6.4.
    static func rst(stream: UInt32, _ code: UInt32) -> [UInt8] {
        frame(H2Type.rstStream, stream: stream, be32(code))
    }

    /// §6.8.
    static func goAway(last: UInt32, _ code: UInt32, debug: String = "") -> [UInt8] {
        frame(H2Type.goAway, stream: 0, be32(last) + be32(code) + Array(debug.utf8))
    }

    /// §6.3: exclusive bit + dependency, weight.
    static func priority(stream: UInt32, dependsOn: UInt32 = 0, weight: UInt8 = 15) -> [UInt8] {
        frame(H2Type.priority, stream: stream, be32(dependsOn) + [weight])
    }

    /// §6.1.
    static func data(stream: UInt32, _ body: [UInt8], endStream: Bool = false, padding: Int? = nil) -> [UInt8] {
        var flags: UInt8 = endStream ? H2Flag.endStream : 0
        var payload = body
        if let padding {
            flags |= H2Flag.padded
            payload = pad(body, padding)
        }
        return frame(H2Type.data, flags: flags, stream: stream, payload)
    }

    static func data(stream: UInt32, _ text: String, endStream: Bool = false) -> [UInt8] {
        data(stream: stream, Array(text.utf8), endStream: endStream)
    }

    /// §6.2: [Pad Length] [E + Stream Dependency, Weight] fragment [Padding].
    static func headers(stream: UInt32, block: [UInt8], endStream: Bool = false, endHeaders: Bool = true,
                        padding: Int? = nil, priority: Bool = false) -> [UInt8]
    {
        var flags: UInt8 = 0
        if endStream { flags |= H2Flag.endStream }
        if endHeaders { flags |= H2Flag.endHeaders }
        var payload: [UInt8] = []
        if priority {
            flags |= H2Flag.priority
            payload += be32(0) + [200]
        }
        payload += block
        if let padding {
            flags |= H2Flag.padded
            payload = pad(payload, padding)
        }
        return frame(H2Type.headers, flags: flags, stream: stream, payload)
    }

    /// §6.10.
    static func continuation(stream: UInt32, block: [UInt8], endHeaders: Bool) -> [UInt8] {
        frame(H2Type.continuation, flags: endHeaders ? H2Flag.endHeaders : 0, stream: stream, block)
    }

    /// A request's header list: the four pseudo-fields, then `extra`.
    static func request(_ method: String = "GET", _ path: String, authority: String? = "example.com",
                        scheme: String = "https", _ extra: [HPACKHeader] = []) -> [HPACKHeader]
    {
        var fields = [HPACKHeader(":method", method), HPACKHeader(":scheme", scheme)]
        if let authority { fields.append(HPACKHeader(":authority", authority)) }
        fields.append(HPACKHeader(":path", path))
        return fields + extra
    }

    /// RFC 7541 §6.2.1 by hand: a literal with incremental indexing and a
    /// literal name, no Huffman (the module's encoder never indexes).
    static func hpackLiteralIndexed(_ name: String, _ value: String) -> [UInt8] {
        precondition(name.utf8.count < 127 && value.utf8.count < 127)
        return [0x40, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
    }

    /// RFC 7541 §6.1: an indexed field (index below 127).
    static func hpackIndexed(_ index: Int) -> [UInt8] {
        precondition(index > 0 && index < 127)
        return [0x80 | UInt8(index)]
    }
}

func h2Bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

// MARK: Frame reader

/// One frame as read off the wire.
struct H2ReadFrame: Equatable, Sendable, CustomStringConvertible {
    var type: UInt8
    var flags: UInt8
    var stream: UInt32
    var reservedBit: Bool
    var payload: [UInt8]

    var description: String { "frame type \(type) flags 0x\(String(flags, radix: 16)) stream \(stream) length \(payload.count)" }
}

/// Cuts a byte stream into frames (§4.1). Never throws: the test checks sizes itself.
struct H2FrameCutter {
    private var buffer: [UInt8] = []
    private var start = 0

    mutating func append(_ bytes: [UInt8]) {
        if start > 0 {
            buffer.removeSubrange(0 ..< start)
            start = 0
        }
        buffer += bytes
    }

    var buffered: Int { buffer.count - start }

    mutating func next() -> H2ReadFrame? {
        guard buffer.count - start >= 9 else { return nil }
        let b = buffer[start ..< start + 9].map { Int($0) }
        let length = b[0] << 16 | b[1] << 8 | b[2]
        guard buffer.count - start >= 9 + length else { return nil }
        let raw = UInt32(b[5]) << 24 | UInt32(b[6]) << 16 | UInt32(b[7]) << 8 | UInt32(b[8])
        let frame = H2ReadFrame(type: UInt8(b[3]), flags: UInt8(b[4]), stream: raw & 0x7FFF_FFFF, reservedBit: raw & 0x8000_0000 != 0,
                                payload: Array(buffer[start + 9 ..< start + 9 + length]))
        start += 9 + length
        return frame
    }
}

// MARK: What the app sees

struct H2Field: Equatable, Hashable, Sendable, CustomStringConvertible {
    var name: String
    var value: String
    init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    var description: String { "\(name): \(value)" }
}

struct H2SettingValue: Equatable, Hashable, Sendable, CustomStringConvertible {
    var id: UInt16
    var value: UInt32
    var description: String { "\(id)=\(value)" }
}

/// A frame from the gateway, decoded (header blocks joined and HPACK-decoded).
enum H2Event: Equatable, Sendable, CustomStringConvertible {
    case settings([H2SettingValue])
    case settingsAck
    case ping([UInt8])
    case pingAck([UInt8])
    case windowUpdate(stream: UInt32, increment: UInt32)
    case rst(stream: UInt32, code: UInt32)
    case goAway(last: UInt32, code: UInt32, debug: String)
    case headers(stream: UInt32, fields: [H2Field], endStream: Bool)
    case data(stream: UInt32, bytes: [UInt8], endStream: Bool)
    case other(H2ReadFrame)

    var description: String {
        switch self {
        case let .settings(values): "SETTINGS \(values)"
        case .settingsAck: "SETTINGS ACK"
        case let .ping(bytes): "PING \(bytes)"
        case let .pingAck(bytes): "PING ACK \(bytes)"
        case let .windowUpdate(stream, increment): "WINDOW_UPDATE stream \(stream) +\(increment)"
        case let .rst(stream, code): "RST_STREAM stream \(stream) \(H2Code.name(code))"
        case let .goAway(last, code, debug): "GOAWAY last \(last) \(H2Code.name(code)) \"\(debug)\""
        case let .headers(stream, fields, endStream): "HEADERS stream \(stream)\(endStream ? " END_STREAM" : "") \(fields)"
        case let .data(stream, bytes, endStream):
            "DATA stream \(stream)\(endStream ? " END_STREAM" : "") \(bytes.count) bytes"
                + (bytes.count <= 40 ? " \"\(String(decoding: bytes, as: UTF8.self))\"" : "")
        case let .other(frame): "other \(frame)"
        }
    }

    var stream: UInt32 {
        switch self {
        case let .windowUpdate(stream, _), let .rst(stream, _), let .headers(stream, _, _), let .data(stream, _, _): stream
        case let .other(frame): frame.stream
        default: 0
        }
    }

    var isWindowUpdate: Bool {
        if case .windowUpdate = self { return true }
        return false
    }
}

extension Array where Element == H2Event {
    /// For comparing runs that were split differently: no WINDOW_UPDATEs, and
    /// a stream's consecutive DATA frames joined into one.
    var normalized: [H2Event] {
        var result: [H2Event] = []
        for event in self {
            switch event {
            case .windowUpdate:
                continue
            case let .data(stream, bytes, endStream):
                if case let .data(lastStream, lastBytes, lastEnd)? = result.last, lastStream == stream, !lastEnd {
                    result[result.count - 1] = .data(stream: stream, bytes: lastBytes + bytes, endStream: endStream)
                } else if bytes.isEmpty, !endStream {
                    continue
                } else {
                    result.append(event)
                }
            default:
                result.append(event)
            }
        }
        return result
    }

    /// The sum of WINDOW_UPDATE increments on `stream`.
    func credit(_ stream: UInt32) -> Int {
        reduce(0) { sum, event in
            if case let .windowUpdate(s, increment) = event, s == stream { return sum + Int(increment) }
            return sum
        }
    }

    var withoutWindowUpdates: [H2Event] { filter { !$0.isWindowUpdate } }

    func on(_ stream: UInt32) -> [H2Event] { filter { $0.stream == stream } }

    /// What each stream got: its header blocks, its DATA joined, END_STREAM, resets.
    var streams: [UInt32: H2StreamResult] {
        var result: [UInt32: H2StreamResult] = [:]
        for event in self {
            switch event {
            case let .headers(stream, fields, endStream):
                result[stream, default: H2StreamResult()].heads.append(fields)
                if endStream { result[stream, default: H2StreamResult()].ended = true }
            case let .data(stream, bytes, endStream):
                result[stream, default: H2StreamResult()].body += bytes
                result[stream, default: H2StreamResult()].dataFrames += 1
                if endStream { result[stream, default: H2StreamResult()].ended = true }
            case let .rst(stream, code):
                result[stream, default: H2StreamResult()].resets.append(code)
            default:
                continue
            }
        }
        return result
    }

    var goAways: [H2Event] {
        filter { if case .goAway = $0 { return true } else { return false } }
    }

    var resets: [H2Event] {
        filter { if case .rst = $0 { return true } else { return false } }
    }
}

struct H2StreamResult: Equatable, CustomStringConvertible {
    var heads: [[H2Field]] = []
    var body: [UInt8] = []
    var dataFrames = 0
    var ended = false
    var resets: [UInt32] = []

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    var description: String {
        "heads \(heads) body \(body.count) bytes\(ended ? " ended" : "") resets \(resets.map(H2Code.name))"
    }
}

// MARK: Splitting

/// How a byte stream is cut into the pieces handed over one by one.
enum H2Split: Sendable, CustomStringConvertible {
    case whole
    case byteByByte
    case random(UInt64)

    static let all: [H2Split] = [.whole, .byteByByte, .random(1), .random(7), .random(4242)]

    var description: String {
        switch self {
        case .whole: "whole"
        case .byteByByte: "byte by byte"
        case let .random(seed): "random pieces (seed \(seed))"
        }
    }
}

struct H2Splitter {
    let split: H2Split
    var rng: SeededRandom

    init(_ split: H2Split) {
        self.split = split
        if case let .random(seed) = split { rng = SeededRandom(seed: seed) } else { rng = SeededRandom(seed: 0) }
    }

    mutating func pieces(_ count: Int) -> [Int] {
        switch split {
        case .whole: return count == 0 ? [] : [count]
        case .byteByByte: return Array(repeating: 1, count: count)
        case .random:
            var result: [Int] = []
            var left = count
            while left > 0 {
                let n = min(left, 1 + Int(rng.next() % 23))
                result.append(n)
                left -= n
            }
            return result
        }
    }
}

// MARK: The peer

/// The app's end of the connection, driving one `HTTP2Gateway` as the
/// engine would: bytes in (split as asked), output and request bytes drained
/// after every piece, responses written back in any pieces.
struct H2Peer {
    var gateway: HTTP2Gateway
    private var splitter: H2Splitter
    var encoder = HPACKEncoder()
    private var decoder = HPACKDecoder()
    private var incoming = H2FrameCutter()
    private var outgoing = H2FrameCutter()
    private var outgoingPrefaceLeft = H2.preface.count
    private var openBlock: (stream: UInt32, endStream: Bool, bytes: [UInt8])?

    /// Every frame the gateway sent, in order.
    private(set) var events: [H2Event] = []
    private var eventsTaken = 0
    /// The HTTP/1.1 bytes the gateway handed the session, all of them.
    private(set) var requests: [UInt8] = []
    private var requestsTaken = 0
    /// Where requests stop short (`HTTP2Gateway.takeRequests`), as places in `requests`.
    private(set) var cuts: [Int] = []
    private var cutsTaken = 0
    /// What `receive` threw, and how many times.
    private(set) var error: HTTP2ConnectionError?
    private(set) var receiveThrows = 0
    private(set) var respondError: HTTP2ConnectionError?
    /// Things the gateway did that RFC 9113 forbids, seen by the reader.
    private(set) var violations: [String] = []

    // The windows this peer granted Sluice (§6.9), and its frame size (§6.5.2).
    private(set) var connectionWindow = 65535
    private var initialWindow = 65535
    private(set) var streamWindows: [UInt32: Int] = [:]
    private(set) var maxFrameSize = 16384
    private var highestOpened: UInt32 = 0
    /// Streams Sluice ended (END_STREAM or RST_STREAM).
    private var endedBySluice: Set<UInt32> = []

    init(split: H2Split = .whole, limits: HTTP2Gateway.Limits = HTTP2Gateway.Limits(), handshake: Bool = true,
         settings: [(UInt16, UInt32)] = [])
    {
        gateway = HTTP2Gateway(limits: limits)
        splitter = H2Splitter(split)
        collect()
        if handshake { send(H2.preface + H2.settings(settings)) }
    }

    /// The session's end is drained after every piece, as the engine would.
    mutating func collect() {
        let output = gateway.takeOutput()
        if gateway.hasOutput { violations.append("hasOutput after takeOutput") }
        incoming.append(output)
        // Bounded: every frame takes at least 9 of the bytes just appended.
        while let frame = incoming.next() { read(frame) }
        let taken = gateway.takeRequests()
        cuts += taken.cuts.map { requests.count + $0 }
        requests += taken.bytes
    }

    /// Bytes to the gateway, cut as the peer's split says (or `split`).
    /// After a connection error nothing more is fed.
    mutating func send(_ bytes: [UInt8], split: H2Split? = nil) {
        track(outgoing: bytes)
        var cutter = split.map(H2Splitter.init) ?? splitter
        var offset = 0
        for n in cutter.pieces(bytes.count) {
            guard error == nil else { break }
            do {
                try gateway.receive(Array(bytes[offset ..< offset + n]))
            } catch {
                self.error = error
                receiveThrows += 1
            }
            offset += n
            collect()
        }
        if split == nil { splitter = cutter }
    }

    /// Frames since the last call.
    mutating func take() -> [H2Event] {
        defer { eventsTaken = events.count }
        return Array(events[eventsTaken...])
    }

    /// Request bytes since the last call.
    mutating func takeRequests() -> [UInt8] {
        defer { requestsTaken = requests.count }
        return Array(requests[requestsTaken...])
    }

    mutating func takeRequestText() -> String { String(decoding: takeRequests(), as: UTF8.self) }

    /// Request bytes since the last call, cut into the pieces between the
    /// places where a request stops short.
    mutating func takeRequestPieces() -> [String] {
        let start = requestsTaken
        let bytes = takeRequests()
        defer { cutsTaken = cuts.count }
        var pieces: [String] = []
        var from = 0
        for cut in cuts[cutsTaken...] {
            pieces.append(String(decoding: bytes[from ..< cut - start], as: UTF8.self))
            from = cut - start
        }
        pieces.append(String(decoding: bytes[from...], as: UTF8.self))
        return pieces
    }

    mutating func block(_ fields: [HPACKHeader]) -> [UInt8] { encoder.encode(fields) }

    /// A HEADERS frame carrying `fields`.
    mutating func headers(_ stream: UInt32, _ fields: [HPACKHeader], endStream: Bool = false) -> [UInt8] {
        H2.headers(stream: stream, block: encoder.encode(fields), endStream: endStream)
    }

    /// The session's response bytes, cut as `split` says. Returns how many
    /// the gateway took: less than all when a call takes nothing.
    @discardableResult
    mutating func respond(_ bytes: [UInt8], split: H2Split = .whole) -> Int {
        var cutter = H2Splitter(split)
        var taken = 0
        for n in cutter.pieces(bytes.count) {
            let piece = Array(bytes[taken ..< taken + n])
            var offset = 0
            // Bounded: each turn takes at least one byte or stops.
            for _ in 0 ..< n + 1 {
                guard offset < piece.count, respondError == nil else { break }
                let result: Result<Int, HTTP2ConnectionError> = piece.withUnsafeBytes { raw in
                    do throws(HTTP2ConnectionError) {
                        return .success(try gateway.respond(UnsafeRawBufferPointer(rebasing: raw[offset...])))
                    } catch {
                        return .failure(error)
                    }
                }
                switch result {
                case let .success(count):
                    if count < 0 || count > piece.count - offset { violations.append("respond returned \(count)") }
                    offset += max(0, min(count, piece.count - offset))
                case let .failure(error):
                    respondError = error
                }
                collect()
                if case .success(0) = result { break }
            }
            taken += offset
            if offset < piece.count { return taken }
        }
        return taken
    }

    @discardableResult
    mutating func respond(_ text: String, split: H2Split = .whole) -> Int { respond(h2Bytes(text), split: split) }

    // MARK: Reading the gateway's frames

    private mutating func read(_ frame: H2ReadFrame) {
        if frame.reservedBit { violations.append("reserved bit set: \(frame)") }
        if frame.payload.count > maxFrameSize { violations.append("\(frame) is over SETTINGS_MAX_FRAME_SIZE \(maxFrameSize)") }
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
        switch frame.type {
        case H2Type.settings:
            if frame.stream != 0 { violations.append("SETTINGS on stream \(frame.stream)") }
            if frame.flags & H2Flag.ack != 0 {
                if !frame.payload.isEmpty { violations.append("SETTINGS ACK with a payload") }
                events.append(.settingsAck)
            } else {
                if frame.payload.count % 6 != 0 { violations.append("SETTINGS of \(frame.payload.count) bytes") }
                var values: [H2SettingValue] = []
                var i = 0
                while i + 6 <= frame.payload.count {
                    let p = frame.payload
                    values.append(H2SettingValue(id: UInt16(p[i]) << 8 | UInt16(p[i + 1]),
                                                 value: UInt32(p[i + 2]) << 24 | UInt32(p[i + 3]) << 16 | UInt32(p[i + 4]) << 8 | UInt32(p[i + 5])))
                    i += 6
                }
                events.append(.settings(values))
            }
        case H2Type.ping:
            if frame.stream != 0 || frame.payload.count != 8 { violations.append("bad \(frame)") }
            events.append(frame.flags & H2Flag.ack != 0 ? .pingAck(frame.payload) : .ping(frame.payload))
        case H2Type.windowUpdate:
            guard frame.payload.count == 4 else {
                violations.append("bad \(frame)")
                events.append(.other(frame))
                return
            }
            let p = frame.payload.map { UInt32($0) }
            if p[0] & 0x80 != 0 { violations.append("WINDOW_UPDATE with its reserved bit set") }
            let increment = (p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]) & 0x7FFF_FFFF
            if increment == 0 { violations.append("WINDOW_UPDATE of 0 on stream \(frame.stream)") }
            events.append(.windowUpdate(stream: frame.stream, increment: increment))
        case H2Type.rstStream:
            guard frame.payload.count == 4, frame.stream != 0 else {
                violations.append("bad \(frame)")
                events.append(.other(frame))
                return
            }
            let p = frame.payload.map { UInt32($0) }
            endedBySluice.insert(frame.stream)
            events.append(.rst(stream: frame.stream, code: p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]))
        case H2Type.goAway:
            guard frame.payload.count >= 8, frame.stream == 0 else {
                violations.append("bad \(frame)")
                events.append(.other(frame))
                return
            }
            let p = frame.payload.map { UInt32($0) }
            if p[0] & 0x80 != 0 { violations.append("GOAWAY with its reserved bit set") }
            events.append(.goAway(last: (p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]) & 0x7FFF_FFFF,
                                  code: p[4] << 24 | p[5] << 16 | p[6] << 8 | p[7],
                                  debug: String(decoding: frame.payload[8...], as: UTF8.self)))
        case H2Type.headers:
            if frame.stream == 0 || frame.stream % 2 == 0 { violations.append("HEADERS on stream \(frame.stream)") }
            if endedBySluice.contains(frame.stream) { violations.append("HEADERS on stream \(frame.stream) after it ended") }
            var payload = frame.payload[...]
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
            if endedBySluice.contains(frame.stream) { violations.append("DATA on stream \(frame.stream) after it ended") }
            // §6.9.1: the whole payload counts against the windows.
            connectionWindow -= frame.payload.count
            if connectionWindow < 0 { violations.append("DATA past the connection window (\(connectionWindow))") }
            if let window = streamWindows[frame.stream] {
                streamWindows[frame.stream] = window - frame.payload.count
                if window - frame.payload.count < 0 {
                    violations.append("DATA past stream \(frame.stream)'s window (\(window - frame.payload.count))")
                }
            } else {
                violations.append("DATA on stream \(frame.stream), which the peer never opened")
            }
            var payload = frame.payload[...]
            if frame.flags & H2Flag.padded != 0 {
                let padding = Int(payload.first ?? 0)
                payload = payload.dropFirst().dropLast(padding)
            }
            let endStream = frame.flags & H2Flag.endStream != 0
            if endStream { endedBySluice.insert(frame.stream) }
            events.append(.data(stream: frame.stream, bytes: Array(payload), endStream: endStream))
        default:
            events.append(.other(frame))
        }
    }

    private mutating func decodeBlock(stream: UInt32, endStream: Bool, _ bytes: [UInt8]) {
        do {
            let fields = try decoder.decode(bytes)
            if endStream { endedBySluice.insert(stream) }
            events.append(.headers(stream: stream, fields: fields.map { H2Field($0.name, $0.value) }, endStream: endStream))
        } catch {
            violations.append("stream \(stream): a header block the peer cannot decode: \(error)")
        }
    }

    // MARK: What the peer itself sent: the windows it granted

    private mutating func track(outgoing bytes: [UInt8]) {
        var rest = bytes[...]
        if outgoingPrefaceLeft > 0 {
            let n = min(outgoingPrefaceLeft, rest.count)
            outgoingPrefaceLeft -= n
            rest = rest.dropFirst(n)
        }
        outgoing.append(Array(rest))
        while let frame = outgoing.next() {
            let p = frame.payload
            switch frame.type {
            case H2Type.settings where frame.flags & H2Flag.ack == 0 && frame.stream == 0 && p.count % 6 == 0:
                var i = 0
                while i + 6 <= p.count {
                    let id = UInt16(p[i]) << 8 | UInt16(p[i + 1])
                    let value = Int(p[i + 2]) << 24 | Int(p[i + 3]) << 16 | Int(p[i + 4]) << 8 | Int(p[i + 5])
                    if id == H2Setting.initialWindowSize {
                        let delta = value - initialWindow
                        initialWindow = value
                        for key in streamWindows.keys { streamWindows[key]! += delta }
                    } else if id == H2Setting.maxFrameSize, (16384 ... 16_777_215).contains(value) {
                        maxFrameSize = value
                    }
                    i += 6
                }
            case H2Type.windowUpdate where p.count == 4:
                let increment = (Int(p[0]) << 24 | Int(p[1]) << 16 | Int(p[2]) << 8 | Int(p[3])) & 0x7FFF_FFFF
                if frame.stream == 0 {
                    connectionWindow += increment
                } else if streamWindows[frame.stream] != nil {
                    streamWindows[frame.stream]! += increment
                }
            case H2Type.headers where frame.stream > highestOpened && frame.stream % 2 == 1:
                highestOpened = frame.stream
                streamWindows[frame.stream] = initialWindow
            default:
                break
            }
        }
    }
}

// MARK: The session's side: HTTP/1.1 requests (RFC 9112)

struct H1Request: Equatable, CustomStringConvertible {
    /// "METHOD target HTTP/1.1".
    var line: String
    /// Every field line but the framing one, as "name: value".
    var fields: [String]
    /// "content-length: N", "chunked" or "none".
    var framing: String
    var body: [UInt8]
    var trailers: [String]

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    var description: String {
        "\(line) \(fields) [\(framing)] body \(body.count) bytes\(trailers.isEmpty ? "" : " trailers \(trailers)")"
    }
}

/// Reads the HTTP/1.1 requests in `bytes`. `rest` is what is left of an
/// incomplete last one; `error` says what was not HTTP/1.1.
func h1Requests(_ bytes: [UInt8]) -> (requests: [H1Request], rest: Int, error: String?) {
    var requests: [H1Request] = []
    var offset = 0
    func line(from start: Int) -> (text: String, next: Int)? {
        var i = start
        while i + 1 < bytes.count {
            if bytes[i] == 0x0D, bytes[i + 1] == 0x0A {
                return (String(decoding: bytes[start ..< i], as: UTF8.self), i + 2)
            }
            if bytes[i] == 0x0A || bytes[i] == 0x0D, !(bytes[i] == 0x0D && bytes[i + 1] == 0x0A) {
                return ("\u{FFFD}bare line break", i + 1)
            }
            i += 1
        }
        return nil
    }
    // Bounded: each request takes at least its request line.
    while offset < bytes.count {
        let begin = offset
        guard let (requestLine, afterLine) = line(from: offset) else { return (requests, bytes.count - begin, nil) }
        if requestLine.contains("\u{FFFD}") { return (requests, 0, "a bare CR or LF in \"\(requestLine)\"") }
        var fields: [String] = []
        var framing = "none"
        var length = 0
        var cursor = afterLine
        var headDone = false
        while let (text, next) = line(from: cursor) {
            cursor = next
            if text.isEmpty {
                headDone = true
                break
            }
            if text.contains("\u{FFFD}") { return (requests, 0, "a bare CR or LF in a field line: \(text)") }
            if text.hasPrefix("content-length: ") {
                guard framing == "none", let n = Int(text.dropFirst(16)) else { return (requests, 0, "framing twice: \(text)") }
                framing = text
                length = n
            } else if text == "transfer-encoding: chunked" {
                guard framing == "none" else { return (requests, 0, "framing twice: \(text)") }
                framing = "chunked"
            } else {
                fields.append(text)
            }
        }
        guard headDone else { return (requests, bytes.count - begin, nil) }
        var body: [UInt8] = []
        var trailers: [String] = []
        if framing == "chunked" {
            var done = false
            // Bounded: each chunk takes at least its size line.
            while !done {
                guard let (sizeLine, afterSize) = line(from: cursor) else { return (requests, bytes.count - begin, nil) }
                guard let size = Int(sizeLine, radix: 16), size >= 0 else { return (requests, 0, "chunk size \"\(sizeLine)\"") }
                cursor = afterSize
                if size == 0 {
                    var trailerDone = false
                    while let (text, next) = line(from: cursor) {
                        cursor = next
                        if text.isEmpty {
                            trailerDone = true
                            break
                        }
                        trailers.append(text)
                    }
                    guard trailerDone else { return (requests, bytes.count - begin, nil) }
                    done = true
                } else {
                    guard cursor + size + 2 <= bytes.count else { return (requests, bytes.count - begin, nil) }
                    body += bytes[cursor ..< cursor + size]
                    guard bytes[cursor + size] == 0x0D, bytes[cursor + size + 1] == 0x0A else {
                        return (requests, 0, "chunk data not followed by CRLF")
                    }
                    cursor += size + 2
                }
            }
        } else {
            guard cursor + length <= bytes.count else { return (requests, bytes.count - begin, nil) }
            body = Array(bytes[cursor ..< cursor + length])
            cursor += length
        }
        requests.append(H1Request(line: requestLine, fields: fields, framing: framing, body: body, trailers: trailers))
        offset = cursor
    }
    return (requests, 0, nil)
}
