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

    /// What sealing puts before a record's content (the header, and TLS 1.2
    /// AES-GCM's explicit nonce) and after it (TLS 1.3's inner type byte,
    /// the tag): a caller that seals in its own memory leaves room for both.
    package var sealedPrefixCount: Int { 5 + explicitNonceCount }
    package var sealedSuffixCount: Int { (tls12 ? 0 : 1) + 16 }

    /// The 8 big-endian bytes of the sequence number, in a UInt64's memory.
    private var sequenceWord: UInt64 { sequenceNumber.bigEndian }

    /// §5.3: the IV with the sequence number, big-endian, xored into its last 8 bytes.
    private func nonce() -> [UInt8] {
        var nonce = iv
        for i in 0 ..< 8 {
            nonce[4 + i] ^= UInt8(truncatingIfNeeded: sequenceNumber >> UInt64(56 - 8 * i))
        }
        return nonce
    }

    /// TLS 1.2 AES-GCM's nonce: the fixed 4 bytes, then the record's explicit 8.
    private func tls12GCMNonce(explicit: UnsafeRawBufferPointer) -> [UInt8] {
        iv + explicit
    }

    /// RFC 5246 §6.2.3.3: seq_num + type + version + length of the plaintext,
    /// 13 bytes, handed to `body` from the stack.
    private func withTLS12AdditionalData<R>(type: ContentType, length: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        var words: (UInt64, UInt64) = (sequenceWord, 0)
        return withUnsafeMutableBytes(of: &words) { bytes in
            bytes[8] = type.rawValue
            bytes[9] = 0x03
            bytes[10] = 0x03
            bytes[11] = UInt8(truncatingIfNeeded: length >> 8)
            bytes[12] = UInt8(truncatingIfNeeded: length)
            return body(UnsafeRawBufferPointer(rebasing: bytes[0 ..< 13]))
        }
    }

    private func seal(nonce: [UInt8], text: UnsafeMutableRawBufferPointer, additionalData: UnsafeRawBufferPointer,
                      tag: UnsafeMutableRawBufferPointer) -> Bool {
        switch cipher {
        case .aes128GCM(let key):
            key.seal(nonce: nonce, inPlace: text, additionalData: additionalData, tag: tag)
        case .chacha20Poly1305(let key):
            ChaCha20Poly1305.seal(key: key, nonce: nonce, inPlace: text, additionalData: additionalData, tag: tag)
        }
    }

    private func open(nonce: [UInt8], text: UnsafeMutableRawBufferPointer, additionalData: UnsafeRawBufferPointer,
                      tag: UnsafeRawBufferPointer) -> Bool {
        switch cipher {
        case .aes128GCM(let key):
            key.open(nonce: nonce, inPlace: text, additionalData: additionalData, tag: tag)
        case .chacha20Poly1305(let key):
            ChaCha20Poly1305.open(key: key, nonce: nonce, inPlace: text, additionalData: additionalData, tag: tag)
        }
    }

    /// A whole protected record: TLSInnerPlaintext (content, then its real
    /// type; no padding) sealed behind an application_data header (§5.2).
    /// `content` must fit one record (2^14 bytes); callers split longer data.
    package mutating func seal(_ content: [UInt8], type: ContentType) -> [UInt8] {
        let total = sealedPrefixCount + content.count + sealedSuffixCount
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            let record = UnsafeMutableRawBufferPointer(buffer)
            content.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: record[sealedPrefixCount...]).copyMemory(from: $0) }
            count = seal(inPlace: record, contentCount: content.count, type: type)
        }
    }

    /// Seals a record where it lies: the caller has put `contentCount` bytes
    /// of content at `sealedPrefixCount` in `record`, which has room for
    /// `sealedSuffixCount` more after them; the header goes before, the tag
    /// after. Returns the record's length. At most 2^14 bytes of content.
    package mutating func seal(inPlace record: UnsafeMutableRawBufferPointer, contentCount: Int, type: ContentType) -> Int {
        let prefix = sealedPrefixCount
        let total = prefix + contentCount + sealedSuffixCount
        precondition(contentCount <= 16384 && record.count >= total, "a record sealed in too little room")
        let length = total - 5
        record[0] = tls12 ? type.rawValue : ContentType.applicationData.rawValue
        record[1] = 0x03
        record[2] = 0x03
        record[3] = UInt8(truncatingIfNeeded: length >> 8)
        record[4] = UInt8(truncatingIfNeeded: length)
        let sealed: Bool
        if tls12 {
            let text = UnsafeMutableRawBufferPointer(rebasing: record[prefix ..< prefix + contentCount])
            let tag = UnsafeMutableRawBufferPointer(rebasing: record[prefix + contentCount ..< total])
            // RFC 5288 §3: GCM's explicit part must never repeat under one key; the sequence number never does.
            if prefix > 5 { record.storeBytes(of: sequenceWord, toByteOffset: 5, as: UInt64.self) }
            let nonce = prefix > 5 ? tls12GCMNonce(explicit: UnsafeRawBufferPointer(rebasing: record[5 ..< prefix])) : nonce()
            sealed = withTLS12AdditionalData(type: type, length: contentCount) { seal(nonce: nonce, text: text, additionalData: $0, tag: tag) }
        } else {
            record[prefix + contentCount] = type.rawValue
            let text = UnsafeMutableRawBufferPointer(rebasing: record[prefix ..< prefix + contentCount + 1])
            let tag = UnsafeMutableRawBufferPointer(rebasing: record[prefix + contentCount + 1 ..< total])
            sealed = seal(nonce: nonce(), text: text, additionalData: UnsafeRawBufferPointer(rebasing: record[0 ..< 5]), tag: tag)
        }
        // Sizes are the suite's own, so sealing cannot fail.
        precondition(sealed, "a record the AEAD refused to seal")
        sequenceNumber &+= 1
        return total
    }

    /// The content and real type of a protected record (§5.2, §5.4).
    package mutating func open(_ record: TLSRecord) throws(TLSError) -> (type: ContentType, content: [UInt8]) {
        var bytes = record.header + record.body
        let result = bytes.withUnsafeMutableBytes { whole in
            Result { () throws(TLSError) in
                let opened = try open(inPlace: whole)
                return (opened.type, Array(UnsafeRawBufferPointer(rebasing: whole[opened.content])))
            }
        }
        return try result.get()
    }

    /// Opens a whole record (its 5-byte header, then its body) where it
    /// lies: its content is decrypted in `record` at the range returned.
    /// On a failure the record's bytes are left as they came.
    package mutating func open(inPlace record: UnsafeMutableRawBufferPointer) throws(TLSError) -> (type: ContentType, content: Range<Int>) {
        if tls12 { return try openTLS12(inPlace: record) }
        let bodyCount = record.count - 5
        guard bodyCount >= 17 else { throw TLSError(.badRecordMAC, "a protected record of \(bodyCount) bytes") }
        let textEnd = record.count - 16
        let opened = open(nonce: nonce(), text: UnsafeMutableRawBufferPointer(rebasing: record[5 ..< textEnd]),
                          additionalData: UnsafeRawBufferPointer(rebasing: record[0 ..< 5]),
                          tag: UnsafeRawBufferPointer(rebasing: record[textEnd...]))
        guard opened else { throw TLSError(.badRecordMAC, "a record does not decrypt") }
        sequenceNumber &+= 1
        // §5.4: the real type is the last non-zero byte; zeros after it are padding.
        var end = textEnd
        while end > 5, record[end - 1] == 0 { end -= 1 }
        guard end > 5 else { throw TLSError(.unexpectedMessage, "a record of padding alone") }
        let typeByte = record[end - 1]
        guard let type = ContentType(rawValue: typeByte), type != .changeCipherSpec else {
            throw TLSError(.unexpectedMessage, "a protected record of type \(typeByte)")
        }
        let content = 5 ..< end - 1
        guard content.count <= 16384 else { throw TLSError(.recordOverflow, "a record holding \(content.count) bytes") }
        return (type, content)
    }

    private mutating func openTLS12(inPlace record: UnsafeMutableRawBufferPointer) throws(TLSError) -> (type: ContentType, content: Range<Int>) {
        let explicit = explicitNonceCount
        let bodyCount = record.count - 5
        guard bodyCount >= explicit + 16 else { throw TLSError(.badRecordMAC, "a protected record of \(bodyCount) bytes") }
        let textCount = bodyCount - explicit - 16
        guard textCount <= 16384 else { throw TLSError(.recordOverflow, "a record holding \(textCount) bytes") }
        guard let type = ContentType(rawValue: record[0]) else {
            throw TLSError(.unexpectedMessage, "a record of unknown type \(record[0])")
        }
        let text = 5 + explicit ..< 5 + explicit + textCount
        let nonce = explicit > 0 ? tls12GCMNonce(explicit: UnsafeRawBufferPointer(rebasing: record[5 ..< 5 + explicit])) : nonce()
        let opened = withTLS12AdditionalData(type: type, length: textCount) {
            open(nonce: nonce, text: UnsafeMutableRawBufferPointer(rebasing: record[text]), additionalData: $0,
                 tag: UnsafeRawBufferPointer(rebasing: record[text.upperBound...]))
        }
        guard opened else { throw TLSError(.badRecordMAC, "a record does not decrypt") }
        sequenceNumber &+= 1
        return (type, text)
    }
}
