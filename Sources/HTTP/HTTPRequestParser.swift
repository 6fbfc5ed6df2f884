/// Incremental HTTP/1.x request parser for the app-to-server byte stream.
///
///     var rest = input
///     while let step = try parser.parse(rest) {
///         // .head: send head.serialized() (maybe rewritten) instead of its bytes
///         // .body/.end: forward rest[..<consumed] verbatim
///         rest = rest[consumed...]
///     }
///
/// nil means every byte given was taken (a partial head is buffered inside,
/// within the limits) and more input is needed. After a throw the parser
/// keeps throwing the same error: the flow is answered 400 and closed.
public struct HTTPRequestParser: Sendable {
    public let limits: HTTPParserLimits
    private var headReader = HeadReader()
    private var state = MessageState.head

    public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
    }

    /// True between messages with nothing buffered.
    public var isIdle: Bool {
        if case .head = state { return headReader.isEmpty }
        return false
    }

    public mutating func parse(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> HTTPRequestStep? {
        do {
            var ended = false
            if case .head = state {
                guard let (head, consumed) = try headReader.read(input, limits: limits, parse: { bytes throws(HTTPParseError) in
                    try HeadParser.request(bytes, limits: limits)
                }) else { return nil }
                state = MessageState(try HTTPFraming.requestFraming(head))
                return .head(head, consumed: consumed)
            }
            return try state.bodyStep(input, limits: limits, messageEnded: &ended)
        } catch {
            state = .failed(error)
            throw error
        }
    }

    /// The server agreed to switch protocols (101, or 2xx to CONNECT): what
    /// the app sends from now on is opaque. The next `parse` returns
    /// `.upgraded`, later ones every byte as `.body`.
    public mutating func upgrade() {
        headReader.reset()
        state = .upgradePending
    }

    /// The app closed its side. Returns `.end` for nothing (requests never run
    /// to the close) and throws when the stream stops inside a message.
    public mutating func finish() throws(HTTPParseError) -> HTTPRequestStep? {
        try state.finish(headIsEmpty: headReader.isEmpty)
    }
}
