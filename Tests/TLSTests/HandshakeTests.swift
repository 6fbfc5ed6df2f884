import Crypto
import Testing
import TLS

/// Sluice's client against Sluice's server, in memory: the two halves of an
/// intercepted connection meeting each other, with a chain from the
/// interception CA that the client verifies as it would a real server's.
@Suite struct HandshakeTests {
    let fixtures: HandshakeFixtures

    init() throws { fixtures = try HandshakeFixtures() }

    /// Moves bytes both ways until neither side has more to say. Bounded.
    func run(_ client: inout TLSClient, _ server: inout TLSServer, first: [UInt8],
             chunk: Int = .max) throws -> (client: TLSOutput, server: TLSOutput)
    {
        var toServer = first
        var toClient: [UInt8] = []
        var clientTotal = TLSOutput()
        var serverTotal = TLSOutput()
        for _ in 0 ..< 20 where !toServer.isEmpty || !toClient.isEmpty {
            var offset = 0
            while offset < toServer.count {
                let end = min(offset + chunk, toServer.count)
                let output = try server.receive(Array(toServer[offset ..< end]))
                toClient += output.toPeer
                serverTotal.applicationData += output.applicationData
                serverTotal.handshakeCompleted = serverTotal.handshakeCompleted || output.handshakeCompleted
                serverTotal.peerClosed = serverTotal.peerClosed || output.peerClosed
                offset = end
            }
            toServer = []
            offset = 0
            while offset < toClient.count {
                let end = min(offset + chunk, toClient.count)
                let output = try client.receive(Array(toClient[offset ..< end]))
                toServer += output.toPeer
                clientTotal.applicationData += output.applicationData
                clientTotal.handshakeCompleted = clientTotal.handshakeCompleted || output.handshakeCompleted
                clientTotal.peerClosed = clientTotal.peerClosed || output.peerClosed
                offset = end
            }
            toClient = []
        }
        return (clientTotal, serverTotal)
    }

    @Test(arguments: [[CipherSuite.chacha20Poly1305SHA256, .aes128GCMSHA256], [.aes128GCMSHA256], [.chacha20Poly1305SHA256]])
    func theHandshakeCompletesAndDataFlowsBothWays(suites: [CipherSuite]) throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration(suites: suites))
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        let hello = client.start()
        let (clientSide, serverSide) = try run(&client, &server, first: hello)
        #expect(clientSide.handshakeCompleted && serverSide.handshakeCompleted)
        #expect(client.state == .connected && server.state == .connected)
        #expect(server.negotiatedSuite == suites.first)
        #expect(server.serverName == HandshakeFixtures.host)
        #expect(server.applicationProtocol == Array("http/1.1".utf8))
        #expect(client.applicationProtocol == Array("http/1.1".utf8))

        // A request up, a response of several records down.
        let request = Array("GET / HTTP/1.1\r\nHost: shop.sluice.test\r\n\r\n".utf8)
        let response = (0 ..< 40000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let (_, atServer) = try run(&client, &server, first: client.send(request))
        #expect(atServer.applicationData == request)
        let down = server.send(response)
        #expect(down.count > response.count) // three records' headers and tags
        let atClient = try client.receive(down)
        #expect(atClient.applicationData == response)

        // close_notify each way.
        #expect(try server.receive(client.close()).peerClosed)
        #expect(try client.receive(server.close()).peerClosed)
    }

    @Test func theServersFlightMayArriveByteByByte() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        let (clientSide, serverSide) = try run(&client, &server, first: client.start(), chunk: 1)
        #expect(clientSide.handshakeCompleted && serverSide.handshakeCompleted)
    }

    @Test func aCertificateForAnotherNameFailsTheClientWithBadCertificate() throws {
        // The client asks for shop.sluice.test but checks against another name.
        var configuration = fixtures.clientConfiguration(host: "other.sluice.test")
        configuration.serverName = HandshakeFixtures.host
        var client = TLSClient(configuration: configuration)
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        let flight = try server.receive(client.start()).toPeer
        do {
            _ = try client.receive(flight)
            Issue.record("the client accepted a certificate for another name")
        } catch {
            #expect(error.alert == .badCertificate)
            let alert = client.alertRecord(for: error)
            #expect(throws: TLSError(.badCertificate, "alert 42", sentByPeer: true)) { try server.receive(alert) }
        }
    }

    @Test func noProtocolInCommonIsRefusedWithItsAlert() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration(protocols: ["h2"]))
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        #expect(throws: TLSError(.noApplicationProtocol, "no protocol in common")) { try server.receive(client.start()) }
    }

    @Test func anUnknownServerNameGetsNoCertificate() throws {
        var configuration = fixtures.clientConfiguration()
        configuration.serverName = "elsewhere.test"
        var client = TLSClient(configuration: configuration)
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        #expect(throws: TLSError.self) { try server.receive(client.start()) }
    }

    // OpenSSL's client, refusing Sluice's certificate, sends unknown_ca before
    // it has switched its own keys: the server reads it as the app's alert
    // (so the engine can say the app does not trust the CA), not as a
    // record out of place.
    @Test func anAlertInTheClearDuringTheHandshakeIsThePeersAlert() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        let flight = try server.receive(client.start())
        #expect(!flight.toPeer.isEmpty)
        #expect(throws: TLSError(.unknownCA, "alert 48, in the clear", sentByPeer: true)) {
            try server.receive([21, 3, 3, 0, 2, 2, 48])
        }
    }

    // Once connected, a record in the clear is out of place, alert or not.
    @Test func anAlertInTheClearAfterTheHandshakeIsRefused() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        _ = try run(&client, &server, first: client.start())
        #expect(throws: TLSError(.unexpectedMessage, "a alert record in the clear after keys were set")) {
            try server.receive([21, 3, 3, 0, 2, 2, 48])
        }
    }

    @Test func aDamagedRecordEndsTheConnectionWithBadRecordMAC() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        _ = try run(&client, &server, first: client.start())
        var record = client.send(Array("secret".utf8))
        record[record.count - 1] ^= 1
        #expect(throws: TLSError(.badRecordMAC, "a record does not decrypt")) { try server.receive(record) }
    }

    // §4.1.4: a first ClientHello without an X25519 share (but offering the
    // group) gets a HelloRetryRequest naming X25519.
    @Test func aHelloWithoutAnX25519ShareGetsARetryRequest() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        let record = client.start()
        var hello = try ClientHello(body: Array(record.dropFirst(9)))
        let index = try #require(hello.extensions.firstIndex { $0.type == .keyShare })
        hello.extensions[index].data = [0, 5, 0x00, 0x17, 0, 1, 4]
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        let output = try server.receive(TLSRecord.encode(type: .handshake, body: hello.encode()))
        var framer = RecordFramer()
        framer.append(output.toPeer)
        let retryRecord = try #require(try framer.nextRecord())
        let retry = try ServerHello(body: Array(retryRecord.body.dropFirst(4)))
        #expect(retry.isHelloRetryRequest)
        #expect(try retry.selectedGroup() == .x25519)
        #expect(retry.legacySessionIDEcho == hello.legacySessionID)
        // Compatibility mode: a change_cipher_spec follows.
        #expect(try framer.nextRecord()?.type == .changeCipherSpec)
        #expect(server.state == .awaitingClientHello(retried: true))
    }

    @Test func clientsWithoutTLS13AreRefused() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        let record = client.start()
        var hello = try ClientHello(body: Array(record.dropFirst(9)))
        hello.extensions.removeAll { $0.type == .supportedVersions }
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        #expect(throws: TLSError(.protocolVersion, "the client does not offer TLS 1.3")) {
            try server.receive(TLSRecord.encode(type: .handshake, body: hello.encode()))
        }
    }
}

/// §4.2.10: a client that tries 0-RTT (with a ticket of the real server's)
/// has its early data skipped, in the clear before a retry and protected
/// after the server's flight, and the handshake goes on.
@Suite struct DeclinedEarlyDataTests {
    let fixtures: HandshakeFixtures

    init() throws { fixtures = try HandshakeFixtures() }

    func helloWithEarlyData(_ client: inout TLSClient) throws -> (record: [UInt8], hello: ClientHello) {
        var hello = try ClientHello(body: Array(client.start().dropFirst(9)))
        hello.extensions.append(TLSExtension(type: .earlyData, data: []))
        return (TLSRecord.encode(type: .handshake, body: hello.encode()), hello)
    }

    @Test func protectedEarlyDataIsSkippedUntilTheClientsFinished() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        let (record, _) = try helloWithEarlyData(&client)
        let earlyData = TLSRecord.encode(type: .applicationData, body: [UInt8](repeating: 0xEE, count: 300))
        let output = try server.receive(record + earlyData + earlyData)
        #expect(!output.toPeer.isEmpty)
        #expect(server.state == .awaitingClientFinished)
        // Past the limit, the connection ends.
        let flood = TLSRecord.encode(type: .applicationData, body: [UInt8](repeating: 0xEE, count: 16000))
        #expect(throws: TLSError.self) {
            for _ in 0 ..< 20 { _ = try server.receive(flood) }
        }
    }

    @Test func withoutTheExtensionUnreadableRecordsEndTheConnection() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        let earlyData = TLSRecord.encode(type: .applicationData, body: [UInt8](repeating: 0xEE, count: 300))
        #expect(throws: TLSError(.badRecordMAC, "a record does not decrypt")) { try server.receive(client.start() + earlyData) }
    }

    @Test func earlyDataBeforeASecondHelloIsSkippedToo() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        var (_, hello) = try helloWithEarlyData(&client)
        let index = try #require(hello.extensions.firstIndex { $0.type == .keyShare })
        let x25519Share = hello.extensions[index].data
        hello.extensions[index].data = [0, 5, 0x00, 0x17, 0, 1, 4]
        let earlyData = TLSRecord.encode(type: .applicationData, body: [UInt8](repeating: 0xEE, count: 300))
        _ = try server.receive(TLSRecord.encode(type: .handshake, body: hello.encode()) + earlyData)
        #expect(server.state == .awaitingClientHello(retried: true))
        // The second hello: its X25519 share back, no early_data.
        hello.extensions[index].data = x25519Share
        hello.extensions.removeAll { $0.type == .earlyData }
        _ = try server.receive(TLSRecord.encode(type: .handshake, body: hello.encode()))
        #expect(server.state == .awaitingClientFinished)
    }
}
