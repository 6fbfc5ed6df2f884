public import Wire

/// Follows every TCP connection in a capture, both directions, without
/// taking part: the reassembly `sluice replay` needs. A connection starts at
/// its SYN, or at the first segment seen when the capture began mid-flow
/// (then the side with the lower port is taken for the server); it ends when
/// both FINs were reached in order, at a RST, or at the end of the capture.
///
/// Memory is bounded twice: each direction holds at most `holdCapacity`
/// out-of-order bytes, and all of them together at most `totalHoldCapacity`;
/// past either limit the hole is reported as a gap, never waited on. Past
/// `maximumConnections` new connections are counted and not followed.
public final class PassiveTCPTable {
    public struct Limits: Sendable, Equatable {
        /// Out-of-order bytes one direction may hold (at least one 64 KiB segment).
        public var holdCapacity = 1 << 20
        /// Out-of-order bytes all connections together may hold.
        public var totalHoldCapacity = 64 << 20
        /// Connections followed at once.
        public var maximumConnections = 65536
        /// A connection silent this long (capture time) is ended, so that
        /// unanswered SYNs and vanished peers do not fill the table.
        public var idleTimeout: Duration = .seconds(600)
        public init() {}
    }

    public enum Direction: Sendable, Equatable, CustomStringConvertible {
        /// From the client (the SYN's sender) to the server.
        case up
        case down
        public var description: String { self == .up ? "up" : "down" }
    }

    public enum EndReason: String, Sendable, Equatable, CustomStringConvertible {
        /// Both FINs were reached.
        case closed
        case reset
        /// The capture ended first.
        case endOfCapture = "end of capture"
        /// Nothing was seen for `idleTimeout`.
        case idle
        public var description: String { rawValue }
    }

    public enum Event {
        case opened(PassiveTCPConnection)
        /// In-order bytes, valid during the call only.
        case data(PassiveTCPConnection, Direction, UnsafeRawBufferPointer)
        /// Bytes the capture never showed.
        case gap(PassiveTCPConnection, Direction, Int)
        case ended(PassiveTCPConnection, EndReason)
    }

    public let limits: Limits
    /// Connections not followed because `maximumConnections` were open.
    public private(set) var untracked = 0
    /// Segments that were no TCP we could read.
    public private(set) var malformed = 0
    /// Out-of-order bytes held now, all connections together.
    public private(set) var heldBytes = 0
    public var openConnections: Int { connections.count }
    private var connections: [FlowKey: PassiveTCPConnection] = [:]
    private var nextID: UInt64 = 1
    /// When idle connections were last looked for.
    private var lastSweep: Instant?

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Takes one IP datagram (anything but unfragmented TCP is ignored).
    public func receive(_ packet: IPPacketView, at time: Instant, _ handle: (Event) -> Void) {
        guard packet.upperLayerProtocol == .tcp, !packet.isFragment else { return }
        sweepIdle(at: time, handle)
        let segment: TCPView
        do { segment = try TCPView(packet.payload) } catch {
            malformed += 1
            return
        }
        let flags = segment.flags
        let forward = FlowKey(transport: .tcp, appAddress: packet.source, appPort: segment.sourcePort,
                              destinationAddress: packet.destination, destinationPort: segment.destinationPort)
        let reverse = FlowKey(transport: .tcp, appAddress: packet.destination, appPort: segment.destinationPort,
                              destinationAddress: packet.source, destinationPort: segment.sourcePort)
        var connection: PassiveTCPConnection
        var direction: Direction
        if let found = connections[forward] {
            connection = found
            direction = .up
        } else if let found = connections[reverse] {
            connection = found
            direction = .down
        } else {
            // A lone RST, or the last ACK after both FINs, starts nothing.
            if flags.contains(.rst) || (!flags.contains(.syn) && segment.payload.isEmpty) { return }
            guard connections.count < limits.maximumConnections else {
                untracked += 1
                return
            }
            let isSynAck = flags.contains(.syn) && flags.contains(.ack)
            let clientSent: Bool
            if flags.contains(.syn) {
                clientSent = !isSynAck
            } else {
                clientSent = segment.sourcePort >= segment.destinationPort
            }
            let key = clientSent ? forward : reverse
            connection = PassiveTCPConnection(id: nextID, key: key, started: time, sawHandshake: flags.contains(.syn),
                                              holdCapacity: limits.holdCapacity)
            nextID += 1
            connections[key] = connection
            direction = clientSent ? .up : .down
            handle(.opened(connection))
        }
        // A new SYN on a finished 4-tuple is a new connection (port reuse).
        if flags.contains(.syn), !flags.contains(.ack), direction == .up, connection.client.isFinished || connection.server.isFinished {
            end(connection, .closed, handle)
            receive(packet, at: time, handle)
            return
        }
        connection.lastSeen = time
        let stream = direction == .up ? connection.client : connection.server
        let heldBefore = stream.heldCapacity
        let budget = limits.totalHoldCapacity - heldBytes
        stream.receive(sequence: segment.sequenceNumber, syn: flags.contains(.syn), fin: flags.contains(.fin),
                       payload: segment.payload, canHold: { stream.holdCapacity <= budget }) { chunk in
            switch chunk {
            case let .data(bytes):
                handle(.data(connection, direction, bytes))
            case let .gap(n):
                handle(.gap(connection, direction, n))
            }
        }
        heldBytes += stream.heldCapacity - heldBefore
        if flags.contains(.rst) {
            end(connection, .reset, handle)
        } else if connection.client.isFinished, connection.server.isFinished {
            end(connection, .closed, handle)
        }
    }

    /// Ends connections silent for `idleTimeout`, looking at most once a tenth of it.
    private func sweepIdle(at time: Instant, _ handle: (Event) -> Void) {
        let step = limits.idleTimeout / 10
        guard let last = lastSweep else { lastSweep = time; return }
        guard time - last >= step else { return }
        lastSweep = time
        let idle = connections.values.filter { time - $0.lastSeen >= limits.idleTimeout }
        for connection in idle.sorted(by: { $0.id < $1.id }) { end(connection, .idle, handle) }
    }

    /// The capture is over: every open connection hands on what it holds and ends.
    public func finish(_ handle: (Event) -> Void) {
        for connection in connections.values.sorted(by: { $0.id < $1.id }) {
            end(connection, .endOfCapture, handle)
        }
    }

    private func end(_ connection: PassiveTCPConnection, _ reason: EndReason, _ handle: (Event) -> Void) {
        guard connections[connection.key] === connection else { return }
        for direction in [Direction.up, .down] {
            let stream = direction == .up ? connection.client : connection.server
            heldBytes -= stream.heldCapacity
            stream.flush { chunk in
                switch chunk {
                case let .data(bytes): handle(.data(connection, direction, bytes))
                case let .gap(n): handle(.gap(connection, direction, n))
                }
            }
        }
        connections[connection.key] = nil
        connection.endReason = reason
        handle(.ended(connection, reason))
    }
}

/// One connection a `PassiveTCPTable` follows.
public final class PassiveTCPConnection: CustomStringConvertible {
    /// 1, 2, 3... in the order connections were first seen.
    public let id: UInt64
    /// The client's address and port as the app side; the server's as the destination.
    public let key: FlowKey
    public let started: Instant
    public internal(set) var lastSeen: Instant
    /// The capture showed the SYN; otherwise it began mid-flow.
    public let sawHandshake: Bool
    public let client: PassiveTCPStream
    public let server: PassiveTCPStream
    public internal(set) var endReason: PassiveTCPTable.EndReason?

    init(id: UInt64, key: FlowKey, started: Instant, sawHandshake: Bool, holdCapacity: Int) {
        self.id = id
        self.key = key
        self.started = started
        lastSeen = started
        self.sawHandshake = sawHandshake
        client = PassiveTCPStream(holdCapacity: holdCapacity)
        server = PassiveTCPStream(holdCapacity: holdCapacity)
    }

    /// `#3 TCP 10.0.0.1.40000 > 10.0.0.2.80 up [next 1001 ...] down [...]`
    public var description: String {
        "#\(id) \(key)\(sawHandshake ? "" : " (mid-flow)") up [\(client)] down [\(server)]" + (endReason.map { " \($0)" } ?? "")
    }
}
