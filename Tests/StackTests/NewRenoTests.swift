import Testing
import Stack
import Wire

@Suite struct NewRenoTests {
    let mss = 1000

    @Test func initialWindowIsTenSegments() {
        // RFC 6928: min(10·MSS, max(2·MSS, 14600)).
        #expect(CongestionControl(maximumSegmentSize: 1000, algorithm: .newReno).congestionWindow == 10_000)
        #expect(CongestionControl(maximumSegmentSize: 1460, algorithm: .newReno).congestionWindow == 14_600)
        #expect(CongestionControl(maximumSegmentSize: 9000, algorithm: .newReno).congestionWindow == 18_000)
    }

    @Test func slowStartGrowsByAtMostOneSegmentPerAck() {
        var cc = CongestionControl(maximumSegmentSize: mss, algorithm: .newReno)
        _ = cc.onNewAck(acked: 5000, highestAcked: SequenceNumber(5000), flightSize: 10_000, now: .zero)
        #expect(cc.congestionWindow == 11_000)
        _ = cc.onNewAck(acked: 500, highestAcked: SequenceNumber(5500), flightSize: 5000, now: .zero)
        #expect(cc.congestionWindow == 11_500)
    }

    @Test func threeDuplicateAcksRetransmitAndHalve() {
        var cc = CongestionControl(maximumSegmentSize: mss, algorithm: .newReno)
        #expect(cc.onDuplicateAck(flightSize: 10_000, highestSent: SequenceNumber(10_000)) == .none)
        #expect(cc.onDuplicateAck(flightSize: 10_000, highestSent: SequenceNumber(10_000)) == .none)
        #expect(cc.onDuplicateAck(flightSize: 10_000, highestSent: SequenceNumber(10_000)) == .retransmitFirstUnacknowledged)
        // RFC 5681 §3.2: ssthresh = max(FlightSize/2, 2·SMSS), cwnd = ssthresh + 3·SMSS.
        #expect(cc.slowStartThreshold == 5000)
        #expect(cc.congestionWindow == 8000)
        #expect(cc.inFastRecovery)
        // Further duplicates inflate the window.
        #expect(cc.onDuplicateAck(flightSize: 10_000, highestSent: SequenceNumber(10_000)) == .none)
        #expect(cc.congestionWindow == 9000)
    }

    @Test func partialAckRetransmitsAndFullAckEndsRecovery() {
        var cc = CongestionControl(maximumSegmentSize: mss, algorithm: .newReno)
        for _ in 0 ..< 3 { _ = cc.onDuplicateAck(flightSize: 10_000, highestSent: SequenceNumber(10_000)) }
        // RFC 6582 §3.2: a partial ACK retransmits the next hole and deflates.
        #expect(cc.onNewAck(acked: 2000, highestAcked: SequenceNumber(2000), flightSize: 10_000, now: .zero) == .retransmitFirstUnacknowledged)
        #expect(cc.congestionWindow == 7000)
        #expect(cc.inFastRecovery)
        // A full ACK (at or past recover) ends recovery at ssthresh.
        #expect(cc.onNewAck(acked: 8000, highestAcked: SequenceNumber(10_000), flightSize: 8000, now: .zero) == .none)
        #expect(!cc.inFastRecovery)
        #expect(cc.congestionWindow == 2000) // nothing left in flight: max(0, SMSS) + SMSS
    }

    @Test func recoveryPointComparesAcrossTheWrap() {
        var cc = CongestionControl(maximumSegmentSize: mss, algorithm: .newReno)
        let recover = SequenceNumber(0xffff_ff00) + 0x200 // wrapped: 0x100
        for _ in 0 ..< 3 { _ = cc.onDuplicateAck(flightSize: 10_000, highestSent: recover) }
        #expect(cc.onNewAck(acked: 100, highestAcked: SequenceNumber(0xffff_ff80), flightSize: 10_000, now: .zero) == .retransmitFirstUnacknowledged)
        #expect(cc.onNewAck(acked: 0x180, highestAcked: recover, flightSize: 10_000, now: .zero) == .none)
        #expect(!cc.inFastRecovery)
    }

    @Test func congestionAvoidanceAddsOneSegmentPerWindow() {
        var cc = CongestionControl(maximumSegmentSize: mss, algorithm: .newReno)
        cc.onTimeout(flightSize: 8000) // cwnd 1000, ssthresh 4000
        var una = SequenceNumber(0)
        func ack(_ n: Int) { una += n; _ = cc.onNewAck(acked: n, highestAcked: una, flightSize: 8000, now: .zero) }
        for _ in 0 ..< 3 { ack(1000) }
        #expect(cc.congestionWindow == 4000) // slow start reached ssthresh
        for _ in 0 ..< 3 { ack(1000) }
        #expect(cc.congestionWindow == 4000) // 3000 of 4000 bytes: not yet
        ack(1000)
        #expect(cc.congestionWindow == 5000) // one window acknowledged: one more segment
    }

    @Test func fullAckAfterRecoveryAvoidsABurst() {
        // RFC 6582 §3.2 step 3 option (1): min(ssthresh, max(FlightSize, SMSS) + SMSS).
        var cc = CongestionControl(maximumSegmentSize: mss, algorithm: .newReno)
        for _ in 0 ..< 3 { _ = cc.onDuplicateAck(flightSize: 20_000, highestSent: SequenceNumber(20_000)) }
        _ = cc.onNewAck(acked: 20_000, highestAcked: SequenceNumber(20_000), flightSize: 20_000, now: .zero)
        #expect(cc.congestionWindow == 2000)
        #expect(cc.slowStartThreshold == 10_000)
    }

    @Test func timeoutCollapsesToOneSegment() {
        var cc = CongestionControl(maximumSegmentSize: mss, algorithm: .newReno)
        cc.onTimeout(flightSize: 8000)
        #expect(cc.congestionWindow == 1000)
        #expect(cc.slowStartThreshold == 4000)
    }
}
