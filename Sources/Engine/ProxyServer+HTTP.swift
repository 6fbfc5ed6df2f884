internal import HTTP
internal import Relay
internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// The HTTP listener's absolute-form requests (`GET http://host/path`), planned
/// as a tunnel's HTTP request is (`FlowDirector.plan`: URL Rewrite, Map Local,
/// the rule, Header Rewrite), so a client pointed at `sluice proxy` sees the
/// profile's HTTP rules as an app in the tunnel does. The response head gets
/// the http-response rewrites; [Statistics] record the request when the
/// connection ends. Still one request per connection (docs/proxy-server.md).
extension ProxyServer {
    func forward(_ connection: InboundConnection, target: ProxyTarget, head bytes: [UInt8]) {
        connection.target = target
        // Relay's machine made this head (origin form, Host from the URI); read it back as HTTP's head.
        var parser = HTTPRequestParser()
        let parsed = bytes.withUnsafeBytes { buffer in Result { () throws(HTTPParseError) in try parser.parse(buffer) } }
        guard case let .success(.head(head, _)?) = parsed else {
            let error: HTTPParseError = if case let .failure(failure) = parsed { failure } else { .invalidTarget }
            refuse(connection, bytes: HTTPResponse.simple(status: 400, reason: "Bad Request", text: "sluice: bad request: \(error)\n"),
                   reason: .protocolViolation(.requestLine))
            return
        }
        let planned = director.plan(head, facts: flowFacts(for: connection, target: target), now: now)
        connection.route = planned.exchange.rule.isEmpty ? planned.exchange.policy : planned.exchange.rule
        trace("\(connection.description): \(head.method.rawValue) \(planned.exchange.url) → \(planned.route) (\(connection.route))")
        switch planned.route {
        case let .answer(bytes):
            // A redirect or mock of URL Rewrite, a Map Local file, or a rule's REJECT page.
            if planned.exchange.mocked { statistics.answeredHere += 1 } else { statistics.refusedByRules += 1 }
            log("sluice: proxy: \(connection.peer) → \(planned.exchange.url): answered here: \(connection.route)")
            var exchange = planned.exchange
            exchange.localAnswer = bytes
            director.record(exchange, now: now)
            close(connection, answer: bytes)
            return
        case .refuse:
            statistics.refusedByRules += 1
            fail(connection, .notAllowed, reason: "refused: \(connection.route)", counted: false)
            return
        case .direct, .proxy:
            break
        }
        connection.exchange = planned.exchange
        connection.forwardHead = InboundConnection.closingHead(planned.head)
        var responses = HTTPResponseParser(limits: HTTPParserLimits(maxHeadBytes: responseHeadLimit))
        responses.expectResponse(to: head.method)
        connection.responses = responses
        let upstream = planned.target
        switch planned.route {
        case let .proxy(proxy) where proxy.kind == .http:
            // A forward proxy takes the absolute-form head itself (with our credentials): no CONNECT.
            connect(connection, host: proxy.host, port: proxy.port)
        case let .proxy(proxy):
            guard let host = ProxyTarget.Host(name: upstream.host) else {
                fail(connection, .generalFailure, reason: "cannot name \(upstream.host) to proxy \(proxy.name)")
                return
            }
            do { connection.proxyHandshake = try ProxyHandshake(proxy: proxy, target: ProxyTarget(host: host, port: upstream.port)) } catch {
                fail(connection, .generalFailure, reason: error.message)
                return
            }
            connect(connection, host: proxy.host, port: proxy.port)
        case .direct, .answer, .refuse:
            connect(connection, host: upstream.host, port: upstream.port)
        }
    }

    /// The longest response head taken: a quarter of the relay buffer (16 KiB;
    /// nginx's own default buffer for one is 4–8 KiB), so rewrites have room.
    var responseHeadLimit: Int { configuration.bufferSize / 4 }

    /// Reads response heads out of what the upstream sent. Interim (1xx)
    /// heads go on as they came; the final one waits until it is whole, takes
    /// the profile's http-response rewrites, and then the parser stops: the
    /// body and the close pass through.
    func scanResponse(_ connection: InboundConnection) {
        guard connections[connection.id] === connection, var parser = connection.responses else { return }
        for _ in 0 ..< 16 {
            let readable = connection.toClient.readable
            guard connection.parsedDown < readable.count else { break }
            let step: HTTPResponseStep?
            do { step = try parser.parse(UnsafeRawBufferPointer(rebasing: readable[connection.parsedDown...])) } catch {
                responseFailed(connection, reason: "bad response: \(error)")
                return
            }
            guard case let .head(head, consumed)? = step else {
                // nil: the parser holds a partial head and wants more. Body
                // steps cannot come before a final head.
                connection.parsedDown = readable.count
                break
            }
            let end = connection.parsedDown + consumed
            connection.parsedDown = end
            if head.isInformational, head.status != 101 {
                connection.heldFrom = end
                continue
            }
            connection.exchange?.status = head.status
            connection.exchange?.headAt = now
            let rewritten = director.rewriteResponse(head, for: connection.exchange)
            connection.exchange?.responseHead = rewritten ?? head
            if let rewritten, !connection.toClient.replace(connection.heldFrom ..< end, with: rewritten.serialized()) {
                responseFailed(connection, reason: "the rewritten response head does not fit the buffer")
                return
            }
            connection.responses = nil
            connection.heldFrom = 0
            connection.parsedDown = 0
            return
        }
        connection.responses = parser
    }

    /// No usable response came (the upstream closed first, or sent something
    /// that is not HTTP): a 502 if the client has seen nothing yet, else a reset.
    func responseFailed(_ connection: InboundConnection, reason: String) {
        connection.exchange?.failure = reason
        connection.exchange?.failureKind = .protocolError
        let started = connection.bytesDown > 0 || connection.heldFrom > 0
        connection.responses = nil
        connection.heldFrom = 0
        connection.parsedDown = 0
        log("sluice: proxy: \(connection.peer) → \(connection.exchange?.url ?? "?"): \(reason)")
        if started {
            abort(connection, reason: reason)
            return
        }
        statistics.errors += 1
        dropUpstream(connection)
        connection.toClient.removeAll()
        close(connection, answer: HTTPResponse.simple(status: 502, reason: "Bad Gateway", text: "sluice: \(reason)\n"))
    }

    /// The request's record for the [Statistics] books, once its connection ends.
    func recordExchange(_ connection: InboundConnection) {
        guard var exchange = connection.exchange else { return }
        connection.exchange = nil
        exchange.requestBytes = connection.bytesUp
        exchange.responseBytes = connection.bytesDown
        if exchange.status == nil, exchange.failure == nil {
            exchange.failure = "the connection ended before a response"
            exchange.failureKind = .other
        }
        director.record(exchange, now: now)
    }

    static func errorKind(for error: RelayError) -> ConnectionErrorKind {
        switch error {
        case .connectionRefused: return .refused
        case .hostUnreachable, .networkUnreachable, .ttlExpired: return .unreachable
        case .timedOut: return .timedOut
        case .unexpectedClose: return .reset
        case .httpStatus, .protocolViolation: return .protocolError
        case .generalFailure, .notAllowed, .commandNotSupported, .addressTypeNotSupported, .authRejected,
             .noAcceptableMethod, .unrepresentable:
            return .other
        }
    }
}
