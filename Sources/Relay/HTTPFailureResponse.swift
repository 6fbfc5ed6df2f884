/// The response the engine (or our HTTP proxy listener) gives a client whose
/// request it parsed, when the relay fails: a status a browser or curl shows
/// meaningfully, and the reason as a one-line text body.
public enum HTTPFailureResponse {
    /// 403 when a rule or the upstream forbade it, 504 when nothing answered
    /// in time or the target is unreachable, 502 for everything else.
    public static func status(for error: RelayError) -> (code: Int, reason: String) {
        switch error {
        case .notAllowed:
            return (403, "Forbidden")
        case .hostUnreachable, .networkUnreachable, .ttlExpired, .timedOut:
            return (504, "Gateway Timeout")
        case let .httpStatus(code) where code == 504:
            return (504, "Gateway Timeout")
        case .generalFailure, .connectionRefused, .commandNotSupported, .addressTypeNotSupported, .authRejected,
             .noAcceptableMethod, .httpStatus, .protocolViolation, .unexpectedClose, .unrepresentable:
            return (502, "Bad Gateway")
        }
    }

    public static func bytes(for error: RelayError) -> [UInt8] {
        let (code, reason) = status(for: error)
        return simple(code: code, reason: reason, body: "sluice: \(error)\n")
    }

    /// A complete response that closes the connection.
    static func simple(code: Int, reason: String, extraHeaders: String = "", body: String) -> [UInt8] {
        let head = "HTTP/1.1 \(code) \(reason)\r\n\(extraHeaders)Content-Type: text/plain\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return Array((head + body).utf8)
    }
}
