/// Reads the server name from a QUIC client's first datagrams: the
/// ClientHello travels in the CRYPTO frames of its Initial packets
/// (RFC 9001 §4.3), which anyone can decrypt (`QUICInitial`). A large hello,
/// with a post-quantum key share say, spans two or more datagrams, and
/// clients may split and shuffle its CRYPTO frames (Chrome does), so the
/// pieces are put back in order by offset, up to `limit` bytes.
public struct QUICClientHelloSniffer: Sendable {
    public let limit: Int
    /// The protocols of the ALPN extension (RFC 7301), once the hello is read: "h3" for HTTP/3.
    public private(set) var applicationProtocols: [String] = []

    /// The hello's bytes by their CRYPTO offset, and which are in.
    private var handshake: [UInt8] = []
    private var received: [Bool] = []
    /// How many bytes from offset 0 are in.
    private var contiguous = 0
    private var datagrams = 0
    private var result: SniffResult? = nil

    public init(limit: Int = TLSClientHelloSniffer.defaultLimit) {
        self.limit = limit
    }

    /// A cheap test of a flow's first datagram: a QUIC client Initial of a
    /// known version, before anything is decrypted.
    public static func mayStart(_ datagram: UnsafeRawBufferPointer) -> Bool {
        QUICInitial.isClientInitial(datagram)
    }

    /// Takes the flow's next datagram. The first must open as a client
    /// Initial (else `.notTLS`); a later one that does not (0-RTT, a short
    /// header) adds nothing. Once the result is other than `.needMore` it
    /// stays the same whatever is fed afterwards.
    public mutating func feed(_ datagram: UnsafeRawBufferPointer) -> SniffResult {
        if let result { return result }
        datagrams += 1
        let outcome = consume(datagram)
        if outcome != .needMore {
            result = outcome
            handshake = []
            received = []
        }
        return outcome
    }

    private mutating func consume(_ datagram: UnsafeRawBufferPointer) -> SniffResult {
        guard let packets = QUICInitial.open(datagram) else { return datagrams == 1 ? .notTLS : .needMore }
        for frames in packets {
            guard let pieces = QUICInitial.cryptoData(frames) else { return .notTLS }
            for (offset, data) in pieces {
                // Bytes past the limit are never needed: a hello that long is given up below.
                let end = min(offset + data.count, limit)
                guard offset < end else { continue }
                if handshake.count < end {
                    handshake += [UInt8](repeating: 0, count: end - handshake.count)
                    received += [Bool](repeating: false, count: end - received.count)
                }
                for i in offset ..< end {
                    handshake[i] = data[data.startIndex + i - offset]
                    received[i] = true
                }
            }
        }
        while contiguous < received.count, received[contiguous] { contiguous += 1 }
        let whole = handshake.withUnsafeBytes { TLSClientHelloSniffer.readHandshake(UnsafeRawBufferPointer(rebasing: $0[0 ..< contiguous]), limit: limit) }
        guard let (outcome, protocols) = whole else { return .needMore }
        applicationProtocols = protocols
        return outcome
    }
}
