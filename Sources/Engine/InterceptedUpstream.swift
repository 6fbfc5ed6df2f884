internal import Sys
internal import TLS

/// The real server's side of an intercepted HTTPS connection: Sluice's
/// `TLSClient` on the upstream socket (direct, or after a proxy's CONNECT
/// or SOCKS handshake). One per upstream connection: a request planned for
/// another host opens another, with its own handshake and chain check.
final class InterceptedUpstream {
    var client: TLSClient
    /// The name the chain was checked against, for messages.
    let host: String
    /// Records for the server that the socket did not take yet.
    var records = OutgoingBytes()
    /// Decrypted response bytes the app's side had no room for yet.
    let plaintext = PlaintextQueue(capacity: 16 * 1024)
    var peerClosed = false

    init(client: TLSClient, host: String) {
        self.client = client
        self.host = host
    }

    var isConnected: Bool { client.state == .connected }

    /// Writes queued records; false when the socket is full (or failed).
    @discardableResult
    func flush(to socket: borrowing Socket) -> Bool {
        var blocked = false
        records.drain { bytes in
            guard case let .value(n)? = try? socket.write(bytes) else {
                blocked = true
                return 0
            }
            if n < bytes.count { blocked = true }
            return n
        }
        return !blocked
    }

    /// Plaintext for the server, as records; returns how much was taken
    /// (nothing before the handshake ends or while records wait).
    func write(_ bytes: UnsafeRawBufferPointer, to socket: borrowing Socket) -> (taken: Int, blocked: Bool) {
        guard flush(to: socket) else { return (0, true) }
        guard isConnected else { return (0, false) }
        var taken = 0
        while taken < bytes.count {
            let n = min(16 * 1024, bytes.count - taken)
            records.append(client.send(Array(UnsafeRawBufferPointer(rebasing: bytes[taken ..< taken + n]))))
            taken += n
            guard flush(to: socket) else { return (taken, true) }
        }
        return (taken, false)
    }

    enum Arrival {
        /// `count` bytes of plaintext are in the buffer given to `read`.
        case plaintext(Int)
        /// Nothing more to read now (the socket is empty).
        case wouldBlock
        /// Records arrived that held no plaintext (the handshake): read again.
        case again(handshakeFinished: Bool)
        /// The server closed (close_notify, or FIN).
        case closed
        case failed(TLSError)
        case socketFailed(Errno)
    }

    /// Plaintext into `buffer` (at most its size): what waits first, then
    /// what the socket has, decrypted. `scratch` holds the records read.
    func read(into buffer: UnsafeMutableRawBufferPointer, socket: borrowing Socket, scratch: UnsafeMutableRawBufferPointer) -> Arrival {
        if !plaintext.isEmpty { return .plaintext(plaintext.take(into: buffer)) }
        if peerClosed { return .closed }
        let result: SysResult<Int>
        do { result = try socket.read(into: scratch) } catch { return .socketFailed(error) }
        guard case let .value(n) = result else { return .wouldBlock }
        if n == 0 { return .closed }
        let output: TLSOutput
        do { output = try client.receive(Array(UnsafeRawBufferPointer(rebasing: scratch[0 ..< n]))) } catch {
            records.append(client.alertRecord(for: error))
            flush(to: socket)
            return .failed(error)
        }
        records.append(output.toPeer)
        flush(to: socket)
        plaintext.append(output.applicationData)
        if output.peerClosed { peerClosed = true }
        if !plaintext.isEmpty { return .plaintext(plaintext.take(into: buffer)) }
        return peerClosed ? .closed : .again(handshakeFinished: output.handshakeCompleted)
    }

    /// close_notify before the socket's FIN.
    func close(_ socket: borrowing Socket) -> Bool {
        records.append(client.close())
        return flush(to: socket)
    }
}
