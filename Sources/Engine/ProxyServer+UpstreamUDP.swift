internal import Relay
internal import Stack
internal import Sys
internal import Wire

/// Our own UDP ASSOCIATE with an upstream SOCKS5 proxy (RFC 1928 §7), on
/// behalf of one client's association, for the datagrams the rules send
/// through that proxy (a `socks5` proxy with `udp-relay=true`, as in the
/// tunnel). A client datagram already carries the SOCKS5 UDP header naming
/// its target, and a proxy's reply the header naming its source, which is
/// what our client expects too: both go on unchanged, and names are resolved
/// by the proxy, as for TCP.
final class UpstreamAssociation {
    enum Phase: Equatable {
        /// The control connection's non-blocking connect is under way.
        case connecting
        /// Greeting, authentication, the UDP ASSOCIATE request.
        case handshake
        /// The proxy named its relay: datagrams go to it.
        case ready
        /// Refused or ended; new datagrams for this proxy are dropped until `retryAfter`.
        case failed
    }

    let proxy: UpstreamProxy
    let handshake: ProxyHandshake
    /// The TCP connection that keeps the association alive; closed when it fails.
    var control: SocketBox?
    /// Connected to the proxy's relay once it is known.
    var relay: SocketBox?
    var phase = Phase.connecting
    /// Datagrams (header included) waiting for the association, a few at most.
    var queue: [[UInt8]] = []
    let controlToken: UInt64
    let relayToken: UInt64
    /// When the connect or the handshake gives up.
    var deadline: Instant?
    var retryAfter: Instant?
    /// Where the proxy's address came from, for the relay address "0.0.0.0:port".
    let proxyAddress: SysIPAddress

    init(proxy: UpstreamProxy, handshake: ProxyHandshake, control: SocketBox, proxyAddress: SysIPAddress,
         controlToken: UInt64, relayToken: UInt64) {
        self.proxy = proxy
        self.handshake = handshake
        self.control = control
        self.proxyAddress = proxyAddress
        self.controlToken = controlToken
        self.relayToken = relayToken
    }

    static let queueLimit = 16
    /// A proxy that refused or dropped the association is asked again after this.
    static let retryInterval: Duration = .seconds(5)
}

extension ProxyServer {
    /// Tokens of upstream associations start here (far above any connection's four).
    static let firstUpstreamAssociationToken: UInt64 = 1 << 56

    /// A client's datagram (`datagram`: header and payload) for a target the
    /// rules send through `proxy`: sent on the association with it, which is
    /// made on first use (the datagram waits for it).
    func sendThroughUpstream(_ datagram: UnsafeRawBufferPointer, payloadCount: Int, proxy: UpstreamProxy,
                             connection: InboundConnection, association: UDPAssociation) {
        var upstream = association.upstreams[proxy.name]
        if let existing = upstream, existing.phase == .failed, let retry = existing.retryAfter, retry <= now {
            closeUpstreamAssociation(existing, of: association)
            upstream = nil
        }
        if upstream == nil {
            upstream = openUpstreamAssociation(proxy, connection: connection, association: association)
        }
        guard let upstream else {
            statistics.datagramsDropped += 1
            return
        }
        switch upstream.phase {
        case .ready:
            sendUpstream(datagram, payloadCount: payloadCount, on: upstream, connection: connection)
        case .connecting, .handshake:
            guard upstream.queue.count < UpstreamAssociation.queueLimit else {
                statistics.datagramsDropped += 1
                return
            }
            upstream.queue.append(Array(datagram))
        case .failed:
            statistics.datagramsDropped += 1
        }
    }

    func sendUpstream(_ datagram: UnsafeRawBufferPointer, payloadCount: Int, on upstream: UpstreamAssociation,
                      connection: InboundConnection) {
        guard let relay = upstream.relay, case .value? = try? relay.socket.write(datagram) else {
            statistics.datagramsDropped += 1
            return
        }
        statistics.datagramsUp += 1
        connection.bytesUp += payloadCount
    }

    /// Starts the control connection; nil (the datagram is dropped) when the
    /// proxy's address is still being looked up or no socket can be had.
    func openUpstreamAssociation(_ proxy: UpstreamProxy, connection: InboundConnection,
                                 association: UDPAssociation) -> UpstreamAssociation? {
        // Its own resolver key: the connection's targets' lookups use port 0.
        var key = connection.resolverKey
        key.transport = .udp
        key.destinationPort = 1
        guard let address = resolver.addressNow(of: proxy.host, director: director, key: key, now: now) else { return nil }
        let handshake: ProxyHandshake
        do {
            // Our relay socket's address is not known yet: 0.0.0.0:0 asks the proxy to accept any (§7).
            handshake = try ProxyHandshake(proxy: proxy, target: ProxyTarget(host: .ipv4(.any), port: 0), associate: true)
        } catch {
            note("sluice: proxy: \(connection.peer) UDP through \(proxy.name): \(error.message)")
            return nil
        }
        guard let socket = try? Socket(.tcp, family: address.family) else { return nil }
        let box = SocketBox(socket)
        let controlToken = nextUpstreamAssociationToken
        nextUpstreamAssociationToken += 2
        let upstream = UpstreamAssociation(proxy: proxy, handshake: handshake, control: box, proxyAddress: address,
                                           controlToken: controlToken, relayToken: controlToken + 1)
        upstreamAssociations[controlToken] = (connection.id, upstream)
        association.upstreams[proxy.name] = upstream
        upstream.deadline = now + configuration.deadlines.connect
        let destination = SocketAddress(address, port: proxy.port)
        trace("\(connection.description): UDP association with \(proxy.name) at \(destination)")
        // A refusal can come at once (loopback): it fails the association as a later one would, said once.
        let result: SysResult<Void>
        do { result = try box.socket.connect(to: destination) } catch {
            failUpstreamAssociation(upstream, connection: connection, reason: "connect to \(destination): \(error)")
            return upstream
        }
        guard (try? epoll.add(box.socket.descriptor, events: .writable, token: controlToken)) != nil else {
            failUpstreamAssociation(upstream, connection: connection, reason: "epoll")
            return upstream
        }
        if case .value = result { upstreamAssociationConnected(upstream, connection: connection) }
        return upstream
    }

    /// One of an upstream association's sockets is ready.
    func upstreamAssociationReady(token: UInt64, events: Epoll.Events) {
        let controlToken = token & ~1
        guard let (id, upstream) = upstreamAssociations[controlToken], let connection = connections[id] else { return }
        if token == upstream.relayToken {
            fromUpstreamRelay(upstream, connection: connection)
            return
        }
        switch upstream.phase {
        case .connecting:
            if let error = upstream.control?.socket.pendingError() {
                failUpstreamAssociation(upstream, connection: connection,
                                        reason: "connect to \(SocketAddress(upstream.proxyAddress, port: upstream.proxy.port)): \(error)")
            } else if events.contains(.writable) || events.contains(.hangup) {
                upstreamAssociationConnected(upstream, connection: connection)
            }
        case .handshake:
            readUpstreamAssociationHandshake(upstream, connection: connection)
        case .ready:
            // The control connection carries nothing more: any read is its end (§7).
            let result = try? upstream.control?.socket.read(into: scratch.sub(0, 512))
            if case .wouldBlock? = result { return }
            if case let .value(n)? = result, n > 0 { return }
            failUpstreamAssociation(upstream, connection: connection, reason: "the proxy closed the association")
        case .failed:
            return
        }
    }

    func upstreamAssociationConnected(_ upstream: UpstreamAssociation, connection: InboundConnection) {
        upstream.phase = .handshake
        upstream.deadline = now + configuration.deadlines.limit(for: upstream.handshake.machine.stage)
        guard let control = upstream.control else { return }
        try? epoll.modify(control.socket.descriptor, events: .readable, token: upstream.controlToken)
        guard writeWhole(upstream.handshake.start(), to: control) else {
            failUpstreamAssociation(upstream, connection: connection, reason: "could not send the greeting")
            return
        }
    }

    /// A handshake message goes out whole: it is small and the socket just connected.
    func writeWhole(_ bytes: [UInt8], to box: SocketBox) -> Bool {
        guard !bytes.isEmpty else { return true }
        let result = bytes.withUnsafeBytes { try? box.socket.write($0) }
        guard case let .value(n)? = result, n == bytes.count else { return false }
        return true
    }

    func readUpstreamAssociationHandshake(_ upstream: UpstreamAssociation, connection: InboundConnection) {
        guard let control = upstream.control else { return }
        let window = scratch.sub(0, 4096)
        let result: SysResult<Int>
        do { result = try control.socket.read(into: window) } catch {
            failUpstreamAssociation(upstream, connection: connection, reason: "\(error)")
            return
        }
        guard case let .value(n) = result else { return }
        guard n > 0 else {
            failUpstreamAssociation(upstream, connection: connection, reason: upstream.handshake.closed().message)
            return
        }
        do throws(ProxyFailure) {
            switch try upstream.handshake.receive(UnsafeRawBufferPointer(window.sub(0, n))) {
            case .needMore:
                return
            case let .send(bytes):
                guard writeWhole(bytes, to: control) else {
                    throw ProxyFailure(refusal: .reset, message: "proxy \(upstream.proxy.name): could not send")
                }
                upstream.deadline = now + configuration.deadlines.limit(for: upstream.handshake.machine.stage)
            case let .established(_, bound):
                upstreamAssociationEstablished(upstream, bound: bound, connection: connection)
            }
        } catch {
            failUpstreamAssociation(upstream, connection: connection, reason: error.message)
        }
    }

    /// The proxy named its relay: "0.0.0.0:port" (or none) means its own address at that port.
    func upstreamAssociationEstablished(_ upstream: UpstreamAssociation, bound: ProxyTarget?, connection: InboundConnection) {
        var relayAddress = SocketAddress(upstream.proxyAddress, port: bound?.port ?? upstream.proxy.port)
        if let bound, !bound.isUnspecified {
            switch bound.host {
            case let .ipv4(a): relayAddress = SocketAddress(IPAddress.v4(a).sysAddress, port: bound.port)
            case let .ipv6(a): relayAddress = SocketAddress(IPAddress.v6(a).sysAddress, port: bound.port)
            case .domain: break
            }
        }
        guard let socket = try? Socket(.udp, family: relayAddress.address.family) else {
            failUpstreamAssociation(upstream, connection: connection, reason: "no UDP socket")
            return
        }
        let box = SocketBox(socket)
        guard (try? box.socket.connect(to: relayAddress)) != nil,
              (try? epoll.add(box.socket.descriptor, events: .readable, token: upstream.relayToken)) != nil else {
            failUpstreamAssociation(upstream, connection: connection, reason: "cannot reach its UDP relay at \(relayAddress)")
            return
        }
        upstream.relay = box
        upstream.phase = .ready
        upstream.deadline = nil
        trace("\(connection.description): UDP relay of \(upstream.proxy.name) at \(relayAddress)")
        let waiting = upstream.queue
        upstream.queue = []
        for datagram in waiting {
            let payloadCount = datagram.withUnsafeBytes { (try? SOCKS5UDPHeader.parse($0)).map { $0.payloadOffset } }
                .map { datagram.count - $0 } ?? 0
            datagram.withUnsafeBytes { sendUpstream($0, payloadCount: payloadCount, on: upstream, connection: connection) }
        }
    }

    /// The proxy's replies go to the client as they came: each already names
    /// its source behind the SOCKS5 UDP header. Ones that do not parse, or
    /// are fragments, are dropped.
    func fromUpstreamRelay(_ upstream: UpstreamAssociation, connection: InboundConnection) {
        guard let relay = upstream.relay, let association = connection.association else { return }
        for _ in 0 ..< 32 {
            guard case let .value(n)? = try? relay.socket.read(into: scratch) else { return }
            let datagram = UnsafeRawBufferPointer(scratch.sub(0, n))
            guard let client = association.clientAddress, let (_, payloadOffset) = try? SOCKS5UDPHeader.parse(datagram) else {
                statistics.datagramsDropped += 1
                continue
            }
            if case .value? = try? association.relay.send(datagram, to: client) {
                statistics.datagramsDown += 1
                connection.bytesDown += n - payloadOffset
            } else {
                statistics.datagramsDropped += 1
            }
        }
    }

    /// The association could not be made or ended: said once, its waiting
    /// datagrams dropped, and new ones too until the retry interval has passed.
    func failUpstreamAssociation(_ upstream: UpstreamAssociation, connection: InboundConnection, reason: String) {
        guard upstream.phase != .failed else { return }
        note("sluice: proxy: \(connection.peer) UDP through \(upstream.proxy.name): \(reason); its datagrams are dropped")
        statistics.errors += 1
        statistics.datagramsDropped += upstream.queue.count
        upstream.queue = []
        upstream.phase = .failed
        upstream.deadline = nil
        upstream.retryAfter = now + UpstreamAssociation.retryInterval
        closeSockets(of: upstream)
    }

    /// Closing a socket takes it out of the epoll set; removing it first says so.
    func closeSockets(of upstream: UpstreamAssociation) {
        if let control = upstream.control { try? epoll.remove(control.socket.descriptor) }
        if let relay = upstream.relay { try? epoll.remove(relay.socket.descriptor) }
        upstream.control = nil
        upstream.relay = nil
    }

    func closeUpstreamAssociation(_ upstream: UpstreamAssociation, of association: UDPAssociation) {
        closeSockets(of: upstream)
        upstreamAssociations[upstream.controlToken] = nil
        association.upstreams[upstream.proxy.name] = nil
    }

    /// Connects and handshakes that ran out of time.
    func sweepUpstreamAssociations(now time: Instant) {
        guard !upstreamAssociations.isEmpty else { return }
        for (id, upstream) in Array(upstreamAssociations.values) {
            guard let deadline = upstream.deadline, deadline <= time, let connection = connections[id] else { continue }
            failUpstreamAssociation(upstream, connection: connection, reason: "timed out (\(upstream.phase == .connecting ? "connect" : "handshake"))")
        }
    }
}
