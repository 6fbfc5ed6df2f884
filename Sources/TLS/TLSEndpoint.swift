/// What the client and the server share once their handshakes are told
/// apart: feeding records in, sending data, closing, alerts, key changes.
/// Each side supplies only `handle`, its own switch over (state, message).
protocol TLSEndpoint {
    var records: RecordLayer { get set }
    var state: TLSHandshakeState { get set }
    var suite: CipherSuite { get }
    mutating func handle(_ message: HandshakeMessage, into output: inout TLSOutput) throws(TLSError)
}

extension TLSEndpoint {
    /// Bytes from the peer. A thrown error is fatal: send `alertRecord(for:)` and close.
    mutating func receiveRecords(_ bytes: [UInt8]) throws(TLSError) -> TLSOutput {
        var output = TLSOutput()
        records.append(bytes)
        while let content = try records.next() {
            switch content {
            case .handshake(let message):
                try handle(message, into: &output)
            case .applicationData(let data):
                guard state == .connected else { throw TLSError(.unexpectedMessage, "application data during the handshake") }
                output.applicationData += data
            case .closeNotify:
                output.peerClosed = true
            }
        }
        return output
    }

    /// Application data for the peer, as records (none before the handshake ends).
    mutating func sendData(_ plaintext: [UInt8]) -> [UInt8] {
        guard state == .connected, !plaintext.isEmpty else { return [] }
        return records.write(plaintext, type: .applicationData)
    }

    /// close_notify (§6.1): no more data from Sluice on this connection.
    mutating func closeNotify() -> [UInt8] {
        guard state != .closed else { return [] }
        state = .closed
        return records.alert(.closeNotify)
    }

    /// The alert an error owes the peer, under whatever keys are current.
    mutating func alert(for error: TLSError) -> [UInt8] {
        guard !error.sentByPeer, state != .closed else { return [] }
        state = .closed
        return records.alert(error.alert)
    }

    /// §5.1: keys change only between handshake messages.
    mutating func switchReading(to secret: [UInt8]) throws(TLSError) {
        guard records.isBetweenHandshakeMessages else { throw TLSError(.unexpectedMessage, "a handshake message spans a key change") }
        records.reading = RecordProtection(suite: suite, trafficSecret: secret)
    }
}
