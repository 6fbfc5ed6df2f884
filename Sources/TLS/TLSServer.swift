package import Crypto

/// The server side of TLS 1.3 (RFC 8446), as Sluice speaks it to an app whose
/// HTTPS it intercepts: one full handshake per connection (no resumption, no
/// 0-RTT, no client certificates), X25519, ECDSA P-256 certificates, and
/// ChaCha20-Poly1305 or AES-128-GCM. It consumes bytes from the app and
/// returns bytes for it; the engine moves them.
package struct TLSServer: TLSEndpoint {
    /// What the server needs from the engine.
    package struct Configuration {
        /// The chain to present for the ClientHello's server name (leaf
        /// first, DER) and the leaf's key. Nil refuses the handshake.
        package var certificate: (_ serverName: String?) -> (chain: [[UInt8]], key: P256.PrivateKey)?
        /// Protocols Sluice can speak inside, in its order of preference.
        package var applicationProtocols: [[UInt8]]
        /// Random bytes (the ServerHello random, X25519 keys).
        package var randomBytes: (_ count: Int) -> [UInt8]

        package init(certificate: @escaping (String?) -> (chain: [[UInt8]], key: P256.PrivateKey)?,
                     applicationProtocols: [[UInt8]], randomBytes: @escaping (Int) -> [UInt8])
        {
            self.certificate = certificate
            self.applicationProtocols = applicationProtocols
            self.randomBytes = randomBytes
        }
    }

    /// The suites in Sluice's order: ChaCha20-Poly1305 first, constant-time
    /// and the faster of the two in software.
    package static let suitePreference: [CipherSuite] = [.chacha20Poly1305SHA256, .aes128GCMSHA256]
    /// How much declined early data is skipped; more ends the connection.
    static let earlyDataLimit = 256 * 1024

    private let configuration: Configuration
    var records = RecordLayer()
    private var transcript = Transcript()
    package internal(set) var state: TLSHandshakeState = .awaitingClientHello(retried: false)
    private(set) var suite: CipherSuite = .aes128GCMSHA256
    private var clientHandshakeSecret: [UInt8] = []
    private var clientApplicationSecret: [UInt8] = []
    private var serverApplicationSecret: [UInt8] = []
    /// What the handshake settled, for the engine and its logs.
    package private(set) var serverName: String?
    package private(set) var applicationProtocol: [UInt8]?

    package init(configuration: Configuration) {
        self.configuration = configuration
    }

    package var negotiatedSuite: CipherSuite? { state == .connected ? suite : nil }

    /// Bytes from the peer. A thrown error is fatal: send `alertRecord(for:)` and close.
    package mutating func receive(_ bytes: [UInt8]) throws(TLSError) -> TLSOutput { try receiveRecords(bytes) }

    /// Application data for the peer, as records.
    package mutating func send(_ plaintext: [UInt8]) -> [UInt8] { sendData(plaintext) }

    /// close_notify: no more data from Sluice on this connection.
    package mutating func close() -> [UInt8] { closeNotify() }

    /// The alert an error owes the peer.
    package mutating func alertRecord(for error: TLSError) -> [UInt8] { alert(for: error) }

    /// The record at the start of `buffer`, opened where it lies (`TLSEndpoint.receiveInPlace`).
    package mutating func receive(inPlace buffer: UnsafeMutableRawBufferPointer) throws(TLSError) -> InPlaceReceipt {
        try receiveInPlace(buffer)
    }

    /// A record's start that `receive` kept: `receive(inPlace:)` waits until it is taken.
    package var hasUnframedBytes: Bool { records.hasUnframedBytes }
    package mutating func takeUnframedBytes() -> [UInt8] { records.takeUnframedBytes() }

    /// What `send(inPlace:contentCount:)` puts before and after a record's content; nil before the handshake ends.
    package var sealing: (prefix: Int, suffix: Int)? { state == .connected ? records.sealing : nil }

    /// An application_data record sealed where it lies (`TLSEndpoint.sealInPlace`).
    package mutating func send(inPlace record: UnsafeMutableRawBufferPointer, contentCount: Int) -> Int {
        sealInPlace(record, contentCount: contentCount)
    }

    mutating func handle(_ message: HandshakeMessage, into output: inout TLSOutput) throws(TLSError) {
        switch (state, message.type) {
        case (.awaitingClientHello(let retried), .clientHello):
            // §4.1.2.
            try answer(ClientHello(body: message.body), raw: message.raw, retried: retried, into: &output)
        case (.awaitingClientFinished, .finished):
            // §4.4.4: the client's Finished covers everything through the server's.
            let expected = KeySchedule<SHA256>.finishedVerifyData(baseKey: clientHandshakeSecret,
                                                                 transcriptHash: transcript.hash(SHA256.self))
            guard constantTimeEquals(message.body, expected) else { throw TLSError(.decryptError, "the client's Finished does not verify") }
            transcript.append(message.raw)
            try switchReading(to: clientApplicationSecret)
            records.acceptsChangeCipherSpec = false
            clientHandshakeSecret = []
            state = .connected
            output.handshakeCompleted = true
        case (.connected, .keyUpdate):
            // §4.6.3: the client's next records use its next secret; if it
            // asks, answer with an update of Sluice's own.
            var reader = TLSReader(message.body)
            let requested = try reader.u8()
            try reader.expectEnd("KeyUpdate")
            guard requested <= 1 else { throw TLSError(.illegalParameter, "a KeyUpdate request of \(requested)") }
            clientApplicationSecret = KeySchedule<SHA256>.nextApplicationSecret(clientApplicationSecret)
            try switchReading(to: clientApplicationSecret)
            if requested == 1 {
                output.toPeer += records.write(HandshakeMessage.encode(type: .keyUpdate, body: [0]), type: .handshake)
                serverApplicationSecret = KeySchedule<SHA256>.nextApplicationSecret(serverApplicationSecret)
                records.writing = RecordProtection(suite: suite, trafficSecret: serverApplicationSecret)
            }
        case (.awaitingClientHello, _), (.awaitingClientFinished, _), (.connected, _), (.closed, _),
             (.awaitingServerHello, _), (.awaitingEncryptedExtensions, _), (.awaitingCertificate, _),
             (.awaitingCertificateVerify, _), (.awaitingServerFinished, _), (.awaitingServerCertificate12, _),
             (.awaitingServerKeyExchange12, _), (.awaitingServerHelloDone12, _), (.awaitingServerFinished12, _):
            throw TLSError(.unexpectedMessage, "\(message.type) in state \(state)")
        }
    }

    private mutating func answer(_ hello: ClientHello, raw: [UInt8], retried: Bool, into output: inout TLSOutput) throws(TLSError) {
        guard try hello.supportedVersions().contains(ProtocolVersion.tls13) else {
            throw TLSError(.protocolVersion, "the client does not offer TLS 1.3")
        }
        guard let chosenSuite = Self.suitePreference.first(where: { hello.cipherSuites.contains($0.rawValue) }) else {
            throw TLSError(.handshakeFailure, "no cipher suite in common")
        }
        guard try hello.signatureAlgorithms().contains(.ecdsaSecp256r1SHA256) else {
            throw TLSError(.handshakeFailure, "the client does not accept ECDSA P-256 signatures")
        }
        guard try hello.supportedGroups().contains(.x25519) else {
            throw TLSError(.handshakeFailure, "the client does not offer X25519")
        }
        if retried, chosenSuite != suite { throw TLSError(.illegalParameter, "the second ClientHello changed the cipher suites") }
        // §4.2.10: 0-RTT (only with a ticket, which Sluice never issues, but an
        // app may hold one of the real server's) is declined: its records are skipped.
        if !retried, hello.extensions[.earlyData] != nil { records.earlyDataToSkip = Self.earlyDataLimit }
        suite = chosenSuite
        let protocols = try hello.applicationProtocols()
        if let protocols {
            applicationProtocol = configuration.applicationProtocols.first { protocols.contains($0) }
            guard applicationProtocol != nil else { throw TLSError(.noApplicationProtocol, "no protocol in common") }
        }
        serverName = try hello.serverName()

        guard let share = try hello.keyShares().first(where: { $0.group == .x25519 }) else {
            // §4.1.4: ask once for an X25519 share.
            guard !retried else { throw TLSError(.illegalParameter, "the second ClientHello has no X25519 share") }
            transcript.append(raw)
            transcript.replaceWithMessageHash(SHA256.self)
            let retry = ServerHello(random: ServerHello.helloRetryRequestRandom, legacySessionIDEcho: hello.legacySessionID,
                                    cipherSuite: suite.rawValue,
                                    extensions: [ServerHello.supportedVersionsExtension(),
                                                 TLSExtension(type: .keyShare, data: [0x00, 0x1D])])
            let encoded = retry.encode()
            transcript.append(encoded)
            output.toPeer += records.write(encoded, type: .handshake)
            if !hello.legacySessionID.isEmpty { output.toPeer += TLSRecord.encode(type: .changeCipherSpec, body: [1]) }
            state = .awaitingClientHello(retried: true)
            return
        }
        guard let (chain, key) = configuration.certificate(serverName) else {
            throw TLSError(.unrecognizedName, "no certificate for \(serverName ?? "a hello without a name")")
        }
        let privateKey = configuration.randomBytes(32)
        guard let publicKey = X25519.publicKey(privateKey: privateKey),
              let shared = X25519.sharedSecret(privateKey: privateKey, peerPublicKey: share.keyExchange)
        else { throw TLSError(.illegalParameter, "an X25519 share that is not a usable key") }

        transcript.append(raw)
        let serverHello = ServerHello(random: configuration.randomBytes(32), legacySessionIDEcho: hello.legacySessionID,
                                      cipherSuite: suite.rawValue,
                                      extensions: [TLSExtension(type: .keyShare, data: Self.keyShare(publicKey)),
                                                   ServerHello.supportedVersionsExtension()])
        let encodedHello = serverHello.encode()
        transcript.append(encodedHello)
        output.toPeer += records.write(encodedHello, type: .handshake)
        // §D.4: a client in compatibility mode (a session ID) expects one.
        if !hello.legacySessionID.isEmpty, !retried { output.toPeer += TLSRecord.encode(type: .changeCipherSpec, body: [1]) }

        let handshakeSecret = KeySchedule<SHA256>.handshakeSecret(sharedSecret: shared)
        let helloHash = transcript.hash(SHA256.self)
        clientHandshakeSecret = KeySchedule<SHA256>.deriveSecret(handshakeSecret, label: "c hs traffic", transcriptHash: helloHash)
        let serverHandshakeSecret = KeySchedule<SHA256>.deriveSecret(handshakeSecret, label: "s hs traffic", transcriptHash: helloHash)
        try switchReading(to: clientHandshakeSecret)
        records.writing = RecordProtection(suite: suite, trafficSecret: serverHandshakeSecret)

        var flight: [UInt8] = []
        var extensions: [TLSExtension] = []
        if let applicationProtocol {
            extensions.append(TLSExtension(type: .applicationLayerProtocolNegotiation, data: ApplicationProtocols.encode([applicationProtocol])))
        }
        // RFC 6066 §3: an empty server_name says the name was used.
        if serverName != nil { extensions.append(TLSExtension(type: .serverName, data: [])) }
        for message in [EncryptedExtensions(extensions: extensions).encode(), CertificateMessage(certificates: chain).encode()] {
            transcript.append(message)
            flight += message
        }
        let signedContent = CertificateVerify.signedContent(server: true, transcriptHash: transcript.hash(SHA256.self))
        let signature = key.signature(forDigest: SHA256.hash(signedContent)).derRepresentation
        let verify = CertificateVerify(algorithm: .ecdsaSecp256r1SHA256, signature: signature).encode()
        transcript.append(verify)
        flight += verify
        let finished = Finished(verifyData: KeySchedule<SHA256>.finishedVerifyData(baseKey: serverHandshakeSecret,
                                                                                  transcriptHash: transcript.hash(SHA256.self))).encode()
        transcript.append(finished)
        flight += finished
        output.toPeer += records.write(flight, type: .handshake)

        let masterSecret = KeySchedule<SHA256>.masterSecret(handshakeSecret: handshakeSecret)
        let serverFinishedHash = transcript.hash(SHA256.self)
        clientApplicationSecret = KeySchedule<SHA256>.deriveSecret(masterSecret, label: "c ap traffic", transcriptHash: serverFinishedHash)
        serverApplicationSecret = KeySchedule<SHA256>.deriveSecret(masterSecret, label: "s ap traffic", transcriptHash: serverFinishedHash)
        // §4.4.4: the server may send application data before the client's Finished.
        records.writing = RecordProtection(suite: suite, trafficSecret: serverApplicationSecret)
        state = .awaitingClientFinished
    }

    private static func keyShare(_ publicKey: [UInt8]) -> [UInt8] {
        var writer = TLSWriter()
        KeyShareEntry(group: .x25519, keyExchange: publicKey).write(to: &writer)
        return writer.bytes
    }
}
