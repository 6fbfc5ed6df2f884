internal import Stack
internal import Wire

/// Names from relayed DNS answers (`DNSAnswerNames`): in forward mode, or
/// with Sluice's DNS off, a flow to a real address has no fake IP to name it.
/// When a rule needs a name and the flow gives none itself (no SNI, no Host),
/// the name the app's last answer gave that address decides.
extension Tunnel {
    /// `facts` with the name a relayed DNS answer gave the flow's address,
    /// when the flow named itself no other way (docs/engine.md, "Names from
    /// relayed DNS answers").
    func withAnswerName(_ facts: FlowFacts) -> FlowFacts {
        guard facts.domain == nil, answerNames.count > 0, let name = answerNames.name(for: facts.key.destinationAddress, now: now)
        else { return facts }
        var named = facts
        named.domain = name
        named.domainSource = .answer
        return named
    }
}
