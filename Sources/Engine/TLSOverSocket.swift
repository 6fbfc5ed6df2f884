internal import Sys
internal import TLS

/// What `TLSOverSocket` needs of a TLS state machine: Sluice's client (the
/// real server's side) or its server (a `sluice proxy` client's side).
protocol TLSMachine {
    var isConnected: Bool { get }
    mutating func receive(_ bytes: [UInt8]) throws(TLSError) -> TLSOutput
    mutating func send(_ plaintext: [UInt8]) -> [UInt8]
    mutating func close() -> [UInt8]
    mutating func alertRecord(for error: TLSError) -> [UInt8]
}

extension TLSClient: TLSMachine {
    var isConnected: Bool { state == .connected }
}

extension TLSServer: TLSMachine {
    var isConnected: Bool { state == .connected }
}

/// The real server's side of an intercepted HTTPS connection: Sluice's
/// `TLSClient` on the upstream socket (direct, or after a proxy's CONNECT
/// or SOCKS handshake). One per upstream connection: a request planned for
/// another host opens another, with its own handshake and chain check.
typealias InterceptedUpstream = TLSOverSocket<TLSClient>

/// A TLS machine on a socket: records out as the socket takes them,
/// plaintext in as far as the reader has room. The tunnel's upstreams and
/// `sluice proxy`'s both sides use it; the tunnel's app side is a TCP
/// connection of Sluice's own stack instead (`InterceptedApp`).
final class TLSOverSocket<Machine: TLSMachine> {
    var machine: Machine
    /// The peer's name, for messages.
    let host: String
    /// Records for the peer that the socket did not take yet.
    var records = OutgoingBytes()
    /// Decrypted bytes the reader had no room for yet.
    let plaintext = PlaintextQueue(capacity: 16 * 1024)
    var peerClosed = false

    init(_ machine: Machine, host: String) {
        self.machine = machine
        self.host = host
    }

    var isConnected: Bool { machine.isConnected }

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

    /// Plaintext for the peer, as records; returns how much was taken
    /// (nothing before the handshake ends or while records wait).
    func write(_ bytes: UnsafeRawBufferPointer, to socket: borrowing Socket) -> (taken: Int, blocked: Bool) {
        guard flush(to: socket) else { return (0, true) }
        guard isConnected else { return (0, false) }
        var taken = 0
        while taken < bytes.count {
            let n = min(16 * 1024, bytes.count - taken)
            records.append(machine.send(Array(UnsafeRawBufferPointer(rebasing: bytes[taken ..< taken + n]))))
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
        /// The peer closed (close_notify, or FIN).
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
        let finished: Bool
        do { finished = try absorb(Array(UnsafeRawBufferPointer(rebasing: scratch[0 ..< n])), socket: socket) } catch {
            return .failed(error)
        }
        // The handshake's end is told first, and what came with it waits for
        // the next read: a server's first records can share a read with its
        // Finished (an h2 origin's SETTINGS, over TLS 1.2), and the caller
        // must first set up what reads them (HTTP/2, by the protocol chosen).
        if finished { return .again(handshakeFinished: true) }
        if !plaintext.isEmpty { return .plaintext(plaintext.take(into: buffer)) }
        return peerClosed ? .closed : .again(handshakeFinished: false)
    }

    /// Records already read (a proxy client's ClientHello, read while its
    /// tunnel was sniffed): what they answer goes out, their plaintext waits.
    /// Returns whether they finished the handshake; a thrown error's alert
    /// went to the peer.
    @discardableResult
    func absorb(_ bytes: [UInt8], socket: borrowing Socket) throws(TLSError) -> Bool {
        let output: TLSOutput
        do { output = try machine.receive(bytes) } catch {
            records.append(machine.alertRecord(for: error))
            flush(to: socket)
            throw error
        }
        records.append(output.toPeer)
        flush(to: socket)
        plaintext.append(output.applicationData)
        if output.peerClosed { peerClosed = true }
        return output.handshakeCompleted
    }

    /// close_notify before the socket's FIN.
    func close(_ socket: borrowing Socket) -> Bool {
        records.append(machine.close())
        return flush(to: socket)
    }
}
