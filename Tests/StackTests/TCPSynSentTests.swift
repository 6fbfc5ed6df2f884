import Testing
@testable import Stack
import Wire

/// Active open, RFC 9293 §3.10.7.3: `exec --forward` opens towards the app,
/// and the deterministic simulation connects two of our stacks.
@Suite struct TCPSynSentTests {
    func connecting(_ configuration: TCPConfiguration = plainConfiguration()) -> TCPHarness {
        let h = TCPHarness()
        h.connection = TCPConnection(connectingFrom: localPort, to: remotePort, initialSequence: localISS,
                                     configuration: configuration, now: h.now)
        h.poll()
        return h
    }

    @Test func connectSendsASyn() {
        let h = connecting()
        h.recv([fromUs(localISS, .syn, options: mssOption(1000))])
        #expect(h.connection.state == .synSent)
    }

    @Test func synOffersEveryEnabledOption() {
        var c = plainConfiguration()
        c.timestamps = true; c.selectiveAcknowledgments = true; c.windowScaling = true
        c.receiveBufferSize = 1 << 20
        let h = connecting(c)
        h.recv([fromUs(localISS, .syn, window: 65535,
                       options: TCPOptions(maximumSegmentSize: 1000, windowScale: 5, sackPermitted: true,
                                           timestamps: TCPTimestamps(value: 10_000, echoReply: 0)))])
    }

    /// A forwarded client that writes and closes before the app's SYN-ACK:
    /// its bytes, then the FIN, follow the handshake. With nothing buffered,
    /// a close in SYN-SENT just forgets the connection (RFC 9293 §3.10.4).
    @Test func bytesAndAFinWrittenBeforeTheHandshakeFollowIt() {
        let h = connecting()
        h.sent.removeAll()
        #expect(bytes(5).withUnsafeBytes { h.connection.write($0) } == 5)
        h.connection.shutdownWrite()
        #expect(h.connection.state == .synSent)
        h.poll()
        h.recv([])
        h.send(fromPeer(remoteISS, ack: localISS + 1, .syn, options: mssOption(1000)))
        #expect(h.connection.state == .finWait1)
        h.recv([fromUs(localISS + 1, ack: remoteISS + 1, [.psh, .fin], payload: bytes(5))])
        let empty = connecting()
        empty.connection.shutdownWrite()
        #expect(empty.connection.state == .closed)
    }

    @Test func synAckEstablishes() {
        let h = connecting()
        h.sent.removeAll()
        h.send(fromPeer(remoteISS, ack: localISS + 1, .syn, options: mssOption(1000)))
        h.recv([fromUs(localISS + 1, ack: remoteISS + 1, [])])
        #expect(h.connection.state == .established)
        #expect(h.connection.takeEvents() == .connected)
    }

    @Test func bareSynIsASimultaneousOpen() {
        let h = connecting()
        h.sent.removeAll()
        h.send(fromPeer(remoteISS, .syn, options: mssOption(1000)))
        h.recv([fromUs(localISS, ack: remoteISS + 1, .syn, options: mssOption(1000))])
        #expect(h.connection.state == .synReceived)
        h.send(fromPeer(remoteISS + 1, ack: localISS + 1, []))
        #expect(h.connection.state == .established)
    }

    @Test func unacceptableAckGetsAReset() {
        let h = connecting()
        h.sent.removeAll()
        h.send(fromPeer(remoteISS, ack: localISS + 50, .syn))
        h.recv([fromUs(localISS + 50, .rst, window: 0)])
        #expect(h.connection.state == .synSent)
    }

    @Test func resetWithAcceptableAckRefusesTheConnection() {
        let h = connecting()
        h.sent.removeAll()
        h.send(fromPeer(SequenceNumber(0), ack: localISS + 1, .rst))
        h.recv([])
        #expect(h.connection.state == .closed)
        #expect(h.connection.takeEvents().contains(.reset))
    }

    @Test func resetWithoutAckIsIgnored() {
        let h = connecting()
        h.sent.removeAll()
        h.send(fromPeer(remoteISS, .rst))
        #expect(h.connection.state == .synSent)
    }

    @Test func synIsRetransmitted() {
        let h = connecting()
        h.sent.removeAll()
        h.advance(.seconds(1))
        h.recv([fromUs(localISS, .syn, options: mssOption(1000))])
    }
}

/// Keepalive and the idle timer.
@Suite struct TCPTimerTests {
    let rcv = remoteISS + 1
    let snd = localISS + 1

    @Test func keepaliveProbesThenGivesUp() {
        var c = plainConfiguration()
        c.keepaliveIdle = .seconds(30)
        c.keepaliveInterval = .seconds(5)
        c.keepaliveProbes = 2
        let h = TCPHarness.established(c)
        h.advance(.seconds(30))
        // RFC 9293 §3.8.4: SEG.SEQ = SND.NXT − 1, no data.
        h.recv([fromUs(snd - 1, ack: rcv, [])])
        h.advance(.seconds(5))
        h.recv([fromUs(snd - 1, ack: rcv, [])])
        h.advance(.seconds(5))
        h.recv([fromUs(snd, .rst, window: 0)])
        #expect(h.connection.takeEvents().contains(.timedOut))
        #expect(h.connection.timeout == .keepalive)
    }

    /// The engine starts probes on a connection configured without them
    /// (an app that closed its side while its request waits): unanswered,
    /// they reset it; the silence already past counts toward the first.
    @Test func keepaliveStartedLaterProbesAndGivesUp() {
        let h = TCPHarness.established(plainConfiguration())
        h.advance(.seconds(3))
        h.recv([])
        h.connection.startKeepalive(idle: .seconds(5), interval: .seconds(5), probes: 2, now: h.now)
        h.advance(.seconds(2))
        h.recv([fromUs(snd - 1, ack: rcv, [])])
        h.advance(.seconds(5))
        h.recv([fromUs(snd - 1, ack: rcv, [])])
        h.advance(.seconds(5))
        h.recv([fromUs(snd, .rst, window: 0)])
        #expect(h.connection.takeEvents().contains(.timedOut))
        #expect(h.connection.timeout == .keepalive)
    }

    @Test func anAnswerResetsTheKeepalive() {
        var c = plainConfiguration()
        c.keepaliveIdle = .seconds(30)
        let h = TCPHarness.established(c)
        h.advance(.seconds(30))
        h.recv([fromUs(snd - 1, ack: rcv, [])])
        h.send(fromPeer(rcv, ack: snd, []))
        h.advance(.seconds(29))
        h.recv([])
        h.advance(.seconds(1))
        h.recv([fromUs(snd - 1, ack: rcv, [])])
        #expect(h.connection.state == .established)
    }

    /// By default an idle connection lives as long as its ends do, as on a
    /// network: a day of silence sends nothing and ends nothing.
    @Test func byDefaultIdleConnectionsLive() {
        #expect(TCPConfiguration().idleTimeout == nil)
        var c = plainConfiguration()
        c.idleTimeout = TCPConfiguration().idleTimeout
        let h = TCPHarness.established(c)
        for _ in 0 ..< 24 {
            h.advance(.seconds(3600))
            h.recv([])
        }
        #expect(h.connection.state == .established)
        #expect(h.connection.takeEvents().isEmpty)
    }

    /// The peer's keepalive probe (RFC 1122 §4.2.3.6: SEG.SEQ = RCV.NXT − 1,
    /// empty or one garbage octet) is answered with an ACK, and the engine is
    /// told after how long a silence it came; ordinary segments tell it nothing.
    @Test func thePeersKeepaliveProbeIsAnsweredAndReported() {
        let h = TCPHarness.established(plainConfiguration())
        h.advance(.seconds(45))
        h.send(fromPeer(rcv - 1, ack: snd, []))
        h.recv([fromUs(snd, ack: rcv, [])])
        #expect(h.connection.takeEvents() == .peerKeepalive)
        #expect(h.connection.peerKeepaliveIdle == .seconds(45))
        h.advance(.seconds(10))
        h.send(fromPeer(rcv - 1, ack: snd, [], payload: [0]))
        h.recv([fromUs(snd, ack: rcv, [])])
        #expect(h.connection.takeEvents() == .peerKeepalive)
        #expect(h.connection.peerKeepaliveIdle == .seconds(10))
        // Data, a duplicate of old data, an ACK: none of them is a probe.
        h.send(fromPeer(rcv, ack: snd, .psh, payload: bytes(10)))
        h.send(fromPeer(rcv - 5, ack: snd, .psh, payload: bytes(5)))
        h.send(fromPeer(rcv + 10, ack: snd, []))
        #expect(!h.connection.takeEvents().contains(.peerKeepalive))
    }

    @Test func idleConnectionsAreReset() {
        var c = plainConfiguration()
        c.idleTimeout = .seconds(60)
        let h = TCPHarness.established(c)
        h.advance(.seconds(59))
        h.recv([])
        h.advance(.seconds(1))
        h.recv([fromUs(snd, .rst, window: 0)])
        #expect(h.connection.state == .closed)
        #expect(h.connection.takeEvents().contains(.timedOut))
        #expect(h.connection.timeout == .idle)
    }

    @Test func nextDeadlineIsTheEarliestTimer() {
        let h = TCPHarness.established()
        #expect(h.connection.nextDeadline == nil)
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(10)))
        #expect(h.connection.nextDeadline == h.now + .milliseconds(20))
        _ = h.write(bytes(10))
        #expect(h.connection.nextDeadline == h.now + .seconds(1))
    }
}

/// SACK (RFC 2018) and timestamps (RFC 7323).
@Suite struct TCPSackAndTimestampTests {
    let rcv = remoteISS + 1
    let snd = localISS + 1

    func sackConnection() -> TCPHarness {
        var c = plainConfiguration()
        c.selectiveAcknowledgments = true
        let h = TCPHarness.synReceived(c, synOptions: TCPOptions(maximumSegmentSize: 1000, sackPermitted: true))
        h.send(fromPeer(rcv, ack: snd, []))
        return h
    }

    @Test func outOfOrderDataIsReportedInSackBlocks() {
        let h = sackConnection()
        h.send(fromPeer(rcv + 100, ack: snd, [], payload: bytes(100, from: 100)))
        h.recv([fromUs(snd, ack: rcv, [], options: TCPOptions(sackBlocks: TCPSackBlocks([TCPSackBlock(left: rcv + 100, right: rcv + 200)])))])
    }

    @Test func theMostRecentBlockComesFirst() {
        // RFC 2018 §4.
        let h = sackConnection()
        h.send(fromPeer(rcv + 100, ack: snd, [], payload: bytes(100, from: 100)))
        h.send(fromPeer(rcv + 300, ack: snd, [], payload: bytes(100, from: 300)))
        h.sent.removeFirst()
        h.recv([fromUs(snd, ack: rcv, [], options: TCPOptions(sackBlocks: TCPSackBlocks([
            TCPSackBlock(left: rcv + 300, right: rcv + 400), TCPSackBlock(left: rcv + 100, right: rcv + 200)])))])
    }

    @Test func blocksDisappearOnceTheGapIsFilled() {
        let h = sackConnection()
        h.send(fromPeer(rcv + 100, ack: snd, [], payload: bytes(100, from: 100)))
        h.sent.removeAll()
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(100)))
        h.recv([fromUs(snd, ack: rcv + 200, [], window: 3800)])
    }

    func dsack(_ left: SequenceNumber, _ right: SequenceNumber) -> TCPOptions {
        TCPOptions(sackBlocks: TCPSackBlocks([TCPSackBlock(left: left, right: right)]))
    }

    /// RFC 2883: data that arrives twice is reported once, as the first
    /// SACK block, below the cumulative ACK, so the sender can tell that its
    /// retransmission was not needed.
    @Test func aDuplicateSegmentIsReportedOnceAsADSack() {
        let h = sackConnection()
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(100)))
        h.recv([])                                 // in order: the ACK may wait
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(100)))
        h.recv([fromUs(snd, ack: rcv + 100, [], window: 3900, options: dsack(rcv, rcv + 100))])
        // The next ACK (for a segment out of order) reports only what it holds.
        h.send(fromPeer(rcv + 200, ack: snd, [], payload: bytes(100, from: 200)))
        h.recv([fromUs(snd, ack: rcv + 100, [], window: 3900, options: dsack(rcv + 200, rcv + 300))])
    }

    @Test func aPartlyOldSegmentReportsItsOldPart() {
        let h = sackConnection()
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(100)))
        h.send(fromPeer(rcv + 50, ack: snd, [], payload: bytes(100, from: 50)))
        h.recv([fromUs(snd, ack: rcv + 150, [], window: 3850, options: dsack(rcv + 50, rcv + 100))])
    }

    @Test func noSackBlocksWithoutPermission() {
        var c = plainConfiguration()
        c.selectiveAcknowledgments = true
        let h = TCPHarness.established(c)
        h.send(fromPeer(rcv + 100, ack: snd, [], payload: bytes(100, from: 100)))
        h.recv([fromUs(snd, ack: rcv, [])])
    }

    func timestampConnection() -> TCPHarness {
        var c = plainConfiguration()
        c.timestamps = true
        let h = TCPHarness.synReceived(c, synOptions: TCPOptions(maximumSegmentSize: 1000, timestamps: TCPTimestamps(value: 500, echoReply: 0)))
        h.send(fromPeer(rcv, ack: snd, [], options: TCPOptions(timestamps: TCPTimestamps(value: 501, echoReply: 10_000))))
        return h
    }

    @Test func timestampsAreEchoed() {
        let h = timestampConnection()
        h.send(fromPeer(rcv, ack: snd, [], options: TCPOptions(timestamps: TCPTimestamps(value: 600, echoReply: 10_000)), payload: bytes(10)))
        _ = h.read()
        h.recv([fromUs(snd, ack: rcv + 10, [], options: TCPOptions(timestamps: TCPTimestamps(value: 10_000, echoReply: 600)))])
    }

    @Test func pawsDropsASegmentWithAnOldTimestamp() {
        // RFC 7323 §5.3.
        let h = timestampConnection()
        h.send(fromPeer(rcv, ack: snd, [], options: TCPOptions(timestamps: TCPTimestamps(value: 400, echoReply: 10_000)), payload: bytes(10)))
        h.recv([fromUs(snd, ack: rcv, [], options: TCPOptions(timestamps: TCPTimestamps(value: 10_000, echoReply: 501)))])
        #expect(h.connection.readableCount == 0)
    }

    @Test func timestampsAcrossTheirWrapAreNotOld() {
        var c = plainConfiguration()
        c.timestamps = true
        let h = TCPHarness.synReceived(c, synOptions: TCPOptions(maximumSegmentSize: 1000, timestamps: TCPTimestamps(value: 0xffff_fff0, echoReply: 0)))
        h.send(fromPeer(rcv, ack: snd, [], options: TCPOptions(timestamps: TCPTimestamps(value: 0x10, echoReply: 10_000)), payload: bytes(10)))
        #expect(h.connection.readableCount == 10)
    }

    @Test func echoedTimestampsGiveRTTSamples() {
        let h = timestampConnection()
        _ = h.write(bytes(10))
        h.advance(.milliseconds(30))
        h.send(fromPeer(rcv, ack: snd + 10, [], options: TCPOptions(timestamps: TCPTimestamps(value: 700, echoReply: 10_000))))
        // The handshake's ACK echoed the SYN-ACK's TSval at once (a 0 ms sample); then 30 ms:
        // SRTT = 7/8·0 + 1/8·30 (RFC 6298 §2.3).
        #expect(h.connection.retransmission.smoothedRTT == .microseconds(3750))
    }
}

/// SACK-based loss recovery (RFC 6675): the peer's SACK blocks fill a
/// scoreboard, loss is declared from it, and each hole is resent once.
@Suite struct TCPSackRecoveryTests {
    let rcv = remoteISS + 1
    let snd = localISS + 1

    func sackSender() -> TCPHarness {
        var c = plainConfiguration()
        c.selectiveAcknowledgments = true
        let h = TCPHarness.synReceived(c, synOptions: TCPOptions(maximumSegmentSize: 1000, sackPermitted: true))
        h.send(fromPeer(rcv, ack: snd, []))
        _ = h.write(bytes(5000))
        h.sent.removeAll()
        return h
    }

    func ack(_ una: SequenceNumber, sack: [(Int, Int)]) -> Segment {
        fromPeer(rcv, ack: una, [], options: TCPOptions(sackBlocks: TCPSackBlocks(sack.map {
            TCPSackBlock(left: snd + $0.0, right: snd + $0.1) })))
    }

    @Test func sackedDataAboveALossStartsRecoveryAndResendsTheHoleOnce() {
        let h = sackSender()
        // Segments 2–5 arrived; the first was lost. 4000 SACKed bytes > 2·SMSS: loss.
        h.send(ack(snd, sack: [(1000, 5000)]))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000))])
        #expect(h.connection.congestion.inFastRecovery)
        // The same report again resends nothing: the hole is already in flight.
        h.send(ack(snd, sack: [(1000, 5000)]))
        h.recv([])
        // The full acknowledgment ends recovery.
        h.send(ack(snd + 5000, sack: []))
        #expect(!h.connection.congestion.inFastRecovery)
        #expect(h.connection.unacknowledgedCount == 0)
    }

    @Test func everyHoleIsResentInOrder() {
        let h = sackSender()
        h.send(ack(snd, sack: [(1000, 2000), (3000, 5000)]))
        // cwnd = ssthresh = 3500 (0.7 of the 5000 in flight); the pipe starts at 0: both holes fit.
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000)),
                fromUs(snd + 2000, ack: rcv, [], payload: bytes(1000, from: 2000))])
    }

    @Test func aPartialAckMovesTheScoreboard() {
        let h = sackSender()
        h.send(ack(snd, sack: [(1000, 2000), (3000, 5000)]))
        h.sent.removeAll()
        // The first hole is repaired; the second is still missing but was already resent.
        h.send(ack(snd + 2000, sack: [(3000, 5000)]))
        h.recv([])
        #expect(h.connection.scoreboard.description == "[1000..<3000]")
    }

    @Test func staleAndDuplicateBlocksAreIgnored() {
        let h = sackSender()
        h.send(ack(snd + 1000, sack: [(0, 1000)]))      // below SND.UNA: a D-SACK
        h.send(ack(snd + 1000, sack: [(9000, 9500)]))   // beyond anything sent
        #expect(h.connection.scoreboard.isEmpty)
        #expect(!h.connection.congestion.inFastRecovery)
    }

    @Test func aTimeoutForgetsTheScoreboard() {
        let h = sackSender()
        h.advance(.milliseconds(10))
        h.send(ack(snd, sack: [(2000, 3000)]))
        // RACK resends the first hole a quarter of a round trip later (see below);
        // that retransmission is lost too, and nothing else comes back.
        h.advance(.microseconds(2500))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000))])
        #expect(!h.connection.scoreboard.isEmpty)
        h.advance(.seconds(1))
        #expect(h.connection.scoreboard.isEmpty)
        #expect(h.connection.counters.retransmissionTimeouts == 1)
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000))])
    }
}

/// RACK (RFC 8985): a segment is lost when one sent after it was delivered
/// and a reordering window has passed, however few segments were in flight.
@Suite struct TCPRackTests {
    let rcv = remoteISS + 1
    let snd = localISS + 1

    func ack(_ una: SequenceNumber, sack: [(Int, Int)]) -> Segment {
        fromPeer(rcv, ack: una, [], options: TCPOptions(sackBlocks: TCPSackBlocks(sack.map {
            TCPSackBlock(left: snd + $0.0, right: snd + $0.1) })))
    }

    /// Five 1000-byte segments sent at once, then 10 ms pass.
    func sender() -> TCPHarness {
        let h = TCPSackRecoveryTests().sackSender()
        h.advance(.milliseconds(10))
        h.recv([])
        return h
    }

    /// Only the last segment arrived: one SACKed segment is below DupThresh,
    /// so RFC 6675 alone would wait for the retransmission timer (1 s here).
    /// RACK declares the four before it lost once a quarter of the minimum
    /// round trip (10 ms) has passed after their expected delivery.
    @Test func aHoleBehindOneSackedSegmentIsResentAfterTheReorderingWindow() {
        let h = sender()
        h.send(ack(snd, sack: [(4000, 5000)]))
        h.recv([])
        #expect(h.connection.rackDeadline == h.now + .microseconds(2500))
        h.advance(.microseconds(2499))
        h.recv([])
        h.advance(.microseconds(1))
        // Fast recovery: cwnd = ssthresh = 0.7 of the 5000 in flight (CUBIC,
        // RFC 9438 §4.6) = 3500, the pipe is 0. The first retransmission goes
        // regardless, the second and third fit, the fourth would not.
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000)),
                fromUs(snd + 1000, ack: rcv, [], payload: bytes(1000, from: 1000)),
                fromUs(snd + 2000, ack: rcv, [], payload: bytes(1000, from: 2000))])
        #expect(h.connection.congestion.inFastRecovery)
        #expect(h.connection.counters.retransmissionTimeouts == 0)
    }

    /// With DupThresh segments SACKed and no reordering seen, there is no
    /// window: the hole is lost at once, as with RFC 6675.
    @Test func threeSackedSegmentsDeclareTheHoleLostAtOnce() {
        let h = sender()
        h.send(ack(snd, sack: [(1000, 4000)]))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000))])
    }

    /// The retransmission of a hole is lost as well. RFC 6675 resends each
    /// hole once and leaves the rest to the timer; RACK sees that data sent
    /// after the retransmission was delivered, and resends it again.
    @Test func aLostRetransmissionIsResentWhenLaterDataArrives() {
        let h = sender()
        h.send(ack(snd, sack: [(1000, 5000)]))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000))])
        h.advance(.milliseconds(1))
        // New data, sent after the retransmission (pipe 1000, cwnd 3500).
        #expect(h.write(bytes(1000, from: 5000)) == 1000)
        h.recv([fromUs(snd + 5000, ack: rcv, [.psh], payload: bytes(1000, from: 5000))])
        h.advance(.milliseconds(10))
        h.send(ack(snd, sack: [(1000, 6000)]))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000))])
        #expect(h.connection.counters.retransmissionTimeouts == 0)
        #expect(h.connection.counters.sackRetransmits == 2)
    }

    /// The same report again says nothing new: a retransmission in flight is
    /// not resent, even when it left at the same instant as the data whose
    /// SACK RACK holds (the order of transmissions, not the clock, decides).
    @Test func aRepeatedReportDoesNotResendAHoleInFlight() {
        let h = sender()
        h.send(ack(snd, sack: [(1000, 5000)]))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000))])
        h.send(ack(snd, sack: [(1000, 5000)]))
        h.recv([])
        #expect(h.connection.rackDeadline == nil)
    }

    /// A hole that is filled by its original, late, shows reordering: from
    /// then on a hole waits for the window even with DupThresh segments SACKed.
    @Test func reorderingWidensTheWindow() {
        let h = sender()
        h.send(ack(snd, sack: [(1000, 2000)]))
        h.recv([])
        // The first segment arrives late but before the window ends: no retransmission.
        h.advance(.milliseconds(1))
        h.send(ack(snd + 5000, sack: []))
        h.recv([])
        #expect(h.connection.rack.reorderingSeen)
        #expect(h.connection.rackDeadline == nil)
        #expect(h.write(bytes(4000, from: 5000)) == 4000)
        h.recv([fromUs(snd + 5000, ack: rcv, [], payload: bytes(1000, from: 5000)),
                fromUs(snd + 6000, ack: rcv, [], payload: bytes(1000, from: 6000)),
                fromUs(snd + 7000, ack: rcv, [], payload: bytes(1000, from: 7000)),
                fromUs(snd + 8000, ack: rcv, [.psh], payload: bytes(1000, from: 8000))])
        // Three segments above the first of the burst are SACKed, which alone
        // would declare it lost at once; after reordering it gets a quarter of
        // the minimum round trip (10 ms) past its expected delivery.
        h.advance(.milliseconds(10))
        h.send(ack(snd + 5000, sack: [(6000, 9000)]))
        h.recv([])
        #expect(h.connection.rackDeadline == h.now + .microseconds(2500))
        #expect(!h.connection.congestion.inFastRecovery)
        h.advance(.microseconds(2500))
        h.recv([fromUs(snd + 5000, ack: rcv, [], payload: bytes(1000, from: 5000))])
        #expect(h.connection.congestion.inFastRecovery)
    }
}
