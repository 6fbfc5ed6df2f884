public import Wire

/// Every TCP connection the app has opened through the TUN, keyed by its
/// addresses and ports. Only a SYN creates a flow, and the engine decides how:
/// accept at once (eager), accept after the upstream connected (lazy: the SYN
/// waits in `pending`), or refuse with a RST, an ICMP unreachable, or silence.
///
/// The table frames what the connections emit into IPv4 or IPv6 datagrams and
/// writes them to a `PacketSink`. It is as pure as the connections: time is passed in.
public final class TCPFlowTable {
    public struct Configuration: Sendable {
        public var tcp = TCPConfiguration()
        /// Established and half-open connections together; past it, SYNs get a RST.
        public var maximumFlows = 16384
        /// SYNs waiting for the engine's decision (lazy accept); past it, the
        /// oldest gives way (`takeEvictedPending`).
        public var maximumPending = 1024
        /// Mixed into initial sequence numbers (RFC 6528); the engine passes a random one.
        public var secret: UInt64 = 0x5eed
        public init() {}
    }

    public enum Refusal: Sendable, Equatable {
        case reset
        case unreachable(UnreachableReason)
        case drop
    }

    public enum Input: Sendable, Equatable {
        /// The segment went to this flow's connection.
        case segment(FlowKey)
        /// A SYN for a new flow: call `accept` or `refuse`.
        case connectionRequest(FlowKey)
        /// The table answered by itself (a RST for an unknown flow).
        case answered
        /// A SYN past `maximumFlows` when nothing could make room
        /// (`makeRoom`), answered with a RST.
        case refusedFull
        case dropped(DropReason)
    }

    public enum DropReason: Sendable, Equatable {
        case notTCP, malformed, badChecksum, fragment, duplicateSyn
        /// A RST for no connection (one that already ended, a duplicate):
        /// well-formed, and never answered (RFC 9293 §3.10.7.1).
        case resetForUnknownFlow
        /// A segment of a flow the rules dropped (`silence`).
        case silenced
    }

    public let configuration: Configuration
    /// Every connection not in TIME-WAIT: the ones whose timers `nextDeadline` and `poll` visit.
    public private(set) var connections: [FlowKey: TCPConnection] = [:]
    /// Connections in TIME-WAIT, kept apart. At a high rate of short connections
    /// there are thousands of them (one per connection of the last
    /// `timeWaitDuration`), each only waiting, and `nextDeadline` runs on every
    /// wake-up of the engine's loop: scanning them there made each new
    /// connection cost time in proportion to the connections of the last 2 s.
    /// Their deadlines wait in `timeWaitQueue`, earliest first.
    var timeWaiting: [FlowKey: TCPConnection] = [:]
    /// (deadline, flow) in deadline order from `timeWaitHead` on. An entry may be
    /// stale (the flow left, or a retransmitted FIN re-armed its timer, which
    /// adds a new entry): `poll` checks the connection's own deadline.
    var timeWaitQueue: [(deadline: Instant, key: FlowKey)] = []
    var timeWaitHead = 0
    /// Every other connection's timers, lazily (see DeadlineQueue): each
    /// connection has at most one live entry, at its `queuedDeadline`, never
    /// later than its real `nextDeadline`. `schedule` queues an earlier one.
    var timers = DeadlineQueue<FlowKey>()
    /// `poll`'s list of due flows, kept to spare an allocation per poll.
    var due: [FlowKey] = []
    var pending: [FlowKey: TCPHeader] = [:]
    /// Pending SYNs in arrival order; an entry is stale once accepted or
    /// refused: eviction skips those.
    var pendingOrder = ArrivalOrder<FlowKey>()
    /// SYNs that gave way to newer ones (`takeEvictedPending`).
    var evictedPending: [FlowKey] = []
    /// The connections the engine let give way (`letGiveWay`), in the order
    /// it did; an entry is stale once its connection left or was taken
    /// back: `makeRoom` skips those.
    var givingWayOrder = ArrivalOrder<FlowKey>()
    /// Connections that gave way to new ones (`takeEvictedConnections`).
    var evictedConnections: [FlowKey] = []
    var identification: UInt16 = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    public var count: Int { connections.count + timeWaiting.count }
    public var pendingCount: Int { pending.count }
    public var timeWaitCount: Int { timeWaiting.count }

    public func connection(_ key: FlowKey) -> TCPConnection? {
        if let connection = connections[key] { return connection }
        return timeWaiting.isEmpty ? nil : timeWaiting[key]
    }

    /// Flows dropped on purpose (REJECT-DROP after their first bytes were
    /// read), until when: their segments get no answer. Without it the app's
    /// next retransmission met "no connection" and its RST, 200 ms later,
    /// where a drop promises the app its own timeout. At most
    /// `silencedLimit`, the soonest to end going first.
    var silenced: [FlowKey: Instant] = [:]
    static let silencedLimit = 4096

    /// Ends `key`'s connection without a word (if there is one) and leaves
    /// every segment of it unanswered until `until`.
    public func silence(_ key: FlowKey, until: Instant) {
        if let connection = connections[key] ?? timeWaiting[key] { connection.abortSilently() }
        remove(key)
        if silenced.count >= Self.silencedLimit, silenced[key] == nil,
           let soonest = silenced.min(by: { $0.value < $1.value })?.key {
            silenced[soonest] = nil
        }
        silenced[key] = until
    }

    /// Takes one datagram the app sent. `packet` must carry TCP.
    public func input(_ packet: IPPacketView, now: Instant, sink: inout some PacketSink) -> Input {
        guard packet.upperLayerProtocol == .tcp else { return .dropped(.notTCP) }
        guard !packet.isFragment else { return .dropped(.fragment) }
        guard let tcp = try? TCPView(packet.payload) else { return .dropped(.malformed) }
        guard packet.verifyUpperLayerChecksum() == true else { return .dropped(.badChecksum) }
        let header = TCPHeader(tcp)
        let key = FlowKey(transport: .tcp, appAddress: packet.source, appPort: header.sourcePort,
                          destinationAddress: packet.destination, destinationPort: header.destinationPort)
        let isSyn = header.flags.contains(.syn) && !header.flags.contains(.ack)
        if !silenced.isEmpty, let until = silenced[key] {
            if now < until { return .dropped(.silenced) }
            silenced[key] = nil
        }

        if !timeWaiting.isEmpty, let connection = timeWaiting[key] {
            // RFC 1122 §4.2.2.13 (and RFC 6191): a new SYN may reuse a flow in TIME-WAIT
            // when its sequence number is past everything the old connection received.
            if isSyn, connection.receiveNext < header.sequenceNumber {
                timeWaiting[key] = nil
            } else {
                let before = connection.nextDeadline
                connection.receive(header, payload: tcp.payload, now: now)
                // A retransmitted FIN restarts TIME-WAIT; the old entry becomes stale.
                if let after = connection.nextDeadline, after != before { enqueueTimeWait(key, deadline: after) }
                return .segment(key)
            }
        } else if let connection = connections[key] {
            connection.receive(header, payload: tcp.payload, now: now)
            if connection.state == .timeWait {
                connections[key] = nil
                timeWaiting[key] = connection
                if let deadline = connection.nextDeadline { enqueueTimeWait(key, deadline: deadline) }
            } else {
                schedule(key, connection)
            }
            return .segment(key)
        }
        guard isSyn, !header.flags.contains(.rst) else {
            // RFC 9293 §3.10.7.1: no connection, so everything but a RST gets a RST.
            if let reply = TCPConnection.resetReply(to: header, payloadLength: tcp.payload.count) {
                send(reply, key: key, sink: &sink)
                return .answered
            }
            return .dropped(.resetForUnknownFlow)
        }
        if pending[key] != nil { return .dropped(.duplicateSyn) }
        guard count + pending.count < configuration.maximumFlows || makeRoom(now: now, sink: &sink) else {
            if let reply = TCPConnection.resetReply(to: header, payloadLength: tcp.payload.count) { send(reply, key: key, sink: &sink) }
            return .refusedFull
        }
        // Full: the oldest SYN gives way. Dropping new ones instead let a burst
        // of connections to addresses that never answer (a scan, apps that gave
        // up) stop every app's new connections until the kernel gave up on
        // theirs, a minute or two later.
        if pending.count >= configuration.maximumPending { evictOldestPending() }
        pending[key] = header
        pendingOrder.append(key, liveCount: pending.count) { pending[$0] != nil }
        return .connectionRequest(key)
    }

    func evictOldestPending() {
        guard let key = pendingOrder.popOldest(where: { pending[$0] != nil }) else { return }
        pending[key] = nil
        evictedPending.append(key)
    }

    /// Makes room in a full table for a new SYN, the cheapest loss first:
    /// the oldest flow in TIME-WAIT goes without a word (as Linux's do past
    /// tcp_max_tw_buckets: it only waited to ACK a retransmitted FIN again),
    /// else the oldest connection the engine let give way is reset. False
    /// when there is neither.
    func makeRoom(now: Instant, sink: inout some PacketSink) -> Bool {
        while timeWaitHead < timeWaitQueue.count {
            let key = timeWaitQueue[timeWaitHead].key
            timeWaitHead += 1
            if timeWaiting.removeValue(forKey: key) != nil {
                compactTimeWaitQueue()
                return true
            }
        }
        compactTimeWaitQueue()
        guard let key = givingWayOrder.popOldest(where: { connections[$0]?.givesWayWhenFull == true }),
              let connection = connections[key] else { return false }
        connection.givesWayWhenFull = false
        connection.abort()
        flush(key, connection: connection, now: now, sink: &sink)
        evictedConnections.append(key)
        return true
    }

    /// Lets `key`'s connection give way, reset, when the table is full and a
    /// new SYN comes (or takes that back: `false`). The engine lets those
    /// whose app has left (its FIN came) before anything upstream answered:
    /// a scan through a profile that sniffs (every port's handshake is
    /// Sluice's own, then the app closes), or apps that gave up on servers
    /// that never answer, would otherwise hold their place for as long as
    /// the upstream connects try (the kernel's SYN retries: 127 s), and every
    /// new connection would be refused meanwhile.
    public func letGiveWay(_ key: FlowKey, _ on: Bool = true) {
        guard let connection = connections[key], connection.givesWayWhenFull != on else { return }
        connection.givesWayWhenFull = on
        guard on else { return }
        givingWayOrder.append(key, liveCount: connections.count) { connections[$0]?.givesWayWhenFull == true }
    }

    /// The connections that gave way since the last call (`letGiveWay`):
    /// reset towards the app already; the engine ends what served them.
    public func takeEvictedConnections() -> [FlowKey] {
        guard !evictedConnections.isEmpty else { return [] }
        defer { evictedConnections.removeAll(keepingCapacity: true) }
        return evictedConnections
    }

    /// The SYNs that gave way since the last call: the engine drops what it
    /// started for them (an upstream connect, a lookup). The app's next SYN,
    /// if it still waits, starts over.
    public func takeEvictedPending() -> [FlowKey] {
        guard !evictedPending.isEmpty else { return [] }
        defer { evictedPending.removeAll(keepingCapacity: true) }
        return evictedPending
    }

    /// Accepts a pending SYN: the connection is created and its SYN-ACK sent.
    @discardableResult
    public func accept(_ key: FlowKey, now: Instant, configuration tcp: TCPConfiguration? = nil,
                       sink: inout some PacketSink) -> TCPConnection? {
        guard let syn = pending.removeValue(forKey: key) else { return nil }
        let connection = TCPConnection(acceptingSyn: syn, initialSequence: initialSequence(for: key, now: now),
                                       configuration: tcp ?? configuration.tcp, now: now,
                                       timestampOffset: UInt32(truncatingIfNeeded: mix(configuration.secret, UInt64(key.appPort))))
        connections[key] = connection
        flush(key, now: now, sink: &sink)
        return connection
    }

    /// Opens a connection to the app (an active open, RFC 9293 §3.10.1): the
    /// engine forwards a connection that arrived on the host side to a port
    /// the app listens on. `key.appAddress`/`appPort` are the app's end,
    /// `destinationAddress`/`destinationPort` ours. Nil when the flow exists
    /// or the table is full.
    public func open(_ key: FlowKey, now: Instant, configuration tcp: TCPConfiguration? = nil,
                     sink: inout some PacketSink) -> TCPConnection? {
        guard connection(key) == nil, pending[key] == nil, connections.count < configuration.maximumFlows else { return nil }
        let connection = TCPConnection(connectingFrom: key.destinationPort, to: key.appPort,
                                       initialSequence: initialSequence(for: key, now: now),
                                       configuration: tcp ?? configuration.tcp, now: now,
                                       timestampOffset: UInt32(truncatingIfNeeded: mix(configuration.secret, UInt64(key.destinationPort))))
        connections[key] = connection
        flush(key, connection: connection, now: now, sink: &sink)
        return connection
    }

    /// Refuses a pending SYN as the engine decided.
    public func refuse(_ key: FlowKey, with refusal: Refusal, sink: inout some PacketSink) {
        guard let syn = pending.removeValue(forKey: key) else { return }
        switch refusal {
        case .reset:
            if let reply = TCPConnection.resetReply(to: syn, payloadLength: 0) { send(reply, key: key, sink: &sink) }
        case let .unreachable(reason):
            sendError(UpstreamICMPError(reason), from: nil, quoting: syn, key: key, sink: &sink)
        case .drop:
            break
        }
    }

    /// Refuses a pending SYN with the ICMP error a network sent about the
    /// connect it stood for, from the router that sent it (`sender`; nil:
    /// from the destination): a time exceeded for a SYN whose TTL ran out
    /// (`traceroute -T`), a router's net unreachable or prohibition, as the
    /// app would have heard them without Sluice.
    public func refuse(_ key: FlowKey, with error: UpstreamICMPError, from sender: IPAddress?, sink: inout some PacketSink) {
        guard let syn = pending.removeValue(forKey: key) else { return }
        sendError(error, from: sender, quoting: syn, key: key, sink: &sink)
    }

    /// An ICMP error to the app about its SYN, whose datagram is rebuilt to be quoted.
    private func sendError(_ error: UpstreamICMPError, from sender: IPAddress?, quoting syn: TCPHeader, key: FlowKey,
                           sink: inout some PacketSink) {
        withUnsafeTemporaryAllocation(byteCount: 40 + 60, alignment: 8) { original in
            let n = IPFraming.writeTCP(into: original, source: key.appAddress, destination: key.destinationAddress,
                                       header: syn, payload: UnsafeRawBufferPointer(start: nil, count: 0), identification: 0)
            guard n > 0, let view = try? IPPacketView(UnsafeRawBufferPointer(original.sub(0, n))) else { return }
            sink.send(capacity: 48 + n) { IPFraming.writeError(into: $0, replyingTo: view, v4: error.v4, v6: error.v6, from: sender) }
        }
    }

    /// Sends what the flow's connection owes, and forgets the flow once it is closed.
    public func flush(_ key: FlowKey, now: Instant, sink: inout some PacketSink) {
        guard let connection = connection(key) else { return }
        flush(key, connection: connection, now: now, sink: &sink)
    }

    /// `flush` for a caller that holds the flow's connection already (one
    /// lookup less per packet). `connection` must be `connection(key)`.
    public func flush(_ key: FlowKey, connection: TCPConnection, now: Instant, sink: inout some PacketSink) {
        connection.output(now: now) { header, payload in
            send(header, payload: payload, key: key, sink: &sink)
        }
        // The engine flushes after draining: a TIME-WAIT flow's data is all gone by now.
        if connection.state == .timeWait { connection.releaseBuffersInTimeWait() }
        if connection.state == .closed {
            connections[key] = nil
            timeWaiting[key] = nil
        } else if connection.state != .timeWait {
            schedule(key, connection)
        }
    }

    /// Queues the connection's deadline if it is earlier than its queued one.
    /// Deadlines only move earlier in `receive` and `output`, and both end here.
    func schedule(_ key: FlowKey, _ connection: TCPConnection) {
        guard let deadline = connection.nextDeadline else { return }
        if let queued = connection.queuedDeadline, queued <= deadline { return }
        connection.queuedDeadline = deadline
        if timers.count >= 2 * connections.count + 64 {
            timers.compact { self.connections[$0.key]?.queuedDeadline == $0.deadline }
        }
        timers.insert(deadline, key)
    }

    /// A flow `poll` closed, and which timer gave up on it (nil when its
    /// TIME-WAIT ended, or it had been aborted).
    public struct Closed: Sendable, Equatable, CustomStringConvertible {
        public let key: FlowKey
        public let timeout: TCPTimeout?

        public var description: String { "\(key) closed" + (timeout.map { " (\($0))" } ?? "") }
    }

    /// Fires due timers on every flow. Returns the flows that closed.
    public func poll(now: Instant, sink: inout some PacketSink) -> [Closed] {
        // Due entries first, then flushed, so that a flow whose timer fires
        // again at once (flush queues its next deadline) waits for the next poll.
        due.removeAll(keepingCapacity: true)
        while let (deadline, key) = timers.popDue(now: now) {
            // A stale entry: the flow left, or its live entry is another one.
            guard let connection = connections[key], connection.queuedDeadline == deadline else { continue }
            connection.queuedDeadline = nil
            if let real = connection.nextDeadline, real <= now {
                due.append(key)
            } else {
                // Moved out since it was queued (each ACK pushes the retransmission timer).
                schedule(key, connection)
            }
        }
        var closed: [Closed] = []
        for key in due {
            // Due keys came from `connections`, and flushing one removes no other.
            guard let connection = connections[key] else { continue }
            flush(key, connection: connection, now: now, sink: &sink)
            if connections[key] == nil { closed.append(Closed(key: key, timeout: connection.timeout)) }
        }
        // TIME-WAIT: only the entries that are due, earliest first.
        var budget = timeWaitQueue.count - timeWaitHead
        while budget > 0, timeWaitHead < timeWaitQueue.count, timeWaitQueue[timeWaitHead].deadline <= now {
            budget -= 1
            let key = timeWaitQueue[timeWaitHead].key
            timeWaitHead += 1
            guard let connection = timeWaiting[key] else { continue }
            if let deadline = connection.nextDeadline, deadline > now {
                // Re-armed since this entry was queued. Queue the new deadline
                // (a duplicate if `input` already did: harmless, it finds the flow gone).
                enqueueTimeWait(key, deadline: deadline)
                continue
            }
            flush(key, now: now, sink: &sink)
            if timeWaiting[key] == nil {
                closed.append(Closed(key: key, timeout: nil))
            } else if let deadline = connection.nextDeadline {
                enqueueTimeWait(key, deadline: deadline)
            } else if connection.state == .closed || connection.state == .timeWait {
                // No timer left (aborted): nothing more will happen to it.
                timeWaiting[key] = nil
                closed.append(Closed(key: key, timeout: nil))
            }
        }
        compactTimeWaitQueue()
        return closed
    }

    /// When to poll next: no flow's timer is due before it. It may be earlier
    /// than every real deadline (a stale entry): `poll` then fires nothing and
    /// queues the real one.
    public var nextDeadline: Instant? {
        var earliest = timers.earliest
        if timeWaitHead < timeWaitQueue.count {
            let d = timeWaitQueue[timeWaitHead].deadline
            if earliest.map({ d < $0 }) ?? true { earliest = d }
        }
        return earliest
    }

    /// Forgets a flow at once, without sending anything.
    public func remove(_ key: FlowKey) {
        connections[key] = nil
        timeWaiting[key] = nil
        pending[key] = nil
    }

    /// Queues a TIME-WAIT deadline in order. They nearly always arrive in order
    /// (entry time plus one fixed duration), so this is an append.
    func enqueueTimeWait(_ key: FlowKey, deadline: Instant) {
        var index = timeWaitQueue.count
        while index > timeWaitHead, timeWaitQueue[index - 1].deadline > deadline { index -= 1 }
        timeWaitQueue.insert((deadline, key), at: index)
    }

    /// Drops the consumed front of the queue once it is most of the storage.
    func compactTimeWaitQueue() {
        if timeWaitHead == timeWaitQueue.count {
            timeWaitQueue.removeAll(keepingCapacity: true)
            timeWaitHead = 0
        } else if timeWaitHead > 1024, timeWaitHead * 2 > timeWaitQueue.count {
            timeWaitQueue.removeFirst(timeWaitHead)
            timeWaitHead = 0
        }
    }

    // MARK: Framing

    func send(_ header: TCPHeader, payload: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
              key: FlowKey, sink: inout some PacketSink) {
        identification &+= 1
        let id = identification
        // Our segments travel from the destination back to the app; the
        // payload stays in the send ring until the sink writes it.
        let partial = sink.completesTCPChecksums
        sink.send(headerCapacity: IPFraming.maximumTCPOverhead, payload: payload) { buffer in
            IPFraming.writeTCPHeaders(into: buffer, source: key.destinationAddress, destination: key.appAddress,
                                      header: header, payload: payload, identification: id, partialChecksum: partial)
        }
    }

    /// RFC 6528: a 4-µs clock plus a keyed hash of the connection's identity.
    func initialSequence(for key: FlowKey, now: Instant) -> SequenceNumber {
        var h = mix(configuration.secret, UInt64(key.appPort) << 16 | UInt64(key.destinationPort))
        h = mix(h, key.appAddress.hashSeed)
        h = mix(h, key.destinationAddress.hashSeed)
        let clock = UInt64(bitPattern: now.nanoseconds / 4000)
        return SequenceNumber(UInt32(truncatingIfNeeded: h &+ clock))
    }

    func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        var g = SplitMix64(seed: a ^ (b &* 0x9e37_79b9_7f4a_7c15))
        return g.next()
    }
}

extension IPAddress {
    /// The address folded to 64 bits, for keyed hashing.
    var hashSeed: UInt64 {
        switch self {
        case let .v4(a): return UInt64(a.value)
        case let .v6(a): return a.high ^ (a.low &* 0xff51_afd7_ed55_8ccd)
        }
    }
}
