internal import HTTP
internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// The running tunnel as the control API sees it. A small adapter rather than
/// `extension Tunnel: ControlTarget`, because a reload needs the profile's
/// path, which the tunnel does not keep. Everything here runs on the loop's
/// thread (ControlServer.serve is called from it).
final class TunnelControl: ControlTarget {
    let tunnel: Tunnel
    /// The profile file given with --profile; nil runs on the built-in default.
    let profilePath: String?
    /// Lines for the session's log (a reload's warnings), taken after each `serve`.
    var pendingLog: [String] = []

    init(tunnel: Tunnel, profilePath: String?) {
        self.tunnel = tunnel
        self.profilePath = profilePath
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
        tunnel.closeFlow(token: id)
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

    func reload() -> Result<String, ControlFailure> {
        guard let path = profilePath else {
            return .failure(ControlFailure(kind: .conflict, message: "running on the built-in default profile (no --profile): nothing to reload"))
        }
        do {
            let profile = try ProfileLoader.loadForRun(path)
            tunnel.apply(profile, log: { self.log($0) })
            let message = "reloaded \(path) (\(profile.rules.count + 1) rules); open flows keep their routes"
            log("sluice: control: " + message)
            return .success(message)
        } catch {
            log("sluice: control: reload: \(path) has errors; still using the previous profile")
            let lines = error.description.split(separator: "\n").map(String.init)
            return .failure(ControlFailure(kind: .invalid, message: "\(path) has errors; still using the previous profile", errors: lines))
        }
    }
}

extension Tunnel {
    /// Every open flow: relayed TCP (with an upstream socket), TCP flows still
    /// being sniffed, answered or resolved (no id yet), and UDP sessions.
    func controlFlows() -> [ControlFlow] {
        var result: [ControlFlow] = []
        var listed: Set<FlowKey> = []
        for (key, flow) in tcpFlows {
            listed.insert(key)
            var entry = controlFlow(key, id: flow.token)
            if let handshake = flow.handshake {
                entry.state = flow.connected ? "proxy-handshake" : "connecting"
                entry.upstream = "\(handshake.proxy.name) (\(flow.remote.map { "\($0)" } ?? handshake.proxy.host))"
            } else {
                entry.upstream = flow.remote?.description
                if !flow.connected { entry.state = "connecting" }
            }
            if key.transport == .udp { entry.state = "udp-association" }
            result.append(entry)
        }
        for (key, flow) in udpFlows where !listed.contains(key) {
            listed.insert(key)
            var entry = controlFlow(key, id: flow.token)
            entry.state = "open"
            entry.upstream = flow.relayTarget.map { "relay to \($0)" }
            result.append(entry)
        }
        // Flows the tunnel holds without an upstream socket of their own.
        for (key, state) in sniffing.keys.map({ ($0, "sniffing") }) + answering.keys.map({ ($0, "answering") })
            + awaitingAddress.keys.map({ ($0, "resolving") }) + httpSessions.keys.map({ ($0, "http") })
            where !listed.contains(key) && key.transport == .tcp {
            listed.insert(key)
            var entry = controlFlow(key, id: nil)
            entry.state = state
            result.append(entry)
        }
        return result.sorted { ($0.id ?? .max, $0.appPort) < ($1.id ?? .max, $1.appPort) }
    }

    /// What the key, the stack's connection and the session know about a flow.
    func controlFlow(_ key: FlowKey, id: UInt64?) -> ControlFlow {
        var entry = ControlFlow(id: id, transport: key.transport.controlName, appAddress: key.appAddress.description,
                                appPort: Int(key.appPort), destinationAddress: key.destinationAddress.description,
                                destinationPort: Int(key.destinationPort), state: "open")
        let known = httpSessions[key]?.facts ?? facts(for: key)
        entry.domain = known.domain.map { $0.hasSuffix(".") ? String($0.dropLast()) : $0 }
        entry.domainSource = known.domainSource?.rawValue
        if key.transport == .tcp, let connection = tcp.connection(key) {
            entry.state = connection.state.description
            if connection.state.isSynchronized {
                // Payload bytes, from the sequence numbers: the SYN (and a FIN) take one each.
                // They wrap at 4 GiB: the tunnel keeps no 64-bit per-flow count yet.
                let received = connection.receiveNext - connection.initialReceiveSequence - 1 - (connection.finReceived ? 1 : 0)
                let acknowledged = connection.sendUnacknowledged - connection.initialSendSequence - 1
                entry.bytesUp = Int(UInt32(truncatingIfNeeded: received))
                entry.bytesDown = Int(UInt32(truncatingIfNeeded: max(acknowledged, 0)))
            }
        }
        return entry
    }

    /// Closes one flow by its id (the token of its upstream socket): the app gets a RST, the upstream socket is closed.
    func closeFlow(token: UInt64) -> Bool {
        guard let key = tokens[token] else { return false }
        if key.transport == .udp {
            // The session's socket, and for a SOCKS5 association its control connection too.
            trace("\(key): closed through the control API")
            associationQueue[key] = nil
            if let control = tcpFlows[key] { removeTCP(control) }
            if let flow = udpFlows.removeValue(forKey: key) {
                try? epoll.remove(flow.socket.descriptor)
                tokens[flow.token] = nil
            }
            datagrams.remove(key)
            return true
        }
        guard let flow = tcpFlows[key] else { return false }
        trace("\(key): closed through the control API")
        var sink = TunSink(io: io)
        flow.socket.setResetOnClose()
        if let connection = tcp.connection(key) {
            connection.abort()
            tcp.flush(key, now: now, sink: &sink)
        } else {
            // Still connecting upstream: the app's SYN waits unanswered (lazy accept); refuse it.
            tcp.refuse(key, with: .reset, sink: &sink)
        }
        awaitingAddress[key] = nil
        removeTCP(flow, keepConnection: true)
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
        return profile.groups.map { group in
            // Health checks are not run by the engine yet: every member is unchecked.
            ControlGroup(name: group.name, kind: group.kind.rawValue,
                         selected: director.groupSelections[group.name] ?? group.members.first,
                         members: group.members.map { ControlGroup.Member(name: $0, health: "unchecked", latencyMilliseconds: nil) })
        }
    }

    /// Switches a select group: new flows follow the member; open ones keep their routes.
    func select(group name: String, member: String) -> Result<String, ControlFailure> {
        guard let group = director.profile?.groups.first(where: { $0.name == name }) else {
            return .failure(ControlFailure(kind: .notFound, message: "no proxy group named '\(name)'"))
        }
        guard group.kind == .select else {
            return .failure(ControlFailure(kind: .conflict, message: "'\(name)' is a \(group.kind.rawValue) group: it chooses by health, not by hand"))
        }
        guard group.members.contains(member) else {
            return .failure(ControlFailure(kind: .notFound,
                                           message: "'\(member)' is not a member of '\(name)' (members: \(group.members.joined(separator: ", ")))"))
        }
        let previous = director.groupSelections[name] ?? group.members.first ?? ""
        director.groupSelections[name] = member
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
