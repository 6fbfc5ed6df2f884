import Crypto

/// One direction's record protection (RFC 8446 §5.2-§5.3): the AEAD, its key,
/// the per-record nonce (the IV xored with the 64-bit record sequence number)
/// and the sequence number itself, which starts at zero for every new traffic
/// secret. Each direction of each key epoch has one of these.
package struct RecordProtection {
    package let suite: CipherSuite
    private let key: [UInt8]
    private let iv: [UInt8]
    package private(set) var sequenceNumber: UInt64 = 0

    package init(suite: CipherSuite, trafficSecret: [UInt8]) {
        self.suite = suite
        (key, iv) = KeySchedule<SHA256>.trafficKeys(secret: trafficSecret, keySize: suite.keySize)
    }

    /// §5.3: the IV with the sequence number, big-endian, xored into its last 8 bytes.
    private func nonce() -> [UInt8] {
        var nonce = iv
        for i in 0 ..< 8 {
            nonce[4 + i] ^= UInt8(truncatingIfNeeded: sequenceNumber >> UInt64(56 - 8 * i))
        }
        return nonce
    }

    /// A whole protected record: TLSInnerPlaintext (content, then its real
    /// type; no padding) sealed under an application_data header (§5.2).
    /// `content` must fit one record (2^14 bytes); callers split longer data.
    package mutating func seal(_ content: [UInt8], type: ContentType) -> [UInt8] {
        var inner = content
        inner.append(type.rawValue)
        let length = inner.count + 16
        let header: [UInt8] = [ContentType.applicationData.rawValue, 0x03, 0x03,
                               UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
        let sealed: (ciphertext: [UInt8], tag: [UInt8])?
        switch suite {
        case .aes128GCMSHA256:
            sealed = AESGCM.seal(key: key, nonce: nonce(), plaintext: inner, additionalData: header)
        case .chacha20Poly1305SHA256:
            sealed = ChaCha20Poly1305.seal(key: key, nonce: nonce(), plaintext: inner, additionalData: header)
        }
        sequenceNumber &+= 1
        // Sizes are the suite's own, so sealing cannot fail.
        guard let sealed else { return header }
        return header + sealed.ciphertext + sealed.tag
    }

    /// The content and real type of a protected record (§5.2, §5.4).
    package mutating func open(_ record: TLSRecord) throws(TLSError) -> (type: ContentType, content: [UInt8]) {
        guard record.body.count >= 17 else { throw TLSError(.badRecordMAC, "a protected record of \(record.body.count) bytes") }
        let ciphertext = Array(record.body[..<(record.body.count - 16)])
        let tag = Array(record.body[(record.body.count - 16)...])
        let opened: [UInt8]?
        switch suite {
        case .aes128GCMSHA256:
            opened = AESGCM.open(key: key, nonce: nonce(), ciphertext: ciphertext, tag: tag, additionalData: record.header)
        case .chacha20Poly1305SHA256:
            opened = ChaCha20Poly1305.open(key: key, nonce: nonce(), ciphertext: ciphertext, tag: tag, additionalData: record.header)
        }
        guard var inner = opened else { throw TLSError(.badRecordMAC, "a record does not decrypt") }
        sequenceNumber &+= 1
        // §5.4: the real type is the last non-zero byte; zeros after it are padding.
        while let last = inner.last, last == 0 { inner.removeLast() }
        guard let typeByte = inner.popLast() else { throw TLSError(.unexpectedMessage, "a record of padding alone") }
        guard let type = ContentType(rawValue: typeByte), type != .changeCipherSpec else {
            throw TLSError(.unexpectedMessage, "a protected record of type \(typeByte)")
        }
        guard inner.count <= 16384 else { throw TLSError(.recordOverflow, "a record holding \(inner.count) bytes") }
        return (type, inner)
    }
}
