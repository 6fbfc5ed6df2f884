internal import Sys

/// The control socket's server. It runs on the tunnel's own thread: its
/// listener and clients sit in an epoll of their own, whose descriptor the
/// tunnel's loop watches under a single token; when that descriptor is
/// readable, `serve` answers everything ready without blocking. So the
/// tunnel's state is only ever touched by the thread that owns it, and no
/// number of clients costs the loop more than one token.
final class ControlServer {
    /// The path when none is given: in the user's `RunDirectory`
    /// (/run/sluice for root, whose socket only root may use).
    static var defaultPath: String { RunDirectory.path + "/control.sock" }
    /// Past this many clients the oldest is dropped: an idle client cannot hold the API.
    static let maximumConnections = 32
    static let listenerToken: UInt64 = 0
    static let tickToken: UInt64 = .max
    /// How often waiting `/requests?wait=` are looked at: a follower learns
    /// of a finished request within this, and an idle one costs the loop
    /// this many wake-ups a second only while it waits.
    static let requestWaitTickNanoseconds: UInt64 = 20_000_000

    let path: String
    let listener: UnixSocket
    let epoll: Epoll
    var events = Epoll.EventBuffer(capacity: 64)
    var connections: [UInt64: ControlConnection] = [:]
    var nextToken: UInt64 = 1
    /// Which file this server put at `path`, so that `stop` removes only that one.
    let identity: FileIdentity?
    let scratch: UnsafeMutableRawBufferPointer
    var stopped = false
    /// Ticks while a client waits for requests (`answerRequestWaits`).
    let tick: TimerFD
    var ticking = false

    /// Listens at `path` with `mode` (0600: root only, as the kernel checks the socket file's
    /// permission at connect). EADDRINUSE: another Sluice answers there.
    init(path: String, mode: UInt32 = 0o600) throws(Errno) {
        self.path = path
        // Owned by the user Sluice runs as (root): the mode does the rest.
        listener = try UnixSocket.listen(at: path, mode: mode)
        identity = Files.identity(of: path)
        do {
            epoll = try Epoll()
            try epoll.add(listener.descriptor, events: .readable, token: Self.listenerToken)
            tick = try TimerFD()
            try epoll.add(tick.descriptor, events: .readable, token: Self.tickToken)
        } catch {
            if let identity { Files.removeSocket(path, identity: identity) }
            throw error
        }
        scratch = .allocate(byteCount: 16384, alignment: 16)
    }

    deinit {
        stop()
        scratch.deallocate()
    }

    /// The descriptor for the tunnel's epoll: readable when a client needs attention.
    var descriptor: Int32 { epoll.descriptor.rawValue }

    /// Removes the socket file (if it is still ours); clients are dropped with the server.
    func stop() {
        guard !stopped else { return }
        stopped = true
        if let identity { Files.removeSocket(path, identity: identity) }
    }

    /// Answers whatever is ready, without waiting. Bounded: a wake-up serves at most a few rounds.
    func serve(_ target: some ControlTarget) {
        defer { tickWhileWaited() }
        for _ in 0 ..< 4 {
            guard let ready = try? epoll.wait(into: &events, timeoutMilliseconds: 0), ready > 0 else { return }
            for i in 0 ..< ready {
                let event = events[i]
                if event.token == Self.listenerToken {
                    acceptClients()
                } else if event.token == Self.tickToken {
                    _ = try? tick.readExpirations()
                    answerRequestWaits(target)
                } else if let connection = connections[event.token] {
                    service(connection, events: event.events, target: target)
                }
            }
        }
    }

    /// The clients waiting for requests whose wait is over, or for whom
    /// something came, get their answers.
    func answerRequestWaits(_ target: some ControlTarget) {
        let now = MonotonicClock.now()
        for connection in connections.values where connection.awaitingRequests != nil {
            if connection.finishRequestWait(now: now, target: target) { settle(connection) }
        }
    }

    /// The tick runs while some client waits for requests, and only then.
    func tickWhileWaited() {
        let waited = connections.values.contains { $0.awaitingRequests != nil }
        guard waited != ticking else { return }
        if waited {
            guard (try? tick.arm(afterNanoseconds: Self.requestWaitTickNanoseconds, everyNanoseconds: Self.requestWaitTickNanoseconds)) != nil else { return }
        } else {
            try? tick.disarm()
        }
        ticking = waited
    }

    func acceptClients() {
        for _ in 0 ..< 16 {
            guard let accepted = try? listener.accept() else { return }
            if connections.count >= Self.maximumConnections, let oldest = connections.keys.min() {
                drop(oldest)
            }
            let token = nextToken
            nextToken += 1
            let connection = ControlConnection(socket: accepted, token: token)
            guard (try? epoll.add(connection.socket.descriptor, events: connection.interest, token: token)) != nil else { continue }
            connections[token] = connection
        }
    }

    func service(_ connection: ControlConnection, events: Epoll.Events, target: some ControlTarget) {
        // A client gone while it waits (a reload's read, requests to come):
        // nobody to answer, and epoll would report the hang-up on every wait until then.
        if connection.isAwaiting, events.contains(.hangup) || events.contains(.error) {
            drop(connection.token)
            return
        }
        if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) {
            // Bounded: a client that keeps sending shares the loop with the traffic.
            for _ in 0 ..< 16 where connection.wantedEvents.contains(.readable) {
                let result: SysResult<Int>
                do { result = try connection.socket.read(into: scratch) } catch {
                    drop(connection.token)
                    return
                }
                guard case let .value(n) = result else { break }
                if n == 0 {
                    connection.receivedEnd()
                    break
                }
                connection.receive(UnsafeRawBufferPointer(rebasing: scratch[0 ..< n]), target: target)
            }
        }
        settle(connection)
    }

    /// Read number `generation` has been applied with `result`: the clients
    /// that waited for it get their answers, and their later requests are served.
    func finishReloads(generation: Int, _ result: Result<String, ControlFailure>, target: some ControlTarget) {
        for connection in connections.values where connection.awaitingReload != nil {
            connection.finishReload(generation: generation, result, target: target)
            settle(connection)
        }
    }

    /// Writes what the client can take, then drops it if it is done or gone,
    /// or watches its socket for what it needs now.
    func settle(_ connection: ControlConnection) {
        guard connection.flush(), !connection.finished else {
            drop(connection.token)
            return
        }
        let wanted = connection.wantedEvents
        if wanted != connection.interest {
            try? epoll.modify(connection.socket.descriptor, events: wanted, token: connection.token)
            connection.interest = wanted
        }
    }

    func drop(_ token: UInt64) {
        guard let connection = connections.removeValue(forKey: token) else { return }
        try? epoll.remove(connection.socket.descriptor)
    }
}

/// Where `exec` and `run` put their control socket (`--control PATH`, `--no-control`).
public enum ControlSocketOption: Sendable, Equatable {
    /// `ControlServer.defaultPath` (/run/sluice/control.sock for root), when no other Sluice answers there.
    case standard
    case path(String)
    case off
}

extension ControlServer {
    /// Starts the server the option asks for. An explicit path that cannot be
    /// used stops Sluice before anything is created; the standard path held by
    /// another running Sluice only costs this one its control socket.
    static func start(_ option: ControlSocketOption, log: (String) -> Void) throws(EngineError) -> ControlServer? {
        switch option {
        case .off:
            return nil
        case let .path(path):
            do { return try ControlServer(path: path) } catch {
                throw EngineError.report("sluice: --control \(path): \(explain(error, path: path))")
            }
        case .standard:
            guard RunDirectory.prepare() != nil else {
                log("sluice: no control socket: \(RunDirectory.path) is not a folder of this user's that only it may write")
                return nil
            }
            do { return try ControlServer(path: defaultPath) } catch {
                log("sluice: no control socket: \(explain(error, path: defaultPath))")
                return nil
            }
        }
    }

    static func explain(_ error: Errno, path: String) -> String {
        switch error {
        case .addressInUse: "another Sluice answers on \(path); give this one --control PATH (or --no-control)"
        case .fileExists: "\(path) exists and is not a socket; it is left alone"
        case .noSuchFileOrDirectory: "the folder for \(path) does not exist"
        case .permissionDenied: "this user may not create \(path); give --control PATH in a folder of yours (or --no-control)"
        case .nameTooLong: "the path is longer than a Unix socket allows (\(UnixSocket.maximumPathLength) bytes)"
        default: "\(error)"
        }
    }
}
