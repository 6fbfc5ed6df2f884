import Crypto
import Testing
import TLS

@Suite struct RecordFramerTests {
    @Test func recordsComeOutWholeHoweverTheBytesArrive() throws {
        let first = TLSRecord.encode(type: .handshake, body: RFC8448.clientHello)
        let second = TLSRecord.encode(type: .alert, body: [2, 40])
        let stream = first + second
        // Byte by byte.
        var framer = RecordFramer()
        var records: [TLSRecord] = []
        for byte in stream {
            framer.append([byte])
            while let record = try framer.nextRecord() { records.append(record) }
        }
        #expect(records.map(\.type) == [.handshake, .alert])
        #expect(records[0].body == RFC8448.clientHello)
        #expect(records[0].header == Array(first.prefix(5)))
        #expect(records[1].body == [2, 40])
        // All at once.
        var whole = RecordFramer()
        whole.append(stream)
        #expect(try whole.nextRecord()?.body == RFC8448.clientHello)
        #expect(try whole.nextRecord()?.body == [2, 40])
        #expect(try whole.nextRecord() == nil)
        #expect(whole.bufferedCount == 0)
    }

    @Test func headersNoTLSPeerSendsAreRefusedAtOnce() {
        var http = RecordFramer()
        http.append(Array("GET / HTTP/1.1\r\n".utf8))
        #expect(throws: TLSError.self) { try http.nextRecord() }
        var sslv3 = RecordFramer()
        sslv3.append([22, 0x02, 0x00, 0, 1, 0])
        #expect(throws: TLSError.self) { try sslv3.nextRecord() }
        var huge = RecordFramer()
        huge.append([23, 3, 3, 0x41, 0x01])
        #expect(throws: TLSError(.recordOverflow, "a record of 16641 bytes")) { try huge.nextRecord() }
    }
}

@Suite struct RecordProtectionTests {
    let secret = RFC8448.serverApplicationTrafficSecret

    @Test(arguments: CipherSuite.allCases)
    func sealedRecordsOpenInOrder(suite: CipherSuite) throws {
        var sender = RecordProtection(suite: suite, trafficSecret: secret)
        var receiver = RecordProtection(suite: suite, trafficSecret: secret)
        var framer = RecordFramer()
        for length in [0, 1, 50, 1000, 16384] {
            let content = (0 ..< length).map { UInt8(truncatingIfNeeded: $0) }
            framer.append(sender.seal(content, type: .applicationData))
        }
        framer.append(sender.seal([1, 0], type: .alert))
        var opened: [(ContentType, Int)] = []
        while let record = try framer.nextRecord() {
            #expect(record.type == .applicationData)
            let (type, content) = try receiver.open(record)
            opened.append((type, content.count))
        }
        #expect(opened.map(\.0) == [.applicationData, .applicationData, .applicationData, .applicationData, .applicationData, .alert])
        #expect(opened.map(\.1) == [0, 1, 50, 1000, 16384, 2])
        #expect(receiver.sequenceNumber == 6)
    }

    // §5.3: the AES-128-GCM handshake keys of RFC 8448 against a record
    // sealed directly with AES-GCM under the nonce the RFC's rule gives.
    @Test func theNonceIsTheIVXoredWithTheSequenceNumber() throws {
        var protection = RecordProtection(suite: .aes128GCMSHA256, trafficSecret: RFC8448.serverHandshakeTrafficSecret)
        _ = protection.seal([1], type: .handshake)
        let second = protection.seal(Array("hello".utf8), type: .applicationData)
        var nonce = RFC8448.serverHandshakeIV
        nonce[11] ^= 1
        let header = Array(second.prefix(5))
        let expected = AESGCM.seal(key: RFC8448.serverHandshakeKey, nonce: nonce,
                                   plaintext: Array("hello".utf8) + [23], additionalData: header)!
        #expect(second == header + expected.ciphertext + expected.tag)
    }

    @Test(arguments: CipherSuite.allCases)
    func damagedOrReplayedRecordsDoNotOpen(suite: CipherSuite) throws {
        var sender = RecordProtection(suite: suite, trafficSecret: secret)
        let record = sender.seal(Array("secret".utf8), type: .applicationData)
        func framed(_ bytes: [UInt8]) throws -> TLSRecord {
            var framer = RecordFramer()
            framer.append(bytes)
            return try #require(try framer.nextRecord())
        }
        // Every byte of the body, and the header's type (the additional data).
        var damages: [[UInt8]] = record.indices.dropFirst(5).map { position in
            var damaged = record
            damaged[position] ^= 0x40
            return damaged
        }
        damages.append([ContentType.handshake.rawValue] + record.dropFirst())
        for damaged in damages {
            var receiver = RecordProtection(suite: suite, trafficSecret: secret)
            #expect(throws: TLSError.self) { try receiver.open(framed(damaged)) }
        }
        // Opened under the wrong sequence number (as after a replay).
        var receiver = RecordProtection(suite: suite, trafficSecret: secret)
        _ = try receiver.open(framed(record))
        #expect(throws: TLSError(.badRecordMAC, "a record does not decrypt")) { try receiver.open(framed(record)) }
    }

    @Test func paddingIsStrippedAndARecordOfPaddingAloneIsRefused() throws {
        let (key, iv) = KeySchedule<SHA256>.trafficKeys(secret: secret, keySize: 16)
        func sealed(_ inner: [UInt8]) -> TLSRecord {
            let header: [UInt8] = [23, 3, 3, UInt8((inner.count + 16) >> 8), UInt8(truncatingIfNeeded: inner.count + 16)]
            let box = AESGCM.seal(key: key, nonce: iv, plaintext: inner, additionalData: header)!
            return TLSRecord(type: .applicationData, header: header, body: box.ciphertext + box.tag)
        }
        var receiver = RecordProtection(suite: .aes128GCMSHA256, trafficSecret: secret)
        let opened = try receiver.open(sealed([7, 7, 22, 0, 0, 0]))
        #expect(opened.type == .handshake)
        #expect(opened.content == [7, 7])
        var another = RecordProtection(suite: .aes128GCMSHA256, trafficSecret: secret)
        #expect(throws: TLSError(.unexpectedMessage, "a record of padding alone")) { try another.open(sealed([0, 0, 0])) }
    }
}
