/// AEAD_CHACHA20_POLY1305 (RFC 8439 §2.8), the AEAD of TLS 1.3's
/// TLS_CHACHA20_POLY1305_SHA256 record protection (RFC 8446 §5.2-5.3).
///
/// The in-place forms work on a range of the caller's buffer so the record
/// layer can encrypt and decrypt a record where it lies, without copying.
/// Each call loads the key and nonce into words once; the array forms
/// allocate only the returned tag, the raw-memory forms nothing, and nothing
/// is allocated per 64-byte ChaCha20 block or per 16-byte Poly1305 block.
package enum ChaCha20Poly1305 {
    package static let keySize = 32, nonceSize = 12, tagSize = 16

    /// §2.8: the plaintext is encrypted from block counter 1, because block 0
    /// makes the one-time Poly1305 key.
    private static let initialCounter: UInt32 = 1

    /// Encrypts `buffer[range]` in place and returns the 16-byte tag over
    /// additionalData and the ciphertext (RFC 8439 §2.8). nil, with the buffer
    /// untouched, if the key or nonce size is wrong, if `range` is not within
    /// the buffer, or if the plaintext exceeds the 2^32 - 1 blocks the 32-bit
    /// counter allows (§2.8 note 1).
    package static func sealInPlace(key: [UInt8], nonce: [UInt8], buffer: inout [UInt8], range: Range<Int>, additionalData: [UInt8]) -> [UInt8]? {
        guard range.lowerBound >= 0, range.upperBound <= buffer.count else { return nil }
        var tag = [UInt8](repeating: 0, count: tagSize)
        let sealed = buffer.withUnsafeMutableBytes { whole in
            additionalData.withUnsafeBytes { aad in
                tag.withUnsafeMutableBytes { tagBytes in
                    seal(key: key, nonce: nonce, inPlace: UnsafeMutableRawBufferPointer(rebasing: whole[range]),
                         additionalData: aad, tag: tagBytes)
                }
            }
        }
        return sealed ? tag : nil
    }

    /// Checks the tag (constant-time comparison) over additionalData and
    /// buffer[range] BEFORE decrypting; decrypts in place only if it verifies.
    /// false otherwise (buffer untouched): wrong key, nonce or tag size, a
    /// range not within the buffer, a ciphertext too long for the counter, or
    /// a tag that does not match (§2.8: "authenticated if and only if the tags
    /// match"; §4: the comparison must not reveal where they differ).
    package static func openInPlace(key: [UInt8], nonce: [UInt8], buffer: inout [UInt8], range: Range<Int>, tag: ArraySlice<UInt8>, additionalData: [UInt8]) -> Bool {
        guard range.lowerBound >= 0, range.upperBound <= buffer.count else { return false }
        return buffer.withUnsafeMutableBytes { whole in
            additionalData.withUnsafeBytes { aad in
                tag.withUnsafeBytes { tagBytes in
                    open(key: key, nonce: nonce, inPlace: UnsafeMutableRawBufferPointer(rebasing: whole[range]),
                         additionalData: aad, tag: tagBytes)
                }
            }
        }
    }

    /// `sealInPlace` on the caller's memory, for a record sealed where it
    /// will be sent from (a TCP send ring, a socket's scratch): `text` is
    /// encrypted where it lies and the tag written to `tag`'s 16 bytes. false,
    /// with nothing written, on a wrong key, nonce or tag size, or a text too
    /// long for the counter.
    package static func seal(key: [UInt8], nonce: [UInt8], inPlace text: UnsafeMutableRawBufferPointer,
                             additionalData: UnsafeRawBufferPointer, tag: UnsafeMutableRawBufferPointer) -> Bool {
        guard let cipher = ChaCha20(key: key, nonce: nonce), tag.count == tagSize,
              ChaCha20.canProcess(byteCount: text.count, initialCounter: initialCounter)
        else { return false }
        var authenticator = oneTimeAuthenticator(cipher)
        cipher.xorKeyStream(text, initialCounter: initialCounter)
        authenticate(&authenticator, additionalData: additionalData, ciphertext: UnsafeRawBufferPointer(text))
        let words = authenticator.tagWords()
        tag.storeBytes(of: words.low.littleEndian, toByteOffset: 0, as: UInt64.self)
        tag.storeBytes(of: words.high.littleEndian, toByteOffset: 8, as: UInt64.self)
        return true
    }

    /// `openInPlace` on the caller's memory, for a record opened where it was
    /// read: the tag is checked before anything is decrypted, and `text` is
    /// left as it was unless it verifies.
    package static func open(key: [UInt8], nonce: [UInt8], inPlace text: UnsafeMutableRawBufferPointer,
                             additionalData: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer) -> Bool {
        guard let cipher = ChaCha20(key: key, nonce: nonce), tag.count == tagSize,
              ChaCha20.canProcess(byteCount: text.count, initialCounter: initialCounter)
        else { return false }
        var authenticator = oneTimeAuthenticator(cipher)
        authenticate(&authenticator, additionalData: additionalData, ciphertext: UnsafeRawBufferPointer(text))
        let computed = authenticator.tagWords()
        let received = (
            UInt64(littleEndian: tag.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
            UInt64(littleEndian: tag.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        )
        // Every bit of both tags is looked at whatever the data; only the
        // final yes/no, which the caller learns anyway, is branched on.
        let difference = (computed.low ^ received.0) | (computed.high ^ received.1)
        guard difference == 0 else { return false }
        cipher.xorKeyStream(text, initialCounter: initialCounter)
        return true
    }

    /// Copying form of `sealInPlace`: the ciphertext (same length as the
    /// plaintext) and the tag, or nil for a wrong key or nonce size.
    package static func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8], additionalData: [UInt8]) -> (ciphertext: [UInt8], tag: [UInt8])? {
        var ciphertext = plaintext
        guard let tag = sealInPlace(key: key, nonce: nonce, buffer: &ciphertext, range: 0 ..< ciphertext.count, additionalData: additionalData) else { return nil }
        return (ciphertext, tag)
    }

    /// Copying form of `openInPlace`: the plaintext, or nil if anything is the
    /// wrong size or the tag does not verify.
    package static func open(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8], additionalData: [UInt8]) -> [UInt8]? {
        var plaintext = ciphertext
        guard openInPlace(key: key, nonce: nonce, buffer: &plaintext, range: 0 ..< plaintext.count, tag: tag[...], additionalData: additionalData) else { return nil }
        return plaintext
    }

    /// §2.6: the one-time Poly1305 key is the first 32 bytes of the ChaCha20
    /// block with counter 0, r from bytes 0-15 and s from bytes 16-31. Taken
    /// straight from the block's words, never serialized.
    private static func oneTimeAuthenticator(_ cipher: ChaCha20) -> Poly1305 {
        let words = cipher.block(counter: 0)
        return Poly1305(
            r0: UInt64(words.0) | UInt64(words.1) << 32,
            r1: UInt64(words.2) | UInt64(words.3) << 32,
            s0: UInt64(words.4) | UInt64(words.5) << 32,
            s1: UInt64(words.6) | UInt64(words.7) << 32
        )
    }

    /// poly1305_key_gen of §2.6.1 as bytes, for checking against the RFC's
    /// vectors; the AEAD itself uses `oneTimeAuthenticator`. nil for a wrong
    /// key or nonce size.
    static func poly1305KeyGeneration(key: [UInt8], nonce: [UInt8]) -> [UInt8]? {
        guard let cipher = ChaCha20(key: key, nonce: nonce) else { return nil }
        let words = cipher.block(counter: 0)
        let keyWords = [words.0, words.1, words.2, words.3, words.4, words.5, words.6, words.7]
        return keyWords.flatMap { word in (0 ..< 4).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } }
    }

    /// The Poly1305 message of §2.8: AAD, pad16, ciphertext, pad16, then the
    /// two lengths as 64-bit little-endian numbers, which fill one full block.
    private static func authenticate(_ authenticator: inout Poly1305, additionalData: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer) {
        authenticator.absorbZeroPadded(additionalData)
        authenticator.absorbZeroPadded(ciphertext)
        authenticator.absorbBlock(low: UInt64(additionalData.count), high: UInt64(ciphertext.count), highBit: 1)
    }
}
