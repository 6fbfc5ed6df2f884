internal import HTTP
internal import Relay
internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// The tunnel's side of the control API (LoopControl drives it): its flows
/// from the flow records, closing one, its counters. Groups are the
/// director's (FlowDirector+Control.swift).
extension Tunnel: ControlledLoop {
    /// Every open flow, from the tunnel's flow records (`flowRecords`: the
    /// same records the flow log writes when a flow ends), with the TCP state
    /// and the upstream socket's progress added. The id is the record's
    /// connection id, which the flow log, HAR and pcap notes also carry.
    func controlFlows() -> [ControlFlow] {
        var result: [ControlFlow] = []
        let wallNow = wallTime(now)
        for (key, open) in flowRecords {
            let record = open.record
            var entry = ControlFlow(id: record.connectionID, transport: key.transport.controlName,
                                    appAddress: key.appAddress.description, appPort: Int(key.appPort),
                                    destinationAddress: key.destinationAddress.description,
                                    destinationPort: Int(key.destinationPort), state: "open")
            entry.domain = record.domain
            entry.domainSource = record.domainSource?.rawValue
            entry.process = open.owner?.label
            entry.rule = record.rule
            entry.policy = record.policy
            entry.upstream = record.upstream
            // Bytes are counted only while a control socket (or the flow log) can see them.
            if controlWatching || flowLog != nil {
                entry.bytesUp = record.bytesUp
                entry.bytesDown = record.bytesDown
            }
            entry.ageSeconds = Double(wallNow &- min(record.startTime, wallNow)) / 1e9
            entry.state = controlState(key)
            if let flow = tcpFlows[key] {
                if let handshake = flow.handshake {
                    entry.upstream = "\(handshake.proxy.name) (\(flow.remote.map { "\($0)" } ?? handshake.proxy.host))"
                } else if entry.upstream == nil {
                    entry.upstream = flow.remote?.description
                }
            }
            result.append(entry)
        }
        return result.sorted { ($0.id ?? .max) < ($1.id ?? .max) }
    }

    /// Where a flow is in its life: the TCP state once the app's side is
    /// accepted, else what the tunnel is doing for it.
    func controlState(_ key: FlowKey) -> String {
        if key.transport == .udp { return tcpFlows[key] != nil && udpFlows[key] == nil ? "udp-association" : "open" }
        if key.transport != .tcp { return "open" }
        if let flow = tcpFlows[key] {
            if !flow.connected { return "connecting" }
            if flow.handshake != nil { return "proxy-handshake" }
        }
        if sniffing[key] != nil { return "sniffing" }
        if awaitingAddress[key] != nil { return "resolving" }
        if answering[key] != nil { return "answering" }
        if let connection = tcp.connection(key) { return connection.state.description }
        return tcpFlows[key] == nil ? "pending" : "connecting"
    }

    /// Closes one flow by its connection id: a TCP app sees a RST (or its
    /// waiting SYN is refused with one), the upstream socket is closed with a
    /// RST; a UDP or ping flow's socket and state go. Its record ends as
    /// `reset` with the reason, in the flow log too.
    func closeFlow(id: UInt64) -> Bool {
        guard let key = flowRecords.first(where: { $0.value.record.connectionID == id })?.key else { return false }
        trace("\(key): closed through the control API")
        // Its requests first, while the connection's record still names them.
        if key.transport == .tcp, let session = httpSessions[key] { recordCutOff(session, reason: "closed through the control API") }
        finishRecord(key, status: .reset, error: "closed through the control API")
        switch key.transport {
        case .tcp:
            var sink = TunSink(io: io)
            if let flow = tcpFlows[key] { flow.socket.setResetOnClose() }
            if let connection = tcp.connection(key) {
                connection.abort()
                tcp.flush(key, now: now, sink: &sink)
            } else {
                // Still connecting upstream: the app's SYN waits unanswered (lazy accept); refuse it.
                tcp.refuse(key, with: .reset, sink: &sink)
            }
            sniffing[key] = nil
            answering[key] = nil
            awaitingAddress[key] = nil
            if let flow = tcpFlows[key] {
                removeTCP(flow, keepConnection: true)
            } else {
                if let session = httpSessions[key] { finishWebSocket(session) }
                httpSessions[key] = nil
                releasePin(key)
            }
        case .udp:
            // The session's socket, and for a SOCKS5 association its control connection too.
            associationQueue[key] = nil
            awaitingAddress[key] = nil
            udpAwaitingResolution[key] = nil
            if let control = tcpFlows[key] { removeTCP(control) }
            closeUDP(key)
            datagrams.remove(key)
            forgetForwarded(key)
            releasePin(key)
        default:
            datagrams.remove(key)
        }
        return true
    }

    func writeControlStatistics(into json: inout JSONWriter) {
        let counters = statistics
        json.beginObject()
        json.field("uptime-seconds", Double(now.nanoseconds) / 1e9)
        json.key("open")
        json.beginObject()
        json.field("tcp", tcpFlows.keys.filter { $0.transport == .tcp }.count)
        json.field("udp", udpFlows.count)
        json.field("sniffing", sniffing.count)
        json.field("http-sessions", httpSessions.count)
        json.field("tcp-connections", tcp.count)
        json.endObject()
        json.key("tunnel")
        counters.writeJSON(into: &json)
        director.writeProfileAndBooks(into: &json)
        json.endObject()
    }
}

extension TunnelStatistics {
    /// The counters as one JSON object (the text summaries as strings).
    func writeJSON(into json: inout JSONWriter) {
        json.beginObject()
        json.field("packets-from-app", packetsFromApp)
        json.field("packets-to-app", packetsToApp)
        json.field("malformed-packets", malformedPackets)
        json.field("tcp-flows", tcpFlows)
        json.field("tcp-refused", tcpRefused)
        json.field("tcp-unreachable", tcpUnreachable)
        json.field("tcp-rejected", tcpRejected)
        json.field("tcp-answered", tcpAnswered)
        json.field("udp-sessions", udpSessions)
        json.field("udp-rejected", udpRejected)
        json.field("udp-filtered", udpFiltered)
        json.field("echo-flows", echoFlows)
        json.field("bytes-from-app", bytesFromApp)
        json.field("bytes-to-app", bytesToApp)
        json.field("tun-write-drops", tunWriteDrops)
        json.field("upstream-errors", upstreamErrors)
        json.field("retransmission-timeouts", retransmissionTimeouts)
        json.field("fast-retransmits", fastRetransmits)
        json.field("sack-retransmits", sackRetransmits)
        json.field("go-back-retransmits", goBackRetransmits)
        json.field("tail-loss-probes", tailLossProbes)
        json.field("window-cuts-undone", congestionEventsUndone)
        json.endObject()
    }
}

extension IPProtocol {
    /// How the control API names a flow's transport.
    var controlName: String {
        switch self {
        case .tcp: "TCP"
        case .udp: "UDP"
        case .icmp, .icmpv6: "ICMP"
        default: description
        }
    }
}
