import Crypto
import Testing
import TLS
import X509

// TLS 1.2 in Sluice's client (RFC 5246, 5288, 7627, 7905, 5746, 8422), in
// memory: the first flight it sends, the ServerHellos it must refuse, and
// whole handshakes against a small TLS 1.2 server written here from the RFCs
// (its own records, PRF, key block, Finished), so the client is checked
// against an independent reading rather than against itself.

// MARK: - The first flight

@Suite struct TLS12ClientHelloTests {
    let fixtures: HandshakeFixtures

    init() throws { fixtures = try HandshakeFixtures() }

    @Test func theHelloOffersTLS13ThenTLS12() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        let (hello, raw, _) = try scriptedClientHello(client.start())
        #expect(try hello.supportedVersions() == [0x0304, 0x0303])
        // §4.1.2 of RFC 8446 and RFC 5246 §7.4.1.2: legacy_version is TLS 1.2.
        #expect(Array(raw[4 ..< 6]) == [3, 3])
        // Compatibility mode keeps its 32-byte session ID; a TLS 1.2 server may not resume it.
        #expect(hello.legacySessionID.count == 32)
        #expect(client.negotiatedVersion == nil)
        #expect(client.negotiatedSuiteName == nil)
    }

    @Test func theHelloOffersTheTwoTLS13SuitesAndTheFourTLS12SuitesOnly() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        let (hello, _, _) = try scriptedClientHello(client.start())
        let suites = hello.cipherSuites
        for suite: UInt16 in [0x1301, 0x1303, 0xCCA9, 0xCCA8, 0xC02B, 0xC02F] {
            #expect(suites.contains(suite), "0x\(String(suite, radix: 16)) is not offered: \(suites)")
        }
        // Nothing else (no AES-256, no CBC, no static RSA), save RFC 5746's signalling value.
        let others = suites.filter { ![0x1301, 0x1303, 0xCCA9, 0xCCA8, 0xC02B, 0xC02F, 0x00FF].contains($0) }
        #expect(others.isEmpty, "also offered: \(others.map { String($0, radix: 16) })")
        #expect(Set(suites).count == suites.count, "a suite offered twice: \(suites)")
    }

    @Test func theHelloCarriesTheTLS12Extensions() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        let (hello, _, _) = try scriptedClientHello(client.start())
        let extensions = hello.extensions
        // RFC 8422 §5.1.2: uncompressed points only.
        #expect(extensions[ExtensionType(rawValue: 11)] == [1, 0])
        // RFC 7627 §5.1: extended_master_secret, empty.
        #expect(extensions[ExtensionType(rawValue: 23)] == [])
        // RFC 5746 §3.4: renegotiation_info with an empty renegotiated_connection (one zero length byte).
        #expect(extensions[ExtensionType(rawValue: 0xFF01)] == [0])
        #expect(try hello.supportedGroups().first == .x25519)
        let schemes = try hello.signatureAlgorithms()
        for scheme in [SignatureScheme.ecdsaSecp256r1SHA256, .rsaPKCS1SHA256, .rsaPSSRSAESHA256] {
            #expect(schemes.contains(scheme), "\(scheme) missing from \(schemes)")
        }
        #expect(try hello.serverName() == HandshakeFixtures.host)
        #expect(try hello.applicationProtocols() == [Array("http/1.1".utf8)])
        // TLS 1.3's share is still there.
        #expect(try hello.keyShares().map(\.group) == [.x25519])
        // Each extension once (RFC 5246 §7.4.1.4).
        let types = extensions.map(\.type.rawValue)
        #expect(Set(types).count == types.count)
    }

    // X25519 first, then P-256 and P-384, each of which the client can agree
    // in; the share is X25519's alone (a server without it asks or chooses).
    @Test func theGroupsOfferedAreX25519P256AndP384() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        let (hello, _, _) = try scriptedClientHello(client.start())
        #expect(try hello.supportedGroups() == [.x25519, .secp256r1, .secp384r1])
        #expect(try hello.keyShares().map(\.group) == [.x25519])
    }

    @Test func theHelloHasNoServerNameForAnAddress() throws {
        var configuration = fixtures.clientConfiguration()
        configuration.serverName = nil
        var client = TLSClient(configuration: configuration)
        let (hello, _, _) = try scriptedClientHello(client.start())
        #expect(try hello.serverName() == nil)
        #expect(try hello.supportedVersions() == [0x0304, 0x0303])
    }

    // TLS 1.3 against Sluice's own server still wins, and is what is reported.
    @Test(arguments: [(CipherSuite.chacha20Poly1305SHA256, "TLS_CHACHA20_POLY1305_SHA256"), (.aes128GCMSHA256, "TLS_AES_128_GCM_SHA256")])
    func aTLS13ServerStillGetsTLS13(suite: CipherSuite, name: String) throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration(suites: [suite]))
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        var toServer = client.start()
        var completed = false
        for _ in 0 ..< 10 where !toServer.isEmpty {
            let fromServer = try server.receive(toServer).toPeer
            let output = try client.receive(fromServer)
            completed = completed || output.handshakeCompleted
            toServer = output.toPeer
        }
        #expect(completed)
        #expect(client.state == .connected)
        #expect(client.negotiatedVersion == 0x0304)
        #expect(client.negotiatedSuiteName == name)
    }
}

// MARK: - ServerHellos the client refuses

@Suite struct TLS12ServerHelloRefusalTests {
    let fixtures: HandshakeFixtures

    init() throws { fixtures = try HandshakeFixtures() }

    /// Runs a handshake against the scripted server with `options`; the
    /// client's error, and the alert record it owes, or nil when it went through.
    func refusal(_ options: Scripted12Server.Options) throws -> (error: TLSError, alertRecord: [UInt8])? {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        var server = Scripted12Server(fixtures: fixtures, options: options)
        let flight = try server.answerHello(client.start())
        var reply: TLSOutput
        do { reply = try deliver(flight, to: &client) } catch { return (error, client.alertRecord(for: error)) }
        guard !reply.toPeer.isEmpty else { return nil }
        let last = try server.answerClientFlight(reply.toPeer)
        do { _ = try deliver(last, to: &client) } catch { return (error, client.alertRecord(for: error)) }
        return nil
    }

    func expectRefusal(_ options: Scripted12Server.Options, _ alert: TLSAlert, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let (error, record) = try refusal(options) else {
            Issue.record("the client accepted it", sourceLocation: sourceLocation)
            return
        }
        #expect(error.alert == alert, "\(error)", sourceLocation: sourceLocation)
        #expect(!error.sentByPeer, sourceLocation: sourceLocation)
        // Refused before any key change, so the alert goes in the clear.
        #expect(record == [21, 3, 3, 0, 2, 2, alert.rawValue], "alert record \(record)", sourceLocation: sourceLocation)
    }

    // RFC 8446 §4.1.3: a TLS 1.3 client that gets a TLS 1.2 ServerHello whose
    // random ends in DOWNGRD\x01 (or \x00, for 1.1 and below) is being
    // downgraded by someone in the middle.
    @Test func theTLS12DowngradeSentinelIsRefused() throws {
        var options = Scripted12Server.Options()
        options.serverRandom = [UInt8](repeating: 0x5A, count: 24) + Wire12.downgradeTLS12
        try expectRefusal(options, .illegalParameter)
    }

    @Test func theTLS11DowngradeSentinelIsRefusedToo() throws {
        var options = Scripted12Server.Options()
        options.serverRandom = [UInt8](repeating: 0x5A, count: 24) + Wire12.downgradeTLS11
        try expectRefusal(options, .illegalParameter)
    }

    // Only the last eight bytes are the sentinel.
    @Test func theSentinelElsewhereInTheRandomIsNotADowngrade() throws {
        var options = Scripted12Server.Options()
        options.serverRandom = Wire12.downgradeTLS12 + [UInt8](repeating: 0x5A, count: 24)
        #expect(try refusal(options) == nil)
    }

    // AES-256 and CBC (not offered), static RSA, and TLS 1.3's own suite in a TLS 1.2 ServerHello.
    @Test(arguments: [UInt16(0xC030), 0xC02C, 0xC013, 0x009C, 0x002F, 0x1301, 0x1303, 0x00FF])
    func aSuiteNotOfferedForTLS12IsRefused(suite: UInt16) throws {
        var options = Scripted12Server.Options()
        options.suite = suite
        try expectRefusal(options, .illegalParameter)
    }

    // RFC 5246 §7.4.1.3: an echoed session ID means resumption, which Sluice never asked for
    // (its session ID is TLS 1.3's compatibility-mode value).
    @Test func anEchoOfTheClientsSessionIDIsRefused() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        let first = client.start()
        let (hello, _, _) = try scriptedClientHello(first)
        var options = Scripted12Server.Options()
        options.sessionID = hello.legacySessionID
        var server = Scripted12Server(fixtures: fixtures, options: options)
        let flight = try server.answerHello(first)
        do {
            _ = try deliver(flight, to: &client)
            Issue.record("the client took an echoed session ID for a new TLS 1.2 session")
        } catch {
            #expect(error.alert == .illegalParameter, "\(error)")
        }
    }

    // RFC 5246 §7.4.1.4: extensions in the ServerHello must answer the client's.
    @Test(arguments: [UInt16(35), 5, 18, 22, 0x3374, 0x1234])
    func anExtensionTheClientDidNotSendIsRefused(type: UInt16) throws {
        var probe = TLSClient(configuration: fixtures.clientConfiguration())
        let offered = try scriptedClientHello(probe.start()).hello.extensions.map(\.type.rawValue)
        guard !offered.contains(type) else { return } // the client sends this one: not a refusal case
        var options = Scripted12Server.Options()
        options.extraExtensions = [(type, [])]
        try expectRefusal(options, .unsupportedExtension)
    }

    // RFC 5746 §3.4: the server's renegotiated_connection must be empty on a first handshake.
    @Test func aNonEmptyRenegotiationInfoIsRefused() throws {
        var options = Scripted12Server.Options()
        options.renegotiationInfo = [12] + [UInt8](repeating: 7, count: 12)
        try expectRefusal(options, .handshakeFailure)
    }

    @Test func aTLS11ServerHelloIsRefusedWithProtocolVersion() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        _ = client.start()
        let body: [UInt8] = [3, 2] + [UInt8](repeating: 0x11, count: 32) + [0] + Wire12.u16(0xC02B) + [0] + Wire12.extensions([(0xFF01, [0])])
        do {
            _ = try client.receive(Wire12.record(22, Wire12.message(2, body)))
            Issue.record("the client accepted TLS 1.1")
        } catch {
            #expect(error.alert == .protocolVersion, "\(error)")
        }
    }

    // A TLS 1.3 ServerHello must choose a TLS 1.3 suite.
    @Test func aTLS13ServerHelloWithATLS12SuiteIsRefused() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        let (hello, _, _) = try scriptedClientHello(client.start())
        let share = X25519.publicKey(privateKey: [UInt8](repeating: 9, count: 32))!
        let extensions = Wire12.extensions([(43, [3, 4]), (51, Wire12.u16(0x1D) + Wire12.u16(32) + share)])
        let body: [UInt8] = [3, 3] + [UInt8](repeating: 0x22, count: 32) + [32] + hello.legacySessionID + Wire12.u16(0xCCA9) + [0] + extensions
        do {
            _ = try client.receive(Wire12.record(22, Wire12.message(2, body)))
            Issue.record("the client accepted a TLS 1.2 suite in TLS 1.3")
        } catch {
            #expect(error.alert == .illegalParameter, "\(error)")
        }
    }
}

// MARK: - Whole handshakes against the scripted server

@Suite struct TLS12ScriptedServerTests {
    let fixtures: HandshakeFixtures

    init() throws { fixtures = try HandshakeFixtures() }

    struct Case: Sendable, CustomTestStringConvertible {
        var suite: UInt16
        var name: String
        var extendedMasterSecret: Bool
        var certificateRequest: Bool
        var testDescription: String { "\(name) EMS=\(extendedMasterSecret) CR=\(certificateRequest)" }
    }

    static let cases: [Case] = [(UInt16(0xCCA9), "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"), (0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")]
        .flatMap { suite, name in
            [false, true].flatMap { ems in [false, true].map { cr in Case(suite: suite, name: name, extendedMasterSecret: ems, certificateRequest: cr) } }
        }

    /// A handshake through to the end; the server's flight arrives `chunk` bytes at a time.
    func connect(_ options: Scripted12Server.Options, chunk: Int = .max) throws -> (TLSClient, Scripted12Server) {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        var server = Scripted12Server(fixtures: fixtures, options: options)
        let flight = try server.answerHello(client.start())
        let reply = try deliver(flight, to: &client, chunk: chunk)
        #expect(!reply.handshakeCompleted)
        #expect(reply.applicationData.isEmpty)
        let last = try server.answerClientFlight(reply.toPeer)
        let done = try deliver(last, to: &client, chunk: chunk)
        #expect(done.handshakeCompleted)
        #expect(done.toPeer.isEmpty, "the client wrote \(done.toPeer.count) bytes after the server's Finished")
        #expect(client.state == .connected)
        return (client, server)
    }

    @Test(arguments: cases)
    func aFullHandshakeCompletesAndDataFlowsBothWays(testCase: Case) throws {
        var options = Scripted12Server.Options()
        options.suite = testCase.suite
        options.echoExtendedMasterSecret = testCase.extendedMasterSecret
        options.certificateRequest = testCase.certificateRequest
        var (client, server) = try connect(options)
        #expect(client.negotiatedVersion == 0x0303)
        #expect(client.negotiatedSuiteName == testCase.name)
        #expect(client.applicationProtocol == Array("http/1.1".utf8))
        if testCase.certificateRequest {
            // §7.4.6: no certificate, so an empty certificate_list, and no CertificateVerify.
            #expect(server.clientCertificateBody == [0, 0, 0])
            #expect(server.clientMessageTypes == [11, 16, 20])
        } else {
            #expect(server.clientCertificateBody == nil)
            #expect(server.clientMessageTypes == [16, 20])
        }

        // A request up, a response of several records down.
        let request = Array("GET / HTTP/1.1\r\nHost: shop.sluice.test\r\n\r\n".utf8)
        let up = try server.receive(client.send(request))
        #expect(up.map(\.type) == [23])
        #expect(up.flatMap(\.content) == request)
        let response = (0 ..< 40000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
        let down = try deliver(server.send(response), to: &client)
        #expect(down.applicationData == response)
        #expect(down.toPeer.isEmpty)

        // A long upload: records of at most 2^14 bytes (RFC 5246 §6.2.1).
        let upload = (0 ..< 50000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let uploaded = try server.receive(client.send(upload))
        #expect(uploaded.flatMap(\.content) == upload)
        #expect(uploaded.allSatisfy { $0.type == 23 && $0.content.count <= 16384 })

        // RFC 5288 §3: each GCM record's explicit nonce is new.
        if server.gcm {
            #expect(Set(server.clientExplicitNonces).count == server.clientExplicitNonces.count)
            #expect(server.clientExplicitNonces.allSatisfy { $0.count == 8 })
        }

        // close_notify each way, protected.
        let closing = try server.receive(client.close())
        #expect(closing.count == 1 && closing[0].type == 21 && closing[0].content == [1, 0])
        #expect(try deliver(server.sendProtected(type: 21, [1, 0]), to: &client).peerClosed)
    }

    // §7.4.1.1: a HelloRequest once connected may be ignored; Sluice does not renegotiate.
    @Test(arguments: [UInt16(0xCCA9), 0xC02B])
    func aHelloRequestIsIgnored(suite: UInt16) throws {
        var options = Scripted12Server.Options()
        options.suite = suite
        var (client, server) = try connect(options)
        let output = try deliver(server.sendProtected(type: 22, [0, 0, 0, 0]) + server.send(Array("after".utf8)), to: &client)
        #expect(output.applicationData == Array("after".utf8))
        // Nothing back, or at most a no_renegotiation warning.
        let answer = try server.receive(output.toPeer)
        #expect(answer.isEmpty || (answer.count == 1 && answer[0].type == 21 && answer[0].content == [1, 100]), "\(answer)")
        #expect(client.state == .connected)
        // Data still flows both ways.
        #expect(try server.receive(client.send(Array("still here".utf8))).flatMap(\.content) == Array("still here".utf8))
        #expect(try deliver(server.send([1, 2, 3]), to: &client).applicationData == [1, 2, 3])
    }

    // Framing: the flight byte by byte, and cut into 7-byte records so that messages span records.
    @Test(arguments: [UInt16(0xCCA9), 0xC02B])
    func theServersFlightMayArriveInAnyPieces(suite: UInt16) throws {
        var options = Scripted12Server.Options()
        options.suite = suite
        options.certificateRequest = true
        _ = try connect(options, chunk: 1)
        options.recordSize = 7
        _ = try connect(options)
        options.recordSize = 1
        _ = try connect(options, chunk: 3)
    }

    @Test func aServerWithoutALPNOrPointFormatsOrASessionIDIsFine() throws {
        var options = Scripted12Server.Options()
        options.alpn = false
        options.ecPointFormats = false
        options.sessionID = []
        let (client, _) = try connect(options)
        #expect(client.applicationProtocol == nil)
        #expect(client.negotiatedVersion == 0x0303)
    }

    // MARK: Tampering

    /// The handshake against `options`: the client's error (and its alert
    /// record, and the scripted server so the record can be opened), or nil.
    func failure(_ options: Scripted12Server.Options) throws -> (error: TLSError, alertRecord: [UInt8], server: Scripted12Server)? {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        var server = Scripted12Server(fixtures: fixtures, options: options)
        let flight = try server.answerHello(client.start())
        let reply: TLSOutput
        do { reply = try deliver(flight, to: &client) } catch { return (error, client.alertRecord(for: error), server) }
        let last = try server.answerClientFlight(reply.toPeer)
        do { _ = try deliver(last, to: &client) } catch { return (error, client.alertRecord(for: error), server) }
        return nil
    }

    @Test(arguments: [Scripted12Server.Options.Signature.corrupt, .swappedRandoms])
    func aServerKeyExchangeWhoseSignatureDoesNotVerifyIsRefused(signature: Scripted12Server.Options.Signature) throws {
        var options = Scripted12Server.Options()
        options.signature = signature
        let failed = try #require(try failure(options), "the client accepted a bad ServerKeyExchange signature")
        #expect(failed.error.alert == .decryptError, "\(failed.error)")
        #expect(failed.alertRecord == [21, 3, 3, 0, 2, 2, 51])
    }

    // RFC 8422 §5.4: the server picks a curve the client listed; one it did not
    // list is illegal_parameter.
    @Test(arguments: [UInt16(0x001E), 0x0019, 0x0018, 0x0017, 0x0016])
    func aGroupTheClientDidNotOfferIsRefused(group: UInt16) throws {
        var probe = TLSClient(configuration: fixtures.clientConfiguration())
        let offered = try scriptedClientHello(probe.start()).hello.supportedGroups().map(\.rawValue)
        guard !offered.contains(group) else { return } // offered: see everyGroupTheClientOffersIsOneItCanUse
        var options = Scripted12Server.Options()
        options.group = group
        let failed = try #require(try failure(options), "the client accepted group 0x\(String(group, radix: 16)), which it did not offer")
        #expect(failed.error.alert == .illegalParameter, "\(failed.error)")
    }

    // A client that lists a group in supported_groups must be able to use it:
    // a TLS 1.2 server picks from that list by its own preference, and a
    // refusal then fails a server that also had X25519.
    @Test func everyGroupTheClientOffersIsOneItCanUse() throws {
        var probe = TLSClient(configuration: fixtures.clientConfiguration())
        let offered = try scriptedClientHello(probe.start()).hello.supportedGroups().map(\.rawValue)
        #expect(offered.contains(0x001D))
        for group in offered {
            var options = Scripted12Server.Options()
            options.group = group
            if group == 0x001D || group == 0x0017 {
                let (client, _) = try connect(options)
                #expect(client.negotiatedVersion == 0x0303, "group 0x\(String(group, radix: 16))")
                continue
            }
            // The scripted server cannot do this group's ECDH; the client must at least answer with its share.
            var client = TLSClient(configuration: fixtures.clientConfiguration())
            var server = Scripted12Server(fixtures: fixtures, options: options)
            let flight = try server.answerHello(client.start())
            do {
                let reply = try deliver(flight, to: &client)
                #expect(!reply.toPeer.isEmpty, "no ClientKeyExchange for group 0x\(String(group, radix: 16))")
            } catch {
                Issue.record("the client offers group 0x\(String(group, radix: 16)) but refuses a ServerKeyExchange in it: \(error)")
            }
        }
    }

    @Test func aServerKeyExchangeWithExplicitCurveParametersIsRefused() throws {
        var options = Scripted12Server.Options()
        options.curveType = 1 // explicit_prime, deprecated by RFC 8422 §5.4
        let failed = try #require(try failure(options), "the client accepted explicit_prime parameters")
        #expect(!failed.error.sentByPeer)
    }

    // RFC 5246 §7.4.1.4.1: the signature's scheme must be one the client offered
    // (ecdsa_sha1, 0x0203, is not), and fit the key (rsa_pkcs1_sha256 does not fit P-256).
    @Test(arguments: [UInt16(0x0203), 0x0401, 0x0804])
    func aServerKeyExchangeSignedWithAnUnfitSchemeIsRefused(scheme: UInt16) throws {
        var options = Scripted12Server.Options()
        options.signatureScheme = scheme
        let failed = try #require(try failure(options), "the client accepted scheme 0x\(String(scheme, radix: 16))")
        #expect(!failed.error.sentByPeer)
    }

    // An ECDHE_RSA suite with an ECDSA certificate.
    @Test(arguments: [UInt16(0xCCA8), 0xC02F])
    func anRSASuiteWithAnECDSACertificateIsRefused(suite: UInt16) throws {
        var options = Scripted12Server.Options()
        options.suite = suite
        let failed = try #require(try failure(options), "the client accepted an RSA suite signed by a P-256 key")
        #expect(!failed.error.sentByPeer)
    }

    @Test func aFlightWithoutServerKeyExchangeIsRefused() throws {
        var options = Scripted12Server.Options()
        options.sendServerKeyExchange = false
        let failed = try #require(try failure(options), "the client went on without the server's ECDHE share")
        #expect(failed.error.alert == .unexpectedMessage, "\(failed.error)")
    }

    @Test(arguments: [UInt16(0xCCA9), 0xC02B])
    func aBadServerFinishedIsRefusedUnderTheNewKeys(suite: UInt16) throws {
        var options = Scripted12Server.Options()
        options.suite = suite
        options.corruptFinished = true
        var failed = try #require(try failure(options), "the client accepted a bad Finished")
        #expect(failed.error.alert == .decryptError, "\(failed.error)")
        // The client has sent its ChangeCipherSpec: its alert is protected under its write key.
        let opened = try failed.server.receive(failed.alertRecord)
        #expect(opened.count == 1 && opened[0].type == 21 && opened[0].content == [2, 51], "\(opened)")
    }

    // RFC 7748 §6.1 / RFC 8422 §5.11: a low-order X25519 point makes an all-zero secret.
    @Test func anAllZeroX25519ResultIsRefused() throws {
        var options = Scripted12Server.Options()
        options.pointOverride = [UInt8](repeating: 0, count: 32)
        let failed = try #require(try failure(options), "the client used an all-zero shared secret")
        #expect(failed.error.alert == .illegalParameter, "\(failed.error)")
    }

    // RFC 7301 §3.2: the server's choice must be one the client offered.
    @Test func anALPNChoiceTheClientDidNotOfferIsRefused() throws {
        var options = Scripted12Server.Options()
        options.alpnProtocol = "h2"
        let failed = try #require(try failure(options), "the client accepted h2, which it did not offer")
        #expect(!failed.error.sentByPeer)
    }

    // Application data before the server's Finished: the handshake is not done (§7.4.9).
    @Test func applicationDataBeforeTheServersFinishedIsRefused() throws {
        var options = Scripted12Server.Options()
        options.applicationDataBeforeFinished = true
        let failed = try #require(try failure(options), "the client took application data before the server's Finished")
        #expect(failed.error.alert == .unexpectedMessage, "\(failed.error)")
    }

    @Test func aFinishedWithoutChangeCipherSpecIsRefused() throws {
        var options = Scripted12Server.Options()
        options.finishedWithoutChangeCipherSpec = true
        let failed = try #require(try failure(options), "the client read a Finished without a ChangeCipherSpec")
        #expect(!failed.error.sentByPeer)
    }

    @Test(arguments: [UInt16(0xCCA9), 0xC02B])
    func aDamagedRecordIsRefusedWithBadRecordMAC(suite: UInt16) throws {
        var options = Scripted12Server.Options()
        options.suite = suite
        var (client, server) = try connect(options)
        for position in [5, 12] { // GCM: inside the explicit nonce, then the ciphertext
            var copy = client
            var serverCopy = server
            var record = serverCopy.send(Array("hello, client".utf8))
            record[position] ^= 0x04
            do {
                _ = try copy.receive(record)
                Issue.record("a record damaged at byte \(position) was accepted")
            } catch {
                #expect(error.alert == .badRecordMAC, "\(error)")
            }
        }
        // A replayed record (same bytes twice) is refused too: the sequence number moved on.
        let record = server.send(Array("once".utf8))
        #expect(try client.receive(record).applicationData == Array("once".utf8))
        do {
            _ = try client.receive(record)
            Issue.record("a replayed record was accepted")
        } catch {
            #expect(error.alert == .badRecordMAC, "\(error)")
        }
    }
}
