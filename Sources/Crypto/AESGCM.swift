/// AES-128-GCM (NIST SP 800-38D) with a 96-bit nonce and a 16-byte tag:
/// QUIC's Initial AEAD (RFC 9001 §5.3) and TLS_AES_128_GCM_SHA256's record
/// protection (RFC 8446 §5.2, RFC 5116 §5.1 AEAD_AES_128_GCM).
///
/// These one-shot forms expand the key (AES key schedule and GHASH's H) on
/// every call; a connection that protects many records holds an
/// `AESGCMKey` instead. `open` and `openInPlace` check the tag before they
/// decrypt anything: a datagram that only looks like a QUIC Initial, or a
/// forged record, fails here instead of being read.
///
/// Only 96-bit nonces: other lengths would need GHASH to derive the first
/// counter block (§7.1 step 2), and neither QUIC nor TLS 1.3 uses them, so
/// they are refused rather than misused.
package enum AESGCM {
    package static let keySize = 16, nonceSize = 12, tagSize = 16

    /// Copying form of `sealInPlace`: the ciphertext (same length as the
    /// plaintext) and the tag, or nil for a wrong key or nonce size.
    package static func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8], additionalData: [UInt8]) -> (ciphertext: [UInt8], tag: [UInt8])? {
        var ciphertext = plaintext
        guard let tag = sealInPlace(key: key, nonce: nonce, buffer: &ciphertext, range: 0 ..< ciphertext.count, additionalData: additionalData)
        else { return nil }
        return (ciphertext, tag)
    }

    /// Copying form of `openInPlace`: the plaintext, or nil if the tag does
    /// not verify or a size is wrong.
    package static func open(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8], additionalData: [UInt8]) -> [UInt8]? {
        var plaintext = ciphertext
        guard openInPlace(key: key, nonce: nonce, buffer: &plaintext, range: 0 ..< plaintext.count, tag: tag[...], additionalData: additionalData)
        else { return nil }
        return plaintext
    }

    /// `AESGCMKey.sealInPlace` under a key expanded for this call only.
    package static func sealInPlace(key: [UInt8], nonce: [UInt8], buffer: inout [UInt8], range: Range<Int>, additionalData: [UInt8]) -> [UInt8]? {
        guard let expanded = AESGCMKey(key: key) else { return nil }
        return expanded.sealInPlace(nonce: nonce, buffer: &buffer, range: range, additionalData: additionalData)
    }

    /// `AESGCMKey.openInPlace` under a key expanded for this call only.
    package static func openInPlace(key: [UInt8], nonce: [UInt8], buffer: inout [UInt8], range: Range<Int>, tag: ArraySlice<UInt8>, additionalData: [UInt8]) -> Bool {
        guard let expanded = AESGCMKey(key: key) else { return false }
        return expanded.openInPlace(nonce: nonce, buffer: &buffer, range: range, tag: tag, additionalData: additionalData)
    }
}

/// An AES-128-GCM key with its AES key schedule and GHASH subkey H
/// (SP 800-38D §7.1 step 1) computed once, for a TLS connection's traffic
/// key: each record then costs only its own blocks. Immutable and Sendable,
/// so one value can serve concurrent seals or opens.
///
/// Each call loads the nonce into words once; the array forms allocate only
/// the tag they return, the raw-memory forms nothing, and nothing is
/// allocated per 16-byte block (the counter block is
/// built in registers, the text is read and written through the caller's
/// buffer).
package struct AESGCMKey: Sendable {
    private let cipher: AES128
    private let ghash: GHASH

    /// §7.1: the plaintext may be at most 2^39 - 256 bits, which keeps the
    /// 32-bit block counter, started at 2, from wrapping.
    static let maximumTextCount: UInt64 = (1 << 36) - 32
    /// §5.2.1.1: len(A) ≤ 2^64 - 1 bits.
    static let maximumAdditionalDataCount: UInt64 = (1 << 61) - 1

    /// Nil unless `key` holds 16 bytes.
    package init?(key: [UInt8]) {
        guard let cipher = AES128(key: key) else { return nil }
        self.cipher = cipher
        let h = cipher.encrypt((0, 0, 0, 0))
        ghash = GHASH(hashSubkey: (UInt64(h.0) << 32 | UInt64(h.1), UInt64(h.2) << 32 | UInt64(h.3)))
    }

    /// Encrypts `buffer[range]` in place and returns the 16-byte tag over
    /// additionalData and the ciphertext (§7.1, GCM-AE). nil, with the
    /// buffer untouched, if the nonce is not 12 bytes, `range` is not within
    /// the buffer, or the plaintext or additional data exceeds §7.1's limits.
    package func sealInPlace(nonce: [UInt8], buffer: inout [UInt8], range: Range<Int>, additionalData: [UInt8]) -> [UInt8]? {
        guard range.lowerBound >= 0, range.upperBound <= buffer.count else { return nil }
        var tag = [UInt8](repeating: 0, count: AESGCM.tagSize)
        let sealed = buffer.withUnsafeMutableBytes { whole in
            additionalData.withUnsafeBytes { aad in
                tag.withUnsafeMutableBytes { tagBytes in
                    seal(nonce: nonce, inPlace: UnsafeMutableRawBufferPointer(rebasing: whole[range]), additionalData: aad, tag: tagBytes)
                }
            }
        }
        return sealed ? tag : nil
    }

    /// Checks the tag over additionalData and buffer[range] BEFORE
    /// decrypting, comparing all 16 bytes whatever they hold (so timing
    /// does not reveal where a forgery first differs), and decrypts in place
    /// only if it verifies (§7.2, GCM-AD: FAIL releases no plaintext).
    /// false, with the buffer untouched: a nonce that is not 12 bytes, a tag
    /// that is not 16, a range not within the buffer, a text or additional
    /// data over §7.1's limits, or a tag that does not match.
    package func openInPlace(nonce: [UInt8], buffer: inout [UInt8], range: Range<Int>, tag: ArraySlice<UInt8>, additionalData: [UInt8]) -> Bool {
        guard range.lowerBound >= 0, range.upperBound <= buffer.count else { return false }
        return buffer.withUnsafeMutableBytes { whole in
            additionalData.withUnsafeBytes { aad in
                tag.withUnsafeBytes { tagBytes in
                    open(nonce: nonce, inPlace: UnsafeMutableRawBufferPointer(rebasing: whole[range]), additionalData: aad, tag: tagBytes)
                }
            }
        }
    }

    /// `sealInPlace` on the caller's memory (a record sealed where it will
    /// be sent from): the tag goes to `tag`'s 16 bytes. false, with nothing
    /// written, for a nonce that is not 12 bytes, a tag buffer that is not
    /// 16, or sizes over §7.1's limits.
    package func seal(nonce: [UInt8], inPlace text: UnsafeMutableRawBufferPointer, additionalData: UnsafeRawBufferPointer,
                      tag: UnsafeMutableRawBufferPointer) -> Bool {
        guard let counter = Self.counterWords(nonce), tag.count == AESGCM.tagSize,
              UInt64(text.count) <= Self.maximumTextCount, UInt64(additionalData.count) <= Self.maximumAdditionalDataCount
        else { return false }
        var s: (high: UInt64, low: UInt64) = (0, 0)
        ghash.absorb(additionalData, into: &s)
        counterMode(counter, text, absorbingInto: &s)
        let words = finish(counter, s, additionalDataCount: additionalData.count, textCount: text.count)
        tag.storeBytes(of: words.high.bigEndian, toByteOffset: 0, as: UInt64.self)
        tag.storeBytes(of: words.low.bigEndian, toByteOffset: 8, as: UInt64.self)
        return true
    }

    /// `openInPlace` on the caller's memory (a record opened where it was
    /// read): the tag is checked first, and `text` is left as it was unless
    /// it verifies.
    package func open(nonce: [UInt8], inPlace text: UnsafeMutableRawBufferPointer, additionalData: UnsafeRawBufferPointer,
                      tag: UnsafeRawBufferPointer) -> Bool {
        guard let counter = Self.counterWords(nonce), tag.count == AESGCM.tagSize,
              UInt64(text.count) <= Self.maximumTextCount, UInt64(additionalData.count) <= Self.maximumAdditionalDataCount
        else { return false }
        let computed = authenticate(counter, additionalData: additionalData, ciphertext: UnsafeRawBufferPointer(text))
        let received = (high: UInt64(bigEndian: tag.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                        low: UInt64(bigEndian: tag.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        // Only the final yes/no, which the caller learns anyway, is branched on.
        guard (computed.high ^ received.high) | (computed.low ^ received.low) == 0 else { return false }
        counterMode(counter, text)
        return true
    }

    /// The nonce as the first three words of the pre-counter block
    /// J0 = IV || 0^31 || 1 (§7.1 step 2, 96-bit IV); nil for another length.
    private static func counterWords(_ nonce: [UInt8]) -> (UInt32, UInt32, UInt32)? {
        guard nonce.count == AESGCM.nonceSize else { return nil }
        func word(_ i: Int) -> UInt32 {
            UInt32(nonce[i]) << 24 | UInt32(nonce[i + 1]) << 16 | UInt32(nonce[i + 2]) << 8 | UInt32(nonce[i + 3])
        }
        return (word(0), word(4), word(8))
    }

    /// GCTR_K(inc32(J0), text) in place (§6.5, §7.1 step 3): block i is xored
    /// with CIPH_K(IV || i + 2), the final partial block with the leading
    /// bytes of its key stream block. Used to decrypt, after the tag is checked.
    private func counterMode(_ nonce: (UInt32, UInt32, UInt32), _ text: UnsafeMutableRawBufferPointer) {
        let count = text.count
        guard count > 0 else { return }
        cipher.withEncryptor { aes in
            var counter: UInt32 = 2
            var offset = 0
            var prefix = aes.counterBlockPrefix(nonce: nonce, counter: counter)
            while count - offset >= 16 {
                if counter & 0xff == 0 { prefix = aes.counterBlockPrefix(nonce: nonce, counter: counter) }
                let stream = aes.encryptCounterBlock(prefix, counter: counter)
                _ = Self.xorBlock(text, offset, stream)
                counter &+= 1
                offset += 16
            }
            if offset < count {
                Self.xorPartialBlock(text, offset, aes.encrypt((nonce.0, nonce.1, nonce.2, counter)))
            }
        }
    }

    /// GCTR as `counterMode`, folding each ciphertext block into GHASH
    /// (§7.1 step 5) as soon as it is made, while it is still in registers:
    /// the cipher's table lookups and GHASH's multiplications use different
    /// parts of the CPU, so one pass lets them overlap.
    private func counterMode(_ nonce: (UInt32, UInt32, UInt32), _ text: UnsafeMutableRawBufferPointer,
                             absorbingInto s: inout (high: UInt64, low: UInt64)) {
        let count = text.count
        guard count > 0 else { return }
        var y = s
        cipher.withEncryptor { aes in
            var counter: UInt32 = 2
            var offset = 0
            var prefix = aes.counterBlockPrefix(nonce: nonce, counter: counter)
            while count - offset >= 16 {
                if counter & 0xff == 0 { prefix = aes.counterBlockPrefix(nonce: nonce, counter: counter) }
                let stream = aes.encryptCounterBlock(prefix, counter: counter)
                let block = Self.xorBlock(text, offset, stream)
                y = ghash.multiply((y.high ^ block.high, y.low ^ block.low))
                counter &+= 1
                offset += 16
            }
            if offset < count {
                Self.xorPartialBlock(text, offset, aes.encrypt((nonce.0, nonce.1, nonce.2, counter)))
                ghash.absorb(UnsafeRawBufferPointer(rebasing: text[offset...]), into: &y)
            }
        }
        s = y
    }

    /// Xors the 16 bytes at `offset` with a key stream block and returns
    /// what is left there, as big-endian words.
    @inline(__always)
    private static func xorBlock(_ text: UnsafeMutableRawBufferPointer, _ offset: Int,
                                 _ stream: (UInt32, UInt32, UInt32, UInt32)) -> (high: UInt64, low: UInt64) {
        let high = UInt64(bigEndian: text.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            ^ (UInt64(stream.0) << 32 | UInt64(stream.1))
        let low = UInt64(bigEndian: text.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
            ^ (UInt64(stream.2) << 32 | UInt64(stream.3))
        text.storeBytes(of: high.bigEndian, toByteOffset: offset, as: UInt64.self)
        text.storeBytes(of: low.bigEndian, toByteOffset: offset + 8, as: UInt64.self)
        return (high, low)
    }

    /// Xors the 1 to 15 bytes from `offset` to the end with the leading
    /// bytes of a key stream block (§6.5 step 7, MSB_len(Y*_n)).
    private static func xorPartialBlock(_ text: UnsafeMutableRawBufferPointer, _ offset: Int,
                                        _ stream: (UInt32, UInt32, UInt32, UInt32)) {
        for i in 0 ..< text.count - offset {
            let word = i < 4 ? stream.0 : i < 8 ? stream.1 : i < 12 ? stream.2 : stream.3
            text[offset + i] ^= UInt8(truncatingIfNeeded: word >> UInt32(24 - 8 * (i & 3)))
        }
    }

    /// GHASH over additionalData and the ciphertext, then the tag (§7.1
    /// steps 5-6), for `openInPlace`, which must check it before decrypting.
    private func authenticate(_ nonce: (UInt32, UInt32, UInt32), additionalData: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer) -> (high: UInt64, low: UInt64) {
        var s: (high: UInt64, low: UInt64) = (0, 0)
        ghash.absorb(additionalData, into: &s)
        ghash.absorb(ciphertext, into: &s)
        return finish(nonce, s, additionalDataCount: additionalData.count, textCount: ciphertext.count)
    }

    /// The tag T = GCTR_K(J0, S), S = GHASH_H(A || 0^v || C || 0^u ||
    /// [len(A)]_64 || [len(C)]_64) (§7.1 steps 5-6; the full 128 bits), as
    /// big-endian words, from `s`, the GHASH state after A and C.
    private func finish(_ nonce: (UInt32, UInt32, UInt32), _ s: (high: UInt64, low: UInt64),
                        additionalDataCount: Int, textCount: Int) -> (high: UInt64, low: UInt64) {
        let lengths = (high: UInt64(additionalDataCount) &* 8, low: UInt64(textCount) &* 8)
        let hash = ghash.multiply((s.high ^ lengths.high, s.low ^ lengths.low))
        let mask = cipher.encrypt((nonce.0, nonce.1, nonce.2, 1))
        return (hash.high ^ (UInt64(mask.0) << 32 | UInt64(mask.1)), hash.low ^ (UInt64(mask.2) << 32 | UInt64(mask.3)))
    }
}
