import Crypto

/// One direction's record protection (RFC 8446 §5.2-§5.3): the AEAD, its key,
/// the per-record nonce (the IV xored with the 64-bit record sequence number)
/// and the sequence number itself, which starts at zero for every new traffic
/// secret. Each direction of each key epoch has one of these.
///
/// TLS 1.2's AEAD records (RFC 5246 §6.2.3.3) differ in three ways, and the
/// `tls12` protection does them: the record keeps its real type (no inner
/// type byte), the additional data is seq_num + type + version + plaintext
/// length, and AES-GCM carries 8 bytes of its nonce in each record (RFC 5288
/// §3; Sluice sends its sequence number there). ChaCha20-Poly1305 forms its
/// nonce as TLS 1.3 does (RFC 7905 §2).
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
    /// TLS 1.2 framing (above); false for TLS 1.3.
    private let tls12: Bool
    package private(set) var sequenceNumber: UInt64 = 0

    package init(suite: CipherSuite, trafficSecret: [UInt8]) {
        self.suite = suite
        let (key, iv) = KeySchedule<SHA256>.trafficKeys(secret: trafficSecret, keySize: suite.keySize)
        self.iv = iv
        tls12 = false
        cipher = Self.cipher(suite, key: key)
    }

    /// TLS 1.2: keys and the fixed part of the nonce from the key block
    /// (RFC 5246 §6.3): GCM's 4-byte salt, ChaCha20's 12-byte IV.
    package init(tls12 suite: TLS12CipherSuite, key: [UInt8], fixedIV: [UInt8]) {
        self.suite = suite.aead
        iv = fixedIV
        tls12 = true
        cipher = Self.cipher(suite.aead, key: key)
    }

    private static func cipher(_ suite: CipherSuite, key: [UInt8]) -> Cipher {
        switch suite {
        case .aes128GCMSHA256:
            // 16 bytes from HKDF or the PRF always make a key.
            .aes128GCM(AESGCMKey(key: key)!)
        case .chacha20Poly1305SHA256:
            .chacha20Poly1305(key)
        }
    }

    /// TLS 1.2's explicit nonce: AES-GCM's 8 bytes in front of each record's ciphertext.
    private var explicitNonceCount: Int {
        guard tls12 else { return 0 }
        switch cipher {
        case .aes128GCM: return 8
        case .chacha20Poly1305: return 0
        }
    }

    private var sequenceBytes: [UInt8] { (0 ..< 8).map { UInt8(truncatingIfNeeded: sequenceNumber >> UInt64(56 - 8 * $0)) } }

    /// RFC 5246 §6.2.3.3: seq_num + type + version + length of the plaintext.
    private func tls12AdditionalData(type: ContentType, length: Int) -> [UInt8] {
        sequenceBytes + [type.rawValue, 0x03, 0x03, UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
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
        if tls12 { return sealTLS12(content, type: type) }
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

    private mutating func sealTLS12(_ content: [UInt8], type: ContentType) -> [UInt8] {
        let explicit = explicitNonceCount
        let length = explicit + content.count + 16
        var record: [UInt8] = []
        record.reserveCapacity(5 + length)
        record += [type.rawValue, 0x03, 0x03, UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
        // RFC 5288 §3: the explicit part must never repeat under one key; the sequence number never does.
        if explicit > 0 { record += sequenceBytes }
        record += content
        let additionalData = tls12AdditionalData(type: type, length: content.count)
        let text = 5 + explicit ..< record.count
        let tag: [UInt8]?
        switch cipher {
        case .aes128GCM(let key):
            tag = key.sealInPlace(nonce: iv + sequenceBytes, buffer: &record, range: text, additionalData: additionalData)
        case .chacha20Poly1305(let key):
            tag = ChaCha20Poly1305.sealInPlace(key: key, nonce: nonce(), buffer: &record, range: text, additionalData: additionalData)
        }
        sequenceNumber &+= 1
        record += tag ?? []
        return record
    }

    /// The content and real type of a protected record (§5.2, §5.4), opened in place.
    package mutating func open(_ record: TLSRecord) throws(TLSError) -> (type: ContentType, content: [UInt8]) {
        if tls12 { return try openTLS12(record) }
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

    private mutating func openTLS12(_ record: TLSRecord) throws(TLSError) -> (type: ContentType, content: [UInt8]) {
        let explicit = explicitNonceCount
        guard record.body.count >= explicit + 16 else { throw TLSError(.badRecordMAC, "a protected record of \(record.body.count) bytes") }
        var body = record.body
        let textCount = body.count - explicit - 16
        guard textCount <= 16384 else { throw TLSError(.recordOverflow, "a record holding \(textCount) bytes") }
        let tag = record.body[(explicit + textCount)...]
        let additionalData = tls12AdditionalData(type: record.type, length: textCount)
        let text = explicit ..< explicit + textCount
        let opened: Bool
        switch cipher {
        case .aes128GCM(let key):
            opened = key.openInPlace(nonce: iv + body[0 ..< explicit], buffer: &body, range: text, tag: tag, additionalData: additionalData)
        case .chacha20Poly1305(let key):
            opened = ChaCha20Poly1305.openInPlace(key: key, nonce: nonce(), buffer: &body, range: text, tag: tag, additionalData: additionalData)
        }
        guard opened else { throw TLSError(.badRecordMAC, "a record does not decrypt") }
        sequenceNumber &+= 1
        return (record.type, Array(body[text]))
    }
}
