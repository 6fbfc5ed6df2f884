import Crypto
import Testing
import TLS

@Suite struct KeyScheduleTests {
    typealias Schedule = KeySchedule<SHA256>

    @Test func theX25519ExchangeOfTheTrace() {
        #expect(X25519.publicKey(privateKey: RFC8448.clientPrivateKey) == RFC8448.clientPublicKey)
        #expect(X25519.publicKey(privateKey: RFC8448.serverPrivateKey) == RFC8448.serverPublicKey)
        #expect(X25519.sharedSecret(privateKey: RFC8448.serverPrivateKey, peerPublicKey: RFC8448.clientPublicKey) == RFC8448.sharedSecret)
    }

    @Test func everySecretOfTheSimpleHandshake() {
        #expect(Schedule.earlySecret == RFC8448.earlySecret)
        let handshakeSecret = Schedule.handshakeSecret(sharedSecret: RFC8448.sharedSecret)
        #expect(handshakeSecret == RFC8448.handshakeSecret)

        var transcript = Transcript()
        transcript.append(RFC8448.clientHello)
        transcript.append(RFC8448.serverHello)
        let helloHash = transcript.hash(SHA256.self)
        #expect(helloHash == RFC8448.helloTranscriptHash)
        let clientHandshake = Schedule.deriveSecret(handshakeSecret, label: "c hs traffic", transcriptHash: helloHash)
        let serverHandshake = Schedule.deriveSecret(handshakeSecret, label: "s hs traffic", transcriptHash: helloHash)
        #expect(clientHandshake == RFC8448.clientHandshakeTrafficSecret)
        #expect(serverHandshake == RFC8448.serverHandshakeTrafficSecret)

        let serverKeys = Schedule.trafficKeys(secret: serverHandshake, keySize: 16)
        #expect(serverKeys.key == RFC8448.serverHandshakeKey)
        #expect(serverKeys.iv == RFC8448.serverHandshakeIV)
        let clientKeys = Schedule.trafficKeys(secret: clientHandshake, keySize: 16)
        #expect(clientKeys.key == RFC8448.clientHandshakeKey)
        #expect(clientKeys.iv == RFC8448.clientHandshakeIV)

        transcript.append(RFC8448.encryptedExtensions)
        transcript.append(RFC8448.certificate)
        transcript.append(RFC8448.certificateVerify)
        let serverVerifyData = Schedule.finishedVerifyData(baseKey: serverHandshake, transcriptHash: transcript.hash(SHA256.self))
        #expect(HandshakeMessage.encode(type: .finished, body: serverVerifyData) == RFC8448.serverFinished)
        transcript.append(RFC8448.serverFinished)

        let masterSecret = Schedule.masterSecret(handshakeSecret: handshakeSecret)
        #expect(masterSecret == RFC8448.masterSecret)
        let throughServerFinished = transcript.hash(SHA256.self)
        let clientApplication = Schedule.deriveSecret(masterSecret, label: "c ap traffic", transcriptHash: throughServerFinished)
        let serverApplication = Schedule.deriveSecret(masterSecret, label: "s ap traffic", transcriptHash: throughServerFinished)
        #expect(clientApplication == RFC8448.clientApplicationTrafficSecret)
        #expect(serverApplication == RFC8448.serverApplicationTrafficSecret)
        #expect(Schedule.trafficKeys(secret: serverApplication, keySize: 16).key == RFC8448.serverApplicationKey)
        #expect(Schedule.trafficKeys(secret: serverApplication, keySize: 16).iv == RFC8448.serverApplicationIV)
        #expect(Schedule.trafficKeys(secret: clientApplication, keySize: 16).key == RFC8448.clientApplicationKey)
        #expect(Schedule.trafficKeys(secret: clientApplication, keySize: 16).iv == RFC8448.clientApplicationIV)

        let clientVerifyData = Schedule.finishedVerifyData(baseKey: clientHandshake, transcriptHash: throughServerFinished)
        #expect(HandshakeMessage.encode(type: .finished, body: clientVerifyData) == RFC8448.clientFinished)
    }

    // §4.4.1: after a HelloRetryRequest the first ClientHello is hashed into
    // a message_hash message of its own.
    @Test func aRetryReplacesTheFirstHelloWithItsHash() {
        var transcript = Transcript()
        transcript.append(RFC8448.clientHello)
        transcript.replaceWithMessageHash(SHA256.self)
        #expect(transcript.bytes == [254, 0, 0, 32] + SHA256.hash(RFC8448.clientHello))
    }
}
