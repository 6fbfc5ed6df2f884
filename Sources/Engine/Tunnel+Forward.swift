internal import Stack
internal import Sys
internal import Wire

/// `--forward [ADDRESS:]PORT:APP-PORT[/udp]`: a service CMD offers inside its
/// namespace, reached from Sluice's side, as pasta's `-t` and `-u` and
/// slirp4netns's port forwarding do. Sluice listens on ADDRESS:PORT
/// (127.0.0.1 unless given) and opens each client's connection through the
/// TUN to APP-PORT on CMD's address, with its own TCP stack (an active open,
/// from the TUN's gateway address). From then on the pair is an ordinary
/// relayed flow: the accepted socket plays the upstream, with the same
/// backpressure both ways. With `/udp`, each client address gets a UDP
/// session of its own toward APP-PORT (from the gateway address, a port per
/// client), and what CMD answers goes back to that client from the
/// forwarded port.
public struct PortForward: Sendable, Equatable, CustomStringConvertible {
    /// Where Sluice listens (an IPv4 or IPv6 literal) and on which port.
    public var host: String
    public var port: UInt16
    public var appPort: UInt16
    /// `/udp`: datagrams rather than connections.
    public var udp = false

    public init(host: String, port: UInt16, appPort: UInt16, udp: Bool = false) {
        self.host = host; self.port = port; self.appPort = appPort; self.udp = udp
    }

    /// `8080:80`, `0.0.0.0:8080:80` or `[::1]:8080:80`, then `/udp` for UDP
    /// (`/tcp`, the default, may be written); nil for anything else.
    public static func parse(_ text: String) -> PortForward? {
        var text = Substring(text)
        var udp = false
        if text.hasSuffix("/udp") {
            udp = true
            text = text.dropLast(4)
        } else if text.hasSuffix("/tcp") {
            text = text.dropLast(4)
        }
        guard var forward = parseAddresses(text) else { return nil }
        forward.udp = udp
        return forward
    }

    static func parseAddresses(_ text: Substring) -> PortForward? {
        guard let colon = text.lastIndex(of: ":"), let appPort = UInt16(text[text.index(after: colon)...]), appPort > 0 else { return nil }
        let front = text[..<colon]
        if let port = UInt16(front), port > 0 { return PortForward(host: "127.0.0.1", port: port, appPort: appPort) }
        guard let second = front.lastIndex(of: ":"), let port = UInt16(front[front.index(after: second)...]), port > 0 else { return nil }
        var host = String(front[..<second])
        if host.hasPrefix("["), host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            return nil // an IPv6 address needs its brackets: "::1:8080:80" could be read two ways
        }
        guard IPAddress(host) != nil else { return nil }
        return PortForward(host: host, port: port, appPort: appPort)
    }

    var listen: SocketAddress { SocketAddress(IPAddress(host)!.sysAddress, port: port) }

    public var description: String { "\(listen) → \(appPort)\(udp ? "/udp" : "")" }
}

/// One `--forward` listener.
final class ForwardListener {
    let socket: Socket
    let forward: PortForward
    let token: UInt64
    /// The app's port was found closed and that was logged; its next answer clears it.
    var reportedClosed = false

    init(socket: consuming Socket, forward: PortForward, token: UInt64) {
        self.socket = socket
        self.forward = forward
        self.token = token
    }
}

extension Tunnel {
    /// Listens for each of `forwards`, toward the app's IPv4 address on the TUN
    /// (exec's and `run --netns`'s namespaces both have NamespaceSetup's).
    func listen(_ forwards: [PortForward]) throws(EngineError) {
        for forward in forwards {
            try listen(forward, app: IPAddress(NamespaceSetup.addressV4)!, gateway: IPAddress(NamespaceSetup.gatewayV4)!)
        }
    }

    /// Listens for `forward`; the app's end is `app`, ours on the TUN `gateway`.
    /// Returns the listener's token.
    @discardableResult
    func listen(_ forward: PortForward, app: IPAddress, gateway: IPAddress) throws(EngineError) -> UInt64 {
        let socket: Socket
        do { socket = try Socket(forward.udp ? .udp : .tcp, family: forward.listen.address.family) } catch { throw EngineError.system("socket", error) }
        do { try socket.bind(forward.listen) } catch { throw EngineError.report("sluice: --forward \(forward): cannot listen on \(forward.listen): \(error)") }
        if !forward.udp {
            do { try socket.listen() } catch { throw EngineError.system("listen \(forward.listen)", error) }
        }
        let token = nextToken
        nextToken += 1
        do { try epoll.add(socket.descriptor, events: .readable, token: token) } catch { throw EngineError.system("epoll_ctl", error) }
        forwardListeners[token] = ForwardListener(socket: socket, forward: forward, token: token)
        forwardAddresses = (app, gateway)
        return token
    }

    /// Stops listening for one forward; connections it made go on.
    func closeForwardListener(_ token: UInt64) {
        guard let listener = forwardListeners.removeValue(forKey: token) else { return }
        try? epoll.remove(listener.socket.descriptor)
    }

    /// A `--forward` listener is ready: connections to accept, or datagrams.
    func forwardReady(_ listener: ForwardListener) {
        if listener.forward.udp { receiveForwarded(listener) } else { acceptForwarded(listener) }
    }

    /// Clients waiting on a `--forward` listener: each gets a connection to the app.
    func acceptForwarded(_ listener: ForwardListener) {
        guard let (app, gateway) = forwardAddresses else { return }
        var sink = TunSink(io: io)
        for _ in 0 ..< 64 {
            let accepted: Socket.Accepted?
            do { accepted = try listener.socket.accept() } catch {
                if error.isDescriptorShortage { socketFailed(error) }
                return
            }
            guard let accepted else { return }
            let peer = accepted.peer
            guard let key = freeForwardKey(.tcp, app: app, appPort: listener.forward.appPort, gateway: gateway) else {
                EngineLog.warning("--forward \(listener.forward): no free port toward the app; \(peer) closed")
                continue
            }
            guard tcp.open(key, now: now, configuration: appTCPConfiguration(for: key), sink: &sink) != nil else {
                EngineLog.warning("--forward \(listener.forward): too many flows; \(peer) closed")
                continue
            }
            let token = nextToken
            nextToken += 1
            let flow = TCPFlow(key: key, token: token, socket: accepted.socket)
            flow.connected = true
            flow.socket.setKeepalive()
            flow.socket.setOutOfBandInline()
            guard (try? epoll.add(flow.socket.descriptor, events: [.readable], token: token)) != nil else {
                tcp.connection(key)?.abort()
                tcp.flush(key, now: now, sink: &sink)
                continue
            }
            flow.interest = [.readable]
            tcpFlows[key] = flow
            tokens[token] = key
            io.statistics.tcpFlows += 1
            beginRecord(key)
            flowRecords[key]?.record.policy = "forward"
            flowRecords[key]?.record.upstream = "\(peer)"
            trace("\(key): forwarded from \(peer) (\(listener.forward))")
        }
    }

    /// A flow key toward the app whose port on our side is free.
    func freeForwardKey(_ transport: IPProtocol, app: IPAddress, appPort: UInt16, gateway: IPAddress) -> FlowKey? {
        for _ in 0 ..< 1024 {
            nextForwardPort = nextForwardPort >= 60999 ? 32768 : nextForwardPort + 1
            let key = FlowKey(transport: transport, appAddress: app, appPort: appPort, destinationAddress: gateway,
                              destinationPort: nextForwardPort)
            switch transport {
            case .udp: if !datagrams.contains(key) { return key }
            default: if tcp.connection(key) == nil, tcpFlows[key] == nil { return key }
            }
        }
        return nil
    }

    /// Datagrams on a `/udp` forward: each client address has a session
    /// toward the app (opened by its first datagram, ended when idle as any
    /// UDP session), and the datagram goes in as if from the gateway.
    func receiveForwarded(_ listener: ForwardListener) {
        guard let (app, gateway) = forwardAddresses else { return }
        var sink = TunSink(io: io)
        for _ in 0 ..< 64 {
            guard case let .value((n, from))? = try? listener.socket.receive(into: scratch), let from else { return }
            guard let key = forwardedClients[from] ?? openForwardedSession(listener, client: from, app: app, gateway: gateway) else { continue }
            let payload = UnsafeRawBufferPointer(scratch.sub(0, n))
            if datagrams.sendUDP(key, payload: payload, now: now, sink: &sink) {
                io.statistics.bytesToApp += n
                countBytes(key, down: n)
            }
        }
    }

    /// A new client of a `/udp` forward: its session toward the app; nil (its datagram dropped) when there is no room.
    func openForwardedSession(_ listener: ForwardListener, client: SocketAddress, app: IPAddress, gateway: IPAddress) -> FlowKey? {
        guard let key = freeForwardKey(.udp, app: app, appPort: listener.forward.appPort, gateway: gateway), datagrams.open(key, now: now) else {
            EngineLog.warning("--forward \(listener.forward): no room for a session from \(client); dropped")
            return nil
        }
        forwardedClients[client] = key
        forwardedSessions[key] = (listener, client)
        io.statistics.udpSessions += 1
        beginRecord(key)
        flowRecords[key]?.record.policy = "forward"
        flowRecords[key]?.record.upstream = "\(client)"
        trace("\(key): forwarded from \(client) (\(listener.forward))")
        return key
    }

    /// The app answered a forwarded client: back to it from the forwarded port.
    func answerForwarded(_ key: FlowKey, payload: UnsafeRawBufferPointer) {
        guard let (listener, client) = forwardedSessions[key] else { return }
        listener.reportedClosed = false
        if case .value? = try? listener.socket.send(payload, to: client) {
            io.statistics.bytesFromApp += payload.count
            countBytes(key, up: payload.count)
        } else {
            io.statistics.upstreamErrors += 1
        }
    }

    /// The app answered a forwarded datagram with ICMP port unreachable. Its
    /// client cannot be told (a UDP socket has no way to pass the error on),
    /// so the user is, once until the app's port answers again.
    func forwardedPortUnreachable(_ key: FlowKey) {
        guard let (listener, client) = forwardedSessions[key] else { return }
        io.statistics.upstreamErrors += 1
        trace("\(key): port unreachable in the app's namespace (from \(client))")
        guard !listener.reportedClosed else { return }
        listener.reportedClosed = true
        EngineLog.warning("--forward \(listener.forward): nothing listens on UDP port \(listener.forward.appPort) in the namespace "
            + "(port unreachable); datagrams from \(client) and others are dropped until something does")
    }

    /// A forwarded session ended (idle, or closed through the control API).
    func forgetForwarded(_ key: FlowKey) {
        guard let (_, client) = forwardedSessions.removeValue(forKey: key) else { return }
        forwardedClients[client] = nil
    }
}
