internal import Crypto
internal import HTTP

/// A WebSocket connection in HTTP mode, recorded for the HAR from its 101 to
/// its end: one entry, written when the connection ends (or Sluice stops),
/// with its messages both ways in Chrome's form (`_resourceType`,
/// `_webSocketMessages`), so HAR viewers show them as they show a
/// browser's. The bytes pass through untouched; the readers only watch.
///
/// Bounded: each message keeps the HAR body limit's first bytes, and a
/// connection keeps at most `maximumMessages` messages and 16 times the
/// body limit in all; what is left out is counted in the entry's comment.
///
/// permessage-deflate (RFC 7692), which browsers offer and many servers
/// accept: when the 101 accepted it, each direction's compressed messages
/// are inflated for the record (`Inflater`, with the window the 101 says,
/// kept from message to message unless it says no_context_takeover). A
/// compressed message must be whole to be inflated, and, with context
/// takeover, every message before it: a direction whose compressed message
/// passes `compressedLimit`, or whose data does not inflate, is recorded
/// compressed (base64, `_compressed`) from there on.
/// Until 2026-12-05 such a connection's entry was its upgrade request,
/// failed ("the app closed the connection"), with no messages.
final class WebSocketRecording {
    static let maximumMessages = 10_000

    /// The upgrade request and its 101.
    let exchange: HTTPExchange
    private var fromApp: WebSocketMessageReader
    private var fromServer: WebSocketMessageReader
    private(set) var messages: [HARWebSocketMessage] = []
    /// Messages not kept: past the count or the bytes.
    private(set) var leftOut = 0
    private var keptBytes = 0
    private let byteBudget: Int
    private let keepLimit: Int
    /// Each direction's inflation, while the 101 accepted permessage-deflate and its data inflates.
    private var appInflation: Inflation?
    private var serverInflation: Inflation?

    /// A compressed message is kept whole up to this, to be inflated.
    static let compressedLimit = 1 << 20

    struct Inflation {
        var inflater: Inflater
        /// no_context_takeover: each message starts afresh.
        let resets: Bool
        /// Why it stopped (the direction is recorded compressed from then).
        var failure: String?
    }

    init(exchange: HTTPExchange, keepLimit: Int) {
        self.exchange = exchange
        self.keepLimit = keepLimit
        let deflate = exchange.responseHead.flatMap { WebSocketDeflateParameters(acceptedExtensions: $0.headers.values("Sec-WebSocket-Extensions")) }
        let compressedLimit = deflate == nil ? keepLimit : max(keepLimit, Self.compressedLimit)
        fromApp = WebSocketMessageReader(keepLimit: keepLimit, compressedKeepLimit: compressedLimit)
        fromServer = WebSocketMessageReader(keepLimit: keepLimit, compressedKeepLimit: compressedLimit)
        if let deflate {
            appInflation = Inflation(inflater: Inflater(windowBits: deflate.clientMaxWindowBits), resets: deflate.clientNoContextTakeover)
            serverInflation = Inflation(inflater: Inflater(windowBits: deflate.serverMaxWindowBits), resets: deflate.serverNoContextTakeover)
        }
        byteBudget = 16 * max(keepLimit, 4096)
    }

    /// Bytes that went on, from the app (`send`) or the server (`receive`);
    /// `time` is seconds since the epoch.
    func read(_ bytes: UnsafeRawBufferPointer, fromApp app: Bool, time: Double) {
        // A direction whose frames broke RFC 6455 is no longer read (its failure is in the comment).
        if app {
            try? fromApp.read(bytes) { add($0, fromApp: true, time: time) }
        } else {
            try? fromServer.read(bytes) { add($0, fromApp: false, time: time) }
        }
    }

    /// Chrome records the data messages (text and binary), not control frames.
    private func add(_ message: WebSocketMessageReader.Message, fromApp app: Bool, time: Double) {
        let opcode: Int
        switch message.opcode {
        case .text: opcode = 1
        case .binary: opcode = 2
        case .continuation, .close, .ping, .pong: return
        }
        var message = message
        if message.compressed {
            // Inflated even when left out below: with context takeover, later messages need its window.
            if app { inflate(&message, with: &appInflation) } else { inflate(&message, with: &serverInflation) }
            // Not inflated: kept to the body limit like any message (it was kept whole to be inflated).
            if message.compressed, message.data.count > keepLimit { message.data.removeLast(message.data.count - keepLimit) }
        }
        guard messages.count < Self.maximumMessages, keptBytes + message.data.count <= byteBudget else {
            leftOut += 1
            return
        }
        keptBytes += message.data.count
        // Text as text (a cut that splits a character shows as U+FFFD); binary
        // and deflated data in base64, as Chrome writes binary.
        let data = opcode == 1 && !message.compressed ? String(decoding: message.data, as: UTF8.self) : Base64.encode(message.data)
        messages.append(HARWebSocketMessage(type: app ? "send" : "receive", time: time, opcode: opcode, data: data,
                                            length: message.data.count < message.length ? message.length : nil,
                                            compressed: message.compressed))
    }

    /// A compressed message's data inflated in place (its first `keepLimit`
    /// bytes, its whole length), or left as it is once the direction cannot.
    private func inflate(_ message: inout WebSocketMessageReader.Message, with inflation: inout Inflation?) {
        guard var current = inflation, current.failure == nil else { return }
        defer { inflation = current }
        guard message.data.count == message.length else {
            current.failure = "a compressed message over \(Self.compressedLimit) bytes"
            return
        }
        // §7.2.2: the sender took the trailing 00 00 FF FF off each message.
        let unit = message.data + [0x00, 0x00, 0xFF, 0xFF]
        var output: [UInt8] = []
        let limit = keepLimit
        let result = unit.withUnsafeBytes { raw in Result { () throws(Inflater.Failure) in try current.inflater.inflate(raw, limit: limit, into: &output) } }
        let total: Int
        switch result {
        case let .success(length): total = length
        case let .failure(error):
            current.failure = "\(error)"
            return
        }
        if current.resets { current.inflater.reset() }
        message.data = output
        message.length = total
        message.compressed = false
    }

    /// The upgrade's HAR entry made this WebSocket's: Chrome's fields, its
    /// ws:// or wss:// URL (as the app named it), and notes in the comment.
    func decorate(_ entry: inout HAREntry) {
        entry.resourceType = "websocket"
        entry.webSocketMessages = messages
        if entry.request.url.hasPrefix("http") { entry.request.url = "ws" + entry.request.url.dropFirst(4) }
        if !notes.isEmpty { entry.comment = ([entry.comment].compactMap { $0 } + notes).joined(separator: "; ") }
    }

    /// Whether an upgrade's exchange is a WebSocket's: a 101 to `Upgrade: websocket`.
    static func isWebSocket(_ exchange: HTTPExchange) -> Bool {
        exchange.status == 101 && exchange.requestHead?.upgrade?.lowercased().contains("websocket") == true
    }

    /// What the entry's comment adds: messages left out, a direction that stopped being read.
    var notes: [String] {
        var notes: [String] = []
        if leftOut > 0 { notes.append("\(leftOut) WebSocket messages left out (over \(Self.maximumMessages) messages or \(byteBudget) bytes)") }
        if let failure = fromApp.failure { notes.append("the app's frames stopped being read: \(failure)") }
        if let failure = fromServer.failure { notes.append("the server's frames stopped being read: \(failure)") }
        if let failure = appInflation?.failure { notes.append("the app's messages are recorded compressed from one on: \(failure)") }
        if let failure = serverInflation?.failure { notes.append("the server's messages are recorded compressed from one on: \(failure)") }
        return notes
    }
}
