import Crypto
import Testing
@testable import TLS

/// Records opened and sealed where they lie (`receive(inPlace:)`,
/// `send(inPlace:contentCount:)`), the engine's path for bulk data, against
/// the general path (`receive`, `send`) that the handshake tests check: the
/// same bytes out, the same content in, the same errors.
@Suite struct InPlaceRecordTests {
    let fixtures: HandshakeFixtures

    init() throws { fixtures = try HandshakeFixtures() }

    func connected(_ suite: CipherSuite) throws -> (TLSClient, TLSServer) {
        var client = TLSClient(configuration: fixtures.clientConfiguration(suites: [suite]))
        var server = TLSServer(configuration: fixtures.serverConfiguration())
        _ = try HandshakeTests().run(&client, &server, first: client.start())
        try #require(client.state == .connected && server.state == .connected)
        return (client, server)
    }

    static func content(_ count: Int, seed: Int) -> [UInt8] {
        (0 ..< count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &+ $0 >> 9) }
    }

    /// Where two byte strings part, in words short enough to read in a
    /// failure (the strings themselves run to tens of kilobytes); nil if equal.
    static func difference(_ a: [UInt8], _ b: [UInt8]) -> String? {
        guard a != b else { return nil }
        let first = (0 ..< min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
        return "\(a.count) and \(b.count) bytes, first different at \(first)"
    }

    /// Each record of `stream` through `receive(inPlace:)` as the engine
    /// hands them: every receipt, and the application data opened.
    static func openInPlace(_ stream: [UInt8], _ machine: inout TLSClient) throws -> (receipts: [String], data: [UInt8]) {
        var bytes = stream
        var receipts: [String] = []
        var data: [UInt8] = []
        var offset = 0
        try bytes.withUnsafeMutableBytes { whole in
            // Bounded by the records in the stream.
            for _ in 0 ..< 100 where offset < whole.count {
                switch try machine.receive(inPlace: UnsafeMutableRawBufferPointer(rebasing: whole[offset...])) {
                case let .applicationData(consumed, content):
                    data += UnsafeRawBufferPointer(rebasing: whole[offset + content.lowerBound ..< offset + content.upperBound])
                    receipts.append("data \(content.count)")
                    offset += consumed
                case let .output(consumed, output):
                    receipts.append("output toPeer=\(output.toPeer.count) closed=\(output.peerClosed) data=\(output.applicationData.count)")
                    offset += consumed
                case .needMore:
                    receipts.append("needMore")
                    return
                case let .notInPlace(count):
                    receipts.append("notInPlace \(count)")
                    return
                }
            }
        }
        return (receipts, data)
    }

    @Test(arguments: CipherSuite.allCases)
    func recordsSealedInPlaceAreTheRecordsSendMakes(suite: CipherSuite) throws {
        var (client, server) = try connected(suite)
        let sealing = try #require(server.sealing)
        #expect(sealing.prefix == 5 && sealing.suffix == 17)
        for (index, count) in [1, 777, 16383, 16384].enumerated() {
            let content = Self.content(count, seed: index)
            var general = server
            let expected = general.send(content)
            var record = [UInt8](repeating: 0xEE, count: sealing.prefix + count + sealing.suffix + 9)
            let length = record.withUnsafeMutableBytes { buffer in
                buffer.baseAddress!.advanced(by: sealing.prefix).copyMemory(from: content, byteCount: count)
                return server.send(inPlace: buffer, contentCount: count)
            }
            #expect(length == expected.count)
            #expect(Self.difference(Array(record.prefix(length)), expected) == nil, "\(count) bytes")
            // Nothing past the record is touched.
            #expect(record.suffix(9).allSatisfy { $0 == 0xEE })
            // Both paths seal through one implementation: the peer is the independent check.
            #expect(Self.difference(try client.receive(Array(record.prefix(length))).applicationData, content) == nil)
        }
    }

    @Test(arguments: CipherSuite.allCases)
    func recordsOpenWhereTheyLieAcrossAKeyUpdateAndACloseNotify(suite: CipherSuite) throws {
        var (client, server) = try connected(suite)
        let first = Self.content(40000, seed: 1)
        var stream = server.send(first)
        // The client asks for a KeyUpdate (§4.6.3), so the server's next
        // record is its own, after which it writes under its next keys.
        let request = client.records.write(HandshakeMessage.encode(type: .keyUpdate, body: [1]), type: .handshake)
        var requestBytes = request
        let answer = try requestBytes.withUnsafeMutableBytes { buffer in try server.receive(inPlace: buffer) }
        guard case let .output(consumed, output) = answer else {
            Issue.record("the KeyUpdate came back as \(answer)")
            return
        }
        #expect(consumed == request.count)
        #expect(!output.toPeer.isEmpty)
        stream += output.toPeer
        let second = Self.content(20000, seed: 2)
        stream += server.send(second)
        stream += server.close()

        var general = client
        let expected = try general.receive(stream)
        let (receipts, data) = try Self.openInPlace(stream, &client)
        #expect(Self.difference(data, first + second) == nil)
        #expect(Self.difference(data, expected.applicationData) == nil)
        #expect(receipts == ["data 16384", "data 16384", "data 7232", "output toPeer=0 closed=false data=0",
                             "data 16384", "data 3616", "output toPeer=0 closed=true data=0"])
    }

    @Test func aRecordNotYetWholeNeedsMoreAndIsLeftAsItCame() throws {
        var (client, server) = try connected(.chacha20Poly1305SHA256)
        let record = server.send(Self.content(1000, seed: 3))
        for cut in [0, 3, 5, 500, record.count - 1] {
            var part = Array(record.prefix(cut))
            let receipt = try part.withUnsafeMutableBytes { try client.receive(inPlace: $0) }
            #expect(receipt == .needMore, "\(cut) bytes")
            #expect(part == Array(record.prefix(cut)))
        }
        var whole = record
        let receipt = try whole.withUnsafeMutableBytes { try client.receive(inPlace: $0) }
        #expect(receipt == .applicationData(consumed: record.count, content: 5 ..< 1005))
        #expect(Array(whole[5 ..< 1005]) == Self.content(1000, seed: 3))
    }

    /// Only protected application_data records with TLS 1.2's version are
    /// opened in place; anything else goes to `receive`, which reads it or
    /// refuses it with its own error.
    @Test func otherHeadersAreLeftToTheGeneralPath() throws {
        var (client, _) = try connected(.aes128GCMSHA256)
        // Whole records go to `receive` one at a time, exactly their bytes;
        // a header `receive` refuses goes with everything after it.
        let cases: [([UInt8], InPlaceReceipt)] = [
            ([20, 3, 3, 0, 1, 1, 23], .notInPlace(count: 6)), // change_cipher_spec
            ([21, 3, 3, 0, 2, 2, 40], .notInPlace(count: 7)), // an alert in the clear
            ([22, 3, 3, 0, 1, 0, 99, 99], .notInPlace(count: 6)), // a handshake record in the clear
            ([23, 3, 1, 0, 20] + [UInt8](repeating: 0, count: 20), .notInPlace(count: 25)), // another version
            ([23, 3, 3, 0x41, 0x01, 0], .notInPlace(count: 6)), // longer than a record may be
            ([23, 3, 5, 0, 1, 0], .notInPlace(count: 6)), // no TLS 1.x version
            (Array("GET / HTTP/1.1\r\n".utf8), .notInPlace(count: 16)),
            // Not whole yet, whatever its type: the general path never keeps a record's start.
            ([21, 3, 3, 0, 2, 2], .needMore),
            ([22, 3, 3, 0, 9], .needMore),
            ([21, 3], .needMore),
        ]
        for (header, expected) in cases {
            var bytes = header
            let receipt = try bytes.withUnsafeMutableBytes { try client.receive(inPlace: $0) }
            #expect(receipt == expected, "\(header)")
            #expect(bytes == header)
        }
        var general = client
        #expect(throws: TLSError(.recordOverflow, "a record of 16641 bytes")) { try general.receive([23, 3, 3, 0x41, 0x01]) }
    }

    @Test func aDamagedRecordFailsAsItWouldOnTheGeneralPathAndStaysAsItCame() throws {
        var (client, server) = try connected(.chacha20Poly1305SHA256)
        var record = server.send(Self.content(300, seed: 4))
        record[100] ^= 0x40
        let damaged = record
        var general = client
        #expect(throws: TLSError(.badRecordMAC, "a record does not decrypt")) { try general.receive(damaged) }
        #expect(throws: TLSError(.badRecordMAC, "a record does not decrypt")) {
            try record.withUnsafeMutableBytes { try client.receive(inPlace: $0) }
        }
        #expect(record == damaged)
    }

    /// A record's start that `receive` framed stays with the machine until it
    /// is taken; then the in-place path goes on from it.
    @Test func bytesTheGeneralPathKeptAreTakenOutToGoOnInPlace() throws {
        var (client, server) = try connected(.aes128GCMSHA256)
        let stream = server.send(Self.content(20000, seed: 5))
        let firstPart = Array(stream.prefix(9000))
        let output = try client.receive(firstPart)
        #expect(output.applicationData.isEmpty)
        #expect(client.hasUnframedBytes)
        var probe = Array(stream[9000...])
        #expect(try probe.withUnsafeMutableBytes { try client.receive(inPlace: $0) } == .notInPlace(count: probe.count))
        let carried = client.takeUnframedBytes()
        #expect(Self.difference(carried, firstPart) == nil)
        #expect(!client.hasUnframedBytes)
        let (receipts, data) = try Self.openInPlace(carried + stream[9000...], &client)
        #expect(receipts == ["data 16384", "data 3616"])
        #expect(Self.difference(data, Self.content(20000, seed: 5)) == nil)
    }

    @Test func beforeTheHandshakeEndsNothingIsOpenedOrSealedInPlace() throws {
        var client = TLSClient(configuration: fixtures.clientConfiguration())
        #expect(client.sealing == nil)
        var hello = client.start()
        let helloCount = hello.count
        #expect(try hello.withUnsafeMutableBytes { try client.receive(inPlace: $0) } == .notInPlace(count: helloCount))
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(buffer.withUnsafeMutableBytes { client.send(inPlace: $0, contentCount: 10) } == 0)
    }
}

/// The same against the independent TLS 1.2 server of Scripted12Server.swift:
/// its records, in both AEADs' TLS 1.2 framings (GCM's explicit nonce,
/// ChaCha20's implicit one), open in place in Sluice's client, and the
/// client's records sealed in place open in the server.
@Suite struct InPlaceTLS12RecordTests {
    let fixtures: HandshakeFixtures

    init() throws { fixtures = try HandshakeFixtures() }

    @Test(arguments: [UInt16(0xCCA9), 0xC02B])
    func tls12RecordsOpenAndSealInPlace(suite: UInt16) throws {
        var options = Scripted12Server.Options()
        options.suite = suite
        var (client, server) = try TLS12ScriptedServerTests().connect(options)
        let response = InPlaceRecordTests.content(40000, seed: 6)
        let stream = server.send(response) + server.sendProtected(type: 21, [1, 0])
        let (receipts, data) = try InPlaceRecordTests.openInPlace(stream, &client)
        #expect(InPlaceRecordTests.difference(data, response) == nil)
        // The close_notify is an alert record, left to the general path, whole.
        let alertCount = 5 + (suite == 0xC02B ? 8 : 0) + 2 + 16
        #expect(receipts == ["data 16384", "data 16384", "data 7232", "notInPlace \(alertCount)"])

        let sealing = try #require(client.sealing)
        let gcm = suite == 0xC02B
        #expect(sealing.prefix == (gcm ? 13 : 5) && sealing.suffix == 16)
        let upload = InPlaceRecordTests.content(5000, seed: 7)
        var general = client
        let expected = general.send(upload)
        var record = [UInt8](repeating: 0, count: sealing.prefix + upload.count + sealing.suffix)
        let length = record.withUnsafeMutableBytes { buffer in
            buffer.baseAddress!.advanced(by: sealing.prefix).copyMemory(from: upload, byteCount: upload.count)
            return client.send(inPlace: buffer, contentCount: upload.count)
        }
        #expect(length == record.count)
        #expect(InPlaceRecordTests.difference(record, expected) == nil)
        #expect(InPlaceRecordTests.difference(try server.receive(record).flatMap { $0.content }, upload) == nil)
    }
}
