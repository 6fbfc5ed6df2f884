internal import HTTP
internal import Stack

/// The datagrams of a QUIC flow (the tunnel's) or target (the proxy's UDP
/// ASSOCIATE) held while its ClientHello is read: they are decided together
/// once the hello is whole, or is no hello, or fills `Tunnel.heldDatagramLimit`
/// datagrams, or at `deadline`; then they go (or are dropped) in order.
struct QUICHelloWait<Held> {
    private var sniffer = QUICClientHelloSniffer()
    private(set) var held: [Held] = []
    private(set) var result = SniffResult.needMore
    let deadline: Instant

    init(deadline: Instant) { self.deadline = deadline }

    /// Holds `datagram` and reads `payload`, its QUIC bytes: true once the
    /// wait is over (`result` says what the hello gave).
    mutating func add(_ datagram: Held, payload: UnsafeRawBufferPointer) -> Bool {
        held.append(datagram)
        result = sniffer.feed(payload)
        return result != .needMore || held.count >= Tunnel.heldDatagramLimit
    }
}
