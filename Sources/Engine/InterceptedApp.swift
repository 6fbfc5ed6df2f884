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
        for _ in 0 ..< 64 {
            guard failure == nil, !peerClosed, plaintext.count < Self.readAhead, connection.readableCount > 0 else { break }
            let chunk = Array(connection.peekReadable(maxLength: 16 * 1024))
            connection.consume(chunk.count)
            do {
                let output = try server.receive(chunk)
                records.append(output.toPeer)
                plaintext.append(output.applicationData)
                if output.handshakeCompleted { finished = true }
                if output.peerClosed { peerClosed = true }
            } catch {
                failure = error
                records.append(server.alertRecord(for: error))
                closing = true
                break
            }
        }
        flush(to: connection)
        return finished
    }

    func flush(to connection: TCPConnection) {
        records.drain { connection.write($0) }
        if closing, records.isEmpty { connection.shutdownWrite() }
    }

    /// Plaintext for the app, as records; returns how much was taken.
    func write(_ bytes: UnsafeRawBufferPointer, to connection: TCPConnection) -> Int {
        flush(to: connection)
        var taken = 0
        let limit = min(bytes.count, room(in: connection))
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

    /// How much plaintext `write` would take now.
    func room(in connection: TCPConnection) -> Int {
        guard isConnected, !closing, records.isEmpty else { return 0 }
        let free = connection.writableCount
        return max(0, free - (free / (16 * 1024) + 1) * Self.recordOverhead)
    }

    /// The app's side sends nothing more from Sluice: close_notify, then FIN.
    func shutdownWrite(_ connection: TCPConnection) {
        guard !closing else { return }
        closing = true
        records.append(server.close())
        flush(to: connection)
    }

    /// Nothing more will come from the app (close_notify or FIN) and all of it was read.
    func isReadClosed(_ connection: TCPConnection) -> Bool {
        plaintext.isEmpty && (peerClosed || failure != nil || connection.isReadClosed)
    }
}
