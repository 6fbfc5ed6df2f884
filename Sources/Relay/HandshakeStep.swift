/// What a client handshake wants the engine to do after reading.
///
/// The engine keeps the bytes read from the proxy in one buffer and hands the
/// whole unconsumed part to `receive` each time more arrive. `receive` returns
/// nil while it needs more (nothing consumed); otherwise the step says how many
/// leading bytes it used, and the engine drops them and calls again with the rest.
public enum HandshakeStep: Hashable, Sendable, CustomStringConvertible {
    /// Write these bytes to the proxy and keep reading.
    case send([UInt8], consumed: Int)
    /// The tunnel is open. Bytes after `consumed` already belong to the relayed
    /// stream. `bound` is the SOCKS5 BND.ADDR/BND.PORT (for UDP ASSOCIATE: where
    /// datagrams go); HTTP CONNECT has none.
    case established(bound: ProxyTarget?, consumed: Int)

    public var description: String {
        switch self {
        case let .send(bytes, consumed): return "send \(bytes.count) bytes (consumed \(consumed))"
        case let .established(bound?, consumed): return "established, bound \(bound) (consumed \(consumed))"
        case let .established(nil, consumed): return "established (consumed \(consumed))"
        }
    }
}

/// What the engine drives for an upstream proxy, SOCKS5 or HTTP CONNECT alike.
public protocol ProxyClientHandshake: Sendable {
    /// The first bytes to write once the TCP connection to the proxy is up.
    mutating func start() -> [UInt8]
    /// Reads the proxy's unconsumed bytes; nil while more are needed.
    mutating func receive(_ bytes: UnsafeRawBufferPointer) throws(RelayError) -> HandshakeStep?
    /// The proxy closed its side before the handshake ended.
    mutating func inputClosed() -> RelayError
    /// The stage whose deadline applies now.
    var stage: HandshakeStage { get }
}
