/// Why a byte stream is not acceptable HTTP/1.x. A closed set of cases keeps
/// the error path free of string building; the engine answers 400 (a request)
/// or 502 (a response) and closes the flow.
public enum HTTPParseError: Error, Sendable, Equatable, Hashable, CustomStringConvertible {
    // Size limits (HTTPParserLimits).
    case startLineTooLong
    case headTooLarge
    case tooManyHeaders
    case chunkLineTooLong
    case trailersTooLarge

    // The start line.
    case invalidMethod
    case invalidTarget
    case invalidVersion
    case unsupportedVersion
    case invalidStatus

    // The header section.
    case invalidLineEnding
    case invalidHeaderName
    case invalidHeaderValue
    case obsoleteLineFolding
    case missingHost
    case multipleHost
    case invalidHost

    // Framing.
    case invalidContentLength
    case conflictingContentLength
    case contentLengthWithTransferEncoding
    case unsupportedTransferEncoding
    case invalidChunkSize
    case chunkSizeTooLarge
    case invalidChunkExtension
    case invalidChunkFraming
    case invalidTrailer

    // The stream.
    case unexpectedEndOfStream
    case dataAfterClose

    public var description: String {
        switch self {
        case .startLineTooLong: "HTTP: start line too long"
        case .headTooLarge: "HTTP: head too large"
        case .tooManyHeaders: "HTTP: too many header fields"
        case .chunkLineTooLong: "HTTP: chunk size line too long"
        case .trailersTooLarge: "HTTP: trailer section too large"
        case .invalidMethod: "HTTP: invalid method"
        case .invalidTarget: "HTTP: invalid request target"
        case .invalidVersion: "HTTP: invalid version"
        case .unsupportedVersion: "HTTP: unsupported version"
        case .invalidStatus: "HTTP: invalid status code"
        case .invalidLineEnding: "HTTP: bare CR or invalid line ending"
        case .invalidHeaderName: "HTTP: invalid header field name"
        case .invalidHeaderValue: "HTTP: invalid header field value"
        case .obsoleteLineFolding: "HTTP: obsolete line folding"
        case .missingHost: "HTTP: HTTP/1.1 request without Host"
        case .multipleHost: "HTTP: more than one Host"
        case .invalidHost: "HTTP: invalid Host"
        case .invalidContentLength: "HTTP: invalid Content-Length"
        case .conflictingContentLength: "HTTP: conflicting Content-Length values"
        case .contentLengthWithTransferEncoding: "HTTP: both Content-Length and Transfer-Encoding"
        case .unsupportedTransferEncoding: "HTTP: Transfer-Encoding without final chunked"
        case .invalidChunkSize: "HTTP: invalid chunk size"
        case .chunkSizeTooLarge: "HTTP: chunk size overflows"
        case .invalidChunkExtension: "HTTP: invalid chunk extension"
        case .invalidChunkFraming: "HTTP: missing CRLF in chunked framing"
        case .invalidTrailer: "HTTP: invalid trailer field"
        case .unexpectedEndOfStream: "HTTP: stream ended inside a message"
        case .dataAfterClose: "HTTP: data after the stream was finished"
        }
    }

    /// The status a request refused for this error gets (RFC 9110 §15.5):
    /// one that names a limit when it broke one, so the user can tell a long
    /// URL or a cookie jar that grew from a malformed request.
    public var requestStatus: (code: Int, reason: String) {
        switch self {
        case .startLineTooLong: (414, "URI Too Long")
        case .headTooLarge, .tooManyHeaders: (431, "Request Header Fields Too Large")
        default: (400, "Bad Request")
        }
    }
}

/// Bounds on what a parser buffers or accepts. The defaults match common
/// servers (nginx allows 8 KiB request lines; 64 KiB covers large cookies).
public struct HTTPParserLimits: Sendable, Equatable {
    /// The whole head: start line, fields, line endings.
    public var maxHeadBytes: Int
    public var maxHeaderCount: Int
    public var maxStartLineBytes: Int
    /// One chunk-size line including its extensions.
    public var maxChunkLineBytes: Int
    /// The trailer section of a chunked body.
    public var maxTrailerBytes: Int

    public init(maxHeadBytes: Int = 64 * 1024, maxHeaderCount: Int = 100, maxStartLineBytes: Int = 8 * 1024,
                maxChunkLineBytes: Int = 4 * 1024, maxTrailerBytes: Int = 16 * 1024)
    {
        self.maxHeadBytes = maxHeadBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxStartLineBytes = maxStartLineBytes
        self.maxChunkLineBytes = maxChunkLineBytes
        self.maxTrailerBytes = maxTrailerBytes
    }
}

/// One result of `parse`: what the next `consumed` bytes of the input were.
/// `.body` and `.end` bytes are the message body exactly as on the wire (chunk
/// framing and trailers included), to be forwarded verbatim; together they add
/// up to the body's length on the wire. The step that takes a message's last
/// byte is `.end`, so `.end` also closes messages whose body is empty.
public enum HTTPParseStep<Head: Sendable & Equatable>: Sendable, Equatable, CustomStringConvertible {
    /// A complete head; `consumed` counts its bytes in this input (earlier
    /// parts were taken by calls that returned nil).
    case head(Head, consumed: Int)
    case body(consumed: Int)
    /// The message is complete; `consumed` may be 0.
    case end(consumed: Int)
    /// The connection switched protocols (101, or 2xx to CONNECT): from here
    /// on the bytes are opaque. Consumes nothing; later calls return every
    /// byte as `.body`.
    case upgraded

    public var consumed: Int {
        switch self {
        case let .head(_, consumed), let .body(consumed), let .end(consumed): consumed
        case .upgraded: 0
        }
    }

    public var description: String {
        switch self {
        case let .head(head, consumed): "head \(head) (\(consumed) bytes)"
        case let .body(consumed): "body \(consumed)"
        case let .end(consumed): "end \(consumed)"
        case .upgraded: "upgraded"
        }
    }
}

public typealias HTTPRequestStep = HTTPParseStep<HTTPRequestHead>
public typealias HTTPResponseStep = HTTPParseStep<HTTPResponseHead>
