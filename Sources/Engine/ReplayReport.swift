internal import Capture
internal import HTTP
internal import Stack
internal import Wire

/// `sluice replay`'s three ways of saying what the profile would do: a table
/// for people, flow-log JSON lines (FlowRecord, HTTPRequestRecord) and HAR 1.2
/// with Sluice's `_rule`, `_policy`, `_rewrittenFrom` and `_mocked`.
struct ReplayReport {
    var flows: [(flow: ReplayFlow, verdict: ReplayVerdict)]

    var requestCount: Int { flows.reduce(0) { $0 + $1.verdict.requests.count } }

    // MARK: table

    static let header = ["TIME", "CLIENT → SERVER", "DOMAIN", "REQUEST", "RULE", "POLICY", "WHAT HAPPENS"]

    /// One row per HTTP request, or per flow when it carried none; columns aligned.
    func table() -> [String] {
        var rows: [[String]] = [Self.header]
        for (flow, verdict) in flows {
            let time = Self.clock(flow.started)
            let isEcho = flow.key.transport == .icmp || flow.key.transport == .icmpv6
            let path = isEcho
                ? "\(flow.key.appAddress) → \(flow.key.destinationAddress)"
                : "\(Self.endpoint(flow.key.appAddress, flow.key.appPort)) → \(Self.endpoint(flow.key.destinationAddress, flow.key.destinationPort))"
            let domain = verdict.domain.map { "\($0) (\(verdict.domainSource ?? "?"))" } ?? "-"
            if verdict.requests.isEmpty {
                let what = flow.isHTTP ? "HTTP, no complete request"
                    : isEcho ? "ping, id \(flow.key.appPort)" : (verdict.applicationProtocol ?? "TCP")
                rows.append([time, path, domain, what, verdict.rule, verdict.policy, Self.describe(verdict.action, status: nil)])
                continue
            }
            for request in verdict.requests {
                var line = "\(request.exchange.head.method.rawValue) \(request.url)"
                if let status = request.exchange.response?.status { line += " \(status)" }
                var what = Self.describe(request.action, status: request.localStatus)
                if let from = request.rewrittenFrom { what += " (rewritten from \(from))" }
                rows.append([Self.clock(request.exchange.started), path, domain, line, request.rule, request.policy, what])
            }
        }
        var widths = [Int](repeating: 0, count: Self.header.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count)
            }.joined(separator: "  ")
        }
    }

    static func describe(_ action: ReplayVerdict.Action, status: Int?) -> String {
        words(action, status: status).trimmingTrailingSpace
    }

    private static func words(_ action: ReplayVerdict.Action, status: Int?) -> String {
        switch action {
        case .forward: return "forward"
        case .redirect: return "redirect \(status.map(String.init) ?? "")"
        case .mock: return "mock \(status.map(String.init) ?? "")"
        case .reject: return "reject \(status.map(String.init) ?? "")"
        case .reset: return "reset"
        case .drop: return "drop"
        case .answered: return "answered by Sluice's DNS"
        case .none: return "-"
        }
    }

    /// `15:40:51.123` (UTC).
    static func clock(_ nanoseconds: UInt64) -> String {
        let text = CalendarTime.rfc3339(nanoseconds)
        let start = text.index(text.startIndex, offsetBy: 11)
        let end = text.index(start, offsetBy: 12)
        return String(text[start ..< end])
    }

    /// An address as a URL's host would spell it.
    static func hostText(_ address: IPAddress) -> String {
        if case .v6 = address { return "[\(address)]" }
        return "\(address)"
    }

    static func endpoint(_ address: IPAddress, _ port: UInt16) -> String {
        if case .v6 = address { return "[\(address)]:\(port)" }
        return "\(address):\(port)"
    }

    // MARK: flow log

    /// A connection line per flow, then a line per request, in time order.
    /// The flow log's transport for a flow's key.
    static func transport(_ key: FlowKey) -> FlowRecord.Transport {
        switch key.transport {
        case .udp: .udp
        case .icmp, .icmpv6: .icmp
        default: .tcp
        }
    }

    func flowLog() -> [String] {
        var lines: [String] = []
        for (flow, verdict) in flows {
            var record = FlowRecord(connectionID: flow.id, startTime: flow.started, transport: Self.transport(flow.key),
                                    source: flow.key.appAddress, sourcePort: flow.key.appPort,
                                    destination: flow.key.destinationAddress, destinationPort: flow.key.destinationPort)
            record.endTime = flow.ended
            record.domain = verdict.domain
            record.domainSource = verdict.domainSource.flatMap(FlowRecord.DomainSource.init(rawValue:))
            // As the live flow log writes them (Tunnel+FlowLog): a flow's rule and
            // policy chain apart, its upstream DIRECT, a proxy, or none for local answers;
            // in HTTP mode the latest request's rule and policy.
            if let route = verdict.route {
                record.rule = FlowDecision.split(verdict.rule).rule
                record.policy = verdict.policy
                record.upstream = route.upstreamDescription
            } else {
                record.rule = verdict.rule
                record.policy = verdict.policy
                record.upstream = verdict.requests.last.map { $0.action == .forward ? $0.policy : "local" }
            }
            record.bytesUp = flow.bytesUp
            record.bytesDown = flow.bytesDown
            switch verdict.action {
            case .reject, .reset, .drop: record.status = .blocked
            case .answered: continue
            case .forward, .redirect, .mock, .none:
                switch flow.endReason {
                case .closed?: record.status = .closed
                case .reset?: record.status = .reset
                case .idle?: record.status = .timedOut
                case .endOfCapture?, nil: record.status = .open
                }
            }
            record.error = flow.httpStopped.flatMap { $0 == "upgraded" ? nil : "replay: HTTP reading stopped: \($0)" }
            lines.append(record.json)
            for (index, request) in verdict.requests.enumerated() {
                lines.append(Self.record(request, connection: flow.id, index: index).json)
            }
        }
        return lines
    }

    static func record(_ request: ReplayVerdict.Request, connection: UInt64, index: Int) -> HTTPRequestRecord {
        let exchange = request.exchange
        var record = HTTPRequestRecord(connectionID: connection, requestIndex: index, startTime: exchange.started,
                                       method: exchange.head.method.rawValue, url: request.url)
        // A local answer is what the client would get; otherwise what the server said in the capture.
        record.status = request.localStatus ?? exchange.response?.status
        record.requestBodyBytes = exchange.requestBodyBytes
        // A local answer's body, as the live flow log counts it (capture.md).
        record.responseBodyBytes = request.localAnswer.map { parseAnswer($0)?.1.count ?? 0 } ?? exchange.responseBodyBytes
        if request.localAnswer == nil {
            record.timings = HTTPRequestRecord.Timings(
                send: span(exchange.started, exchange.requestEnded),
                wait: span(exchange.requestEnded, exchange.responseStarted),
                receive: span(exchange.responseStarted, exchange.responseEnded))
        }
        record.rule = request.rule
        record.policy = request.policy
        record.upstream = request.upstream
        return record
    }

    static func span(_ from: UInt64?, _ to: UInt64?) -> UInt64? {
        guard let from, let to, to >= from else { return nil }
        return to - from
    }

    // MARK: HAR

    func har() -> String {
        var log = HARLog(creatorVersion: "replay", comment: "what the profile would do to the capture's HTTP requests")
        for (flow, verdict) in flows {
            for request in verdict.requests {
                log.entries.append(Self.entry(request, flow: flow))
            }
        }
        return log.json(pretty: true)
    }

    static func entry(_ request: ReplayVerdict.Request, flow: ReplayFlow) -> HAREntry {
        let exchange = request.exchange
        let harRequest = HARRequest(exchange.head, url: request.url, bodySize: exchange.requestBodyBytes)
        let response: HARResponse
        var timings = HARTimings()
        if let answer = request.localAnswer, let (head, body) = parseAnswer(answer) {
            response = HARResponse(head, body: body, bodySize: body.count)
        } else if let head = exchange.response {
            response = HARResponse(head, bodySize: exchange.responseBodyBytes)
            func ms(_ n: UInt64?) -> Double { n.map { Double($0) / 1_000_000 } ?? 0 }
            timings.send = ms(span(exchange.started, exchange.requestEnded))
            timings.wait = ms(span(exchange.requestEnded, exchange.responseStarted))
            timings.receive = ms(span(exchange.responseStarted, exchange.responseEnded))
        } else {
            // HAR wants a response; status 0 is its convention for none.
            response = HARResponse(status: 0, statusText: "", httpVersion: "", content: HARContent(size: 0, mimeType: ""))
        }
        return HAREntry(
            startedDateTime: CalendarTime.rfc3339(exchange.started), request: harRequest, response: response, timings: timings,
            // A local answer met no server (the live HAR says null too).
            serverIPAddress: request.localAnswer == nil ? "\(flow.key.destinationAddress)" : nil, connection: String(flow.id),
            rule: request.rule, policy: request.policy, rewrittenFrom: request.rewrittenFrom, mocked: request.mocked)
    }

    /// A response Sluice writes itself, split into its head and body.
    static func parseAnswer(_ bytes: [UInt8]) -> (HTTPResponseHead, [UInt8])? {
        var parser = HTTPResponseParser()
        return bytes.withUnsafeBytes { buffer -> (HTTPResponseHead, [UInt8])? in
            guard case let .head(head, consumed)? = try? parser.parse(buffer) else { return nil }
            return (head, Array(buffer[consumed...]))
        }
    }
}

extension String {
    fileprivate var trimmingTrailingSpace: String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
