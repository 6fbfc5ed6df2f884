import TestSupport
import Testing
import TLS

@Suite struct HandshakeMessageTests {
    func body(_ message: [UInt8]) -> [UInt8] { Array(message.dropFirst(4)) }

    @Test func theTracesClientHelloReadsAndWritesBack() throws {
        let hello = try ClientHello(body: body(RFC8448.clientHello))
        #expect(hello.random == hex("cb34ecb1e78163ba1c38c6dacb196a6dffa21a8d9912ec18a2ef6283024dece7"))
        #expect(hello.legacySessionID.isEmpty)
        #expect(hello.cipherSuites == [0x1301, 0x1303, 0x1302])
        #expect(try hello.serverName() == "server")
        #expect(try hello.supportedVersions() == [0x0304])
        #expect(try hello.supportedGroups().map(\.rawValue) == [0x001D, 0x0017, 0x0018, 0x0019, 0x0100, 0x0101, 0x0102, 0x0103, 0x0104])
        #expect(try hello.keyShares() == [KeyShareEntry(group: .x25519, keyExchange: RFC8448.clientPublicKey)])
        #expect(try hello.signatureAlgorithms().first == .ecdsaSecp256r1SHA256)
        #expect(try hello.signatureAlgorithms().contains(.rsaPSSRSAESHA256))
        #expect(try hello.applicationProtocols() == nil)
        #expect(hello.encode() == RFC8448.clientHello)
    }

    @Test func theTracesServerHelloReadsAndWritesBack() throws {
        let hello = try ServerHello(body: body(RFC8448.serverHello))
        #expect(!hello.isHelloRetryRequest)
        #expect(hello.cipherSuite == CipherSuite.aes128GCMSHA256.rawValue)
        #expect(try hello.selectedVersion() == 0x0304)
        #expect(try hello.keyShare() == KeyShareEntry(group: .x25519, keyExchange: RFC8448.serverPublicKey))
        #expect(try hello.selectedGroup() == nil)
        #expect(hello.encode() == RFC8448.serverHello)
    }

    @Test func theServersEncryptedFlightReadsAndWritesBack() throws {
        let extensions = try EncryptedExtensions(body: body(RFC8448.encryptedExtensions))
        #expect(extensions.extensions.map(\.type.rawValue) == [10, 28, 0])
        #expect(try extensions.selectedApplicationProtocol() == nil)
        #expect(extensions.encode() == RFC8448.encryptedExtensions)

        let certificate = try CertificateMessage(body: body(RFC8448.certificate))
        #expect(certificate.requestContext.isEmpty)
        #expect(certificate.certificates.map(\.count) == [0x1B0])
        #expect(certificate.encode() == RFC8448.certificate)

        let verify = try CertificateVerify(body: body(RFC8448.certificateVerify))
        #expect(verify.algorithm == .rsaPSSRSAESHA256)
        #expect(verify.signature.count == 128)
        #expect(verify.encode() == RFC8448.certificateVerify)

        #expect(Finished(body: body(RFC8448.serverFinished)).encode() == RFC8448.serverFinished)
    }

    @Test func aHelloRetryRequestIsKnownByItsRandom() throws {
        let retry = ServerHello(random: ServerHello.helloRetryRequestRandom, legacySessionIDEcho: [],
                                cipherSuite: 0x1301,
                                extensions: [TLSExtension(type: .supportedVersions, data: [0x03, 0x04]),
                                             TLSExtension(type: .keyShare, data: [0x00, 0x1D])])
        let read = try ServerHello(body: body(retry.encode()))
        #expect(read.isHelloRetryRequest)
        #expect(try read.selectedGroup() == .x25519)
        #expect(try read.keyShare() == nil)
    }

    @Test func alpnListsRoundTripAndEmptyNamesAreRefused() throws {
        let encoded = ApplicationProtocols.encode([Array("h2".utf8), Array("http/1.1".utf8)])
        #expect(try ApplicationProtocols.decode(encoded) == [Array("h2".utf8), Array("http/1.1".utf8)])
        #expect(throws: TLSError.self) { try ApplicationProtocols.decode([0, 1, 0]) }
        #expect(throws: TLSError.self) { try ApplicationProtocols.decode([0, 0]) }
    }

    @Test func malformedHellosAreRefusedWithTheirAlert() throws {
        var duplicate = try ClientHello(body: body(RFC8448.clientHello))
        duplicate.extensions.append(TLSExtension(type: .serverName, data: []))
        #expect(throws: TLSError(.illegalParameter, "extension 0 appears twice")) {
            try ClientHello(body: body(duplicate.encode()))
        }
        var pskNotLast = try ClientHello(body: body(RFC8448.clientHello))
        pskNotLast.extensions.insert(TLSExtension(type: .preSharedKey, data: []), at: 0)
        #expect(throws: TLSError.self) { try ClientHello(body: body(pskNotLast.encode())) }
        // A trailing byte after the extensions.
        var trailing = body(RFC8448.clientHello)
        trailing.append(0)
        #expect(throws: TLSError.self) { try ClientHello(body: trailing) }
    }

    // Every truncation and every byte changed (three values a position) of
    // the trace's messages either reads or throws; none traps.
    @Test func damagedMessagesNeverTrap() {
        let messages = [RFC8448.clientHello, RFC8448.serverHello, RFC8448.encryptedExtensions,
                        RFC8448.certificate, RFC8448.certificateVerify]
        func read(_ type: HandshakeType, _ bytes: [UInt8]) {
            switch type {
            case .clientHello:
                if let hello = try? ClientHello(body: bytes) {
                    _ = try? hello.serverName(); _ = try? hello.keyShares(); _ = try? hello.supportedVersions()
                    _ = try? hello.supportedGroups(); _ = try? hello.signatureAlgorithms(); _ = try? hello.applicationProtocols()
                }
            case .serverHello:
                if let hello = try? ServerHello(body: bytes) {
                    _ = try? hello.keyShare(); _ = try? hello.selectedVersion(); _ = try? hello.selectedGroup()
                }
            case .encryptedExtensions: _ = try? EncryptedExtensions(body: bytes).selectedApplicationProtocol()
            case .certificate: _ = try? CertificateMessage(body: bytes)
            case .certificateVerify: _ = try? CertificateVerify(body: bytes)
            default: Issue.record("no reader for \(type)")
            }
        }
        for message in messages {
            let type = HandshakeType(rawValue: message[0])!
            let original = body(message)
            for length in 0 ..< original.count { read(type, Array(original.prefix(length))) }
            for position in original.indices {
                for value: UInt8 in [0x00, 0xFF, original[position] ^ 0x01] {
                    var damaged = original
                    damaged[position] = value
                    read(type, damaged)
                }
            }
        }
    }
}
