import Crypto

/// One direction's record protection (RFC 8446 §5.2-§5.3): the AEAD, its key,
/// the per-record nonce (the IV xored with the 64-bit record sequence number)
/// and the sequence number itself, which starts at zero for every new traffic
/// secret. Each direction of each key epoch has one of these.
package struct RecordProtection {
    /// The AEAD with its key ready: AES-GCM's key schedule and GHASH subkey
    /// are expanded once per traffic key, not per record.
    private enum Cipher {
        case aes128GCM(AESGCMKey)
        case chacha20Poly1305([UInt8])
    }

    package let suite: CipherSuite
    private let cipher: Cipher
    private let iv: [UInt8]
    package private(set) var sequenceNumber: UInt64 = 0

    package init(suite: CipherSuite, trafficSecret: [UInt8]) {
        self.suite = suite
        let (key, iv) = KeySchedule<SHA256>.trafficKeys(secret: trafficSecret, keySize: suite.keySize)
        self.iv = iv
        switch suite {
        case .aes128GCMSHA256:
            // 16 bytes from HKDF always make a key.
            cipher = .aes128GCM(AESGCMKey(key: key)!)
        case .chacha20Poly1305SHA256:
            cipher = .chacha20Poly1305(key)
        }
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
    /// type; no padding) sealed in place behind an application_data header
    /// (§5.2). `content` must fit one record (2^14 bytes); callers split longer data.
    package mutating func seal(_ content: [UInt8], type: ContentType) -> [UInt8] {
        let length = content.count + 1 + 16
        var record: [UInt8] = []
        record.reserveCapacity(5 + length)
        record += [ContentType.applicationData.rawValue, 0x03, 0x03, UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
        let header = record
        record += content
        record.append(type.rawValue)
        let tag: [UInt8]?
        switch cipher {
        case .aes128GCM(let key):
            tag = key.sealInPlace(nonce: nonce(), buffer: &record, range: 5 ..< record.count, additionalData: header)
        case .chacha20Poly1305(let key):
            tag = ChaCha20Poly1305.sealInPlace(key: key, nonce: nonce(), buffer: &record, range: 5 ..< record.count, additionalData: header)
        }
        sequenceNumber &+= 1
        // Sizes are the suite's own, so sealing cannot fail.
        record += tag ?? []
        return record
    }

    /// The content and real type of a protected record (§5.2, §5.4), opened in place.
    package mutating func open(_ record: TLSRecord) throws(TLSError) -> (type: ContentType, content: [UInt8]) {
        guard record.body.count >= 17 else { throw TLSError(.badRecordMAC, "a protected record of \(record.body.count) bytes") }
        var inner = record.body
        let textCount = inner.count - 16
        let tag = record.body[textCount...]
        let opened: Bool
        switch cipher {
        case .aes128GCM(let key):
            opened = key.openInPlace(nonce: nonce(), buffer: &inner, range: 0 ..< textCount, tag: tag, additionalData: record.header)
        case .chacha20Poly1305(let key):
            opened = ChaCha20Poly1305.openInPlace(key: key, nonce: nonce(), buffer: &inner, range: 0 ..< textCount, tag: tag,
                                                  additionalData: record.header)
        }
        guard opened else { throw TLSError(.badRecordMAC, "a record does not decrypt") }
        sequenceNumber &+= 1
        inner.removeLast(16)
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
