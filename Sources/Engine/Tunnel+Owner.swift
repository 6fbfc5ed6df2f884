internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// PROCESS-NAME, PROCESS-PATH and UID rules: who opened each new flow
/// (`FlowOwnerLookup`), learned before the rules see it.
extension Tunnel {
    /// Turns owner lookups on (`exec` and `run` do, once the TUN is up): the
    /// search thread's answers wake the loop under `ownerToken`.
    func useOwnerLookup(_ lookup: FlowOwnerLookup?, log: (String) -> Void) {
        ownerLookup = lookup
        lookup?.watch(in: epoll, token: Self.ownerToken, log: log)
    }

    /// Starts the owner lookup of a new flow. True when it is known now (or
    /// cannot be): the flow is decided at once. False: its process is being
    /// searched for, and `ownersFound` goes on with the flow.
    func ownerKnown(_ key: FlowKey) -> Bool {
        guard let ownerLookup else { return true }
        switch ownerLookup.start(key, needsProcess: director.requiresProcess, now: now) {
        case let .known(owner):
            noteOwner(key, owner)
            return true
        case .pending:
            trace("\(key): waits for its process")
            return false
        }
    }

    /// The search thread answered: each waiting flow is decided as if it had
    /// just arrived, a UDP flow's held datagrams then relayed in order.
    func ownersFound() {
        guard let ownerLookup else { return }
        var sink = TunSink(io: io)
        proceed(ownerLookup.finished(), sink: &sink)
    }

    /// Flows that waited for their process and now go on, with it or without.
    func proceed(_ owners: [(FlowOwnerLookup.Waiter, FlowOwner)], sink: inout TunSink) {
        for case let (.flow(key), owner) in owners {
            guard let held = awaitingOwner.removeValue(forKey: key) else { continue }
            // The flow may have ended meanwhile (the app gave up on a UDP flow, Sluice stopped it).
            guard flowRecords[key] != nil else { continue }
            noteOwner(key, owner)
            if key.transport == .tcp {
                decideNewTCP(key, sink: &sink)
            } else {
                appHopLimit = heldHopLimits.removeValue(forKey: key) ?? 64
                for (index, datagram) in held.enumerated() {
                    datagram.withUnsafeBytes { relayDatagram(key, payload: $0, isNew: index == 0, sink: &sink) }
                    // A rejected flow's record is finished by its first datagram; the rest are dropped.
                    if flowRecords[key] == nil { break }
                }
            }
        }
    }

    private func noteOwner(_ key: FlowKey, _ owner: FlowOwner?) {
        guard let owner else {
            trace("\(key): its socket was not found")
            return
        }
        trace("\(key): opened by \(owner)")
        guard let entry = flowRecords[key] else { return }
        entry.owner = owner
        entry.record.note(owner)
    }
}

