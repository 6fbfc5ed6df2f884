/// The ClientHello (RFC 8446 §4.1.2), both as Sluice's server reads an app's
/// and as Sluice's client writes its own. The extensions are kept in order,
/// raw; the accessors below decode the ones a TLS 1.3 handshake needs and
/// throw `decode_error` or `illegal_parameter` for a malformed one.
package struct ClientHello: Sendable, Equatable {
    package var random: [UInt8]
    package var legacySessionID: [UInt8]
    package var cipherSuites: [UInt16]
    package var extensions: [TLSExtension]

    package init(random: [UInt8], legacySessionID: [UInt8], cipherSuites: [UInt16], extensions: [TLSExtension]) {
        self.random = random
        self.legacySessionID = legacySessionID
        self.cipherSuites = cipherSuites
        self.extensions = extensions
    }

    /// From a message's body (after the 4-byte handshake header).
    package init(body: [UInt8]) throws(TLSError) {
        var reader = TLSReader(body)
        _ = try reader.u16() // legacy_version: §4.1.2 says ignore it; supported_versions decides.
        random = try reader.bytes(32)
        legacySessionID = try reader.vectorBytes(lengthSize: 1)
        guard legacySessionID.count <= 32 else { throw TLSError(.illegalParameter, "a session ID of \(legacySessionID.count) bytes") }
        var suites = try reader.vector(lengthSize: 2)
        guard suites.remainingCount % 2 == 0, !suites.isAtEnd else { throw TLSError(.decodeError, "a malformed cipher suite list") }
        cipherSuites = []
        while !suites.isAtEnd { cipherSuites.append(try suites.u16()) }
        // §4.1.2: TLS 1.3 clients send exactly one compression method, null.
        let compression = try reader.vectorBytes(lengthSize: 1)
        guard compression == [0] else { throw TLSError(.illegalParameter, "compression methods \(compression)") }
        extensions = reader.isAtEnd ? [] : try TLSExtension.readList(&reader)
        try reader.expectEnd("ClientHello")
        // §4.2.11: pre_shared_key, when present, is the last extension.
        if let index = extensions.firstIndex(where: { $0.type == .preSharedKey }), index != extensions.count - 1 {
            throw TLSError(.illegalParameter, "pre_shared_key is not the last extension")
        }
    }

    /// The whole handshake message.
    package func encode() -> [UInt8] {
        var writer = TLSWriter()
        writer.u16(ProtocolVersion.tls12)
        writer.append(random)
        writer.vector(lengthSize: 1, bytes: legacySessionID)
        writer.vector(lengthSize: 2) { list in
            for suite in cipherSuites { list.u16(suite) }
        }
        writer.vector(lengthSize: 1, bytes: [0])
        TLSExtension.writeList(extensions, to: &writer)
        return HandshakeMessage.encode(type: .clientHello, body: writer.bytes)
    }

    /// §4.2.1: the versions offered, most preferred first; empty without the extension.
    package func supportedVersions() throws(TLSError) -> [UInt16] {
        guard let data = extensions[.supportedVersions] else { return [] }
        var reader = TLSReader(data)
        var list = try reader.vector(lengthSize: 1)
        try reader.expectEnd("supported_versions")
        guard list.remainingCount % 2 == 0, !list.isAtEnd else { throw TLSError(.decodeError, "a malformed supported_versions") }
        var versions: [UInt16] = []
        while !list.isAtEnd { versions.append(try list.u16()) }
        return versions
    }

    /// §4.2.7.
    package func supportedGroups() throws(TLSError) -> [NamedGroup] {
        try Self.u16List(extensions[.supportedGroups], "supported_groups").map(NamedGroup.init(rawValue:))
    }

    /// §4.2.3.
    package func signatureAlgorithms() throws(TLSError) -> [SignatureScheme] {
        try Self.u16List(extensions[.signatureAlgorithms], "signature_algorithms").map(SignatureScheme.init(rawValue:))
    }

    /// §4.2.8: the key shares, one per group at most, in the client's order.
    package func keyShares() throws(TLSError) -> [KeyShareEntry] {
        guard let data = extensions[.keyShare] else { return [] }
        var reader = TLSReader(data)
        var list = try reader.vector(lengthSize: 2)
        try reader.expectEnd("key_share")
        var entries: [KeyShareEntry] = []
        while !list.isAtEnd {
            let entry = try KeyShareEntry(reading: &list)
            guard !entries.contains(where: { $0.group == entry.group }) else {
                throw TLSError(.illegalParameter, "two key shares for group \(entry.group.rawValue)")
            }
            entries.append(entry)
        }
        return entries
    }

    /// RFC 6066 §3: the host_name entry, if any. Names are ASCII; anything
    /// else is refused rather than guessed at.
    package func serverName() throws(TLSError) -> String? {
        guard let data = extensions[.serverName] else { return nil }
        var reader = TLSReader(data)
        var list = try reader.vector(lengthSize: 2)
        try reader.expectEnd("server_name")
        while !list.isAtEnd {
            let nameType = try list.u8()
            let name = try list.vectorBytes(lengthSize: 2)
            if nameType == 0 {
                guard !name.isEmpty, name.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    throw TLSError(.decodeError, "a server name that is not an ASCII host name")
                }
                return String(decoding: name, as: UTF8.self)
            }
        }
        return nil
    }

    /// RFC 7301: the protocols offered, or nil without the extension.
    package func applicationProtocols() throws(TLSError) -> [[UInt8]]? {
        guard let data = extensions[.applicationLayerProtocolNegotiation] else { return nil }
        return try ApplicationProtocols.decode(data)
    }

    private static func u16List(_ data: [UInt8]?, _ name: String) throws(TLSError) -> [UInt16] {
        guard let data else { return [] }
        var reader = TLSReader(data)
        var list = try reader.vector(lengthSize: 2)
        try reader.expectEnd(name)
        guard list.remainingCount % 2 == 0, !list.isAtEnd else { throw TLSError(.decodeError, "a malformed \(name)") }
        var values: [UInt16] = []
        while !list.isAtEnd { values.append(try list.u16()) }
        return values
    }
}

/// §4.2.8: a group and its key exchange value.
package struct KeyShareEntry: Sendable, Equatable {
    package var group: NamedGroup
    package var keyExchange: [UInt8]

    package init(group: NamedGroup, keyExchange: [UInt8]) {
        self.group = group
        self.keyExchange = keyExchange
    }

    package init(reading reader: inout TLSReader) throws(TLSError) {
        group = NamedGroup(rawValue: try reader.u16())
        keyExchange = try reader.vectorBytes(lengthSize: 2)
        guard !keyExchange.isEmpty else { throw TLSError(.decodeError, "an empty key share") }
    }

    package func write(to writer: inout TLSWriter) {
        writer.u16(group.rawValue)
        writer.vector(lengthSize: 2, bytes: keyExchange)
    }
}
