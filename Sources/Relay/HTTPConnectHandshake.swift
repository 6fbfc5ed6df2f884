/// The client side of an HTTP CONNECT tunnel (RFC 9110 §9.3.6) through an
/// upstream HTTP proxy, with Basic credentials (RFC 7617) when configured.
///
///     initial ─start→ awaitingResponse ─(2xx)→ established
///                                      └(other status / garbage)→ failed
public struct HTTPConnectHandshake: ProxyClientHandshake, CustomStringConvertible {
    enum State: Hashable, Sendable {
        case initial
        case awaitingResponse
        case established
        case failed(RelayError)
    }

    public let target: ProxyTarget
    public let credentials: ProxyCredentials?
    private(set) var state: State = .initial

    /// Throws `.unrepresentable` for credentials Basic cannot carry.
    public init(target: ProxyTarget, credentials: ProxyCredentials?) throws(RelayError) {
        if let credentials, !credentials.fitsBasic { throw .unrepresentable(.headerValue) }
        self.target = target
        self.credentials = credentials
    }

    public var stage: HandshakeStage {
        switch state {
        case .initial: return .connect
        case .awaitingResponse, .established, .failed: return .reply
        }
    }

    public var isEstablished: Bool { state == .established }

    /// `CONNECT host:port HTTP/1.1`, Host, and Proxy-Authorization if any.
    public mutating func start() -> [UInt8] {
        precondition(state == .initial, "HTTPConnectHandshake.start() called twice")
        state = .awaitingResponse
        let authority = target.description
        var head = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let credentials { head += "Proxy-Authorization: \(credentials.basicAuthorization)\r\n" }
        head += "\r\n"
        return Array(head.utf8)
    }

    public mutating func receive(_ bytes: UnsafeRawBufferPointer) throws(RelayError) -> HandshakeStep? {
        do {
            return try step(bytes)
        } catch {
            state = .failed(error)
            throw error
        }
    }

    public mutating func inputClosed() -> RelayError {
        if case let .failed(error) = state { return error }
        state = .failed(.unexpectedClose)
        return .unexpectedClose
    }

    private mutating func step(_ bytes: UnsafeRawBufferPointer) throws(RelayError) -> HandshakeStep? {
        switch state {
        case .initial:
            if bytes.isEmpty { return nil }
            throw .protocolViolation(.unexpectedBytes)
        case .awaitingResponse:
            // Fail at once on a first byte that cannot start "HTTP/": a SOCKS
            // server on the port, say, would otherwise stall until the deadline.
            if bytes.count >= 1, bytes[0] != UInt8(ascii: "H") { throw .protocolViolation(.statusLine) }
            guard let head = try ProxyHead.parse(bytes) else { return nil }
            let status = try Self.statusCode(head.startLine)
            switch status {
            case 200 ..< 300:
                // A 2xx answer to CONNECT has no content (RFC 9110 §9.3.6): what follows is the tunnel.
                state = .established
                return .established(bound: nil, consumed: head.length)
            // tinyproxy answers wrong Proxy-Authorization with 401, not 407; before
            // the tunnel exists no origin can have sent it, so it means the same.
            case 401, 407: throw .authRejected
            case 403: throw .notAllowed
            default: throw .httpStatus(UInt16(status))
            }
        case .established:
            preconditionFailure("HTTPConnectHandshake.receive after establishment: the bytes belong to the stream")
        case let .failed(error):
            throw error
        }
    }

    /// `HTTP/1.x SSS reason` (RFC 9112 §4); the reason phrase may be empty.
    static func statusCode(_ line: Substring) throws(RelayError) -> Int {
        let u = Array(line.utf8)
        guard u.count >= 12, u[0 ..< 7].elementsEqual("HTTP/1.".utf8), (0x30 ... 0x39).contains(u[7]), u[8] == 0x20,
              u[9 ... 11].allSatisfy({ (0x30 ... 0x39).contains($0) }), u.count == 12 || u[12] == 0x20,
              u.allSatisfy(isFieldValueByte) else {
            throw .protocolViolation(.statusLine)
        }
        let code = Int(u[9] - 0x30) * 100 + Int(u[10] - 0x30) * 10 + Int(u[11] - 0x30)
        guard code >= 100 else { throw .protocolViolation(.statusLine) }
        return code
    }

    public var description: String { "HTTP CONNECT \(target) [\(state)]" }
}
