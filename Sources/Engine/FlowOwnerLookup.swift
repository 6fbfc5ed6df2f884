internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// Who opened a flow, for PROCESS-NAME, PROCESS-PATH and UID rules. The
/// kernel's socket table (sock_diag, in the apps' namespace) gives the
/// socket's owner and inode on the loop, at once (a few µs); the process
/// holding that inode is searched for in /proc by a thread of its own
/// (`ProcessSearch`), since that walk costs a stat per descriptor tried, and
/// the flow waits for its answer. Asked once per new TCP or UDP flow (or
/// proxy client), and only while the profile has such a rule.
final class FlowOwnerLookup {
    /// Who waits for an answer: a tunnel's new flow, or a proxy's client connection.
    enum Waiter: Hashable {
        case flow(FlowKey)
        case connection(UInt64)
    }

    enum Start {
        /// Decided now: the owner (nil when its socket was not found).
        case known(FlowOwner?)
        /// The process is being searched for: `finished()` will give the owner.
        case pending
    }

    /// In the apps' namespace; `--forward auto` reads its listeners through it too.
    let diagnostics: SocketDiagnostics
    /// The search thread; nil if it could not start, and then processes are
    /// searched on the caller's thread.
    private var search: ProcessSearch?
    private var processes: ProcessTable
    private var waiting: [UInt64: (waiter: Waiter, userID: UInt32, deadline: Instant)] = [:]
    /// Requests the search thread's socket had no room for (a burst of new
    /// flows): sent, in order, as its answers make room.
    private var backlog: [(token: UInt64, inode: UInt32, userID: UInt32)] = []
    /// More waiting than this, and a new flow goes on with its uid alone.
    static let maximumWaiting = 65536
    private var nextToken: UInt64 = 0
    /// The oldest request that may still wait: tokens are answered in order,
    /// so its deadline is the earliest.
    private var oldestToken: UInt64 = 1
    /// How long a flow waits for its process before it goes on without: the
    /// search is bounded far below this, so only a stuck thread reaches it.
    static let patience: Duration = .seconds(2)
    /// Flows asked about, and those whose socket or process was not found.
    private(set) var lookups = 0
    private(set) var unknown = 0

    init(diagnostics: SocketDiagnostics, search: ProcessSearch?, networkNamespace: UInt64?) {
        self.diagnostics = diagnostics
        self.search = search
        processes = ProcessTable(networkNamespace: networkNamespace)
    }

    /// A lookup in the namespace named `name` (`sluice exec`, `run --netns`),
    /// or in Sluice's own with nil (`run --tun`, `proxy`). Nil, with the
    /// reason logged, if the kernel refuses a sock_diag socket: owner rules
    /// then match nothing.
    static func open(namespace name: String?, log: (String) -> Void) -> FlowOwnerLookup? {
        let diagnostics: SocketDiagnostics
        do {
            if let name {
                let namespace = try NamespaceSetup.open(name)
                diagnostics = try namespace.run { try SocketDiagnostics() }
            } else {
                diagnostics = try SocketDiagnostics()
            }
        } catch {
            log("sluice: warning: cannot open a sock_diag socket (\(error)): PROCESS-NAME, PROCESS-PATH and UID rules will match nothing")
            return nil
        }
        return make(diagnostics, namespaceFile: name.map(NamespaceSetup.file(of:)) ?? "/proc/self/ns/net", log: log)
    }

    /// A lookup through a sock_diag socket made in the namespace whose file
    /// (/proc/PID/ns/net, say) is `namespaceFile` (`sluice exec` without
    /// root, whose helper made it there); nil without one.
    static func open(adopting diagnostics: Int32?, namespaceFile: String, log: (String) -> Void) -> FlowOwnerLookup? {
        guard let raw = diagnostics, let socket = try? SocketDiagnostics(adopting: raw) else {
            log("sluice: warning: no sock_diag socket in the command's namespace: PROCESS-NAME, PROCESS-PATH and UID rules will match nothing")
            return nil
        }
        return make(socket, namespaceFile: namespaceFile, log: log)
    }

    private static func make(_ diagnostics: SocketDiagnostics, namespaceFile: String, log: (String) -> Void) -> FlowOwnerLookup {
        let namespaceInode = ProcessTable.namespaceInode(namespaceFile)
        var search: ProcessSearch?
        do { search = try ProcessSearch(networkNamespace: namespaceInode) } catch {
            log("sluice: warning: cannot start the process search thread (\(error)): processes are searched on the loop")
        }
        return FlowOwnerLookup(diagnostics: diagnostics, search: search, networkNamespace: namespaceInode)
    }

    /// Has `epoll` report the search thread's answers under `token` (then
    /// `finished()` reads them); if it cannot, processes are searched on
    /// the caller's thread instead.
    func watch(in epoll: borrowing Epoll, token: UInt64, log: (String) -> Void) {
        guard let descriptor = search?.descriptor.rawValue else { return }
        if (try? epoll.add(rawDescriptor: descriptor, events: .readable, token: token)) == nil {
            log("sluice: warning: cannot watch the process search thread: processes are searched on the loop")
            search = nil
        }
    }

    /// Starts the lookup of `key`'s owner: its socket now, its process
    /// (`needsProcess`: a PROCESS-NAME or PROCESS-PATH rule is loaded) now or
    /// later.
    func start(_ key: FlowKey, needsProcess: Bool, now: Instant) -> Start {
        start(socket(of: key), for: .flow(key), needsProcess: needsProcess, now: now)
    }

    /// The same for a proxy's client connection `id`: the socket bound to
    /// `client` and connected to `server` (the listener's address).
    func start(connection id: UInt64, client: SocketAddress, server: SocketAddress, needsProcess: Bool, now: Instant) -> Start {
        start(socket(client: client, server: server), for: .connection(id), needsProcess: needsProcess, now: now)
    }

    /// A proxy's client, all at once on the caller's thread (a connection
    /// whose rules need its owner before the search has answered).
    func owner(client: SocketAddress, server: SocketAddress) -> FlowOwner? {
        lookups += 1
        guard let entry = socket(client: client, server: server) else {
            unknown += 1
            return nil
        }
        return completed(FlowOwner(userID: entry.userID), processes.process(holdingSocket: entry.inode, userID: entry.userID))
    }

    /// The owners the search thread has found since the last call.
    func finished() -> [(Waiter, FlowOwner)] {
        guard let search else { return [] }
        let owners: [(Waiter, FlowOwner)] = search.answers().compactMap { answer in
            guard let asked = waiting.removeValue(forKey: answer.token) else { return nil }
            return (asked.waiter, completed(FlowOwner(userID: asked.userID), answer.process))
        }
        sendBacklog(search)
        return owners
    }

    /// Sends what waits in `backlog` until the socket is full again;
    /// requests whose flows stopped waiting meanwhile are dropped.
    private func sendBacklog(_ search: ProcessSearch) {
        var sent = 0
        for request in backlog {
            if waiting[request.token] != nil {
                guard search.submit(token: request.token, inode: request.inode, userID: request.userID) else { break }
            }
            sent += 1
        }
        backlog.removeFirst(sent)
    }

    /// When the oldest waiting flow stops waiting.
    var nextDeadline: Instant? {
        while oldestToken <= nextToken, waiting[oldestToken] == nil { oldestToken += 1 }
        return waiting[oldestToken]?.deadline
    }

    /// The flows whose search took too long: they go on with their uid alone.
    func expire(now: Instant) -> [(Waiter, FlowOwner)] {
        var expired: [(Waiter, FlowOwner)] = []
        while let deadline = nextDeadline, deadline <= now, let asked = waiting.removeValue(forKey: oldestToken) {
            unknown += 1
            expired.append((asked.waiter, FlowOwner(userID: asked.userID)))
        }
        return expired
    }

    private func start(_ entry: SocketDiagnostics.Entry?, for waiter: Waiter, needsProcess: Bool, now: Instant) -> Start {
        lookups += 1
        guard let entry else {
            unknown += 1
            return .known(nil)
        }
        let owner = FlowOwner(userID: entry.userID)
        guard needsProcess else { return .known(owner) }
        guard let search else { return .known(completed(owner, processes.process(holdingSocket: entry.inode, userID: entry.userID))) }
        guard waiting.count < Self.maximumWaiting else {
            // The search is far behind: the flow goes on with its uid.
            unknown += 1
            return .known(owner)
        }
        nextToken += 1
        waiting[nextToken] = (waiter, entry.userID, now + Self.patience)
        if !backlog.isEmpty || !search.submit(token: nextToken, inode: entry.inode, userID: entry.userID) {
            backlog.append((nextToken, entry.inode, entry.userID))
        }
        return .pending
    }

    private func socket(client: SocketAddress, server: SocketAddress) -> SocketDiagnostics.Entry? {
        // A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d; their sockets are IPv4.
        try? diagnostics.tcpSocket(local: Self.unmapped(client.address), localPort: client.port,
                                   remote: Self.unmapped(server.address), remotePort: server.port)
    }

    static func unmapped(_ address: SysIPAddress) -> SysIPAddress {
        guard case let .v6(high, low) = address, high == 0, low >> 32 == 0xffff else { return address }
        return .v4(UInt32(truncatingIfNeeded: low))
    }

    private func socket(of key: FlowKey) -> SocketDiagnostics.Entry? {
        let app = key.appAddress.sysAddress
        switch key.transport {
        case .tcp:
            return try? diagnostics.tcpSocket(local: app, localPort: key.appPort,
                                              remote: key.destinationAddress.sysAddress, remotePort: key.destinationPort)
        case .udp:
            // An IPv6 socket may send to IPv4 addresses (v4-mapped): it is in the IPv6 table.
            return (try? diagnostics.udpSocket(family: app.family, local: app, localPort: key.appPort))
                ?? (app.family == .v4 ? try? diagnostics.udpSocket(family: .v6, local: app, localPort: key.appPort) : nil)
        default:
            return nil
        }
    }

    private func completed(_ owner: FlowOwner, _ process: ProcessTable.Process?) -> FlowOwner {
        guard let process else {
            unknown += 1
            return owner
        }
        var owner = owner
        owner.processID = process.id
        owner.processName = process.name
        owner.processPath = process.path
        return owner
    }
}
