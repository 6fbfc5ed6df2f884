/// Both directions of records for one connection (RFC 8446 §5): framing,
/// the current protection each way, the handshake messages inside handshake
/// records, alerts, and the change_cipher_spec records that middlebox
/// compatibility mode sends and §5 says to drop.
package struct RecordLayer {
    private var framer = RecordFramer()
    private var handshakeFramer = HandshakeFramer()
    /// Nil while records are in the clear (the hellos).
    package var reading: RecordProtection?
    package var writing: RecordProtection?
    /// §5: a change_cipher_spec of one 0x01 byte is dropped until the handshake ends.
    package var acceptsChangeCipherSpec = true
    /// TLS 1.2 records (RFC 5246 §6.2): protected records keep their real
    /// type, and the peer's change_cipher_spec is what turns on `pendingReading`.
    package var tls12 = false
    /// TLS 1.2: the protection the peer's next change_cipher_spec switches to.
    package var pendingReading: RecordProtection?
    /// §4.2.10: a server that declines 0-RTT drops the client's early data:
    /// protected records it cannot open, up to this many bytes, until one
    /// opens (and, after a HelloRetryRequest, application_data records in the
    /// clear). Zero when no early data can come.
    package var earlyDataToSkip = 0

    package init() {}

    /// Content of any length as records of at most 2^14 bytes each.
    package mutating func write(_ content: [UInt8], type: ContentType) -> [UInt8] {
        var out: [UInt8] = []
        var offset = 0
        repeat {
            let end = min(offset + 16384, content.count)
            let piece = Array(content[offset ..< end])
            if writing != nil {
                out += writing!.seal(piece, type: type)
            } else {
                out += TLSRecord.encode(type: type, body: piece)
            }
            offset = end
        } while offset < content.count
        return out
    }

    /// A fatal alert, or close_notify, under the current keys (§6).
    package mutating func alert(_ alert: TLSAlert) -> [UInt8] {
        write([alert == .closeNotify ? 1 : 2, alert.rawValue], type: .alert)
    }

    package mutating func append(_ bytes: [UInt8]) { framer.append(bytes) }

    /// What the records so far hold, one unit at a time: a whole handshake
    /// message, a run of application data, or the peer's close_notify. Nil
    /// when more bytes are needed.
    package mutating func next() throws(TLSError) -> RecordContent? {
        while true {
            if let message = try handshakeFramer.nextMessage() { return .handshake(message) }
            guard let record = try framer.nextRecord() else { return nil }
            let type: ContentType
            let content: [UInt8]
            if record.type == .changeCipherSpec, tls12 {
                // RFC 5246 §7.1: the peer's keys change here, between handshake
                // messages, and only when Sluice has the keys ready.
                guard record.body == [1], let pending = pendingReading, handshakeFramer.isEmpty else {
                    throw TLSError(.unexpectedMessage, "a change_cipher_spec record out of place")
                }
                reading = pending
                pendingReading = nil
                continue
            }
            if record.type == .changeCipherSpec {
                guard acceptsChangeCipherSpec, record.body == [1] else {
                    throw TLSError(.unexpectedMessage, "a change_cipher_spec record")
                }
                continue
            }
            // Early data that came before a HelloRetryRequest's second hello.
            if earlyDataToSkip > 0, reading == nil, record.type == .applicationData {
                try skipEarlyData(record)
                continue
            }
            if reading != nil, !tls12, record.type == .alert, acceptsChangeCipherSpec, record.body.count == 2 {
                // During the handshake a peer that gives up before it has switched
                // its own keys (OpenSSL's client refusing a certificate) sends its
                // alert in the clear. The connection ends either way; reading the
                // alert is what lets the engine say why ("unknown_ca").
                let alert = TLSAlert(rawValue: record.body[1]) ?? .internalError
                throw TLSError(alert, "alert \(record.body[1]), in the clear", sentByPeer: true)
            }
            if reading != nil {
                guard record.type == .applicationData || tls12 else {
                    throw TLSError(.unexpectedMessage, "a \(record.type) record in the clear after keys were set")
                }
                do {
                    (type, content) = try reading!.open(record)
                    earlyDataToSkip = 0
                } catch where earlyDataToSkip > 0 {
                    try skipEarlyData(record)
                    continue
                }
            } else {
                type = record.type
                content = record.body
            }
            if let content = try accept(type, content) { return content }
        }
    }

    /// One record's content, opened (or in the clear): a handshake record's
    /// goes to the handshake framer, an alert ends the connection or is a
    /// warning, application data is handed out. Nil: nothing to hand out.
    private mutating func accept(_ type: ContentType, _ content: [UInt8]) throws(TLSError) -> RecordContent? {
        switch type {
        case .handshake:
            guard !content.isEmpty else { throw TLSError(.unexpectedMessage, "an empty handshake record") }
            handshakeFramer.append(content)
        case .alert:
            guard content.count == 2 else { throw TLSError(.decodeError, "an alert of \(content.count) bytes") }
            let alert = TLSAlert(rawValue: content[1]) ?? .internalError
            if alert == .closeNotify || alert == .userCanceled { return .closeNotify }
            // RFC 5246 §7.2: TLS 1.2 warnings (no_renegotiation, say) do not end the connection.
            if tls12, content[0] == 1 { return nil }
            throw TLSError(alert, "alert \(content[1])", sentByPeer: true)
        case .applicationData:
            guard reading != nil else { throw TLSError(.unexpectedMessage, "application data in the clear") }
            guard handshakeFramer.isEmpty else {
                throw TLSError(.unexpectedMessage, "application data inside a handshake message")
            }
            if !content.isEmpty { return .applicationData(content) }
        case .changeCipherSpec:
            throw TLSError(.unexpectedMessage, "a protected change_cipher_spec")
        }
        return nil
    }

    /// Whether the next record may be opened where it lies (`openInPlace`):
    /// keys are set, no handshake message is half read, and nothing special
    /// (early data to skip, a TLS 1.2 key change pending) is under way.
    package var opensInPlace: Bool {
        reading != nil && handshakeFramer.isEmpty && earlyDataToSkip == 0 && pendingReading == nil
    }

    /// Bytes appended but not yet framed into a whole record (a record's
    /// start), taken out so that the caller can go on with them in place.
    package mutating func takeUnframedBytes() -> [UInt8] { framer.takeBuffered() }

    package var hasUnframedBytes: Bool { framer.bufferedCount > 0 }

    /// The record at the start of `buffer`, opened where it lies: for
    /// application data, its content's range in `buffer`; other content is
    /// taken as `next` takes it. Only a protected application_data record
    /// with a TLS 1.2 version is opened here. Any other whole record, or one
    /// read while the layer is mid-message, is `.notInPlace` with its
    /// length: the caller hands exactly those bytes to `append`, where `next`
    /// reads them, so the framer never keeps a record's start for itself. A
    /// header no TLS peer sends is `.notInPlace` with all of `buffer`, which
    /// `next` refuses at once. A record not yet whole is `.needMore`,
    /// whatever its type.
    package mutating func openInPlace(_ buffer: UnsafeMutableRawBufferPointer) throws(TLSError) -> InPlaceRecord {
        guard !hasUnframedBytes else { return .notInPlace(count: buffer.count) }
        guard let (consumed, plausible) = RecordFramer.peekHeader(UnsafeRawBufferPointer(buffer)) else { return .needMore }
        // What the framer would refuse goes to it at once, whole.
        guard plausible else { return .notInPlace(count: buffer.count) }
        guard buffer.count >= consumed else { return .needMore }
        guard opensInPlace, buffer[0] == ContentType.applicationData.rawValue, buffer[2] == 0x03 else { return .notInPlace(count: consumed) }
        let record = UnsafeMutableRawBufferPointer(rebasing: buffer[0 ..< consumed])
        let (type, content) = try reading!.open(inPlace: record)
        if type == .applicationData { return .applicationData(consumed: consumed, content: content) }
        return .other(consumed: consumed, try accept(type, Array(UnsafeRawBufferPointer(rebasing: record[content]))))
    }

    /// What sealing in place puts around a record's content, once keys are set.
    package var sealing: (prefix: Int, suffix: Int)? {
        writing.map { ($0.sealedPrefixCount, $0.sealedSuffixCount) }
    }

    /// An application_data record sealed in `record` around the content the
    /// caller put at `sealing.prefix`; returns its length.
    package mutating func sealInPlace(_ record: UnsafeMutableRawBufferPointer, contentCount: Int) -> Int {
        writing!.seal(inPlace: record, contentCount: contentCount, type: .applicationData)
    }

    private mutating func skipEarlyData(_ record: TLSRecord) throws(TLSError) {
        guard record.body.count <= earlyDataToSkip else { throw TLSError(.unexpectedMessage, "more early data than a declining server skips") }
        earlyDataToSkip -= record.body.count
    }

    /// §5.1: keys change only between messages.
    package var isBetweenHandshakeMessages: Bool { handshakeFramer.isEmpty }
}

/// One record as `RecordLayer.openInPlace` found it.
package enum InPlaceRecord: Equatable {
    /// Not a whole record yet.
    case needMore
    /// The next `count` bytes take the general path (`append`, `next`).
    case notInPlace(count: Int)
    /// Application data, decrypted in the caller's buffer.
    case applicationData(consumed: Int, content: Range<Int>)
    /// Other content, taken: close_notify, or nil (a handshake record's
    /// content is in the handshake framer, for `next`; an ignored warning).
    case other(consumed: Int, RecordContent?)
}

package enum RecordContent: Sendable, Equatable {
    case handshake(HandshakeMessage)
    case applicationData([UInt8])
    case closeNotify
}
