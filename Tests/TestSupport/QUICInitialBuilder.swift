package import HTTP

/// QUIC client Initial datagrams built for tests (RFC 9000 §17.2.2, protected
/// as RFC 9001 §5 says, by `QUICInitial.protect`), with CRYPTO frames cut and
/// ordered as a test wants: what a real client with a large ClientHello sends
/// (Chrome spreads one over two datagrams and shuffles its frames).
package enum QUICInitialBuilder {
    /// One datagram holding one Initial packet with `frames` (already
    /// encoded) and a 4-byte packet number, padded with PADDING frames to
    /// `size` bytes. `keysOf` protects it with another version's keys (a
    /// packet no real client sends). With the defaults and RFC 9001's CRYPTO
    /// frame and packet number 2, this is Appendix A.2's packet, byte for byte.
    package static func datagram(version: QUICInitial.Version = .v1, keysOf keyVersion: QUICInitial.Version? = nil,
                                 destinationConnectionID: [UInt8], sourceConnectionID: [UInt8] = [], token: [UInt8] = [],
                                 packetNumber: UInt32, frames: [UInt8], size: Int = 1200) -> [UInt8] {
        QUICInitial.protect(version: version, keysOf: keyVersion, destinationConnectionID: destinationConnectionID,
                            sourceConnectionID: sourceConnectionID, token: token, packetNumber: packetNumber, frames: frames, size: size)
    }

    /// A hello as large as a post-quantum one (about 1,800 bytes) naming
    /// `serverName`, over two Initial datagrams (its first 1,000 bytes in the
    /// first), as Chrome sends it.
    package static func helloInTwoDatagrams(serverName: String, destinationConnectionID: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]) -> [[UInt8]] {
        let hello = clientHello(serverName: serverName, extraBytes: 1600)
        return [
            datagram(destinationConnectionID: destinationConnectionID, packetNumber: 0, frames: cryptoFrame(offset: 0, Array(hello[..<1000]))),
            datagram(destinationConnectionID: destinationConnectionID, packetNumber: 1, frames: cryptoFrame(offset: 1000, Array(hello[1000...]))),
        ]
    }

    /// A CRYPTO frame (RFC 9000 §19.6).
    package static func cryptoFrame(offset: Int, _ data: [UInt8]) -> [UInt8] {
        [0x06] + varint(offset) + varint(data.count) + data
    }

    /// A TLS 1.3 ClientHello handshake message (RFC 8446 §4.1.2) naming
    /// `serverName`, with ALPN `protocols` and `extraBytes` more bytes in a
    /// padding extension (RFC 7685), to make it as large as a post-quantum one.
    package static func clientHello(serverName: String, protocols: [String] = ["h3"], extraBytes: Int = 0) -> [UInt8] {
        let name = Array(serverName.utf8)
        let entry = [0] + u16(name.count) + name
        var extensions = u16(0) + u16(entry.count + 2) + u16(entry.count) + entry
        let list = protocols.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
        extensions += u16(16) + u16(list.count + 2) + u16(list.count) + list
        // supported_versions: TLS 1.3.
        extensions += u16(43) + u16(3) + [2, 0x03, 0x04]
        if extraBytes > 0 { extensions += u16(21) + u16(extraBytes) + [UInt8](repeating: 0, count: extraBytes) }
        var body: [UInt8] = [0x03, 0x03] + [UInt8](repeating: 0x2a, count: 32)
        body += [0] // no legacy session id (QUIC)
        body += u16(2) + [0x13, 0x01]
        body += [1, 0]
        body += u16(extensions.count) + extensions
        return [1] + [UInt8(body.count >> 16), UInt8(body.count >> 8 & 0xff), UInt8(body.count & 0xff)] + body
    }

    /// RFC 9000 §16, in the fewest bytes.
    package static func varint(_ value: Int) -> [UInt8] {
        switch value {
        case 0 ..< 64: [UInt8(value)]
        case 64 ..< 16384: [0x40 | UInt8(value >> 8), UInt8(value & 0xff)]
        default: [0x80 | UInt8(value >> 24 & 0x3f), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
        }
    }

    private static func u16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xff), UInt8(value & 0xff)] }

}
