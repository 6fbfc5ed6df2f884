internal import Capture
internal import Relay
internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// `sluice proxy`'s event loop: local SOCKS5 and HTTP proxy listeners whose
/// clients are routed by the same profile rules as the tunnel's flows. One
/// thread, one epoll, non-blocking everything (like Tunnel, but with sockets
/// on both sides): Relay's server machines read each client's request, the
/// FlowDirector picks DIRECT, an upstream proxy or a refusal, and then bytes
/// move both ways through a bounded buffer per direction.
final class ProxyServer {
    struct Configuration {
        var socksAddress: SocketAddress?
        var httpAddress: SocketAddress?
        var credentials: ProxyCredentials?
        var deadlines = HandshakeDeadlines.default
        /// Per direction and connection: 64 KiB keeps a LAN busy without letting one client hoard memory.
        var bufferSize = 64 * 1024
        /// Clients beyond this are accepted and closed at once, so the listener's backlog cannot pin us.
        var maximumConnections = 2048
        /// How long a refusal or failure reply may take to drain before the connection is cut.
        var closingGrace: Duration = .seconds(5)
        /// How long a kept-alive HTTP client may wait between requests (nginx's default is 75 s).
        var keepAliveIdle: Duration = .seconds(60)
        /// `--sniff`: a tunnel to an address whose rules want a name is answered
        /// first and decided on its first bytes (ProxyServer+Sniff.swift).
        var sniffAddressTargets = false
        /// The profile's dns-server: what the proxy asks for its clients' names; empty, the host's resolvers.
        var resolvers: [IPAddress] = []
        /// Sluice's CA, for [MITM] names (loaded from `caDirectory` when the profile names any).
        var interceptionCA: InterceptionCA?
        var caDirectory: String?
    }

    static let socksToken: UInt64 = 1
    static let httpToken: UInt64 = 2
    static let signalToken: UInt64 = 3
    static let resolverToken: UInt64 = 4
    static let reloadToken: UInt64 = 5
    static let controlToken: UInt64 = 6
    static let ownerToken: UInt64 = 7
    static let bodyRewriteToken: UInt64 = 8
    static let firstConnectionToken: UInt64 = 16

    let configuration: Configuration
    let epoll: Epoll
    let socksListener: SocketBox?
    let httpListener: SocketBox?
    let resolver: HostResolver
    var director = FlowDirector()
    /// Who runs each local client, for owner rules (PROCESS-NAME...).
    var ownerLookup: FlowOwnerLookup?
    /// [Body Rewrite] of large bodies, started with the first one; and the
    /// connections whose held message it is rewriting, by job.
    var bodyRewriteWorker: BodyRewriteWorker?
    var pendingBodyRewrites: [UInt64: InboundConnection] = [:]
    var connections: [UInt64: InboundConnection] = [:]
    /// Connections waiting for the resolver, by their resolver key.
    var resolving: [FlowKey: UInt64] = [:]
    var nextID: UInt64 = 1
    var statistics = ProxyServerStatistics()
    /// MonotonicClock's reading at `now == 0`.
    let origin: Int64
    /// The wall clock (ns since the epoch) at `now == 0`, for HAR's times.
    let wallOrigin: UInt64
    /// `--har FILE`: the plain-HTTP exchanges, each as it finishes.
    var har: HARRecorder?
    /// `--flow-log FILE`: a line per connection and per plain-HTTP request.
    var flowLog: FlowLogWriter?
    /// Our UDP associations with upstream proxies, by their control socket's token (ProxyServer+UpstreamUDP.swift).
    var upstreamAssociations: [UInt64: (connection: UInt64, association: UpstreamAssociation)] = [:]
    var nextUpstreamAssociationToken = ProxyServer.firstUpstreamAssociationToken
    /// Health checks of the profile's fallback and url-test groups (ProxyServer+Health.swift).
    var probes: [UInt64: HealthProbe] = [:]
    var probesAwaitingAddress: [AwaitedProbe] = []
    var nextProbe: UInt64 = 0
    /// The hint about address targets and DOMAIN rules was given (once a run).
    var warnedAboutAddressTargets = false
    /// A control socket is open: connections keep records (rule, route, age) for `GET /flows`.
    var controlWatching = false
    /// The last finished requests and connections, for `GET /requests` (kept while `controlWatching`).
    var recentRequests = RecentRequests()
    /// One read's worth of space.
    let scratch: UnsafeMutableRawBufferPointer
    /// A record's plaintext, while `scratch` holds what was read (ProxyServer+Intercept.swift).
    let plaintextScratch: UnsafeMutableRawBufferPointer
    /// The CA for [MITM] names, and the roots https origins are checked against.
    let interception: Interception
    var debug: Bool { EngineLog.verbose }
    let log: (String) -> Void
    /// Out of descriptors, the listeners are not watched until then (see ProxyServer+Descriptors).
    var listenersPausedUntil: Instant?
    var lastDescriptorWarning: Instant?

    init(configuration: Configuration, log: @escaping (String) -> Void) throws(EngineError) {
        self.configuration = configuration
        self.log = log
        do { epoll = try Epoll() } catch { throw EngineError.system("epoll_create", error) }
        socksListener = try configuration.socksAddress.map { address throws(EngineError) in try Self.listen(on: address) }
        httpListener = try configuration.httpAddress.map { address throws(EngineError) in try Self.listen(on: address) }
        resolver = HostResolver(token: Self.resolverToken, seed: UInt64(ProcessControl.currentID), servers: configuration.resolvers)
        resolver.hostsFile = HostsFile.system()
        do {
            if let socksListener { try epoll.add(socksListener.socket.descriptor, events: .readable, token: Self.socksToken) }
            if let httpListener { try epoll.add(httpListener.socket.descriptor, events: .readable, token: Self.httpToken) }
            for (_, channel) in resolver.channels { try epoll.add(channel.socket.descriptor, events: .readable, token: Self.resolverToken) }
        } catch { throw EngineError.system("epoll_ctl", error) }
        origin = MonotonicClock.now()
        wallOrigin = WallClock.now()
        scratch = .allocate(byteCount: 64 * 1024, alignment: 16)
        plaintextScratch = .allocate(byteCount: 64 * 1024, alignment: 16)
        interception = Interception(ca: configuration.interceptionCA)
    }

    deinit {
        scratch.deallocate()
        plaintextScratch.deallocate()
    }

    static func listen(on address: SocketAddress) throws(EngineError) -> SocketBox {
        let socket: Socket
        do { socket = try Socket(.tcp, family: address.address.family) } catch { throw EngineError.system("socket", error) }
        do { try socket.bind(address) } catch { throw EngineError.system("bind \(address)", error) }
        do { try socket.listen() } catch { throw EngineError.system("listen \(address)", error) }
        return SocketBox(socket)
    }

    var now: Instant {
        Instant(nanoseconds: MonotonicClock.now() &- origin)
    }

    /// What is said unless -q: a connection's failure or refusal, the start
    /// and stop lines (errors of the proxy itself go through `log` always).
    func note(_ text: @autoclosure () -> String) {
        if EngineLog.level >= .normal { log(text()) }
    }

    func trace(_ text: @autoclosure () -> String) {
        if debug { ProcessControl.writeStandardError("sluice: debug: \(now) \(text())\n") }
    }

    /// Adds another descriptor (the stop signals) under `token`.
    func watch(rawDescriptor: Int32, token: UInt64) throws(EngineError) {
        do { try epoll.add(rawDescriptor: rawDescriptor, events: .readable, token: token) } catch {
            throw EngineError.system("epoll_ctl", error)
        }
    }

    /// Runs until `handleOther` (for tokens the server does not own) returns false.
    func run(handleOther: (UInt64) -> Bool) throws(EngineError) {
        var events = Epoll.EventBuffer(capacity: 256)
        var nextSweep = now
        while true {
            let ready: Int
            do { ready = try epoll.wait(into: &events, timeoutMilliseconds: 200) } catch {
                throw EngineError.system("epoll_wait", error)
            }
            for i in 0 ..< ready {
                let event = events[i]
                switch event.token {
                case Self.socksToken: accept(.socks5)
                case Self.httpToken: accept(.http)
                case Self.resolverToken: resolved(resolver.receive(now: now))
                case Self.ownerToken: ownersFound()
                case Self.bodyRewriteToken: bodyRewritesFinished()
                case let token where token >= Self.firstUpstreamAssociationToken:
                    upstreamAssociationReady(token: token, events: event.events)
                case let token where token >= Self.firstProbeToken:
                    if let probe = probes[token] { probeReady(probe, events: event.events) }
                case let token where token >= Self.firstConnectionToken:
                    let id = (token - Self.firstConnectionToken) / 4
                    guard let connection = connections[id] else { continue }
                    switch (token - Self.firstConnectionToken) % 4 {
                    case 0: clientReady(connection, events: event.events)
                    case 1 where connection.association != nil: associationReady(connection, from: .v4)
                    case 1: upstreamReady(connection, events: event.events)
                    case 2: associationReady(connection, from: nil)
                    default: associationReady(connection, from: .v6)
                    }
                default:
                    if !handleOther(event.token) { return }
                }
            }
            // Deadlines are coarse (seconds): a sweep every 200 ms is enough and costs nothing per event.
            let time = now
            if nextSweep <= time {
                nextSweep = time + .milliseconds(200)
                sweep(now: time)
                sweepUpstreamAssociations(now: time)
                sweepHealthChecks()
                resumeListeners(now: time)
            }
        }
    }

    // MARK: Clients

    func accept(_ listener: InboundConnection.Listener) {
        guard let box = listener == .socks5 ? socksListener : httpListener else { return }
        for _ in 0 ..< 64 {
            let accepted: Socket.Accepted?
            do { accepted = try box.socket.accept() } catch {
                statistics.errors += 1
                if error.isDescriptorShortage {
                    pauseListeners(error)
                } else {
                    log("sluice: proxy: accept on \(listener) listener: \(error)")
                }
                return
            }
            guard let accepted else { return }
            statistics.connections += 1
            guard connections.count < configuration.maximumConnections else {
                statistics.errors += 1
                note("sluice: proxy: \(accepted.peer): too many connections (\(connections.count)); closed")
                continue
            }
            // A client that vanished without a word is found the same way.
            accepted.socket.setKeepalive()
            // Urgent bytes stay in the stream both ways, as the tunnel's (Socket.setOutOfBandInline).
            accepted.socket.setOutOfBandInline()
            let id = nextID
            nextID += 1
            let peer = accepted.peer
            let connection = InboundConnection(id: id, client: accepted.socket, peer: peer, listener: listener,
                                               credentials: configuration.credentials, bufferSize: configuration.bufferSize)
            connection.deadline = now + configuration.deadlines.greeting
            do { try epoll.add(connection.client.descriptor, events: .readable, token: connection.clientToken) } catch {
                statistics.errors += 1
                continue
            }
            connection.clientInterest = .readable
            connections[id] = connection
            openRecord(connection)
            trace("\(connection.description): accepted")
            // Searched for while the client shakes hands, so its rules rarely wait.
            startOwnerLookup(connection)
        }
    }

    func clientReady(_ connection: InboundConnection, events: Epoll.Events) {
        if events.contains(.hangup) || events.contains(.error) { connection.clientHungUp = true }
        switch connection.phase {
        case .handshake:
            readHandshake(connection)
        case .relaying, .closing, .associated:
            if connection.phase == .relaying, watchesClientClose(connection) {
                if events.contains(.hangup) || events.contains(.error) {
                    clientLeft(connection)
                    return
                }
                if events.contains(.readHangup) { clientHalfClosed(connection) }
            } else if connection.phase == .relaying, connection.clientReadClosed, events.contains(.error) {
                // A reset after the client's FIN (its probes met one: it is gone): the relay ends.
                abort(connection, reason: "the client went away after its FIN")
                return
            }
            if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) { readClient(connection) }
        case .sniffing:
            readToSniff(connection)
        case .resolving, .connecting, .proxyHandshake, .originTLS:
            // Not reading the client meanwhile; only its failure matters.
            if events.contains(.error) || events.contains(.hangup) {
                abort(connection, reason: "client went away while connecting")
                return
            }
        }
        pump(connection)
    }

    /// Feeds the client's first bytes to the listener's machine until it decides.
    func readHandshake(_ connection: InboundConnection) {
        if connection.clientTLS != nil {
            readInterceptedRequest(connection)
            return
        }
        // A SOCKS5 request is at most ~600 bytes and an HTTP head 16 KiB; the rest waits in the kernel.
        let limit = 20 * 1024
        guard connection.received.count < limit else { return }
        let result: SysResult<Int>
        do { result = try connection.client.read(into: scratch.sub(0, limit - connection.received.count)) } catch {
            abort(connection, reason: "client: \(error)")
            return
        }
        guard case let .value(n) = result else { return }
        if n == 0 {
            trace("\(connection.description): client closed during the handshake")
            finish(connection)
            return
        }
        connection.received += UnsafeRawBufferPointer(scratch.sub(0, n))
        switch connection.listener {
        case .socks5: stepSOCKS(connection)
        case .http: stepHTTP(connection)
        }
    }

    func stepSOCKS(_ connection: InboundConnection) {
        for _ in 0 ..< 8 {
            var machine = connection.socks
            let result = connection.received.withUnsafeBytes { buffer in
                Result { () throws(RelayError) -> SOCKS5ServerHandshake.Action? in try machine.receive(buffer) }
            }
            connection.socks = machine
            let action: SOCKS5ServerHandshake.Action?
            switch result {
            case let .success(value): action = value
            case let .failure(error):
                statistics.handshakeFailures += 1
                note("sluice: proxy: \(connection.peer) SOCKS5: \(error); closed")
                finish(connection)
                return
            }
            switch action {
            case nil:
                return
            case let .send(bytes, consumed)?:
                connection.received.removeFirst(consumed)
                _ = connection.toClient.append(bytes)
                connection.deadline = now + configuration.deadlines.limit(for: connection.socks.stage)
            case let .connect(target, consumed)?:
                connection.received.removeFirst(consumed)
                begin(connection, target: target)
                return
            case let .associate(hint, consumed)?:
                connection.received.removeFirst(consumed)
                associate(connection, hint: hint)
                return
            case let .refuse(bytes, reason)?:
                refuse(connection, bytes: bytes, reason: reason)
                return
            }
        }
    }

    func stepHTTP(_ connection: InboundConnection) {
        let action = connection.received.withUnsafeBytes { connection.http.receive($0) }
        switch action {
        case nil:
            return
        case let .connect(target, consumed)?:
            connection.received.removeFirst(consumed)
            // A kept-alive client may turn to a tunnel: its idle upstream is no use for it.
            dropUpstream(connection)
            begin(connection, target: target)
        case let .forward(target, head, consumed)?:
            connection.received.removeFirst(consumed)
            forward(connection, target: target, head: head)
        case let .refuse(bytes, reason)?:
            refuse(connection, bytes: bytes, reason: reason)
        }
    }

    func refuse(_ connection: InboundConnection, bytes: [UInt8], reason: RelayError) {
        statistics.handshakeFailures += 1
        if reason == .authRejected { statistics.authFailures += 1 }
        noteEnd(connection, .failed, error: "\(reason)")
        note("sluice: proxy: \(connection.peer) \(connection.listener): refused: \(reason)")
        close(connection, answer: bytes)
    }

    // MARK: Routing

    func begin(_ connection: InboundConnection, target: ProxyTarget) {
        connection.target = target
        if mayIntercept(target) {
            // Its ClientHello decides: intercepted, or relayed untouched (ProxyServer+Intercept.swift).
            acceptToSniff(connection)
            return
        }
        let facts = flowFacts(for: connection, target: target)
        switch director.decide(facts, final: false, forHTTP: false) {
        case let .route(route, reason):
            connection.route = reason
            follow(route, connection, target: target)
        case .sniff where configuration.sniffAddressTargets:
            acceptToSniff(connection)
        case .sniff:
            // Decided on the address alone, with precise replies; said once, with the way out.
            if !warnedAboutAddressTargets {
                warnedAboutAddressTargets = true
                note("sluice: proxy: \(connection.peer) asked for \(target), an address: rules that need a name (DOMAIN...) cannot match it; "
                    + "clients that resolve names themselves can send them (socks5h, curl --socks5-hostname), or run with --sniff")
            }
            guard case let .route(route, reason) = director.decide(facts, final: true, forHTTP: false) else { return }
            connection.route = reason
            follow(route, connection, target: target)
        }
    }

    /// Where the rules sent the tunnel: connect, through a proxy or not, or refuse.
    func follow(_ route: FlowRoute, _ connection: InboundConnection, target: ProxyTarget, sniffed: FlowFacts? = nil) {
        trace("\(connection.description): \(route) (\(connection.route))")
        noteRoute(connection, target: target, route: route, reason: connection.route, sniffed: sniffed)
        switch route {
        case .direct:
            connect(connection, host: target.host.description, port: target.port)
        case let .proxy(proxy):
            do { connection.proxyHandshake = try ProxyHandshake(proxy: proxy, target: target) } catch {
                fail(connection, .generalFailure, reason: error.message)
                return
            }
            connect(connection, host: proxy.host, port: proxy.port)
        case .refuse:
            statistics.refusedByRules += 1
            fail(connection, .notAllowed, reason: "refused: \(connection.route)", counted: false)
        case .answer:
            // A tunnel (CONNECT, SOCKS5) has no HTTP to answer in: a refusal.
            statistics.refusedByRules += 1
            fail(connection, .notAllowed, reason: "refused: \(connection.route)", counted: false)
        }
    }

    /// What the rules know of a client's target: an address is the
    /// destination; a name goes in `domain` (source `.host`) with no address,
    /// so DOMAIN rules match and IP-CIDR rules do not pretend to know one.
    func flowFacts(for connection: InboundConnection, target: ProxyTarget, transport: IPProtocol = .tcp) -> FlowFacts {
        var facts = FlowFacts(key: FlowKey(transport: transport, appAddress: connection.peer.address.wireAddress,
                                           appPort: connection.peer.port, destinationAddress: .v4(.any),
                                           destinationPort: target.port))
        switch target.host {
        case let .ipv4(a): facts.key.destinationAddress = .v4(a)
        case let .ipv6(a): facts.key.destinationAddress = .v6(a)
        case let .domain(name):
            facts.domain = name
            facts.domainSource = .host
        }
        if director.requiresOwner { facts.owner = owner(of: connection) }
        return facts
    }

    /// Connects to a host given as an address literal or a name: a [Host]
    /// entry of the profile first, then the host's resolvers (never a
    /// blocking lookup on the loop).
    func connect(_ connection: InboundConnection, host: String, port: UInt16) {
        connection.deadline = now + configuration.deadlines.connect
        if let literal = SysIPAddress(host) {
            open(connection, to: literal, port: port)
            return
        }
        if let address = director.staticAddress(for: host) {
            open(connection, to: address.sysAddress, port: port)
            return
        }
        guard let name = DNSName(host) else {
            fail(connection, .hostUnreachable, reason: "bad host name \(host)")
            return
        }
        connection.pendingName = name
        connection.pendingPort = port
        if let address = resolver.resolve(name, family: .v4, for: connection.resolverKey, now: now) {
            open(connection, to: address.sysAddress, port: port)
        } else {
            connection.phase = .resolving
            resolving[connection.resolverKey] = connection.id
        }
    }

    func resolved(_ answers: [(FlowKey, IPAddress?, DNSType)]) {
        for (key, found, type) in answers {
            guard let id = resolving[key], let connection = connections[id], let name = connection.pendingName else { continue }
            var address = found
            if address == nil, type == .a {
                // No IPv4 address: ask for IPv6 before giving up.
                address = resolver.resolve(name, family: .v6, for: key, now: now)
                if address == nil, resolver.isPending(key) { continue }
            }
            resolving[key] = nil
            if let address {
                open(connection, to: address.sysAddress, port: connection.pendingPort)
            } else {
                fail(connection, .hostUnreachable, reason: "\(name) has no address")
            }
            pump(connection)
        }
    }

    func open(_ connection: InboundConnection, to address: SysIPAddress, port: UInt16) {
        trace("\(connection.description): connecting to \(SocketAddress(address, port: port))")
        connection.phase = .connecting
        let socket: Socket
        do { socket = try Socket(.tcp, family: address.family) } catch {
            if error.isDescriptorShortage { warnOfDescriptorShortage(error) }
            fail(connection, .generalFailure, reason: "socket: \(error)")
            return
        }
        // Relayed connections have no idle timeout; a target that vanished
        // without a word is found by keepalive (the kernel's two hours).
        socket.setKeepalive()
        socket.setOutOfBandInline()
        let result: SysResult<Void>
        do { result = try socket.connect(to: SocketAddress(address, port: port)) } catch {
            fail(connection, Self.relayError(for: error), reason: "connect to \(SocketAddress(address, port: port)): \(error)")
            return
        }
        do { try epoll.add(socket.descriptor, events: .writable, token: connection.upstreamToken) } catch {
            fail(connection, .generalFailure, reason: "epoll: \(error)")
            return
        }
        connection.upstream = SocketBox(socket)
        connection.upstreamAddress = address
        connection.upstreamInterest = .writable
        if case .value = result { upstreamConnected(connection) }
    }

    static func relayError(for error: Errno) -> RelayError {
        switch error {
        case .connectionRefused: return .connectionRefused
        case .hostUnreachable: return .hostUnreachable
        case .networkUnreachable, .networkDown: return .networkUnreachable
        case .timedOut: return .timedOut(.connect)
        default: return .generalFailure
        }
    }


    // MARK: Upstream

    func upstreamReady(_ connection: InboundConnection, events: Epoll.Events) {
        guard let upstream = connection.upstream else { return }
        if events.contains(.hangup) || events.contains(.error) { connection.upstreamHungUp = true }
        switch connection.phase {
        case .connecting:
            // SO_ERROR clears when read: read once.
            if let error = upstream.socket.pendingError() {
                fail(connection, Self.relayError(for: error), reason: "connect: \(error)")
            } else if events.contains(.writable) || events.contains(.hangup) {
                upstreamConnected(connection)
            }
        case .proxyHandshake:
            readProxyHandshake(connection)
        case .originTLS:
            readOriginTLS(connection)
        case .relaying, .closing:
            if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) { readUpstream(connection) }
        case .handshake:
            idleUpstreamStirred(connection)
        case .resolving, .associated, .sniffing:
            return
        }
        pump(connection)
    }

    func upstreamConnected(_ connection: InboundConnection) {
        guard let handshake = connection.proxyHandshake else {
            established(connection, leftover: UnsafeRawBufferPointer(start: nil, count: 0))
            return
        }
        trace("\(connection.description): connected to proxy \(handshake.proxy.name), greeting it")
        connection.phase = .proxyHandshake
        connection.deadline = now + configuration.deadlines.limit(for: handshake.machine.stage)
        guard sendWhole(handshake.start(), to: connection) else {
            fail(connection, .generalFailure, reason: "proxy \(handshake.proxy.name): could not send the greeting")
            return
        }
    }

    /// A handshake message to the upstream, whole (`writeWhole`).
    func sendWhole(_ bytes: [UInt8], to connection: InboundConnection) -> Bool {
        guard let upstream = connection.upstream else { return bytes.isEmpty }
        return writeWhole(bytes, to: upstream)
    }

    func readProxyHandshake(_ connection: InboundConnection) {
        guard let handshake = connection.proxyHandshake, let upstream = connection.upstream else { return }
        // Small reads: whatever follows the handshake must fit the client's fresh buffer.
        let window = scratch.sub(0, 16 * 1024)
        let result: SysResult<Int>
        do { result = try upstream.socket.read(into: window) } catch {
            fail(connection, Self.relayError(for: error), reason: "proxy \(handshake.proxy.name): \(error)")
            return
        }
        guard case let .value(n) = result else { return }
        if n == 0 {
            let failure = handshake.closed()
            fail(connection, failure.relayError ?? Self.relayError(for: failure.refusal), reason: failure.message)
            return
        }
        do throws(ProxyFailure) {
            switch try handshake.receive(UnsafeRawBufferPointer(window.sub(0, n))) {
            case .needMore:
                return
            case let .send(bytes):
                guard sendWhole(bytes, to: connection) else {
                    throw ProxyFailure(refusal: .reset, message: "proxy \(handshake.proxy.name): could not send")
                }
                connection.deadline = now + configuration.deadlines.limit(for: handshake.machine.stage)
            case let .established(leftoverOffset, _):
                trace("\(connection.description): proxy \(handshake.proxy.name) connected to \(handshake.target)")
                connection.proxyHandshake = nil
                established(connection, leftover: UnsafeRawBufferPointer(window.sub(0, n)).suffix(from: leftoverOffset))
            }
        } catch {
            fail(connection, error.relayError ?? Self.relayError(for: error.refusal), reason: error.message)
        }
    }

    static func relayError(for refusal: TCPFlowTable.Refusal) -> RelayError {
        switch refusal {
        case .reset, .drop: return .generalFailure
        case .unreachable(.network): return .networkUnreachable
        case .unreachable: return .hostUnreachable
        }
    }

    /// The path to the target is open: answer the client, then relay.
    func established(_ connection: InboundConnection, leftover: UnsafeRawBufferPointer) {
        if connection.forwarding != nil, connection.upstreamTarget?.tls == true, connection.upstreamTLS == nil {
            // An https origin: Sluice's TLS first; this runs again when it is up.
            startOriginTLS(connection, leftover: Array(leftover))
            return
        }
        let reply: [UInt8]
        switch connection.listener {
        case _ where connection.repliedEarly:
            reply = []
        case .socks5:
            let local = connection.upstream?.socket.localAddress
            let bound = local.map { ProxyTarget($0.address.wireAddress, port: $0.port) } ?? ProxyTarget(host: .ipv4(.any), port: 0)
            reply = connection.socks.reply(for: .succeeded(bound: bound))
        case .http:
            reply = connection.http.reply(for: .succeeded)
        }
        // All of these fit fresh 64 KiB buffers: a reply, one ≤16 KiB read, a ≤16 KiB head and ≤20 KiB of early bytes.
        _ = connection.toClient.append(reply)
        _ = connection.toClient.append(leftover)
        connection.phase = .relaying
        connection.deadline = nil
        // A kept-alive client's later upstreams are the same client relayed.
        if connection.requestsServed == 0 { statistics.relayed += 1 }
        trace("\(connection.description): relaying")
        if connection.forwarding != nil {
            startExchange(connection)
        } else {
            _ = connection.toUpstream.append(connection.received)
            connection.received = []
        }
    }

    /// The connection cannot be made: the client gets its listener's failure reply, then the connection closes.
    func fail(_ connection: InboundConnection, _ error: RelayError, reason: String, counted: Bool = true) {
        if counted { statistics.failed += 1 }
        // A fallback group that uses this proxy learns now, not at its next check.
        if counted, let handshake = connection.proxyHandshake { noteProxyFailure(handshake.proxy.name, reason: reason) }
        note("sluice: proxy: \(connection.peer) → \(connection.target.map { "\($0)" } ?? "?"): \(reason)")
        noteEnd(connection, counted ? Self.status(for: error) : .blocked, error: counted ? reason : nil)
        if connection.repliedEarly {
            // The client was told the tunnel is open: all that is left to say is a reset.
            cut(connection, reason: reason)
            return
        }
        connection.forwarding?.exchange.failure = reason
        connection.forwarding?.exchange.failureKind = Self.errorKind(for: error)
        connection.forwarding?.responses = nil
        let reply: [UInt8]
        switch connection.listener {
        case .socks5: reply = connection.socks.reply(for: .failed(error))
        case .http: reply = connection.http.reply(for: .failed(error))
        }
        dropUpstream(connection)
        close(connection, answer: reply)
    }

    /// Writes `answer`, then closes (after `closingGrace` at most).
    func close(_ connection: InboundConnection, answer: [UInt8]) {
        resolving[connection.resolverKey] = nil
        connection.phase = .closing
        // Everything in the client's buffer now goes, nothing held back.
        connection.forwarding?.heldFrom = nil
        connection.received = []
        if connection.toClientLater.isEmpty { _ = connection.toClient.append(answer) } else { connection.toClientLater.append(answer) }
        connection.clientReadClosed = true
        connection.deadline = now + configuration.closingGrace
    }

    func dropUpstream(_ connection: InboundConnection) {
        guard let upstream = connection.upstream else { return }
        try? epoll.remove(upstream.socket.descriptor)
        connection.upstream = nil
        connection.upstreamTarget = nil
        connection.upstreamAddress = nil
        connection.upstreamInterest = []
        connection.upstreamHungUp = false
        connection.upstreamParked = false
        connection.upstreamReadClosed = false
        connection.upstreamWriteClosed = false
        connection.proxyHandshake = nil
        connection.upstreamTLS = nil
    }

    // MARK: Relaying

    func readClient(_ connection: InboundConnection) {
        if connection.phase == .closing || connection.phase == .associated {
            // A refused client's further bytes are read and dropped, so its close is seen;
            // an association ends with its TCP connection (RFC 1928 §7).
            for _ in 0 ..< 4 {
                let result = try? connection.client.read(into: scratch)
                switch result {
                case .value(let n)? where n > 0:
                    continue
                case .wouldBlock?:
                    return
                case .value?, nil:
                    // EOF or an error: nothing more to read.
                    connection.clientDrained = true
                    if connection.phase == .associated { finish(connection) }
                    return
                }
            }
            return
        }
        if let relay = connection.spliced {
            spliceFromClient(connection, relay)
            return
        }
        if let tls = connection.clientTLS {
            readClientTLS(connection, tls)
            return
        }
        for _ in 0 ..< 4 {
            guard !connection.clientReadClosed, connection.toUpstream.hasRoom, readsClient(connection) else { return }
            let result: SysResult<Int>
            let space = connection.toUpstream.freeSpace
            do { result = try connection.client.read(into: space) } catch {
                abort(connection, reason: "client: \(error)")
                return
            }
            guard case let .value(n) = result else { return }
            noteWebSocket(connection, space, n, fromClient: true)
            if n == 0 {
                connection.clientReadClosed = true
                if let forwarding = connection.forwarding, forwarding.requests != nil, !forwarding.passthrough {
                    abort(connection, reason: "the client closed in the middle of its request")
                }
                return
            }
            connection.toUpstream.commit(n)
            if let forwarding = connection.forwarding, !forwarding.passthrough {
                scanRequest(connection)
                guard connections[connection.id] === connection else { return }
            }
        }
    }

    func readUpstream(_ connection: InboundConnection) {
        guard let upstream = connection.upstream else { return }
        if let relay = connection.spliced {
            spliceFromUpstream(connection, relay)
            return
        }
        defer { scanResponse(connection) }
        if let tls = connection.upstreamTLS {
            readUpstreamTLS(connection, upstream, tls)
            return
        }
        for _ in 0 ..< 4 {
            guard !connection.upstreamReadClosed, upstreamHasRoom(connection) else { return }
            var window = connection.toClient.freeSpace
            if connection.forwarding?.heldFrom != nil {
                window = UnsafeMutableRawBufferPointer(rebasing: window.prefix(connection.toClient.storage.count / 2 - connection.toClient.count))
            }
            let result: SysResult<Int>
            do { result = try upstream.socket.read(into: window) } catch {
                if retryOnFreshUpstream(connection) { return }
                abort(connection, reason: "upstream: \(error)")
                return
            }
            guard case let .value(n) = result else { return }
            if n == 0 {
                connection.upstreamReadClosed = true
                return
            }
            noteWebSocket(connection, window, n, fromClient: false)
            connection.toClient.commit(n)
        }
    }

    /// A plain-HTTP client is read while its request is still coming: its
    /// next request waits in the kernel until this exchange is over.
    func readsClient(_ connection: InboundConnection) -> Bool {
        guard let forwarding = connection.forwarding else { return true }
        if forwarding.passthrough { return connection.received.isEmpty }
        return forwarding.requests != nil && connection.forwardHead == nil && connection.received.isEmpty && connection.toUpstreamLater.isEmpty
    }

    /// Room for the upstream's bytes. While a response head is awaited, half
    /// the buffer stays free (reads stop at the half), so the head, at most
    /// `responseHeadLimit` (a quarter), can grow by its rewrites in place.
    func upstreamHasRoom(_ connection: InboundConnection) -> Bool {
        if let relay = connection.spliced { return relay.down.hasRoom }
        // A response let go whole goes first (`toClientLater`), and one the worker rewrites.
        guard connection.toClientLater.isEmpty, connection.forwarding?.pendingRewrite == nil else { return false }
        return connection.forwarding?.heldFrom == nil ? connection.toClient.hasRoom : connection.toClient.count < connection.toClient.storage.count / 2
    }

    /// Writes what each side owes, passes half-closes on once a buffer drains,
    /// ends the connection when both directions are done, and watches each
    /// socket for what it can do next (reading only into a buffer with room).
    func pump(_ connection: InboundConnection) {
        guard connections[connection.id] === connection else { return }
        if let relay = connection.spliced {
            pumpSpliced(connection, relay)
            return
        }
        // Decrypted bytes that waited for room get no epoll event of their own.
        if connection.phase == .relaying, takeWaitingPlaintext(connection) { return }
        // To the client.
        connection.refillToClient()
        if let tls = connection.clientTLS {
            guard sealToClient(connection, tls) else { return }
        }
        while connection.clientTLS == nil, connection.sendableToClient > 0, !connection.clientWriteClosed {
            let result: SysResult<Int>
            do { result = try connection.client.write(UnsafeRawBufferPointer(rebasing: connection.toClient.readable.prefix(connection.sendableToClient))) } catch {
                abort(connection, reason: "client: \(error)")
                return
            }
            guard case let .value(n) = result, n > 0 else { break }
            connection.sentToClient(n)
            if connection.phase == .relaying { connection.bytesDown += n }
        }
        if connection.phase == .closing {
            if !connection.clientOwed, connection.clientTLS?.records.isEmpty ?? true {
                finish(connection)
                return
            }
        }
        // To the upstream.
        if connection.phase == .relaying, let upstream = connection.upstream {
            if let tls = connection.upstreamTLS {
                guard sealUpstream(connection, upstream, tls) else { return }
            }
            while connection.upstreamTLS == nil, !connection.toUpstream.isEmpty, !connection.upstreamWriteClosed {
                let result: SysResult<Int>
                do { result = try upstream.socket.write(connection.toUpstream.readable) } catch {
                    if retryOnFreshUpstream(connection) {
                        pump(connection)
                        return
                    }
                    abort(connection, reason: "upstream: \(error)")
                    return
                }
                guard case let .value(n) = result, n > 0 else { break }
                connection.sentUpstream(n, now: now)
            }
            if let forwarding = connection.forwarding, !forwarding.passthrough {
                // Plain HTTP: the messages' framing says when an exchange ends, not the sockets' closes.
                if forwarding.requests != nil, connection.forwardHead != nil || !connection.received.isEmpty {
                    // What waits for room goes now that the upstream took some.
                    feedRequest(connection)
                    guard connections[connection.id] === connection else { return }
                }
                if connection.upstreamReadClosed {
                    upstreamClosedDuringExchange(connection)
                    guard connections[connection.id] === connection else { return }
                }
                if connection.phase != .relaying || finishExchangeIfDone(connection) {
                    pump(connection)
                    return
                }
                updateInterest(connection)
                return
            }
            if !connection.received.isEmpty, connection.forwarding?.passthrough == true { feedEarlyBytes(connection) }
            if passHalfCloses(connection, upstream: upstream, upstreamOwed: connection.upstreamOwed,
                              clientOwed: connection.clientOwed) { return }
            spliceIfWorthIt(connection)
        }
        updateInterest(connection)
    }

    /// A FIN passes once nothing is owed in front of it, each direction on
    /// its own; true when both have passed and the connection is finished.
    func passHalfCloses(_ connection: InboundConnection, upstream: SocketBox, upstreamOwed: Bool, clientOwed: Bool) -> Bool {
        if connection.clientReadClosed, !upstreamOwed, !connection.upstreamWriteClosed {
            upstream.socket.shutdown(.write)
            connection.upstreamWriteClosed = true
            // As the tunnel does (`Tunnel.probeClosedApp`): a client gone for
            // good would leave a silent server's connection open forever.
            if !connection.upstreamReadClosed, !connection.clientFinSeen { probeClient(connection) }
        }
        if connection.upstreamReadClosed, !clientOwed, !connection.clientWriteClosed {
            connection.client.shutdown(.write)
            connection.clientWriteClosed = true
        }
        guard connection.upstreamWriteClosed, connection.clientWriteClosed else { return false }
        finish(connection)
        return true
    }

    func updateInterest(_ connection: InboundConnection) {
        var client: Epoll.Events = []
        var upstream: Epoll.Events = []
        switch connection.phase {
        case .handshake:
            client.insert(.readable)
            // An upstream kept for a kept-alive client's next request: its close (or stray bytes) retire it.
            if connection.upstream != nil { upstream.insert(.readable) }
        case .resolving, .connecting, .proxyHandshake, .originTLS:
            if connection.phase == .connecting { upstream.insert(.writable) }
            if connection.phase == .proxyHandshake || connection.phase == .originTLS { upstream.insert(.readable) }
        case .relaying:
            if !connection.clientReadClosed, connection.spliced?.up.hasRoom ?? connection.toUpstream.hasRoom, readsClient(connection) {
                client.insert(.readable)
            } else if watchesClientClose(connection), !connection.clientFinSeen {
                client.insert(.readHangup)
            }
            if !connection.upstreamReadClosed, upstreamHasRoom(connection) { upstream.insert(.readable) }
            if connection.spliced.map({ $0.up.count > 0 }) ?? !connection.toUpstream.isEmpty { upstream.insert(.writable) }
        case .closing, .associated:
            // Reading (and dropping) lets a client's reset or close end the wait early.
            if !connection.clientDrained { client.insert(.readable) }
        case .sniffing:
            if !connection.clientReadClosed, connection.received.count < FlowFacts.sniffLimit { client.insert(.readable) }
        }
        if connection.sendableToClient > 0 || connection.clientTLS?.records.isEmpty == false, !connection.clientWriteClosed { client.insert(.writable) }
        if connection.upstreamTLS?.records.isEmpty == false { upstream.insert(.writable) }
        let rawClient = connection.client.descriptor.rawValue
        connection.clientParked = setInterest(client, current: &connection.clientInterest, parked: connection.clientParked,
                                              hungUp: connection.clientHungUp, descriptor: rawClient, token: connection.clientToken)
        if let box = connection.upstream {
            connection.upstreamParked = setInterest(upstream, current: &connection.upstreamInterest, parked: connection.upstreamParked,
                                                    hungUp: connection.upstreamHungUp, descriptor: box.socket.descriptor.rawValue,
                                                    token: connection.upstreamToken)
        }
    }

    /// Applies `wanted` to a socket's registration; returns whether it is now parked
    /// (out of the epoll set: hung up, and nothing to do on it until a buffer drains).
    func setInterest(_ wanted: Epoll.Events, current: inout Epoll.Events, parked: Bool, hungUp: Bool,
                     descriptor: Int32, token: UInt64) -> Bool {
        if hungUp, wanted.isEmpty {
            if !parked { try? epoll.remove(rawDescriptor: descriptor) }
            current = []
            return true
        }
        if parked {
            try? epoll.add(rawDescriptor: descriptor, events: wanted, token: token)
            current = wanted
            return false
        }
        if wanted != current {
            try? epoll.modify(rawDescriptor: descriptor, events: wanted, token: token)
            current = wanted
        }
        return false
    }

    /// A socket failed mid-stream: both sides are cut (with a RST, so neither
    /// mistakes the cut for a complete transfer).
    func abort(_ connection: InboundConnection, reason: String) {
        statistics.errors += 1
        cut(connection, reason: reason)
    }

    /// Ends a connection with a RST both ways; its flow-log line says why
    /// (unless an earlier word stands).
    func cut(_ connection: InboundConnection, reason: String) {
        trace("\(connection.description): cut: \(reason)")
        noteEnd(connection, .reset, error: reason)
        connection.client.setResetOnClose()
        connection.upstream?.socket.setResetOnClose()
        finish(connection)
    }

    func finish(_ connection: InboundConnection) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        // close_notify first: a response read to the close is whole only with it (RFC 8446 §6.1).
        if let tls = connection.clientTLS, tls.isConnected, !connection.clientWriteClosed { _ = tls.close(connection.client) }
        resolving[connection.resolverKey] = nil
        dropUpstream(connection)
        dropAssociation(connection)
        try? epoll.remove(connection.client.descriptor)
        statistics.bytesUp += connection.bytesUp
        statistics.bytesDown += connection.bytesDown
        recordExchange(connection)
        finishWebSocket(connection)
        closeRecord(connection)
        trace("\(connection.description): ends, \(connection.bytesUp) bytes up, \(connection.bytesDown) down")
    }

    // MARK: Deadlines

    func sweep(now time: Instant) {
        if let deadline = resolver.nextDeadline, deadline <= time {
            for key in resolver.expire(now: time) {
                guard let id = resolving.removeValue(forKey: key), let connection = connections[id] else { continue }
                fail(connection, .hostUnreachable, reason: "no answer for \(connection.pendingName.map { "\($0)" } ?? "?")")
                pump(connection)
            }
        }
        for connection in connections.values {
            if let association = connection.association, !association.quicNames.isEmpty {
                expireQUICWaits(connection, association, now: time)
            }
            guard let deadline = connection.deadline, deadline <= time else { continue }
            switch connection.phase {
            case .handshake where connection.requestsServed > 0 && connection.received.isEmpty && connection.clientOwed:
                // Still taking its last response: not idle yet.
                connection.deadline = time + configuration.keepAliveIdle
            case .handshake where connection.requestsServed > 0 && connection.received.isEmpty:
                // A kept-alive client that sent nothing more: idle, not failing.
                trace("\(connection.description): idle for \(configuration.keepAliveIdle); closed")
                finish(connection)
            case .handshake:
                statistics.handshakeFailures += 1
                noteEnd(connection, .failed, error: "no complete request in time")
                note("sluice: proxy: \(connection.peer) \(connection.listener): no complete request in time; closed")
                finish(connection)
            case .resolving:
                fail(connection, .timedOut(.connect), reason: "timed out resolving \(connection.pendingName.map { "\($0)" } ?? "?")")
                pump(connection)
            case .connecting:
                fail(connection, .timedOut(.connect), reason: "timed out connecting")
                pump(connection)
            case .proxyHandshake:
                let stage = connection.proxyHandshake?.machine.stage ?? .reply
                fail(connection, .timedOut(stage), reason: "proxy \(connection.proxyHandshake?.proxy.name ?? "?"): timed out (\(stage))")
                pump(connection)
            case .originTLS:
                responseFailed(connection, reason: "TLS with \(connection.upstreamTLS?.host ?? "the origin"): no handshake in time")
                pump(connection)
            case .closing:
                abort(connection, reason: "client did not take its answer")
            case .sniffing where !connection.waitedForHello && !connection.clientReadClosed
                && connection.target.map({ target in
                    connection.received.withUnsafeBytes { flowFacts(for: connection, target: target).awaitsRestOfHello($0) }
                }) == true:
                // Part of a ClientHello, the rest held back by a loss: as the tunnel, once.
                connection.waitedForHello = true
                connection.deadline = time + FlowFacts.partialHelloTimeout
            case .sniffing:
                // The first bytes did not say enough in time: the rules decide without them.
                sniffClient(connection, final: true)
                pump(connection)
            case .relaying, .associated:
                continue
            }
        }
    }

    /// Closes every connection (the server is stopping).
    func closeAll() {
        for connection in Array(connections.values) {
            // As in the tunnel's flow log: a connection still open is cut off.
            noteEnd(connection, .reset, error: "Sluice stopped")
            if var forwarding = connection.forwarding, !forwarding.recorded, forwarding.exchange.failure == nil {
                // Its exchange too, as the tunnel records the requests in flight.
                forwarding.exchange.failure = "Sluice stopped"
                forwarding.exchange.failureKind = .other
                connection.forwarding = forwarding
            }
            finish(connection)
        }
    }

    /// Takes a (re)loaded profile: new connections follow it, open ones keep their routes.
    func apply(_ profile: Rules.Profile?, log: (String) -> Void) {
        guard let profile else { return }
        if let old = director.profile, let notice = profile.reloadNotice(from: old, scope: StartOnlySetting.proxy) { log(notice) }
        director = FlowDirector(profile: profile, previous: director)
        EngineLog.follow(profile.general.logLevel)
        interception.skipsVerification = profile.mitm.skipServerCertificateVerification
        if !profile.mitm.isEmpty, interception.ca == nil {
            // A reload that adds [MITM] hostnames: the CA is loaded (or made) now.
            do { interception.ca = try TunnelSession.interceptionCA(profile, directory: configuration.caDirectory, log: log) } catch {
                log("\(error); HTTPS is not intercepted")
            }
        }
        if !profile.mitm.isEmpty { interception.loadTrust(log: log) }
        resolver.routes = ResolverRoutes(profile, system: HostResolver.nameservers())
        for warning in profile.warnings { log(warning.description) }
    }
}

/// What `sluice proxy` did, for the exit summary.
public struct ProxyServerStatistics: Sendable, CustomStringConvertible {
    /// Clients accepted on either listener.
    public var connections = 0
    /// Clients whose target was reached and relayed.
    public var relayed = 0
    /// Clients a profile rule refused (REJECT and friends).
    public var refusedByRules = 0
    /// Plain HTTP requests the profile answered itself: URL Rewrite redirects and rejections, Map Local.
    public var answeredHere = 0
    /// Clients refused by the listener: bad requests, wrong credentials, timeouts.
    public var handshakeFailures = 0
    public var authFailures = 0
    /// Targets or upstream proxies that could not be reached.
    public var failed = 0
    /// Sockets that failed mid-stream, and accept errors.
    public var errors = 0
    public var bytesUp = 0
    public var bytesDown = 0
    /// SOCKS5 UDP associations, and their datagrams each way (dropped: refused, unparsable, or from strangers).
    public var associations = 0
    public var datagramsUp = 0
    public var datagramsDown = 0
    public var datagramsDropped = 0
    /// The profile's [Statistics] tables, when it has any.
    public var requestStatistics: String?
    /// `--har`'s line.
    public var harSummary: String?
    /// `--flow-log`'s line.
    public var flowLogSummary: String?

    public var description: String {
        "proxy: \(connections) connections (\(relayed) relayed, \(refusedByRules) refused by rules, \(answeredHere) answered by the profile, "
            + "\(handshakeFailures) bad or unauthenticated requests (\(authFailures) wrong credentials), \(failed) unreachable), "
            + "\(bytesUp) bytes up, \(bytesDown) bytes down, \(associations) UDP associations (\(datagramsUp) datagrams up, "
            + "\(datagramsDown) down, \(datagramsDropped) dropped), \(errors) errors"
            + (harSummary.map { "\nsluice: " + $0 } ?? "")
            + (flowLogSummary.map { "\nsluice: flow log: " + $0 } ?? "")
            + (requestStatistics.map { "\n" + $0 } ?? "")
    }
}
