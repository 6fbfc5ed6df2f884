/// The first request on a connection to our HTTP proxy listener
/// (`sluice proxy`): CONNECT host:port for a tunnel, or an absolute-form
/// request (`GET http://host/path`) to forward in origin form. Checks Basic
/// credentials when configured.
///
///     awaitingHead ─CONNECT→ awaitingOutcome(connect) ─reply(for:)→ open / closed
///                  ├absolute-form→ awaitingOutcome(forward) ─reply(for:)→ open / closed
///                  └bad / unauthenticated→ closed (after `.refuse`)
///
/// Only the first request is read here: what follows a forwarded head (its
/// body, and further requests on a kept-alive connection) is the engine's HTTP
/// parser's business.
public struct HTTPProxyServerHandshake: Sendable, CustomStringConvertible {
    public enum Action: Hashable, Sendable, CustomStringConvertible {
        /// Open a tunnel to the target, then write `reply(for:)`. Bytes after
        /// `consumed` already belong to the tunnel.
        case connect(ProxyTarget, consumed: Int)
        /// Connect to the target and write `head` (origin-form, our proxy
        /// headers removed); the body starts after `consumed`.
        case forward(ProxyTarget, head: [UInt8], consumed: Int)
        /// Write these bytes, then close.
        case refuse([UInt8], reason: RelayError)

        public var description: String {
            switch self {
            case let .connect(target, consumed): return "CONNECT \(target) (consumed \(consumed))"
            case let .forward(target, head, consumed): return "forward to \(target), head \(head.count) bytes (consumed \(consumed))"
            case let .refuse(bytes, reason): return "refuse (\(reason)), send \(bytes.count) bytes and close"
            }
        }
    }

    public enum Outcome: Hashable, Sendable {
        case succeeded
        case failed(RelayError)
    }

    enum State: Hashable, Sendable {
        case awaitingHead
        case awaitingOutcome(tunnel: Bool)
        case open
        case closed
    }

    public let credentials: ProxyCredentials?
    private(set) var state: State = .awaitingHead

    public init(credentials: ProxyCredentials?) {
        self.credentials = credentials
    }

    public var isOpen: Bool { state == .open }

    public mutating func receive(_ bytes: UnsafeRawBufferPointer) -> Action? {
        switch state {
        case .awaitingHead:
            let action: Action?
            do {
                guard let head = try ProxyHead.parse(bytes) else { return nil }
                action = decide(head)
            } catch {
                action = Self.badRequest(error)
            }
            switch action {
            case .refuse?: state = .closed
            case .connect?: state = .awaitingOutcome(tunnel: true)
            case .forward?: state = .awaitingOutcome(tunnel: false)
            case nil: break
            }
            return action
        case .awaitingOutcome:
            return nil
        case .open:
            preconditionFailure("HTTPProxyServerHandshake.receive after the first request: the engine's HTTP parser reads on")
        case .closed:
            return nil
        }
    }

    /// What to write once the engine knows whether it reached the target: for
    /// CONNECT the 200, for a forward nothing (the origin's response follows);
    /// on failure a 502/504/403 (then close).
    public mutating func reply(for outcome: Outcome) -> [UInt8] {
        guard case let .awaitingOutcome(tunnel) = state else {
            preconditionFailure("HTTPProxyServerHandshake.reply(for:) without a request")
        }
        switch outcome {
        case .succeeded:
            state = .open
            return tunnel ? Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8) : []
        case let .failed(error):
            state = .closed
            return HTTPFailureResponse.bytes(for: error)
        }
    }

    private func decide(_ head: ProxyHead) -> Action {
        // request-line = method SP request-target SP HTTP-version (RFC 9112 §3)
        let parts = head.startLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].utf8.allSatisfy(isTokenByte),
              parts[1].utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7f }), !parts[1].isEmpty,
              parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0" else {
            return Self.badRequest(.protocolViolation(.requestLine))
        }
        let method = parts[0], target = parts[1], version = parts[2]

        if let credentials {
            guard let authorization = head.value("proxy-authorization"), credentials.acceptsBasic(authorization) else {
                return .refuse(HTTPFailureResponse.simple(
                    code: 407, reason: "Proxy Authentication Required",
                    extraHeaders: "Proxy-Authenticate: Basic realm=\"sluice\"\r\n",
                    body: "sluice: proxy authentication required\n"), reason: .authRejected)
            }
        }

        if method == "CONNECT" {
            guard let destination = ProxyTarget(authority: target) else {
                return Self.badRequest(.protocolViolation(.requestTarget))
            }
            return .connect(destination, consumed: head.length)
        }

        guard let (destination, authority, path) = Self.splitAbsolute(target) else {
            return Self.badRequest(.protocolViolation(.requestTarget))
        }
        // RFC 9112 §3.2.2: a proxy replaces Host with the absolute URI's authority.
        var out = "\(method) \(path) \(version)\r\nHost: \(authority)\r\n"
        for (name, value) in head.headers {
            let lower = name.lowercased()
            if lower == "host" || lower == "proxy-authorization" || lower == "proxy-connection" { continue }
            out += "\(name): \(value)\r\n"
        }
        out += "\r\n"
        return .forward(destination, head: Array(out.utf8), consumed: head.length)
    }

    /// `http://authority[/path][?query]` → target (port 80 by default), the
    /// authority as written, and the origin-form path. Nil for other schemes,
    /// userinfo, or an authority that is not a host[:port].
    static func splitAbsolute(_ target: Substring) -> (ProxyTarget, Substring, String)? {
        let scheme = "http://"
        guard target.count > scheme.count, target.prefix(scheme.count).lowercased() == scheme else { return nil }
        let rest = target.dropFirst(scheme.count)
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<end]
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var path = String(rest[end...])
        if let hash = path.firstIndex(of: "#") { path = String(path[..<hash]) } // fragments never go on the wire
        if path.isEmpty || path.first == "?" { path = "/" + path }
        let hasPort = authority.last != "]" && authority.contains(":")
        guard let destination = ProxyTarget(authority: hasPort ? String(authority) : authority + ":80") else { return nil }
        return (destination, authority, path)
    }

    static func badRequest(_ reason: RelayError) -> Action {
        if reason == .protocolViolation(.headTooLarge) || reason == .protocolViolation(.tooManyHeaders) {
            return .refuse(HTTPFailureResponse.simple(code: 431, reason: "Request Header Fields Too Large",
                                                      body: "sluice: \(reason)\n"), reason: reason)
        }
        return .refuse(HTTPFailureResponse.simple(code: 400, reason: "Bad Request", body: "sluice: \(reason)\n"), reason: reason)
    }

    public var description: String { "HTTP proxy server [\(state)]" }
}
