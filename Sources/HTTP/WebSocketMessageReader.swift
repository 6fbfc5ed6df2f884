/// One direction of a WebSocket connection (RFC 6455 §5), read as messages
/// for the record (HAR's `_webSocketMessages`), never changed: Sluice passes
/// the bytes on as they came and only watches them.
///
/// Incremental: bytes come as the connection delivers them, cut anywhere.
/// What it holds is bounded: at most a frame header (14 bytes) and the
/// first `keepLimit` bytes of the message being read; the rest of a long
/// message is counted, not kept. A frame RFC 6455 forbids (a reserved
/// opcode, a fragmented or long control frame, a continuation with nothing
/// to continue) throws, and the reader then stays failed: the record stops,
/// the connection goes on.
public struct WebSocketMessageReader: Sendable {
    /// RFC 6455 §5.2 opcodes.
    public enum Opcode: UInt8, Sendable, CustomStringConvertible {
        case continuation = 0x0
        case text = 0x1
        case binary = 0x2
        case close = 0x8
        case ping = 0x9
        case pong = 0xA

        public var isControl: Bool { rawValue & 0x8 != 0 }

        public var description: String {
            switch self {
            case .continuation: "continuation"
            case .text: "text"
            case .binary: "binary"
            case .close: "close"
            case .ping: "ping"
            case .pong: "pong"
            }
        }
    }

    /// A whole message (its fragments joined) or a control frame.
    public struct Message: Sendable, Equatable, CustomStringConvertible {
        public var opcode: Opcode
        /// Its first bytes, unmasked (all of it up to `keepLimit`).
        public var data: [UInt8]
        /// Its whole length.
        public var length: Int
        /// RSV1 on its first frame: compressed by permessage-deflate (RFC 7692), so `data` is too.
        public var compressed: Bool

        public var description: String {
            "\(opcode) \(length) bytes\(compressed ? " (deflated)" : "")\(data.count < length ? ", \(data.count) kept" : "")"
        }
    }

    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var reason: String
        public var description: String { "WebSocket: \(reason)" }
    }

    /// Bytes kept of each message.
    public let keepLimit: Int
    /// Bytes kept of a compressed message (RSV1), which is only readable
    /// whole: inflated, its text is what the record keeps.
    public let compressedKeepLimit: Int
    /// The header of the frame being read, until it is whole.
    private var header: [UInt8] = []
    /// Payload bytes of the current frame still to come.
    private var remaining: UInt64 = 0
    private var mask: (UInt8, UInt8, UInt8, UInt8)?
    /// Payload bytes of the current frame read so far (for the mask's phase).
    private var frameOffset: UInt64 = 0
    private var frameOpcode: Opcode = .continuation
    private var frameFinal = false
    private var inPayload = false
    /// The data message whose fragments are being joined.
    private var message: Message?
    /// The control frame being read (they may come between a message's fragments).
    private var control: Message?
    private(set) public var failure: Failure?

    public init(keepLimit: Int, compressedKeepLimit: Int? = nil) {
        self.keepLimit = max(0, keepLimit)
        self.compressedKeepLimit = max(0, compressedKeepLimit ?? keepLimit)
    }

    /// Reads `bytes`, calling `each` for every message and control frame
    /// they complete.
    public mutating func read(_ bytes: UnsafeRawBufferPointer, _ each: (Message) -> Void) throws(Failure) {
        if let failure { throw failure }
        var offset = 0
        // Every turn takes at least one byte, or ends a frame that has no payload left.
        while offset < bytes.count || (inPayload && remaining == 0) {
            if !inPayload {
                header.append(bytes[offset])
                offset += 1
                guard let needed = Self.headerLength(header), header.count == needed else { continue }
                do { try startFrame() } catch {
                    failure = error
                    throw error
                }
                continue
            }
            let n = Int(min(remaining, UInt64(bytes.count - offset)))
            take(UnsafeRawBufferPointer(rebasing: bytes[offset ..< offset + n]))
            offset += n
            remaining -= UInt64(n)
            if remaining == 0 { endFrame(each) }
        }
    }

    /// How long the header that starts with `header` is, once its first two bytes say (§5.2).
    static func headerLength(_ header: [UInt8]) -> Int? {
        guard header.count >= 2 else { return nil }
        let lengthCode = header[1] & 0x7F
        let extended = lengthCode == 126 ? 2 : lengthCode == 127 ? 8 : 0
        return 2 + extended + (header[1] & 0x80 != 0 ? 4 : 0)
    }

    private mutating func startFrame() throws(Failure) {
        defer { header.removeAll(keepingCapacity: true) }
        guard let opcode = Opcode(rawValue: header[0] & 0x0F) else {
            throw Failure(reason: "reserved opcode \(header[0] & 0x0F)")
        }
        let final = header[0] & 0x80 != 0
        var length = UInt64(header[1] & 0x7F)
        var index = 2
        if length == 126 {
            length = UInt64(header[2]) << 8 | UInt64(header[3])
            index = 4
        } else if length == 127 {
            length = 0
            for i in 2 ..< 10 { length = length << 8 | UInt64(header[i]) }
            // §5.2: the most significant bit must be 0.
            guard length >> 63 == 0 else { throw Failure(reason: "a 64-bit length with its top bit set") }
            index = 10
        }
        mask = header[1] & 0x80 != 0 ? (header[index], header[index + 1], header[index + 2], header[index + 3]) : nil
        if opcode.isControl {
            // §5.5: control frames are never fragmented and carry at most 125 bytes.
            guard final, length <= 125 else { throw Failure(reason: "a \(opcode) frame that is fragmented or over 125 bytes") }
            control = Message(opcode: opcode, data: [], length: 0, compressed: false)
        } else if opcode == .continuation {
            guard message != nil else { throw Failure(reason: "a continuation frame with no message to continue") }
        } else {
            guard message == nil else { throw Failure(reason: "a new \(opcode) message inside a fragmented one") }
            message = Message(opcode: opcode, data: [], length: 0, compressed: header[0] & 0x40 != 0)
        }
        frameOpcode = opcode
        frameFinal = final
        remaining = length
        frameOffset = 0
        inPayload = true
    }

    private mutating func take(_ payload: UnsafeRawBufferPointer) {
        let isControl = frameOpcode.isControl
        let kept = isControl ? control!.data.count : message!.data.count
        // A control frame is kept whole (125 bytes at most, checked at its header).
        let limit = isControl ? kept + payload.count : message!.compressed ? compressedKeepLimit : keepLimit
        let room = max(0, min(payload.count, limit - kept))
        var unmasked = Array(payload.prefix(room))
        if let mask {
            for i in unmasked.indices {
                let phase = (frameOffset + UInt64(i)) & 3
                unmasked[i] ^= phase == 0 ? mask.0 : phase == 1 ? mask.1 : phase == 2 ? mask.2 : mask.3
            }
        }
        frameOffset += UInt64(payload.count)
        if isControl {
            control!.data += unmasked
            control!.length += payload.count
        } else {
            message!.data += unmasked
            message!.length += payload.count
        }
    }

    private mutating func endFrame(_ each: (Message) -> Void) {
        inPayload = false
        if frameOpcode.isControl {
            if let control { each(control) }
            control = nil
        } else if frameFinal, let message {
            each(message)
            self.message = nil
        }
    }
}
