internal import Capture
internal import HTTP
internal import Sys

/// `--har FILE`: the HTTP exchanges of HTTP-mode flows, kept in memory and
/// written as one HAR 1.2 document when Sluice stops (HAR is a single JSON
/// object, so it cannot be appended to line by line; the flow log can).
/// Bodies are kept up to `bodyLimit` bytes each; entries past `maximumEntries`
/// are counted, not kept.
final class HARRecorder {
    let path: String
    let bodyLimit: Int
    static let maximumEntries = 100_000
    var log = HARLog(creatorVersion: "0.1")
    var dropped = 0

    init(path: String, bodyLimit: Int) {
        self.path = path
        self.bodyLimit = bodyLimit
    }

    func add(_ entry: HAREntry) {
        guard log.entries.count < Self.maximumEntries else {
            dropped += 1
            return
        }
        log.entries.append(entry)
    }

    /// Writes the document; returns a line for the exit summary.
    func finish() -> String {
        do {
            try Files.write(log.json(pretty: true) + "\n", to: path)
        } catch {
            return "HAR: cannot write \(path): \(error)"
        }
        return "HAR: \(log.entries.count) entries written to \(path)" + (dropped > 0 ? ", \(dropped) left out (limit \(Self.maximumEntries))" : "")
    }
}

extension Tunnel {
    /// One exchange as a HAR entry: the request as forwarded (its URL before a
    /// rewrite in `_rewrittenFrom`), the response as the app received it.
    func harEntry(_ exchange: HTTPExchange, session: HTTPSession) -> HAREntry? {
        guard let head = exchange.requestHead else { return nil }
        let request = HARRequest(head, url: exchange.url, body: exchange.requestBody, bodySize: exchange.requestBodyBytes)
        var response: HARResponse
        var responseHead = exchange.responseHead
        var responseBody = exchange.responseBody
        if responseHead == nil, let answer = exchange.localAnswer {
            // Sluice's own answer: parsed back, so the entry shows what the app got.
            var parser = HTTPResponseParser()
            parser.expectResponse(to: head.method)
            var rest = answer[...]
            while !rest.isEmpty, let step = rest.withUnsafeBytes({ try? parser.parse($0) }) {
                switch step {
                case let .head(parsed, consumed):
                    responseHead = parsed
                    rest = rest.dropFirst(consumed)
                case let .body(consumed), let .end(consumed):
                    responseBody += rest.prefix(min(consumed, max(bodyLimitForHAR - responseBody.count, 0)))
                    rest = rest.dropFirst(consumed)
                case .upgraded:
                    rest = []
                }
            }
        }
        if let responseHead {
            response = HARResponse(responseHead, body: responseBody, bodySize: exchange.localAnswer != nil ? responseBody.count : exchange.responseBodyBytes)
        } else {
            response = HARResponse(status: 0, statusText: exchange.failure ?? "no response", content: HARContent(size: 0, mimeType: ""),
                                   redirectURL: "", headersSize: -1, bodySize: -1)
        }
        let waited = exchange.headAt.map { Double($0.nanoseconds - exchange.started.nanoseconds) / 1e6 } ?? 0
        let received = exchange.headAt.map { Double(now.nanoseconds - $0.nanoseconds) / 1e6 } ?? 0
        let key = session.key
        let connection = flowRecords[key]?.record.connectionID ?? 0
        return HAREntry(startedDateTime: CalendarTime.rfc3339(wallTime(exchange.started)), request: request, response: response,
                        timings: HARTimings(send: 0, wait: max(waited, 0), receive: max(received, 0)),
                        serverIPAddress: exchange.localAnswer == nil ? "\(key.destinationAddress)" : nil,
                        connection: "\(connection)",
                        comment: "\(key)",
                        rule: exchange.rule, policy: exchange.policy, rewrittenFrom: exchange.rewrittenFrom,
                        mocked: exchange.mocked || exchange.localAnswer != nil)
    }

    var bodyLimitForHAR: Int { har?.bodyLimit ?? 0 }
}
