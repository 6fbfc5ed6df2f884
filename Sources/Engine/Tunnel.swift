internal import Sys
internal import Wire
internal import Stack

/// The event loop that joins the TUN to upstream sockets: one thread, one
/// epoll, non-blocking everything. Packets from the app go through the stack's
/// flow tables; each TCP flow and UDP session gets an upstream socket opened
/// in Sluice's own namespace (DIRECT), and bytes move both ways with
/// backpressure: a slow upstream closes the app's TCP window, a slow app stops
/// reads from the upstream.
final class Tunnel {
    struct Configuration {
        var tcp = TCPFlowTable.Configuration()
        var datagrams = DatagramFlowTable.Configuration()
        /// SO_MARK on upstream sockets (whole-host mode keeps them out of the TUN with it).
        var mark: UInt32?
        /// Addresses (in the app's namespace) that Sluice answers itself rather than relaying.
        var answerPingsLocally = false
        /// Seeded faults between the TUN and the stack, both ways (for testing against real peers).
        var faults: FaultInjector.Plan?
        var faultSeed: UInt64 = 1
        /// The TUN's MTU: bigger datagrams for the app are fragmented first.
        var mtu = 1500
        /// Where the app's DNS queries go (its resolv.conf names them): answered by Sluice.
        var dnsAddresses: [IPAddress] = []
        /// Fake-IP, forward or static answers; nil relays port 53 like any UDP.
        var dns: FakeDNSConfiguration?
        /// Connections to these addresses go to Sluice's own loopback (127.0.0.1 or ::1)
        /// instead: the host-loopback option, off unless asked for.
        var hostLoopbackGateways: [IPAddress] = []
    }

    static let tunToken: UInt64 = 1
    static let signalToken: UInt64 = 2
    static let timerToken: UInt64 = 3
    static let resolverToken: UInt64 = 6
    static let echoV4Token: UInt64 = 7
    static let echoV6Token: UInt64 = 8
    static let firstFlowToken: UInt64 = 16

    let configuration: Configuration
    let io: TunnelIO
    let epoll: Epoll
    let timer: TimerFD
    let tcp: TCPFlowTable
    let datagrams: DatagramFlowTable
    /// Fragmented datagrams from the app are put back together before anything else sees them.
    let fragments = FragmentReassembler()
    /// The DNS Sluice serves to the app, and the resolver it uses for fake-IP flows.
    var dns: FakeDNS?
    let resolver: HostResolver
    /// One raw ICMP socket per family carries every ping flow; replies are
    /// matched back to flows by source address and identifier.
    var echoV4: SocketBox?
    var echoV6: SocketBox?
    /// UDP sessions to fake IPs waiting for their name's real address.
    var udpAwaitingResolution: Set<FlowKey> = []
    let dnsScratch: UnsafeMutableRawBufferPointer
    var tcpFlows: [FlowKey: TCPFlow] = [:]
    var udpFlows: [FlowKey: UDPFlow] = [:]
    var tokens: [UInt64: FlowKey] = [:]
    var nextToken = Tunnel.firstFlowToken
    var statistics: TunnelStatistics { io.statistics }
    let clock = ContinuousClock()
    let origin: ContinuousClock.Instant
    var armedDeadline: Instant?
    /// Flows that packets touched in the current TUN batch: pumped once at the
    /// end of the batch, so ACKs and upstream writes coalesce across segments.
    var touched: [FlowKey] = []
    var inboundFaults: FaultInjector?
    /// SLUICE_DEBUG=1 prints each flow's life on stderr.
    let debug = ProcessControl.environment("SLUICE_DEBUG") != nil

    func trace(_ text: @autoclosure () -> String) {
        if debug { ProcessControl.writeStandardError("sluice: debug: \(now) \(text())\n") }
    }
    /// One packet's worth of space for reading the TUN and for datagram payloads.
    let scratch: UnsafeMutableRawBufferPointer

    init(tun: consuming TunDevice, configuration: Configuration) throws(EngineError) {
        self.configuration = configuration
        io = TunnelIO(tun: tun, mtu: configuration.mtu)
        do {
            epoll = try Epoll()
        } catch { throw EngineError.system("epoll_create", error) }
        do {
            timer = try TimerFD()
        } catch { throw EngineError.system("timerfd_create", error) }
        do {
            try epoll.add(rawDescriptor: io.descriptor, events: .readable, token: Self.tunToken)
            try epoll.add(timer.descriptor, events: .readable, token: Self.timerToken)
        } catch { throw EngineError.system("epoll_ctl", error) }
        tcp = TCPFlowTable(configuration: configuration.tcp)
        datagrams = DatagramFlowTable(configuration: configuration.datagrams)
        dns = configuration.dns.map(FakeDNS.init)
        resolver = HostResolver(token: Self.resolverToken, seed: UInt64(ProcessControl.currentID))
        dnsScratch = .allocate(byteCount: 4096, alignment: 16)
        if let channel = resolver.channel {
            do { try epoll.add(channel.socket.descriptor, events: .readable, token: Self.resolverToken) } catch {
                throw EngineError.system("epoll_ctl", error)
            }
        }
        if let plan = configuration.faults {
            inboundFaults = FaultInjector(plan: plan, seed: configuration.faultSeed)
            io.outboundFaults = FaultInjector(plan: plan, seed: configuration.faultSeed &* 31 &+ 7)
        }
        origin = io.origin
        scratch = .allocate(byteCount: 65536, alignment: 16)
    }

    deinit {
        scratch.deallocate()
        dnsScratch.deallocate()
    }

    var now: Instant {
        let (s, atto) = (clock.now - origin).components
        return Instant(nanoseconds: s * 1_000_000_000 + atto / 1_000_000_000)
    }

    /// Adds another descriptor (the stop signals) under `token`.
    func watch(rawDescriptor: Int32, token: UInt64) throws(EngineError) {
        do { try epoll.add(rawDescriptor: rawDescriptor, events: .readable, token: token) } catch {
            throw EngineError.system("epoll_ctl", error)
        }
    }

    /// Runs until `handle` (called for tokens below `firstFlowToken` that the
    /// tunnel does not own) returns false, or `shouldStop` says so after a wake-up.
    func run(handleOther: (UInt64) -> Bool, shouldStop: () -> Bool) throws(EngineError) {
        var events = Epoll.EventBuffer(capacity: 256)
        while !shouldStop() {
            let ready: Int
            do { ready = try epoll.wait(into: &events, timeoutMilliseconds: 1000) } catch {
                throw EngineError.system("epoll_wait", error)
            }
            for i in 0 ..< ready {
                let event = events[i]
                switch event.token {
                case Self.tunToken:
                    readTun()
                case Self.timerToken:
                    _ = try? timer.readExpirations()
                    armedDeadline = nil
                case Self.resolverToken:
                    resolved(resolver.receive(now: now))
                case Self.echoV4Token, Self.echoV6Token:
                    readEchoReplies(v6: event.token == Self.echoV6Token)
                case let token where token >= Self.firstFlowToken:
                    upstreamReady(token: token, events: event.events)
                default:
                    if !handleOther(event.token) { return }
                }
            }
            fireTimers()
        }
    }

    // MARK: The TUN side

    func readTun() {
        var sink = TunSink(io: io)
        // A bounded batch per wake-up, so upstream sockets get their turn.
        for _ in 0 ..< 256 {
            guard case let .value(n)? = try? io.tun.read(into: scratch), n > 0 else { break }
            io.statistics.packetsFromApp += 1
            let packet = UnsafeRawBufferPointer(scratch.sub(0, n))
            if inboundFaults != nil {
                inboundFaults!.push(Array(packet), now: now)
                continue
            }
            handle(packet, sink: &sink)
        }
        deliverFaulted(sink: &sink)
        pumpTouched(sink: &sink)
    }

    /// One datagram from the app, validated here once; fragments wait for their siblings.
    func handle(_ packet: UnsafeRawBufferPointer, sink: inout TunSink) {
        guard let view = try? IPPacketView(packet) else {
            io.statistics.malformedPackets += 1
            return
        }
        guard view.isFragment else {
            handle(view, sink: &sink)
            return
        }
        switch fragments.insert(view, now: now) {
        case let .complete(datagram):
            datagram.withPacket { handle($0, sink: &sink) }
        case .notAFragment:
            handle(view, sink: &sink)
        case .incomplete:
            break
        case .dropped:
            io.statistics.malformedPackets += 1
        }
    }

    func handle(_ view: IPPacketView, sink: inout TunSink) {
        switch view.upperLayerProtocol {
        case .tcp:
            tcpFromApp(view, sink: &sink)
        case .udp, .icmp, .icmpv6:
            datagramFromApp(view, sink: &sink)
        default:
            io.statistics.malformedPackets += 1
        }
    }

    /// Packets the fault injector releases now, both ways.
    func deliverFaulted(sink: inout TunSink) {
        let time = now
        if inboundFaults != nil {
            for packet in inboundFaults!.pop(now: time) {
                packet.withUnsafeBytes { handle($0, sink: &sink) }
            }
        }
        if io.outboundFaults != nil {
            for packet in io.outboundFaults!.pop(now: time) {
                packet.withUnsafeBytes { sink.write($0) }
            }
        }
    }

    func pumpTouched(sink: inout TunSink) {
        guard !touched.isEmpty else { return }
        let keys = touched
        touched.removeAll(keepingCapacity: true)
        for key in keys {
            if let flow = tcpFlows[key] { pump(flow, sink: &sink) } else { tcp.flush(key, now: now, sink: &sink) }
        }
    }

    func tcpFromApp(_ packet: IPPacketView, sink: inout TunSink) {
        let time = now
        switch tcp.input(packet, now: time, sink: &sink) {
        case let .connectionRequest(key):
            if let destination = realDestination(for: key, sink: &sink) { openUpstream(for: key, to: destination, sink: &sink) }
        case let .segment(key):
            // Pumped once at the end of the batch (pumpTouched), unless the segment owes a duplicate ACK now.
            if tcp.connection(key)?.immediateAckRequired == true { tcp.flush(key, now: time, sink: &sink) }
            if !touched.contains(key) { touched.append(key) }
        case .answered:
            break
        case .dropped(.badChecksum), .dropped(.malformed):
            io.statistics.malformedPackets += 1
        case .dropped:
            break
        }
    }

    /// Lazy accept: the app's SYN waits until the upstream connection succeeds,
    /// so a refused or unreachable destination looks to the app as it would on a real network.
    /// The address to connect to: the destination itself, or, for a fake IP,
    /// its name's real address (nil while the host's resolver is asked; the
    /// flow continues in `resolved`).
    func realDestination(for key: FlowKey, sink: inout TunSink) -> SysIPAddress? {
        if configuration.hostLoopbackGateways.contains(key.destinationAddress) {
            return key.isIPv6 ? .v6(high: 0, low: 1) : .v4(0x7f00_0001)
        }
        guard dns?.pool.contains(key.destinationAddress) == true else { return key.destinationAddress.sysAddress }
        guard let name = dns!.pool.pin(key.destinationAddress, now: now) else {
            // A fake IP nobody asked for (or one recycled since): nothing to connect to.
            refuse(key, reason: .host, sink: &sink)
            return nil
        }
        trace("\(key): fake IP for \(name)")
        // The upstream family need not be the app's: IPv4 first, then IPv6 (in `resolved`).
        return resolver.resolve(name, family: .v4, for: key, now: now)?.sysAddress
    }

    /// The host's resolver answered (or not) for flows waiting on fake IPs.
    func resolved(_ answers: [(FlowKey, IPAddress?, DNSType)]) {
        var sink = TunSink(io: io)
        for (key, found, type) in answers {
            var address = found
            if address == nil, type == .a, let name = dns?.pool.name(for: key.destinationAddress, now: now) {
                // No IPv4 address: ask for IPv6 before giving up.
                address = resolver.resolve(name, family: .v6, for: key, now: now)
                if address == nil, resolver.isPending(key) { continue }
            }
            if key.transport == .tcp {
                if let address { openUpstream(for: key, to: address.sysAddress, sink: &sink) } else { refuse(key, reason: .host, sink: &sink) }
            } else if udpAwaitingResolution.remove(key) != nil, let address {
                openUDP(key, to: address.sysAddress, sink: &sink)
            }
        }
    }

    func refuse(_ key: FlowKey, reason: UnreachableReason, sink: inout TunSink) {
        if key.transport == .tcp {
            io.statistics.tcpRefused += 1
            tcp.refuse(key, with: .unreachable(reason), sink: &sink)
            if dns?.pool.contains(key.destinationAddress) == true { _ = dns!.pool.unpin(key.destinationAddress, now: now) }
        } else {
            udpAwaitingResolution.remove(key)
        }
    }

    func openUpstream(for key: FlowKey, to address: SysIPAddress, sink: inout TunSink) {
        trace("\(key): SYN, connecting upstream to \(address)")
        let socket: Socket
        do {
            socket = try Socket(.tcp, family: address.family, mark: configuration.mark)
        } catch {
            io.statistics.upstreamErrors += 1
            tcp.refuse(key, with: .reset, sink: &sink)
            return
        }
        let result: SysResult<Void>
        do {
            result = try socket.connect(to: SocketAddress(address, port: key.destinationPort))
            trace("\(key): connect \(result)")
        } catch {
            io.statistics.tcpRefused += 1
            tcp.refuse(key, with: Self.refusal(for: error), sink: &sink)
            return
        }
        let token = nextToken
        nextToken += 1
        let flow = TCPFlow(key: key, token: token, socket: socket)
        do { try epoll.add(flow.socket.descriptor, events: [.writable], token: token) } catch {
            tcp.refuse(key, with: .reset, sink: &sink)
            return
        }
        flow.interest = [.writable]
        tcpFlows[key] = flow
        tokens[token] = key
        if case .value = result { upstreamConnected(flow, sink: &sink) }
    }

    /// How an upstream failure reaches the app (issue #4: as a real network would show it).
    static func refusal(for error: Errno) -> TCPFlowTable.Refusal {
        switch error {
        case .connectionRefused: return .reset
        case .hostUnreachable, .timedOut: return .unreachable(.host)
        case .networkUnreachable, .networkDown: return .unreachable(.network)
        default: return .reset
        }
    }

    func upstreamConnected(_ flow: TCPFlow, sink: inout TunSink) {
        trace("\(flow.key): upstream connected, accepting")
        flow.connected = true
        io.statistics.tcpFlows += 1
        // The MSS follows from the TUN's MTU, less IPv4's 20 or IPv6's 40 bytes of header and TCP's 20.
        var tcpConfiguration = configuration.tcp.tcp
        tcpConfiguration.maximumSegmentSize = configuration.mtu - (flow.key.isIPv6 ? 60 : 40)
        guard tcp.accept(flow.key, now: now, configuration: tcpConfiguration, sink: &sink) != nil else {
            removeTCP(flow)
            return
        }
        pump(flow, sink: &sink)
    }

    // MARK: The upstream side

    func upstreamReady(token: UInt64, events: Epoll.Events) {
        guard let key = tokens[token] else { return }
        var sink = TunSink(io: io)
        if let flow = tcpFlows[key] {
            if !flow.connected {
                trace("\(key): connecting, events \(events), error \(flow.socket.pendingError().map { "\($0)" } ?? "none")")
                if let error = flow.socket.pendingError() {
                    io.statistics.tcpRefused += 1
                    tcp.refuse(key, with: Self.refusal(for: error), sink: &sink)
                    removeTCP(flow)
                    return
                }
                guard events.contains(.writable) || events.contains(.hangup) else { return }
                upstreamConnected(flow, sink: &sink)
                return
            }
            if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) {
                readUpstream(flow, sink: &sink)
            }
            if tcpFlows[key] != nil { pump(flow, sink: &sink) }
        } else if let flow = udpFlows[key] {
            readUpstreamDatagrams(flow, sink: &sink)
        }
    }

    /// Upstream bytes go straight into the connection's send ring: one copy, by the kernel.
    func readUpstream(_ flow: TCPFlow, sink: inout TunSink) {
        guard let connection = tcp.connection(flow.key) else { return }
        for _ in 0 ..< 16 {
            guard connection.writableCount > 0, !flow.upstreamClosed else { return }
            var failure: Errno?
            var eof = false
            let n = connection.write { space in
                do throws(Errno) {
                    switch try flow.socket.read(into: space) {
                    case let .value(n):
                        if n == 0 { eof = true }
                        return n
                    case .wouldBlock:
                        return 0
                    }
                } catch {
                    failure = error
                    return 0
                }
            }
            if let failure {
                // ECONNRESET and friends: the app sees a RST, this flow only.
                io.statistics.upstreamErrors += 1
                _ = failure
                connection.abort()
                flow.upstreamClosed = true
                return
            }
            if eof {
                flow.upstreamClosed = true
                connection.shutdownWrite()
                return
            }
            if n == 0 { return }
            io.statistics.bytesToApp += n
            tcp.flush(flow.key, now: now, sink: &sink)
        }
    }

    /// Moves app bytes upstream, passes half-closes both ways, updates what the
    /// socket is watched for, and lets the connection send what it owes.
    func pump(_ flow: TCPFlow, sink: inout TunSink) {
        let time = now
        guard let connection = tcp.connection(flow.key) else {
            removeTCP(flow)
            return
        }
        let events = connection.takeEvents()
        if events.contains(.reset) {
            flow.socket.setResetOnClose()
        }
        var upstreamBlocked = false
        if flow.connected, !flow.upstreamWriteClosed {
            while connection.readableCount > 0 {
                let data = connection.peekReadable()
                guard let result = try? flow.socket.write(data) else {
                    io.statistics.upstreamErrors += 1
                    connection.abort()
                    break
                }
                guard case let .value(n) = result, n > 0 else {
                    upstreamBlocked = true
                    break
                }
                io.statistics.bytesFromApp += n
                connection.consume(n)
            }
            if connection.isReadClosed, connection.readableCount == 0 {
                flow.socket.shutdown(.write)
                flow.upstreamWriteClosed = true
            }
        }
        // Backpressure: watch the socket for reading only while the app's side has room.
        if flow.connected {
            var wanted: Epoll.Events = []
            if !flow.upstreamClosed, connection.writableCount > 0 { wanted.insert(.readable) }
            if upstreamBlocked { wanted.insert(.writable) }
            if wanted != flow.interest {
                try? epoll.modify(flow.socket.descriptor, events: wanted, token: flow.token)
                flow.interest = wanted
            }
        }
        tcp.flush(flow.key, now: time, sink: &sink)
        flow.counters = connection.counters
        let state = connection.state
        if state == .closed || state == .timeWait || (flow.upstreamClosed && flow.upstreamWriteClosed && connection.unacknowledgedCount == 0) {
            if state == .closed || state == .timeWait { removeTCP(flow, keepConnection: state == .timeWait) }
        }
        // More upstream data may be waiting now that the app's side has room again.
        if events.contains(.writable), flow.interest.contains(.readable), !flow.upstreamClosed, tcpFlows[flow.key] != nil {
            readUpstream(flow, sink: &sink)
        }
    }

    func removeTCP(_ flow: TCPFlow, keepConnection: Bool = false) {
        if dns?.pool.contains(flow.key.destinationAddress) == true { _ = dns!.pool.unpin(flow.key.destinationAddress, now: now) }
        trace("\(flow.key): flow ends (\(tcp.connection(flow.key)?.description ?? "gone"))")
        try? epoll.remove(flow.socket.descriptor)
        if let c = tcp.connection(flow.key)?.counters ?? flow.counters {
            io.statistics.retransmissionTimeouts += c.retransmissionTimeouts
            io.statistics.fastRetransmits += c.fastRetransmits
            io.statistics.sackRetransmits += c.sackRetransmits
            io.statistics.goBackRetransmits += c.goBackRetransmits
            io.statistics.tailLossProbes += c.tailLossProbes
        }
        tcpFlows[flow.key] = nil
        tokens[flow.token] = nil
        if !keepConnection, let connection = tcp.connection(flow.key), connection.state != .closed {
            // The connection outlives its socket only in TIME-WAIT.
            connection.abort()
        }
    }

    // MARK: Datagrams

    func datagramFromApp(_ packet: IPPacketView, sink: inout TunSink) {
        let time = now
        switch datagrams.input(packet, now: time, sink: &sink) {
        case let .udp(key, payload, isNew):
            if key.destinationPort == 53, dns != nil, configuration.dnsAddresses.contains(key.destinationAddress) {
                answerDNS(key, payload: payload, sink: &sink)
                return
            }
            if isNew {
                if dns?.pool.contains(key.destinationAddress) == true || configuration.hostLoopbackGateways.contains(key.destinationAddress) {
                    // The first datagrams wait for the name's real address and are dropped
                    // meanwhile: UDP apps retry (DNS, QUIC), and holding them would need a queue.
                    udpAwaitingResolution.insert(key)
                    if let address = realDestination(for: key, sink: &sink) {
                        udpAwaitingResolution.remove(key)
                        openUDP(key, to: address, sink: &sink)
                    }
                } else {
                    openUDP(key, to: key.destinationAddress.sysAddress, sink: &sink)
                }
            }
            guard let flow = udpFlows[key] else { return }
            if (try? flow.socket.send(payload, to: nil)) == nil { io.statistics.upstreamErrors += 1 }
            io.statistics.bytesFromApp += payload.count
        case let .echoRequest(key, sequenceNumber, payload, isNew):
            if isNew { io.statistics.echoFlows += 1 }
            if configuration.answerPingsLocally {
                datagrams.sendEchoReply(key, sequenceNumber: sequenceNumber, payload: payload, now: time, sink: &sink)
            } else {
                sendEcho(key, sequenceNumber: sequenceNumber, payload: payload)
            }
        case .answered:
            break
        case .dropped(.badChecksum), .dropped(.malformed):
            io.statistics.malformedPackets += 1
        case .dropped:
            break
        }
    }

    /// Sends the app's echo request to its destination from Sluice's namespace,
    /// with the app's identifier and sequence number, so the reply can be matched.
    func sendEcho(_ key: FlowKey, sequenceNumber: UInt16, payload: UnsafeRawBufferPointer) {
        let v6 = key.isIPv6
        if (v6 ? echoV6 : echoV4) == nil {
            guard let socket = try? Socket(.rawICMP, family: v6 ? .v6 : .v4, mark: configuration.mark) else {
                io.statistics.upstreamErrors += 1
                return
            }
            let box = SocketBox(socket)
            guard (try? epoll.add(box.socket.descriptor, events: .readable, token: v6 ? Self.echoV6Token : Self.echoV4Token)) != nil else { return }
            if v6 { echoV6 = box } else { echoV4 = box }
        }
        guard let channel = v6 ? echoV6 : echoV4, payload.count <= dnsScratch.count - 8 else { return }
        dnsScratch.sub(8, payload.count).copyMemory(from: payload)
        let written: Int?
        if v6 {
            // The kernel fills in an ICMPv6 raw socket's checksum; the addresses here do not matter.
            written = try? ICMPv6Message.echoRequest(identifier: key.appPort, sequenceNumber: sequenceNumber)
                .emit(into: dnsScratch.sub(0, 8 + payload.count), payloadLength: payload.count, source: .any, destination: .any)
        } else {
            written = try? ICMPv4Message.echoRequest(identifier: key.appPort, sequenceNumber: sequenceNumber)
                .emit(into: dnsScratch.sub(0, 8 + payload.count), payloadLength: payload.count)
        }
        guard written != nil else { return }
        let destination = SocketAddress(key.destinationAddress.sysAddress, port: 0)
        if (try? channel.socket.send(UnsafeRawBufferPointer(dnsScratch.sub(0, 8 + payload.count)), to: destination)) == nil {
            io.statistics.upstreamErrors += 1
        } else {
            io.statistics.bytesFromApp += payload.count
        }
    }

    /// Echo replies from the raw sockets, back to the flows whose request they answer.
    func readEchoReplies(v6: Bool) {
        guard let channel = v6 ? echoV6 : echoV4 else { return }
        var sink = TunSink(io: io)
        for _ in 0 ..< 64 {
            guard case let .value((n, from))? = try? channel.socket.receive(into: scratch), let from else { return }
            var bytes = UnsafeRawBufferPointer(scratch.sub(0, n))
            let identifier: UInt16, sequence: UInt16, data: UnsafeRawBufferPointer
            if v6 {
                guard let icmp = try? ICMPv6View(bytes), case let .echoReply(id, seq) = icmp.message else { continue }
                (identifier, sequence, data) = (id, seq, icmp.payload)
            } else {
                // An IPv4 raw socket delivers the IP header too.
                guard let ip = try? IPv4View(bytes) else { continue }
                bytes = ip.payload
                guard let icmp = try? ICMPv4View(bytes), icmp.verifyChecksum(), case let .echoReply(id, seq) = icmp.message else { continue }
                (identifier, sequence, data) = (id, seq, icmp.payload)
            }
            let source: IPAddress
            switch from.address {
            case let .v4(a): source = .v4(IPv4Address(a))
            case let .v6(high, low): source = .v6(IPv6Address(high: high, low: low))
            }
            let key = FlowKey(transport: v6 ? .icmpv6 : .icmp, appAddress: .v4(.any), appPort: identifier,
                              destinationAddress: source, destinationPort: 0)
            // The app's address is the one part of the key the reply does not carry: find the flow.
            guard let flow = datagrams.echoFlow(destination: key.destinationAddress, identifier: identifier, transport: key.transport) else { continue }
            io.statistics.bytesToApp += data.count
            datagrams.sendEchoReply(flow, sequenceNumber: sequence, payload: data, now: now, sink: &sink)
        }
    }

    /// Sluice's own DNS: fake-IP answers, [Host] entries, or the query relayed
    /// to the host's resolver (forward mode and excluded names).
    func answerDNS(_ key: FlowKey, payload: UnsafeRawBufferPointer, sink: inout TunSink) {
        switch dns!.respond(toMessage: payload, now: now, into: dnsScratch) {
        case let .answer(length):
            datagrams.sendUDP(key, payload: UnsafeRawBufferPointer(dnsScratch.sub(0, length)), now: now, sink: &sink)
        case .forward:
            if udpFlows[key] == nil, let server = resolver.servers.first { openUDP(key, to: server.address, sink: &sink) }
            if let flow = udpFlows[key], (try? flow.socket.send(payload, to: nil)) == nil { io.statistics.upstreamErrors += 1 }
        case .drop:
            break
        }
    }

    func openUDP(_ key: FlowKey, to address: SysIPAddress, sink: inout TunSink) {
        guard let socket = try? Socket(.udp, family: address.family, mark: configuration.mark) else {
            io.statistics.upstreamErrors += 1
            return
        }
        let port = key.destinationPort
        guard (try? socket.connect(to: SocketAddress(address, port: port))) != nil else {
            io.statistics.upstreamErrors += 1
            return
        }
        let token = nextToken
        nextToken += 1
        let flow = UDPFlow(key: key, token: token, socket: socket)
        guard (try? epoll.add(flow.socket.descriptor, events: .readable, token: token)) != nil else { return }
        udpFlows[key] = flow
        tokens[token] = key
        io.statistics.udpSessions += 1
    }

    func readUpstreamDatagrams(_ flow: UDPFlow, sink: inout TunSink) {
        for _ in 0 ..< 64 {
            guard case let .value((n, _))? = try? flow.socket.receive(into: scratch) else { return }
            io.statistics.bytesToApp += n
            datagrams.sendUDP(flow.key, payload: UnsafeRawBufferPointer(scratch.sub(0, n)), now: now, sink: &sink)
        }
    }

    // MARK: Timers

    func fireTimers() {
        let time = now
        var sink = TunSink(io: io)
        deliverFaulted(sink: &sink)
        pumpTouched(sink: &sink)
        if let deadline = tcp.nextDeadline, deadline <= time {
            for key in tcp.poll(now: time, sink: &sink) {
                if let flow = tcpFlows[key] { removeTCP(flow, keepConnection: true) }
            }
            // Connections that timed out or were reset by a timer need their sockets closed.
            // (A flow still connecting upstream has no connection yet: its SYN waits in `pending`.)
            for (key, flow) in tcpFlows where flow.connected && tcp.connection(key) == nil { removeTCP(flow) }
        }
        if let deadline = resolver.nextDeadline, deadline <= time {
            for key in resolver.expire(now: time) { refuse(key, reason: .host, sink: &sink) }
        }
        if let deadline = fragments.nextDeadline, deadline <= time {
            _ = fragments.expire(now: time, sendingTimeExceededTo: &sink)
        }
        if let deadline = datagrams.nextDeadline, deadline <= time {
            for key in datagrams.expire(now: time) {
                if let flow = udpFlows.removeValue(forKey: key) {
                    try? epoll.remove(flow.socket.descriptor)
                    tokens[flow.token] = nil
                }
            }
        }
        // Arm the timer for the next deadline, when it changed.
        // No array here: this runs on every wake-up of the loop.
        func earlier(_ a: Instant?, _ b: Instant?) -> Instant? {
            guard let a else { return b }
            guard let b else { return a }
            return min(a, b)
        }
        let next = earlier(earlier(earlier(tcp.nextDeadline, datagrams.nextDeadline), earlier(fragments.nextDeadline, resolver.nextDeadline)),
                           earlier(inboundFaults?.nextRelease, io.outboundFaults?.nextRelease))
        if next != armedDeadline {
            armedDeadline = next
            if let next {
                let delay = max(next.nanoseconds - now.nanoseconds, 1)
                try? timer.arm(afterNanoseconds: UInt64(delay))
            } else {
                try? timer.disarm()
            }
        }
    }

    /// Closes every flow: RST to the app for TCP (the tunnel is going away), sockets closed.
    func closeAll() {
        var sink = TunSink(io: io)
        for (key, flow) in tcpFlows {
            tcp.connection(key)?.abort()
            tcp.flush(key, now: now, sink: &sink)
            removeTCP(flow, keepConnection: true)
        }
        tcpFlows.removeAll()
        udpFlows.removeAll()
        tokens.removeAll()
    }
}

/// One relayed TCP flow: its upstream socket and what each side has closed.
final class TCPFlow {
    let key: FlowKey
    let token: UInt64
    let socket: Socket
    var connected = false
    /// The upstream sent FIN (or failed): nothing more will come from it.
    var upstreamClosed = false
    /// We passed the app's FIN upstream.
    var upstreamWriteClosed = false
    var interest: Epoll.Events = []
    /// The connection's counters as last seen, for the statistics once it is gone.
    var counters: TCPConnection.Counters?

    init(key: FlowKey, token: UInt64, socket: consuming Socket) {
        self.key = key
        self.token = token
        self.socket = socket
    }
}

/// One relayed UDP session: a connected socket to its destination.
final class UDPFlow {
    let key: FlowKey
    let token: UInt64
    let socket: Socket

    init(key: FlowKey, token: UInt64, socket: consuming Socket) {
        self.key = key
        self.token = token
        self.socket = socket
    }
}

/// Owns the TUN device for the loop and the sink.
final class TunnelIO {
    let tun: TunDevice
    let outgoing: UnsafeMutableRawBufferPointer
    /// When set, packets for the app pass through it before the TUN.
    var outboundFaults: FaultInjector?
    var statistics = TunnelStatistics()
    let origin = ContinuousClock.now
    let mtu: Int
    var fragmentIdentification: UInt32 = 0

    init(tun: consuming TunDevice, mtu: Int) {
        self.tun = tun
        self.mtu = mtu
        outgoing = .allocate(byteCount: 65536 + 128, alignment: 16)
    }

    deinit { outgoing.deallocate() }

    var descriptor: Int32 { tun.descriptor.rawValue }
}

/// Writes each packet the stack emits to the TUN at once. A full TUN queue
/// drops the packet (TCP retransmits it) and counts the drop.
struct TunSink: PacketSink {
    let io: TunnelIO

    mutating func send(capacity: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Int) {
        let n = fill(io.outgoing)
        guard n > 0 else { return }
        let packet = UnsafeRawBufferPointer(io.outgoing.sub(0, n))
        if io.outboundFaults != nil {
            let (s, atto) = (ContinuousClock.now - io.origin).components
            io.outboundFaults!.push(Array(packet), now: Instant(nanoseconds: s * 1_000_000_000 + atto / 1_000_000_000))
            return
        }
        write(packet)
    }

    mutating func write(_ packet: UnsafeRawBufferPointer) {
        if packet.count > io.mtu, let view = try? IPPacketView(packet) {
            // A UDP reply bigger than the TUN's MTU: fragments, as the destination's stack would send them.
            io.fragmentIdentification &+= 1
            var pieces = FragmentSink(io: io)
            switch IPFragmenter.fragment(view, mtu: io.mtu, identification: io.fragmentIdentification, sink: &pieces) {
            case .whole, .fragments: return
            case .refused: break
            }
        }
        switch try? io.tun.write(packet) {
        case .value?:
            io.statistics.packetsToApp += 1
        case .wouldBlock?, nil:
            io.statistics.tunWriteDrops += 1
        }
    }
}

/// Writes each fragment straight to the TUN.
struct FragmentSink: PacketSink {
    let io: TunnelIO

    mutating func send(capacity: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Int) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
        defer { buffer.deallocate() }
        let n = fill(buffer)
        guard n > 0 else { return }
        switch try? io.tun.write(UnsafeRawBufferPointer(buffer.sub(0, n))) {
        case .value?: io.statistics.packetsToApp += 1
        case .wouldBlock?, nil: io.statistics.tunWriteDrops += 1
        }
    }
}

extension IPAddress {
    /// The same address as Sys spells it.
    var sysAddress: SysIPAddress {
        switch self {
        case let .v4(a): return .v4(a.value)
        case let .v6(a): return .v6(high: a.high, low: a.low)
        }
    }
}
