internal import Rules
internal import Sys

/// Owner rules (PROCESS-NAME, PROCESS-PATH, UID) for `sluice proxy`'s
/// clients on this host: the program at the other end of a client's
/// connection to the listener, looked up when the client is accepted (its
/// process searched for on `FlowOwnerLookup`'s thread while it shakes
/// hands). Clients on other hosts have none.
extension ProxyServer {
    func useOwnerLookup(_ lookup: FlowOwnerLookup?) {
        ownerLookup = lookup
        lookup?.watch(in: epoll, token: Self.ownerToken, log: log)
    }

    func startOwnerLookup(_ connection: InboundConnection) {
        guard director.requiresOwner, let ownerLookup, let server = connection.client.localAddress else { return }
        switch ownerLookup.start(connection: connection.id, client: connection.peer, server: server,
                                 needsProcess: director.requiresProcess, now: now) {
        case let .known(owner): noteOwner(connection, owner)
        case .pending: connection.ownerLookup = .pending
        }
    }

    func ownersFound() {
        guard let ownerLookup else { return }
        for case let (.connection(id), owner) in ownerLookup.finished() {
            guard let connection = connections[id], case .pending = connection.ownerLookup else { continue }
            noteOwner(connection, owner)
        }
    }

    /// The client's owner for its rules: known since its accept, or (the
    /// search has not answered yet, or a reload brought the first owner rule)
    /// looked up now, on the loop.
    func owner(of connection: InboundConnection) -> FlowOwner? {
        if case let .known(owner) = connection.ownerLookup { return owner }
        guard let ownerLookup, let server = connection.client.localAddress else { return nil }
        noteOwner(connection, ownerLookup.owner(client: connection.peer, server: server))
        return connection.owner
    }

    private func noteOwner(_ connection: InboundConnection, _ owner: FlowOwner?) {
        connection.ownerLookup = .known(owner)
        guard let owner else { return }
        trace("\(connection.description): opened by \(owner)")
        connection.record?.note(owner)
    }
}
