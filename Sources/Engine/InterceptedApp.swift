internal import HTTP
internal import Stack
internal import TLS

/// The app's side of an intercepted HTTPS connection: Sluice's `TLSServer`
/// on the app's TCP connection. HTTP mode reads and writes the plaintext
/// through it exactly as it reads and writes a plain connection (`peek`,
/// `consume`, `write`, `room`), so rewrites, Map Local, rules, HAR and
/// statistics run on HTTPS unchanged.
///
/// Backpressure holds both ways: records are taken from the connection only
/// while less than `readAhead` plaintext waits, and plaintext is accepted
/// only as far as the connection's send buffer has room for its records.
///
/// An app that speaks HTTP/2 (ALPN h2) gets an `HTTP2Gateway` between the
/// TLS and HTTP mode: the plaintext HTTP mode reads is the gateway's
/// HTTP/1.1 requests, and what it writes becomes frames on their streams.
///
/// Once the handshake is over, records are opened and sealed where they
/// lie: the app's are copied from the connection's receive ring into
/// `incoming` and decrypted there (a record may wrap in the ring), their
/// content copied once into `plaintext`; ours are sealed in the
/// connection's send buffer itself (`writeSealedInPlace`).
final class InterceptedApp {
    var server: TLSServer
    /// Small until a transfer needs more: most intercepted connections carry a few requests.
    let plaintext = PlaintextQueue(capacity: 16 * 1024)
    /// Records for the app that did not fit in the connection's send buffer yet.
    var records = OutgoingBytes()
    /// The app sent close_notify.
    var peerClosed = false
    /// close_notify is queued: the FIN follows it.
    var closing = false
    /// Why the handshake or a record failed; the alert went to the app.
    var failure: TLSError?
    /// The app's records after the handshake, opened there.
    private let incoming = RecordInbox()
    /// HTTP/2 inside, once the handshake chose h2.
    var gateway: HTTP2Gateway?
    /// Why the HTTP/2 connection ended (its GOAWAY went to the app).
    var http2Failure: HTTP2ConnectionError?
    /// HTTP/2: where requests stop short (`HTTP2Gateway.takeRequests`), in
    /// plaintext bytes from the connection's start; HTTP mode reads up to
    /// the first, then abandons the request in progress (`atCut`).
    private var cuts: [Int] = []
    private var plaintextAppended = 0
    private var plaintextConsumed = 0

    static let readAhead = 64 * 1024
    /// What a record adds to its plaintext (header, content type, tag).
    static let recordOverhead = 5 + 1 + 16

    init(server: TLSServer) {
        self.server = server
    }

    var isConnected: Bool { server.state == .connected }

    /// Decrypts what the app sent (as far as `readAhead` allows) and sends
    /// what is queued for it. Returns true on the call that finished the handshake.
    func exchange(with connection: TCPConnection) -> Bool {
        flush(to: connection)
        var finished = false
        // Bounded: each pass opens a record, takes bytes from the connection or ends.
        reading: for _ in 0 ..< 64 {
            guard failure == nil, !peerClosed, plaintext.count < Self.readAhead else { break }
            if !isConnected {
                // The handshake (or what comes after Sluice's close_notify): records through `receive`.
                var chunk = incoming.takeUnopened()
                if chunk.isEmpty {
                    guard connection.readableCount > 0 else { break }
                    chunk = Array(connection.peekReadable(maxLength: 16 * 1024))
                    connection.consume(chunk.count)
                }
                do {
                    let output = try server.receive(chunk)
                    // Records go in the order they were sealed: the handshake's before the gateway's first frames.
                    records.append(output.toPeer)
                    if output.handshakeCompleted {
                        finished = true
                        if server.applicationProtocol == Interception.http2 {
                            gateway = HTTP2Gateway()
                            sendFrames(to: connection)
                        }
                    }
                    deliver(output, connection: connection)
                } catch {
                    fail(error)
                    break
                }
                continue
            }
            let step: RecordInbox.Step
            do { step = try incoming.open(&server) } catch {
                fail(error)
                break
            }
            switch step {
            case .opened:
                if gateway != nil {
                    receiveFrames(Array(incoming.openedBytes), connection: connection)
                } else {
                    appendPlaintext(incoming.openedBytes)
                }
                incoming.discardOpened()
            case let .output(output):
                records.append(output.toPeer)
                deliver(output, connection: connection)
            case .needMore:
                guard connection.readableCount > 0 else { break reading }
                let room = incoming.room()
                // The ring's readable bytes may wrap: two copies at most fill the room.
                var n = 0
                for _ in 0 ..< 2 where n < room.count && connection.readableCount > 0 {
                    let part = connection.peekReadable(maxLength: room.count - n)
                    (room.baseAddress! + n).copyMemory(from: part.baseAddress!, byteCount: part.count)
                    connection.consume(part.count)
                    n += part.count
                }
                incoming.filled(n)
            }
        }
        flush(to: connection)
        return finished
    }

    /// What records read whole gave: plaintext, and close_notify.
    private func deliver(_ output: TLSOutput, connection: TCPConnection) {
        if gateway != nil {
            receiveFrames(output.applicationData, connection: connection)
        } else {
            output.applicationData.withUnsafeBytes { appendPlaintext($0) }
        }
        if output.peerClosed { peerClosed = true }
    }

    /// The app's records failed: the alert goes, then FIN.
    private func fail(_ error: TLSError) {
        failure = error
        records.append(server.alertRecord(for: error))
        closing = true
    }

    func flush(to connection: TCPConnection) {
        records.drain { connection.write($0) }
        if closing, records.isEmpty { connection.shutdownWrite() }
    }

    /// The app's HTTP/2 bytes: requests for HTTP mode, frames back to the app.
    private func receiveFrames(_ bytes: [UInt8], connection: TCPConnection) {
        guard !bytes.isEmpty, http2Failure == nil else { return }
        do { try gateway!.receive(bytes) } catch {
            endHTTP2(error, connection: connection)
        }
        let requests = gateway!.takeRequests()
        cuts += requests.cuts.map { plaintextAppended + $0 }
        requests.bytes.withUnsafeBytes { appendPlaintext($0) }
        sendFrames(to: connection)
    }

    private func appendPlaintext(_ bytes: UnsafeRawBufferPointer) {
        plaintext.append(bytes)
        plaintextAppended += bytes.count
    }

    /// The plaintext HTTP mode may read now: up to the next cut.
    var readable: UnsafeRawBufferPointer {
        let all = plaintext.readable
        guard let cut = cuts.first else { return all }
        return UnsafeRawBufferPointer(rebasing: all.prefix(cut - plaintextConsumed))
    }

    var readableCount: Int {
        cuts.first.map { $0 - plaintextConsumed } ?? plaintext.count
    }

    /// HTTP mode read `n` bytes.
    func consume(_ n: Int) {
        plaintext.consume(n)
        plaintextConsumed += n
        // Dropped unread (the connection is ending): the request there went nowhere.
        while let cut = cuts.first, cut < plaintextConsumed { cuts.removeFirst() }
    }

    /// HTTP mode read all of a request that stops short here.
    var atCut: Bool { cuts.first == plaintextConsumed }

    /// HTTP mode abandoned that request: what follows is the next one.
    func passCut() {
        if atCut { cuts.removeFirst() }
    }

    /// The gateway's frames, sealed into records: in the connection's send
    /// buffer itself when nothing is queued before them (as `write` seals
    /// HTTP/1.1), else behind what is queued.
    private func sendFrames(to connection: TCPConnection) {
        guard gateway!.hasOutput else { return }
        let frames = gateway!.takeOutput()
        var taken = 0
        if records.isEmpty, let sealing = server.sealing {
            taken = frames.withUnsafeBytes { writeSealedInPlace($0, limit: $0.count, sealing: sealing, to: connection) }
        }
        if taken < frames.count { records.append(server.send(Array(frames[taken...]))) }
    }

    /// A broken HTTP/2 connection: its GOAWAY is queued; nothing more is read
    /// from the app, and close_notify and FIN follow what is queued.
    private func endHTTP2(_ error: HTTP2ConnectionError, connection: TCPConnection) {
        http2Failure = error
        peerClosed = true
        sendFrames(to: connection)
        closing = true
        records.append(server.close())
    }

    /// Plaintext for the app, as records; returns how much was taken.
    func write(_ bytes: UnsafeRawBufferPointer, to connection: TCPConnection) -> Int {
        flush(to: connection)
        if gateway != nil { return writeFrames(bytes, to: connection) }
        var taken = 0
        let limit = min(bytes.count, room(in: connection))
        if let sealing = server.sealing { taken = writeSealedInPlace(bytes, limit: limit, sealing: sealing, to: connection) }
        while taken < limit {
            let n = min(16 * 1024, limit - taken)
            let sealed = server.send(Array(UnsafeRawBufferPointer(rebasing: bytes[taken ..< taken + n])))
            taken += n
            let written = sealed.withUnsafeBytes { connection.write($0) }
            if written < sealed.count {
                records.append(Array(sealed[written...]))
                break
            }
        }
        return taken
    }

    /// Records sealed in the connection's send buffer itself, each around
    /// its content copied there: no other copy of a response's bytes. Stops
    /// where the buffer's free space wraps with too little before the wrap
    /// for a whole record; `write` seals the rest apart and copies it in.
    private func writeSealedInPlace(_ bytes: UnsafeRawBufferPointer, limit: Int, sealing: (prefix: Int, suffix: Int),
                                    to connection: TCPConnection) -> Int {
        let overhead = sealing.prefix + sealing.suffix
        var taken = 0
        // Bounded: each pass seals a record or ends.
        while taken < limit {
            let wanted = min(16 * 1024, limit - taken)
            var content = 0
            let written = connection.write { space in
                // A record cut short at the wrap would only add a record's overhead.
                content = min(wanted, space.count - overhead)
                guard content == wanted || content >= 4096 else {
                    content = 0
                    return 0
                }
                (space.baseAddress! + sealing.prefix).copyMemory(from: bytes.baseAddress! + taken, byteCount: content)
                return server.send(inPlace: space, contentCount: content)
            }
            guard written > 0 else { break }
            taken += content
        }
        return taken
    }

    /// HTTP mode's HTTP/1.1 responses, as HTTP/2 frames on their streams.
    private func writeFrames(_ bytes: UnsafeRawBufferPointer, to connection: TCPConnection) -> Int {
        let limit = min(bytes.count, room(in: connection))
        guard limit > 0 else { return 0 }
        let taken: Int
        do { taken = try gateway!.respond(UnsafeRawBufferPointer(rebasing: bytes[0 ..< limit])) } catch {
            endHTTP2(error, connection: connection)
            flush(to: connection)
            // Nothing more can reach the app: what HTTP mode still writes is dropped.
            return bytes.count
        }
        sendFrames(to: connection)
        flush(to: connection)
        return taken
    }

    /// HTTP/2: the oldest stream awaiting a response gets none (its turn has
    /// come: the responses before it went to the gateway whole).
    func endNextStream(_ ending: StreamEnding, connection: TCPConnection) {
        guard gateway != nil, http2Failure == nil else { return }
        switch ending {
        case let .reset(code): gateway!.resetNextResponse(code)
        case .unanswered: gateway!.leaveNextResponseUnanswered()
        case .atClose: gateway!.endResponseAtClose()
        }
        sendFrames(to: connection)
        flush(to: connection)
    }

    /// How much plaintext `write` would take now.
    func room(in connection: TCPConnection) -> Int {
        guard isConnected, !closing, records.isEmpty else { return 0 }
        let free = connection.writableCount
        let tls = max(0, free - (free / (16 * 1024) + 1) * Self.recordOverhead)
        return gateway.map { min(tls, $0.responseRoom) } ?? tls
    }

    /// The app's side sends nothing more from Sluice: close_notify, then FIN
    /// (after HTTP/2's GOAWAY).
    func shutdownWrite(_ connection: TCPConnection) {
        guard !closing else { return }
        if gateway != nil {
            gateway!.goAway()
            sendFrames(to: connection)
        }
        closing = true
        records.append(server.close())
        flush(to: connection)
    }

    /// Nothing more will come from the app (close_notify or FIN) and all of it was read.
    func isReadClosed(_ connection: TCPConnection) -> Bool {
        // A record's start the app left behind its FIN never ends: it counts for nothing, as before.
        plaintext.isEmpty && (peerClosed || failure != nil || (connection.isReadClosed && !hasRecordsWaiting(in: connection)))
    }

    /// More plaintext may come without the app sending anything: its
    /// records wait in the connection, or read from it and not yet opened.
    func hasRecordsWaiting(in connection: TCPConnection) -> Bool {
        connection.readableCount > 0 || incoming.hasWholeRecord
    }
}
