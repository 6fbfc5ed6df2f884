/// What a policy does with an HTTP request Sluice reads: the one place that
/// says which policies answer, refuse or send a request on, for HTTP mode
/// (`FlowDirector.route(for:isHTTP:)`) and `sluice match` alike.
public enum PolicyAction: Equatable, Sendable {
    /// Sent on: DIRECT, or through a proxy.
    case forward
    /// Answered by Sluice with this status and plain-text body.
    case answer(status: Int, body: String)
    /// Answered 200 with a 1x1 transparent GIF, so ad slots collapse quietly.
    case answerTinyGIF
    /// Refused with a reset (TCP RST; an HTTP/2 request: its stream's).
    case reset
    /// Left unanswered: the client waits for its own timeout.
    case drop
}

extension BuiltinPolicy {
    public var action: PolicyAction {
        switch self {
        case .direct: .forward
        case .reject, .rejectNoDrop: .answer(status: 403, body: "Blocked by Sluice\n")
        case .rejectRST: .reset
        case .rejectDrop: .drop
        case .rejectTinyGIF: .answerTinyGIF
        }
    }
}

extension ProxyKind {
    public var action: PolicyAction {
        switch self {
        case .socks5, .http, .direct: .forward
        case let .reject(status, body): .answer(status: status, body: body)
        case .rejectRST: .reset
        case .rejectDrop: .drop
        case .rejectTinyGIF: .answerTinyGIF
        }
    }
}
