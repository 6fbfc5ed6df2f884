internal import Rules
internal import Stack
internal import Wire

/// Pings meet the rules' rejections: a profile that ends `FINAL,REJECT`, or
/// says `PROTOCOL,ICMP,REJECT`, or rejects a domain or an address, keeps
/// pings in too (ICMP tunnels exist). Other policies send them directly as
/// before: a proxy cannot carry ICMP, and moving every `FINAL,proxy`
/// profile's pings to nowhere would break `ping` for the commonest profile.
extension Tunnel {
    /// Decides a new ping flow once; nil when it may go.
    func echoRejection(_ key: FlowKey) -> EchoRejection? {
        guard director.profile != nil else { return nil }
        let facts = facts(for: key)
        guard case let .route(route, reason) = director.decide(facts, final: true) else { return nil }
        let refusal: EchoRejection
        switch route {
        case .direct, .proxy:
            noteDecision(key, route: .direct, reason: reason, facts: facts)
            return nil
        case let .refuse(.unreachable(why)): refusal = .answer(why)
        case .refuse(.reset), .answer: refusal = .answer(.administrativelyProhibited)
        case .refuse(.drop): refusal = .silence
        }
        noteDecision(key, route: route, reason: reason, facts: facts)
        trace("\(key): ping rejected (\(reason))")
        return refusal
    }

    /// One echo request of a rejected flow: an ICMP error for it, or nothing.
    func refuseEcho(_ packet: IPPacketView, _ rejection: EchoRejection, sink: inout TunSink) {
        guard case let .answer(reason) = rejection else { return }
        sink.send(capacity: 1280 + 48) { IPFraming.writeUnreachable(into: $0, replyingTo: packet, reason: reason) }
    }
}

/// How a rejected ping flow's requests are met until it goes idle.
enum EchoRejection: Equatable {
    /// ICMP destination unreachable (REJECT: administratively prohibited).
    case answer(UnreachableReason)
    /// REJECT-DROP: nothing, as a filtering firewall.
    case silence
}
