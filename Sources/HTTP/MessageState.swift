/// Where a parser is between heads: the part shared by requests and responses.
enum MessageState: Sendable {
    case head
    case fixed(remaining: Int)
    case chunked(ChunkedReader)
    case untilClose
    /// A message without a body is complete; `.end(consumed: 0)` is next.
    case endPending
    /// `.upgraded` is next; then passthrough.
    case upgradePending
    case passthrough
    case closed
    case failed(HTTPParseError)

    init(_ framing: BodyFraming) {
        switch framing {
        case .none: self = .endPending
        case let .length(n): self = n == 0 ? .endPending : .fixed(remaining: n)
        case .chunked: self = .chunked(ChunkedReader())
        case .untilClose: self = .untilClose
        case .upgrade: self = .upgradePending
        }
    }

    /// The step for every state but `.head`, or nil when it needs input.
    /// `messageEnded` is set when the step completes a message.
    mutating func bodyStep<Head>(_ input: UnsafeRawBufferPointer, limits: HTTPParserLimits,
                                 messageEnded: inout Bool) throws(HTTPParseError) -> HTTPParseStep<Head>?
    {
        switch self {
        case .head:
            return nil
        case let .fixed(remaining):
            guard input.count > 0 else { return nil }
            if input.count >= remaining {
                self = .head
                messageEnded = true
                return .end(consumed: remaining)
            }
            self = .fixed(remaining: remaining - input.count)
            return .body(consumed: input.count)
        case var .chunked(reader):
            guard input.count > 0 else { return nil }
            let (consumed, done) = try reader.advance(input, limits: limits)
            if done {
                self = .head
                messageEnded = true
                return .end(consumed: consumed)
            }
            self = .chunked(reader)
            return .body(consumed: consumed)
        case .untilClose, .passthrough:
            guard input.count > 0 else { return nil }
            return .body(consumed: input.count)
        case .endPending:
            self = .head
            messageEnded = true
            return .end(consumed: 0)
        case .upgradePending:
            self = .passthrough
            return .upgraded
        case .closed:
            guard input.count == 0 else { throw .dataAfterClose }
            return nil
        case let .failed(error):
            throw error
        }
    }

    /// At the end of the stream: a body that runs to the close ends here;
    /// anything else unfinished is an error.
    mutating func finish<Head>(headIsEmpty: Bool) throws(HTTPParseError) -> HTTPParseStep<Head>? {
        switch self {
        case .head:
            self = .closed
            guard headIsEmpty else { throw .unexpectedEndOfStream }
            return nil
        case .untilClose, .endPending:
            self = .closed
            return .end(consumed: 0)
        case .fixed, .chunked:
            self = .failed(.unexpectedEndOfStream)
            throw .unexpectedEndOfStream
        case .upgradePending:
            self = .passthrough
            return .upgraded
        case .passthrough, .closed:
            self = .closed
            return nil
        case let .failed(error):
            throw error
        }
    }
}
