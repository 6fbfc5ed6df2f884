internal import Capture
internal import Relay
internal import Stack
internal import Sys
internal import Wire

/// `sluice proxy --flow-log FILE`: one JSON line per client connection, and
/// one per plain-HTTP request on the HTTP listener, in the format of `exec
/// --flow-log` (docs/capture.md, "The flow log"), so the same tools read both.
extension ProxyServer {
    /// A client was accepted: its record opens (only with a flow log or a control socket to read it).
    func openRecord(_ connection: InboundConnection) {
        guard keepsLines else { return }
        connection.record = FlowRecord(connectionID: connection.id, startTime: wallTime(now), transport: .tcp,
                                       source: connection.peer.address.wireAddress, sourcePort: connection.peer.port,
                                       destination: .v4(.any), destinationPort: 0)
    }

    /// The rules decided where the client's target goes; `reason` reads "FILE:LINE: RULE → POLICY".
    func noteRoute(_ connection: InboundConnection, target: ProxyTarget, route: FlowRoute, reason: String, policy: String? = nil,
                   sniffed: FlowFacts? = nil) {
        guard var record = connection.record else { return }
        record.destinationPort = target.port
        switch target.host {
        case let .ipv4(a): record.destination = .v4(a)
        case let .ipv6(a): record.destination = .v6(a)
        case let .domain(name):
            record.domain = name
            record.domainSource = .host
        }
        if let sniffed, let domain = sniffed.domain, record.domain == nil {
            // A name the first bytes gave (TLS SNI, Host) for an address target.
            record.domain = domain
            record.domainSource = sniffed.domainSource.map(Tunnel.recordSource)
        }
        (record.rule, record.policy) = FlowDecision.split(reason)
        if let policy { record.policy = policy }
        record.upstream = route.upstreamDescription
        connection.record = record
    }

    /// How the connection ended, for its line (the first word said stands).
    func noteEnd(_ connection: InboundConnection, _ status: FlowRecord.Status, error: String? = nil) {
        guard connection.record != nil, connection.endStatus == nil else { return }
        connection.endStatus = status
        connection.record?.error = error
    }

    /// The connection ended: its line goes to the flow log, and to the
    /// recent requests the control API shows.
    func closeRecord(_ connection: InboundConnection) {
        guard var record = connection.record else { return }
        connection.record = nil
        record.endTime = wallTime(now)
        record.bytesUp = connection.bytesUp
        record.bytesDown = connection.bytesDown
        record.status = connection.endStatus ?? .closed
        finished(.connection(record))
    }

    /// One plain-HTTP request's line, after its response (or its failure).
    func logRequest(_ exchange: HTTPExchange, _ connection: InboundConnection) {
        guard keepsLines else { return }
        // Numbered from 0 on each connection, as the tunnel's are.
        defer { connection.requestIndex += 1 }
        let line = exchange.requestRecord(connectionID: connection.id, index: connection.requestIndex, startedAt: wallTime(exchange.started),
                                          now: now, upstream: exchange.localAnswer == nil ? connection.upstreamLabel : nil)
        finished(.http(line))
    }

    /// Monotonic instants as wall-clock nanoseconds since the epoch.
    func wallTime(_ instant: Instant) -> UInt64 {
        wallOrigin &+ UInt64(max(instant.nanoseconds, 0))
    }

    /// A failed connect's status: refused and unreachable targets, timeouts, the rest.
    static func status(for error: RelayError) -> FlowRecord.Status {
        switch Self.errorKind(for: error) {
        case .refused, .unreachable, .dnsFailure: return .refused
        case .timedOut: return .timedOut
        case .reset: return .reset
        case .protocolError, .other: return .failed
        }
    }
}
