internal import Stack
internal import Wire

/// Names from relayed DNS answers (`DNSAnswerNames`): in forward mode, or
/// with Sluice's DNS off, a flow to a real address has no fake IP to name it.
/// When a rule needs a name and the flow cannot give one itself (neither
/// HTTP nor TLS nor QUIC: SSH, a game's UDP), the name the last answer gave
/// that address decides. An HTTP request or a hello that names an address,
/// or nothing, chose the address: it keeps it.
extension Tunnel {
    /// `facts` with the name a relayed DNS answer gave the flow's address,
    /// when the flow named itself no other way (docs/engine.md, "Names from
    /// relayed DNS answers").
    func withAnswerName(_ facts: FlowFacts) -> FlowFacts {
        guard facts.domain == nil, facts.applicationProtocol == nil, answerNames.count > 0,
              let name = answerNames.name(for: facts.key.destinationAddress, now: now) else { return facts }
        var named = facts
        named.domain = name
        named.domainSource = .answer
        return named
    }
}
