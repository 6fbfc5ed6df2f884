/// HTTP/2 framing (RFC 9113 §4.1, §6): the 9-byte frame header, the frame
/// types and flags Sluice acts on, error codes and settings. Frames of
/// unknown types keep their raw type byte: §4.1 says they are ignored.
public enum HTTP2FrameType: UInt8, Sendable, CustomStringConvertible {
    case data = 0
    case headers = 1
    case priority = 2
    case rstStream = 3
    case settings = 4
    case pushPromise = 5
    case ping = 6
    case goAway = 7
    case windowUpdate = 8
    case continuation = 9

    public var description: String {
        switch self {
        case .data: "DATA"
        case .headers: "HEADERS"
        case .priority: "PRIORITY"
        case .rstStream: "RST_STREAM"
        case .settings: "SETTINGS"
        case .pushPromise: "PUSH_PROMISE"
        case .ping: "PING"
        case .goAway: "GOAWAY"
        case .windowUpdate: "WINDOW_UPDATE"
        case .continuation: "CONTINUATION"
        }
    }
}

/// §6: the flag bits, by the frame types that use them.
public enum HTTP2Flags {
    /// DATA, HEADERS.
    public static let endStream: UInt8 = 0x1
    /// SETTINGS, PING.
    public static let ack: UInt8 = 0x1
    /// HEADERS, PUSH_PROMISE, CONTINUATION.
    public static let endHeaders: UInt8 = 0x4
    /// DATA, HEADERS, PUSH_PROMISE.
    public static let padded: UInt8 = 0x8
    /// HEADERS.
    public static let priority: UInt8 = 0x20
}

/// §7.
public struct HTTP2ErrorCode: RawRepresentable, Sendable, Equatable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let noError = HTTP2ErrorCode(rawValue: 0x0)
    public static let protocolError = HTTP2ErrorCode(rawValue: 0x1)
    public static let internalError = HTTP2ErrorCode(rawValue: 0x2)
    public static let flowControlError = HTTP2ErrorCode(rawValue: 0x3)
    public static let streamClosed = HTTP2ErrorCode(rawValue: 0x5)
    public static let frameSizeError = HTTP2ErrorCode(rawValue: 0x6)
    public static let refusedStream = HTTP2ErrorCode(rawValue: 0x7)
    public static let cancel = HTTP2ErrorCode(rawValue: 0x8)
    public static let compressionError = HTTP2ErrorCode(rawValue: 0x9)
    public static let enhanceYourCalm = HTTP2ErrorCode(rawValue: 0xB)

    public var description: String {
        switch rawValue {
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
        case 0xC: "INADEQUATE_SECURITY"
        case 0xD: "HTTP_1_1_REQUIRED"
        default: "0x" + String(rawValue, radix: 16)
        }
    }
}

/// §6.5.2: the settings Sluice reads or sends.
public enum HTTP2Setting {
    public static let headerTableSize: UInt16 = 0x1
    public static let enablePush: UInt16 = 0x2
    public static let maxConcurrentStreams: UInt16 = 0x3
    public static let initialWindowSize: UInt16 = 0x4
    public static let maxFrameSize: UInt16 = 0x5
    public static let maxHeaderListSize: UInt16 = 0x6
}

/// A connection error (§5.4.1): GOAWAY with this code, then the connection ends.
public struct HTTP2ConnectionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: HTTP2ErrorCode
    public var reason: String

    public init(_ code: HTTP2ErrorCode, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code): \(reason)" }
}

/// One frame as read: its header's fields and its payload.
public struct HTTP2Frame: Sendable, Equatable, CustomStringConvertible {
    /// The raw type: `HTTP2FrameType(rawValue:)` is nil for types §4.1 says to ignore.
    public var type: UInt8
    public var flags: UInt8
    public var streamID: UInt32
    public var payload: [UInt8]

    public init(type: HTTP2FrameType, flags: UInt8 = 0, streamID: UInt32, payload: [UInt8] = []) {
        self.type = type.rawValue
        self.flags = flags
        self.streamID = streamID
        self.payload = payload
    }

    public init(rawType: UInt8, flags: UInt8, streamID: UInt32, payload: [UInt8]) {
        type = rawType
        self.flags = flags
        self.streamID = streamID
        self.payload = payload
    }

    public var knownType: HTTP2FrameType? { HTTP2FrameType(rawValue: type) }

    public func has(_ flag: UInt8) -> Bool { flags & flag != 0 }

    /// §6.1, §6.2: the payload without its padding (and HEADERS' priority fields).
    func unpaddedPayload(priorityBytes: Int = 0) throws(HTTP2ConnectionError) -> ArraySlice<UInt8> {
        var payload = self.payload[...]
        var padding = 0
        if has(HTTP2Flags.padded) {
            guard let length = payload.first else { throw HTTP2ConnectionError(.frameSizeError, "\(self) has no pad length") }
            padding = Int(length)
            payload = payload.dropFirst()
        }
        guard payload.count >= priorityBytes + padding else {
            throw HTTP2ConnectionError(.protocolError, "\(self): padding longer than the payload")
        }
        return payload.dropFirst(priorityBytes).dropLast(padding)
    }

    /// A header block as HEADERS and the CONTINUATIONs a peer's frame size
    /// asks for (§6.2, §6.10), END_STREAM on the first when `endStream`.
    static func headerFrames(streamID: UInt32, block: [UInt8], maximumFrameSize: Int, endStream: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        var offset = 0
        var first = true
        repeat {
            let n = min(block.count - offset, maximumFrameSize)
            var flags: UInt8 = offset + n == block.count ? HTTP2Flags.endHeaders : 0
            if first, endStream { flags |= HTTP2Flags.endStream }
            bytes += HTTP2Frame(type: first ? .headers : .continuation, flags: flags, streamID: streamID,
                                payload: Array(block[offset ..< offset + n])).encoded()
            offset += n
            first = false
        } while offset < block.count
        return bytes
    }

    /// §4.1: length (24 bits), type, flags, R + stream identifier (31 bits), payload.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(9 + payload.count)
        Self.appendHeader(length: payload.count, type: type, flags: flags, streamID: streamID, to: &bytes)
        bytes += payload
        return bytes
    }

    /// A 32-bit field, big-endian (§4.1): error codes, setting values,
    /// window increments and stream ids (whose reserved bit the caller clears).
    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
         UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    static func appendHeader(length: Int, type: UInt8, flags: UInt8, streamID: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length),
                  type, flags,
                  UInt8(truncatingIfNeeded: streamID >> 24) & 0x7F, UInt8(truncatingIfNeeded: streamID >> 16),
                  UInt8(truncatingIfNeeded: streamID >> 8), UInt8(truncatingIfNeeded: streamID)]
    }

    public var description: String {
        let name = knownType.map { "\($0)" } ?? "type \(type)"
        return "\(name) stream \(streamID) flags 0x\(String(flags, radix: 16)) length \(payload.count)"
    }
}

/// Cuts the bytes after the connection preface into frames. Nil means
/// "need more bytes"; a frame longer than the advertised maximum is a
/// FRAME_SIZE_ERROR (§4.2), thrown before its payload is buffered.
public struct HTTP2FrameReader: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    /// SETTINGS_MAX_FRAME_SIZE as Sluice announced it.
    public let maximumFrameSize: Int

    public init(maximumFrameSize: Int = 16384) {
        self.maximumFrameSize = maximumFrameSize
    }

    public var bufferedCount: Int { buffer.count - start }

    public mutating func append(_ bytes: [UInt8]) {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 65536 {
            buffer.removeSubrange(0 ..< start)
            start = 0
        }
        buffer += bytes
    }

    public mutating func next() throws(HTTP2ConnectionError) -> HTTP2Frame? {
        guard buffer.count - start >= 9 else { return nil }
        let length = Int(buffer[start]) << 16 | Int(buffer[start + 1]) << 8 | Int(buffer[start + 2])
        guard length <= maximumFrameSize else {
            throw HTTP2ConnectionError(.frameSizeError, "a frame of \(length) bytes (the limit is \(maximumFrameSize))")
        }
        guard buffer.count - start >= 9 + length else { return nil }
        let streamID = (UInt32(buffer[start + 5]) << 24 | UInt32(buffer[start + 6]) << 16 | UInt32(buffer[start + 7]) << 8
            | UInt32(buffer[start + 8])) & 0x7FFF_FFFF
        let frame = HTTP2Frame(rawType: buffer[start + 3], flags: buffer[start + 4], streamID: streamID,
                               payload: Array(buffer[start + 9 ..< start + 9 + length]))
        start += 9 + length
        return frame
    }
}
