internal import Relay
internal import Stack
internal import Sys
internal import Wire

/// UDP through a SOCKS5 proxy (RFC 1928 §7): one UDP ASSOCIATE per app flow.
/// The association's control connection is an ordinary proxy handshake
/// (kept in `tcpFlows` under the UDP flow's key); once the proxy names its
/// relay address, the flow's datagrams go there behind a SOCKS5 UDP header.
extension Tunnel {
    enum UDPRoute: Equatable {
        case direct
        case associate(UpstreamProxy)
        /// A rule rejected the flow: its datagrams are dropped, the first
        /// answered with this ICMP unreachable when there is one (REJECT-RST:
        /// port unreachable, so the app's socket fails at once and a
        /// browser's QUIC attempt falls back to TCP without waiting).
        case reject(UnreachableReason?)
    }

    /// How a new UDP flow goes.
    func udpRoute(for key: FlowKey, facts: FlowFacts) -> UDPRoute {
        if facts.applicationProtocol == .quic, director.blocksQUIC, let domain = facts.domain,
           director.profile?.mitm.intercepts(host: domain, port: key.destinationPort) == true
        {
            // As Surge does: the app falls back to TCP, where its HTTPS is intercepted.
            trace("\(key): QUIC to \(domain) refused ([MITM] hostname)")
            noteDecision(key, route: .refuse(.reset), reason: "[MITM] hostname: QUIC refused so the app uses TCP", facts: facts)
            return .reject(.port)
        }
        guard case let .route(decided, reason) = director.decide(facts, final: true) else { return .direct }
        let route = decided.forUDP
        noteDecision(key, route: route, reason: reason, facts: facts)
        switch route {
        case .direct:
            return .direct
        case let .proxy(proxy):
            trace("\(key): UDP through \(proxy.name) (\(reason))")
            return .associate(proxy)
        case let .refuse(refusal):
            trace("\(key): UDP rejected (\(reason))")
            switch refusal {
            case .reset: return .reject(.port)
            case let .unreachable(why): return .reject(why)
            case .drop: return .reject(nil)
            }
        case .answer:
            // REJECT's HTTP answer has no UDP form: dropped, as the policy table says.
            trace("\(key): UDP rejected (\(reason))")
            return .reject(nil)
        }
    }

    func startAssociation(_ key: FlowKey, through proxy: UpstreamProxy, sink: inout TunSink) {
        associationQueue[key] = []
        let handshake: ProxyHandshake
        do {
            // The client's own UDP address is not known yet: 0.0.0.0:0 asks the proxy to accept any.
            handshake = try ProxyHandshake(proxy: proxy, target: ProxyTarget(host: .ipv4(.any), port: 0), associate: true)
        } catch {
            endAssociation(key, reason: error.message)
            return
        }
        connect(key, toHost: proxy.host, port: proxy.port, handshake: handshake, sink: &sink)
    }

    /// The proxy accepted the association: datagrams go to its relay address.
    func associated(_ control: TCPFlow, proxy: UpstreamProxy, bound: ProxyTarget?, sink: inout TunSink) {
        let key = control.key
        var relay = control.remote
        if let bound, !bound.isUnspecified {
            switch bound.host {
            case let .ipv4(address): relay = SocketAddress(IPAddress.v4(address).sysAddress, port: bound.port)
            case let .ipv6(address): relay = SocketAddress(IPAddress.v6(address).sysAddress, port: bound.port)
            case .domain: break
            }
        } else if let bound, let proxyAddress = control.remote {
            // "0.0.0.0:port": the proxy's own address, at the port it names.
            relay = SocketAddress(proxyAddress.address, port: bound.port)
        }
        guard let relay, let socket = try? Socket(.udp, family: relay.address.family, mark: configuration.mark),
              (try? socket.connect(to: relay)) != nil else {
            endAssociation(key, reason: "proxy \(proxy.name): cannot reach its UDP relay")
            return
        }
        socket.setReceiveBuffer(Self.udpReceiveBuffer)
        let token = nextToken
        nextToken += 1
        let flow = UDPFlow(key: key, token: token, socket: socket)
        flow.relayTarget = proxyTarget(for: key)
        guard (try? epoll.add(flow.socket.descriptor, events: .readable, token: token)) != nil else {
            endAssociation(key, reason: "epoll")
            return
        }
        udpFlows[key] = flow
        tokens[token] = key
        io.statistics.udpSessions += 1
        trace("\(key): UDP relay at \(relay) through \(proxy.name)")
        // The control connection is watched only for its end.
        watch(control, for: [.readable])
        sendHeld(associationQueue.removeValue(forKey: key) ?? [], on: flow, sink: &sink)
    }

    /// The association failed or ended: its datagrams are dropped until the flow goes idle.
    func endAssociation(_ key: FlowKey, reason: String) {
        EngineLog.warning("\(key): \(reason)")
        io.statistics.upstreamErrors += 1
        associationQueue[key] = nil
        if let control = tcpFlows[key] { removeTCP(control) }
        closeUDP(key)
    }
}
