internal import Sys
internal import TLS

/// What `TLSOverSocket` needs of a TLS state machine: Sluice's client (the
/// real server's side) or its server (a `sluice proxy` client's side).
protocol TLSMachine {
    var isConnected: Bool { get }
    mutating func receive(_ bytes: [UInt8]) throws(TLSError) -> TLSOutput
    mutating func close() -> [UInt8]
    mutating func alertRecord(for error: TLSError) -> [UInt8]
    mutating func receive(inPlace buffer: UnsafeMutableRawBufferPointer) throws(TLSError) -> InPlaceReceipt
    var hasUnframedBytes: Bool { get }
    mutating func takeUnframedBytes() -> [UInt8]
    var sealing: (prefix: Int, suffix: Int)? { get }
    mutating func send(inPlace record: UnsafeMutableRawBufferPointer, contentCount: Int) -> Int
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
///
/// Once the handshake is over, records are opened and sealed where they
/// lie: the socket is read into `incoming` and each record decrypted there,
/// and plaintext for the peer is copied once into a buffer where its record
/// is sealed around it and written from. The handshake's records, and any
/// record the in-place path leaves alone, go through the machine's `receive`.
final class TLSOverSocket<Machine: TLSMachine> {
    var machine: Machine
    /// The peer's name, for messages.
    let host: String
    /// Records for the peer that the socket did not take yet.
    var records = OutgoingBytes()
    /// Decrypted bytes the reader had no room for yet (from `receive`).
    let plaintext = PlaintextQueue(capacity: 16 * 1024)
    var peerClosed = false
    /// Records read from the socket after the handshake, opened there.
    private let incoming = RecordInbox()
    /// A record failed after others had been opened into the reader's room:
    /// they went first, and this is the next read's answer (its alert went).
    private var failure: TLSError?
    /// Where records for the peer are sealed (`writeSealedInPlace`).
    private var outgoing: UnsafeMutableRawBufferPointer?

    /// Plaintext sealed per write to the socket: four records' worth.
    static var sealedPerWrite: Int { 4 * 16 * 1024 }

    init(_ machine: Machine, host: String) {
        self.machine = machine
        self.host = host
    }

    deinit {
        outgoing?.deallocate()
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
        // Keys for sealing exist exactly while the machine is connected.
        guard let sealing = machine.sealing else { return (0, false) }
        return writeSealedInPlace(bytes, sealing: sealing, to: socket)
    }

    /// Up to four records at a time, each sealed where its content was
    /// copied, written with one system call; what the socket leaves waits in
    /// `records`.
    private func writeSealedInPlace(_ bytes: UnsafeRawBufferPointer, sealing: (prefix: Int, suffix: Int),
                                    to socket: borrowing Socket) -> (taken: Int, blocked: Bool) {
        let overhead = sealing.prefix + sealing.suffix
        let buffer = outgoingBuffer(byteCount: min(bytes.count, Self.sealedPerWrite) + 4 * overhead)
        var taken = 0
        // Bounded: each pass takes up to 64 KiB of `bytes`.
        while taken < bytes.count {
            var sealed = 0
            for _ in 0 ..< 4 where taken < bytes.count {
                let n = min(16 * 1024, bytes.count - taken)
                let record = UnsafeMutableRawBufferPointer(rebasing: buffer[sealed ..< sealed + n + overhead])
                (record.baseAddress! + sealing.prefix).copyMemory(from: bytes.baseAddress! + taken, byteCount: n)
                sealed += machine.send(inPlace: record, contentCount: n)
                taken += n
            }
            let out = UnsafeRawBufferPointer(rebasing: buffer[0 ..< sealed])
            let written: Int
            switch try? socket.write(out) {
            case let .value(n)?: written = n
            case .wouldBlock?, nil: written = 0
            }
            if written < sealed {
                records.append(Array(out[written...]))
                return (taken, true)
            }
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
    /// what the socket has, decrypted. During the handshake `scratch` holds
    /// the records read; after it they are read into `incoming` and opened
    /// there, as many as `buffer` has room for.
    func read(into buffer: UnsafeMutableRawBufferPointer, socket: borrowing Socket, scratch: UnsafeMutableRawBufferPointer) -> Arrival {
        if !plaintext.isEmpty { return .plaintext(plaintext.take(into: buffer)) }
        let opened = incoming.takeOpened(into: buffer)
        if opened > 0 { return .plaintext(opened) }
        if let failure { return .failed(failure) }
        if !isConnected, !peerClosed {
            if let arrival = handRecordsToMachine(into: buffer, socket: socket) { return arrival }
            return readThroughMachine(socket: socket, scratch: scratch, into: buffer)
        }
        return readInPlace(into: buffer, socket: socket, readingSocket: true)
    }

    /// Not connected (the handshake, or Sluice sent close_notify, after
    /// which the machine reads what still comes): records already read go
    /// to the machine first, in order. Nil when they held nothing to report.
    private func handRecordsToMachine(into buffer: UnsafeMutableRawBufferPointer, socket: borrowing Socket) -> Arrival? {
        let rest = incoming.takeUnopened()
        guard !rest.isEmpty else { return nil }
        do { try absorb(rest, socket: socket) } catch { return .failed(error) }
        if !plaintext.isEmpty { return .plaintext(plaintext.take(into: buffer)) }
        return peerClosed ? .closed : nil
    }

    /// Decrypted bytes, or whole records, already read: epoll says nothing
    /// of them, so whoever makes room for them must look.
    var hasPlaintextWaiting: Bool {
        !plaintext.isEmpty || failure != nil || incoming.hasWholeRecord
    }

    /// What `hasPlaintextWaiting` reports, into `buffer`, without reading the
    /// socket: the plaintext's count, or what ended the connection.
    func takeWaiting(into buffer: UnsafeMutableRawBufferPointer, socket: borrowing Socket) -> Arrival {
        if !plaintext.isEmpty { return .plaintext(plaintext.take(into: buffer)) }
        let opened = incoming.takeOpened(into: buffer)
        if opened > 0 { return .plaintext(opened) }
        if let failure { return .failed(failure) }
        if !isConnected, !peerClosed { return handRecordsToMachine(into: buffer, socket: socket) ?? .wouldBlock }
        return readInPlace(into: buffer, socket: socket, readingSocket: false)
    }

    /// After the handshake; the callers have handed out what was opened before.
    private func readInPlace(into buffer: UnsafeMutableRawBufferPointer, socket: borrowing Socket, readingSocket: Bool) -> Arrival {
        if peerClosed { return .closed }
        var produced = 0
        // Bounded: each pass opens a record, reads the socket or ends.
        for _ in 0 ..< 64 {
            let step: RecordInbox.Step
            do { step = try incoming.open(&machine) } catch {
                let failed = fail(error, socket: socket)
                guard produced > 0 else { return failed }
                // What was opened before the bad record goes first; the failure is the next read's.
                failure = error
                return .plaintext(produced)
            }
            switch step {
            case .opened:
                produced += incoming.takeOpened(into: UnsafeMutableRawBufferPointer(rebasing: buffer[produced...]))
                if produced == buffer.count { return .plaintext(produced) }
                continue
            case let .output(output):
                take(output, socket: socket)
                // Its plaintext, if any, follows what was opened before it.
                if produced > 0 { if plaintext.isEmpty, !peerClosed { continue } else { return .plaintext(produced) } }
                if !plaintext.isEmpty { return .plaintext(plaintext.take(into: buffer)) }
                if peerClosed { return .closed }
                continue
            case .needMore:
                break
            }
            // The socket is read only for a call that has nothing yet: once per call, as during the handshake.
            if produced > 0 { return .plaintext(produced) }
            guard readingSocket else { return .wouldBlock }
            switch readSocket(socket) {
            case .value(0): return .closed
            case .value: continue
            case .wouldBlock: return .wouldBlock
            case let .failed(error): return .socketFailed(error)
            }
        }
        return produced > 0 ? .plaintext(produced) : .again(handshakeFinished: false)
    }

    /// The handshake's records, through the machine.
    private func readThroughMachine(socket: borrowing Socket, scratch: UnsafeMutableRawBufferPointer,
                                    into buffer: UnsafeMutableRawBufferPointer) -> Arrival {
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

    private enum SocketRead {
        case value(Int)
        case wouldBlock
        case failed(Errno)
    }

    /// More records into `incoming`.
    private func readSocket(_ socket: borrowing Socket) -> SocketRead {
        let result: SysResult<Int>
        do { result = try socket.read(into: incoming.room()) } catch { return .failed(error) }
        guard case let .value(n) = result else { return .wouldBlock }
        incoming.filled(n)
        return .value(n)
    }

    /// Grown to the largest write so far: a connection that only sends
    /// requests keeps a small one. Kept, not freed after each write: freeing
    /// 64 KiB lets malloc give the heap's top back to the kernel, and the
    /// next write faults it in again.
    private func outgoingBuffer(byteCount: Int) -> UnsafeMutableRawBufferPointer {
        if let outgoing, outgoing.count >= byteCount { return outgoing }
        outgoing?.deallocate()
        let made = UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 16)
        outgoing = made
        return made
    }

    private func take(_ output: TLSOutput, socket: borrowing Socket) {
        records.append(output.toPeer)
        flush(to: socket)
        plaintext.append(output.applicationData)
        if output.peerClosed { peerClosed = true }
    }

    private func fail(_ error: TLSError, socket: borrowing Socket) -> Arrival {
        records.append(machine.alertRecord(for: error))
        flush(to: socket)
        return .failed(error)
    }

    /// Records already read (a proxy client's ClientHello, read while its
    /// tunnel was sniffed): what they answer goes out, their plaintext waits.
    /// Returns whether they finished the handshake; a thrown error's alert
    /// went to the peer.
    @discardableResult
    func absorb(_ bytes: [UInt8], socket: borrowing Socket) throws(TLSError) -> Bool {
        let output: TLSOutput
        do { output = try machine.receive(bytes) } catch {
            _ = fail(error, socket: socket)
            throw error
        }
        take(output, socket: socket)
        return output.handshakeCompleted
    }

    /// close_notify before the socket's FIN.
    func close(_ socket: borrowing Socket) -> Bool {
        records.append(machine.close())
        return flush(to: socket)
    }
}
