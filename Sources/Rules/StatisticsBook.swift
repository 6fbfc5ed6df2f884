public import HTTP

/// Why a request got no response at all. Each counts as a failure whatever the
/// failure-status range says.
public enum ConnectionErrorKind: String, Sendable, CaseIterable, Hashable, CustomStringConvertible {
    case refused
    case reset
    case timedOut = "timeout"
    case unreachable
    case dnsFailure = "dns"
    /// The upstream closed or sent something that is not HTTP.
    case protocolError = "protocol"
    case other

    public var description: String { rawValue }
}

/// What one key (a host, or a capture of the statistics regex) has seen.
public struct StatisticsEntry: Sendable, Equatable {
    public let key: String
    public internal(set) var requests: UInt64 = 0
    /// Responses by status class: index 0 is 1xx ... 4 is 5xx.
    public internal(set) var statusClasses: [UInt64] = [0, 0, 0, 0, 0]
    /// Responses inside the failure-status range, plus every connection error.
    public internal(set) var failures: UInt64 = 0
    /// Connection errors by kind, in `ConnectionErrorKind.allCases` order.
    public internal(set) var errors: [UInt64] = Array(repeating: 0, count: ConnectionErrorKind.allCases.count)
    public internal(set) var bytesUp: UInt64 = 0
    public internal(set) var bytesDown: UInt64 = 0
    public internal(set) var latency = LatencyHistogram()

    init(key: String) { self.key = key }

    public func count(_ kind: ConnectionErrorKind) -> UInt64 {
        errors[ConnectionErrorKind.allCases.firstIndex(of: kind)!]
    }

    /// Responses with status `klass`xx (1...5).
    public func count(statusClass klass: Int) -> UInt64 {
        (1 ... 5).contains(klass) ? statusClasses[klass - 1] : 0
    }
}

/// Per-key counters for one [Statistics] line: requests, status classes,
/// failures, connection errors, bytes and latency percentiles. The number of
/// keys is bounded (a capture can take unbounded values): past the bound,
/// new keys share the entry "(other)".
public struct StatisticsBook: Sendable {
    public static let overflowKey = "(other)"

    public let name: String
    public let failureStatus: ClosedRange<Int>
    public let maximumKeys: Int
    private var slots: [String: Int] = [:]
    public private(set) var entries: [StatisticsEntry] = []

    public init(name: String, failureStatus: ClosedRange<Int> = 500 ... 599, maximumKeys: Int = 1024) {
        self.name = name
        self.failureStatus = failureStatus
        self.maximumKeys = max(1, maximumKeys)
    }

    public init(_ definition: StatisticsDefinition, maximumKeys: Int = 1024) {
        self.init(name: definition.name, failureStatus: definition.failureStatus, maximumKeys: maximumKeys)
    }

    /// A response arrived: `status` and the bytes each way, `latency` from the
    /// request's first byte to the response head.
    public mutating func recordResponse(key: String, status: Int, bytesUp: UInt64 = 0, bytesDown: UInt64 = 0,
                                        latencyNanoseconds: UInt64) {
        let i = slot(for: key)
        entries[i].requests += 1
        let klass = status / 100
        if (1 ... 5).contains(klass) { entries[i].statusClasses[klass - 1] += 1 }
        if failureStatus.contains(status) { entries[i].failures += 1 }
        entries[i].bytesUp += bytesUp
        entries[i].bytesDown += bytesDown
        entries[i].latency.record(nanoseconds: latencyNanoseconds)
    }

    /// The request never got a response. A latency, when given, is the time
    /// until the error (a refusal is quick, a timeout is not): it is recorded,
    /// since a user asking "how slow is this API" wants the timeouts counted.
    public mutating func recordError(key: String, kind: ConnectionErrorKind, bytesUp: UInt64 = 0,
                                     latencyNanoseconds: UInt64? = nil) {
        let i = slot(for: key)
        entries[i].requests += 1
        entries[i].failures += 1
        entries[i].errors[ConnectionErrorKind.allCases.firstIndex(of: kind)!] += 1
        entries[i].bytesUp += bytesUp
        if let latencyNanoseconds { entries[i].latency.record(nanoseconds: latencyNanoseconds) }
    }

    public func entry(for key: String) -> StatisticsEntry? { slots[key].map { entries[$0] } }

    private mutating func slot(for key: String) -> Int {
        if let i = slots[key] { return i }
        let name = entries.count < maximumKeys - 1 ? key : Self.overflowKey
        if let i = slots[name] { return i }
        slots[name] = entries.count
        entries.append(StatisticsEntry(key: name))
        return entries.count - 1
    }

    /// The key a request counts under, or nil when the definition's regex does
    /// not match its URL (the request is then not this book's business).
    public static func key(for definition: StatisticsDefinition, url: String, host: String) -> String? {
        switch definition.key {
        case .host:
            return definition.regex.matches(url) ? host : nil
        case let .capture(n):
            guard let match = definition.regex.firstMatch(in: url) else { return nil }
            guard n < match.groups.count, let text = match.groups[n] else { return "" }
            return String(text)
        }
    }

    // MARK: Output

    /// The exit summary: one aligned row per key, sorted by key.
    ///
    ///     api-v1 (failure-status 500-599)
    ///     key     requests  2xx  3xx  4xx  5xx  failed  errors     up      down    p50      p99
    ///     users          4    1    0    1    1  2 (50%)  refused 1  1.2 KiB  ...
    public func render() -> String {
        var rows: [[String]] = [["key", "requests", "2xx", "3xx", "4xx", "5xx", "failed", "errors", "up", "down", "p50", "p99"]]
        for e in entries.sorted(by: { $0.key < $1.key }) {
            let percent = e.requests == 0 ? 0 : e.failures * 100 / e.requests
            let errorText = zip(ConnectionErrorKind.allCases, e.errors).filter { $0.1 > 0 }
                .map { "\($0.0) \($0.1)" }.joined(separator: ", ")
            rows.append([
                e.key.isEmpty ? "(empty)" : e.key, "\(e.requests)",
                "\(e.count(statusClass: 2))", "\(e.count(statusClass: 3))", "\(e.count(statusClass: 4))", "\(e.count(statusClass: 5))",
                "\(e.failures) (\(percent)%)", errorText.isEmpty ? "-" : errorText,
                Self.formatBytes(e.bytesUp), Self.formatBytes(e.bytesDown),
                e.latency.percentile(0.5).map(Self.formatDuration) ?? "-",
                e.latency.percentile(0.99).map(Self.formatDuration) ?? "-",
            ])
        }
        var widths = Array(repeating: 0, count: rows[0].count)
        for row in rows { for (c, cell) in row.enumerated() { widths[c] = max(widths[c], cell.count) } }
        var out = "\(name) (failure-status \(failureStatus.lowerBound)-\(failureStatus.upperBound))\n"
        for row in rows {
            var line = ""
            for (c, cell) in row.enumerated() {
                let pad = String(repeating: " ", count: widths[c] - cell.count)
                // Text columns read left to right; numbers line up on the right.
                line += c == 0 || c == 7 ? cell + pad : pad + cell
                if c < row.count - 1 { line += "  " }
            }
            while line.hasSuffix(" ") { line.removeLast() }
            out += line + "\n"
        }
        return out
    }

    /// The same figures for the control API: `{"name":…,"failure-status":[lo,hi],"keys":[…]}`.
    public func writeJSON(into json: inout JSONWriter) {
        json.beginObject()
        json.field("name", name)
        json.key("failure-status")
        json.beginArray(); json.int(failureStatus.lowerBound); json.int(failureStatus.upperBound); json.endArray()
        json.key("keys")
        json.beginArray()
        for e in entries.sorted(by: { $0.key < $1.key }) {
            json.beginObject()
            json.field("key", e.key)
            json.field("requests", Int(clamping: e.requests))
            json.key("status")
            json.beginObject()
            for klass in 1 ... 5 { json.field("\(klass)xx", Int(clamping: e.count(statusClass: klass))) }
            json.endObject()
            json.field("failures", Int(clamping: e.failures))
            json.key("errors")
            json.beginObject()
            for (kind, n) in zip(ConnectionErrorKind.allCases, e.errors) where n > 0 { json.field(kind.rawValue, Int(clamping: n)) }
            json.endObject()
            json.field("bytes-up", Int(clamping: e.bytesUp))
            json.field("bytes-down", Int(clamping: e.bytesDown))
            json.field("latency-p50-ns", e.latency.percentile(0.5).map { Int(clamping: $0) })
            json.field("latency-p99-ns", e.latency.percentile(0.99).map { Int(clamping: $0) })
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }

    public func json(pretty: Bool = false) -> String {
        var writer = JSONWriter(pretty: pretty)
        writeJSON(into: &writer)
        return writer.text
    }

    static func formatBytes(_ n: UInt64) -> String {
        if n < 1024 { return "\(n) B" }
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var unit = 0, scale: UInt64 = 1024
        while unit < units.count - 1, n >= scale * 1024 { scale *= 1024; unit += 1 }
        return decimal(n, over: scale) + " " + units[unit]
    }

    static func formatDuration(_ ns: UInt64) -> String {
        if ns < 1000 { return "\(ns) ns" }
        if ns < 1_000_000 { return decimal(ns, over: 1000) + " µs" }
        if ns < 1_000_000_000 { return decimal(ns, over: 1_000_000) + " ms" }
        return decimal(ns, over: 1_000_000_000) + " s"
    }

    /// `value / scale` with one decimal, rounded half up, without Foundation.
    static func decimal(_ value: UInt64, over scale: UInt64) -> String {
        let tenths = (value.multipliedReportingOverflow(by: 10).overflow ? value / scale * 10 : (value * 10 + scale / 2) / scale)
        return "\(tenths / 10).\(tenths % 10)"
    }
}
