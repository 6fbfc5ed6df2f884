internal import Capture
internal import HTTP
internal import Relay
internal import Rules
internal import Sys
internal import Wire

/// `sluice proxy`'s side of the control API (LoopControl drives it, as it
/// drives the tunnel): each client connection is a flow, listed from the
/// record the flow log also writes, so `sluice flows`, `status`, `close`,
/// `select`, `reload` and `top` work on a proxy as on a tunnel.
extension ProxyServer: ControlledLoop {
    /// Every client connection, by id. The destination is the target the
    /// client asked for (an address, or a name with `domain` set); nil before
    /// it said, and for a UDP association (each datagram names its own).
    func controlFlows() -> [ControlFlow] {
        let wallNow = wallTime(now)
        return connections.values.sorted { $0.id < $1.id }.map { connection in
            var entry = ControlFlow(id: connection.id, transport: connection.association == nil ? "TCP" : "UDP",
                                    appAddress: connection.peer.address.wireAddress.description,
                                    appPort: Int(connection.peer.port), destinationAddress: nil, destinationPort: nil,
                                    state: Self.controlState(connection))
            entry.process = connection.owner?.label
            if connection.association == nil, let target = connection.target {
                entry.destinationPort = Int(target.port)
                switch target.host {
                case let .ipv4(a): entry.destinationAddress = a.description
                case let .ipv6(a): entry.destinationAddress = a.description
                case let .domain(name):
                    entry.destinationAddress = name
                    entry.domain = name
                    entry.domainSource = FlowRecord.DomainSource.host.rawValue
                }
            }
            if let record = connection.record {
                entry.rule = record.rule
                entry.policy = record.policy
                entry.upstream = record.upstream
                entry.ageSeconds = Double(wallNow &- min(record.startTime, wallNow)) / 1e9
            }
            entry.bytesUp = connection.bytesUp
            entry.bytesDown = connection.bytesDown
            return entry
        }
    }

    /// Where a connection is: its phase, with a kept-alive HTTP client
    /// between requests called `idle` rather than `handshake`.
    static func controlState(_ connection: InboundConnection) -> String {
        controlState(connection.phase, idle: connection.requestsServed > 0 && connection.received.isEmpty)
    }

    /// Every state `GET /stats` counts, in the order it lists them.
    static let controlStates = InboundConnection.Phase.allCases.map { controlState($0, idle: false) } + ["idle"]

    static func controlState(_ phase: InboundConnection.Phase, idle: Bool) -> String {
        switch phase {
        case .handshake where idle: "idle"
        case .handshake: "handshake"
        case .sniffing: "sniffing"
        case .resolving: "resolving"
        case .connecting: "connecting"
        case .proxyHandshake: "proxy-handshake"
        case .originTLS: "origin-tls"
        case .relaying: "relaying"
        case .associated: "associated"
        case .closing: "closing"
        }
    }

    /// Cuts a client off: both its sockets close with a RST, and its flow-log
    /// line ends as `reset`, closed through the control API.
    func closeFlow(id: UInt64) -> Bool {
        guard let connection = connections[id] else { return false }
        cut(connection, reason: "closed through the control API")
        return true
    }

    func writeControlStatistics(into json: inout JSONWriter) {
        json.beginObject()
        json.field("uptime-seconds", Double(now.nanoseconds) / 1e9)
        json.key("listeners")
        json.beginObject()
        json.field("socks5", configuration.socksAddress.map { "\($0)" })
        json.field("http", configuration.httpAddress.map { "\($0)" })
        json.endObject()
        json.key("open")
        json.beginObject()
        var byState: [String: Int] = [:]
        for connection in connections.values { byState[Self.controlState(connection), default: 0] += 1 }
        json.field("connections", connections.count)
        for state in Self.controlStates {
            json.field(state, byState[state] ?? 0)
        }
        json.endObject()
        json.key("proxy")
        var counters = statistics
        // Finished connections are in `statistics`; open ones count as they go.
        for connection in connections.values {
            counters.bytesUp += connection.bytesUp
            counters.bytesDown += connection.bytesDown
        }
        counters.writeJSON(into: &json)
        director.writeProfileAndBooks(into: &json)
        json.endObject()
    }
}

extension ProxyServerStatistics {
    /// The counters as one JSON object, named as in the exit summary.
    func writeJSON(into json: inout JSONWriter) {
        json.beginObject()
        json.field("connections", connections)
        json.field("relayed", relayed)
        json.field("refused-by-rules", refusedByRules)
        json.field("answered-here", answeredHere)
        json.field("handshake-failures", handshakeFailures)
        json.field("auth-failures", authFailures)
        json.field("failed", failed)
        json.field("errors", errors)
        json.field("bytes-up", bytesUp)
        json.field("bytes-down", bytesDown)
        json.field("associations", associations)
        json.field("datagrams-up", datagramsUp)
        json.field("datagrams-down", datagramsDown)
        json.field("datagrams-dropped", datagramsDropped)
        json.endObject()
    }
}
