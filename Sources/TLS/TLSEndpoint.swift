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

    /// The record at the start of `buffer`, opened where it lies once the
    /// handshake is over (the engine's path for bulk data, which copies no
    /// record): `.applicationData` gives the content's range in `buffer`;
    /// other records (a NewSessionTicket, a KeyUpdate, close_notify) are
    /// taken as `receive` takes them. `.notInPlace(count)`: hand that many
    /// bytes to `receive`, which reads or refuses them (a whole record, or
    /// everything before the handshake ends, while `hasUnframedBytes`, or
    /// from a header no peer sends). A record's start that `receive` kept is
    /// taken back with `takeUnframedBytes` to go on here.
    mutating func receiveInPlace(_ buffer: UnsafeMutableRawBufferPointer) throws(TLSError) -> InPlaceReceipt {
        guard state == .connected else { return .notInPlace(count: buffer.count) }
        switch try records.openInPlace(buffer) {
        case .needMore: return .needMore
        case let .notInPlace(count): return .notInPlace(count: count)
        case let .applicationData(consumed, content): return .applicationData(consumed: consumed, content: content)
        case let .other(consumed, content):
            // A handshake message waits in the framer: `receiveRecords` handles it as it would have.
            var output = try receiveRecords([])
            if content == .closeNotify { output.peerClosed = true }
            return .output(consumed: consumed, output)
        }
    }

    /// An application_data record sealed where it lies, around `contentCount`
    /// bytes the caller put at `sealing.prefix` in `record` (which has
    /// `sealing.suffix` more bytes of room after them). Its length; 0 before
    /// the handshake ends or after close.
    mutating func sealInPlace(_ record: UnsafeMutableRawBufferPointer, contentCount: Int) -> Int {
        guard state == .connected, records.sealing != nil else { return 0 }
        return records.sealInPlace(record, contentCount: contentCount)
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
