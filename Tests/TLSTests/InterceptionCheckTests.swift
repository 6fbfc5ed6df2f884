import Crypto
import TestSupport
import Testing
import TLS

/// The check that decides, before Sluice answers a ClientHello itself,
/// whether its server could; a wrong "yes" breaks an app that works without
/// Sluice, so the hellos here are real ones (Sluice's own client, OpenSSL's)
/// and those same hellos with one thing taken away.
@Suite struct InterceptionCheckTests {
    static let httpOne = [Array("http/1.1".utf8)]

    /// A first flight from Sluice's own client: the handshake never gets
    /// far enough for the chain to matter, so its check only has to throw.
    func clientFlight(protocols: [String] = ["http/1.1"], suites: [CipherSuite] = TLSServer.suitePreference,
                      seed: UInt64 = 0xC11E_4E11) -> [UInt8]
    {
        let random = SeededRandom(seed: seed)
        var configuration = TLSClient.Configuration(
            serverName: "shop.sluice.test", applicationProtocols: protocols.map { Array($0.utf8) },
            randomBytes: { random.bytes($0) },
            verifyChain: { (_: [[UInt8]]) throws(TLSError) -> ServerPublicKey in
                throw TLSError(.badCertificate, "a hello-only test never sees a chain")
            })
        configuration.cipherSuites = suites
        var client = TLSClient(configuration: configuration)
        return client.start()
    }

    /// The ClientHello inside a flight of one plaintext record.
    func hello(in flight: [UInt8]) throws -> ClientHello {
        var records = RecordFramer()
        records.append(flight)
        let record = try #require(try records.nextRecord())
        var messages = HandshakeFramer()
        messages.append(record.body)
        let message = try #require(try messages.nextMessage())
        return try ClientHello(body: message.body)
    }

    func record(_ hello: ClientHello) -> [UInt8] {
        TLSRecord.encode(type: .handshake, body: hello.encode())
    }

    /// The client's hello with one extension replaced (or dropped, for nil),
    /// the rest left in their places.
    func clientHello(replacing type: ExtensionType, with data: [UInt8]?) throws -> ClientHello {
        var changed = try hello(in: clientFlight())
        if let data {
            let index = try #require(changed.extensions.firstIndex { $0.type == type })
            changed.extensions[index].data = data
        } else {
            changed.extensions.removeAll { $0.type == type }
        }
        return changed
    }

    /// A `u16<2..2^16-2>` list as signature_algorithms and supported_groups carry it.
    func u16List(_ values: [UInt16]) -> [UInt8] {
        let length = values.count * 2
        return [UInt8(length >> 8), UInt8(length & 0xFF)] + values.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    func obstacle(_ bytes: [UInt8], protocols: [[UInt8]] = Self.httpOne) -> String? {
        InterceptionCheck.obstacle(inFirstRecords: bytes, protocols: protocols)
    }

    // MARK: Hellos Sluice's server answers

    @Test func sluicesOwnClientHelloCanBeIntercepted() {
        #expect(obstacle(clientFlight()) == nil)
    }

    @Test func aHelloWithoutALPNCanBeIntercepted() throws {
        let flight = clientFlight(protocols: [])
        // Guards the premise: the extension really is absent, not empty.
        #expect(try hello(in: flight).extensions[.applicationLayerProtocolNegotiation] == nil)
        #expect(obstacle(flight) == nil)
    }

    @Test func http1AmongOtherProtocolsIsEnough() {
        #expect(obstacle(clientFlight(protocols: ["h2", "http/1.1"])) == nil)
        #expect(obstacle(clientFlight(protocols: ["http/1.1", "h2"])) == nil)
    }

    @Test(arguments: [[CipherSuite.aes128GCMSHA256], [.chacha20Poly1305SHA256]])
    func eitherSuiteAloneIsEnough(suites: [CipherSuite]) {
        #expect(obstacle(clientFlight(suites: suites)) == nil)
    }

    /// Bytes after the hello (0-RTT data, a second record) are not the check's business.
    @Test func bytesAfterTheHelloDoNotMatter() {
        let flight = clientFlight()
        #expect(obstacle(flight + TLSRecord.encode(type: .applicationData, body: [1, 2, 3])) == nil)
        #expect(obstacle(flight + Array("GET / HTTP/1.1\r\n".utf8)) == nil)
    }

    /// TCP and the app may cut the hello anywhere: into records of any size,
    /// the handshake header itself included.
    @Test(arguments: [1, 3, 4, 5, 40, 100])
    func aHelloSplitAcrossTwoRecordsIsWhole(cut: Int) throws {
        let message = try hello(in: clientFlight()).encode()
        try #require(cut < message.count)
        let flight = TLSRecord.encode(type: .handshake, body: Array(message[..<cut]))
            + TLSRecord.encode(type: .handshake, body: Array(message[cut...]))
        #expect(obstacle(flight) == nil)
        // The first record alone is a hello still on its way.
        #expect(obstacle(TLSRecord.encode(type: .handshake, body: Array(message[..<cut]))) == "the ClientHello is incomplete")
    }

    @Test func aHelloInManySmallRecordsIsWhole() throws {
        let message = try hello(in: clientFlight()).encode()
        var flight: [UInt8] = []
        var offset = 0
        while offset < message.count {
            let end = min(offset + 16, message.count)
            flight += TLSRecord.encode(type: .handshake, body: Array(message[offset ..< end]))
            offset = end
        }
        #expect(obstacle(flight) == nil)
    }

    // MARK: Hellos Sluice's server would refuse

    @Test func aHelloOfferingOnlyH2PassesThrough() throws {
        let reason = try #require(obstacle(clientFlight(protocols: ["h2"])))
        #expect(reason == "the app offers only h2")
        #expect(obstacle(clientFlight(protocols: ["h2", "h3"])) == "the app offers only h2, h3")
    }

    /// What counts as acceptable is the caller's list, not a fixed one.
    @Test func theProtocolsAreTheCallersOwn() {
        #expect(obstacle(clientFlight(protocols: ["h2"]), protocols: [Array("h2".utf8)]) == nil)
        #expect(obstacle(clientFlight(), protocols: [Array("h2".utf8)]) == "the app offers only http/1.1")
    }

    @Test func aHelloWithoutTLS13PassesThrough() throws {
        // supported_versions naming only TLS 1.2.
        #expect(obstacle(record(try clientHello(replacing: .supportedVersions, with: [2, 0x03, 0x03])))
            == "the app does not offer TLS 1.3")
        // A TLS 1.2 client sends no supported_versions at all.
        #expect(obstacle(record(try clientHello(replacing: .supportedVersions, with: nil)))
            == "the app does not offer TLS 1.3")
    }

    @Test func aHelloWithoutECDSAP256PassesThrough() throws {
        let schemes = u16List([SignatureScheme.rsaPSSRSAESHA256, .rsaPKCS1SHA256, .ecdsaSecp384r1SHA384].map(\.rawValue))
        #expect(obstacle(record(try clientHello(replacing: .signatureAlgorithms, with: schemes)))
            == "the app does not accept ECDSA P-256")
    }

    @Test func aHelloWithoutX25519PassesThrough() throws {
        let groups = u16List([NamedGroup.secp256r1.rawValue, 0x0018])
        #expect(obstacle(record(try clientHello(replacing: .supportedGroups, with: groups)))
            == "the app does not offer X25519")
    }

    @Test func aHelloWithNoCommonCipherSuitePassesThrough() throws {
        var changed = try hello(in: clientFlight())
        // TLS_AES_256_GCM_SHA384 and two TLS 1.2 suites: nothing Sluice speaks.
        changed.cipherSuites = [0x1302, 0xC02B, 0xC02F]
        #expect(obstacle(record(changed)) == "no cipher suite Sluice speaks")
    }

    /// Every cut short of the whole hello waits for more, down to no bytes at all.
    @Test func everyTruncationIsIncomplete() {
        let flight = clientFlight()
        for length in 0 ..< flight.count {
            let reason = obstacle(Array(flight[..<length]))
            if reason != "the ClientHello is incomplete" {
                Issue.record("\(length) of \(flight.count) bytes: \(reason ?? "nil")")
                return
            }
        }
    }

    @Test func plainHTTPIsNotTLS() throws {
        let reason = try #require(obstacle(Array("GET / HTTP/1.1\r\nHost: shop.sluice.test\r\n\r\n".utf8)))
        #expect(reason.hasPrefix("not a TLS record"))
    }

    @Test func aRecordWithAForeignVersionIsNotTLS() throws {
        var flight = clientFlight()
        flight[1] = 0x02
        let reason = try #require(obstacle(flight))
        #expect(reason.hasPrefix("not a TLS record"))
    }

    @Test func anotherRecordTypeFirstPassesThrough() {
        let hello = clientFlight()
        #expect(obstacle(TLSRecord.encode(type: .applicationData, body: [0x17, 0x17]) + hello)
            == "application_data before the ClientHello")
        #expect(obstacle(TLSRecord.encode(type: .alert, body: [2, 40]) + hello) == "alert before the ClientHello")
    }

    @Test func anotherHandshakeMessageFirstPassesThrough() {
        let finished = HandshakeMessage.encode(type: .finished, body: [UInt8](repeating: 0, count: 32))
        #expect(obstacle(TLSRecord.encode(type: .handshake, body: finished)) == "Finished instead of a ClientHello")
    }

    @Test func aMalformedHelloPassesThroughWithTheParsersReason() throws {
        var message = try hello(in: clientFlight()).encode()
        // Compression methods other than null: the body's 1-byte length
        // sits after version, random, session ID and suites.
        let sessionIDLength = Int(message[4 + 2 + 32])
        let suitesStart = 4 + 2 + 32 + 1 + sessionIDLength
        let suitesLength = Int(message[suitesStart]) << 8 | Int(message[suitesStart + 1])
        let compression = suitesStart + 2 + suitesLength
        try #require(message[compression] == 1 && message[compression + 1] == 0)
        message[compression + 1] = 1
        let reason = try #require(obstacle(TLSRecord.encode(type: .handshake, body: message)))
        #expect(reason.contains("compression"))
    }

    @Test func anUnknownHandshakeTypeIsAReason() {
        let message: [UInt8] = [0x63, 0, 0, 2, 0xAB, 0xCD]
        #expect(obstacle(TLSRecord.encode(type: .handshake, body: message)) != nil)
    }

    // MARK: OpenSSL's hello

    /// What `openssl s_client -servername shop.sluice.test -alpn http/1.1`
    /// (OpenSSL 3.0.19) sent first: TLS 1.3 and 1.2 both offered, a record
    /// version of 0x0301, TLS 1.2 suites, and RSA schemes beside ECDSA's.
    static let openSSLFlight = hex("""
    160301014c0100014803031c391beda738f180513e5ac127dacaf8e792730325d52776def08ad16f63888720aafa3719d26a7a118708b60a
    bac0c7a13c25f0b1d3592e9989058fcf217f9b0b003e130213031301c02cc030009fcca9cca8ccaac02bc02f009ec024c028006bc023c027
    0067c00ac0140039c009c0130033009d009c003d003c0035002f00ff010000c100000015001300001073686f702e736c756963652e746573
    74000b000403000102000a00160014001d0017001e0019001801000101010201030104002300000010000b000908687474702f312e310016
    000000170000000d002a0028040305030603080708080809080a080b080408050806040105010601030303010302040205020602002b0009
    080304030303020301002d00020101003300260024001d0020722c298888db48e3a15cf3e21be5e05163f53c6c9b0fe1f3e44244b04be9fa
    0f
    """)

    @Test func openSSLsHelloCanBeIntercepted() throws {
        #expect(Self.openSSLFlight.count == 337)
        #expect(obstacle(Self.openSSLFlight) == nil)
        #expect(obstacle(Self.openSSLFlight, protocols: [Array("h2".utf8)]) == "the app offers only http/1.1")
        #expect(obstacle(Array(Self.openSSLFlight.dropLast())) == "the ClientHello is incomplete")
    }

    // MARK: Agreement with the server

    /// The check's promise: nil exactly when Sluice's server answers the
    /// hello. The server here has a certificate for every name, so only the
    /// hello decides.
    func serverAnswers(_ flight: [UInt8], fixtures: HandshakeFixtures) -> Bool {
        let chain = [fixtures.leafCertificate, fixtures.caCertificate]
        let key = fixtures.leafKey
        let random = fixtures.random
        var server = TLSServer(configuration: TLSServer.Configuration(
            certificate: { _ in (chain, key) }, applicationProtocols: Self.httpOne, randomBytes: { random.bytes($0) }))
        do {
            let output = try server.receive(flight)
            return !output.toPeer.isEmpty
        } catch {
            return false
        }
    }

    @Test func theCheckAgreesWithTheServer() throws {
        let fixtures = try HandshakeFixtures()
        var noCommonSuite = try hello(in: clientFlight())
        noCommonSuite.cipherSuites = [0x1302]
        let message = try hello(in: clientFlight()).encode()
        let flights: [(String, [UInt8])] = [
            ("Sluice's client", clientFlight()),
            ("no ALPN", clientFlight(protocols: [])),
            ("h2 only", clientFlight(protocols: ["h2"])),
            ("two records", TLSRecord.encode(type: .handshake, body: Array(message[..<50]))
                + TLSRecord.encode(type: .handshake, body: Array(message[50...]))),
            ("OpenSSL", Self.openSSLFlight),
            ("TLS 1.2 only", record(try clientHello(replacing: .supportedVersions, with: [2, 0x03, 0x03]))),
            ("no ECDSA P-256", record(try clientHello(replacing: .signatureAlgorithms,
                                                      with: u16List([SignatureScheme.rsaPSSRSAESHA256.rawValue])))),
            ("no X25519", record(try clientHello(replacing: .supportedGroups, with: u16List([0x0017])))),
            ("no common suite", record(noCommonSuite)),
            // No X25519 share but X25519 offered: the server asks again (HelloRetryRequest).
            ("no key share", record(try clientHello(replacing: .keyShare, with: [0, 0]))),
        ]
        for (name, flight) in flights {
            let verdict = obstacle(flight)
            #expect((verdict == nil) == serverAnswers(flight, fixtures: fixtures), "\(name): the check says \(verdict ?? "nil")")
        }
    }

    /// Hellos the server refuses on grounds beyond versions and algorithms:
    /// an empty handshake record (§5.1 forbids one), a server_name that is
    /// not ASCII, a key_share the server cannot use, a hello record with the
    /// start of another message after it. The check must refuse each too,
    /// or the app would get an alert where passing it through would not
    /// break it.
    @Test func theCheckAgreesWithTheServerOnMalformedHellos() throws {
        let fixtures = try HandshakeFixtures()
        let base = try hello(in: clientFlight())
        func withShares(_ entries: [UInt8]) throws -> [UInt8] {
            record(try clientHello(replacing: .keyShare, with: [UInt8(entries.count >> 8), UInt8(entries.count & 0xFF)] + entries))
        }
        let share = try #require(try base.keyShares().first)
        var shareBytes = [UInt8(share.group.rawValue >> 8), UInt8(share.group.rawValue & 0xFF), 0, UInt8(share.keyExchange.count)]
        shareBytes += share.keyExchange
        let name = Array("m\u{00FC}nchen.test".utf8)
        var serverName: [UInt8] = [0, UInt8(name.count + 3), 0, 0, UInt8(name.count)]
        serverName += name
        let flights: [(String, [UInt8])] = [
            ("an empty handshake record first", TLSRecord.encode(type: .handshake, body: []) + record(base)),
            ("a UTF-8 server name", record(try clientHello(replacing: .serverName, with: serverName))),
            ("two X25519 shares", try withShares(shareBytes + shareBytes)),
            ("an all-zero X25519 share", try withShares([0, 0x1D, 0, 32] + [UInt8](repeating: 0, count: 32))),
            ("a 31-byte X25519 share", try withShares([0, 0x1D, 0, 31] + [UInt8](repeating: 9, count: 31))),
            ("a second message begun in the hello's record",
             TLSRecord.encode(type: .handshake, body: base.encode() + [HandshakeType.finished.rawValue, 0])),
        ]
        for (name, flight) in flights {
            let verdict = obstacle(flight)
            #expect(!serverAnswers(flight, fixtures: fixtures), "\(name): the premise is that the server refuses it")
            #expect(verdict != nil, "\(name): the check lets it be intercepted")
        }
    }
}
