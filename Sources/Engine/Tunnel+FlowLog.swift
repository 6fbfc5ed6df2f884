internal import Capture
internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// What the tunnel knows of each open flow (the control API lists it), and
/// the flow log's one JSON line per connection and per HTTP request.
extension Tunnel {
    /// A flow starts: its record opens.
    func beginRecord(_ key: FlowKey) {
        guard flowRecords[key] == nil else { return }
        nextConnectionID += 1
        let transport: FlowRecord.Transport
        switch key.transport {
        case .udp: transport = .udp
        case .icmp, .icmpv6: transport = .icmp
        default: transport = .tcp
        }
        var record = FlowRecord(connectionID: nextConnectionID, startTime: wallTime(now), transport: transport,
                                source: key.appAddress, sourcePort: key.appPort,
                                destination: key.destinationAddress, destinationPort: key.destinationPort)
        let known = facts(for: key)
        record.domain = known.domain.map(Self.bareName)
        record.domainSource = known.domainSource.map(Self.recordSource)
        flowRecords[key] = OpenFlowRecord(record)
    }

    /// The rules decided: `reason` reads "FILE:LINE: RULE → POLICY".
    func noteDecision(_ key: FlowKey, route: FlowRoute, reason: String, facts: FlowFacts? = nil) {
        selectForCapture(key, facts: facts)
        guard let entry = flowRecords[key] else { return }
        var record = entry.record
        (record.rule, record.policy) = FlowDecision.split(reason)
        record.upstream = route.upstreamDescription
        if let facts, let domain = facts.domain {
            record.domain = Self.bareName(domain)
            record.domainSource = facts.domainSource.map(Self.recordSource)
        }
        entry.record = record
    }

    /// Runs for every read and write of every flow: one lookup, and the record
    /// changes in place (a dictionary of structs would go through a modify
    /// coroutine that allocates its frame).
    func countBytes(_ key: FlowKey, up: Int = 0, down: Int = 0) {
        guard keepsLines, let entry = flowRecords[key] else { return }
        entry.record.bytesUp += up
        entry.record.bytesDown += down
    }

    /// The flow ended: its line goes to the flow log. Idempotent.
    func finishRecord(_ key: FlowKey, status: FlowRecord.Status = .closed, error: String? = nil) {
        if !synHopLimits.isEmpty { synHopLimits[key] = nil }
        guard var record = flowRecords.removeValue(forKey: key)?.record else { return }
        record.endTime = wallTime(now)
        record.status = status
        record.error = record.error ?? error
        finished(.connection(record))
    }

    /// One HTTP request's line, after its response (or its failure): to the
    /// flow log, and to the recent requests the control API shows.
    func logRequest(_ exchange: HTTPExchange, session: HTTPSession) {
        guard keepsLines else { return }
        let connection = flowRecords[session.key]?.record.connectionID ?? 0
        // Numbered from 0 on each connection, as HTTPRequestRecord (and replay) count.
        defer { session.requestCount += 1 }
        let line = exchange.requestRecord(connectionID: connection, index: session.requestCount, startedAt: wallTime(exchange.started),
                                          now: now, upstream: session.upstreamLabel)
        finished(.http(line))
    }

    /// Monotonic instants as wall-clock nanoseconds since the epoch.
    func wallTime(_ instant: Instant) -> UInt64 {
        UInt64(max(Int64(wallOrigin) + instant.nanoseconds, 0))
    }

    static func bareName(_ name: String) -> String {
        name.hasSuffix(".") ? String(name.dropLast()) : name
    }

    static func recordSource(_ source: FlowFacts.DomainSource) -> FlowRecord.DomainSource {
        switch source {
        case .dns: .dns
        case .host: .host
        case .sni: .sni
        case .answer: .dnsAnswer
        }
    }
}

extension FlowRoute {
    /// The upstream a flow log names: the proxy, or nothing for DIRECT and local answers.
    var upstreamDescription: String? {
        switch self {
        case .direct: "DIRECT"
        case let .proxy(proxy): "\(proxy.name) \(proxy.host):\(proxy.port)"
        case .refuse, .answer: nil
        }
    }
}

/// An open flow's record, by reference, so that per-packet updates change it in place.
extension FlowRecord {
    /// The flow log's `process`, `pid` and `uid`.
    mutating func note(_ owner: FlowOwner) {
        process = owner.processName
        processID = owner.processID
        userID = owner.userID
    }
}

final class OpenFlowRecord {
    var record: FlowRecord
    /// Who opened the flow, when a rule asked (Tunnel+Owner.swift).
    var owner: FlowOwner?
    /// The route `record.upstream` describes, for HTTP mode's requests.
    var describedRoute: FlowRoute.Identity?
    init(_ record: FlowRecord) { self.record = record }
}

extension HTTPExchange {
    /// The flow log's line for this exchange (the tunnel's and the proxy's):
    /// `startedAt` is `started` as wall-clock nanoseconds since the epoch.
    func requestRecord(connectionID: UInt64, index: Int, startedAt: UInt64, now: Instant, upstream: String?) -> HTTPRequestRecord {
        var line = HTTPRequestRecord(connectionID: connectionID, requestIndex: index, startTime: startedAt, method: method, url: url)
        line.status = status ?? localAnswer.flatMap(LocalAnswers.status(of:))
        // The bodies, as the names say: `requestBytes` and `responseBytes`
        // count the heads too (until 2026-12-05 the log gave those). A local
        // answer's body is what follows its head.
        line.requestBodyBytes = requestBodyBytes
        line.responseBodyBytes = localAnswer.map(LocalAnswers.bodyLength(of:)) ?? responseBodyBytes
        line.rule = rule
        line.policy = policy
        line.upstream = upstream
        line.retries = resends
        line.bodyRewrites = bodyRewrites
        line.error = failure
        if headAt != nil {
            let phases = phases(now: now)
            line.timings = HTTPRequestRecord.Timings(send: phases.send, wait: phases.wait, receive: phases.receive)
        }
        return line
    }
}
