import Crypto
import Testing
import TLS
import X509

// A small TLS 1.2 server for the tests of Sluice's TLS 1.2 client
// (TLS12ClientHelloTests.swift), written from the RFCs (5246, 5288, 7627,
// 7905, 5746, 8422) rather than from Sluice's code: its own records, PRF,
// key block and Finished, and a switch for each way a server can misbehave.

// MARK: - Wire helpers

enum Wire12 {
    static func u16(_ value: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)] }
    static func u24(_ value: Int) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    static func be64(_ value: UInt64) -> [UInt8] { (0 ..< 8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64($0))) } }

    /// A handshake message: type, 3-byte length, body (RFC 5246 §7.4).
    static func message(_ type: UInt8, _ body: [UInt8]) -> [UInt8] { [type] + u24(body.count) + body }

    /// A plaintext record (§6.2.1), version 3.3.
    static func record(_ type: UInt8, _ body: [UInt8]) -> [UInt8] { [type, 3, 3] + u16(body.count) + body }

    static func extensions(_ list: [(UInt16, [UInt8])]) -> [UInt8] {
        let bytes = list.flatMap { u16(Int($0.0)) + u16($0.1.count) + $0.1 }
        return u16(bytes.count) + bytes
    }

    static let downgradeTLS12: [UInt8] = [0x44, 0x4F, 0x57, 0x4E, 0x47, 0x52, 0x44, 0x01]
    static let downgradeTLS11: [UInt8] = [0x44, 0x4F, 0x57, 0x4E, 0x47, 0x52, 0x44, 0x00]
}

/// Cuts bytes into records, keeping a partial one for later.
struct ScriptedRecordBuffer {
    private var bytes: [UInt8] = []

    struct Record {
        var type: UInt8
        var version: UInt16
        var body: [UInt8]
    }

    mutating func append(_ more: [UInt8]) { bytes += more }

    var isEmpty: Bool { bytes.isEmpty }

    mutating func next() -> Record? {
        guard bytes.count >= 5 else { return nil }
        let length = Int(bytes[3]) << 8 | Int(bytes[4])
        guard bytes.count >= 5 + length else { return nil }
        let record = Record(type: bytes[0], version: UInt16(bytes[1]) << 8 | UInt16(bytes[2]), body: Array(bytes[5 ..< 5 + length]))
        bytes.removeFirst(5 + length)
        return record
    }

    mutating func all() -> [Record] {
        var records: [Record] = []
        while let record = next() { records.append(record) }
        return records
    }
}

/// Splits handshake bytes (the bodies of handshake records, in order) into whole messages.
func scriptedMessages(_ bytes: [UInt8]) -> (messages: [(type: UInt8, raw: [UInt8])], rest: [UInt8]) {
    var messages: [(type: UInt8, raw: [UInt8])] = []
    var offset = 0
    while bytes.count - offset >= 4 {
        let length = Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
        guard bytes.count - offset >= 4 + length else { break }
        messages.append((bytes[offset], Array(bytes[offset ..< offset + 4 + length])))
        offset += 4 + length
    }
    return (messages, Array(bytes[offset...]))
}

/// The client's first flight: its ClientHello, whole, and parsed.
func scriptedClientHello(_ bytes: [UInt8]) throws -> (hello: ClientHello, raw: [UInt8], recordVersions: [UInt16]) {
    var buffer = ScriptedRecordBuffer()
    buffer.append(bytes)
    let records = buffer.all()
    #expect(buffer.isEmpty, "the first flight ends inside a record")
    #expect(records.allSatisfy { $0.type == 22 }, "the first flight holds a record that is not a handshake record")
    let (messages, rest) = scriptedMessages(records.flatMap(\.body))
    try #require(messages.count == 1 && rest.isEmpty, "the first flight is not exactly one handshake message")
    try #require(messages[0].type == 1)
    return (try ClientHello(body: Array(messages[0].raw.dropFirst(4))), messages[0].raw, records.map(\.version))
}

// MARK: - One direction of TLS 1.2 AEAD records, as the RFCs say

/// RFC 5246 §6.2.3.3 with RFC 5288 §3 (AES-GCM: a 4-byte salt from the key
/// block and an 8-byte explicit nonce carried in each record) or RFC 7905 §2
/// (ChaCha20-Poly1305: the 12-byte IV xored with the sequence number). The
/// additional data is seq_num + type + version + plaintext length.
struct ScriptedProtection {
    let gcm: Bool
    let key: [UInt8]
    let iv: [UInt8]
    /// GCM's explicit nonces are this plus the sequence number: unique, but
    /// not the sequence number, so a reader that ignores the record's nonce fails.
    var explicitNonceBase: UInt64 = 0x5EED_0000_0000_1000
    private(set) var sequence: UInt64 = 0
    /// What the peer put in front of each GCM record.
    private(set) var explicitNoncesSeen: [[UInt8]] = []

    init(gcm: Bool, key: [UInt8], iv: [UInt8]) {
        self.gcm = gcm
        self.key = key
        self.iv = iv
    }

    private func nonce(explicit: [UInt8]) -> [UInt8] {
        if gcm { return iv + explicit }
        let padded = [0, 0, 0, 0] + Wire12.be64(sequence)
        return zip(iv, padded).map { $0 ^ $1 }
    }

    private func additionalData(type: UInt8, count: Int) -> [UInt8] {
        Wire12.be64(sequence) + [type, 3, 3] + Wire12.u16(count)
    }

    mutating func seal(type: UInt8, _ plaintext: [UInt8]) -> [UInt8] {
        let explicit = gcm ? Wire12.be64(explicitNonceBase &+ sequence) : []
        let aad = additionalData(type: type, count: plaintext.count)
        let sealed = gcm ? AESGCM.seal(key: key, nonce: nonce(explicit: explicit), plaintext: plaintext, additionalData: aad)
            : ChaCha20Poly1305.seal(key: key, nonce: nonce(explicit: explicit), plaintext: plaintext, additionalData: aad)
        sequence += 1
        return Wire12.record(type, explicit + sealed!.ciphertext + sealed!.tag)
    }

    mutating func open(_ record: ScriptedRecordBuffer.Record) throws -> [UInt8] {
        let overhead = (gcm ? 8 : 0) + 16
        guard record.body.count >= overhead else { throw ScriptedFailure("a protected record of \(record.body.count) bytes") }
        guard record.version == 0x0303 else { throw ScriptedFailure("a protected record of version \(record.version)") }
        let explicit = gcm ? Array(record.body[0 ..< 8]) : []
        let ciphertext = Array(record.body[explicit.count ..< record.body.count - 16])
        let tag = Array(record.body[(record.body.count - 16)...])
        let aad = additionalData(type: record.type, count: ciphertext.count)
        let opened = gcm ? AESGCM.open(key: key, nonce: nonce(explicit: explicit), ciphertext: ciphertext, tag: tag, additionalData: aad)
            : ChaCha20Poly1305.open(key: key, nonce: nonce(explicit: explicit), ciphertext: ciphertext, tag: tag, additionalData: aad)
        guard let opened else { throw ScriptedFailure("record \(sequence) (type \(record.type)) from the client does not decrypt") }
        if gcm { explicitNoncesSeen.append(explicit) }
        sequence += 1
        return opened
    }
}

struct ScriptedFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - The scripted server

/// A TLS 1.2 server that does one full ECDHE_ECDSA handshake (RFC 5246 §7.3)
/// and then moves data, with switches for each thing the client must check.
struct Scripted12Server {
    struct Options {
        /// What the ServerHello chooses (and, for the four Sluice suites, what keys are made for).
        var suite: UInt16 = 0xCCA9
        var serverRandom: [UInt8]?
        var sessionID: [UInt8] = (0 ..< 32).map { UInt8(0xA0 + $0) }
        var echoExtendedMasterSecret = true
        /// The renegotiation_info body: one zero byte (an empty renegotiated_connection), or nil for none.
        var renegotiationInfo: [UInt8]? = [0]
        var ecPointFormats = true
        var alpn = true
        var extraExtensions: [(UInt16, [UInt8])] = []
        var certificateRequest = false
        var sendServerKeyExchange = true
        /// The ServerKeyExchange's named curve: X25519 and P-256 are carried
        /// through; for others the point is well formed but the handshake cannot finish here.
        var group: UInt16 = 0x001D
        /// ECCurveType: 3 is named_curve, the only one RFC 8422 leaves.
        var curveType: UInt8 = 3
        /// In place of the server's real point (signed all the same).
        var pointOverride: [UInt8]?
        var alpnProtocol = "http/1.1"
        var applicationDataBeforeFinished = false
        var signatureScheme: UInt16 = 0x0403
        enum Signature { case correct, corrupt, swappedRandoms }
        var signature = Signature.correct
        var corruptFinished = false
        var finishedWithoutChangeCipherSpec = false
        /// nil: each message in its own record; else the flight cut into records of this many bytes.
        var recordSize: Int?
    }

    let options: Options
    private let leafKey: P256.PrivateKey
    private let chain: [[UInt8]]
    private let random: SeededRandom

    private var inbox = ScriptedRecordBuffer()
    private var handshakeBytes: [UInt8] = []
    private(set) var transcript: [UInt8] = []
    private(set) var hello: ClientHello?
    private(set) var clientRandom: [UInt8] = []
    private(set) var serverRandom: [UInt8] = []
    private let privateKey: [UInt8]
    private let p256Key: P256.PrivateKey
    private(set) var masterSecret: [UInt8] = []
    private(set) var usedExtendedMasterSecret = false
    /// The body of the client's Certificate, when it sent one.
    private(set) var clientCertificateBody: [UInt8]?
    /// The handshake message types the client sent, in order, and the record types after its ChangeCipherSpec.
    private(set) var clientMessageTypes: [UInt8] = []
    private(set) var reading: ScriptedProtection?
    private(set) var writing: ScriptedProtection?
    private(set) var clientRecordPlaintextSizes: [Int] = []

    init(fixtures: HandshakeFixtures, options: Options = Options()) {
        self.options = options
        leafKey = fixtures.leafKey
        chain = [fixtures.leafCertificate]
        random = fixtures.random
        privateKey = fixtures.random.bytes(32)
        p256Key = P256.PrivateKey(randomBytes: fixtures.random.bytes(48))!
    }

    /// The P-384 base point, uncompressed (SEC 2 §2.5.1): a valid public key.
    static let p384Generator: [UInt8] = [0x04] + Array(hexBytes(
        "aa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a385502f25dbf55296c3a545e3872760ab7"
            + "3617de4a96262c6f5d9e98bf9292dc29f8f41dbd289a147ce9da3113b5f0b8c00a60b1ce1d7e819d7a431d7c90ea0e5f"))

    static func hexBytes(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8).map { $0 <= 0x39 ? $0 - 0x30 : $0 - 0x57 }
        return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }

    var gcm: Bool { options.suite == 0xC02B || options.suite == 0xC02F }

    /// Reads the ClientHello; returns ServerHello ... ServerHelloDone.
    mutating func answerHello(_ bytes: [UInt8]) throws -> [UInt8] {
        let (hello, raw, _) = try scriptedClientHello(bytes)
        self.hello = hello
        transcript += raw
        clientRandom = hello.random
        serverRandom = options.serverRandom ?? random.bytes(24) + [0x53, 0x4C, 0x55, 0x49, 0x43, 0x45, 0x31, 0x32]
        let offered = Set(hello.extensions.map(\.type.rawValue))

        var extensions: [(UInt16, [UInt8])] = []
        if let info = options.renegotiationInfo { extensions.append((0xFF01, info)) }
        if options.echoExtendedMasterSecret, offered.contains(23) { extensions.append((23, [])) }
        if options.ecPointFormats { extensions.append((11, [1, 0])) }
        if options.alpn, offered.contains(16) { extensions.append((16, Wire12.u16(options.alpnProtocol.utf8.count + 1) + [UInt8(options.alpnProtocol.utf8.count)] + Array(options.alpnProtocol.utf8))) }
        extensions += options.extraExtensions
        usedExtendedMasterSecret = options.echoExtendedMasterSecret && offered.contains(23)

        let serverHello = Wire12.message(2, [3, 3] + serverRandom + [UInt8(options.sessionID.count)] + options.sessionID
            + Wire12.u16(Int(options.suite)) + [0] + Wire12.extensions(extensions))
        let certificates = chain.flatMap { Wire12.u24($0.count) + $0 }
        let certificate = Wire12.message(11, Wire12.u24(certificates.count) + certificates)

        // RFC 8422 §5.4: ECParameters (named_curve), the point, then the signature
        // over client_random + server_random + params.
        var point: [UInt8]
        switch options.group {
        case 0x001D: point = X25519.publicKey(privateKey: privateKey)!
        case 0x0017: point = p256Key.publicKey.x962Representation
        case 0x0018: point = Self.p384Generator
        case 0x0019: point = [4] + random.bytes(132) // secp521r1's size; not checked by a client that refuses the group
        case 0x001E: point = random.bytes(56) // x448
        default: point = random.bytes(32)
        }
        if let override = options.pointOverride { point = override }
        let params = [options.curveType] + Wire12.u16(Int(options.group)) + [UInt8(point.count)] + point
        let signed: [UInt8]
        switch options.signature {
        case .correct, .corrupt: signed = clientRandom + serverRandom + params
        case .swappedRandoms: signed = serverRandom + clientRandom + params
        }
        var signature = leafKey.signature(forDigest: SHA256.hash(signed)).derRepresentation
        if options.signature == .corrupt {
            // Still well-formed DER: the last byte of s changes.
            signature[signature.count - 1] ^= 0x01
        }
        let serverKeyExchange = Wire12.message(12, params + Wire12.u16(Int(options.signatureScheme)) + Wire12.u16(signature.count) + signature)

        var flight = [serverHello, certificate]
        if options.sendServerKeyExchange { flight.append(serverKeyExchange) }
        if options.certificateRequest {
            // §7.4.4: rsa_sign and ecdsa_sign, two schemes, no authorities.
            flight.append(Wire12.message(13, [2, 1, 64] + Wire12.u16(4) + [4, 3, 8, 4] + Wire12.u16(0)))
        }
        flight.append(Wire12.message(14, []))
        transcript += flight.flatMap { $0 }

        guard let size = options.recordSize else { return flight.flatMap { Wire12.record(22, $0) } }
        let all = flight.flatMap { $0 }
        return stride(from: 0, to: all.count, by: size).flatMap { Wire12.record(22, Array(all[$0 ..< min($0 + size, all.count)])) }
    }

    private var keySizes: (key: Int, iv: Int) { gcm ? (16, 4) : (32, 12) }

    /// Reads [Certificate], ClientKeyExchange, ChangeCipherSpec, Finished;
    /// returns ChangeCipherSpec and the server's Finished.
    mutating func answerClientFlight(_ bytes: [UInt8]) throws -> [UInt8] {
        inbox.append(bytes)
        var sawChangeCipherSpec = false
        var clientFinished: [UInt8]?
        while let record = inbox.next() {
            guard record.version == 0x0303 else { throw ScriptedFailure("a client record of version \(record.version)") }
            if let reading, sawChangeCipherSpec {
                var protection = reading
                let plaintext = try protection.open(record)
                self.reading = protection
                guard record.type == 22 else { throw ScriptedFailure("a protected record of type \(record.type) before the client's Finished") }
                handshakeBytes += plaintext
                let (messages, rest) = scriptedMessages(handshakeBytes)
                handshakeBytes = rest
                for message in messages {
                    clientMessageTypes.append(message.type)
                    guard message.type == 20, clientFinished == nil else {
                        throw ScriptedFailure("protected handshake message \(message.type) from the client")
                    }
                    clientFinished = message.raw
                }
                continue
            }
            switch record.type {
            case 22:
                handshakeBytes += record.body
                let (messages, rest) = scriptedMessages(handshakeBytes)
                handshakeBytes = rest
                for message in messages {
                    clientMessageTypes.append(message.type)
                    try clientMessage(type: message.type, raw: message.raw)
                }
            case 20:
                guard record.body == [1] else { throw ScriptedFailure("a ChangeCipherSpec of \(record.body)") }
                guard handshakeBytes.isEmpty, reading != nil else {
                    throw ScriptedFailure("ChangeCipherSpec before the ClientKeyExchange (messages: \(clientMessageTypes))")
                }
                sawChangeCipherSpec = true
            default:
                throw ScriptedFailure("a client record of type \(record.type) in the clear (body \(record.body))")
            }
        }
        guard let clientFinished else { throw ScriptedFailure("no Finished from the client (messages: \(clientMessageTypes))") }

        // §7.4.9: PRF(master_secret, "client finished", Hash(handshake_messages))[0..11].
        let expected = IndependentPRF.prf(masterSecret, "client finished", SHA256.hash(transcript), 12)
        guard clientFinished == Wire12.message(20, expected) else {
            throw ScriptedFailure("the client's Finished \(clientFinished) is not \(Wire12.message(20, expected))"
                + " (extended master secret: \(usedExtendedMasterSecret))")
        }
        transcript += clientFinished

        var verifyData = IndependentPRF.prf(masterSecret, "server finished", SHA256.hash(transcript), 12)
        if options.corruptFinished { verifyData[0] ^= 0x80 }
        let changeCipherSpec = options.finishedWithoutChangeCipherSpec ? [] : Wire12.record(20, [1])
        let early = options.applicationDataBeforeFinished ? writing!.seal(type: 23, Array("too early".utf8)) : []
        return changeCipherSpec + early + writing!.seal(type: 22, Wire12.message(20, verifyData))
    }

    private mutating func clientMessage(type: UInt8, raw: [UInt8]) throws {
        let body = Array(raw.dropFirst(4))
        switch type {
        case 11:
            guard options.certificateRequest, clientCertificateBody == nil, reading == nil else {
                throw ScriptedFailure("a Certificate the server did not ask for")
            }
            clientCertificateBody = body
            transcript += raw
        case 16:
            guard reading == nil else { throw ScriptedFailure("a second ClientKeyExchange") }
            if options.certificateRequest, clientCertificateBody == nil {
                throw ScriptedFailure("a ClientKeyExchange without the Certificate a CertificateRequest asks for (§7.4.6)")
            }
            // RFC 8422 §5.7: ClientECDiffieHellmanPublic, an ECPoint<1..255>.
            guard !body.isEmpty, Int(body[0]) == body.count - 1 else { throw ScriptedFailure("a malformed ClientKeyExchange \(body)") }
            let share = Array(body[1...])
            let preMasterSecret: [UInt8]
            switch options.group {
            case 0x001D:
                guard share.count == 32, let secret = X25519.sharedSecret(privateKey: privateKey, peerPublicKey: share) else {
                    throw ScriptedFailure("an unusable X25519 share \(share)")
                }
                preMasterSecret = secret
            case 0x0017:
                // RFC 8422 §5.10: the premaster secret is the x-coordinate.
                guard share.count == 65, let peer = P256.PublicKey(x962Representation: share), let secret = p256Key.sharedSecret(with: peer) else {
                    throw ScriptedFailure("an unusable P-256 share \(share)")
                }
                preMasterSecret = secret
            default:
                throw ScriptedFailure("the scripted server cannot finish group \(options.group) (share of \(share.count) bytes)")
            }
            transcript += raw
            masterSecret = usedExtendedMasterSecret
                // RFC 7627 §4: session_hash = Hash(handshake_messages) through ClientKeyExchange.
                ? IndependentPRF.prf(preMasterSecret, "extended master secret", SHA256.hash(transcript), 48)
                : IndependentPRF.prf(preMasterSecret, "master secret", clientRandom + serverRandom, 48)
            let (keySize, ivSize) = keySizes
            let block = IndependentPRF.prf(masterSecret, "key expansion", serverRandom + clientRandom, 2 * (keySize + ivSize))
            reading = ScriptedProtection(gcm: gcm, key: Array(block[0 ..< keySize]),
                                         iv: Array(block[2 * keySize ..< 2 * keySize + ivSize]))
            writing = ScriptedProtection(gcm: gcm, key: Array(block[keySize ..< 2 * keySize]),
                                         iv: Array(block[2 * keySize + ivSize ..< 2 * keySize + 2 * ivSize]))
        default:
            throw ScriptedFailure("handshake message \(type) from the client in the clear")
        }
    }

    /// Application data as records of at most 2^14 bytes.
    mutating func send(_ data: [UInt8]) -> [UInt8] {
        stride(from: 0, to: data.count, by: 16384).flatMap { writing!.seal(type: 23, Array(data[$0 ..< min($0 + 16384, data.count)])) }
    }

    mutating func sendProtected(type: UInt8, _ content: [UInt8]) -> [UInt8] { writing!.seal(type: type, content) }

    /// Opens whatever whole records the client sent since.
    mutating func receive(_ bytes: [UInt8]) throws -> [(type: UInt8, content: [UInt8])] {
        inbox.append(bytes)
        var contents: [(type: UInt8, content: [UInt8])] = []
        while let record = inbox.next() {
            let content = try reading!.open(record)
            clientRecordPlaintextSizes.append(content.count)
            contents.append((record.type, content))
        }
        return contents
    }

    var clientExplicitNonces: [[UInt8]] { reading?.explicitNoncesSeen ?? [] }
}

/// Bytes to the client, `chunk` at a time, the outputs summed.
func deliver(_ bytes: [UInt8], to client: inout TLSClient, chunk: Int = .max) throws(TLSError) -> TLSOutput {
    var total = TLSOutput()
    var offset = 0
    while offset < bytes.count {
        let end = min(offset + chunk, bytes.count)
        let output = try client.receive(Array(bytes[offset ..< end]))
        total.toPeer += output.toPeer
        total.applicationData += output.applicationData
        total.handshakeCompleted = total.handshakeCompleted || output.handshakeCompleted
        total.peerClosed = total.peerClosed || output.peerClosed
        offset = end
    }
    return total
}
