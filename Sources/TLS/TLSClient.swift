package import Crypto

/// The client side of TLS 1.3 (RFC 8446), as Sluice speaks it to the real
/// server behind an intercepted connection: X25519, both AEADs, the server's
/// chain checked by the engine's verifier, no resumption or 0-RTT (tickets
/// are read and dropped), no client certificate.
package struct TLSClient: TLSEndpoint {
    package struct Configuration {
        /// The name to send (SNI) and that the chain must match; nil for an address.
        package var serverName: String?
        package var applicationProtocols: [[UInt8]]
        package var randomBytes: (_ count: Int) -> [UInt8]
        /// Validates the chain (leaf first) for `serverName` and returns the
        /// leaf's key; throws the alert to send (bad_certificate, unknown_ca...).
        package var verifyChain: (_ chain: [[UInt8]]) throws(TLSError) -> ServerPublicKey
        /// The suites to offer, most preferred first.
        package var cipherSuites: [CipherSuite] = TLSServer.suitePreference

        package init(serverName: String?, applicationProtocols: [[UInt8]], randomBytes: @escaping (Int) -> [UInt8],
                     verifyChain: @escaping ([[UInt8]]) throws(TLSError) -> ServerPublicKey)
        {
            self.serverName = serverName
            self.applicationProtocols = applicationProtocols
            self.randomBytes = randomBytes
            self.verifyChain = verifyChain
        }
    }

    private let configuration: Configuration
    var records = RecordLayer()
    private var transcript = Transcript()
    package internal(set) var state: TLSHandshakeState = .awaitingServerHello(retried: false)
    private var privateKey: [UInt8] = []
    private var sessionID: [UInt8] = []
    private var hello: ClientHello
    private(set) var suite: CipherSuite = .aes128GCMSHA256
    private var handshakeSecret: [UInt8] = []
    private var clientHandshakeSecret: [UInt8] = []
    private var serverHandshakeSecret: [UInt8] = []
    private var clientApplicationSecret: [UInt8] = []
    private var serverApplicationSecret: [UInt8] = []
    private var serverKey: ServerPublicKey?
    package private(set) var applicationProtocol: [UInt8]?

    /// Ready to `start()`.
    package init(configuration: Configuration) {
        self.configuration = configuration
        privateKey = configuration.randomBytes(32)
        // §D.4: compatibility mode, so middleboxes see what looks like a resumed TLS 1.2 session.
        sessionID = configuration.randomBytes(32)
        hello = ClientHello(random: configuration.randomBytes(32), legacySessionID: sessionID,
                            cipherSuites: configuration.cipherSuites.map(\.rawValue), extensions: [])
        hello.extensions = extensions(keyShare: X25519.publicKey(privateKey: privateKey) ?? [])
    }

    private func extensions(keyShare: [UInt8], cookie: [UInt8]? = nil) -> [TLSExtension] {
        var list: [TLSExtension] = []
        if let name = configuration.serverName {
            var writer = TLSWriter()
            writer.vector(lengthSize: 2) { list in
                list.u8(0)
                list.vector(lengthSize: 2, bytes: Array(name.utf8))
            }
            list.append(TLSExtension(type: .serverName, data: writer.bytes))
        }
        list.append(TLSExtension(type: .supportedVersions, data: [2, 0x03, 0x04]))
        list.append(TLSExtension(type: .supportedGroups, data: [0, 2, 0x00, 0x1D]))
        var schemes = TLSWriter()
        schemes.vector(lengthSize: 2) { list in
            for scheme in ServerPublicKey.offeredSchemes { list.u16(scheme.rawValue) }
        }
        list.append(TLSExtension(type: .signatureAlgorithms, data: schemes.bytes))
        var share = TLSWriter()
        share.vector(lengthSize: 2) { KeyShareEntry(group: .x25519, keyExchange: keyShare).write(to: &$0) }
        list.append(TLSExtension(type: .keyShare, data: share.bytes))
        // §4.2.9: without it a server may not send tickets it would not use anyway.
        list.append(TLSExtension(type: .pskKeyExchangeModes, data: [1, 1]))
        if !configuration.applicationProtocols.isEmpty {
            list.append(TLSExtension(type: .applicationLayerProtocolNegotiation,
                                     data: ApplicationProtocols.encode(configuration.applicationProtocols)))
        }
        if let cookie { list.append(TLSExtension(type: .cookie, data: cookie)) }
        return list
    }

    /// The ClientHello's record: what to send first.
    package mutating func start() -> [UInt8] {
        let encoded = hello.encode()
        transcript.append(encoded)
        return records.write(encoded, type: .handshake)
    }

    /// Bytes from the peer. A thrown error is fatal: send `alertRecord(for:)` and close.
    package mutating func receive(_ bytes: [UInt8]) throws(TLSError) -> TLSOutput { try receiveRecords(bytes) }

    /// Application data for the peer, as records.
    package mutating func send(_ plaintext: [UInt8]) -> [UInt8] { sendData(plaintext) }

    /// close_notify: no more data from Sluice on this connection.
    package mutating func close() -> [UInt8] { closeNotify() }

    /// The alert an error owes the peer.
    package mutating func alertRecord(for error: TLSError) -> [UInt8] { alert(for: error) }

    mutating func handle(_ message: HandshakeMessage, into output: inout TLSOutput) throws(TLSError) {
        switch (state, message.type) {
        case (.awaitingServerHello(let retried), .serverHello):
            try serverHello(ServerHello(body: message.body), raw: message.raw, retried: retried, into: &output)
        case (.awaitingEncryptedExtensions, .encryptedExtensions):
            // §4.3.1.
            let extensions = try EncryptedExtensions(body: message.body)
            if let chosen = try extensions.selectedApplicationProtocol() {
                guard configuration.applicationProtocols.contains(chosen) else {
                    throw TLSError(.illegalParameter, "the server chose a protocol Sluice did not offer")
                }
                applicationProtocol = chosen
            }
            transcript.append(message.raw)
            state = .awaitingCertificate
        case (.awaitingCertificate, .certificate):
            // §4.4.2: the chain is checked before its signature is.
            let certificate = try CertificateMessage(body: message.body)
            guard certificate.requestContext.isEmpty, !certificate.certificates.isEmpty else {
                throw TLSError(.decodeError, "an empty certificate chain")
            }
            serverKey = try configuration.verifyChain(certificate.certificates)
            transcript.append(message.raw)
            state = .awaitingCertificateVerify
        case (.awaitingCertificateVerify, .certificateVerify):
            // §4.4.3.
            let verify = try CertificateVerify(body: message.body)
            let content = CertificateVerify.signedContent(server: true, transcriptHash: transcript.hash(SHA256.self))
            guard let serverKey, serverKey.verifies(verify.signature, of: content, scheme: verify.algorithm) else {
                throw TLSError(.decryptError, "the server's CertificateVerify (\(verify.algorithm)) does not verify")
            }
            transcript.append(message.raw)
            state = .awaitingServerFinished
        case (.awaitingServerFinished, .finished):
            // §4.4.4, then Sluice's own Finished and the application keys.
            let expected = KeySchedule<SHA256>.finishedVerifyData(baseKey: serverHandshakeSecret,
                                                                 transcriptHash: transcript.hash(SHA256.self))
            guard constantTimeEquals(message.body, expected) else { throw TLSError(.decryptError, "the server's Finished does not verify") }
            transcript.append(message.raw)
            let masterSecret = KeySchedule<SHA256>.masterSecret(handshakeSecret: handshakeSecret)
            let serverFinishedHash = transcript.hash(SHA256.self)
            clientApplicationSecret = KeySchedule<SHA256>.deriveSecret(masterSecret, label: "c ap traffic", transcriptHash: serverFinishedHash)
            serverApplicationSecret = KeySchedule<SHA256>.deriveSecret(masterSecret, label: "s ap traffic", transcriptHash: serverFinishedHash)
            let finished = Finished(verifyData: KeySchedule<SHA256>.finishedVerifyData(baseKey: clientHandshakeSecret,
                                                                                      transcriptHash: serverFinishedHash)).encode()
            output.toPeer += records.write(finished, type: .handshake)
            try switchReading(to: serverApplicationSecret)
            records.writing = RecordProtection(suite: suite, trafficSecret: clientApplicationSecret)
            records.acceptsChangeCipherSpec = false
            handshakeSecret = []
            clientHandshakeSecret = []
            serverHandshakeSecret = []
            state = .connected
            output.handshakeCompleted = true
        case (.connected, .newSessionTicket):
            // §4.6.1: Sluice does not resume, so tickets are dropped.
            break
        case (.connected, .keyUpdate):
            var reader = TLSReader(message.body)
            let requested = try reader.u8()
            try reader.expectEnd("KeyUpdate")
            guard requested <= 1 else { throw TLSError(.illegalParameter, "a KeyUpdate request of \(requested)") }
            serverApplicationSecret = KeySchedule<SHA256>.nextApplicationSecret(serverApplicationSecret)
            try switchReading(to: serverApplicationSecret)
            if requested == 1 {
                output.toPeer += records.write(HandshakeMessage.encode(type: .keyUpdate, body: [0]), type: .handshake)
                clientApplicationSecret = KeySchedule<SHA256>.nextApplicationSecret(clientApplicationSecret)
                records.writing = RecordProtection(suite: suite, trafficSecret: clientApplicationSecret)
            }
        case (.awaitingServerHello, _), (.awaitingEncryptedExtensions, _), (.awaitingCertificate, _),
             (.awaitingCertificateVerify, _), (.awaitingServerFinished, _), (.connected, _), (.closed, _),
             (.awaitingClientHello, _), (.awaitingClientFinished, _):
            // A CertificateRequest lands here too: Sluice has no client certificate to give.
            throw TLSError(.unexpectedMessage, "\(message.type) in state \(state)")
        }
    }

    private mutating func serverHello(_ serverHello: ServerHello, raw: [UInt8], retried: Bool,
                                      into output: inout TLSOutput) throws(TLSError)
    {
        // §4.1.3-§4.1.4: the version, the session ID echo and the suite are checked first.
        guard try serverHello.selectedVersion() == ProtocolVersion.tls13 else {
            throw TLSError(.protocolVersion, "the server does not speak TLS 1.3")
        }
        guard serverHello.legacySessionIDEcho == sessionID else { throw TLSError(.illegalParameter, "the session ID is not echoed") }
        guard let chosen = CipherSuite(rawValue: serverHello.cipherSuite), hello.cipherSuites.contains(chosen.rawValue) else {
            throw TLSError(.illegalParameter, "the server chose a suite Sluice did not offer")
        }
        if retried, chosen != suite { throw TLSError(.illegalParameter, "the suite changed after a retry") }
        suite = chosen
        if serverHello.isHelloRetryRequest {
            // §4.1.4: only once, and only for something that changes the hello.
            // Sluice offers X25519 alone and already sent its share, so a
            // retry may ask for nothing but a cookie.
            guard !retried else { throw TLSError(.unexpectedMessage, "a second HelloRetryRequest") }
            guard try serverHello.selectedGroup() == nil, let cookie = serverHello.extensions[.cookie] else {
                throw TLSError(.illegalParameter, "a HelloRetryRequest that changes nothing Sluice can change")
            }
            transcript.replaceWithMessageHash(SHA256.self)
            transcript.append(raw)
            // §4.1.2: the second hello is the first with the cookie added; the share stays.
            hello.extensions = extensions(keyShare: X25519.publicKey(privateKey: privateKey) ?? [], cookie: cookie)
            let encoded = hello.encode()
            transcript.append(encoded)
            output.toPeer += TLSRecord.encode(type: .changeCipherSpec, body: [1]) + records.write(encoded, type: .handshake)
            state = .awaitingServerHello(retried: true)
            return
        }
        guard let share = try serverHello.keyShare(), share.group == .x25519,
              let shared = X25519.sharedSecret(privateKey: privateKey, peerPublicKey: share.keyExchange)
        else { throw TLSError(.illegalParameter, "the server's key share is not a usable X25519 key") }
        transcript.append(raw)
        handshakeSecret = KeySchedule<SHA256>.handshakeSecret(sharedSecret: shared)
        let helloHash = transcript.hash(SHA256.self)
        clientHandshakeSecret = KeySchedule<SHA256>.deriveSecret(handshakeSecret, label: "c hs traffic", transcriptHash: helloHash)
        serverHandshakeSecret = KeySchedule<SHA256>.deriveSecret(handshakeSecret, label: "s hs traffic", transcriptHash: helloHash)
        try switchReading(to: serverHandshakeSecret)
        // §D.4: in compatibility mode the client sends its change_cipher_spec
        // before its first protected record.
        output.toPeer += retried ? [] : TLSRecord.encode(type: .changeCipherSpec, body: [1])
        records.writing = RecordProtection(suite: suite, trafficSecret: clientHandshakeSecret)
        privateKey = []
        state = .awaitingEncryptedExtensions
    }
}
