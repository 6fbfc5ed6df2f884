/// The messages the server sends under handshake keys (RFC 8446 §4.3.1,
/// §4.4.2-§4.4.4), and the client's Finished, which has the same form.

/// §4.3.1: extensions not needed to set up keys; for Sluice, the ALPN choice.
package struct EncryptedExtensions: Sendable, Equatable {
    package var extensions: [TLSExtension]

    package init(extensions: [TLSExtension]) { self.extensions = extensions }

    package init(body: [UInt8]) throws(TLSError) {
        var reader = TLSReader(body)
        extensions = try TLSExtension.readList(&reader)
        try reader.expectEnd("EncryptedExtensions")
    }

    package func encode() -> [UInt8] {
        var writer = TLSWriter()
        TLSExtension.writeList(extensions, to: &writer)
        return HandshakeMessage.encode(type: .encryptedExtensions, body: writer.bytes)
    }

    /// RFC 7301 §3.1: the server names exactly one protocol, or none.
    package func selectedApplicationProtocol() throws(TLSError) -> [UInt8]? {
        guard let data = extensions[.applicationLayerProtocolNegotiation] else { return nil }
        let names = try ApplicationProtocols.decode(data)
        guard names.count == 1 else { throw TLSError(.illegalParameter, "the server chose \(names.count) protocols") }
        return names[0]
    }
}

/// §4.4.2: the chain, leaf first, each entry with its own (ignored) extensions.
package struct CertificateMessage: Sendable, Equatable {
    package var requestContext: [UInt8]
    package var certificates: [[UInt8]]

    package init(requestContext: [UInt8] = [], certificates: [[UInt8]]) {
        self.requestContext = requestContext
        self.certificates = certificates
    }

    package init(body: [UInt8]) throws(TLSError) {
        var reader = TLSReader(body)
        requestContext = try reader.vectorBytes(lengthSize: 1)
        var list = try reader.vector(lengthSize: 3)
        try reader.expectEnd("Certificate")
        certificates = []
        while !list.isAtEnd {
            let data = try list.vectorBytes(lengthSize: 3)
            guard !data.isEmpty else { throw TLSError(.decodeError, "an empty certificate") }
            _ = try list.vectorBytes(lengthSize: 2) // OCSP/SCT entries: Sluice checks neither.
            certificates.append(data)
        }
    }

    package func encode() -> [UInt8] {
        var writer = TLSWriter()
        writer.vector(lengthSize: 1, bytes: requestContext)
        writer.vector(lengthSize: 3) { list in
            for certificate in certificates {
                list.vector(lengthSize: 3, bytes: certificate)
                list.u16(0)
            }
        }
        return HandshakeMessage.encode(type: .certificate, body: writer.bytes)
    }
}

/// §4.4.3: a signature over the transcript by the certificate's key.
package struct CertificateVerify: Sendable, Equatable {
    package var algorithm: SignatureScheme
    package var signature: [UInt8]

    package init(algorithm: SignatureScheme, signature: [UInt8]) {
        self.algorithm = algorithm
        self.signature = signature
    }

    package init(body: [UInt8]) throws(TLSError) {
        var reader = TLSReader(body)
        algorithm = SignatureScheme(rawValue: try reader.u16())
        signature = try reader.vectorBytes(lengthSize: 2)
        try reader.expectEnd("CertificateVerify")
    }

    package func encode() -> [UInt8] {
        var writer = TLSWriter()
        writer.u16(algorithm.rawValue)
        writer.vector(lengthSize: 2, bytes: signature)
        return HandshakeMessage.encode(type: .certificateVerify, body: writer.bytes)
    }

    /// §4.4.3: 64 spaces, the context string, a zero byte, the transcript
    /// hash. The padding keeps the signature from being reused as a TLS 1.2 one.
    package static func signedContent(server: Bool, transcriptHash: [UInt8]) -> [UInt8] {
        let context = server ? "TLS 1.3, server CertificateVerify" : "TLS 1.3, client CertificateVerify"
        return [UInt8](repeating: 0x20, count: 64) + Array(context.utf8) + [0] + transcriptHash
    }
}

/// §4.4.4.
package struct Finished: Sendable, Equatable {
    package var verifyData: [UInt8]

    package init(verifyData: [UInt8]) { self.verifyData = verifyData }

    package init(body: [UInt8]) { verifyData = body }

    package func encode() -> [UInt8] { HandshakeMessage.encode(type: .finished, body: verifyData) }
}
