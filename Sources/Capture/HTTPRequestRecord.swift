// HTTPRequestRecord exists because one connection can carry many HTTP
// requests, each with its own rule decision, status and timing: the flow log
// gives each its own line, tied to its connection by `connectionID`.
internal import HTTP

public struct HTTPRequestRecord: Sendable, Equatable {
    /// The phases of one exchange, as HAR's `timings` names them, in nanoseconds.
    public struct Timings: Sendable, Equatable {
        /// From the first byte of the request to its last.
        public var send: UInt64?
        /// From the request's last byte to the response's first.
        public var wait: UInt64?
        /// From the response's first byte to its last.
        public var receive: UInt64?
        public init(send: UInt64? = nil, wait: UInt64? = nil, receive: UInt64? = nil) {
            self.send = send
            self.wait = wait
            self.receive = receive
        }
    }

    public var connectionID: UInt64
    /// 0 for the first request on the connection, then 1, 2...
    public var requestIndex: Int
    /// Nanoseconds since the Unix epoch: the request's first byte.
    public var startTime: UInt64
    public var method: String
    /// The absolute URL (`http://host/path?query`).
    public var url: String
    /// The response status, nil when no response came.
    public var status: Int?
    public var requestBodyBytes: Int = 0
    public var responseBodyBytes: Int = 0
    public var timings = Timings()
    public var rule: String?
    public var policy: String?
    public var upstream: String?
    /// How many times it went again on a new connection (the origin closed with it unanswered).
    public var retries = 0
    /// The [Body Rewrite] lines that changed its bodies (request's, then response's).
    public var bodyRewrites: [Int] = []
    public var error: String?

    public init(connectionID: UInt64, requestIndex: Int, startTime: UInt64, method: String, url: String) {
        self.connectionID = connectionID
        self.requestIndex = requestIndex
        self.startTime = startTime
        self.method = method
        self.url = url
    }

    /// The sum of the known phases.
    public var totalTime: UInt64? {
        let phases = [timings.send, timings.wait, timings.receive].compactMap { $0 }
        return phases.isEmpty ? nil : phases.reduce(0, +)
    }

    /// One JSON object, no newline; every key always present.
    public var json: String {
        func milliseconds(_ nanoseconds: UInt64?) -> Double? {
            nanoseconds.map { Double($0) / 1_000_000 }
        }
        var json = JSONWriter()
        json.beginObject()
        json.field("kind", "http")
        json.key("connection"); json.int(Int(truncatingIfNeeded: connectionID))
        json.field("request", requestIndex)
        json.field("start", CalendarTime.rfc3339(startTime))
        json.field("method", method)
        json.field("url", url)
        json.field("status", status)
        json.field("requestBodyBytes", requestBodyBytes)
        json.field("responseBodyBytes", responseBodyBytes)
        json.key("timings")
        json.beginObject()
        json.field("sendMs", milliseconds(timings.send))
        json.field("waitMs", milliseconds(timings.wait))
        json.field("receiveMs", milliseconds(timings.receive))
        json.field("totalMs", milliseconds(totalTime))
        json.endObject()
        json.field("rule", rule)
        json.field("policy", policy)
        json.field("upstream", upstream)
        json.field("retries", retries)
        json.key("bodyRewrites")
        json.beginArray()
        for line in bodyRewrites { json.int(line) }
        json.endArray()
        json.field("error", error)
        json.endObject()
        return json.text
    }
}

extension HTTPRequestRecord: CustomStringConvertible {
    /// `#12.0 GET http://example.com/ 200 rule=r1 policy=DIRECT`
    public var description: String {
        var text = "#\(connectionID).\(requestIndex) \(method) \(url) \(status.map(String.init) ?? "-")"
        if let rule { text += " rule=\(rule)" }
        if let policy { text += " policy=\(policy)" }
        if retries > 0 { text += " retries=\(retries)" }
        if !bodyRewrites.isEmpty { text += " body-rewrites=" + bodyRewrites.map(String.init).joined(separator: ",") }
        if let error { text += ": \(error)" }
        return text
    }
}
