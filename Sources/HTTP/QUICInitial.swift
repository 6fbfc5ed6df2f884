package import Crypto

/// A QUIC client's Initial packets (RFC 9000 §17.2.2), opened as any
/// on-path observer can: their keys come from the Destination Connection ID
/// in the clear (RFC 9001 §5.2), so that only the version's salt is needed.
/// The Initial packets carry the TLS ClientHello in CRYPTO frames, which is
/// where `QUICClientHelloSniffer` finds the server name.
package enum QUICInitial {
    /// The versions whose Initial protection is known: 1 (RFC 9000) and 2 (RFC 9369).
    package struct Version: Equatable {
        package let number: UInt32
        /// The long header's packet type bits of an Initial packet.
        package let initialType: UInt8
        let salt: [UInt8]
        let keyLabel: String
        let ivLabel: String
        let headerProtectionLabel: String

        package static let v1 = Version(number: 0x0000_0001, initialType: 0,
                                salt: [0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a],
                                keyLabel: "quic key", ivLabel: "quic iv", headerProtectionLabel: "quic hp")
        package static let v2 = Version(number: 0x6b33_43cf, initialType: 1,
                                salt: [0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9],
                                keyLabel: "quicv2 key", ivLabel: "quicv2 iv", headerProtectionLabel: "quicv2 hp")

        static func of(_ number: UInt32) -> Version? {
            switch number {
            case v1.number: v1
            case v2.number: v2
            default: nil
            }
        }
    }

    /// RFC 9000 §14.1: a client pads every datagram with an Initial to 1200 bytes.
    package static let minimumDatagramSize = 1200

    /// A cheap first look, before any key is derived: the first packet is a
    /// long-header Initial of a known version in a datagram of at least 1200
    /// bytes. The form, fixed and type bits are not header-protected.
    static func isClientInitial(_ datagram: UnsafeRawBufferPointer) -> Bool {
        guard datagram.count >= minimumDatagramSize else { return false }
        return initialVersion(datagram) != nil
    }

    private static func initialVersion(_ packet: UnsafeRawBufferPointer) -> Version? {
        guard packet.count >= 5, packet[0] & 0xc0 == 0xc0 else { return nil }
        let number = UInt32(packet[1]) << 24 | UInt32(packet[2]) << 16 | UInt32(packet[3]) << 8 | UInt32(packet[4])
        guard let version = Version.of(number), packet[0] >> 4 & 0x03 == version.initialType else { return nil }
        return version
    }

    /// The keys of one direction's Initial packets (RFC 9001 §5.2).
    package struct Keys {
        package let key: [UInt8]
        package let iv: [UInt8]
        package let headerProtection: AES128

        package init(version: Version, destinationConnectionID: [UInt8]) {
            let initialSecret = HKDF<SHA256>.extract(salt: version.salt, inputKeyingMaterial: destinationConnectionID)
            let clientSecret = HKDF<SHA256>.expandLabel(secret: initialSecret, label: "client in", length: 32)
            key = HKDF<SHA256>.expandLabel(secret: clientSecret, label: version.keyLabel, length: 16)
            iv = HKDF<SHA256>.expandLabel(secret: clientSecret, label: version.ivLabel, length: 12)
            // 16 bytes from HKDF always make a key.
            headerProtection = AES128(key: HKDF<SHA256>.expandLabel(secret: clientSecret, label: version.headerProtectionLabel, length: 16))!
        }
    }

    /// The frames of every client Initial packet in `datagram` (a datagram
    /// may coalesce several packets, RFC 9000 §12.2), decrypted and
    /// authenticated; nil unless the first packet opens. Packets after the
    /// Initials (0-RTT, Handshake) and padding after them are left alone.
    static func open(_ datagram: UnsafeRawBufferPointer) -> [[UInt8]]? {
        var payloads: [[UInt8]] = []
        var rest = datagram
        while let version = initialVersion(rest), let (payload, length) = openPacket(rest, version: version) {
            payloads.append(payload)
            rest = UnsafeRawBufferPointer(rebasing: rest[length...])
        }
        return payloads.isEmpty ? nil : payloads
    }

    /// One Initial packet at the start of `bytes`: its plaintext frames and
    /// the packet's length on the wire.
    private static func openPacket(_ bytes: UnsafeRawBufferPointer, version: Version) -> ([UInt8], Int)? {
        var reader = ByteReader(bytes)
        guard reader.skip(5), let dcidLength = reader.u8(), dcidLength <= 20, let dcid = reader.take(Int(dcidLength)),
              let scidLength = reader.u8(), scidLength <= 20, reader.skip(Int(scidLength)),
              let tokenLength = reader.varint(), tokenLength <= UInt64(bytes.count), reader.skip(Int(tokenLength)),
              let length = reader.varint(), length <= UInt64(reader.remaining)
        else { return nil }
        let packetNumberOffset = reader.position
        let end = packetNumberOffset + Int(length)
        // §5.4.2: the sample starts 4 bytes after the packet number's start,
        // as if it were 4 bytes long; the payload then still holds the tag.
        guard end >= packetNumberOffset + 4 + AES128.blockSize else { return nil }
        let keys = Keys(version: version, destinationConnectionID: Array(dcid))
        let sample = Array(bytes[packetNumberOffset + 4 ..< packetNumberOffset + 4 + AES128.blockSize])
        let mask = keys.headerProtection.encryptBlock(sample)
        let firstByte = bytes[0] ^ (mask[0] & 0x0f)
        // RFC 9000 §17.2: the reserved bits must be zero once unprotected.
        guard firstByte & 0x0c == 0 else { return nil }
        let packetNumberLength = Int(firstByte & 0x03) + 1
        var header = Array(bytes[0 ..< packetNumberOffset + packetNumberLength])
        header[0] = firstByte
        var packetNumber: UInt64 = 0
        for i in 0 ..< packetNumberLength {
            header[packetNumberOffset + i] ^= mask[1 + i]
            packetNumber = packetNumber << 8 | UInt64(header[packetNumberOffset + i])
        }
        // The first packets of a connection: the truncated number is the
        // number (RFC 9000 §A.3 with nothing received yet).
        var nonce = keys.iv
        for i in 0 ..< 8 { nonce[4 + i] ^= UInt8(truncatingIfNeeded: packetNumber >> UInt64(56 - 8 * i)) }
        let payloadStart = packetNumberOffset + packetNumberLength
        guard end - payloadStart >= AESGCM.tagSize else { return nil }
        let ciphertext = Array(bytes[payloadStart ..< end - AESGCM.tagSize])
        let tag = Array(bytes[end - AESGCM.tagSize ..< end])
        guard let plaintext = AESGCM.open(key: keys.key, nonce: nonce, ciphertext: ciphertext, tag: tag, additionalData: header)
        else { return nil }
        return (plaintext, end)
    }

    /// What a client does to send `frames` in an Initial packet, with a
    /// 4-byte packet number and PADDING to `size` bytes: the inverse of
    /// `open`, for the tests and the fuzz harness, which need packets that
    /// open. `keysOf` protects with another version's keys (no real client
    /// does). The token's length and Length are written as varints of 1 or 2 bytes.
    package static func protect(version: Version, keysOf keyVersion: Version? = nil, destinationConnectionID: [UInt8],
                                sourceConnectionID: [UInt8] = [], token: [UInt8] = [], packetNumber: UInt32, frames: [UInt8],
                                size: Int = minimumDatagramSize) -> [UInt8] {
        func bigEndian(_ value: UInt32) -> [UInt8] {
            [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
        }
        func varint(_ value: Int) -> [UInt8] {
            value < 64 ? [UInt8(value)] : [0x40 | UInt8(value >> 8 & 0x3f), UInt8(value & 0xff)]
        }
        var header: [UInt8] = [0xc0 | version.initialType << 4 | 0x03]
        header += bigEndian(version.number)
        header += [UInt8(destinationConnectionID.count)] + destinationConnectionID
        header += [UInt8(sourceConnectionID.count)] + sourceConnectionID
        header += varint(token.count) + token
        // Length (a 2-byte varint) covers the 4-byte packet number, the frames and the tag.
        let plaintextCount = max(frames.count, size - header.count - 2 - 4 - AESGCM.tagSize)
        let length = 4 + plaintextCount + AESGCM.tagSize
        header += [0x40 | UInt8(length >> 8), UInt8(length & 0xff)]
        let packetNumberOffset = header.count
        header += bigEndian(packetNumber)
        let keys = Keys(version: keyVersion ?? version, destinationConnectionID: destinationConnectionID)
        var nonce = keys.iv
        for (i, byte) in bigEndian(packetNumber).enumerated() { nonce[8 + i] ^= byte }
        let plaintext = frames + [UInt8](repeating: 0, count: plaintextCount - frames.count)
        let sealed = AESGCM.seal(key: keys.key, nonce: nonce, plaintext: plaintext, additionalData: header)!
        var packet = header + sealed.ciphertext + sealed.tag
        let sample = Array(packet[packetNumberOffset + 4 ..< packetNumberOffset + 20])
        let mask = keys.headerProtection.encryptBlock(sample)
        packet[0] ^= mask[0] & 0x0f
        for i in 0 ..< 4 { packet[packetNumberOffset + i] ^= mask[1 + i] }
        return packet
    }


    /// The CRYPTO frames' (offset, data) in an Initial packet's frames; nil
    /// when a frame is one an Initial packet may not carry, or is cut short
    /// (RFC 9000 §12.4: PADDING, PING, ACK, CRYPTO, CONNECTION_CLOSE).
    static func cryptoData(_ frames: [UInt8]) -> [(offset: Int, data: ArraySlice<UInt8>)]? {
        frames.withUnsafeBytes { bytes in
            var reader = ByteReader(bytes)
            var pieces: [(offset: Int, data: ArraySlice<UInt8>)] = []
            while reader.remaining > 0 {
                guard let type = reader.varint() else { return nil }
                switch type {
                case 0x00, 0x01:
                    continue
                case 0x02, 0x03:
                    // Largest Acknowledged, ACK Delay, ACK Range Count, First ACK Range, the ranges, ECN counts.
                    guard reader.varint() != nil, reader.varint() != nil, let count = reader.varint(), count <= UInt64(reader.remaining),
                          reader.varint() != nil else { return nil }
                    for _ in 0 ..< count * 2 + (type == 0x03 ? 3 : 0) {
                        guard reader.varint() != nil else { return nil }
                    }
                case 0x06:
                    guard let offset = reader.varint(), let length = reader.varint(), length <= UInt64(reader.remaining),
                          offset <= UInt64(Int.max / 2) else { return nil }
                    let start = reader.position
                    guard reader.skip(Int(length)) else { return nil }
                    pieces.append((Int(offset), frames[start ..< start + Int(length)]))
                case 0x1c:
                    guard reader.varint() != nil, reader.varint() != nil, let length = reader.varint(),
                          length <= UInt64(reader.remaining), reader.skip(Int(length)) else { return nil }
                default:
                    return nil
                }
            }
            return pieces
        }
    }
}

extension ByteReader {
    /// RFC 9000 §16: the first byte's two high bits give the length (1, 2, 4 or 8 bytes).
    mutating func varint() -> UInt64? {
        guard let first = peek() else { return nil }
        let length = 1 << Int(first >> 6)
        guard let bytes = take(length) else { return nil }
        var value = UInt64(first & 0x3f)
        for i in 1 ..< length { value = value << 8 | UInt64(bytes[i]) }
        return value
    }
}
