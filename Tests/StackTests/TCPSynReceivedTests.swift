import Testing
@testable import Stack
import Wire

/// RFC 9293 §3.10.7.2 (LISTEN, a SYN arrives) and §3.10.7.4 in SYN-RECEIVED.
@Suite struct TCPSynReceivedTests {
    @Test func synIsAnsweredWithSynAck() {
        let h = TCPHarness()
        let syn = fromPeer(remoteISS, .syn, options: mssOption(1200))
        h.connection = TCPConnection(acceptingSyn: syn.header, initialSequence: localISS, configuration: plainConfiguration(), now: h.now)
        h.poll()
        h.recv([fromUs(localISS, ack: remoteISS + 1, .syn, options: mssOption(1000))])
        #expect(h.connection.state == .synReceived)
    }

    @Test func synAckAnswersOnlyTheOptionsTheSynOffered() {
        // RFC 7323 §§1.3, 2.2 and RFC 2018 §2: no TS, wscale or sackOK in a SYN-ACK unless the SYN had them.
        var c = plainConfiguration()
        c.timestamps = true; c.selectiveAcknowledgments = true; c.windowScaling = true
        let h = TCPHarness()
        h.connection = TCPConnection(acceptingSyn: fromPeer(remoteISS, .syn, options: mssOption(1460)).header,
                                     initialSequence: localISS, configuration: c, now: h.now)
        h.poll()
        h.recv([fromUs(localISS, ack: remoteISS + 1, .syn, options: mssOption(1000))])
    }

    @Test func synAckAnswersEveryOfferedOption() {
        var c = plainConfiguration()
        c.timestamps = true; c.selectiveAcknowledgments = true; c.windowScaling = true
        c.receiveBufferSize = 256 * 1024
        let h = TCPHarness()
        let offered = TCPOptions(maximumSegmentSize: 1460, windowScale: 7, sackPermitted: true,
                                 timestamps: TCPTimestamps(value: 777, echoReply: 0))
        h.connection = TCPConnection(acceptingSyn: fromPeer(remoteISS, .syn, options: offered).header,
                                     initialSequence: localISS, configuration: c, now: h.now, timestampOffset: 5)
        h.poll()
        let answer = TCPOptions(maximumSegmentSize: 1000, windowScale: 3, sackPermitted: true,
                                timestamps: TCPTimestamps(value: 10_005, echoReply: 777))
        h.recv([fromUs(localISS, ack: remoteISS + 1, .syn, window: 65535, options: answer)])
    }

    @Test func retransmittedSynResendsTheSynAckAtOnce() {
        let h = TCPHarness.synReceived()
        h.send(fromPeer(remoteISS, .syn, options: mssOption(1000)))
        h.recv([fromUs(localISS, ack: remoteISS + 1, .syn, options: mssOption(1000))])
    }

    @Test func ackCompletesTheHandshake() {
        let h = TCPHarness.synReceived()
        h.send(fromPeer(remoteISS + 1, ack: localISS + 1, []))
        h.recv([])
        #expect(h.connection.state == .established)
        #expect(h.connection.takeEvents() == .connected)
    }

    @Test func ackWithDataCompletesTheHandshakeAndDeliversIt() {
        let h = TCPHarness.synReceived()
        h.send(fromPeer(remoteISS + 1, ack: localISS + 1, [.psh], payload: bytes(10)))
        h.recv([])
        #expect(h.connection.state == .established)
        #expect(h.read() == bytes(10))
        h.recv([fromUs(localISS + 1, ack: remoteISS + 11, [])])
    }

    @Test func unacceptableAckIsAnsweredWithReset() {
        // RFC 9293 §3.10.7.4 fifth, SYN-RECEIVED: <SEQ=SEG.ACK><CTL=RST>.
        let h = TCPHarness.synReceived()
        h.send(fromPeer(remoteISS + 1, ack: localISS + 100, []))
        h.recv([fromUs(localISS + 100, .rst, window: 0)])
        #expect(h.connection.state == .synReceived)
    }

    @Test func resetInWindowEndsTheConnection() {
        let h = TCPHarness.synReceived()
        h.send(fromPeer(remoteISS + 1, .rst))
        h.recv([])
        #expect(h.connection.state == .closed)
        #expect(h.connection.takeEvents().contains(.reset))
    }

    @Test func segmentWithoutAckIsDropped() {
        let h = TCPHarness.synReceived()
        h.send(fromPeer(remoteISS + 1, [.psh], payload: bytes(5)))
        h.recv([])
        #expect(h.connection.state == .synReceived)
        #expect(h.connection.readableCount == 0)
    }

    @Test func newSynInWindowEndsThePassiveOpen() {
        let h = TCPHarness.synReceived()
        h.send(fromPeer(remoteISS + 5, .syn))
        h.recv([])
        #expect(h.connection.state == .closed)
    }

    @Test func synAckIsRetransmittedWithBackoff() {
        // RFC 6298 §2.1 and §5.5: 1 s, then 2 s.
        let h = TCPHarness.synReceived()
        h.advance(.milliseconds(999))
        h.recv([])
        h.advance(.milliseconds(1))
        h.recv([fromUs(localISS, ack: remoteISS + 1, .syn, options: mssOption(1000))])
        h.advance(.milliseconds(1999))
        h.recv([])
        h.advance(.milliseconds(1))
        h.recv([fromUs(localISS, ack: remoteISS + 1, .syn, options: mssOption(1000))])
    }

    @Test func synAckRetransmissionsGiveUp() {
        var c = plainConfiguration()
        c.maximumSynRetransmissions = 2
        let h = TCPHarness.synReceived(c)
        h.advance(.seconds(1))
        h.advance(.seconds(2))
        h.recv([fromUs(localISS, ack: remoteISS + 1, .syn, options: mssOption(1000)),
                fromUs(localISS, ack: remoteISS + 1, .syn, options: mssOption(1000))])
        h.advance(.seconds(4))
        h.recv([fromUs(localISS + 1, .rst, window: 0)])
        #expect(h.connection.state == .closed)
        #expect(h.connection.takeEvents().contains(.timedOut))
        #expect(h.connection.timeout == .retransmissions)
    }

    @Test func shutdownBeforeTheHandshakeSendsFinAfterIt() {
        let h = TCPHarness.synReceived()
        h.connection.shutdownWrite()
        h.poll()
        h.recv([])
        h.send(fromPeer(remoteISS + 1, ack: localISS + 1, []))
        h.recv([fromUs(localISS + 1, ack: remoteISS + 1, .fin)])
        #expect(h.connection.state == .finWait1)
    }
}

@Suite struct TCPOptionNegotiationTests {
    @Test func peerMSSLargerThanOursIsClampedToOurs() {
        var c = plainConfiguration()
        c.receiveBufferSize = 64000
        let h = TCPHarness()
        h.connection = TCPConnection(acceptingSyn: fromPeer(remoteISS, .syn, options: mssOption(9000)).header,
                                     initialSequence: localISS, configuration: c, now: h.now)
        h.poll(); h.sent.removeAll()
        h.send(fromPeer(remoteISS + 1, ack: localISS + 1, []))
        #expect(h.write(bytes(1500)) == 1500)
        #expect(h.sent.map(\.payload.count) == [1000, 500])
    }

    @Test func missingMSSMeans536() {
        // RFC 9293 §3.7.1.
        let h = TCPHarness.synReceived(synOptions: TCPOptions())
        h.send(fromPeer(remoteISS + 1, ack: localISS + 1, []))
        #expect(h.write(bytes(600)) == 600)
        #expect(h.sent.map(\.payload.count) == [536, 64])
    }

    @Test func peerWindowScaleMultipliesItsWindow() {
        var c = plainConfiguration()
        c.windowScaling = true
        let h = TCPHarness.synReceived(c, synOptions: TCPOptions(maximumSegmentSize: 1000, windowScale: 2))
        // The window in the ACK is scaled by 4: 500 → 2000 bytes.
        h.send(fromPeer(remoteISS + 1, ack: localISS + 1, [], window: 500))
        #expect(h.connection.sendWindow == 2000)
        #expect(h.write(bytes(3000)) == 3000)
        #expect(h.sent.map(\.payload.count) == [1000, 1000])
    }

    /// A full buffer under window scaling advertises 0, not the one scale
    /// unit past it that rounding the room up gave: the peer sent into that
    /// unit instead of probing, saw the bytes trimmed as lost, and backed off.
    @Test func aFullBufferAdvertisesAZeroWindowUnderScaling() {
        var c = plainConfiguration()
        c.windowScaling = true
        c.receiveBufferSize = 300_000
        #expect(c.windowScaleShift == 3)
        let h = TCPHarness.synReceived(c, synOptions: TCPOptions(maximumSegmentSize: 1000, windowScale: 2))
        h.send(fromPeer(remoteISS + 1, ack: localISS + 1, [], window: 5000))
        var offset = 0
        while offset < 299_996 {
            let n = min(1000, 299_996 - offset)
            h.send(fromPeer(remoteISS + 1 + offset, ack: localISS + 1, [], payload: bytes(n)))
            offset += n
        }
        h.advance(.seconds(1))
        #expect(h.connection.readableCount == 299_996)
        #expect(h.sent.last?.header.acknowledgmentNumber == remoteISS + 1 + 299_996)
        #expect(h.sent.last?.header.windowSize == 0, "4 bytes of room: less than a unit of 8")
        // The 4 bytes of room still take what comes (a peer's probe); the window stays shut.
        h.sent.removeAll()
        h.send(fromPeer(remoteISS + 1 + 299_996, ack: localISS + 1, [], payload: bytes(4)))
        h.advance(.seconds(1))
        #expect(h.sent.last?.header.acknowledgmentNumber == remoteISS + 1 + 300_000)
        #expect(h.sent.last?.header.windowSize == 0)
        // A read opens it again, with a window update.
        var sink = [UInt8](repeating: 0, count: 200_000)
        #expect(sink.withUnsafeMutableBytes { h.connection.read(into: $0) } == 200_000)
        h.sent.removeAll()
        h.poll()
        let reopened = Int(h.sent.last?.header.windowSize ?? 0) << 3
        #expect(reopened >= 200_000, "\(h.sent)")
    }

    @Test func windowScaleAbove14IsTreatedAs14() {
        var c = plainConfiguration()
        c.windowScaling = true
        let h = TCPHarness.synReceived(c, synOptions: TCPOptions(maximumSegmentSize: 1000, windowScale: 20))
        h.send(fromPeer(remoteISS + 1, ack: localISS + 1, [], window: 1))
        #expect(h.connection.sendWindow == 1 << 14)
    }

    @Test func timestampsCostTwelveBytesOfEverySegment() {
        var c = plainConfiguration()
        c.timestamps = true
        let h = TCPHarness.synReceived(c, synOptions: TCPOptions(maximumSegmentSize: 1000, timestamps: TCPTimestamps(value: 1, echoReply: 0)))
        h.send(fromPeer(remoteISS + 1, ack: localISS + 1, [], options: TCPOptions(timestamps: TCPTimestamps(value: 2, echoReply: 10_000))))
        #expect(h.write(bytes(1000)) == 1000)
        #expect(h.sent.map(\.payload.count) == [988, 12])
    }
}
