internal import HTTP
internal import Relay
internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// The running tunnel as the control API sees it, and the reloads of its
/// profile (SIGHUP's and `POST /reload`'s, which share one `ProfileReloader`).
/// A small adapter rather than `extension Tunnel: ControlTarget`, because a
/// reload needs the profile's path and reader, which the tunnel does not
/// keep. Everything here runs on the loop's thread (ControlServer.serve is
/// called from it).
final class TunnelControl: ControlTarget {
    let tunnel: Tunnel
    /// Reads the profile given with --profile; nil runs on the built-in default.
    let reloader: ProfileReloader?
    /// Lines for the session's log (a reload's warnings), taken after each `serve`.
    var pendingLog: [String] = []
    /// Who asked for each read under way or due ("SIGHUP", "control"), for the log.
    var askedBy: [Int: [String]] = [:]

    init(tunnel: Tunnel, reloader: ProfileReloader?) {
        self.tunnel = tunnel
        self.reloader = reloader
    }

    func log(_ line: String) { pendingLog.append(line) }

    func takeLog() -> [String] {
        defer { pendingLog.removeAll() }
        return pendingLog
    }

    func flows() -> [ControlFlow] {
        tunnel.controlFlows()
    }

    func close(id: UInt64) -> Bool {
        tunnel.closeFlow(id: id)
    }

    func writeStatistics(into json: inout JSONWriter) {
        tunnel.writeControlStatistics(into: &json)
    }

    func groups() -> [ControlGroup] {
        tunnel.controlGroups()
    }

    func select(group: String, member: String) -> Result<String, ControlFailure> {
        tunnel.select(group: group, member: member)
    }

    func reload() -> ControlReload {
        guard reloader != nil else {
            return .finished(.failure(ControlFailure(kind: .conflict, message: "running on the built-in default profile (no --profile): nothing to reload")))
        }
        return startReload(askedBy: "control")
    }

    /// SIGHUP: the same read as `POST /reload`, with nobody waiting for an answer.
    func reloadOnSignal() {
        guard reloader != nil else {
            log("sluice: SIGHUP: running on the built-in default profile; nothing to reload")
            return
        }
        _ = startReload(askedBy: "SIGHUP")
    }

    func startReload(askedBy asker: String) -> ControlReload {
        guard let reloader else { preconditionFailure("startReload without a profile") }
        switch reloader.start() {
        case let .reading(generation):
            if askedBy[generation]?.contains(asker) != true { askedBy[generation, default: []].append(asker) }
            return .reading(generation: generation)
        case let .finished(outcome, generation):
            askedBy[generation, default: []].append(asker)
            return .finished(apply(outcome, generation: generation))
        }
    }

    /// Read number `generation` is done: a good profile replaces the
    /// tunnel's (open flows keep their routes), one with errors changes
    /// nothing. Returns the answer for the clients that waited for it.
    func apply(_ outcome: ProfileReloader.Outcome, generation: Int) -> Result<String, ControlFailure> {
        let path = reloader?.path ?? "the profile"
        let asker = (askedBy.removeValue(forKey: generation) ?? ["reload"]).joined(separator: ", ")
        switch outcome {
        case let .loaded(profile):
            tunnel.apply(profile, log: { self.log($0) })
            let message = "reloaded \(path) (\(profile.rules.count + 1) rules); open flows keep their routes"
            log("sluice: \(asker): " + message)
            return .success(message)
        case let .failed(errors):
            log(errors)
            let message = "\(path) has errors; still using the previous profile"
            log("sluice: \(asker): " + message)
            return .failure(ControlFailure(kind: .invalid, message: message, errors: errors.split(separator: "\n").map(String.init)))
        }
    }
}

extension Tunnel {
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
                httpSessions[key] = nil
                releasePin(key)
            }
        case .udp:
            // The session's socket, and for a SOCKS5 association its control connection too.
            associationQueue[key] = nil
            awaitingAddress[key] = nil
            udpAwaitingResolution.remove(key)
            if let control = tcpFlows[key] { removeTCP(control) }
            if let flow = udpFlows.removeValue(forKey: key) {
                try? epoll.remove(flow.socket.descriptor)
                tokens[flow.token] = nil
            }
            datagrams.remove(key)
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
        json.key("profile")
        if let profile = director.profile { json.string(profile.file) } else { json.null() }
        json.key("statistics")
        json.beginArray()
        for book in director.books { book.writeJSON(into: &json) }
        json.endArray()
        json.endObject()
    }

    func controlGroups() -> [ControlGroup] {
        guard let profile = director.profile else { return [] }
        return profile.groups.map { definition in
            let state = director.groups[definition.name]
            let members = definition.members.map { name in
                let health = state?.health(of: name) ?? .unchecked
                switch health {
                case .unchecked: return ControlGroup.Member(name: name, health: "unchecked")
                case .down: return ControlGroup.Member(name: name, health: "down")
                case let .healthy(latency):
                    return ControlGroup.Member(name: name, health: "healthy", latencyMilliseconds: Int((latency + 500_000) / 1_000_000))
                }
            }
            return ControlGroup(name: definition.name, kind: definition.kind.rawValue,
                                selected: state?.current ?? definition.members.first, members: members)
        }
    }

    /// Switches a select group: new flows follow the member; open ones keep their routes.
    func select(group name: String, member: String) -> Result<String, ControlFailure> {
        guard var group = director.groups[name], let definition = director.profile?.groups.first(where: { $0.name == name }) else {
            return .failure(ControlFailure(kind: .notFound, message: "no proxy group named '\(name)'"))
        }
        let previous = group.current
        do {
            try group.select(member)
        } catch {
            switch error {
            case .notSelectable:
                return .failure(ControlFailure(kind: .conflict, message: "'\(name)' is a \(definition.kind.rawValue) group: it chooses by health, not by hand"))
            case .unknownMember:
                return .failure(ControlFailure(kind: .notFound,
                                               message: "'\(member)' is not a member of '\(name)' (members: \(definition.members.joined(separator: ", ")))"))
            case .empty, .duplicateMember, .cycle, .tooDeep:
                return .failure(ControlFailure(kind: .conflict, message: error.description))
            }
        }
        director.groups[name] = group
        return .success("\(name): \(previous) → \(member); new flows use \(member), open ones keep their routes")
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
        json.field("tcp-rejected", tcpRejected)
        json.field("tcp-answered", tcpAnswered)
        json.field("udp-sessions", udpSessions)
        json.field("udp-rejected", udpRejected)
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
