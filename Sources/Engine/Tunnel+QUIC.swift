internal import HTTP
internal import Stack
internal import Wire

/// QUIC flows' names: a UDP flow sent to an address (no fake IP to name it)
/// whose first datagram is a QUIC client Initial carries a ClientHello, and
/// its server name, inside (RFC 9001 §4.3). When a rule needs that name, the
/// flow's first datagrams are held until the hello is read (it can span
/// datagrams), then decided and relayed in order.
extension Tunnel {
    /// A new UDP flow waiting for the rest of its ClientHello, with the facts it will be decided on.
    struct NameWait {
        var hello: QUICHelloWait<[UInt8]>
        var facts: FlowFacts
    }

    /// The facts a new UDP flow is decided on, given its first datagram; nil
    /// when it waits for its name in the next datagrams (`holdForName`).
    func newUDPFacts(_ key: FlowKey, first payload: UnsafeRawBufferPointer) -> FlowFacts? {
        var facts = facts(for: key)
        guard director.rules != nil, QUICClientHelloSniffer.mayStart(payload) else { return facts }
        // Named already (fake-IP DNS): QUIC to a [MITM] host is refused by that name (udpRoute).
        guard facts.domain == nil else { return director.blocksQUIC ? facts.with(.quic) : facts }
        facts.applicationProtocol = .quic
        // Decrypting costs a few hundred microseconds: only when a rule needs the name.
        guard case .sniff = director.decide(facts, final: false) else { return facts }
        var hello = QUICHelloWait<[UInt8]>(deadline: now + FlowFacts.sniffTimeout)
        guard !hello.add(Array(payload), payload: payload) else { return facts.naming(hello.result.serverName) }
        trace("\(key): QUIC, waits for the rest of its ClientHello")
        awaitingName[key] = NameWait(hello: hello, facts: facts)
        return nil
    }

    /// A later datagram of a flow that waits for its name: held with the
    /// others, and read. The flow is decided once the hello is whole, or is
    /// not a hello, or when it holds as many datagrams as it may.
    func holdForName(_ key: FlowKey, _ payload: UnsafeRawBufferPointer, sink: inout TunSink) {
        guard var wait = awaitingName[key] else { return }
        guard wait.hello.add(Array(payload), payload: payload) else {
            awaitingName[key] = wait
            return
        }
        awaitingName[key] = nil
        decideHeld(key, facts: wait.facts.naming(wait.hello.result.serverName), held: wait.hello.held, sink: &sink)
    }

    /// Flows whose ClientHello did not complete in time go on without their name.
    func expireNameWaits(now time: Instant, sink: inout TunSink) {
        for (key, wait) in awaitingName where wait.hello.deadline <= time {
            awaitingName[key] = nil
            trace("\(key): no whole ClientHello in time; decided without its name")
            decideHeld(key, facts: wait.facts, held: wait.hello.held, sink: &sink)
        }
    }

    /// The earliest of those deadlines (few flows wait at once: a scan is cheap).
    var nameWaitDeadline: Instant? {
        var earliest: Instant?
        for wait in awaitingName.values where earliest.map({ wait.hello.deadline < $0 }) ?? true { earliest = wait.hello.deadline }
        return earliest
    }

    private func decideHeld(_ key: FlowKey, facts: FlowFacts, held: [[UInt8]], sink: inout TunSink) {
        // The flow may have ended meanwhile (idle, or Sluice stopped it).
        guard flowRecords[key] != nil else { return }
        let route = udpRoute(for: key, facts: withAnswerName(facts))
        for (index, datagram) in held.enumerated() {
            datagram.withUnsafeBytes { relay(key, payload: $0, route: index == 0 ? route : .direct, isNew: index == 0, sink: &sink) }
            // A rejected flow's record is finished by its first datagram; the rest are dropped.
            if flowRecords[key] == nil { break }
        }
    }
}

extension FlowFacts {
    func with(_ applicationProtocol: ApplicationProtocol) -> FlowFacts {
        var facts = self
        facts.applicationProtocol = applicationProtocol
        return facts
    }

    /// These facts with the server name a QUIC ClientHello gave, if any.
    func naming(_ name: String?) -> FlowFacts {
        guard let name, domain == nil else { return self }
        var facts = self
        facts.domain = name
        facts.domainSource = .sni
        return facts
    }
}
