internal import Relay
internal import Stack
internal import Wire

/// A proxy that failed a flow, and how the app learns of it.
struct ProxyFailure: Error {
    var refusal: TCPFlowTable.Refusal
    var message: String
    /// What the proxy said, when it said it: `sluice proxy` passes it on as
    /// it is (a 403 as 403, REP 2) rather than through the tunnel's refusals,
    /// which turned a refusal by rule into "host unreachable".
    var relayError: RelayError? = nil
}

/// The engine's side of one proxy handshake: Relay's state machine decides;
/// this keeps the bytes that arrived in pieces until the machine can use them.
final class ProxyHandshake {
    enum Progress {
        case needMore
        case send([UInt8])
        /// Relaying starts; the bytes of the last read from this offset on are the destination's.
        /// `bound` is the proxy's relay address for UDP ASSOCIATE.
        case established(leftoverOffset: Int, bound: ProxyTarget?)
    }

    let proxy: UpstreamProxy
    let target: ProxyTarget
    var machine: any ProxyClientHandshake
    /// Bytes read from the proxy that the machine has not consumed yet.
    var held: [UInt8] = []

    init(proxy: UpstreamProxy, target: ProxyTarget, associate: Bool = false) throws(ProxyFailure) {
        self.proxy = proxy
        self.target = target
        let credentials = proxy.username.map { ProxyCredentials(username: $0, password: proxy.password ?? "") }
        do throws(RelayError) {
            switch proxy.kind {
            case .socks5: machine = try SOCKS5ClientHandshake(target: target, credentials: credentials, command: associate ? .udpAssociate : .connect)
            case .http: machine = try HTTPConnectHandshake(target: target, credentials: credentials)
            }
        } catch {
            throw ProxyFailure(refusal: .reset, message: "proxy \(proxy.name): \(error)")
        }
    }

    func start() -> [UInt8] { machine.start() }

    /// Feeds one read from the proxy.
    func receive(_ bytes: UnsafeRawBufferPointer) throws(ProxyFailure) -> Progress {
        // The read's own bytes are used in place when nothing is held, so the
        // leftover offset can point into them.
        let heldBefore = held.count
        held.append(contentsOf: bytes)
        var toSend: [UInt8] = []
        var removed = 0
        while true {
            // withUnsafeBytes rethrows untyped errors: the machine's typed one travels in a Result.
            var machine = self.machine
            let result = held.withUnsafeBytes { buffer in
                Result { () throws(RelayError) -> HandshakeStep? in try machine.receive(buffer) }
            }
            self.machine = machine
            let step: HandshakeStep?
            switch result {
            case let .success(value): step = value
            case let .failure(error): throw failure(error)
            }
            switch step {
            case nil:
                return toSend.isEmpty ? .needMore : .send(toSend)
            case let .send(bytes, consumed)?:
                toSend += bytes
                held.removeFirst(consumed)
                removed += consumed
                if held.isEmpty { return .send(toSend) }
            case let .established(bound, consumed)?:
                // Bytes after the handshake belong to the destination: they are
                // the tail of this read (everything held before was handshake).
                let offsetInRead = consumed + removed - heldBefore
                held = []
                if !toSend.isEmpty {
                    throw ProxyFailure(refusal: .reset, message: "proxy \(proxy.name): handshake ended with bytes still to send")
                }
                return .established(leftoverOffset: max(offsetInRead, 0), bound: bound)
            }
        }
    }

    func closed() -> ProxyFailure { failure(machine.inputClosed()) }

    func failure(_ error: RelayError) -> ProxyFailure {
        let refusal: TCPFlowTable.Refusal
        switch error.appFacing {
        case .reset, .badGateway: refusal = .reset
        case .unreachable(.network): refusal = .unreachable(.network)
        case .unreachable(.host), .unreachable(.administrativelyProhibited): refusal = .unreachable(.host)
        }
        return ProxyFailure(refusal: refusal, message: "proxy \(proxy.name) (\(proxy.host):\(proxy.port)) to \(target): \(error)", relayError: error)
    }
}
