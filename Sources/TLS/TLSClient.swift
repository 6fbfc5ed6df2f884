internal import Crypto

/// The client side of TLS 1.3 (RFC 8446), as Sluice speaks it to the real
/// server behind an intercepted connection: X25519 (P-256 or P-384 when a
/// server asks), both AEADs, the server's chain checked by the engine's
/// verifier, no resumption or 0-RTT (tickets are read and dropped), no
/// client certificate. The same hello offers TLS 1.2 (RFC 5246) for servers
/// that have nothing newer: ECDHE in those groups with the same two AEADs
/// (TLSClient+TLS12.swift).
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
        /// TLS 1.2's, after them; empty offers TLS 1.3 alone.
        package var tls12CipherSuites: [TLS12CipherSuite] = TLS12CipherSuite.preference

        package init(serverName: String?, applicationProtocols: [[UInt8]], randomBytes: @escaping (Int) -> [UInt8],
                     verifyChain: @escaping ([[UInt8]]) throws(TLSError) -> ServerPublicKey)
        {
            self.serverName = serverName
            self.applicationProtocols = applicationProtocols
            self.randomBytes = randomBytes
            self.verifyChain = verifyChain
        }
    }

    let configuration: Configuration
    var records = RecordLayer()
    var transcript = Transcript()
    package internal(set) var state: TLSHandshakeState = .awaitingServerHello(retried: false)
    /// The key of the hello's share: X25519, or the group a TLS 1.3
    /// HelloRetryRequest asked for (§4.1.4). Nil once the secret is agreed.
    var keyAgreement: KeyAgreement?
    var sessionID: [UInt8] = []
    var hello: ClientHello
    var suite: CipherSuite = .aes128GCMSHA256
    private var handshakeSecret: [UInt8] = []
    private var clientHandshakeSecret: [UInt8] = []
    private var serverHandshakeSecret: [UInt8] = []
    private var clientApplicationSecret: [UInt8] = []
    private var serverApplicationSecret: [UInt8] = []
    var serverKey: ServerPublicKey?
    package internal(set) var applicationProtocol: [UInt8]?
    /// What the ServerHello chose: 0x0304 (TLS 1.3) or 0x0303 (TLS 1.2); nil before it.
    package internal(set) var negotiatedVersion: UInt16?
    /// The chosen suite's IANA name ("TLS_AES_128_GCM_SHA256",
    /// "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"); nil before the ServerHello.
    package internal(set) var negotiatedSuiteName: String?
    /// TLS 1.2 only: what its handshake carries from message to message.
    var tls12 = TLS12Handshake()

    /// Ready to `start()`.
    package init(configuration: Configuration) {
        self.configuration = configuration
        keyAgreement = KeyAgreement(group: .x25519, randomBytes: configuration.randomBytes)
        // §D.4: compatibility mode, so middleboxes see what looks like a resumed TLS 1.2 session.
        sessionID = configuration.randomBytes(32)
        hello = ClientHello(random: configuration.randomBytes(32), legacySessionID: sessionID,
                            cipherSuites: configuration.cipherSuites.map(\.rawValue) + configuration.tls12CipherSuites.map(\.rawValue),
                            extensions: [])
        hello.extensions = extensions(keyShare: KeyShareEntry(group: .x25519, keyExchange: keyAgreement?.publicShare ?? []))
    }

    /// §4.2.7, most preferred first. The first hello's share is X25519's; a
    /// TLS 1.3 server without it asks for another with a retry, and a TLS
    /// 1.2 server picks one in its ServerKeyExchange. For TLS 1.2 the list
    /// also names the curves of the server's certificate (RFC 8422 §5.1.1),
    /// so a server with a P-384 certificate answers only if P-384 is in it.
    static let supportedGroups: [NamedGroup] = KeyAgreement.groups

    private func extensions(keyShare: KeyShareEntry, cookie: [UInt8]? = nil) -> [TLSExtension] {
        var list: [TLSExtension] = []
        if let name = configuration.serverName {
            var writer = TLSWriter()
            writer.vector(lengthSize: 2) { list in
                list.u8(0)
                list.vector(lengthSize: 2, bytes: Array(name.utf8))
            }
            list.append(TLSExtension(type: .serverName, data: writer.bytes))
        }
        let offersTLS12 = !configuration.tls12CipherSuites.isEmpty
        list.append(TLSExtension(type: .supportedVersions, data: offersTLS12 ? [4, 0x03, 0x04, 0x03, 0x03] : [2, 0x03, 0x04]))
        var groups = TLSWriter()
        groups.vector(lengthSize: 2) { list in
            for group in Self.supportedGroups { list.u16(group.rawValue) }
        }
        list.append(TLSExtension(type: .supportedGroups, data: groups.bytes))
        var schemes = TLSWriter()
        schemes.vector(lengthSize: 2) { list in
            for scheme in ServerPublicKey.offeredSchemes { list.u16(scheme.rawValue) }
        }
        list.append(TLSExtension(type: .signatureAlgorithms, data: schemes.bytes))
        var share = TLSWriter()
        share.vector(lengthSize: 2) { keyShare.write(to: &$0) }
        list.append(TLSExtension(type: .keyShare, data: share.bytes))
        // §4.2.9: without it a server may not send tickets it would not use anyway.
        list.append(TLSExtension(type: .pskKeyExchangeModes, data: [1, 1]))
        if !configuration.applicationProtocols.isEmpty {
            list.append(TLSExtension(type: .applicationLayerProtocolNegotiation,
                                     data: ApplicationProtocols.encode(configuration.applicationProtocols)))
        }
        if let cookie { list.append(TLSExtension(type: .cookie, data: cookie)) }
        if offersTLS12 {
            // TLS 1.2's: uncompressed points only (RFC 8422 §5.1.2), the
            // extended master secret (RFC 7627 §5.1), and the empty
            // renegotiation_info of a first handshake (RFC 5746 §3.4).
            list.append(TLSExtension(type: .ecPointFormats, data: [1, 0]))
            list.append(TLSExtension(type: .extendedMasterSecret, data: []))
            list.append(TLSExtension(type: .renegotiationInfo, data: [0]))
        }
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
        case (.awaitingServerCertificate12, .certificate):
            // RFC 5246 §7.4.2.
            try serverCertificate12(message)
        case (.awaitingServerKeyExchange12, .serverKeyExchange):
            // RFC 8422 §5.4: ECDHE suites always send one.
            try serverKeyExchange12(message)
        case (.awaitingServerHelloDone12, .certificateRequest):
            // RFC 5246 §7.4.4: answered with an empty Certificate after ServerHelloDone.
            try certificateRequest12(message)
        case (.awaitingServerHelloDone12, .serverHelloDone):
            // RFC 5246 §7.4.5, then the client's flight (§7.3).
            try serverHelloDone12(message, into: &output)
        case (.awaitingServerFinished12, .finished):
            // RFC 5246 §7.4.9, after the server's change_cipher_spec.
            try serverFinished12(message, into: &output)
        case (.connected, .helloRequest):
            // RFC 5246 §7.4.1.1: a client may ignore it; Sluice never renegotiates.
            guard records.tls12, message.raw.count == 4 else { throw TLSError(.unexpectedMessage, "a HelloRequest") }
        case (.connected, .newSessionTicket):
            // §4.6.1: Sluice does not resume, so tickets are dropped. TLS 1.2
            // servers send them only to clients that ask (RFC 5077 §3.2).
            guard !records.tls12 else { throw TLSError(.unexpectedMessage, "a NewSessionTicket Sluice did not ask for") }
        case (.connected, .keyUpdate):
            guard !records.tls12 else { throw TLSError(.unexpectedMessage, "a KeyUpdate in TLS 1.2") }
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
             (.awaitingClientHello, _), (.awaitingClientFinished, _), (.awaitingServerCertificate12, _),
             (.awaitingServerKeyExchange12, _), (.awaitingServerHelloDone12, _), (.awaitingServerFinished12, _):
            // A CertificateRequest lands here too: Sluice has no client certificate to give.
            throw TLSError(.unexpectedMessage, "\(message.type) in state \(state)")
        }
    }

    private mutating func serverHello(_ serverHello: ServerHello, raw: [UInt8], retried: Bool,
                                      into output: inout TLSOutput) throws(TLSError)
    {
        // §4.1.3-§4.1.4: the version, the session ID echo and the suite are checked first.
        guard let version = try serverHello.selectedVersion() else {
            // No supported_versions: a TLS 1.2 server (§4.1.3), if 1.2 was offered.
            guard !configuration.tls12CipherSuites.isEmpty else {
                throw TLSError(.protocolVersion, "the server does not speak TLS 1.3")
            }
            guard !retried else { throw TLSError(.illegalParameter, "TLS 1.2 after a HelloRetryRequest") }
            try serverHello12(serverHello, raw: raw)
            return
        }
        // §4.2.1: a version the client did not offer, or one below 1.3 named here.
        guard version == ProtocolVersion.tls13 else {
            throw TLSError(.illegalParameter, "supported_versions names 0x\(String(version, radix: 16))")
        }
        guard serverHello.legacySessionIDEcho == sessionID else { throw TLSError(.illegalParameter, "the session ID is not echoed") }
        guard let chosen = CipherSuite(rawValue: serverHello.cipherSuite), hello.cipherSuites.contains(chosen.rawValue) else {
            throw TLSError(.illegalParameter, "the server chose a suite Sluice did not offer")
        }
        if retried, chosen != suite { throw TLSError(.illegalParameter, "the suite changed after a retry") }
        suite = chosen
        negotiatedVersion = ProtocolVersion.tls13
        negotiatedSuiteName = chosen.description
        if serverHello.isHelloRetryRequest {
            // §4.1.4: only once, and only for something that changes the hello:
            // a cookie, or a group Sluice offered and sent no share for. Of
            // those, Sluice can make a P-256 share.
            guard !retried else { throw TLSError(.unexpectedMessage, "a second HelloRetryRequest") }
            let cookie = serverHello.extensions[.cookie]
            if let group = try serverHello.selectedGroup() {
                guard group != keyAgreement?.group, Self.supportedGroups.contains(group),
                      let agreement = KeyAgreement(group: group, randomBytes: configuration.randomBytes)
                else {
                    throw TLSError(.illegalParameter, "a HelloRetryRequest for group 0x\(String(group.rawValue, radix: 16)), which Sluice offered no share for")
                }
                keyAgreement = agreement
            } else if cookie == nil {
                throw TLSError(.illegalParameter, "a HelloRetryRequest that changes nothing")
            }
            transcript.replaceWithMessageHash(SHA256.self)
            transcript.append(raw)
            // §4.1.2: the second hello is the first with the new share or the cookie.
            hello.extensions = extensions(keyShare: KeyShareEntry(group: keyAgreement?.group ?? .x25519, keyExchange: keyAgreement?.publicShare ?? []),
                                          cookie: cookie)
            let encoded = hello.encode()
            transcript.append(encoded)
            output.toPeer += TLSRecord.encode(type: .changeCipherSpec, body: [1]) + records.write(encoded, type: .handshake)
            state = .awaitingServerHello(retried: true)
            return
        }
        // §4.2.8: the server's share is in the group of Sluice's (last) share.
        guard let share = try serverHello.keyShare(), let agreement = keyAgreement, share.group == agreement.group,
              let shared = agreement.sharedSecret(peerShare: share.keyExchange)
        else { throw TLSError(.illegalParameter, "the server's key share is not a usable key in the group of Sluice's") }
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
        keyAgreement = nil
        state = .awaitingEncryptedExtensions
    }
}
