import Crypto

/// What a TLS 1.2 handshake carries between its messages (RFC 5246 §7.3).
struct TLS12Handshake {
    var suite: TLS12CipherSuite?
    var serverRandom: [UInt8] = []
    /// RFC 7627: the server echoed extended_master_secret.
    var extendedMasterSecret = false
    var preMasterSecret: [UInt8] = []
    /// Sluice's ECDH public key, for its ClientKeyExchange.
    var clientPublicKey: [UInt8] = []
    var masterSecret: [UInt8] = []
    var certificateRequested = false
}

/// The TLS 1.2 half of Sluice's client: what happens once a ServerHello
/// without supported_versions chose TLS 1.2. Full handshakes only (Sluice
/// never resumes), ECDHE over X25519, no client certificate.
extension TLSClient {
    /// RFC 8446 §4.1.3: the last eight bytes of a TLS 1.3 server's random when
    /// it negotiates 1.2 ("DOWNGRD" 01) or below (00). Seeing one means a
    /// server that speaks 1.3 was made to choose less: a downgrade attack.
    static let downgradeSentinels: [[UInt8]] = [
        [0x44, 0x4F, 0x57, 0x4E, 0x47, 0x52, 0x44, 0x01],
        [0x44, 0x4F, 0x57, 0x4E, 0x47, 0x52, 0x44, 0x00],
    ]

    /// The extensions a TLS 1.2 ServerHello may answer with: those Sluice sent
    /// that mean something in 1.2 (RFC 5246 §7.4.1.4: anything else aborts).
    static let tls12ServerHelloExtensions: Set<ExtensionType> = [
        .serverName, .ecPointFormats, .extendedMasterSecret, .renegotiationInfo, .applicationLayerProtocolNegotiation,
    ]

    mutating func serverHello12(_ serverHello: ServerHello, raw: [UInt8]) throws(TLSError) {
        guard !Self.downgradeSentinels.contains(Array(serverHello.random.suffix(8))) else {
            throw TLSError(.illegalParameter, "a server that speaks TLS 1.3 chose 1.2 (the downgrade sentinel is in its random)")
        }
        guard let chosen = TLS12CipherSuite(rawValue: serverHello.cipherSuite), configuration.tls12CipherSuites.contains(chosen) else {
            throw TLSError(.illegalParameter, "the server chose a suite Sluice did not offer (0x\(String(serverHello.cipherSuite, radix: 16)))")
        }
        // RFC 5246 §7.4.1.3: an echoed session ID means an abbreviated
        // handshake, resuming a session; Sluice's ID is random and resumes nothing.
        guard serverHello.legacySessionIDEcho != sessionID else {
            throw TLSError(.illegalParameter, "the server resumed a session Sluice never had")
        }
        for item in serverHello.extensions where !Self.tls12ServerHelloExtensions.contains(item.type) {
            throw TLSError(.unsupportedExtension, "the server sent extension \(item.type.rawValue), which Sluice did not offer")
        }
        // RFC 5746 §3.4: on a first handshake the server's renegotiated_connection is empty.
        if let info = serverHello.extensions[.renegotiationInfo], info != [0] {
            throw TLSError(.handshakeFailure, "a renegotiation_info that is not empty")
        }
        // RFC 8422 §5.2: if the server lists point formats, uncompressed is among them.
        if let formats = serverHello.extensions[.ecPointFormats] {
            var reader = TLSReader(formats)
            let list = try reader.vectorBytes(lengthSize: 1)
            try reader.expectEnd("ec_point_formats")
            guard list.contains(0) else { throw TLSError(.illegalParameter, "the server cannot read uncompressed points") }
        }
        if let data = serverHello.extensions[.extendedMasterSecret] {
            guard data.isEmpty else { throw TLSError(.decodeError, "an extended_master_secret with a body") }
            tls12.extendedMasterSecret = true
        }
        if let data = serverHello.extensions[.applicationLayerProtocolNegotiation] {
            let names = try ApplicationProtocols.decode(data)
            guard names.count == 1 else { throw TLSError(.illegalParameter, "the server chose \(names.count) protocols") }
            guard configuration.applicationProtocols.contains(names[0]) else {
                throw TLSError(.illegalParameter, "the server chose a protocol Sluice did not offer")
            }
            applicationProtocol = names[0]
        }
        transcript.append(raw)
        tls12.suite = chosen
        tls12.serverRandom = serverHello.random
        suite = chosen.aead
        negotiatedVersion = ProtocolVersion.tls12
        negotiatedSuiteName = chosen.description
        records.tls12 = true
        state = .awaitingServerCertificate12
    }

    mutating func serverCertificate12(_ message: HandshakeMessage) throws(TLSError) {
        let certificate = try TLS12Certificate(body: message.body)
        guard !certificate.certificates.isEmpty else { throw TLSError(.decodeError, "an empty certificate chain") }
        let key = try configuration.verifyChain(certificate.certificates)
        // RFC 8422 §5.3 and RFC 5246 §7.4.2: the leaf's key fits the suite's signature.
        let fits: Bool
        switch key {
        case .p256, .p384: fits = tls12.suite?.signsWithECDSA == true
        case .rsa: fits = tls12.suite?.signsWithECDSA == false
        }
        guard fits else { throw TLSError(.unsupportedCertificate, "the certificate's key does not fit \(negotiatedSuiteName ?? "the suite")") }
        serverKey = key
        transcript.append(message.raw)
        state = .awaitingServerKeyExchange12
    }

    mutating func serverKeyExchange12(_ message: HandshakeMessage) throws(TLSError) {
        let exchange = try ServerKeyExchange(body: message.body)
        guard ServerPublicKey.offeredSchemes.contains(exchange.algorithm) else {
            throw TLSError(.illegalParameter, "the server signed with \(exchange.algorithm), which Sluice did not offer")
        }
        let content = exchange.signedContent(clientRandom: hello.random, serverRandom: tls12.serverRandom)
        guard let serverKey, serverKey.verifiesTLS12(exchange.signature, of: content, scheme: exchange.algorithm) else {
            throw TLSError(.decryptError, "the server's ServerKeyExchange (\(exchange.algorithm)) does not verify")
        }
        // RFC 8422 §5.10-§5.11: the premaster secret is the ECDH result, in a
        // group Sluice offered; the hello's X25519 key serves if that is the
        // one, else a fresh key in the chosen group. The server's key must be
        // valid (a point on the curve; an X25519 result not all zero).
        guard Self.supportedGroups.contains(exchange.group),
              let agreement = keyAgreement?.group == exchange.group ? keyAgreement : KeyAgreement(group: exchange.group, randomBytes: configuration.randomBytes)
        else {
            throw TLSError(.illegalParameter, "the server chose group 0x\(String(exchange.group.rawValue, radix: 16)), which Sluice did not offer")
        }
        guard let shared = agreement.sharedSecret(peerShare: exchange.publicKey) else {
            throw TLSError(.illegalParameter, "the server's key is not a usable key of group 0x\(String(exchange.group.rawValue, radix: 16))")
        }
        tls12.preMasterSecret = shared
        tls12.clientPublicKey = agreement.publicShare
        keyAgreement = nil
        transcript.append(message.raw)
        state = .awaitingServerHelloDone12
    }

    mutating func certificateRequest12(_ message: HandshakeMessage) throws(TLSError) {
        guard !tls12.certificateRequested else { throw TLSError(.unexpectedMessage, "a second CertificateRequest") }
        _ = try TLS12CertificateRequest(body: message.body)
        tls12.certificateRequested = true
        transcript.append(message.raw)
    }

    /// The server's flight is whole: Sluice's answers it (RFC 5246 §7.3):
    /// [an empty Certificate], ClientKeyExchange, change_cipher_spec, Finished.
    mutating func serverHelloDone12(_ message: HandshakeMessage, into output: inout TLSOutput) throws(TLSError) {
        guard message.raw.count == 4 else { throw TLSError(.decodeError, "a ServerHelloDone with a body") }
        guard let suite12 = tls12.suite, !tls12.clientPublicKey.isEmpty else {
            throw TLSError(.internalError, "no suite or key at ServerHelloDone")
        }
        transcript.append(message.raw)
        var flight: [UInt8] = []
        if tls12.certificateRequested {
            // §7.4.6: no suitable certificate, so an empty list; the server decides.
            let empty = TLS12Certificate(certificates: []).encode()
            transcript.append(empty)
            flight += empty
        }
        let keyExchange = ClientKeyExchange(publicKey: tls12.clientPublicKey).encode()
        transcript.append(keyExchange)
        flight += keyExchange
        tls12.masterSecret = tls12.extendedMasterSecret
            ? TLS12KeyDerivation.extendedMasterSecret(preMasterSecret: tls12.preMasterSecret, sessionHash: transcript.hash(SHA256.self))
            : TLS12KeyDerivation.masterSecret(preMasterSecret: tls12.preMasterSecret, clientRandom: hello.random,
                                              serverRandom: tls12.serverRandom)
        tls12.preMasterSecret = []
        let keys = TLS12KeyDerivation.keyBlock(masterSecret: tls12.masterSecret, clientRandom: hello.random, serverRandom: tls12.serverRandom,
                                               keySize: suite12.aead.keySize, ivSize: suite12.fixedIVSize)
        let finished = Finished(verifyData: TLS12KeyDerivation.verifyData(masterSecret: tls12.masterSecret, label: "client finished",
                                                                          transcriptHash: transcript.hash(SHA256.self))).encode()
        transcript.append(finished)
        output.toPeer += records.write(flight, type: .handshake)
        output.toPeer += TLSRecord.encode(type: .changeCipherSpec, body: [1])
        records.writing = RecordProtection(tls12: suite12, key: keys.clientKey, fixedIV: keys.clientIV)
        output.toPeer += records.write(finished, type: .handshake)
        records.pendingReading = RecordProtection(tls12: suite12, key: keys.serverKey, fixedIV: keys.serverIV)
        state = .awaitingServerFinished12
    }

    mutating func serverFinished12(_ message: HandshakeMessage, into output: inout TLSOutput) throws(TLSError) {
        // §7.4.9: Finished is the first message under the new keys.
        guard records.pendingReading == nil else { throw TLSError(.unexpectedMessage, "a Finished before the server's change_cipher_spec") }
        let expected = TLS12KeyDerivation.verifyData(masterSecret: tls12.masterSecret, label: "server finished",
                                                     transcriptHash: transcript.hash(SHA256.self))
        guard message.body.count == expected.count, constantTimeEquals(message.body, expected) else {
            throw TLSError(.decryptError, "the server's Finished does not verify")
        }
        tls12.masterSecret = []
        transcript = Transcript()
        state = .connected
        output.handshakeCompleted = true
    }
}
