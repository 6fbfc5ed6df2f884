internal import Stack
internal import Sys
internal import Wire

/// Direct UDP goes out the way a well-behaved NAT sends it (RFC 4787):
/// every session of one app address and port, in one family, shares one
/// unconnected upstream socket, so every destination sees the app from the
/// same address and port (endpoint-independent mapping, REQ-1). A peer's
/// STUN-learned address then holds for the others, as ICE needs; with a
/// socket per session each destination saw another port, as behind a
/// symmetric NAT. A datagram from a new port of an address the app already
/// talks to opens a session of its own towards the app (address-dependent
/// filtering, REQ-8's choice for when security matters): a TFTP server's
/// transfer port, a game server's second socket. Datagrams from addresses
/// the app never sent to are dropped, as a NAT's filter drops them.
///
/// Sessions through a SOCKS5 relay keep a connected socket each (the
/// relay's), as do ping sockets.
struct UDPEndpoint: Hashable {
    var appAddress: IPAddress
    var appPort: UInt16
    var family: SysIPAddress.Family
}

/// The sessions that share a socket: which real address and port each talks to.
final class UDPSessions {
    let endpoint: UDPEndpoint
    private(set) var byDestination: [SocketAddress: FlowKey] = [:]
    private(set) var destinations: [FlowKey: SocketAddress] = [:]
    /// Each address the sessions talk to: how many do, and the address the
    /// app knows it by (a fake IP, for a name's real address).
    private(set) var peers: [SysIPAddress: (sessions: Int, appFacing: IPAddress)] = [:]

    init(_ endpoint: UDPEndpoint) { self.endpoint = endpoint }

    var isEmpty: Bool { destinations.isEmpty }
    var anyKey: FlowKey? { destinations.keys.first }

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
    /// A direct UDP session to `address`: on its app endpoint's shared socket, opened with the first.
    func openUDP(_ key: FlowKey, to address: SysIPAddress, sink: inout TunSink) {
        let endpoint = UDPEndpoint(appAddress: key.appAddress, appPort: key.appPort, family: address.family)
        let flow: UDPFlow
        if let shared = udpPorts[endpoint] {
            flow = shared
        } else {
            let socket: Socket
            do { socket = try Socket(.udp, family: address.family, mark: configuration.mark) } catch {
                socketFailed(error)
                return
            }
            // A server's burst of small datagrams filled the default buffer (208 KB of
            // kernel memory, about 300 of them) before the loop read it, where the app's
            // own socket, without Sluice, would have held them: half of a 2,000-datagram
            // burst was lost. Memory is taken only for what waits.
            socket.setReceiveBuffer(Self.udpReceiveBuffer)
            let queuesErrors = socket.setReceiveErrors()
            guard let opened = watchedFlow(key, socket: socket) else { return }
            opened.queuesErrors = queuesErrors
            opened.sessions = UDPSessions(endpoint)
            udpPorts[endpoint] = opened
            flow = opened
        }
        flow.sessions?.add(key, destination: SocketAddress(address, port: key.destinationPort))
        udpFlows[key] = flow
        io.statistics.udpSessions += 1
    }

    /// A datagram on a shared socket from a new port of an address the app
    /// talks to: a session towards the app, on the same socket. False when the
    /// table has no room, or the app has that session already another way.
    func openInboundUDP(_ key: FlowKey, from sender: SocketAddress, on flow: UDPFlow) -> Bool {
        guard udpFlows[key] == nil, let sessions = flow.sessions, datagrams.open(key, now: now) else { return false }
        sessions.add(key, destination: sender)
        udpFlows[key] = flow
        io.statistics.udpSessions += 1
        trace("\(key): UDP: a new port of \(sender.address) answers")
        return true
    }

    /// The session `key` ends; its socket closes with the last session on it.
    func closeUDP(_ key: FlowKey) {
        guard let flow = udpFlows.removeValue(forKey: key) else { return }
        if let sessions = flow.sessions {
            sessions.remove(key)
            if let other = sessions.anyKey {
                // The socket's wake-ups go on naming a session that lives.
                if tokens[flow.token] == key { tokens[flow.token] = other }
                return
            }
            udpPorts[sessions.endpoint] = nil
        }
        try? epoll.remove(flow.socket.descriptor)
        tokens[flow.token] = nil
    }
}
