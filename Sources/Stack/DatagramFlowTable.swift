public import Wire

/// UDP sessions and ICMP echo flows: what the app sends that is not TCP.
/// A UDP session is keyed by its four-tuple, an echo flow by the app's
/// address, the destination and the ICMP identifier (carried in `appPort`).
/// Each lives until it has been idle for its timeout; the engine relays the
/// datagrams (one upstream socket per session) and writes replies back
/// through `sendUDP` and `sendEchoReply`, which frame them as the destination.
public final class DatagramFlowTable {
    public struct Configuration: Sendable {
        public var udpIdleTimeout: Duration = .seconds(60)
        public var echoIdleTimeout: Duration = .seconds(10)
        /// Past it, a new session takes the place of the one closest to
        /// expiring (`takeEvicted`).
        public var maximumSessions = 4096
        public init() {}
    }

    public enum Input {
        /// A UDP datagram; `isNew` when it opened the session.
        case udp(FlowKey, payload: UnsafeRawBufferPointer, isNew: Bool)
        /// An ICMP or ICMPv6 echo request.
        case echoRequest(FlowKey, sequenceNumber: UInt16, payload: UnsafeRawBufferPointer, isNew: Bool)
        /// The app's ICMP port unreachable for a datagram of session `key`
        /// (from its far side): nothing listens at the app's end of it.
        case appPortUnreachable(FlowKey)
        case dropped(DropReason)
    }

    public enum DropReason: Sendable, Equatable {
        case notDatagram, malformed, badChecksum, fragment, notEchoRequest
    }

    struct Session {
        var lastActivity: Instant
        var datagrams = 0
        /// The deadline of the session's live entry in `timers`. Activity only
        /// moves the real deadline later, so the entry stays a safe lower bound.
        var queuedDeadline: Instant
    }

    public let configuration: Configuration
    var sessions: [FlowKey: Session] = [:]
    /// Echo flows by the part of their key that a reply carries (transport,
    /// destination, identifier; see `replyKey`), with how many flows share it:
    /// apps at different addresses may ping one destination with one identifier.
    var echoFlows: [FlowKey: (flow: FlowKey, sharing: Int)] = [:]
    /// Idle deadlines, lazily (see DeadlineQueue): one live entry per session.
    var timers = DeadlineQueue<FlowKey>()
    /// Sessions that gave way to new ones while the table was full (`takeEvicted`).
    var evicted: [FlowKey] = []
    var identification: UInt16 = 0

    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    public var count: Int { sessions.count }

    public func contains(_ key: FlowKey) -> Bool { sessions[key] != nil }

    /// Takes one datagram the app sent (UDP, ICMP or ICMPv6; not fragmented).
    public func input(_ packet: IPPacketView, now: Instant, sink: inout some PacketSink) -> Input {
        guard !packet.isFragment else { return .dropped(.fragment) }
        let proto = packet.upperLayerProtocol
        switch proto {
        case .udp:
            guard let udp = try? UDPView(packet.payload) else { return .dropped(.malformed) }
            guard packet.verifyUpperLayerChecksum() == true else { return .dropped(.badChecksum) }
            let key = FlowKey(transport: .udp, appAddress: packet.source, appPort: udp.sourcePort,
                              destinationAddress: packet.destination, destinationPort: udp.destinationPort)
            let isNew = touch(key, now: now)
            return .udp(key, payload: udp.payload, isNew: isNew)
        case .icmp, .icmpv6:
            guard packet.verifyUpperLayerChecksum() == true else { return .dropped(.badChecksum) }
            let identifier: UInt16, sequence: UInt16, data: UnsafeRawBufferPointer
            switch packet.network {
            case .v4:
                guard let icmp = try? ICMPv4View(packet.payload) else { return .dropped(.malformed) }
                if case .destinationUnreachable(.port) = icmp.message { return portUnreachable(quoting: icmp.payload) }
                guard case let .echoRequest(id, seq) = icmp.message else { return .dropped(.notEchoRequest) }
                (identifier, sequence, data) = (id, seq, icmp.payload)
            case .v6:
                guard let icmp = try? ICMPv6View(packet.payload) else { return .dropped(.malformed) }
                if case .destinationUnreachable(.port) = icmp.message { return portUnreachable(quoting: icmp.payload) }
                guard case let .echoRequest(id, seq) = icmp.message else { return .dropped(.notEchoRequest) }
                (identifier, sequence, data) = (id, seq, icmp.payload)
            }
            let key = FlowKey(transport: proto, appAddress: packet.source, appPort: identifier,
                              destinationAddress: packet.destination, destinationPort: 0)
            let isNew = touch(key, now: now)
            return .echoRequest(key, sequenceNumber: sequence, payload: data, isNew: isNew)
        default:
            return .dropped(.notDatagram)
        }
    }

    /// The session an app's port unreachable is about: the quoted datagram
    /// went from the session's far side to the app (RFC 792, RFC 4443 §3.1:
    /// the error quotes its IP header and at least 8 bytes, the UDP ports).
    func portUnreachable(quoting quoted: UnsafeRawBufferPointer) -> Input {
        guard let original = try? IPPacketView(quoted: quoted), original.upperLayerProtocol == .udp,
              original.payload.count >= 4 else { return .dropped(.malformed) }
        let ports = original.payload
        let key = FlowKey(transport: .udp, appAddress: original.destination, appPort: UInt16(ports[2]) << 8 | UInt16(ports[3]),
                          destinationAddress: original.source, destinationPort: UInt16(ports[0]) << 8 | UInt16(ports[1]))
        guard sessions[key] != nil else { return .dropped(.notEchoRequest) }
        return .appPortUnreachable(key)
    }

    /// Records activity; true when the datagram opened a session. A full
    /// table makes room: refusing instead let one app that sends to thousands
    /// of ports (a scan, a DHT) cut every app off UDP, and off Sluice's own
    /// DNS, until its sessions expired.
    func touch(_ key: FlowKey, now: Instant) -> Bool {
        if let index = sessions.index(forKey: key) {
            sessions.values[index].lastActivity = now
            sessions.values[index].datagrams += 1
            return false
        }
        if sessions.count >= configuration.maximumSessions { evictClosestToExpiring() }
        let deadline = now + timeout(for: key)
        sessions[key] = Session(lastActivity: now, datagrams: 1, queuedDeadline: deadline)
        if key.transport != .udp {
            let reply = Self.replyKey(transport: key.transport, destination: key.destinationAddress, identifier: key.appPort)
            if let index = echoFlows.index(forKey: reply) { echoFlows.values[index].sharing += 1 } else { echoFlows[reply] = (key, 1) }
        }
        if timers.count >= 2 * sessions.count + 64 {
            timers.compact { self.sessions[$0.key]?.queuedDeadline == $0.deadline }
        }
        timers.insert(deadline, key)
        return true
    }

    /// Removes the session whose idle deadline comes first: the least
    /// recently active, as their timeouts allow.
    func evictClosestToExpiring() {
        let horizon = Instant(nanoseconds: Int64.max)
        while let (deadline, key) = timers.popDue(now: horizon) {
            guard let index = sessions.index(forKey: key), sessions.values[index].queuedDeadline == deadline else { continue }
            let real = sessions.values[index].lastActivity + timeout(for: key)
            if real > deadline, let next = timers.earliest, real > next {
                // Active since it was queued, and others come first now.
                sessions.values[index].queuedDeadline = real
                timers.insert(real, key)
                continue
            }
            sessions.remove(at: index)
            forgetEcho(key)
            evicted.append(key)
            return
        }
    }

    /// The sessions that gave way since the last call: the engine ends them as
    /// it ends expired ones.
    public func takeEvicted() -> [FlowKey] {
        guard !evicted.isEmpty else { return [] }
        defer { evicted.removeAll(keepingCapacity: true) }
        return evicted
    }

    /// Opens a UDP session from our side (a forwarded port's client, which
    /// the app will answer): false when it exists already or the table is full.
    public func open(_ key: FlowKey, now: Instant) -> Bool {
        guard key.transport == .udp, sessions[key] == nil, sessions.count < configuration.maximumSessions else { return false }
        let deadline = now + timeout(for: key)
        sessions[key] = Session(lastActivity: now, datagrams: 0, queuedDeadline: deadline)
        if timers.count >= 2 * sessions.count + 64 {
            timers.compact { self.sessions[$0.key]?.queuedDeadline == $0.deadline }
        }
        timers.insert(deadline, key)
        return true
    }

    /// Sends a UDP datagram from the session's destination back to the app.
    /// Returns false when the session is unknown or the datagram cannot be framed.
    @discardableResult
    public func sendUDP(_ key: FlowKey, payload: UnsafeRawBufferPointer, now: Instant, sink: inout some PacketSink) -> Bool {
        guard key.transport == .udp, let index = sessions.index(forKey: key) else { return false }
        sessions.values[index].lastActivity = now
        identification &+= 1
        let id = identification
        var written = 0
        sink.send(capacity: 48 + payload.count) { buffer in
            written = IPFraming.writeUDP(into: buffer, source: key.destinationAddress, sourcePort: key.destinationPort,
                                         destination: key.appAddress, destinationPort: key.appPort,
                                         payload: payload, identification: id)
            return written
        }
        return written > 0
    }

    /// ICMP destination unreachable for a UDP session, as a network would
    /// send it when one of the app's datagrams met a closed port (Sluice's
    /// socket got ECONNREFUSED) or no way to the host: the app's kernel then
    /// reports the error on its socket (ECONNREFUSED, EHOSTUNREACH), as it
    /// would without Sluice. The quote is the header of a datagram of the
    /// session (RFC 792: the IP header and the first 64 bits of the data,
    /// here the UDP header), which is what the app's kernel matches to its
    /// socket by; the datagram that failed is not kept.
    @discardableResult
    public func sendUDPUnreachable(_ key: FlowKey, reason: UnreachableReason, now: Instant, sink: inout some PacketSink) -> Bool {
        sendUDPError(key, UpstreamICMPError(reason), now: now, sink: &sink)
    }

    /// An ICMP error a network sent about the session's datagram, passed on
    /// to the app from `router` when a router on the way sent it (nil: from
    /// the session's destination, which sent it itself or stands behind a fake IP).
    @discardableResult
    public func sendUDPError(_ key: FlowKey, _ error: UpstreamICMPError, from router: IPAddress? = nil, now: Instant,
                             sink: inout some PacketSink) -> Bool {
        guard key.transport == .udp, let index = sessions.index(forKey: key) else { return false }
        sessions.values[index].lastActivity = now
        let id = identification
        return sendError(error, from: router, sink: &sink) { quote in
            IPFraming.writeUDP(into: quote, source: key.appAddress, sourcePort: key.appPort,
                               destination: key.destinationAddress, destinationPort: key.destinationPort,
                               payload: UnsafeRawBufferPointer(start: nil, count: 0), identification: id)
        }
    }

    /// An ICMP error about the echo request `sequenceNumber` of a ping flow
    /// (a router had no way to its destination): the app's ping prints it
    /// ("Destination Net Unreachable") where it would only have waited. The
    /// quote is the request's header, with the app's identifier, which is
    /// what the app's kernel and ping match it by.
    @discardableResult
    public func sendEchoError(_ key: FlowKey, sequenceNumber: UInt16, _ error: UpstreamICMPError, from router: IPAddress? = nil,
                              now: Instant, sink: inout some PacketSink) -> Bool {
        guard key.transport != .udp, let index = sessions.index(forKey: key) else { return false }
        sessions.values[index].lastActivity = now
        return sendError(error, from: router, sink: &sink) { quote in
            IPFraming.writeEcho(into: quote, request: true, source: key.appAddress, destination: key.destinationAddress,
                                identifier: key.appPort, sequenceNumber: sequenceNumber, payload: UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    /// Frames `error` around the header `writeQuote` writes.
    func sendError(_ error: UpstreamICMPError, from router: IPAddress?, sink: inout some PacketSink,
                   writeQuote: (UnsafeMutableRawBufferPointer) -> Int) -> Bool {
        var written = 0
        withUnsafeTemporaryAllocation(byteCount: 48, alignment: 8) { quote in
            let length = writeQuote(quote)
            guard length > 0, let original = try? IPPacketView(UnsafeRawBufferPointer(rebasing: quote[0 ..< length])) else { return }
            sink.send(capacity: 48 + 48) { buffer in
                written = IPFraming.writeError(into: buffer, replyingTo: original, v4: error.v4, v6: error.v6, from: router)
                return written
            }
        }
        return written > 0
    }

    /// Sends the echo reply for `sequenceNumber` as the destination would.
    @discardableResult
    public func sendEchoReply(_ key: FlowKey, sequenceNumber: UInt16, payload: UnsafeRawBufferPointer, now: Instant,
                              sink: inout some PacketSink) -> Bool {
        guard let index = sessions.index(forKey: key) else { return false }
        sessions.values[index].lastActivity = now
        var written = 0
        sink.send(capacity: 48 + payload.count) { buffer in
            written = IPFraming.writeEchoReply(into: buffer, source: key.destinationAddress, destination: key.appAddress,
                                               identifier: key.appPort, sequenceNumber: sequenceNumber, payload: payload)
            return written
        }
        return written > 0
    }

    /// Ends sessions idle past their timeout; returns them so the engine closes their sockets.
    public func expire(now: Instant) -> [FlowKey] {
        var expired: [FlowKey] = []
        while let (deadline, key) = timers.popDue(now: now) {
            // A stale entry: the session left (and maybe came back with an entry of its own).
            guard let index = sessions.index(forKey: key), sessions.values[index].queuedDeadline == deadline else { continue }
            let real = sessions.values[index].lastActivity + timeout(for: key)
            if real <= now {
                expired.append(key)
                sessions.remove(at: index)
                forgetEcho(key)
            } else {
                sessions.values[index].queuedDeadline = real
                timers.insert(real, key)
            }
        }
        return expired
    }

    /// When to expire next: no session is due before it. It may be earlier than
    /// every real deadline (activity since): `expire` then only queues the real one.
    public var nextDeadline: Instant? { timers.earliest }

    public func remove(_ key: FlowKey) {
        guard sessions.removeValue(forKey: key) != nil else { return }
        forgetEcho(key)
    }

    /// The echo flow a reply from `destination` with `identifier` belongs to:
    /// one lookup, not a scan of every session per reply (a ping flood).
    public func echoFlow(destination: IPAddress, identifier: UInt16, transport: IPProtocol) -> FlowKey? {
        echoFlows[Self.replyKey(transport: transport, destination: destination, identifier: identifier)]?.flow
    }

    /// A reply names neither the app's address nor a port: those are blank.
    static func replyKey(transport: IPProtocol, destination: IPAddress, identifier: UInt16) -> FlowKey {
        FlowKey(transport: transport, appAddress: .v4(.any), appPort: identifier, destinationAddress: destination, destinationPort: 0)
    }

    /// An echo flow left: drop its index entry, or hand it to another flow that shares it.
    func forgetEcho(_ key: FlowKey) {
        guard key.transport != .udp else { return }
        let reply = Self.replyKey(transport: key.transport, destination: key.destinationAddress, identifier: key.appPort)
        guard let entry = echoFlows[reply] else { return }
        if entry.sharing <= 1 {
            echoFlows[reply] = nil
        } else if entry.flow == key {
            // Rare (two apps, one destination, one identifier): find the other.
            let other = sessions.keys.first { $0.transport == key.transport && $0.appPort == key.appPort && $0.destinationAddress == key.destinationAddress }
            echoFlows[reply] = other.map { ($0, entry.sharing - 1) }
        } else {
            echoFlows[reply] = (entry.flow, entry.sharing - 1)
        }
    }

    func timeout(for key: FlowKey) -> Duration {
        key.transport == .udp ? configuration.udpIdleTimeout : configuration.echoIdleTimeout
    }
}
