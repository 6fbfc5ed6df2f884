internal import HTTP
internal import Relay
internal import Stack
internal import Wire

/// `--sniff` for UDP ASSOCIATE: datagrams to an address that start a QUIC
/// connection carry a ClientHello in their Initial packets. When a rule
/// needs a name, the association holds that target's datagrams until the
/// hello is read (at most 16, 300 ms, as the tunnel does), and the name then
/// decides them and every later datagram to the target. A datagram is decided
/// on its own (UDP ASSOCIATE has no flows), so the target's QUIC-ness and
/// name are remembered for the association's life, for at most 64 targets.
enum QUICTargetName {
    case waiting(QUICHelloWait<(datagram: [UInt8], payloadOffset: Int)>)
    /// A QUIC target, and the name its hello gave (nil: none, or not needed).
    case known(String?)
}

extension ProxyServer {
    static let sniffedTargetsPerAssociation = 64

    /// The facts a datagram to `target` is decided on; nil when it was held
    /// to wait for the rest of a ClientHello.
    func datagramFacts(_ datagram: UnsafeRawBufferPointer, payloadOffset: Int, to target: ProxyTarget,
                       connection: InboundConnection, association: UDPAssociation) -> FlowFacts? {
        var facts = flowFacts(for: connection, target: target, transport: .udp)
        guard configuration.sniffAddressTargets, facts.domain == nil else { return facts }
        let payload = UnsafeRawBufferPointer(rebasing: datagram[payloadOffset...])
        switch association.quicNames[target] {
        case let .known(name)?:
            facts.applicationProtocol = .quic
            return facts.naming(name)
        case var .waiting(hello)?:
            if hello.add((Array(datagram), payloadOffset), payload: payload) {
                releaseHeld(target, name: hello.result.serverName, held: hello.held, connection: connection, association: association)
            } else {
                association.quicNames[target] = .waiting(hello)
            }
            return nil
        case nil:
            guard association.quicNames.count < Self.sniffedTargetsPerAssociation, QUICClientHelloSniffer.mayStart(payload) else { return facts }
            facts.applicationProtocol = .quic
            guard case .sniff = director.decide(facts, final: false) else {
                association.quicNames[target] = .known(nil)
                return facts
            }
            var hello = QUICHelloWait<(datagram: [UInt8], payloadOffset: Int)>(deadline: now + FlowFacts.sniffTimeout)
            guard !hello.add((Array(datagram), payloadOffset), payload: payload) else {
                association.quicNames[target] = .known(hello.result.serverName)
                return facts.naming(hello.result.serverName)
            }
            trace("\(connection.description): UDP to \(target): QUIC, waits for the rest of its ClientHello")
            association.quicNames[target] = .waiting(hello)
            return nil
        }
    }

    /// The target's name is known (or will not be): its held datagrams are decided and sent, in order.
    private func releaseHeld(_ target: ProxyTarget, name: String?, held: [(datagram: [UInt8], payloadOffset: Int)],
                             connection: InboundConnection, association: UDPAssociation) {
        association.quicNames[target] = .known(name)
        for (datagram, payloadOffset) in held {
            datagram.withUnsafeBytes { forward($0, payloadOffset: payloadOffset, to: target, connection: connection, association: association) }
        }
    }

    /// Targets whose ClientHello did not complete in time go on without a name.
    func expireQUICWaits(_ connection: InboundConnection, _ association: UDPAssociation, now time: Instant) {
        for (target, state) in association.quicNames {
            guard case let .waiting(hello) = state, hello.deadline <= time else { continue }
            releaseHeld(target, name: nil, held: hello.held, connection: connection, association: association)
        }
    }
}
