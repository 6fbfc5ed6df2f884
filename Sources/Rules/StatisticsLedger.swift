public import HTTP

/// Every [Statistics] line of a profile, each with its own `StatisticsBook`:
/// the engine records a request once and each line whose regex matches the
/// URL counts it under its own key.
public struct StatisticsLedger: Sendable {
    public private(set) var books: [StatisticsBook]
    private let definitions: [StatisticsDefinition]

    public init(_ profile: Profile, maximumKeys: Int = 1024) {
        self.init(definitions: profile.statistics, maximumKeys: maximumKeys)
    }

    public init(definitions: [StatisticsDefinition], maximumKeys: Int = 1024) {
        self.definitions = definitions
        books = definitions.map { StatisticsBook($0, maximumKeys: maximumKeys) }
    }

    public var isEmpty: Bool { definitions.isEmpty }

    /// The request to `url` (host `host`) got a response.
    public mutating func recordResponse(url: String, host: String, status: Int, bytesUp: UInt64 = 0, bytesDown: UInt64 = 0,
                                        latencyNanoseconds: UInt64) {
        for i in definitions.indices {
            guard let key = StatisticsBook.key(for: definitions[i], url: url, host: host) else { continue }
            books[i].recordResponse(key: key, status: status, bytesUp: bytesUp, bytesDown: bytesDown,
                                    latencyNanoseconds: latencyNanoseconds)
        }
    }

    /// The request to `url` got no response.
    public mutating func recordError(url: String, host: String, kind: ConnectionErrorKind, bytesUp: UInt64 = 0,
                                     latencyNanoseconds: UInt64? = nil) {
        for i in definitions.indices {
            guard let key = StatisticsBook.key(for: definitions[i], url: url, host: host) else { continue }
            books[i].recordError(key: key, kind: kind, bytesUp: bytesUp, latencyNanoseconds: latencyNanoseconds)
        }
    }

    /// The exit summary: each line's table, the ones that counted nothing left out.
    public func render() -> String {
        books.filter { !$0.entries.isEmpty }.map { $0.render() }.joined(separator: "\n")
    }

    /// `[{book}, …]`, every line, empty or not.
    public func writeJSON(into json: inout JSONWriter) {
        json.beginArray()
        for book in books { book.writeJSON(into: &json) }
        json.endArray()
    }
}
