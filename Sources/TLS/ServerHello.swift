/// The ServerHello, and the HelloRetryRequest that shares its form
/// (RFC 8446 §4.1.3, §4.1.4).
package struct ServerHello: Sendable, Equatable {
    /// §4.1.3: the SHA-256 of "HelloRetryRequest", which marks one.
    package static let helloRetryRequestRandom: [UInt8] = [
        0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
        0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
    ]

    package var random: [UInt8]
    package var legacySessionIDEcho: [UInt8]
    package var cipherSuite: UInt16
    package var extensions: [TLSExtension]

    package init(random: [UInt8], legacySessionIDEcho: [UInt8], cipherSuite: UInt16, extensions: [TLSExtension]) {
        self.random = random
        self.legacySessionIDEcho = legacySessionIDEcho
        self.cipherSuite = cipherSuite
        self.extensions = extensions
    }

    package init(body: [UInt8]) throws(TLSError) {
        var reader = TLSReader(body)
        let legacyVersion = try reader.u16()
        guard legacyVersion == ProtocolVersion.tls12 else {
            throw TLSError(.protocolVersion, "a server that speaks version 0x\(String(legacyVersion, radix: 16)) only")
        }
        random = try reader.bytes(32)
        legacySessionIDEcho = try reader.vectorBytes(lengthSize: 1)
        cipherSuite = try reader.u16()
        guard try reader.u8() == 0 else { throw TLSError(.illegalParameter, "a compression method") }
        extensions = try TLSExtension.readList(&reader)
        try reader.expectEnd("ServerHello")
    }

    package var isHelloRetryRequest: Bool { random == Self.helloRetryRequestRandom }

    package func encode() -> [UInt8] {
        var writer = TLSWriter()
        writer.u16(ProtocolVersion.tls12)
        writer.append(random)
        writer.vector(lengthSize: 1, bytes: legacySessionIDEcho)
        writer.u16(cipherSuite)
        writer.u8(0)
        TLSExtension.writeList(extensions, to: &writer)
        return HandshakeMessage.encode(type: .serverHello, body: writer.bytes)
    }

    /// §4.2.1: the one version chosen; nil without the extension (a TLS 1.2 server).
    package func selectedVersion() throws(TLSError) -> UInt16? {
        guard let data = extensions[.supportedVersions] else { return nil }
        var reader = TLSReader(data)
        let version = try reader.u16()
        try reader.expectEnd("supported_versions")
        return version
    }

    /// §4.2.8: the server's share; a HelloRetryRequest's key_share holds only the group.
    package func keyShare() throws(TLSError) -> KeyShareEntry? {
        guard let data = extensions[.keyShare], !isHelloRetryRequest else { return nil }
        var reader = TLSReader(data)
        let entry = try KeyShareEntry(reading: &reader)
        try reader.expectEnd("key_share")
        return entry
    }

    package func selectedGroup() throws(TLSError) -> NamedGroup? {
        guard let data = extensions[.keyShare], isHelloRetryRequest else { return nil }
        var reader = TLSReader(data)
        let group = NamedGroup(rawValue: try reader.u16())
        try reader.expectEnd("key_share")
        return group
    }

    static func supportedVersionsExtension() -> TLSExtension {
        TLSExtension(type: .supportedVersions, data: [0x03, 0x04])
    }
}
