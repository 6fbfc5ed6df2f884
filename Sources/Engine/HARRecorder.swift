internal import Capture
internal import HTTP
internal import Stack
internal import Sys

/// `--har FILE`: the HTTP exchanges of HTTP-mode flows, each written as it
/// finishes into a HAR 1.2 document that is complete on disk at every step
/// (`HARFileWriter`, on a thread of its own). Bodies are kept up to
/// `bodyLimit` bytes each.
final class HARRecorder {
    let path: String
    let bodyLimit: Int
    let writer: HARFileWriter

    /// Creates the file (an empty archive) at once: a path that cannot be written stops Sluice before it starts.
    init(path: String, bodyLimit: Int) throws(CaptureError) {
        self.path = path
        self.bodyLimit = bodyLimit
        writer = try HARFileWriter(path: path, creatorVersion: "0.1")
    }

    func add(_ entry: HAREntry) {
        writer.write(entry)
    }

    /// An entry that `make` builds on the writer's thread: its bodies'
    /// decoding (gzip up to the body limit) and base64 cost the loop nothing.
    func add(estimatedBodyBytes: Int, make: @escaping @Sendable () -> HAREntry) {
        writer.write(estimatedBodyBytes: estimatedBodyBytes, make: make)
    }

    /// Writes what is queued and closes the file; returns a line for the exit summary.
    func finish() -> String {
        let dropped = writer.statistics.entriesDropped
        let statistics = writer.close(comment: dropped > 0 ? "\(dropped) exchanges left out: the disk fell behind" : nil)
        var line = "HAR: \(statistics.entriesWritten) entries written to \(path)"
        if statistics.entriesDropped > 0 { line += ", \(statistics.entriesDropped) left out (the disk fell behind, or a write failed)" }
        if let failure = statistics.failure { line += "; \(failure)" }
        return line
    }
}

extension Tunnel {
    /// One exchange of an HTTP-mode flow into the HAR file: what only the
    /// loop knows is read here, the entry built on the writer's thread.
    func addToHAR(_ exchange: HTTPExchange, session: HTTPSession) {
        guard let har, let head = exchange.requestHead else { return }
        let key = session.key
        let record = flowRecords[key]
        let limit = bodyLimitForHAR, startedAt = wallTime(exchange.started), now = self.now
        let server = serverAddress(of: exchange, key: key), connection = "\(record?.record.connectionID ?? 0)"
        let process = record?.owner?.label, http2 = session.isHTTP2
        har.add(estimatedBodyBytes: exchange.bodyBytesForHAR) {
            var entry = exchange.harEntry(head: head, bodyLimit: limit, startedAt: startedAt, now: now, serverIPAddress: server,
                                          connection: connection, comment: "\(key)", process: process)
            Self.markVersions(&entry, exchange: exchange, http2: http2)
            return entry
        }
    }

    /// The response as the app received it (frames on an h2 stream), the request as forwarded (h2 to an origin that chose it).
    static func markVersions(_ entry: inout HAREntry, exchange: HTTPExchange, http2: Bool) {
        if http2, entry.response.status != 0 { entry.response.httpVersion = "HTTP/2.0" }
        if exchange.forwardedOverHTTP2 { entry.request.httpVersion = "HTTP/2.0" }
    }

    /// One exchange of an HTTP-mode flow as a HAR entry, built here (a WebSocket's, which its messages decorate).
    func harEntry(_ exchange: HTTPExchange, session: HTTPSession) -> HAREntry? {
        let key = session.key
        let record = flowRecords[key]
        guard var entry = exchange.harEntry(bodyLimit: bodyLimitForHAR, startedAt: wallTime(exchange.started), now: now,
                                            serverIPAddress: serverAddress(of: exchange, key: key), connection: "\(record?.record.connectionID ?? 0)",
                                            comment: "\(key)", process: record?.owner?.label) else { return nil }
        Self.markVersions(&entry, exchange: exchange, http2: session.isHTTP2)
        return entry
    }

    var bodyLimitForHAR: Int { har?.bodyLimit ?? 0 }

    /// Where the response came from; without one, the app's destination,
    /// unless that is a fake IP (an address no server has).
    func serverAddress(of exchange: HTTPExchange, key: FlowKey) -> String? {
        if let address = exchange.serverAddress { return "\(address)" }
        return dns?.pool.contains(key.destinationAddress) == true ? nil : "\(key.destinationAddress)"
    }
}

extension HTTPExchange {
    /// Its phases as Sluice saw them, in nanoseconds (HAR's timings and the
    /// flow log's): `blocked` from its head to its first byte upstream (the
    /// upstream's connect, an earlier request's turn), `send` from its first
    /// byte upstream to its last (a body's upload), `wait` from then to the
    /// response's head, `receive` from the head to `now`. Without bytes
    /// upstream (a local answer) there is no blocked and no send; the wait
    /// counts from its head. Until 2026-12-05 send was always 0 and the
    /// upload counted as wait.
    func phases(now: Instant) -> (blocked: UInt64?, send: UInt64?, wait: UInt64?, receive: UInt64?) {
        func span(_ from: Instant, _ to: Instant) -> UInt64 { UInt64(max(to.nanoseconds - from.nanoseconds, 0)) }
        let blocked = firstSentAt.map { span(started, $0) }
        let send = firstSentAt.flatMap { first in lastSentAt.map { span(first, $0) } }
        // From the last byte sent, or from a response that came before it (an early 413).
        let wait = headAt.map { head in span(min(lastSentAt ?? started, head), head) }
        let receive = headAt.map { span($0, now) }
        return (blocked, send, wait, receive)
    }

    /// The exchange as a HAR entry: the request as forwarded (its URL before
    /// a rewrite in `_rewrittenFrom`), the response as the client received
    /// it. `startedAt` is the wall time (ns since the epoch) of `started`;
    /// `serverIPAddress` is left out for an answer of Sluice's own.
    func harEntry(bodyLimit: Int, startedAt: UInt64, now: Instant, serverIPAddress: String?,
                  connection: String, comment: String, process: String? = nil) -> HAREntry? {
        guard let head = requestHead else { return nil }
        return harEntry(head: head, bodyLimit: bodyLimit, startedAt: startedAt, now: now, serverIPAddress: serverIPAddress,
                        connection: connection, comment: comment, process: process)
    }

    /// The body bytes its HAR entry will hold, at most (what waits for the writer is bounded by these).
    var bodyBytesForHAR: Int { requestBody.count + responseBody.count + (localAnswer?.count ?? 0) }

    /// `harEntry` for a request whose head is `head`. Pure: it runs on the HAR writer's thread.
    func harEntry(head: HTTPRequestHead, bodyLimit: Int, startedAt: UInt64, now: Instant, serverIPAddress: String?,
                  connection: String, comment: String, process: String?) -> HAREntry {
        // (Decoded only when whole: its data not cut at the limit.)
        let requestWhole = requestBody.count == (requestContent?.count ?? requestBodyBytes)
        let requestData = requestWhole ? Self.decoded(requestBody, head.headers, limit: bodyLimit) : nil
        let request = HARRequest(head, url: url, body: requestData ?? requestBody, bodySize: requestBodyBytes)
        var response: HARResponse
        var finalHead = responseHead
        var finalBody = responseBody
        if finalHead == nil, let answer = localAnswer {
            // Sluice's own answer: parsed back, so the entry shows what the client got.
            var parser = HTTPResponseParser()
            parser.expectResponse(to: head.method)
            var rest = answer[...]
            while !rest.isEmpty, let step = rest.withUnsafeBytes({ try? parser.parse($0) }) {
                switch step {
                case let .head(parsed, consumed):
                    finalHead = parsed
                    rest = rest.dropFirst(consumed)
                case let .body(consumed), let .end(consumed):
                    finalBody += rest.prefix(min(consumed, max(bodyLimit - finalBody.count, 0)))
                    rest = rest.dropFirst(consumed)
                case .upgraded:
                    rest = []
                }
            }
        }
        if let finalHead {
            // The whole body's size (what is kept may stop at the limit); a chunked one's data alone.
            let size = localAnswer.map(LocalAnswers.bodyLength(of:)) ?? responseBodyBytes
            let contentSize = responseContent?.count ?? size
            if finalBody.count == contentSize, let decoded = Self.decoded(finalBody, finalHead.headers, limit: bodyLimit) {
                response = HARResponse(finalHead, body: decoded, bodySize: size, contentSize: decoded.count)
                response.content.compression = decoded.count - contentSize
            } else {
                response = HARResponse(finalHead, body: finalBody, bodySize: size, contentSize: contentSize)
            }
        } else {
            response = HARResponse(status: 0, statusText: failure ?? "no response", content: HARContent(size: 0, mimeType: ""),
                                   redirectURL: "", headersSize: -1, bodySize: -1)
        }
        let phases = phases(now: now)
        func milliseconds(_ nanoseconds: UInt64?) -> Double { nanoseconds.map { Double($0) / 1e6 } ?? 0 }
        var entry = HAREntry(startedDateTime: CalendarTime.rfc3339(startedAt), request: request, response: response,
                             timings: HARTimings(blocked: phases.blocked.map { Double($0) / 1e6 } ?? -1, send: milliseconds(phases.send),
                                                 wait: milliseconds(phases.wait), receive: milliseconds(phases.receive)),
                             serverIPAddress: localAnswer == nil ? serverIPAddress : nil,
                             connection: connection,
                             comment: comment,
                             rule: rule, policy: policy, rewrittenFrom: rewrittenFrom,
                             mocked: mocked || localAnswer != nil, process: process)
        entry.retries = resends > 0 ? resends : nil
        entry.bodyRewrites = bodyRewrites.isEmpty ? nil : bodyRewrites
        return entry
    }

    /// A whole body in gzip, deflate, br or zstd (`headers`' Content-Encoding) as HAR
    /// keeps it, decoded (HAR 1.2: `content.text` is the decoded body); nil
    /// for a plain body, a coding Sluice cannot undo, data that does not
    /// decode, or one that decodes to more than `limit` bytes (it stays as it came).
    static func decoded(_ body: [UInt8], _ headers: HTTPHeaders, limit: Int) -> [UInt8]? {
        guard !body.isEmpty, let codings = ContentDecoding.codings(of: headers), !codings.isEmpty,
              let data = try? ContentDecoding.decode(body, codings: codings, limit: limit) else { return nil }
        return data
    }
}
