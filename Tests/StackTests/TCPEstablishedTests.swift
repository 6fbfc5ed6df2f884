import Testing
@testable import Stack
import Wire

/// RFC 9293 §3.10.7.4 in ESTABLISHED: receiving, acknowledging, sending.
@Suite struct TCPEstablishedReceiveTests {
    let rcv = remoteISS + 1
    let snd = localISS + 1

    @Test func inOrderDataWaitsForTheDrainThenIsAcknowledged() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, [.psh], payload: bytes(100)))
        h.recv([])
        #expect(h.connection.takeEvents() == .readable)
        #expect(h.read() == bytes(100))
        h.recv([fromUs(snd, ack: rcv + 100, [])])
    }

    /// The engine asks before keeping bytes unsent (`Tunnel.keepsHold`): an
    /// ACK the drain earned must go with the next output, not wait.
    @Test func theDrainMakesAnAcknowledgmentDue() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, [.psh], payload: bytes(100)))
        h.recv([])
        #expect(!h.connection.acknowledgmentDue, "nothing drained yet: the ACK may wait")
        h.connection.consume(100)
        #expect(h.connection.acknowledgmentDue)
        h.poll()
        h.recv([fromUs(snd, ack: rcv + 100, [])])
        #expect(!h.connection.acknowledgmentDue, "the ACK went")
    }

    @Test func delayedAckFiresWhenNobodyDrains() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, [.psh], payload: bytes(100)))
        h.advance(.milliseconds(19))
        h.recv([])
        h.advance(.milliseconds(1))
        h.recv([fromUs(snd, ack: rcv + 100, [], window: 3900)])
    }

    @Test func everySecondSegmentIsAcknowledgedAtOnce() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(1000)))
        h.recv([])
        h.send(fromPeer(rcv + 1000, ack: snd, [], payload: bytes(1000, from: 1000)))
        h.recv([fromUs(snd, ack: rcv + 2000, [], window: 2000)])
    }

    @Test func outOfOrderDataIsAcknowledgedAtOnceWithADuplicateAck() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv + 500, ack: snd, [], payload: bytes(500, from: 500)))
        h.recv([fromUs(snd, ack: rcv, [])])
        #expect(h.connection.readableCount == 0)
        #expect(h.connection.takeEvents() == [])
    }

    @Test func fillingTheGapDeliversEverythingAndAcksAtOnce() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv + 500, ack: snd, [], payload: bytes(500, from: 500)))
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(500)))
        h.recv([fromUs(snd, ack: rcv, []), fromUs(snd, ack: rcv + 1000, [], window: 3000)])
        #expect(h.read() == bytes(1000))
    }

    @Test func overlappingSegmentsDeliverEachByteOnce() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(300)))
        h.send(fromPeer(rcv + 100, ack: snd, [], payload: bytes(400, from: 100)))
        #expect(h.read() == bytes(500))
    }

    @Test func duplicateSegmentIsAcknowledgedAndNotDeliveredTwice() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(100)))
        #expect(h.read() == bytes(100))
        h.recv([fromUs(snd, ack: rcv + 100, [])])
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(100)))
        h.recv([fromUs(snd, ack: rcv + 100, [])])
        #expect(h.connection.readableCount == 0)
    }

    @Test func segmentEntirelyBeyondTheWindowIsAnsweredWithAnAck() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv + 5000, ack: snd, [], payload: bytes(100)))
        h.recv([fromUs(snd, ack: rcv, [])])
        #expect(h.connection.readableCount == 0)
    }

    @Test func bytesPastTheWindowAreTrimmed() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(4500)))
        h.recv([fromUs(snd, ack: rcv + 4000, [], window: 0)])
        #expect(h.read() == bytes(4000))
    }

    @Test func windowClosesAsDataWaitsAndReopensWhenDrained() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(1000)))
        h.send(fromPeer(rcv + 1000, ack: snd, [], payload: bytes(1000, from: 1000)))
        h.send(fromPeer(rcv + 2000, ack: snd, [], payload: bytes(1000, from: 2000)))
        h.send(fromPeer(rcv + 3000, ack: snd, [], payload: bytes(1000, from: 3000)))
        h.recv([fromUs(snd, ack: rcv + 2000, [], window: 2000), fromUs(snd, ack: rcv + 4000, [], window: 0)])
        // A zero window accepts only an empty segment at RCV.NXT: data gets an ACK and is dropped.
        h.send(fromPeer(rcv + 4000, ack: snd, [], payload: bytes(10)))
        h.recv([fromUs(snd, ack: rcv + 4000, [], window: 0)])
        // Draining reopens the window, announced at once.
        #expect(h.read(1500) == bytes(1500))
        h.recv([fromUs(snd, ack: rcv + 4000, [], window: 1500)])
    }

    @Test func smallReadsDoNotAnnounceSillyWindows() {
        // RFC 9293 §3.8.6.2.2: no update until the window grows by min(buffer/2, MSS).
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(1000)))
        h.send(fromPeer(rcv + 1000, ack: snd, [], payload: bytes(1000, from: 1000)))
        h.recv([fromUs(snd, ack: rcv + 2000, [], window: 2000)])
        #expect(h.read(10).count == 10)
        h.recv([])
        #expect(h.read(990).count == 990)
        h.recv([fromUs(snd, ack: rcv + 2000, [], window: 3000)])
    }

    @Test func dataAlongsideAWrongAckIsNotDelivered() {
        // RFC 5961 §5.2: an ACK beyond SND.NXT gets an ACK and the segment is dropped.
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd + 10, [], payload: bytes(10)))
        h.recv([fromUs(snd, ack: rcv, [])])
        #expect(h.connection.readableCount == 0)
    }

    @Test func ackFarBelowTheWindowIsAnsweredAndDropped() {
        let h = TCPHarness.established(window: 1000)
        // MAX.SND.WND is 64000 from the SYN: go further back than that.
        h.send(fromPeer(rcv, ack: snd - 100_000, [], payload: bytes(10)))
        h.recv([fromUs(snd, ack: rcv, [])])
        #expect(h.connection.readableCount == 0)
    }

    @Test func oldButAcceptableAckIsIgnoredAndDataDelivered() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd - 10, [], payload: bytes(10)))
        #expect(h.connection.readableCount == 10)
    }

    @Test func segmentWithoutAckIsDropped() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, [.psh], payload: bytes(10)))
        h.recv([])
        #expect(h.connection.readableCount == 0)
    }

    @Test func urgentDataIsDeliveredInLine() {
        let h = TCPHarness.established()
        var segment = fromPeer(rcv, ack: snd, [.urg], payload: bytes(10))
        segment.header.urgentPointer = 3
        h.send(segment)
        #expect(h.read() == bytes(10))
    }
}

/// RFC 5961: blind reset, SYN and data injection protections.
@Suite struct TCPChallengeAckTests {
    let rcv = remoteISS + 1
    let snd = localISS + 1

    @Test func resetAtExactlyRcvNxtResets() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, .rst))
        h.recv([])
        #expect(h.connection.state == .closed)
        #expect(h.connection.takeEvents().contains(.reset))
    }

    @Test func resetInWindowButNotExactGetsAChallengeAck() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv + 100, .rst))
        h.recv([fromUs(snd, ack: rcv, [])])
        #expect(h.connection.state == .established)
    }

    @Test func resetOutsideTheWindowIsIgnored() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv + 100_000, .rst))
        h.send(fromPeer(rcv - 1, .rst))
        h.recv([])
        #expect(h.connection.state == .established)
    }

    @Test func synInEstablishedGetsAChallengeAck() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv + 10, .syn))
        h.recv([fromUs(snd, ack: rcv, [])])
        #expect(h.connection.state == .established)
        // Even a SYN outside the window: the unacceptable-segment ACK answers it.
        h.send(fromPeer(rcv - 100, .syn))
        h.recv([fromUs(snd, ack: rcv, [])])
    }

    @Test func challengeAcksAreRateLimited() {
        // RFC 5961 §7: at most ten a second here.
        let h = TCPHarness.established()
        for _ in 0 ..< 15 { h.send(fromPeer(rcv + 100, .rst)) }
        #expect(h.sent.count == 10)
        h.sent.removeAll()
        h.advance(.seconds(1))
        h.send(fromPeer(rcv + 100, .rst))
        h.recv([fromUs(snd, ack: rcv, [])])
    }
}

/// Sending: segmentation, windows, retransmission, congestion control.
@Suite struct TCPEstablishedSendTests {
    let rcv = remoteISS + 1
    let snd = localISS + 1

    @Test func writesAreCutIntoMSSSegmentsWithPshOnTheLast() {
        let h = TCPHarness.established()
        #expect(h.write(bytes(2500)) == 2500)
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000)),
                fromUs(snd + 1000, ack: rcv, [], payload: bytes(1000, from: 1000)),
                fromUs(snd + 2000, ack: rcv, [.psh], payload: bytes(500, from: 2000))])
    }

    @Test func sendingStopsAtThePeersWindow() {
        let h = TCPHarness.established(window: 1500)
        _ = h.write(bytes(3000))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000)),
                fromUs(snd + 1000, ack: rcv, [], payload: bytes(500, from: 1000))])
        // Each ACK that opens the window lets more out.
        h.send(fromPeer(rcv, ack: snd + 1500, [], window: 1500))
        h.recv([fromUs(snd + 1500, ack: rcv, [], payload: bytes(1000, from: 1500)),
                fromUs(snd + 2500, ack: rcv, [.psh], payload: bytes(500, from: 2500))])
    }

    /// A send buffer of 20,000 bytes: room for more than the initial window.
    func roomyHarness() -> TCPHarness {
        var c = plainConfiguration()
        c.sendBufferSize = 20_000
        return TCPHarness.established(c)
    }

    @Test func sendingStopsAtTheInitialCongestionWindow() {
        let h = roomyHarness()
        _ = h.write(bytes(15_000))
        // RFC 6928: ten segments.
        #expect(h.sent.count == 10)
        #expect(h.sent.last?.header.sequenceNumber == snd + 9000)
    }

    /// Sender-side silly window avoidance for the congestion window (RFC
    /// 9293 §3.8.6.2.1): room for part of a segment waits while data is in
    /// flight, until an ACK makes room for a whole one.
    @Test func congestionWindowRoomForPartOfASegmentWaitsForAWholeOne() {
        let h = roomyHarness()
        _ = h.write(bytes(15_000))
        #expect(h.sent.count == 10)
        h.sent.removeAll()
        // 500 bytes acknowledged: cwnd 10,500, 9,500 in flight: room for one segment.
        h.send(fromPeer(rcv, ack: snd + 500, []))
        h.recv([fromUs(snd + 10_000, ack: rcv, [], payload: bytes(1000, from: 10_000))])
        // 300 more: cwnd 10,800, 10,200 in flight: room for 600 bytes, and nothing goes.
        h.send(fromPeer(rcv, ack: snd + 800, []))
        h.recv([])
        // 400 more: room for 1,400: one segment, and the 400 left wait.
        h.send(fromPeer(rcv, ack: snd + 1200, []))
        h.recv([fromUs(snd + 11_000, ack: rcv, [], payload: bytes(1000, from: 11_000))])
    }

    /// RFC 7661: requests and short answers never fill the window, and their
    /// ACKs do not grow it; the first large answer leaves in the initial
    /// window, not in one grown by every small one before it (until
    /// 2026-12-07, 30 answers of 100 bytes made it 13,000 bytes).
    @Test func shortAnswersDoNotGrowTheCongestionWindow() {
        let h = roomyHarness()
        for i in 0 ..< 30 {
            _ = h.write(bytes(100, from: i * 100))
            h.recv([fromUs(snd + i * 100, ack: rcv, [.psh], payload: bytes(100, from: i * 100))])
            h.send(fromPeer(rcv, ack: snd + (i + 1) * 100, []))
        }
        #expect(h.connection.congestion.congestionWindow == 10_000)
        _ = h.write(bytes(15_000, from: 3000))
        #expect(h.sent.count == 10)
        #expect(h.sent.last?.header.sequenceNumber == snd + 3000 + 9000)
    }

    @Test func theSendBufferBoundsWhatIsAccepted() {
        let h = TCPHarness.established()
        #expect(h.write(bytes(10_000)) == 8000)
        #expect(h.connection.writableCount == 0)
    }

    @Test func acknowledgmentFreesTheBufferAndSignalsWritable() {
        let h = TCPHarness.established()
        _ = h.write(bytes(1000))
        h.recv([fromUs(snd, ack: rcv, [.psh], payload: bytes(1000))])
        #expect(h.connection.unacknowledgedCount == 1000)
        h.send(fromPeer(rcv, ack: snd + 1000, []))
        h.recv([])
        #expect(h.connection.unacknowledgedCount == 0)
        #expect(h.connection.takeEvents() == .writable)
    }

    @Test func partialAcknowledgmentFreesOnlyWhatItCovers() {
        let h = TCPHarness.established()
        _ = h.write(bytes(2000))
        h.send(fromPeer(rcv, ack: snd + 700, []))
        #expect(h.connection.unacknowledgedCount == 1300)
        #expect(h.connection.sendUnacknowledged == snd + 700)
    }

    @Test func timeoutRetransmitsFromTheFirstUnacknowledgedByte() {
        let h = TCPHarness.established()
        _ = h.write(bytes(2000))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000)), fromUs(snd + 1000, ack: rcv, [.psh], payload: bytes(1000, from: 1000))])
        h.advance(.milliseconds(999))
        h.recv([])
        h.advance(.milliseconds(1))
        // RFC 5681 §3.1: after a timeout the window is one segment.
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000))])
        h.send(fromPeer(rcv, ack: snd + 1000, []))
        h.recv([fromUs(snd + 1000, ack: rcv, [.psh], payload: bytes(1000, from: 1000))])
    }

    @Test func afterATimeoutOurAcksStillCarrySndNxt() {
        // Found by the simulation: pulling SND.NXT back to SND.UNA made our pure ACKs
        // look old to a peer that had received the data but whose ACK was lost.
        let h = TCPHarness.established()
        _ = h.write(bytes(2000))
        h.sent.removeAll()
        h.advance(.seconds(1))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000))])
        h.send(fromPeer(rcv, ack: snd, [.psh], payload: bytes(10)))
        _ = h.read()
        h.recv([fromUs(snd + 2000, ack: rcv + 10, [], window: 4000)])
    }

    @Test func emptyUnacceptableSegmentsAreAnsweredTwiceASecondAtMost() {
        // Two confused peers must not ACK each other's ACKs forever.
        let h = TCPHarness.established()
        for _ in 0 ..< 5 { h.send(fromPeer(rcv - 100, ack: snd, [])) }
        h.recv([fromUs(snd, ack: rcv, [])])
        h.advance(.milliseconds(500))
        h.send(fromPeer(rcv - 100, ack: snd, []))
        h.recv([fromUs(snd, ack: rcv, [])])
    }

    @Test func retransmissionTimeoutBacksOff() {
        let h = TCPHarness.established()
        _ = h.write(bytes(100))
        h.sent.removeAll()
        h.advance(.seconds(1))
        h.recv([fromUs(snd, ack: rcv, [.psh], payload: bytes(100))])
        h.advance(.milliseconds(1999))
        h.recv([])
        h.advance(.milliseconds(1))
        h.recv([fromUs(snd, ack: rcv, [.psh], payload: bytes(100))])
    }

    @Test func retransmissionsGiveUpWithAReset() {
        var c = plainConfiguration()
        c.maximumRetransmissions = 3
        let h = TCPHarness.established(c)
        _ = h.write(bytes(100))
        for step in 0 ..< 3 { h.advance(.seconds(1 << step)) }
        #expect(h.sent.count == 4)
        h.sent.removeAll()
        h.advance(.seconds(8))
        h.recv([fromUs(snd + 100, .rst, window: 0)])
        #expect(h.connection.state == .closed)
        #expect(h.connection.takeEvents().contains(.timedOut))
        #expect(h.connection.timeout == .retransmissions)
    }

    @Test func rttSamplesShortenTheTimeoutAndATailLossProbeComesFirst() {
        let h = TCPHarness.established()
        _ = h.write(bytes(100))
        h.advance(.milliseconds(50))
        h.send(fromPeer(rcv, ack: snd + 100, []))
        // SRTT 50 ms, RTTVAR 25 ms: RTO = 150 ms, floored at 200 ms. The tail loss
        // probe (RFC 8985 §7.2) comes at 2·SRTT + 40 ms, one segment being out.
        _ = h.write(bytes(100, from: 100))
        h.sent.removeAll()
        h.advance(.milliseconds(139))
        h.recv([])
        h.advance(.milliseconds(1))
        h.recv([fromUs(snd + 100, ack: rcv, [], payload: bytes(100, from: 100))])
        // The probe restarts the retransmission timer (§7.3): 200 ms from now.
        h.advance(.milliseconds(199))
        h.recv([])
        h.advance(.milliseconds(1))
        h.recv([fromUs(snd + 100, ack: rcv, [.psh], payload: bytes(100, from: 100))])
    }

    /// A 30,000-byte send buffer and one 100-byte round trip of 10 ms behind it
    /// (SRTT 10 ms, cwnd 10,100), the peer's window then at `window`.
    func probeHarness(window: UInt16 = 64000) -> TCPHarness {
        var c = plainConfiguration()
        c.sendBufferSize = 30_000
        let h = TCPHarness.established(c)
        _ = h.write(bytes(100))
        h.advance(.milliseconds(10))
        h.send(fromPeer(rcv, ack: snd + 100, [], window: window))
        h.sent.removeAll()
        return h
    }

    /// Nothing until the probe timeout: PTO = 2·SRTT with many segments out.
    func untilTheProbeTimeout(_ h: TCPHarness) {
        h.sent.removeAll()
        h.advance(.milliseconds(19))
        h.recv([])
        h.advance(.milliseconds(1))
    }

    @Test func aTailLossProbeSendsNewDataWhenTheCongestionWindowHoldsItBack() {
        let h = probeHarness()
        _ = h.write(bytes(20_000, from: 100))
        // Ten full segments; cwnd's last 100 bytes wait for room for a whole one (no runt).
        #expect(h.sent.count == 10)
        untilTheProbeTimeout(h)
        h.recv([fromUs(snd + 10_100, ack: rcv, [], payload: bytes(1000, from: 10_100))])
        #expect(h.connection.counters.tailLossProbes == 1)
    }

    /// RFC 8985 §7.3: when the peer's window holds back the unsent data, the
    /// probe is the last segment *sent*, again. (It once was the last bytes
    /// buffered: new data past SND.NXT that SND.NXT never recorded, so the
    /// peer's ACK for it looked like an ACK of unsent data and was refused,
    /// for ever: found as a stalled download among 24 concurrent ones.)
    @Test func aTailLossProbeHeldBackByTheWindowResendsTheLastSegmentSent() {
        let h = probeHarness(window: 3000)        // room for 3000 more bytes
        _ = h.write(bytes(5000, from: 100))
        #expect(h.sent.count == 3)                // the window holds the other 2000 bytes back
        untilTheProbeTimeout(h)
        h.recv([fromUs(snd + 2100, ack: rcv, [], payload: bytes(1000, from: 2100))])
        #expect(h.connection.counters.tailLossProbes == 1)
        #expect(h.connection.sendNext == snd + 3100 && h.connection.sendMaximum == snd + 3100)
    }

    /// On a TUN the SRTT is microseconds: the probe still waits 10 ms (as
    /// Linux's does), not 2·SRTT. At 2 ms it resent 64 KB for nothing whenever
    /// a busy app's kernel was a little late to ACK a full window.
    @Test func theProbeTimeoutIsAtLeastTenMilliseconds() {
        var c = plainConfiguration()
        c.sendBufferSize = 30_000
        let h = TCPHarness.established(c)
        _ = h.write(bytes(100))
        h.advance(.microseconds(50))
        h.send(fromPeer(rcv, ack: snd + 100, [], window: 64000))
        _ = h.write(bytes(20_000, from: 100))
        h.sent.removeAll()
        h.advance(.microseconds(9_900))
        h.recv([])
        h.advance(.microseconds(100))
        #expect(h.connection.counters.tailLossProbes == 1)
    }

    @Test func threeDuplicateAcksTriggerFastRetransmit() {
        let h = TCPHarness.established()
        _ = h.write(bytes(5000))
        h.sent.removeAll()
        h.send(fromPeer(rcv, ack: snd + 1000, []))
        h.sent.removeAll()
        for _ in 0 ..< 2 { h.send(fromPeer(rcv, ack: snd + 1000, [])) }
        h.recv([])
        h.send(fromPeer(rcv, ack: snd + 1000, []))
        h.recv([fromUs(snd + 1000, ack: rcv, [], payload: bytes(1000, from: 1000))])
    }

    @Test func aPartialAckDuringRecoveryRetransmitsTheNextHole() {
        let h = TCPHarness.established()
        _ = h.write(bytes(5000))
        h.sent.removeAll()
        for _ in 0 ..< 3 { h.send(fromPeer(rcv, ack: snd, [])) }
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000))])
        h.send(fromPeer(rcv, ack: snd + 2000, []))
        h.recv([fromUs(snd + 2000, ack: rcv, [], payload: bytes(1000, from: 2000))])
    }

    @Test func ackedDataIsPiggybackedOnOutgoingData() {
        let h = TCPHarness.established()
        h.send(fromPeer(rcv, ack: snd, [.psh], payload: bytes(10)))
        _ = h.read()
        h.sent.removeAll()
        h.send(fromPeer(rcv + 10, ack: snd, [.psh], payload: bytes(10)))
        _ = h.write(bytes(5))
        // The reply carries the ACK; no separate pure ACK follows.
        h.recv([fromUs(snd, ack: rcv + 20, [.psh], window: 3990, payload: bytes(5))])
    }

    @Test func zeroWindowStartsThePersistTimerAndProbes() {
        let h = TCPHarness.established(window: 0)
        _ = h.write(bytes(100))
        h.recv([])
        h.advance(.seconds(1))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1))])
        // Still closed: the next probe backs off.
        h.send(fromPeer(rcv, ack: snd, [], window: 0))
        h.recv([])
        h.advance(.milliseconds(1999))
        h.recv([])
        h.advance(.milliseconds(1))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1))])
        // The window opens: everything goes.
        h.send(fromPeer(rcv, ack: snd, [], window: 4000))
        h.recv([fromUs(snd, ack: rcv, [.psh], payload: bytes(100))])
    }

    @Test func probeAcceptedByAnOpeningWindowIsNotSentTwice() {
        let h = TCPHarness.established(window: 0)
        _ = h.write(bytes(100))
        h.advance(.seconds(1))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1))])
        h.send(fromPeer(rcv, ack: snd + 1, [], window: 4000))
        h.recv([fromUs(snd + 1, ack: rcv, [.psh], payload: bytes(99, from: 1))])
    }
}
