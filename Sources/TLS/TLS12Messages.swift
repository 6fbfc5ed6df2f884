/// The TLS 1.2 handshake messages Sluice's client reads and writes (RFC 5246
/// §7.4, RFC 8422 §5.4-§5.7 for ECDHE). Messages both versions share
/// (hellos, Finished) live with TLS 1.3's.

/// §7.4.2: the chain, leaf first, without TLS 1.3's request context and
/// per-certificate extensions.
package struct TLS12Certificate: Sendable, Equatable {
    package var certificates: [[UInt8]]

    package init(certificates: [[UInt8]]) { self.certificates = certificates }

    package init(body: [UInt8]) throws(TLSError) {
        var reader = TLSReader(body)
        var list = try reader.vector(lengthSize: 3)
        try reader.expectEnd("Certificate")
        certificates = []
        while !list.isAtEnd {
            let data = try list.vectorBytes(lengthSize: 3)
            guard !data.isEmpty else { throw TLSError(.decodeError, "an empty certificate") }
            certificates.append(data)
        }
    }

    package func encode() -> [UInt8] {
        var writer = TLSWriter()
        writer.vector(lengthSize: 3) { list in
            for certificate in certificates { list.vector(lengthSize: 3, bytes: certificate) }
        }
        return HandshakeMessage.encode(type: .certificate, body: writer.bytes)
    }
}

/// RFC 8422 §5.4: the server's ephemeral ECDH key, signed with its certificate's key.
package struct ServerKeyExchange: Sendable, Equatable {
    package var group: NamedGroup
    package var publicKey: [UInt8]
    package var algorithm: SignatureScheme
    package var signature: [UInt8]

    package init(group: NamedGroup, publicKey: [UInt8], algorithm: SignatureScheme, signature: [UInt8]) {
        self.group = group
        self.publicKey = publicKey
        self.algorithm = algorithm
        self.signature = signature
    }

    package init(body: [UInt8]) throws(TLSError) {
        var reader = TLSReader(body)
        // ECCurveType: only named_curve (3) is left (RFC 8422 §5.4).
        let curveType = try reader.u8()
        guard curveType == 3 else { throw TLSError(.illegalParameter, "a ServerKeyExchange with curve type \(curveType)") }
        group = NamedGroup(rawValue: try reader.u16())
        publicKey = try reader.vectorBytes(lengthSize: 1)
        guard !publicKey.isEmpty else { throw TLSError(.decodeError, "an empty ECDH public key") }
        algorithm = SignatureScheme(rawValue: try reader.u16())
        signature = try reader.vectorBytes(lengthSize: 2)
        try reader.expectEnd("ServerKeyExchange")
    }

    /// ServerECDHParams as sent: what the signature covers after the two randoms.
    package var parameters: [UInt8] {
        var writer = TLSWriter()
        writer.u8(3)
        writer.u16(group.rawValue)
        writer.vector(lengthSize: 1, bytes: publicKey)
        return writer.bytes
    }

    /// §5.4: client_random + server_random + ServerECDHParams.
    package func signedContent(clientRandom: [UInt8], serverRandom: [UInt8]) -> [UInt8] {
        clientRandom + serverRandom + parameters
    }

    package func encode() -> [UInt8] {
        var writer = TLSWriter()
        writer.append(parameters)
        writer.u16(algorithm.rawValue)
        writer.vector(lengthSize: 2, bytes: signature)
        return HandshakeMessage.encode(type: .serverKeyExchange, body: writer.bytes)
    }
}

/// RFC 5246 §7.4.4: read only to check its form; Sluice has no certificate
/// to offer and answers with an empty Certificate (§7.4.6).
package struct TLS12CertificateRequest: Sendable, Equatable {
    package init(body: [UInt8]) throws(TLSError) {
        var reader = TLSReader(body)
        let types = try reader.vectorBytes(lengthSize: 1)
        let algorithms = try reader.vectorBytes(lengthSize: 2)
        _ = try reader.vectorBytes(lengthSize: 2) // certificate_authorities
        try reader.expectEnd("CertificateRequest")
        guard !types.isEmpty, !algorithms.isEmpty, algorithms.count % 2 == 0 else {
            throw TLSError(.decodeError, "a CertificateRequest without types or algorithms")
        }
    }
}

/// RFC 8422 §5.7: the client's ephemeral public key.
package struct ClientKeyExchange: Sendable, Equatable {
    package var publicKey: [UInt8]

    package init(publicKey: [UInt8]) { self.publicKey = publicKey }

    package func encode() -> [UInt8] {
        var writer = TLSWriter()
        writer.vector(lengthSize: 1, bytes: publicKey)
        return HandshakeMessage.encode(type: .clientKeyExchange, body: writer.bytes)
    }
}
