internal import Stack
internal import Sys
internal import Wire

/// Direct UDP goes out the way a well-behaved NAT sends it (RFC 4787):
/// every session of one app address and port, in one family, leaves from
/// the same local port, so every destination sees the app at the same
/// address and port (endpoint-independent mapping, REQ-1). A peer's
/// STUN-learned address then holds for the others, as ICE needs; with a
/// port per session each destination saw another one, as behind a
/// symmetric NAT. A datagram from a new port of an address the app already
/// talks to opens a session of its own towards the app (address-dependent
/// filtering, REQ-8's choice for when security matters): a TFTP server's
/// transfer port, a game server's second socket. Datagrams from addresses
/// the app never sent to are dropped and counted, as a NAT's filter drops them.
///
/// The mapping is a port, not a socket: each session keeps a connected
/// socket of its own, bound to the mapping's port (SO_REUSEADDR), because
/// the kernel caches a connected socket's route, where an unconnected
/// `sendto` looks it up for every datagram (3–5% of a UDP upload's rate:
/// docs/benchmarks.md). Linux hands a datagram to the socket connected to
/// its sender before a wildcard one, so each session's socket gets its own
/// traffic and its own ICMP errors, and only new ports reach the mapping's
/// catch-all socket, unconnected on the same port.
///
/// Sessions through a SOCKS5 relay keep a connected socket each (the
/// relay's), as do ping sockets.
struct UDPEndpoint: Hashable {
    var appAddress: IPAddress
    var appPort: UInt16
    var family: SysIPAddress.Family
}

/// An app endpoint's port upstream: its catch-all socket, and which real
/// address and port each of its sessions talks to.
final class UDPMapping {
    let endpoint: UDPEndpoint
    let socket: Socket
    let token: UInt64
    /// The local port every session's socket is bound to.
    let port: UInt16
    private(set) var byDestination: [SocketAddress: FlowKey] = [:]
    private(set) var destinations: [FlowKey: SocketAddress] = [:]
    /// Each address the sessions talk to: how many do, and the address the
    /// app knows it by (a fake IP, for a name's real address).
    private(set) var peers: [SysIPAddress: (sessions: Int, appFacing: IPAddress)] = [:]

    init(_ endpoint: UDPEndpoint, socket: consuming Socket, token: UInt64, port: UInt16) {
        self.endpoint = endpoint
        self.socket = socket
        self.token = token
        self.port = port
    }

    var isEmpty: Bool { destinations.isEmpty }

    func add(_ key: FlowKey, destination: SocketAddress) {
        destinations[key] = destination
        byDestination[destination] = key
        peers[destination.address, default: (0, key.destinationAddress)].sessions += 1
    }

    func remove(_ key: FlowKey) {
        guard let destination = destinations.removeValue(forKey: key) else { return }
        if byDestination[destination] == key { byDestination[destination] = nil }
        guard let peer = peers[destination.address] else { return }
        peers[destination.address] = peer.sessions > 1 ? (peer.sessions - 1, peer.appFacing) : nil
    }

    /// The session a datagram from `sender` belongs to: nil when it is from
    /// an address none of them talks to (filtered); `isNew` when it opens one.
    func session(from sender: SocketAddress) -> (key: FlowKey, isNew: Bool)? {
        if let key = byDestination[sender] { return (key, false) }
        guard let peer = peers[sender.address] else { return nil }
        return (FlowKey(transport: .udp, appAddress: endpoint.appAddress, appPort: endpoint.appPort,
                        destinationAddress: peer.appFacing, destinationPort: sender.port), true)
    }
}

extension Tunnel {
    /// A direct UDP session to `address`, from its app endpoint's port.
    func openUDP(_ key: FlowKey, to address: SysIPAddress, sink: inout TunSink) {
        let endpoint = UDPEndpoint(appAddress: key.appAddress, appPort: key.appPort, family: address.family)
        guard let mapping = udpMappings[endpoint] ?? openMapping(endpoint) else { return }
        _ = openSessionSocket(key, on: mapping, to: SocketAddress(address, port: key.destinationPort), sink: &sink)
    }

    /// The catch-all socket of a new mapping: bound before SO_REUSEADDR is
    /// on, so that the kernel's choice of port is one no other socket holds
    /// (two sockets that both allow reuse may share one); on after, so that
    /// the sessions' sockets may bind beside it.
    func openMapping(_ endpoint: UDPEndpoint) -> UDPMapping? {
        let socket: Socket
        do { socket = try Socket(.udp, family: endpoint.family, mark: configuration.mark) } catch {
            socketFailed(error)
            return nil
        }
        do {
            try socket.bind(SocketAddress(endpoint.family == .v4 ? .anyV4 : .anyV6, port: 0), reuseAddress: false)
            try socket.setReuseAddress()
        } catch {
            socketFailed(error)
            return nil
        }
        guard let port = socket.localAddress?.port else { return nil }
        socket.setReceiveBuffer(Self.udpReceiveBuffer)
        let token = nextToken
        nextToken += 1
        guard (try? epoll.add(socket.descriptor, events: .readable, token: token)) != nil else { return nil }
        let mapping = UDPMapping(endpoint, socket: socket, token: token, port: port)
        udpMappings[endpoint] = mapping
        udpMappingTokens[token] = mapping
        return mapping
    }

    /// A session's own socket: bound to the mapping's port, connected to
    /// its destination. False when the host has no route (the app hears it
    /// as from a network) or no socket to spare.
    func openSessionSocket(_ key: FlowKey, on mapping: UDPMapping, to destination: SocketAddress, sink: inout TunSink) -> Bool {
        let socket: Socket
        do { socket = try Socket(.udp, family: mapping.endpoint.family, mark: configuration.mark) } catch {
            socketFailed(error)
            closeMappingIfUnused(mapping)
            return false
        }
        do { try socket.bind(SocketAddress(mapping.endpoint.family == .v4 ? .anyV4 : .anyV6, port: mapping.port), reuseAddress: true) } catch {
            socketFailed(error)
            closeMappingIfUnused(mapping)
            return false
        }
        do { _ = try socket.connect(to: destination) } catch {
            io.statistics.upstreamErrors += 1
            trace("\(key): UDP connect: \(error)")
            if let reason = Self.unreachableReason(for: error) {
                datagrams.sendUDPUnreachable(key, reason: reason, now: now, sink: &sink)
            }
            closeMappingIfUnused(mapping)
            return false
        }
        // A server's burst of small datagrams filled the default buffer (208 KB of
        // kernel memory, about 300 of them) before the loop read it, where the app's
        // own socket, without Sluice, would have held them: half of a 2,000-datagram
        // burst was lost. Memory is taken only for what waits.
        socket.setReceiveBuffer(Self.udpReceiveBuffer)
        let queuesErrors = socket.setReceiveErrors()
        guard let flow = watchedFlow(key, socket: socket) else {
            closeMappingIfUnused(mapping)
            return false
        }
        flow.queuesErrors = queuesErrors
        flow.mapping = mapping
        mapping.add(key, destination: destination)
        udpFlows[key] = flow
        io.statistics.udpSessions += 1
        return true
    }

    /// Datagrams on a mapping's catch-all socket: from a new port of an
    /// address the app talks to (a session towards the app opens), or from
    /// nobody it talks to (filtered). A datagram of a session whose socket
    /// opened meanwhile still arrives here once: it goes to the session.
    func readMapping(_ mapping: UDPMapping, sink: inout TunSink) {
        for _ in 0 ..< 64 {
            guard case let .value((n, sender?))? = try? mapping.socket.receive(into: scratch) else { return }
            guard let (key, isNew) = mapping.session(from: sender) else {
                io.statistics.udpFiltered += 1
                continue
            }
            if isNew {
                // The table has room, and the app has no such session another way.
                guard udpFlows[key] == nil, datagrams.open(key, now: now) else { continue }
                guard openSessionSocket(key, on: mapping, to: sender, sink: &sink) else {
                    datagrams.remove(key)
                    continue
                }
                trace("\(key): UDP: a new port of \(sender.address) answers")
                // In the flow log and `sluice list` as any session, with why no rule decided it.
                beginRecord(key)
                flowRecords[key]?.record.rule = "a new port of an address this UDP port talks to"
                flowRecords[key]?.record.policy = "DIRECT"
                selectForCapture(key, facts: nil)
            }
            let payload = UnsafeRawBufferPointer(scratch.sub(0, n))
            io.statistics.bytesToApp += payload.count
            countBytes(key, down: payload.count)
            datagrams.sendUDP(key, payload: payload, now: now, sink: &sink)
        }
    }

    /// The session `key` ends, its socket with it, and the mapping with its last session.
    func closeUDP(_ key: FlowKey) {
        guard let flow = udpFlows.removeValue(forKey: key) else { return }
        try? epoll.remove(flow.socket.descriptor)
        tokens[flow.token] = nil
        if let mapping = flow.mapping {
            mapping.remove(key)
            closeMappingIfUnused(mapping)
        }
    }

    func closeMappingIfUnused(_ mapping: UDPMapping) {
        guard mapping.isEmpty, udpMappings[mapping.endpoint] === mapping else { return }
        try? epoll.remove(mapping.socket.descriptor)
        udpMappings[mapping.endpoint] = nil
        udpMappingTokens[mapping.token] = nil
    }
}
