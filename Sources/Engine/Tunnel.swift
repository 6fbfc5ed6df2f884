internal import HTTP
internal import Sys
internal import Wire
internal import Stack
internal import Capture
internal import Relay
internal import Rules

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
        /// The TUN's interface index when it lives in Sluice's own namespace
        /// (whole-host mode): the raw ICMP sockets ignore what arrives there.
        var tunInterfaceIndex: UInt32?
        /// Addresses (in the app's namespace) that Sluice answers itself rather than relaying.
        var answerPingsLocally = false
        /// Seeded faults between the TUN and the stack, both ways (for testing against real peers).
        var faults: FaultInjector.Plan?
        var faultSeed: UInt64 = 1
        /// The TUN's MTU: bigger datagrams for the app are fragmented first.
        var mtu = 1500
        /// Where the app's DNS queries go (its resolv.conf names them): answered by Sluice.
        var dnsAddresses: [IPAddress] = []
        /// The resolvers Sluice itself asks (forward mode, DIRECT flows to
        /// names): the profile's dns-server; empty, the host's resolv.conf.
        var resolvers: [IPAddress] = []
        /// Every query to port 53 that enters the TUN is answered by Sluice,
        /// whatever its address (whole-host mode: the host's resolv.conf names its own servers).
        var hijackDNS = false
        /// Fake-IP, forward or static answers; nil relays port 53 like any UDP.
        var dns: FakeDNSConfiguration?
        /// Connections to these addresses go to Sluice's own loopback (127.0.0.1 or ::1)
        /// instead: the host-loopback option, off unless asked for.
        var hostLoopbackGateways: [IPAddress] = []
        /// The longest the loop polls for events before it sleeps (BusyPollWindow); 0 never polls.
        var busyPollMicroseconds = 0
        /// Sluice's CA, for [MITM] hosts (loaded from `caDirectory` when the profile names any).
        var interceptionCA: InterceptionCA?
        /// `--ca-dir`; nil: `InterceptionCA.defaultDirectory`.
        var caDirectory: String?
    }

    static let tunToken: UInt64 = 1
    static let signalToken: UInt64 = 2
    static let timerToken: UInt64 = 3
    static let resolverToken: UInt64 = 6
    static let echoV4Token: UInt64 = 7
    static let echoV6Token: UInt64 = 8
    static let ownerToken: UInt64 = 11
    static let bodyRewriteToken: UInt64 = 12
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
    /// The TTL or hop limit of the app's datagram being relayed, which its
    /// upstream socket sends with (Tunnel+HopLimit.swift).
    var appHopLimit: UInt8 = 64
    /// The hop limit of a flow's first datagrams while they wait (for the
    /// name's address, the owner): a traceroute by name's first probe.
    var heldHopLimits: [FlowKey: UInt8] = [:]
    /// SYNs whose TTL is below the usual, until their connect (traceroute -T).
    var synHopLimits: [FlowKey: UInt8] = [:]
    /// Without CAP_NET_RAW: a ping socket per ping flow (Tunnel+PingSockets.swift).
    var echoThroughPingSockets = false
    var pingSockets: [FlowKey: UDPFlow] = [:]
    /// The kernel refused a ping socket (ping_group_range): said once.
    var pingSocketsRefused = false
    /// UDP sessions to fake IPs waiting for their name's real address, with
    /// their first datagrams (at most `heldDatagramLimit`), sent once it is known.
    var udpAwaitingResolution: [FlowKey: [[UInt8]]] = [:]
    var lastResolverWarning: Instant?
    var lastTableFullWarning: Instant?
    /// Pings to fake IPs (Tunnel+EchoNames.swift): the real address, the
    /// flow a reply from it answers, and the request that waits for the name.
    var echoRealAddresses: [FlowKey: IPAddress] = [:]
    /// Ping flows a rule rejected, until they go idle (Tunnel+EchoRules).
    var rejectedEchoFlows: [FlowKey: EchoRejection] = [:]
    var echoFlowsByRealAddress: [EchoRoute: FlowKey] = [:]
    var echoAwaitingResolution: [FlowKey: (sequenceNumber: UInt16, payload: [UInt8])] = [:]
    let dnsScratch: UnsafeMutableRawBufferPointer
    /// A SOCKS5 UDP header and one datagram.
    let relayScratch: UnsafeMutableRawBufferPointer
    /// UDP flows whose SOCKS5 association is being set up, with the datagrams that wait for it.
    var associationQueue: [FlowKey: [[UInt8]]] = [:]
    /// New flows waiting for their owner's process (`ownersFound`): a TCP
    /// flow's SYN waits in the stack's table, a UDP flow's first datagrams here.
    var awaitingOwner: [FlowKey: [[UInt8]]] = [:]
    /// How many datagrams a UDP flow that waits (for its owner, for its
    /// proxy's association, for the rest of its QUIC ClientHello) may hold;
    /// later ones are dropped, as a network would.
    static let heldDatagramLimit = 16
    /// New UDP flows whose QUIC ClientHello spans datagrams, held until it is read (Tunnel+QUIC.swift).
    var awaitingName: [FlowKey: NameWait] = [:]
    /// Names the DNS answers Sluice relays give real addresses: the last word for a flow that names itself no other way.
    var answerNames = DNSAnswerNames()
    var tcpFlows: [FlowKey: TCPFlow] = [:]
    /// The profile's decisions; replaced whole on reload.
    var director = FlowDirector()
    /// Set by `exec` and `run`: who opened each flow, for owner rules.
    var ownerLookup: FlowOwnerLookup?
    /// [Body Rewrite] of large bodies, started with the first one; and the
    /// sessions whose held message it is rewriting, by job.
    var bodyRewriteWorker: BodyRewriteWorker?
    var pendingBodyRewrites: [UInt64: HTTPSession] = [:]
    /// Accepted flows whose first bytes the rules wait for: what each waits
    /// for, and when it gives up waiting (Tunnel+Sniff.swift).
    var sniffing: [FlowKey: SniffWait] = [:]
    /// Accepted flows that Sluice answers itself: the bytes still to write.
    var answering: [FlowKey: PendingAnswer] = [:]
    /// DNS over TCP to Sluice's DNS address (Tunnel+DNSStream.swift), and their resolver sockets' tokens.
    var dnsStreams: [FlowKey: DNSStream] = [:]
    var dnsStreamTokens: [UInt64: FlowKey] = [:]
    /// `--forward` listeners by token (Tunnel+Forward.swift), the app's and our
    /// addresses on the TUN for their connections, and the last port used on our side.
    var forwardListeners: [UInt64: ForwardListener] = [:]
    /// `--forward auto` (Tunnel+AutoForward.swift).
    var autoForward: AutoForward?
    var forwardAddresses: (app: IPAddress, gateway: IPAddress)?
    var nextForwardPort: UInt16 = 32767
    /// `/udp` forwards' sessions: the app's side by client, and the client (and its listener) by session.
    var forwardedClients: [SocketAddress: FlowKey] = [:]
    var forwardedSessions: [FlowKey: (listener: ForwardListener, client: SocketAddress)] = [:]
    /// Every open flow's record (the control API's list), written to the flow log when it ends.
    var flowRecords: [FlowKey: OpenFlowRecord] = [:]
    var nextConnectionID: UInt64 = 0
    /// `--flow-log FILE`: one JSON line per connection and per HTTP request.
    var flowLog: FlowLogWriter?
    /// The control API lists bytes per flow: counted only when someone can look.
    var controlWatching = false
    /// The last finished requests and connections, for `GET /requests` (kept while `controlWatching`).
    var recentRequests = RecentRequests()
    /// Wall-clock nanoseconds at `now == 0`.
    var wallOrigin: UInt64 = 0
    /// Idle kept-alive connections to HTTP forward proxies, by proxy name, and by token.
    var proxyPool: [String: [TCPFlow]] = [:]
    var pooledTokens: [UInt64: TCPFlow] = [:]
    /// Health checks of proxy-group members under way, by epoll token.
    var probes: [UInt64: HealthProbe] = [:]
    var probesAwaitingAddress: [AwaitedProbe] = []
    /// `--har FILE`: HTTP-mode exchanges, written when Sluice stops.
    var har: HARRecorder? {
        didSet { director.recordsHTTP = har != nil }
    }
    /// Flows relayed in HTTP mode (the profile rewrites, mocks or records HTTP).
    var httpSessions: [FlowKey: HTTPSession] = [:]
    /// The CA for [MITM] hosts and the roots https origins are checked against.
    let interception: Interception
    /// TCP flows holding a pin on their fake IP's mapping (released exactly once, in `releasePin`).
    var pinned: Set<FlowKey> = []
    /// Flows connecting to a proxy or shaking hands with it, and when the current stage gives up.
    var handshakeDeadlines: [FlowKey: Instant] = [:]
    /// Intercepted sessions whose TLS handshake (the app's, then each
    /// origin's) is under way, and when it gives up (Tunnel+Intercept.swift).
    var tlsHandshakeDeadlines: [FlowKey: Instant] = [:]
    let deadlines = HandshakeDeadlines.default
    /// Flows waiting for a name's address (a fake IP's, or a proxy's) before connecting.
    var awaitingAddress: [FlowKey: PendingConnect] = [:]
    var udpFlows: [FlowKey: UDPFlow] = [:]
    /// Direct sessions' mappings, by app endpoint and by their catch-all
    /// socket's token (Tunnel+UDPPorts.swift).
    var udpMappings: [UDPEndpoint: UDPMapping] = [:]
    var udpMappingTokens: [UInt64: UDPMapping] = [:]
    var tokens: [UInt64: FlowKey] = [:]
    var nextToken = Tunnel.firstFlowToken
    /// When `socketFailed` last said that descriptors ran out.
    var lastDescriptorWarning: Instant?
    var statistics: TunnelStatistics { io.statistics }
    /// The counters and the profile's request statistics, for the exit summary.
    var finalStatistics: TunnelStatistics {
        var result = io.statistics
        result.requestStatistics = director.statisticsSummary
        if let ownerLookup, ownerLookup.lookups > 0 {
            // How often an owner rule had less to test than it wanted: programs gone before they were found.
            result.owners = "owners: \(ownerLookup.lookups) flows looked up, \(ownerLookup.unknown) not found (the program or its socket gone)"
        }
        if !director.groups.isEmpty {
            // Each group's choice and its members' health, as the checks last saw them.
            result.groups = director.groups.keys.sorted().compactMap { director.groups[$0]?.description }.joined(separator: "\n")
        }
        if let har {
            result.capture = (result.capture.map { $0 + "\n" } ?? "") + har.finish()
        }
        if let flowLog {
            let written = flowLog.close()
            result.capture = (result.capture.map { $0 + "\n" } ?? "") + "flow log: \(written)"
        }
        if inboundFaults != nil || io.outboundFaults != nil {
            // What the injector did, both ways: what a rehearsal of a bad link cost.
            var total = FaultInjector.Counters()
            for counters in [inboundFaults?.counters, io.outboundFaults?.counters].compactMap({ $0 }) {
                total.dropped += counters.dropped; total.duplicated += counters.duplicated
                total.reordered += counters.reordered; total.corrupted += counters.corrupted
                total.overflowed += counters.overflowed
            }
            result.capture = (result.capture.map { $0 + "\n" } ?? "")
                + "faults: \(total.dropped) dropped, \(total.duplicated) duplicated, \(total.reordered) reordered, \(total.corrupted) corrupted"
                + (configuration.faults?.bitsPerSecond != nil ? ", \(total.overflowed) over the rate's 200 ms queue" : "")
        }
        if let recorder = io.recorder {
            let capture = recorder.close()
            // Added to the HAR's and the flow log's lines, not in their place.
            result.capture = (result.capture.map { $0 + "\n" } ?? "") + "capture: \(capture.packetsCaptured) packets written, \(capture.packetsFilteredOut) filtered out, \(capture.packetsDropped) dropped (writer behind), \(capture.filesRotated) rotations"
                + (recorder.perFlowDirectory != nil ? ", \(capture.flowFilesOpened) flow files" : "")
                + (recorder.selectsFlows ? ", \(capture.packetsNotSelected) left out of flows no capture rule chose" : "")
                + (capture.failure.map { "; error: \($0)" } ?? "")
        }
        return result
    }
    /// MonotonicClock's reading at `now == 0`.
    let origin: Int64
    var armedDeadline: Instant?
    /// Flows that packets touched in the current TUN batch: pumped once at the
    /// end of the batch, so ACKs and upstream writes coalesce across segments.
    var touched: [FlowKey] = []
    /// Flows whose last short upstream read waits for what follows it
    /// (`ShortReadHold`), and when the first of them must go.
    var heldFlows: [TCPFlow] = []
    var heldDeadline: Int64 = .max
    /// `touched`'s twin: `pumpTouched` swaps the two, so that taking the batch's
    /// keys neither copies nor allocates (a copy would share the buffer, and
    /// emptying `touched` would then allocate a new one every batch).
    var pumping: [FlowKey] = []
    var inboundFaults: FaultInjector?
    /// SLUICE_DEBUG=1 prints each flow's life on stderr.
    var debug: Bool { EngineLog.verbose }

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
        resolver = HostResolver(token: Self.resolverToken, seed: UInt64(ProcessControl.currentID), mark: configuration.mark,
                                servers: configuration.resolvers)
        if resolver.servers.isEmpty {
            // Every name would fail without a word (glibc would try 127.0.0.1; Sluice's own namespace may have nothing there).
            EngineLog.warning("no nameserver in /etc/resolv.conf: names Sluice resolves fail (add one, or set [General] dns-server)")
        }
        dnsScratch = .allocate(byteCount: 4096, alignment: 16)
        relayScratch = .allocate(byteCount: 65536 + 512, alignment: 16)
        for (_, channel) in resolver.channels {
            do { try epoll.add(channel.socket.descriptor, events: .readable, token: Self.resolverToken) } catch {
                throw EngineError.system("epoll_ctl", error)
            }
        }
        if let plan = configuration.faults {
            inboundFaults = FaultInjector(plan: plan, seed: configuration.faultSeed)
            io.outboundFaults = FaultInjector(plan: plan, seed: configuration.faultSeed &* 31 &+ 7)
        }
        origin = io.origin
        interception = Interception(ca: configuration.interceptionCA)
        scratch = .allocate(byteCount: 65536, alignment: 16)
        now = Instant(nanoseconds: MonotonicClock.now() &- origin)
        wallOrigin = WallClock.now() &- UInt64(max(now.nanoseconds, 0))
    }

    deinit {
        scratch.deallocate()
        dnsScratch.deallocate()
        relayScratch.deallocate()
    }

    /// The loop's time, read once per wake-up (and again before timers are
    /// armed): everything one wake-up handles happens at one instant, as
    /// the stack's deterministic tests assume, and the clock is not read
    /// several times per packet.
    private(set) var now: Instant = .zero

    /// Reads the clock into `now`.
    func tick() {
        now = Instant(nanoseconds: MonotonicClock.now() &- origin)
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
        acceptChecksumOffload()
        var events = Epoll.EventBuffer(capacity: 256)
        var poll = BusyPollWindow(maximumMicroseconds: configuration.busyPollMicroseconds)
        // What a hold kept back goes before the loop's caller closes flows.
        defer { flushHeld(force: true) }
        while !shouldStop() {
            let ready = try waitForEvents(into: &events, poll: &poll)
            tick()
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
                    deliverRelayedAnswers()
                case Self.echoV4Token, Self.echoV6Token:
                    readEchoReplies(v6: event.token == Self.echoV6Token)
                case Self.ownerToken:
                    ownersFound()
                case Self.bodyRewriteToken:
                    bodyRewritesFinished()
                case let token where token >= Self.firstFlowToken:
                    upstreamReady(token: token, events: event.events)
                default:
                    if !handleOther(event.token) { return }
                }
            }
            flushHeld(force: false)
            fireTimers()
        }
    }

    /// Lets the app's kernel leave the TCP and UDP checksums of what it sends
    /// us uncomputed (TUN_F_CSUM): we terminate every TCP connection and relay
    /// UDP payloads, so no packet of the app's goes anywhere as it came, and
    /// a checksum over bytes that never left the machine proves nothing. The
    /// payload is then read once fewer by each side (the app's kernel's sum,
    /// our check). Not with a capture, which must show real checksums, nor
    /// with fault injection, whose corruption must fail the check.
    func acceptChecksumOffload() {
        guard io.tun.virtioHeaderLength > 0, io.recorder == nil, inboundFaults == nil else { return }
        // Every kernel since 2.6.27 takes it; one that refused would keep
        // sending complete checksums, which are checked as before.
        _ = try? io.tun.setOffloads(.checksum)
    }

    /// Waits for the next events: first by polling for `poll`'s window, then
    /// asleep in epoll_wait (a second at most, so `shouldStop` is asked).
    /// Flows touched outside a TUN batch (`touched` not empty) are pumped
    /// by the next `fireTimers`: epoll only looks then.
    private func waitForEvents(into events: inout Epoll.EventBuffer, poll: inout BusyPollWindow) throws(EngineError) -> Int {
        do {
            if !touched.isEmpty { return try epoll.wait(into: &events, timeoutMilliseconds: 0) }
            // No read is held without polling (`ShortReadHold.shouldHold`).
            guard poll.maximum > 0 else { return try epoll.wait(into: &events, timeoutMilliseconds: 1000) }
            let start = MonotonicClock.now()
            // A held read makes the loop poll for its window even when its own is closed.
            if poll.current > 0 || !heldFlows.isEmpty {
                let deadline = start &+ poll.current
                repeat {
                    let ready = try epoll.wait(into: &events, timeoutMilliseconds: 0)
                    if ready > 0 {
                        poll.observe(idle: MonotonicClock.now() &- start, caught: true)
                        return ready
                    }
                    // A held read's window passed: the loop sends it (`flushHeld`).
                    if !heldFlows.isEmpty, MonotonicClock.now() >= heldDeadline { return 0 }
                    // Polling takes only CPU time nobody else on this CPU wants:
                    // a runnable app or server goes first.
                    ProcessControl.yieldProcessor()
                    // Held reads keep the loop polling past its window, for theirs at most.
                } while MonotonicClock.now() < deadline || !heldFlows.isEmpty
            }
            // Nothing waits in a hold through a sleep.
            flushHeld(force: true)
            let ready = try epoll.wait(into: &events, timeoutMilliseconds: 1000)
            poll.observe(idle: MonotonicClock.now() &- start, caught: false)
            return ready
        } catch {
            throw EngineError.system("epoll_wait", error)
        }
    }

    // MARK: The TUN side

    func readTun() {
        var sink = TunSink(io: io)
        // A bounded batch per wake-up, so upstream sockets get their turn.
        for _ in 0 ..< 256 {
            // With a capture on, the packet is read straight into the capture's
            // ring (one copy fewer per packet), when the ring has room.
            let lent = io.recorder?.reserve(maximum: scratch.count)
            let buffer = lent ?? scratch
            var vouched = false
            guard case let .value(n)? = try? io.tun.read(into: buffer, checksumVouchedFor: &vouched), n > 0 else { break }
            io.statistics.packetsFromApp += 1
            let packet = UnsafeRawBufferPointer(buffer.sub(0, n))
            if lent != nil {
                io.recorder!.commit(length: n, outbound: false, timestamp: WallClock.now())
            } else {
                io.recorder?.record(packet, outbound: false)
            }
            if inboundFaults != nil {
                inboundFaults!.push(Array(packet), now: now)
                continue
            }
            handle(packet, checksumVouchedFor: vouched, sink: &sink)
        }
        deliverFaulted(sink: &sink)
        pumpTouched(sink: &sink)
    }

    /// One datagram from the app, validated here once; fragments wait for
    /// their siblings. `checksumVouchedFor`: the TUN said the app's kernel
    /// left the TCP or UDP checksum to us (`acceptChecksumOffload`).
    func handle(_ packet: UnsafeRawBufferPointer, checksumVouchedFor: Bool = false, sink: inout TunSink) {
        guard var view = try? IPPacketView(packet) else {
            io.statistics.malformedPackets += 1
            return
        }
        view.upperLayerChecksumVouchedFor = checksumVouchedFor
        guard view.isFragment else {
            handle(view, sink: &sink)
            return
        }
        switch fragments.insert(view, now: now) {
        case let .complete(datagram):
            datagram.withPacket { handle($0, sink: &sink) }
        case .notAFragment:
            handle(view, sink: &sink)
        case .incomplete, .dropped(.duplicate):
            // A duplicate fragment is the network's doing, not a malformed packet.
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
        // Pumping may touch flows again (into the emptied `touched`).
        swap(&touched, &pumping)
        defer { pumping.removeAll(keepingCapacity: true) }
        for key in pumping {
            if !httpSessions.isEmpty, httpSessions[key] != nil {
                pumpHTTP(key, sink: &sink)
            } else if let flow = tcpFlows[key] {
                pump(flow, sink: &sink)
            } else if sniffing[key] != nil {
                sniff(key, final: false, sink: &sink)
            } else if answering[key] != nil {
                pumpAnswer(key, sink: &sink)
            } else if !dnsStreams.isEmpty, dnsStreams[key] != nil {
                pumpDNSStream(key, sink: &sink)
            } else {
                tcp.flush(key, now: now, sink: &sink)
            }
        }
    }

    /// The most bytes a flow may hold for `tcpFromApp` to send them upstream at once.
    static let eagerDrainLimit = 16 * 1024

    /// The segment's PSH flag (the table validated the header already).
    static func pushed(_ packet: IPPacketView) -> Bool {
        let segment = packet.payload
        return segment.count > 13 && TCPFlags(rawValue: segment[13]).contains(.psh)
    }

    func tcpFromApp(_ packet: IPPacketView, sink: inout TunSink) {
        let time = now
        let input = tcp.input(packet, now: time, sink: &sink)
        for key in tcp.takeEvictedPending() { pendingGaveWay(key, sink: &sink) }
        for key in tcp.takeEvictedConnections() { connectionGaveWay(key, sink: &sink) }
        switch input {
        case let .connectionRequest(key):
            // A SYN with a TTL of its own (traceroute -T) keeps it upstream (Tunnel+HopLimit.swift).
            let hopLimit = Self.hopLimit(of: packet)
            if hopLimit < Self.defaultHopLimit { synHopLimits[key] = hopLimit }
            startTCP(key, sink: &sink)
        case .refusedFull:
            io.statistics.tableFullRefusals += 1
            warnTableFull("TCP connections", limit: tcp.configuration.maximumFlows,
                          rule: "new connections are refused (a RST): every flow in it is live")
        case let .segment(key):
            // Pumped once at the end of the batch (pumpTouched), unless the segment owes a duplicate ACK now.
            let first = !touched.contains(key)
            if let connection = tcp.connection(key) {
                if connection.immediateAckRequired {
                    // Held bytes ride on this ACK, as in `keepsHold`: the hold ends
                    // here, neither joined nor expired (it stayed counted until its
                    // window passed, and the flow then held fewer reads).
                    if !heldFlows.isEmpty, let flow = tcpFlows[key], flow.held { releaseHold(flow) }
                    tcp.flush(key, connection: connection, now: time, sink: &sink)
                }
                // A small message (a request: the end of an app's write, PSH, the
                // flow's first segment in this batch, little data) goes upstream at
                // once: the rest of the batch, and the TUN read that finds it empty,
                // would otherwise stand between the app and its answer. Bulk data
                // waits for the batch's end (one write for many segments); so do the
                // ACK and everything else.
                if first, Self.pushed(packet), connection.readableCount > 0, connection.readableCount <= Self.eagerDrainLimit,
                   httpSessions.isEmpty || httpSessions[key] == nil,
                   let flow = tcpFlows[key], flow.connected, flow.handshake == nil, !flow.upstreamWriteClosed {
                    _ = drainToUpstream(flow, connection)
                }
            }
            if first { touched.append(key) }
        case .answered:
            break
        case .dropped(.badChecksum), .dropped(.malformed):
            io.statistics.malformedPackets += 1
        case .dropped:
            break
        }
    }

    // MARK: Deciding a new TCP flow

    /// What the flow's destination says before any byte: a fake IP's name, or a [Host] name.
    func facts(for key: FlowKey) -> FlowFacts {
        var facts = FlowFacts(key: key)
        if let name = dns?.pool.name(for: key.destinationAddress, now: now) {
            facts.domain = name.description
            facts.domainSource = .dns
        }
        if director.requiresOwner { facts.owner = flowRecords[key]?.owner }
        return facts
    }

    /// A SYN: the rules decide now, or once the app's first bytes are in.
    func startTCP(_ key: FlowKey, sink: inout TunSink) {
        if isDNSQuery(key) {
            startDNSStream(key, sink: &sink)
            return
        }
        if dns?.pool.contains(key.destinationAddress) == true, !pin(key) {
            // A fake IP nobody asked for (or one recycled since): nothing to connect to.
            refuse(key, reason: .host, sink: &sink)
            return
        }
        beginRecord(key)
        if director.requiresOwner, !ownerKnown(key) {
            // The SYN waits in the table while the process is searched for (`ownersFound`).
            awaitingOwner[key] = []
            return
        }
        decideNewTCP(key, sink: &sink)
    }

    /// A new TCP flow's decision, once what it shows at its SYN is known.
    func decideNewTCP(_ key: FlowKey, sink: inout TunSink) {
        var known = facts(for: key)
        // A server-speaks-first flow is decided now (FlowDirector): a relayed answer's name is all it will have.
        if FlowDirector.serverSpeaksFirst.contains(key.destinationPort) { known = withAnswerName(known) }
        switch director.decide(known, final: false) {
        case let .route(route, reason):
            trace("\(key): \(route) (\(reason))")
            noteDecision(key, route: route, reason: reason)
            follow(route, for: key, sink: &sink)
        case .sniff:
            // Accept-first: the app talks to Sluice until its first bytes say enough to decide.
            trace("\(key): accepted to sniff its first bytes")
            guard acceptApp(key, sink: &sink) else { return }
            sniffing[key] = SniffWait(stage: .handshake, deadline: now + FlowFacts.sniffTimeout)
        }
    }

    /// How long a flow REJECT-DROP ended after accepting it stays unanswered
    /// (`TCPFlowTable.silence`): past an app's usual timeouts, after which
    /// its next retransmission meets a RST.
    static let dropSilence: Duration = .seconds(300)

    /// Names failed because no resolver answered: said on stderr (at most every
    /// 10 s), since the apps only see the name fail.
    func warnUnansweredResolvers() {
        guard !resolver.unanswered.isEmpty else { return }
        if let last = lastResolverWarning, now < last + .seconds(10) { return }
        lastResolverWarning = now
        EngineLog.warning(Self.unansweredWarning(resolver.unanswered, defaults: resolver.servers))
        resolver.unanswered = []
    }

    /// Names the resolvers that did not answer, and where they come from: the
    /// host's (or [General] dns-server's), or a [Host] `server:` line's, whose
    /// port is said when it is not 53 (one was called "the host's resolver",
    /// without its port, and the hint sent the user to /etc/resolv.conf).
    static func unansweredWarning(_ unanswered: [SocketAddress], defaults: [SocketAddress]) -> String {
        let names = unanswered.map { $0.port == 53 ? "\($0.address)" : "\($0)" }.joined(separator: ", ")
        let plural = unanswered.count == 1 ? "" : "s"
        guard unanswered.allSatisfy(defaults.contains) else {
            return "the resolver\(plural) \(names) of a [Host] server: line did not answer: the names sent there fail"
        }
        return "the host's resolver\(plural) \(names) did not answer: names it was asked fail (see /etc/resolv.conf, or [General] dns-server)"
    }

    /// The flow goes where [MITM] intercepts: its app speaks TLS, and speaks first.
    func awaitsClientHello(_ key: FlowKey) -> Bool {
        guard let mitm = director.profile?.mitm, !mitm.isEmpty else { return false }
        guard let domain = facts(for: key).domain else { return key.destinationPort == 443 }
        return mitm.intercepts(host: domain, port: key.destinationPort)
    }

    /// Accepts the app's side of a flow (its SYN waited in the table until now).
    @discardableResult
    func acceptApp(_ key: FlowKey, idleTimeout: Duration? = nil, sink: inout TunSink) -> Bool {
        var tcpConfiguration = appTCPConfiguration(for: key)
        if let idleTimeout { tcpConfiguration.idleTimeout = idleTimeout }
        return tcp.accept(key, now: now, configuration: tcpConfiguration, sink: &sink) != nil
    }

    /// The TCP settings of a connection with the app on `key`.
    func appTCPConfiguration(for key: FlowKey) -> TCPConfiguration {
        // The MSS follows from the TUN's MTU, less IPv4's 20 or IPv6's 40 bytes of header and TCP's 20.
        var tcpConfiguration = configuration.tcp.tcp
        tcpConfiguration.maximumSegmentSize = configuration.mtu - (key.isIPv6 ? 60 : 40)
        return tcpConfiguration
    }

    /// The app's first bytes (or its silence until the deadline, or its FIN) decide the flow.
    func sniff(_ key: FlowKey, final: Bool, sink: inout TunSink) {
        guard let wait = sniffing[key] else { return }
        guard let connection = tcp.connection(key), connection.state != .closed else {
            sniffing[key] = nil
            releasePin(key)
            tcp.flush(key, now: now, sink: &sink)
            return
        }
        if wait.stage == .handshake {
            guard connection.state.isSynchronized else {
                // The app has not finished its handshake (our SYN-ACK was lost,
                // or the app is far away): its silence has not begun. The
                // stack's SYN-ACK retransmission limit bounds this wait.
                if final { sniffing[key]?.deadline = now + FlowFacts.sniffTimeout }
                tcp.flush(key, now: now, sink: &sink)
                return
            }
            // Counted from here: the first bytes follow the handshake's last ACK.
            let wait = awaitsClientHello(key) ? FlowFacts.clientHelloTimeout : FlowFacts.sniffTimeout
            sniffing[key] = SniffWait(stage: .firstBytes, deadline: now + wait)
            if final {
                tcp.flush(key, now: now, sink: &sink)
                return
            }
        }
        let finished = final || connection.isReadClosed || connection.readableCount >= FlowFacts.sniffLimit
        if final, wait.stage == .firstBytes, !connection.isReadClosed, connection.readableCount < FlowFacts.sniffLimit,
           facts(for: key).awaitsRestOfHello(connection.peekReadable(maxLength: FlowFacts.sniffLimit))
        {
            // Deciding without its name would miss the DOMAIN rules and [MITM].
            trace("\(key): a ClientHello is partly here; waiting for the rest")
            sniffing[key] = SniffWait(stage: .restOfHello, deadline: now + FlowFacts.partialHelloTimeout)
            return
        }
        guard let sniffed = sniffedFacts(key, connection: connection, final: finished) else {
            tcp.flush(key, now: now, sink: &sink)
            return
        }
        let decided = withAnswerName(sniffed)
        sniffing[key] = nil
        if decided.applicationProtocol == .tls, intercepts(key, facts: decided, connection: connection) {
            startIntercepted(key, facts: decided, sink: &sink)
            return
        }
        if decided.applicationProtocol == .http, director.usesHTTPMode || director.recordsHTTP {
            startHTTP(key, facts: decided, sink: &sink)
            return
        }
        let decision = director.decide(decided, final: true)
        guard case .route(var route, let reason) = decision else {
            follow(.direct, for: key, sink: &sink)
            return
        }
        // Only an HTTP request can be answered with an HTTP response.
        if decided.applicationProtocol != .http { route = route.withoutHTTP }
        trace("\(key): \(route) (\(reason))")
        noteDecision(key, route: route, reason: reason, facts: decided)
        follow(route, for: key, sink: &sink)
    }

    func follow(_ route: FlowRoute, for key: FlowKey, sink: inout TunSink) {
        let accepted = tcp.connection(key) != nil
        switch route {
        case .direct:
            if let destination = realDestination(for: key, sink: &sink) {
                openUpstream(for: key, to: destination, port: key.destinationPort, handshake: nil, sink: &sink)
            }
        case let .proxy(proxy):
            connect(key, through: proxy, sink: &sink)
        case let .refuse(refusal):
            io.statistics.tcpRejected += 1
            finishRecord(key, status: .blocked)
            if accepted {
                if refusal == .drop { tcp.silence(key, until: now + Self.dropSilence) } else { tcp.connection(key)?.abort() }
                tcp.flush(key, now: now, sink: &sink)
            } else {
                tcp.refuse(key, with: refusal, sink: &sink)
            }
        case let .answer(bytes):
            io.statistics.tcpAnswered += 1
            if !accepted, !acceptApp(key, sink: &sink) { return }
            answering[key] = PendingAnswer(bytes: bytes)
            pumpAnswer(key, sink: &sink)
        }
    }

    /// Writes a local answer into the app's connection, then its FIN; what the app sends is read and dropped.
    func pumpAnswer(_ key: FlowKey, sink: inout TunSink) {
        guard let connection = tcp.connection(key), var pending = answering[key] else {
            answering[key] = nil
            return
        }
        _ = connection.takeEvents()
        if connection.readableCount > 0 { connection.consume(connection.readableCount) }
        if pending.offset < pending.bytes.count {
            let n = pending.bytes.withUnsafeBytes { connection.write(UnsafeRawBufferPointer(rebasing: $0[pending.offset...])) }
            pending.offset += n
            io.statistics.bytesToApp += n
            if pending.offset == pending.bytes.count { connection.shutdownWrite() }
        }
        answering[key] = pending
        tcp.flush(key, now: now, sink: &sink)
        if connection.state == .closed || connection.state == .timeWait {
            answering[key] = nil
            releasePin(key)
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
        guard pin(key), let name = dns!.pool.name(for: key.destinationAddress, now: now) else {
            // A fake IP nobody asked for (or one recycled since): nothing to connect to.
            refuse(key, reason: .host, sink: &sink)
            return nil
        }
        trace("\(key): fake IP for \(name)")
        // The app's family first (its fake A: IPv4; its fake AAAA, which it uses
        // only when it asks for IPv6, as `curl -6`, since RFC 6724 ranks the ULA
        // pool below IPv4), then the other when the name has none (in `resolved`).
        if let address = resolver.resolve(name, family: key.isIPv6 ? .v6 : .v4, for: key, now: now) { return address.sysAddress }
        if key.transport == .tcp { awaitingAddress[key] = PendingConnect(name: name, port: key.destinationPort) }
        return nil
    }

    /// Connects to the proxy (resolving its name first when it is one) and shakes hands there.
    func connect(_ key: FlowKey, through proxy: UpstreamProxy, target: ProxyTarget? = nil, sink: inout TunSink) {
        let handshake: ProxyHandshake
        do { handshake = try ProxyHandshake(proxy: proxy, target: target ?? proxyTarget(for: key)) } catch {
            fail(key, with: error.refusal, reason: error.message, sink: &sink)
            return
        }
        connect(key, toHost: proxy.host, port: proxy.port, handshake: handshake, sink: &sink)
    }

    /// Connects to a host given by name or address literal: a [Host] entry of
    /// the profile first, then the host's resolvers.
    func connect(_ key: FlowKey, toHost host: String, port: UInt16, handshake: ProxyHandshake? = nil, sink: inout TunSink) {
        if let literal = SysIPAddress(host) {
            openUpstream(for: key, to: literal, port: port, handshake: handshake, sink: &sink)
            return
        }
        if let address = director.staticAddress(for: host) {
            openUpstream(for: key, to: address.sysAddress, port: port, handshake: handshake, sink: &sink)
            return
        }
        guard let name = DNSName(host) else {
            fail(key, with: .unreachable(.host), reason: "bad host name \(host)", sink: &sink)
            return
        }
        if let address = resolver.resolve(name, family: .v4, for: key, now: now) {
            openUpstream(for: key, to: address.sysAddress, port: port, handshake: handshake, sink: &sink)
        } else {
            awaitingAddress[key] = PendingConnect(name: name, port: port, handshake: handshake)
        }
    }

    /// The host's resolver answered (or not) for flows waiting on a name.
    func resolved(_ answers: [(FlowKey, IPAddress?, DNSType)]) {
        var sink = TunSink(io: io)
        for (key, found, type) in answers {
            if key.transport == .icmp || key.transport == .icmpv6 {
                echoResolved(key, found, type: type)
                continue
            }
            if key.transport != .tcp, awaitingAddress[key] == nil {
                guard udpAwaitingResolution[key] != nil else { continue }
                // The flow pins its fake IP, so the name is there.
                let name = dns?.pool.name(for: key.destinationAddress, now: now)
                guard let address = name.map({ finalAnswer(found, type: type, name: $0, for: key) }) ?? .some(found) else { continue }
                guard let address else {
                    // As for TCP: a name without an address is an unreachable host, said at once.
                    refuse(key, reason: .host, sink: &sink)
                    continue
                }
                let held = udpAwaitingResolution.removeValue(forKey: key) ?? []
                openUDP(key, to: address.sysAddress, sink: &sink)
                if let flow = udpFlows[key] { sendHeld(held, on: flow, sink: &sink) }
                continue
            }
            guard let pending = awaitingAddress[key], let address = finalAnswer(found, type: type, name: pending.name, for: key) else { continue }
            awaitingAddress[key] = nil
            if let address {
                openUpstream(for: key, to: address.sysAddress, port: pending.port, handshake: pending.handshake, sink: &sink)
            } else {
                refuse(key, reason: .host, sink: &sink)
            }
        }
    }

    /// The address `key` goes to (nil inside: the name has none), or nil
    /// while it waits for more: when the app's family found nothing, the
    /// other is asked before giving up (fake DNS gives every name both).
    private func finalAnswer(_ found: IPAddress?, type: DNSType, name: DNSName, for key: FlowKey) -> IPAddress?? {
        let first: DNSType = key.isIPv6 ? .aaaa : .a
        guard found == nil, type == first else { return .some(found) }
        let other = resolver.resolve(name, family: key.isIPv6 ? .v4 : .v6, for: key, now: now)
        if other == nil, resolver.isPending(key) { return nil }
        return .some(other)
    }

    func refuse(_ key: FlowKey, reason: UnreachableReason, sink: inout TunSink) {
        if key.transport == .icmp || key.transport == .icmpv6 {
            // A ping to a name with no address: its request is dropped (Tunnel+EchoNames).
            echoAwaitingResolution[key] = nil
            io.statistics.upstreamErrors += 1
        } else if key.transport == .tcp {
            awaitingAddress[key] = nil
            fail(key, with: .unreachable(reason), reason: "no address", sink: &sink)
        } else if awaitingAddress.removeValue(forKey: key) != nil {
            endAssociation(key, reason: "the proxy's name has no address")
        } else {
            // A stale fake IP, or a name the resolvers never answered for.
            udpAwaitingResolution[key] = nil
            datagrams.sendUDPUnreachable(key, reason: reason, now: now, sink: &sink)
        }
    }

    /// The flow cannot go on: the app sees what a network would show (a flow
    /// already accepted can only be reset).
    /// `icmp`: the ICMP error behind the failure, for an app whose SYN still
    /// waits (it hears that error from that router, rather than `refusal`).
    func fail(_ key: FlowKey, with refusal: TCPFlowTable.Refusal, reason: String,
              icmp: (error: UpstreamICMPError, router: IPAddress?)? = nil, sink: inout TunSink) {
        trace("\(key): fails: \(reason)")
        if key.transport == .udp {
            endAssociation(key, reason: reason)
            return
        }
        if let session = httpSessions[key] {
            // A request is waiting: it gets a 502, not a reset.
            let kind: ConnectionErrorKind
            switch refusal {
            case .reset: kind = .refused
            case .unreachable: kind = .unreachable
            case .drop: kind = .timedOut
            }
            upstreamFailed(nil, session: session, reason: reason, kind: kind, sink: &sink)
            return
        }
        switch refusal {
        case .reset: io.statistics.tcpRefused += 1
        case .unreachable, .drop: io.statistics.tcpUnreachable += 1
        }
        finishRecord(key, status: refusal == .drop ? .timedOut : .refused, error: reason)
        if let connection = tcp.connection(key) {
            connection.abort()
            tcp.flush(key, now: now, sink: &sink)
        } else if let icmp {
            tcp.refuse(key, with: icmp.error, from: icmp.router, sink: &sink)
        } else {
            tcp.refuse(key, with: refusal, sink: &sink)
        }
        releasePin(key)
    }

    /// Keeps a fake IP's mapping alive while its flow lives; false when no mapping holds the address.
    func pin(_ key: FlowKey) -> Bool {
        if pinned.contains(key) { return true }
        guard dns?.pool.pin(key.destinationAddress, now: now) != nil else { return false }
        pinned.insert(key)
        return true
    }

    func releasePin(_ key: FlowKey) {
        finishRecord(key)
        if pinned.remove(key) != nil { dns?.pool.unpin(key.destinationAddress, now: now) }
    }

    func openUpstream(for key: FlowKey, to address: SysIPAddress, port: UInt16, handshake: ProxyHandshake?, sink: inout TunSink) {
        trace("\(key): connecting upstream to \(address) port \(port)\(handshake.map { " (proxy \($0.proxy.name) to \($0.target))" } ?? "")")
        let socket: Socket
        do {
            socket = try Socket(.tcp, family: address.family, mark: configuration.mark)
        } catch {
            socketFailed(error)
            fail(key, with: .reset, reason: "socket: \(error)", sink: &sink)
            return
        }
        // Idle flows live as long as their ends do (no idle timeout): a
        // server that vanished without a word is found by keepalive, with the
        // kernel's timings (2 hours) until the app shows its own
        // (`followKeepalive`), and its flow is then reset.
        socket.setKeepalive()
        // The server's urgent byte goes to the app in line, as docs/tcp.md says of urgent data.
        socket.setOutOfBandInline()
        // A router's ICMP error about the connect, with its code and sender, for
        // the app's SYN (`queuedConnectError`); off again once connected.
        socket.setReceiveErrors()
        if !synHopLimits.isEmpty, let hopLimit = synHopLimits.removeValue(forKey: key), handshake == nil { socket.setHopLimit(hopLimit) }
        let result: SysResult<Void>
        do {
            result = try socket.connect(to: SocketAddress(address, port: port))
            trace("\(key): connect \(result)")
        } catch {
            fail(key, with: Self.refusal(for: error), reason: "connect: \(error)", sink: &sink)
            return
        }
        let token = nextToken
        nextToken += 1
        let flow = TCPFlow(key: key, token: token, socket: socket)
        flow.remote = SocketAddress(address, port: port)
        flow.handshake = handshake
        if handshake != nil { handshakeDeadlines[key] = now + deadlines.limit(for: .connect) }
        do { try epoll.add(flow.socket.descriptor, events: [.writable], token: token) } catch {
            fail(key, with: .reset, reason: "epoll: \(error)", sink: &sink)
            return
        }
        flow.interest = [.writable]
        tcpFlows[key] = flow
        tokens[token] = key
        // An app that sniffing decided on its FIN has left already.
        if let connection = tcp.connection(key) { letGiveWayIfAppLeft(flow, connection) }
        if case .value = result { upstreamConnected(flow, sink: &sink) }
    }

    /// What the proxy is asked to reach: the name when fake-IP DNS knows it, so
    /// the proxy resolves it; the address otherwise.
    func proxyTarget(for key: FlowKey) -> ProxyTarget {
        if dns?.pool.contains(key.destinationAddress) == true, let name = dns?.pool.name(for: key.destinationAddress, now: now) {
            var text = name.description
            if text.hasSuffix(".") { text.removeLast() }
            return ProxyTarget(host: .domain(text), port: key.destinationPort)
        }
        return ProxyTarget(key.destinationAddress, port: key.destinationPort)
    }

    func upstreamConnected(_ flow: TCPFlow, sink: inout TunSink) {
        flow.connected = true
        // Connected: an ICMP error now is soft (RFC 1122 §4.2.3.9), which IP_RECVERR would make fatal.
        flow.socket.setReceiveErrors(false)
        if let handshake = flow.handshake {
            trace("\(flow.key): connected to proxy \(handshake.proxy.name), greeting it")
            guard send(handshake.start(), to: flow) else {
                failHandshake(flow, ProxyFailure(refusal: .reset, message: "proxy \(handshake.proxy.name): could not send the greeting"), sink: &sink)
                return
            }
            handshakeDeadlines[flow.key] = now + deadlines.limit(for: handshake.machine.stage)
            watch(flow, for: [.readable])
            return
        }
        established(flow, leftover: UnsafeRawBufferPointer(start: nil, count: 0), sink: &sink)
    }

    /// The upstream path is ready (directly, or through the proxy's handshake):
    /// the app's side is accepted if it was not yet, and bytes start to flow.
    /// `leftover` are bytes the proxy sent after its handshake: the destination's first bytes.
    func established(_ flow: TCPFlow, leftover: UnsafeRawBufferPointer, sink: inout TunSink) {
        trace("\(flow.key): upstream ready")
        io.statistics.tcpFlows += 1
        if tcp.connection(flow.key) == nil {
            guard acceptApp(flow.key, sink: &sink) else {
                removeTCP(flow)
                return
            }
        }
        if leftover.count > 0, let connection = tcp.connection(flow.key) {
            // At most a handshake's read: it fits the fresh send ring.
            let n = connection.write(leftover)
            io.statistics.bytesToApp += n
        }
        pump(flow, sink: &sink)
    }

    /// Writes a handshake message whole (it is small and the socket just connected: it fits).
    func send(_ bytes: [UInt8], to flow: TCPFlow) -> Bool {
        guard !bytes.isEmpty else { return true }
        let result = bytes.withUnsafeBytes { try? flow.socket.write($0) }
        guard case let .value(n)? = result, n == bytes.count else { return false }
        return true
    }

    func watch(_ flow: TCPFlow, for events: Epoll.Events) {
        guard events != flow.interest else { return }
        try? epoll.modify(flow.socket.descriptor, events: events, token: flow.token)
        flow.interest = events
    }

    /// The proxy spoke: go on with the handshake, or start relaying.
    func readHandshake(_ flow: TCPFlow, sink: inout TunSink) {
        guard let handshake = flow.handshake else { return }
        for _ in 0 ..< 8 {
            let result: SysResult<Int>
            do { result = try flow.socket.read(into: scratch) } catch {
                failHandshake(flow, ProxyFailure(refusal: Self.refusal(for: error), message: "proxy \(handshake.proxy.name): \(error)"), sink: &sink)
                return
            }
            guard case let .value(n) = result else { return }
            if n == 0 {
                failHandshake(flow, handshake.closed(), sink: &sink)
                return
            }
            do throws(ProxyFailure) {
                switch try handshake.receive(UnsafeRawBufferPointer(scratch.sub(0, n))) {
                case .needMore:
                    continue
                case let .send(bytes):
                    guard send(bytes, to: flow) else {
                        throw ProxyFailure(refusal: .reset, message: "proxy \(handshake.proxy.name): could not send")
                    }
                    handshakeDeadlines[flow.key] = now + deadlines.limit(for: handshake.machine.stage)
                case let .established(leftoverOffset, bound):
                    trace("\(flow.key): proxy \(handshake.proxy.name) connected to \(handshake.target)")
                    flow.handshake = nil
                    handshakeDeadlines[flow.key] = nil
                    if flow.key.transport == .udp {
                        associated(flow, proxy: handshake.proxy, bound: bound, sink: &sink)
                        return
                    }
                    let leftover = UnsafeRawBufferPointer(scratch.sub(0, n)).suffix(from: leftoverOffset)
                    established(flow, leftover: leftover, sink: &sink)
                    return
                }
            } catch {
                failHandshake(flow, error, sink: &sink)
                return
            }
        }
    }

    func failHandshake(_ flow: TCPFlow, _ failure: ProxyFailure, sink: inout TunSink) {
        io.statistics.upstreamErrors += 1
        if let handshake = flow.handshake { noteProxyFailure(handshake.proxy.name, reason: failure.message) }
        if flow.key.transport == .tcp { EngineLog.warning("\(flow.key): \(failure.message)") }
        fail(flow.key, with: failure.refusal, reason: failure.message, sink: &sink)
        removeTCP(flow, keepConnection: true, keepSession: outlivesUpstream(flow.key))
    }

    /// An HTTP/2 session goes on when its upstream fails (only the request
    /// waiting on it fails: `failStreams`); an HTTP/1.1 session ends after its 502.
    func outlivesUpstream(_ key: FlowKey) -> Bool {
        httpSessions[key]?.isHTTP2 == true
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

    // MARK: The upstream side

    func upstreamReady(token: UInt64, events: Epoll.Events) {
        // Empty maps are skipped before hashing: most wake-ups are plain flows.
        if !probes.isEmpty, let probe = probes[token] {
            probeReady(probe, events: events)
            return
        }
        if !pooledTokens.isEmpty, let parked = pooledTokens[token] {
            closePooled(parked)
            return
        }
        if !dnsStreamTokens.isEmpty, let key = dnsStreamTokens[token] {
            dnsUpstreamReady(key, events: events)
            return
        }
        if !forwardListeners.isEmpty, let listener = forwardListeners[token] {
            forwardReady(listener)
            return
        }
        if !udpMappingTokens.isEmpty, let mapping = udpMappingTokens[token] {
            var sink = TunSink(io: io)
            readMapping(mapping, sink: &sink)
            return
        }
        guard let key = tokens[token] else { return }
        var sink = TunSink(io: io)
        // A UDP association has two sockets under one key: the token tells which.
        if !udpFlows.isEmpty, let flow = udpFlows[key], flow.token == token {
            readUpstreamDatagrams(flow, sink: &sink)
            if flow.queuesErrors, events.contains(.error) { passQueuedErrors(flow, sink: &sink) }
            return
        }
        if !pingSockets.isEmpty, let flow = pingSockets[key] {
            readPingSocketReplies(flow, sink: &sink)
            if flow.queuesErrors, events.contains(.error) { passQueuedErrors(flow, sink: &sink) }
            return
        }
        if let flow = tcpFlows[key] {
            if !flow.connected {
                // SO_ERROR clears when read: read once.
                let pending = flow.socket.pendingError()
                trace("\(key): connecting, events \(events), error \(pending.map { "\($0)" } ?? "none")")
                if let error = pending {
                    fail(key, with: Self.refusal(for: error), reason: "connect: \(error)", icmp: queuedConnectError(flow), sink: &sink)
                    removeTCP(flow, keepConnection: true, keepSession: outlivesUpstream(key))
                    return
                }
                guard events.contains(.writable) || events.contains(.hangup) else { return }
                upstreamConnected(flow, sink: &sink)
                return
            }
            if flow.handshake != nil {
                readHandshake(flow, sink: &sink)
                return
            }
            if key.transport == .udp {
                // A UDP association's control connection: when it closes, the association ends.
                let result = try? flow.socket.read(into: scratch)
                if case .wouldBlock? = result { return }
                endAssociation(key, reason: "proxy closed the UDP association")
                return
            }
            if !httpSessions.isEmpty, let session = httpSessions[key] {
                // Requests go out before answers are read: a server may answer and close at once.
                pumpHTTP(key, sink: &sink)
                if tcpFlows[key] === flow, events.contains(.readable) || events.contains(.hangup) || events.contains(.error) {
                    readHTTPUpstream(flow, session: session, sink: &sink)
                }
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

    /// The app probed its connection with a keepalive after `idle` of
    /// silence. We answer its probes ourselves, so without this it would
    /// never learn that the server behind us is gone (on a real network its
    /// probes would go unanswered and its socket end with ETIMEDOUT). So the
    /// upstream socket probes the server after the same silence, every
    /// `idle` (at most 75 s) after that, and three unanswered probes end it:
    /// the app's flow is then reset.
    func followKeepalive(_ flow: TCPFlow, _ connection: TCPConnection) {
        guard let idle = connection.peerKeepaliveIdle else { return }
        let seconds = min(max(Int((idle.nanoseconds + 500_000_000) / 1_000_000_000), 1), 7200)
        guard flow.keepaliveIdleSeconds != seconds else { return }
        flow.keepaliveIdleSeconds = seconds
        trace("\(flow.key): the app probes after \(seconds) s idle: the upstream does too")
        flow.socket.setKeepalive(idleSeconds: seconds, intervalSeconds: min(seconds, 75), count: 3)
    }

    /// Upstream bytes go straight into the connection's send ring: one copy, by the kernel.
    func readUpstream(_ flow: TCPFlow, sink: inout TunSink) {
        guard let connection = tcp.connection(flow.key) else { return }
        for _ in 0 ..< 16 {
            guard connection.writableCount > 0, !flow.upstreamClosed else { return }
            var failure: Errno?
            var eof = false
            var offered = 0
            let n = connection.write { space in
                offered = space.count
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
            // An end or an error goes after what a hold kept, as without the hold;
            // bytes join it (`holdsRead`); a read that found nothing leaves it.
            if eof || failure != nil { sendHeld(flow, sink: &sink) }
            if let failure {
                // ECONNRESET and friends: the app sees a RST, this flow only,
                // but after the bytes read before it (a server's answer, then a
                // reset for the request it did not read): they were delivered to
                // Sluice, and an abort now would throw them away.
                io.statistics.upstreamErrors += 1
                _ = failure
                flow.upstreamClosed = true
                if connection.unacknowledgedCount > 0 {
                    flow.resetOnceDelivered = true
                } else {
                    connection.abort()
                }
                return
            }
            if eof {
                flow.upstreamClosed = true
                connection.shutdownWrite()
                return
            }
            if n == 0 { return }
            io.statistics.bytesToApp += n
            countBytes(flow.key, down: n)
            if holdsRead(flow, count: n, socketEmptied: n < offered) { return }
            tcp.flush(flow.key, connection: connection, now: now, sink: &sink)
            // A short read emptied the socket: asking again would only return EAGAIN
            // (epoll is level-triggered and says when more arrives).
            if n < offered { return }
        }
    }

    /// Moves app bytes upstream, passes half-closes both ways, updates what the
    /// socket is watched for, and lets the connection send what it owes.
    func pump(_ flow: TCPFlow, sink: inout TunSink) {
        if !httpSessions.isEmpty, httpSessions[flow.key] != nil {
            pumpHTTP(flow.key, sink: &sink)
            return
        }
        let time = now
        guard let connection = tcp.connection(flow.key) else {
            removeTCP(flow)
            return
        }
        let events = connection.takeEvents()
        if events.contains(.reset) {
            flow.socket.setResetOnClose()
        }
        if events.contains(.peerKeepalive) { followKeepalive(flow, connection) }
        letGiveWayIfAppLeft(flow, connection)
        var upstreamBlocked = false
        if flow.resetOnceDelivered, connection.unacknowledgedCount == 0 { connection.abort() }
        if flow.connected, !flow.upstreamWriteClosed, !flow.resetOnceDelivered {
            upstreamBlocked = drainToUpstream(flow, connection)
            if connection.isReadClosed, connection.readableCount == 0 {
                flow.socket.shutdown(.write)
                flow.upstreamWriteClosed = true
                if !flow.upstreamClosed { probeClosedApp(flow.key, connection) }
            }
        }
        // Backpressure: watch the socket for reading only while the app's side has room.
        var resumesReading = false
        if flow.connected {
            var wanted: Epoll.Events = []
            if !flow.upstreamClosed, connection.writableCount > 0 { wanted.insert(.readable) }
            if upstreamBlocked { wanted.insert(.writable) }
            if wanted != flow.interest {
                resumesReading = wanted.contains(.readable) && !flow.interest.contains(.readable)
                try? epoll.modify(flow.socket.descriptor, events: wanted, token: flow.token)
                flow.interest = wanted
            }
        }
        if !keepsHold(flow, connection) { tcp.flush(flow.key, connection: connection, now: time, sink: &sink) }
        flow.counters = connection.counters
        let state = connection.state
        if state == .closed || state == .timeWait || (flow.upstreamClosed && flow.upstreamWriteClosed && connection.unacknowledgedCount == 0) {
            if state == .closed || state == .timeWait { removeTCP(flow, keepConnection: state == .timeWait) }
        }
        // Reading resumes now that the app's side has room again: data may
        // have waited unwatched, so read it now rather than a loop iteration
        // later. Only then: while the socket is watched, epoll (level-triggered)
        // reports what arrives, and a read here would find it empty. (A
        // request's ACK makes room after every response: that read cost a
        // system call per request.)
        if resumesReading, !flow.upstreamClosed, tcpFlows[flow.key] != nil {
            readUpstream(flow, sink: &sink)
        }
    }

    /// A connection whose app has left (its FIN came) while its upstream is
    /// not ready (connecting, or a proxy's handshake) may give way when the
    /// table is full (`TCPFlowTable.letGiveWay`); once the upstream is ready
    /// it may not. A half-closed app that still waits for an answer loses it
    /// only when the table is full, where a new connection would be refused.
    func letGiveWayIfAppLeft(_ flow: TCPFlow, _ connection: TCPConnection, upstreamReady: Bool? = nil) {
        guard connection.finReceived else { return }
        let mayGiveWay = !(upstreamReady ?? (flow.connected && flow.handshake == nil))
        if connection.givesWayWhenFull != mayGiveWay { tcp.letGiveWay(flow.key, mayGiveWay) }
    }

    /// Writes the app's bytes to the upstream socket; true when the socket is full.
    func drainToUpstream(_ flow: TCPFlow, _ connection: TCPConnection) -> Bool {
        while connection.readableCount > 0 {
            let data = connection.peekReadable()
            guard let result = try? flow.socket.write(data) else {
                io.statistics.upstreamErrors += 1
                connection.abort()
                return false
            }
            guard case let .value(n) = result, n > 0 else { return true }
            io.statistics.bytesFromApp += n
            countBytes(flow.key, up: n)
            connection.consume(n)
        }
        return false
    }

    /// The app connection's loss recovery, into the exit summary, once per
    /// connection: by `removeTCP` when the connection ends with its upstream
    /// flow, else by its HTTP session's end (`endHTTP`, or `closeAll`).
    func countRetransmissions(_ c: TCPConnection.Counters) {
        io.statistics.retransmissionTimeouts += c.retransmissionTimeouts
        io.statistics.fastRetransmits += c.fastRetransmits
        io.statistics.sackRetransmits += c.sackRetransmits
        io.statistics.goBackRetransmits += c.goBackRetransmits
        io.statistics.tailLossProbes += c.tailLossProbes
        io.statistics.congestionEventsUndone += c.congestionEventsUndone
    }

    func removeTCP(_ flow: TCPFlow, keepConnection: Bool = false, keepSession: Bool = false) {
        if !keepSession {
            if let session = httpSessions[flow.key] { finishWebSocket(session) }
            releasePin(flow.key)
            httpSessions[flow.key] = nil
        }
        handshakeDeadlines[flow.key] = nil
        trace("\(flow.key): flow ends (\(tcp.connection(flow.key)?.description ?? "gone"))")
        try? epoll.remove(flow.socket.descriptor)
        if !keepSession, let c = tcp.connection(flow.key)?.counters ?? flow.counters { countRetransmissions(c) }
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
        appHopLimit = Self.hopLimit(of: packet)
        let input = datagrams.input(packet, now: time, sink: &sink)
        for key in datagrams.takeEvicted() {
            io.statistics.evictions += 1
            warnTableFull("UDP and ping sessions", limit: datagrams.configuration.maximumSessions, rule: "the least recently active give way")
            finishRecord(key, status: .closed, error: "gave way to a new session: the table was full")
            endDatagramSession(key)
        }
        switch input {
        case let .udp(key, payload, isNew):
            if isDNSQuery(key) {
                answerDNS(key, payload: payload, sink: &sink)
                return
            }
            if !forwardedSessions.isEmpty, forwardedSessions[key] != nil {
                answerForwarded(key, payload: payload)
                return
            }
            // A few datagrams wait with the first for the flow's owner.
            if awaitingOwner.hold(payload, for: key) { return }
            if isNew {
                beginRecord(key)
                if director.requiresOwner, !ownerKnown(key) {
                    awaitingOwner[key] = [Array(payload)]
                    heldHopLimits[key] = appHopLimit
                    return
                }
            }
            relayDatagram(key, payload: payload, isNew: isNew, sink: &sink)
        case let .echoRequest(key, sequenceNumber, payload, isNew):
            if isNew {
                io.statistics.echoFlows += 1
                beginRecord(key)
                flowRecords[key]?.record.policy = configuration.answerPingsLocally ? "local" : "DIRECT"
                // PROTOCOL,ICMP,…,capture chooses them for the capture too.
                selectForCapture(key, facts: nil)
                if !configuration.answerPingsLocally, let rejection = echoRejection(key) {
                    rejectedEchoFlows[key] = rejection
                    finishRecord(key, status: .blocked)
                }
            }
            if !rejectedEchoFlows.isEmpty, let rejection = rejectedEchoFlows[key] {
                refuseEcho(packet, rejection, sink: &sink)
                return
            }
            if configuration.answerPingsLocally {
                datagrams.sendEchoReply(key, sequenceNumber: sequenceNumber, payload: payload, now: time, sink: &sink)
            } else {
                sendEcho(key, sequenceNumber: sequenceNumber, payload: payload)
            }
        case let .appPortUnreachable(key):
            if !forwardedSessions.isEmpty, forwardedSessions[key] != nil { forwardedPortUnreachable(key) }
        case .dropped(.badChecksum), .dropped(.malformed):
            io.statistics.malformedPackets += 1
        case .dropped:
            break
        }
    }

    /// One datagram of the app's UDP flow `key`, the first (`isNew`) deciding its route.
    func relayDatagram(_ key: FlowKey, payload: UnsafeRawBufferPointer, isNew: Bool, sink: inout TunSink) {
        if !awaitingName.isEmpty, awaitingName[key] != nil {
            holdForName(key, payload, sink: &sink)
            return
        }
        guard isNew else {
            relay(key, payload: payload, route: .direct, isNew: false, sink: &sink)
            return
        }
        guard let facts = newUDPFacts(key, first: payload) else { return }
        relay(key, payload: payload, route: udpRoute(for: key, facts: withAnswerName(facts)), isNew: true, sink: &sink)
    }

    /// Relays one datagram; the first of a flow (`isNew`) opens its way as
    /// `route` says, the others pass `.direct`.
    func relay(_ key: FlowKey, payload: UnsafeRawBufferPointer, route: UDPRoute, isNew: Bool, sink: inout TunSink) {
        if case let .associate(proxy) = route {
            startAssociation(key, through: proxy, sink: &sink)
        } else if case let .reject(answer) = route {
            // The flow's datagrams are dropped until it goes idle.
            io.statistics.udpRejected += 1
            finishRecord(key, status: .blocked)
            if let answer { datagrams.sendUDPUnreachable(key, reason: answer, now: now, sink: &sink) }
            return
        } else if isNew {
            if dns?.pool.contains(key.destinationAddress) == true || configuration.hostLoopbackGateways.contains(key.destinationAddress) {
                if let address = realDestination(for: key, sink: &sink) {
                    openUDP(key, to: address, sink: &sink)
                } else {
                    // The first datagrams wait for the name's real address
                    // (`resolved`): a QUIC client whose first Initial was lost
                    // would wait a whole probe timeout, a second here, to send it again.
                    if resolver.isPending(key) {
                        udpAwaitingResolution[key] = [Array(payload)]
                        heldHopLimits[key] = appHopLimit
                    }
                    return
                }
            } else {
                openUDP(key, to: key.destinationAddress.sysAddress, sink: &sink)
            }
        }
        // The association is being set up, or the name resolved: a few datagrams wait.
        if associationQueue.hold(payload, for: key) || udpAwaitingResolution.hold(payload, for: key) { return }
        guard let flow = udpFlows[key] else { return }
        if let error = sendDatagram(payload, on: flow) { datagramFailed(flow, error, sink: &sink) }
    }

    /// Sends the app's echo request to its destination from Sluice's namespace,
    /// with the app's identifier and sequence number, so the reply can be matched.
    func sendEcho(_ key: FlowKey, sequenceNumber: UInt16, payload: UnsafeRawBufferPointer) {
        guard let target = echoDestination(key, sequenceNumber: sequenceNumber, payload: payload) else { return }
        // The request goes in the real address's family (a fake IP's name may have only the other).
        let v6 = Self.echoTransport(to: target) == .icmpv6
        if !echoThroughPingSockets, (v6 ? echoV6 : echoV4) == nil {
            let socket: Socket
            do { socket = try Socket(.rawICMP, family: v6 ? .v6 : .v4, mark: configuration.mark) } catch {
                guard error == .notPermitted || error == .permissionDenied else {
                    socketFailed(error)
                    return
                }
                // Not root (a user namespace's exec): a ping socket per flow instead.
                echoThroughPingSockets = true
                return sendEcho(key, sequenceNumber: sequenceNumber, payload: payload)
            }
            if let index = configuration.tunInterfaceIndex {
                // Else the echo replies Sluice writes into the TUN for this
                // namespace's own address come back to the socket as replies.
                do { try socket.ignoreArrivals(onInterface: index) } catch {
                    socketFailed(error)
                    return
                }
            }
            let box = SocketBox(socket)
            guard (try? epoll.add(box.socket.descriptor, events: .readable, token: v6 ? Self.echoV6Token : Self.echoV4Token)) != nil else { return }
            if v6 { echoV6 = box } else { echoV4 = box }
        }
        // Built in the relay's scratch (64 KiB): the DNS one's 4 KiB dropped every ping of more than 4,088 bytes.
        guard payload.count <= relayScratch.count - 8 else { return }
        relayScratch.sub(8, payload.count).copyMemory(from: payload)
        let written: Int?
        if v6 {
            // The kernel fills in an ICMPv6 raw socket's checksum; the addresses here do not matter.
            written = try? ICMPv6Message.echoRequest(identifier: key.appPort, sequenceNumber: sequenceNumber)
                .emit(into: relayScratch.sub(0, 8 + payload.count), payloadLength: payload.count, source: .any, destination: .any)
        } else {
            written = try? ICMPv4Message.echoRequest(identifier: key.appPort, sequenceNumber: sequenceNumber)
                .emit(into: relayScratch.sub(0, 8 + payload.count), payloadLength: payload.count)
        }
        guard written != nil else { return }
        if echoThroughPingSockets {
            sendEchoOnPingSocket(key, to: target, message: UnsafeRawBufferPointer(relayScratch.sub(0, 8 + payload.count)),
                                 sequenceNumber: sequenceNumber)
            return
        }
        guard let channel = v6 ? echoV6 : echoV4 else { return }
        if channel.hopLimit != appHopLimit {
            channel.socket.setHopLimit(appHopLimit)
            channel.hopLimit = appHopLimit
        }
        let destination = SocketAddress(target.sysAddress, port: 0)
        do { try Self.sendEcho(UnsafeRawBufferPointer(relayScratch.sub(0, 8 + payload.count)), on: channel.socket, to: destination) } catch {
            io.statistics.upstreamErrors += 1
            echoFailed(key, sequenceNumber: sequenceNumber, error)
            return
        }
        io.statistics.bytesFromApp += payload.count
        countBytes(key, up: payload.count)
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
                guard let icmp = try? ICMPv6View(bytes) else { continue }
                if icmp.isError, let error = UpstreamICMPError(isICMPv6: true, type: icmp.type, code: icmp.code) {
                    passEchoError(error, quote: icmp.payload, from: from.address.wireAddress, v6: true, sink: &sink)
                    continue
                }
                guard case let .echoReply(id, seq) = icmp.message else { continue }
                (identifier, sequence, data) = (id, seq, icmp.payload)
            } else {
                // An IPv4 raw socket delivers the IP header too.
                guard let ip = try? IPv4View(bytes) else { continue }
                bytes = ip.payload
                guard let icmp = try? ICMPv4View(bytes), icmp.verifyChecksum() else { continue }
                if icmp.isError, let error = UpstreamICMPError(isICMPv6: false, type: icmp.type, code: icmp.code) {
                    passEchoError(error, quote: icmp.payload, from: from.address.wireAddress, v6: false, sink: &sink)
                    continue
                }
                guard case let .echoReply(id, seq) = icmp.message else { continue }
                (identifier, sequence, data) = (id, seq, icmp.payload)
            }
            let source = from.address.wireAddress
            let key = FlowKey(transport: v6 ? .icmpv6 : .icmp, appAddress: .v4(.any), appPort: identifier,
                              destinationAddress: source, destinationPort: 0)
            // The app's address is the one part of the key the reply does not carry: find the flow.
            // A ping to a fake IP went to the name's real address, which answers.
            guard let flow = datagrams.echoFlow(destination: key.destinationAddress, identifier: identifier, transport: key.transport)
                ?? echoFlowsByRealAddress[EchoRoute(address: source, identifier: identifier, transport: key.transport)] else { continue }
            io.statistics.bytesToApp += data.count
            countBytes(flow, down: data.count)
            datagrams.sendEchoReply(flow, sequenceNumber: sequence, payload: data, now: now, sink: &sink)
        }
    }

    /// Sluice's own DNS: fake-IP answers, [Host] entries, or the query relayed
    /// to the host's resolver (forward mode and excluded names).
    func answerDNS(_ key: FlowKey, payload: UnsafeRawBufferPointer, sink: inout TunSink) {
        switch dns!.respond(toMessage: payload, now: now, into: dnsScratch) {
        case let .answer(length):
            let answer = UnsafeRawBufferPointer(dnsScratch.sub(0, length))
            // [Host] answers name real addresses as relayed ones do; fake ones have the pool.
            if let pool = dns?.pool { answerNames.learn(message: answer, now: now) { !pool.contains($0) } }
            datagrams.sendUDP(key, payload: answer, now: now, sink: &sink)
        case .forward:
            io.statistics.bytesFromApp += payload.count
            if relayRoutedQuery(key, payload) { return }
            // Relayed under an id of ours on the resolver's one socket, as split DNS's are:
            // no socket (and no 60 s session upstream) per query, and the next resolver
            // is asked when one does not answer.
            guard let server = resolver.servers.first, resolver.relay(payload, to: server, for: key, now: now) else {
                // No resolver to ask, or none the host can reach: the app hears it at once.
                io.statistics.upstreamErrors += 1
                datagrams.sendUDPUnreachable(key, reason: .host, now: now, sink: &sink)
                return
            }
        case .drop:
            break
        }
    }

    /// A UDP session or echo flow left the table (idle, or evicted): what the engine held for it goes.
    func endDatagramSession(_ key: FlowKey) {
        closeUDP(key)
        if let control = tcpFlows[key] { removeTCP(control) }
        if !pingSockets.isEmpty { closePingSocket(key) }
        if !echoRealAddresses.isEmpty || !echoAwaitingResolution.isEmpty { forgetEchoRoute(key) }
        rejectedEchoFlows[key] = nil
        associationQueue[key] = nil
        awaitingOwner[key] = nil
        awaitingName[key] = nil
        udpAwaitingResolution[key] = nil
        if !heldHopLimits.isEmpty { heldHopLimits[key] = nil }
        if !forwardedSessions.isEmpty { forgetForwarded(key) }
        // And the fake IP it pinned (UDP and pings to one), with its record.
        releasePin(key)
    }

    /// A SYN that waited for its upstream gave way to newer ones (the
    /// pending queue was full): its connect attempt and whatever else waited
    /// for it go. The app hears nothing; if it still waits, its next SYN
    /// starts over.
    func pendingGaveWay(_ key: FlowKey, sink: inout TunSink) {
        io.statistics.evictions += 1
        warnTableFull("connections waiting for their upstream", limit: tcp.configuration.maximumPending, rule: "the oldest give way")
        trace("\(key): gave way to newer connections (the pending queue was full)")
        awaitingOwner[key] = nil
        awaitingAddress[key] = nil
        // The record first: removeTCP's would say only "closed".
        finishRecord(key, status: .timedOut, error: "gave way to newer connections: too many waited for their upstream")
        if let flow = tcpFlows[key] { removeTCP(flow) }
        releasePin(key)
    }

    /// A connection whose app had left before its upstream was ready gave
    /// way to a new one (the table was full; `letGiveWayIfAppLeft`): the
    /// table reset it towards the app, and its upstream attempt goes.
    func connectionGaveWay(_ key: FlowKey, sink: inout TunSink) {
        io.statistics.evictions += 1
        warnTableFull("TCP connections", limit: tcp.configuration.maximumFlows,
                      rule: "connections whose app left before their upstream answered give way (a RST)")
        trace("\(key): gave way to a new connection (the table was full; the app had left before the upstream answered)")
        let reason = "gave way to a new connection: the table was full, and the app had left before the upstream answered"
        finishRecord(key, status: .reset, error: reason)
        if let session = httpSessions[key] {
            // Its requests are recorded as failed, with the reason.
            endHTTP(session, reason: reason, sink: &sink)
        } else if let flow = tcpFlows[key] {
            removeTCP(flow)
        }
        releasePin(key)
    }

    /// A flow table is full and makes room (`rule` says how): said once a
    /// minute, since every new flow past the limit would say it again.
    func warnTableFull(_ table: String, limit: Int, rule: String) {
        if let last = lastTableFullWarning, now < last + .seconds(60) { return }
        lastTableFullWarning = now
        EngineLog.warning("the table of \(table) is full (\(limit)): \(rule) (a scan, or an app that opens flows faster than they end?)")
    }

    /// One datagram upstream, behind a SOCKS5 UDP header when the flow goes
    /// through a relay. Returns the error when the socket refused it (often an
    /// ICMP error that an earlier datagram drew, which Linux reports on the
    /// next call).
    @discardableResult
    func sendDatagram(_ payload: UnsafeRawBufferPointer, on flow: UDPFlow) -> Errno? {
        var datagram = payload
        if let target = flow.relayTarget {
            let header = SOCKS5UDPHeader(target: target)
            guard let length = try? header.emit(into: relayScratch), length + payload.count <= relayScratch.count else {
                io.statistics.upstreamErrors += 1
                return nil
            }
            relayScratch.sub(length, payload.count).copyMemory(from: payload)
            datagram = UnsafeRawBufferPointer(relayScratch.sub(0, length + payload.count))
        }
        io.statistics.bytesFromApp += payload.count
        countBytes(flow.key, up: payload.count)
        if flow.hopLimit != appHopLimit, flow.relayTarget == nil { carryHopLimit(to: flow) }
        do { _ = try flow.socket.send(datagram, to: nil) } catch {
            io.statistics.upstreamErrors += 1
            return error
        }
        return nil
    }

    /// A direct UDP session's socket reported an error: the app hears of it
    /// as a network would tell it, by ICMP destination unreachable (port,
    /// host or network), so that its socket gets ECONNREFUSED or
    /// EHOSTUNREACH at once instead of waiting out its timeout. Errors of a
    /// SOCKS5 relay's socket are the proxy's, not the destination's: dropped.
    func datagramFailed(_ flow: UDPFlow, _ error: Errno, sink: inout TunSink) {
        trace("\(flow.key): UDP: \(error)")
        // The queue has the ICMP error itself, with its code and sender; an
        // error that is not there is the host's own (no route).
        if flow.queuesErrors, passQueuedErrors(flow, sink: &sink) > 0 { return }
        guard flow.relayTarget == nil, let reason = Self.unreachableReason(for: error) else { return }
        datagrams.sendUDPUnreachable(flow.key, reason: reason, now: now, sink: &sink)
    }

    /// Which ICMP unreachable tells a UDP app about an upstream socket's error; nil for none.
    static func unreachableReason(for error: Errno) -> UnreachableReason? {
        switch error {
        case .connectionRefused: .port
        case .hostUnreachable: .host
        case .networkUnreachable, .networkDown: .network
        default: nil
        }
    }

    static let udpReceiveBuffer: Int32 = 4 << 20

    /// A datagram socket (a UDP session's, a ping flow's) under a token of
    /// its own in the epoll set; nil when epoll refuses it (the socket closes).
    func watchedFlow(_ key: FlowKey, socket: consuming Socket) -> UDPFlow? {
        let token = nextToken
        nextToken += 1
        let flow = UDPFlow(key: key, token: token, socket: socket)
        guard (try? epoll.add(flow.socket.descriptor, events: .readable, token: token)) != nil else { return nil }
        tokens[token] = key
        return flow
    }

    func readUpstreamDatagrams(_ flow: UDPFlow, sink: inout TunSink) {
        for _ in 0 ..< 64 {
            let received: SysResult<(Int, SocketAddress?)>
            do { received = try flow.socket.receive(into: scratch) } catch {
                io.statistics.upstreamErrors += 1
                datagramFailed(flow, error, sink: &sink)
                return
            }
            guard case let .value((n, _)) = received else { return }
            var payload = UnsafeRawBufferPointer(scratch.sub(0, n))
            if flow.relayTarget != nil {
                // From a SOCKS5 relay: the header names the sender; the app sees only the payload.
                guard let (_, offset) = try? SOCKS5UDPHeader.parse(payload) else {
                    io.statistics.upstreamErrors += 1
                    continue
                }
                payload = payload.suffix(from: offset)
            }
            io.statistics.bytesToApp += payload.count
            countBytes(flow.key, down: payload.count)
            if flow.key.destinationPort == 53 { answerNames.learn(message: payload, now: now) }
            datagrams.sendUDP(flow.key, payload: payload, now: now, sink: &sink)
        }
    }

    // MARK: Timers

    func fireTimers() {
        tick()
        let time = now
        var sink = TunSink(io: io)
        deliverFaulted(sink: &sink)
        pumpTouched(sink: &sink)
        if let deadline = tcp.nextDeadline, deadline <= time {
            let closed = tcp.poll(now: time, sink: &sink)
            for flow in closed {
                let key = flow.key
                let reason = flow.timeout.flatMap { appStoppedAnswering(key, $0) }
                // The session before the flow: endHTTP records its requests
                // in flight and removes the flow (removeTCP alone would drop
                // the session unrecorded).
                if let session = httpSessions[key] { endHTTP(session, reason: reason ?? Self.appClosed, sink: &sink) }
                if let flow = tcpFlows[key] { removeTCP(flow, keepConnection: true) }
                if sniffing.removeValue(forKey: key) != nil || answering.removeValue(forKey: key) != nil { releasePin(key) }
                if !dnsStreams.isEmpty { endDNSStream(key) }
            }
            // Connections that timed out or were reset by a timer need their sockets closed.
            // (A flow still connecting upstream has no connection yet: its SYN waits in `pending`.)
            // (Nor has one still shaking hands with a proxy: the app's SYN waits for the handshake.)
            // A sweep of every flow, so only when a timer closed some: most polls
            // close nothing (the timer queue is lazy, and most timers fire a
            // delayed ACK or a retransmission).
            if !closed.isEmpty {
                for (key, flow) in tcpFlows where key.transport == .tcp && flow.connected && flow.handshake == nil && tcp.connection(key) == nil {
                    removeTCP(flow)
                }
            }
        }
        if let deadline = handshakeDeadline, deadline <= time {
            // A proxy that does not answer fails its own flow only, and soon.
            for (key, deadline) in handshakeDeadlines where deadline <= time {
                guard let flow = tcpFlows[key], let handshake = flow.handshake else {
                    handshakeDeadlines[key] = nil
                    continue
                }
                let stage = flow.connected ? handshake.machine.stage : .connect
                failHandshake(flow, handshake.failure(.timedOut(stage)), sink: &sink)
            }
        }
        if let deadline = tlsHandshakeDeadline, deadline <= time { expireTLSHandshakes(now: time, sink: &sink) }
        if let deadline = pooledDeadline, deadline <= time { expirePooled() }
        if let deadline = autoForwardDeadline, deadline <= time { scanAutoForwards() }
        if let deadline = probeDeadline, deadline <= time {
            expireProbes()
            startDueHealthChecks()
        }
        if let deadline = sniffDeadline, deadline <= time {
            // Silent apps (server-speaks-first protocols) are decided without their first bytes.
            for (key, wait) in sniffing where wait.deadline <= time { sniff(key, final: true, sink: &sink) }
        }
        if let deadline = resolver.nextDeadline, deadline <= time {
            let failed = resolver.expire(now: time)
            // Also for a relayed query that went unanswered (forward mode, `server:` lines).
            warnUnansweredResolvers()
            for key in failed { refuse(key, reason: .host, sink: &sink) }
        }
        if let deadline = fragments.nextDeadline, deadline <= time {
            _ = fragments.expire(now: time, sendingTimeExceededTo: &sink)
        }
        if !awaitingOwner.isEmpty, let ownerLookup, let deadline = ownerLookup.nextDeadline, deadline <= time {
            proceed(ownerLookup.expire(now: time), sink: &sink)
        }
        if !awaitingName.isEmpty, let deadline = nameWaitDeadline, deadline <= time {
            expireNameWaits(now: time, sink: &sink)
        }
        if let deadline = datagrams.nextDeadline, deadline <= time {
            for key in datagrams.expire(now: time) { endDatagramSession(key) }
        }
        var dnsConnect = dnsConnectDeadline
        if let deadline = dnsConnect, deadline <= time {
            expireDNSConnects(now: time)
            dnsConnect = dnsConnectDeadline
        }
        // Arm the timer for the next deadline, when it changed.
        // No array here: this runs on every wake-up of the loop.
        func earlier(_ a: Instant?, _ b: Instant?) -> Instant? {
            guard let a else { return b }
            guard let b else { return a }
            return min(a, b)
        }
        let nextTimer = earlier(earlier(earlier(tcp.nextDeadline, datagrams.nextDeadline), earlier(fragments.nextDeadline, resolver.nextDeadline)),
                           earlier(earlier(inboundFaults?.nextRelease, io.outboundFaults?.nextRelease), earlier(earlier(earlier(sniffDeadline, handshakeDeadline), tlsHandshakeDeadline), earlier(earlier(probeDeadline, pooledDeadline), autoForwardDeadline))))
        let nextOwnerDeadline = awaitingOwner.isEmpty ? nil : ownerLookup?.nextDeadline
        let next = earlier(earlier(earlier(nextTimer, nextOwnerDeadline), awaitingName.isEmpty ? nil : nameWaitDeadline),
                           dnsConnect)
        // Only an earlier deadline re-arms the timer: a later one (the usual
        // case: each ACK pushes the retransmission deadline out) waits for the
        // armed one to fire, which costs a spurious wake-up instead of a
        // timerfd_settime on every pass through the loop.
        if let next, armedDeadline.map({ next < $0 }) ?? true {
            armedDeadline = next
            let delay = max(next.nanoseconds - now.nanoseconds, 1)
            try? timer.arm(afterNanoseconds: UInt64(delay))
        }
    }

    /// Takes a (re)loaded profile: new flows follow it, open ones keep their routes.
    func apply(_ profile: Profile?, log: (String) -> Void) {
        guard let profile else { return }
        if let old = director.profile, let notice = profile.reloadNotice(from: old, scope: StartOnlySetting.tunnel) { log(notice) }
        director = FlowDirector(profile: profile, previous: director)
        applyCaptureRules(profile, log: log)
        EngineLog.follow(profile.general.logLevel)
        director.recordsHTTP = har != nil
        interception.skipsVerification = profile.mitm.skipServerCertificateVerification
        if !profile.mitm.isEmpty, interception.ca == nil {
            // A reload that adds [MITM] hostnames: the CA is loaded (or made) now.
            do { interception.ca = try TunnelSession.interceptionCA(profile, directory: configuration.caDirectory, log: log) } catch {
                log("\(error); HTTPS is not intercepted")
            }
        }
        if !profile.mitm.isEmpty { interception.loadTrust(log: log) }
        if dns != nil {
            dns!.configuration.hosts = ProfileLoader.hostTable(profile)
            ProfileLoader.applyGeneral(profile.general, to: &dns!.configuration)
        }
        resolver.routes = ResolverRoutes(profile, system: HostResolver.nameservers())
        for warning in profile.warnings { log(warning.description) }
    }

    /// The earliest sniffing deadline (few flows sniff at once: a scan is cheap).
    var sniffDeadline: Instant? {
        var earliest: Instant?
        for wait in sniffing.values where earliest.map({ wait.deadline < $0 }) ?? true { earliest = wait.deadline }
        return earliest
    }

    var handshakeDeadline: Instant? {
        var earliest: Instant?
        for deadline in handshakeDeadlines.values where earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        return earliest
    }

    /// The session's requests in flight (and a response on the rewriting
    /// thread) are cut off for `reason`: recorded so (unless an earlier
    /// failure says more), before the flow is taken apart, which would drop
    /// them unrecorded. (Those answered here were recorded already.)
    func recordCutOff(_ session: HTTPSession, reason: String) {
        recordUnreleasedResponse(session, failure: reason)
        for exchange in session.inFlight where exchange.localAnswer == nil {
            var cut = exchange
            cut.failure = cut.failure ?? reason
            record(cut, session: session)
        }
        session.inFlight.removeAll()
    }

    /// A timer gave up on the app's side of a relayed flow: its record says
    /// why (not just "closed"). Returns what its requests in flight were cut
    /// off by, when that is not the app's closing (`endHTTP`'s default). An
    /// idle timeout is a DNS stream's, which records its own end.
    func appStoppedAnswering(_ key: FlowKey, _ timeout: TCPTimeout) -> String? {
        let reason: String
        switch timeout {
        case .retransmissions:
            reason = "the app stopped acknowledging: Sluice's retransmissions went unanswered"
        case .keepalive:
            // Sluice probes only an app whose FIN came (probeClosedApp): its
            // requests were cut off by its closing.
            reason = "the app closed the connection, then stopped answering keepalive probes"
        case .idle:
            return nil
        }
        trace("\(key): \(reason)")
        finishRecord(key, status: .timedOut, error: reason)
        return timeout == .retransmissions ? reason : nil
    }

    /// Closes every flow: RST to the app for TCP (the tunnel is going away), sockets closed.
    func closeAll() {
        tick()
        var sink = TunSink(io: io)
        // Cut off, and recorded so before the flows are taken apart (which
        // recorded them `closed`, with no error, and lost the requests in flight).
        for session in httpSessions.values { recordCutOff(session, reason: "Sluice stopped") }
        for key in Array(flowRecords.keys) where key.transport == .tcp {
            finishRecord(key, status: .reset, error: "Sluice stopped")
        }
        for (key, flow) in tcpFlows {
            // Removed first, while the app's connection is there to count its retransmissions.
            removeTCP(flow, keepConnection: true)
            tcp.connection(key)?.abort()
            tcp.flush(key, now: now, sink: &sink)
        }
        for key in Array(sniffing.keys) + Array(answering.keys) + Array(httpSessions.keys) where tcpFlows[key] == nil {
            // An HTTP session whose upstream ended first counts its app connection itself (as endHTTP does).
            if httpSessions[key] != nil, let counters = tcp.connection(key)?.counters { countRetransmissions(counters) }
            tcp.connection(key)?.abort()
            tcp.flush(key, now: now, sink: &sink)
        }
        for key in Array(dnsStreams.keys) {
            tcp.connection(key)?.abort()
            tcp.flush(key, now: now, sink: &sink)
            endDNSStream(key, status: .reset, error: "Sluice stopped")
        }
        sniffing.removeAll()
        answering.removeAll()
        // A WebSocket open when Sluice stops is in the HAR all the same.
        for session in httpSessions.values { finishWebSocket(session) }
        httpSessions.removeAll()
        for parked in Array(pooledTokens.values) { closePooled(parked) }
        // A TCP connection still open is cut off; a UDP session or ping flow has
        // nothing to cut: it just ends, as when it idles out.
        for key in Array(flowRecords.keys) {
            switch key.transport {
            case .udp, .icmp, .icmpv6: finishRecord(key)
            default: finishRecord(key, status: .reset, error: "Sluice stopped")
            }
        }
        tcpFlows.removeAll()
        udpFlows.removeAll()
        udpMappings.removeAll()
        udpMappingTokens.removeAll()
        tokens.removeAll()
    }
}

/// One relayed TCP flow: its upstream socket and what each side has closed.
final class TCPFlow {
    /// The app flow it serves (a pooled proxy connection changes hands).
    var key: FlowKey
    let token: UInt64
    let socket: Socket
    var connected = false
    /// Set while the upstream is a proxy that has not yet connected us through.
    var handshake: ProxyHandshake?
    /// The upstream sent FIN (or failed): nothing more will come from it.
    var upstreamClosed = false
    /// The upstream reset after bytes the app has not acknowledged yet: the
    /// reset reaches the app once it has them (`readUpstream`).
    var resetOnceDelivered = false
    /// We passed the app's FIN upstream.
    var upstreamWriteClosed = false
    var interest: Epoll.Events = []
    /// Set while parked in the proxy pool.
    var parkedAt: Instant?
    var pooledFor: String?
    /// Where the socket connects to (for a UDP ASSOCIATE whose relay address is unspecified: the proxy itself).
    var remote: SocketAddress?
    /// The connection's counters as last seen, for the statistics once it is gone.
    var counters: TCPConnection.Counters?
    /// The keepalive idle the upstream socket was given to follow the app's (`followKeepalive`).
    var keepaliveIdleSeconds: Int?
    /// Whether its short upstream reads wait for what follows (`ShortReadHold`),
    /// and, while one does, its place in `Tunnel.heldFlows`.
    var shortReads = ShortReadHold()
    var heldAt: Int?
    var held: Bool { heldAt != nil }
    /// Sluice's TLS to an https origin (HTTP mode), once the socket is connected.
    var tls: InterceptedUpstream?
    /// HTTP/2 inside that TLS, when the origin chose it (Tunnel+HTTP2Upstream.swift),
    /// and its frames the TLS did not take yet.
    var h2: HTTP2ClientSession?
    var h2Frames = OutgoingBytes()

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
    /// Set when the socket talks to a SOCKS5 UDP relay: each datagram carries this target in its header.
    var relayTarget: ProxyTarget?
    /// IP_RECVERR is on (a direct session's, a ping socket's): ICMP errors
    /// wait in the socket's error queue (Tunnel+UpstreamErrors.swift).
    var queuesErrors = false
    /// What the socket's hop limit was last set to (0: never, the kernel's default).
    var hopLimit: UInt8 = 0
    /// A direct session's: the app endpoint's mapping, whose port its
    /// socket shares (Tunnel+UDPPorts.swift).
    var mapping: UDPMapping?

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
    /// `--pcap`: every packet that crosses the TUN, both ways, copied to a
    /// writer thread (a slow disk drops packets from the capture, never from the traffic).
    var recorder: PacketRecorder?
    var statistics = TunnelStatistics()
    let origin = MonotonicClock.now()
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
        // With a capture on, the packet is built straight in the capture's ring.
        if io.outboundFaults == nil, capacity <= io.outgoing.count, let lent = io.recorder?.reserve(maximum: capacity) {
            let n = fill(lent)
            guard n > 0 else { return }
            let packet = UnsafeRawBufferPointer(lent.sub(0, n))
            guard packet.count <= io.mtu else {
                // Fragments are recorded one by one, by copy, into the ring
                // where this packet sits: it moves out of the way first.
                io.outgoing.baseAddress!.copyMemory(from: packet.baseAddress!, byteCount: n)
                write(UnsafeRawBufferPointer(io.outgoing.sub(0, n)))
                return
            }
            switch try? io.tun.write(packet) {
            case .value?:
                io.statistics.packetsToApp += 1
                io.recorder!.commit(length: n, outbound: true, timestamp: WallClock.now())
            case .wouldBlock?, nil:
                io.statistics.tunWriteDrops += 1
            }
            return
        }
        let n = fill(io.outgoing)
        guard n > 0 else { return }
        let packet = UnsafeRawBufferPointer(io.outgoing.sub(0, n))
        if io.outboundFaults != nil {
            io.outboundFaults!.push(Array(packet), now: Instant(nanoseconds: MonotonicClock.now() &- io.origin))
            return
        }
        write(packet)
    }

    /// A TCP segment: the headers are built in `outgoing` and the payload is
    /// written from the send ring by a gather write, without the copy behind
    /// the headers. A capture, the fault injector, or a packet over the MTU
    /// take the copying path, which they need whole.
    mutating func send(headerCapacity: Int, payload: UnsafeRawBufferPointer,
                       _ fillHeaders: (UnsafeMutableRawBufferPointer) -> Int) {
        // Headers left partial for the kernel must not reach a path that
        // writes them as they are: an offloading sink never copies.
        let offload = completesTCPChecksums
        guard headerCapacity <= io.outgoing.count else { return }
        guard offload || (io.recorder == nil && io.outboundFaults == nil && payload.count > 0) else {
            sendCopying(headerCapacity: headerCapacity, payload: payload, fillHeaders)
            return
        }
        let headers = fillHeaders(UnsafeMutableRawBufferPointer(rebasing: io.outgoing[..<headerCapacity]))
        guard headers > 0 else { return }
        let head = UnsafeRawBufferPointer(io.outgoing.sub(0, headers))
        // Our IPv4 headers carry no options: the TCP header starts at 20 (IPv4) or 40 (IPv6).
        let transportStart = io.outgoing[0] >> 4 == 4 ? 20 : 40
        guard headers + payload.count <= io.mtu else {
            // Too big for the TUN (our MSS keeps segments smaller): built whole,
            // its checksum complete, for `write`, which fragments what it can.
            guard headers + payload.count <= io.outgoing.count else { return }
            let whole = UnsafeMutableRawBufferPointer(rebasing: io.outgoing[..<(headers + payload.count)])
            whole.sub(headers, payload.count).copyMemory(from: payload)
            if offload { InternetChecksum.completePartial(in: whole, start: transportStart, offset: 16) }
            write(UnsafeRawBufferPointer(whole))
            return
        }
        let result = offload
            ? try? io.tun.writeCompletingChecksum(head, payload, checksumStart: transportStart, checksumOffset: 16)
            : try? io.tun.write(head, payload)
        switch result {
        case .value?:
            io.statistics.packetsToApp += 1
        case .wouldBlock?, nil:
            io.statistics.tunWriteDrops += 1
        }
    }

    /// The app's kernel completes our TCP checksums (NEEDS_CSUM in the
    /// virtio_net_hdr), so the payload is read once, by the copy into the
    /// kernel, instead of three times (our sum, that copy, the app's stack
    /// checking the sum). Only with no capture and no fault injection: both
    /// need the packet whole and checked. A capture would show partial sums.
    var completesTCPChecksums: Bool {
        io.tun.virtioHeaderLength > 0 && io.recorder == nil && io.outboundFaults == nil
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
            io.recorder?.record(packet, outbound: true)
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
        let packet = UnsafeRawBufferPointer(buffer.sub(0, n))
        switch try? io.tun.write(packet) {
        case .value?:
            io.statistics.packetsToApp += 1
            io.recorder?.record(packet, outbound: true)
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

extension SysIPAddress {
    /// The same address as Wire spells it.
    var wireAddress: IPAddress {
        switch self {
        case let .v4(value): .v4(IPv4Address(value))
        case let .v6(high, low): .v6(IPv6Address(high: high, low: low))
        }
    }
}
