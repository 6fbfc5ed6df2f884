internal import HTTP
internal import Relay
internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// One SOCKS5 UDP association (RFC 1928 §7): a socket the client sends its
/// datagrams to (each behind a SOCKS5UDPHeader naming the target), and one
/// socket per family towards the targets. It lives as long as the client's
/// TCP connection.
final class UDPAssociation {
    let relay: Socket
    let relayAddress: SocketAddress
    /// Datagrams are taken only from the TCP client's own address (and from
    /// the port it announced, when it announced one): nobody else may use the relay.
    let clientIP: SysIPAddress
    let announcedPort: UInt16
    /// Where replies go: the source of the client's first accepted datagram.
    var clientAddress: SocketAddress?
    var outboundV4: SocketBox?
    var outboundV6: SocketBox?
    /// Our associations with upstream SOCKS5 proxies, by proxy name (ProxyServer+UpstreamUDP.swift).
    var upstreams: [String: UpstreamAssociation] = [:]
    /// Targets whose datagrams start a QUIC connection, with the name read or being read (ProxyServer+QUIC.swift).
    var quicNames: [ProxyTarget: QUICTargetName] = [:]

    init(relay: consuming Socket, relayAddress: SocketAddress, clientIP: SysIPAddress, announcedPort: UInt16) {
        self.relay = relay
        self.relayAddress = relayAddress
        self.clientIP = clientIP
        self.announcedPort = announcedPort
    }
}

extension ProxyServer {
    /// Room kept in front of a target's datagram for the header it gets on its way to the client.
    static let udpHeaderRoom = 32

    /// UDP ASSOCIATE: binds the relay socket on the address the client reached us at, and answers with it.
    func associate(_ connection: InboundConnection, hint: ProxyTarget) {
        connection.target = hint
        guard let local = connection.client.localAddress else {
            fail(connection, .generalFailure, reason: "UDP ASSOCIATE: no local address")
            return
        }
        let socket: Socket
        do { socket = try Socket(.udp, family: local.address.family) } catch {
            fail(connection, .generalFailure, reason: "UDP ASSOCIATE: \(error)")
            return
        }
        do { try socket.bind(SocketAddress(local.address, port: 0), reuseAddress: false) } catch {
            fail(connection, .generalFailure, reason: "UDP ASSOCIATE: bind: \(error)")
            return
        }
        guard let bound = socket.localAddress else {
            fail(connection, .generalFailure, reason: "UDP ASSOCIATE: no bound address")
            return
        }
        do { try epoll.add(socket.descriptor, events: .readable, token: connection.relayToken) } catch {
            fail(connection, .generalFailure, reason: "UDP ASSOCIATE: epoll: \(error)")
            return
        }
        let announcedPort: UInt16
        switch hint.host {
        case .ipv4, .ipv6: announcedPort = hint.port
        case .domain: announcedPort = 0
        }
        connection.association = UDPAssociation(relay: socket, relayAddress: bound, clientIP: connection.peer.address,
                                                announcedPort: announcedPort)
        _ = connection.toClient.append(connection.socks.reply(for: .succeeded(bound: ProxyTarget(bound.address.wireAddress, port: bound.port))))
        connection.phase = .associated
        connection.deadline = nil
        statistics.associations += 1
        trace("\(connection.description): UDP relay on \(bound)")
    }

    /// Datagrams arrived on one of the association's sockets: from the client
    /// (`family` nil) or from targets.
    func associationReady(_ connection: InboundConnection, from family: SysIPAddress.Family?) {
        guard let association = connection.association else { return }
        if let family {
            guard let box = family == .v4 ? association.outboundV4 : association.outboundV6 else { return }
            fromTargets(box.socket, connection: connection, association: association)
        } else {
            fromClient(connection, association: association)
        }
    }

    func fromClient(_ connection: InboundConnection, association: UDPAssociation) {
        for _ in 0 ..< 32 {
            guard case let .value((n, from))? = try? association.relay.receive(into: scratch), let from else { return }
            guard from.address == association.clientIP,
                  association.announcedPort == 0 || from.port == association.announcedPort else {
                statistics.datagramsDropped += 1
                continue
            }
            if association.clientAddress == nil { association.clientAddress = from }
            guard from == association.clientAddress else {
                statistics.datagramsDropped += 1
                continue
            }
            let datagram = UnsafeRawBufferPointer(scratch.sub(0, n))
            guard let (header, payloadOffset) = try? SOCKS5UDPHeader.parse(datagram) else {
                statistics.datagramsDropped += 1
                continue
            }
            forward(datagram, payloadOffset: payloadOffset, to: header.target, connection: connection, association: association)
        }
    }

    /// One datagram from the client (its header ends at `payloadOffset`),
    /// routed by the rules like a UDP flow: DIRECT goes out (so does a proxy
    /// route without udp-relay, as in the tunnel), a SOCKS5 proxy with
    /// udp-relay gets it through our association with it, REJECT drops it.
    func forward(_ datagram: UnsafeRawBufferPointer, payloadOffset: Int, to target: ProxyTarget, connection: InboundConnection,
                 association: UDPAssociation) {
        let payload = datagram.suffix(from: payloadOffset)
        guard let facts = datagramFacts(datagram, payloadOffset: payloadOffset, to: target, connection: connection, association: association)
        else { return }
        if director.blocksQUIC, interception.ca != nil, let name = facts.domain,
           facts.applicationProtocol == .quic || QUICClientHelloSniffer.mayStart(UnsafeRawBufferPointer(rebasing: datagram[payloadOffset...])),
           director.profile?.mitm.intercepts(host: name, port: target.port) == true
        {
            // As in the tunnel: the client falls back to TCP, whose tunnel is intercepted.
            statistics.datagramsDropped += 1
            trace("\(connection.description): QUIC to \(name) dropped ([MITM] hostname)")
            return
        }
        guard case let .route(route, reason) = director.decide(facts, final: true) else { return }
        switch route.forUDP {
        case .direct:
            break
        case let .proxy(proxy):
            trace("\(connection.description): UDP to \(target) through \(proxy.name) (\(reason))")
            sendThroughUpstream(datagram, payloadCount: payload.count, proxy: proxy, connection: connection, association: association)
            return
        case .refuse, .answer:
            statistics.datagramsDropped += 1
            trace("\(connection.description): UDP to \(target) refused: \(reason)")
            return
        }
        guard let address = udpAddress(for: target, connection: connection) else {
            // A name being resolved: this datagram is lost (UDP senders retry); the next one finds the cache warm.
            statistics.datagramsDropped += 1
            return
        }
        guard let socket = outbound(for: address.family, connection: connection, association: association) else {
            statistics.datagramsDropped += 1
            return
        }
        if case .value? = try? socket.socket.send(payload, to: SocketAddress(address, port: target.port)) {
            statistics.datagramsUp += 1
            connection.bytesUp += payload.count
        } else {
            statistics.datagramsDropped += 1
        }
    }

    func udpAddress(for target: ProxyTarget, connection: InboundConnection) -> SysIPAddress? {
        switch target.host {
        case let .ipv4(a): return .v4(a.value)
        case let .ipv6(a): return .v6(high: a.high, low: a.low)
        case let .domain(name):
            var key = connection.resolverKey
            key.transport = .udp
            return resolver.addressNow(of: name, director: director, key: key, now: now)
        }
    }

    func outbound(for family: SysIPAddress.Family, connection: InboundConnection, association: UDPAssociation) -> SocketBox? {
        if let existing = family == .v4 ? association.outboundV4 : association.outboundV6 { return existing }
        guard let socket = try? Socket(.udp, family: family) else { return nil }
        // Targets' bursts wait here for the loop, as in the tunnel (Tunnel.udpReceiveBuffer).
        socket.setReceiveBuffer(Tunnel.udpReceiveBuffer)
        let box = SocketBox(socket)
        let token = family == .v4 ? connection.upstreamToken : connection.outboundV6Token
        guard (try? epoll.add(box.socket.descriptor, events: .readable, token: token)) != nil else { return nil }
        if family == .v4 { association.outboundV4 = box } else { association.outboundV6 = box }
        return box
    }

    /// Answers from targets go back to the client behind a header naming their source.
    func fromTargets(_ socket: borrowing Socket, connection: InboundConnection, association: UDPAssociation) {
        let room = Self.udpHeaderRoom
        for _ in 0 ..< 32 {
            guard case let .value((n, from))? = try? socket.receive(into: scratch.sub(room, scratch.count - room)), let from else { return }
            guard let client = association.clientAddress else {
                statistics.datagramsDropped += 1
                continue
            }
            let header = SOCKS5UDPHeader(target: ProxyTarget(from.address.wireAddress, port: from.port))
            guard let length = header.length, length <= room,
                  (try? header.emit(into: scratch.sub(room - length, length))) != nil else { continue }
            let datagram = UnsafeRawBufferPointer(scratch.sub(room - length, length + n))
            if case .value? = try? association.relay.send(datagram, to: client) {
                statistics.datagramsDown += 1
                connection.bytesDown += n
            } else {
                statistics.datagramsDropped += 1
            }
        }
    }

    func dropAssociation(_ connection: InboundConnection) {
        guard let association = connection.association else { return }
        try? epoll.remove(association.relay.descriptor)
        if let box = association.outboundV4 { try? epoll.remove(box.socket.descriptor) }
        if let box = association.outboundV6 { try? epoll.remove(box.socket.descriptor) }
        for upstream in Array(association.upstreams.values) { closeUpstreamAssociation(upstream, of: association) }
        connection.association = nil
    }
}
