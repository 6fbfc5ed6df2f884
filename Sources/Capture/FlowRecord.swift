// FlowRecord exists so that what Sluice decided about one connection (which
// rule matched, which policy and upstream it used, how many bytes went each
// way, how it ended) is one line of JSON a user can grep, jq or replay against.
// The field names are the flow log's schema (docs/capture.md).
public import Wire
internal import HTTP

public struct FlowRecord: Sendable, Equatable {
    public enum Transport: String, Sendable {
        case tcp, udp, icmp
    }

    /// Where the domain name of a flow came from.
    public enum DomainSource: String, Sendable {
        /// A fake-IP DNS answer Sluice gave earlier for this address.
        case dns
        /// The HTTP Host header.
        case host
        /// The TLS ClientHello's server_name (over TCP, or in QUIC's Initial packets).
        case sni
        /// A DNS answer Sluice relayed gave the (real) address this name; a
        /// fallback for flows that name themselves no other way.
        case dnsAnswer = "dns-answer"
    }

    /// How a flow ended (or `open` for a snapshot of a live one).
    public struct Status: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let open = Status(rawValue: "open")
        /// Both sides closed normally.
        public static let closed = Status(rawValue: "closed")
        /// A side reset the connection.
        public static let reset = Status(rawValue: "reset")
        /// The upstream refused or was unreachable.
        public static let refused = Status(rawValue: "refused")
        public static let timedOut = Status(rawValue: "timeout")
        /// A rule rejected or dropped it.
        public static let blocked = Status(rawValue: "blocked")
        /// Anything else that went wrong; `error` says what.
        public static let failed = Status(rawValue: "failed")
        public var description: String { rawValue }
    }

    /// The id shared by this connection's flow-log lines, HAR entries and the control API.
    public var connectionID: UInt64
    /// Nanoseconds since the Unix epoch.
    public var startTime: UInt64
    public var endTime: UInt64?
    public var transport: Transport
    /// The application's side (inside the tunnel).
    public var source: IPAddress
    public var sourcePort: UInt16
    /// The address the application asked for (a fake IP when `domainSource` is dns).
    public var destination: IPAddress
    public var destinationPort: UInt16
    public var domain: String?
    public var domainSource: DomainSource?
    /// The program that opened the flow (its executable's file name) and its
    /// pid, and the uid owning its socket: known when a PROCESS-NAME,
    /// PROCESS-PATH or UID rule made Sluice ask.
    public var process: String?
    public var processID: Int32?
    public var userID: UInt32?
    public var rule: String?
    public var policy: String?
    public var upstream: String?
    /// Payload bytes from the application to the destination.
    public var bytesUp: Int = 0
    /// Payload bytes from the destination to the application.
    public var bytesDown: Int = 0
    public var status: Status = .open
    public var error: String?

    public init(
        connectionID: UInt64, startTime: UInt64, transport: Transport,
        source: IPAddress, sourcePort: UInt16, destination: IPAddress, destinationPort: UInt16
    ) {
        self.connectionID = connectionID
        self.startTime = startTime
        self.transport = transport
        self.source = source
        self.sourcePort = sourcePort
        self.destination = destination
        self.destinationPort = destinationPort
    }

    /// One JSON object, no newline. Every key is always present (null when
    /// unknown), so the schema does not depend on what happened.
    public var json: String {
        var json = JSONWriter()
        json.beginObject()
        json.field("kind", "connection")
        json.key("connection"); json.int(Int(truncatingIfNeeded: connectionID))
        json.field("start", CalendarTime.rfc3339(startTime))
        json.field("end", endTime.map(CalendarTime.rfc3339))
        json.field("durationMs", endTime.map { Double($0 &- startTime) / 1_000_000 })
        json.field("transport", transport.rawValue)
        json.field("source", source.description)
        json.field("sourcePort", Int(sourcePort))
        json.field("destination", destination.description)
        json.field("destinationPort", Int(destinationPort))
        json.field("domain", domain)
        json.field("domainSource", domainSource?.rawValue)
        json.field("process", process)
        json.field("pid", processID.map(Int.init))
        json.field("uid", userID.map(Int.init))
        json.field("rule", rule)
        json.field("policy", policy)
        json.field("upstream", upstream)
        json.field("bytesUp", bytesUp)
        json.field("bytesDown", bytesDown)
        json.field("status", status.rawValue)
        json.field("error", error)
        json.endObject()
        return json.text
    }
}

extension FlowRecord: CustomStringConvertible {
    /// `#12 TCP 10.0.0.1.40000 > 93.184.216.34.443 (example.com via sni) rule=r1 policy=DIRECT up 517 down 4096 closed`
    public var description: String {
        var text = "#\(connectionID) \(transport.rawValue.uppercased()) \(source).\(sourcePort) > \(destination).\(destinationPort)"
        if let domain { text += " (\(domain) via \(domainSource?.rawValue ?? "?"))" }
        if let process { text += " by \(process)" + (processID.map { "[\($0)]" } ?? "") }
        if let rule { text += " rule=\(rule)" }
        if let policy { text += " policy=\(policy)" }
        if let upstream { text += " upstream=\(upstream)" }
        text += " up \(bytesUp) down \(bytesDown) \(status)"
        if let error { text += ": \(error)" }
        return text
    }
}
