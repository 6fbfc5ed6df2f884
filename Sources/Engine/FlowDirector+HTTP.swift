internal import HTTP
internal import Relay
internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// HTTP mode's decisions, in the order of ../shared/spec/profile-dialect.md:
/// URL Rewrite, Map Local, Rule, Header Rewrite; responses get the
/// http-response rewrites, and Statistics record what happened.
extension FlowDirector {
    /// `scheme`: https for a request read inside intercepted TLS. An answer
    /// Sluice gives itself is framed for the request it answers (`LocalAnswers.framed`).
    func plan(_ original: HTTPRequestHead, facts: FlowFacts, now: Instant, scheme: String = "http") -> PlannedRequest {
        var planned = decide(original, facts: facts, now: now, scheme: scheme)
        if case let .answer(bytes) = planned.route { planned.route = .answer(LocalAnswers.framed(bytes, answering: original.method)) }
        return planned
    }

    private func decide(_ original: HTTPRequestHead, facts: FlowFacts, now: Instant, scheme: String) -> PlannedRequest {
        var head = original
        var url = original.absoluteURL(defaultScheme: scheme) ?? "\(scheme)://\(facts.domain ?? "unknown")\(original.target)"
        // One spelling per URL for the patterns (and the records): see RequestURL.normalized.
        // Parsed once: step 3 takes these parts unless a rewrite changed the URL.
        var parsed = RequestURL(url)
        if let parts = parsed { (url, parsed) = parts.normalizedAndParts(of: url) }
        var exchange = HTTPExchange(method: head.method.rawValue, url: url, rule: "", policy: "", rewrittenFrom: nil, mocked: false, started: now)
        exchange.requestHead = original
        // HAR shows a chunked body's data (Tunnel.keepForHAR).
        if original.isChunked { exchange.requestContent = HTTPChunkedContent() }
        func answered(_ bytes: [UInt8], rule: String, policy: String) -> PlannedRequest {
            exchange.rule = rule
            exchange.policy = policy
            return PlannedRequest(head: [], target: UpstreamTarget(route: .local, host: "", port: 0), route: .answer(bytes), exchange: exchange)
        }
        let file = profile?.file ?? "default"

        // 1. URL Rewrite: redirects and rejections answer at once; header mode changes the request.
        if let urlRewriter {
            switch urlRewriter.rewrite(url: url) {
            case .none:
                break
            case let .header(newURL, line):
                exchange.rewrittenFrom = url
                url = newURL
                exchange.url = newURL
                parsed = RequestURL(newURL)
                if let parts = parsed {
                    head.target = parts.target
                    head.headers.replaceOrAdd(name: "Host", value: parts.hostHeader)
                }
                exchange.rule = "\(file):\(line): URL Rewrite"
            case let .redirect(status, location, line):
                exchange.mocked = true
                return answered(LocalAnswers.redirect(status: status, location: location), rule: "\(file):\(line): URL Rewrite", policy: "\(status)")
            case let .reject(kind, line):
                exchange.mocked = true
                return answered(LocalAnswers.rejection(kind), rule: "\(file):\(line): URL Rewrite", policy: "reject")
            }
        }

        // 2. Map Local.
        if let mapLocal, let answer = mapLocal.resolve(url: url) {
            exchange.mocked = true
            return answered(LocalAnswers.mapLocal(answer), rule: "\(file):\(answer.line): Map Local", policy: "local")
        }

        // 3. Rule, on the request as rewritten.
        var requestFacts = facts
        let parts = parsed
        let host = parts?.host ?? HostPort.hostPart(of: head.host ?? "")
        let tls = parts?.scheme == "https"
        let port = parts?.port ?? (tls ? 443 : 80)
        requestFacts.applicationProtocol = .http
        let hostIsAddress = IPAddress(host) != nil
        requestFacts.request = SniffedRequest(method: head.method.rawValue, url: url,
                                              headers: head.headers,
                                              host: parts.map { ($0.host, hostIsAddress) })
        exchange.host = parts?.host
        if exchange.rewrittenFrom != nil || facts.domainSource != .dns {
            // An address literal names no domain.
            requestFacts.domain = hostIsAddress ? nil : host
            requestFacts.domainSource = requestFacts.domain == nil ? nil : .host
        }
        var route = FlowRoute.direct
        if let profile {
            switch verdict(requestFacts, final: true) {
            case let .route(decided, rule, policy):
                route = decided
                if let policy { exchange.policy = policy }
                let reason = FlowDecision.reason(rule: rule, policy: policy)
                if exchange.rule.isEmpty { exchange.rule = reason } else { exchange.rule += "; " + reason }
            case .sniff:
                break
            }
            _ = profile
        }
        if exchange.policy.isEmpty { exchange.policy = route.identity.description }
        switch route {
        case .answer, .refuse:
            return PlannedRequest(head: [], target: UpstreamTarget(route: .local, host: "", port: 0), route: route, exchange: exchange)
        case .direct, .proxy:
            break
        }

        // 4. Header Rewrite, http-request.
        if let headerRewriter {
            head.headers = Self.rewritten(head.headers, headerRewriter, .request, url: url)
        }
        // [Body Rewrite]: the lines for this request's body and its response's.
        if let bodyRewriter {
            exchange.requestBodyRewrite = bodyRewriter.select(.request, url: url)
            exchange.responseBodyRewrite = bodyRewriter.select(.response, url: url)
            if exchange.responseBodyRewrite != nil {
                // Sluice rewrites text, not gzip: the origin is asked for the body as it is (RFC 9110 §12.5.3).
                head.headers.remove(name: "Accept-Encoding")
                head.headers.add(name: "Accept-Encoding", value: "identity")
            }
        }
        var target = UpstreamTarget(route: route.identity, host: host, port: port, tls: tls)
        if case let .proxy(proxy) = route, proxy.kind == .http, !tls {
            // A forward proxy gets the absolute form and our credentials; one
            // upstream connection serves every origin behind it.
            target.host = ""
            target.port = 0
            exchange.forwardProxy = proxy.name
            let credentials = proxy.username.map { ProxyCredentials(username: $0, password: proxy.password ?? "") }
            let version = "HTTP/\(head.version.major).\(head.version.minor)"
            do {
                let bytes = try HTTPForwardRequest.absoluteFormHead(
                    method: head.method.rawValue, target: head.target, version: version, host: head.host ?? parts?.hostHeader ?? host,
                    headers: head.headers.map { ($0.name, $0.value) }, credentials: credentials)
                return PlannedRequest(head: bytes, target: target, route: route, exchange: exchange)
            } catch {
                return PlannedRequest(head: [], target: UpstreamTarget(route: .local, host: "", port: 0),
                                      route: .answer(LocalAnswers.rejected(status: 400, body: "sluice: cannot forward this request: \(error)\n")),
                                      exchange: exchange)
            }
        }
        exchange.requestHead = head
        return PlannedRequest(head: head.serialized(), target: target, route: route, exchange: exchange)
    }

    /// http-response rewrites for the request to `url` (sent to
    /// `forwardProxy`, if any); nil when no line applies, so the head can go
    /// on as it came. Given the two fields rather than the request's
    /// `HTTPExchange`: a caller holding that in a list would copy all of it
    /// (some thirty fields) per response.
    func rewriteResponse(_ head: HTTPResponseHead, url: String, forwardProxy: String?) -> HTTPResponseHead? {
        var head = head
        var changed = false
        if head.status == 407, let proxy = forwardProxy {
            // RFC 9110 §11.7.1: a 407 asks for the proxy's credentials of the
            // client next to it, which is Sluice, not the app (whose browser
            // would ask its user for a password for a proxy it never set). The
            // app gets a 502 that names the proxy, as for a CONNECT refused so.
            head.status = 502
            head.reason = "Bad Gateway"
            head.headers.remove(name: "Proxy-Authenticate")
            head.headers.add(name: "X-Sluice-Error", value: "the proxy \(proxy) refused Sluice's credentials (407)")
            changed = true
        }
        guard let headerRewriter else { return changed ? head : nil }
        let matched = headerRewriter.matching(.response, url: url)
        guard !matched.isEmpty else { return changed ? head : nil }
        head.headers = Self.rewritten(head.headers, headerRewriter, matched)
        return head
    }

    /// [Header Rewrite] on a head's own list, in place.
    static func rewritten(_ headers: HTTPHeaders, _ rewriter: HeaderRewriter, _ direction: HeaderRewriteDirection, url: String) -> HTTPHeaders {
        let matched = rewriter.matching(direction, url: url)
        guard !matched.isEmpty else { return headers }
        return rewritten(headers, rewriter, matched)
    }

    /// `headers` with the lines `matched` applied.
    static func rewritten(_ headers: HTTPHeaders, _ rewriter: HeaderRewriter, _ matched: [Int]) -> HTTPHeaders {
        var headers = headers
        rewriter.apply(matched, to: &headers)
        return headers
    }

    /// Statistics learn how a request ended.
    func record(_ exchange: HTTPExchange, now: Instant) {
        guard let profile, !books.isEmpty else { return }
        let host = exchange.host ?? RequestURL(exchange.url)?.host ?? ""
        let latency = UInt64(max((exchange.headAt ?? now).nanoseconds - exchange.started.nanoseconds, 0))
        for (index, definition) in profile.statistics.enumerated() where index < books.count {
            guard let key = StatisticsBook.key(for: definition, url: exchange.url, host: host) else { continue }
            if let status = exchange.status {
                books[index].recordResponse(key: key, status: status, bytesUp: UInt64(exchange.requestBytes),
                                            bytesDown: UInt64(exchange.responseBytes), latencyNanoseconds: latency)
            } else if let answer = exchange.localAnswer, let status = LocalAnswers.status(of: answer) {
                books[index].recordResponse(key: key, status: status, bytesUp: UInt64(exchange.requestBytes),
                                            bytesDown: UInt64(answer.count), latencyNanoseconds: latency)
            } else {
                books[index].recordError(key: key, kind: exchange.failureKind ?? .other, bytesUp: UInt64(exchange.requestBytes),
                                         latencyNanoseconds: latency)
            }
        }
    }

    /// The exit summary's statistics tables.
    var statisticsSummary: String? {
        guard !books.isEmpty else { return nil }
        return books.map { $0.render() }.joined(separator: "\n")
    }
}
