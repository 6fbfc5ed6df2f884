/// Incremental HTTP/1.x response parser for the server-to-app byte stream.
/// Whether a response has a body depends on its request (HEAD, CONNECT), so
/// the engine queues each request's method with `expectResponse(to:)` as the
/// request parser reports its head; the queue follows pipelining order.
///
/// Interim 1xx responses (100 Continue, 103 Early Hints) come out as heads of
/// their own with no `.end`: the exchange goes on to the final response.
/// 101, and 2xx to CONNECT, are followed by `.upgraded`.
public struct HTTPResponseParser: Sendable {
    public let limits: HTTPParserLimits
    private var headReader = HeadReader()
    private var state = MessageState.head
    private var methods: [HTTPMethod] = []
    private var nextMethod = 0

    public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
    }

    /// Queues the method of a request sent upstream, in order.
    public mutating func expectResponse(to method: HTTPMethod) {
        if nextMethod > 0 && nextMethod == methods.count {
            methods.removeAll(keepingCapacity: true)
            nextMethod = 0
        }
        methods.append(method)
    }

    /// Requests still waiting for their final response.
    public var pendingResponses: Int { methods.count - nextMethod }

    /// The method the response being read answers; an unsolicited response
    /// (a 408 before any request) is read as answering GET.
    private var currentMethod: HTTPMethod {
        nextMethod < methods.count ? methods[nextMethod] : .get
    }

    private mutating func completeExchange() {
        if nextMethod < methods.count { nextMethod += 1 }
    }

    /// The response being read (or the next one) will not come: what was
    /// read of it is forgotten, and the next bytes answer the request after
    /// it. (HTTP/2's gateway: the session gave that stream no response.)
    public mutating func skipResponse() {
        headReader = HeadReader()
        state = .head
        completeExchange()
    }

    /// Where the head of the last `.head` step lies in the input that step
    /// was parsed from, when the head came whole in it (nil when it began in
    /// an earlier input): its bytes can then be forwarded as they came.
    public var lastHeadInInput: Range<Int>? { headReader.lastHeadInInput }

    public var isIdle: Bool {
        if case .head = state { return headReader.isEmpty }
        return false
    }

    public mutating func parse(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> HTTPResponseStep? {
        do {
            if case .head = state {
                guard let (head, consumed) = try headReader.read(input, limits: limits, parse: { bytes throws(HTTPParseError) in
                    try HeadParser.response(bytes, limits: limits)
                }) else { return nil }
                let framing = try HTTPFraming.responseFraming(head, requestMethod: currentMethod)
                if head.isInformational && head.status != 101 {
                    // Interim: the final response is still to come.
                    state = .head
                } else {
                    if framing == .upgrade { completeExchange() }
                    state = MessageState(framing)
                }
                return .head(head, consumed: consumed)
            }
            var ended = false
            let step: HTTPResponseStep? = try state.bodyStep(input, limits: limits, messageEnded: &ended)
            if ended { completeExchange() }
            return step
        } catch {
            state = .failed(error)
            throw error
        }
    }

    /// The server closed its side: ends a body that runs to the close.
    public mutating func finish() throws(HTTPParseError) -> HTTPResponseStep? {
        let step: HTTPResponseStep? = try state.finish(headIsEmpty: headReader.isEmpty)
        if case .end = step { completeExchange() }
        return step
    }

    /// After `finish`: the responses still expected come from another
    /// connection (their requests went again there), each from its head.
    public mutating func startAfterClose() {
        headReader = HeadReader()
        state = .head
    }
}
