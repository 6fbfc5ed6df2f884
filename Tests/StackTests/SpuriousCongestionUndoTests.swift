import Testing
@testable import Stack
import Wire

/// RFC 9438 §4.9 (TCPConnection+Undo.swift) through the simulation: a path
/// that only reorders makes RACK retransmit segments that were late, not
/// lost; the receiver's D-SACKs show it, and those congestion events are
/// undone. A path that only drops gets no D-SACK for its retransmissions,
/// and nothing is undone.
extension TCPSimulationTests {
    struct UndoRun {
        var arrived: Bool
        /// Fast recoveries entered and timeouts.
        var events: Int
        var undone: Int
        var elapsed: Instant
        var detail: String
    }

    /// Downloads `size` bytes, the client acknowledging as the engine does
    /// (each segment that needs it at once, its own ACK).
    func undoRun(plan: FaultInjector.Plan, seed: UInt64, undo: Bool, size: Int) -> UndoRun {
        var configuration = TCPConfiguration()
        configuration.maximumSegmentSize = 1460
        configuration.undoSpuriousCongestionEvents = undo
        let (sim, arrived) = download(size, plan: plan, seed: seed, configuration: configuration, acknowledgeEachSegment: true)
        let counters = sim.server?.counters ?? TCPConnection.Counters()
        return UndoRun(arrived: arrived, events: counters.fastRecoveries + counters.retransmissionTimeouts,
                       undone: counters.congestionEventsUndone, elapsed: sim.now,
                       detail: "seed \(seed) undo \(undo): \(sim.now), \(counters)")
    }

    /// 20 ms away, 1% of packets 15 ms late (a LAN device behind a gateway
    /// running `run --tun`, over a radio that reorders): RACK's window is a
    /// quarter of the round trip, so each late segment is retransmitted and
    /// the window cut. With the undo almost every cut is taken back, and 4 MB
    /// arrive in 1.2–2.1 s instead of 4.6–5.3 s (2026-12-07).
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func cutsForSegmentsThatWereOnlyLateAreUndone(seed: UInt64) {
        let plan = FaultInjector.Plan(reorder: 0.01, delay: .milliseconds(10), reorderDelay: .milliseconds(15))
        let with = undoRun(plan: plan, seed: seed, undo: true, size: 4_000_000)
        let without = undoRun(plan: plan, seed: seed, undo: false, size: 4_000_000)
        #expect(with.arrived && without.arrived, "\(with.detail); \(without.detail)")
        #expect(with.events >= 10 && with.undone * 10 >= with.events * 9 && with.undone <= with.events, "\(with.detail)")
        #expect(without.undone == 0, "\(without.detail)")
        #expect(with.elapsed.nanoseconds * 2 < without.elapsed.nanoseconds, "\(with.detail); \(without.detail)")
    }

    /// Lost segments: their retransmissions are the only copies, no D-SACK
    /// comes, and every cut stays (here and on the app's 60 µs path).
    @Test(arguments: [(1, 10_000), (2, 10_000), (3, 30), (4, 30)] as [(UInt64, Int)])
    func cutsForSegmentsThatWereLostStay(seed: UInt64, oneWayMicroseconds: Int) {
        let plan = FaultInjector.Plan(drop: 0.01, delay: .microseconds(oneWayMicroseconds))
        let run = undoRun(plan: plan, seed: seed, undo: true, size: 1_000_000)
        #expect(run.arrived, "\(run.detail)")
        #expect(run.events > 0, "\(run.detail)")
        #expect(run.undone == 0, "\(run.detail)")
    }
}

/// The undo segment by segment: which blocks are D-SACKs (RFC 2883 §4),
/// what a receiver reports, and what an undo restores.
@Suite struct SpuriousCongestionUndoTests {
    let rcv = remoteISS + 1
    let snd = localISS + 1

    /// The peer's ACK with SACK blocks, as the SACK recovery tests write it.
    func ack(_ una: SequenceNumber, sack: [(Int, Int)]) -> Segment { TCPSackRecoveryTests().ack(una, sack: sack) }

    /// Five segments out, the first reported missing: recovery resends it
    /// and cuts the window to 0.7 of the flight; then the late original
    /// arrives and everything is acknowledged.
    func afterASpuriousRecovery() -> TCPHarness {
        let h = TCPSackRecoveryTests().sackSender()
        #expect(h.connection.congestion.congestionWindow == 10_000)
        h.send(ack(snd, sack: [(1000, 5000)]))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000))])
        h.send(ack(snd + 5000, sack: []))
        #expect(!h.connection.congestion.inFastRecovery)
        #expect(h.connection.congestion.slowStartThreshold == 3500)
        #expect(h.connection.counters.fastRecoveries == 1)
        return h
    }

    @Test func aRetransmissionReportedTwiceUndoesTheCut() {
        let h = afterASpuriousRecovery()
        // The retransmission arrived after the original: the receiver reports it below its ACK.
        h.send(ack(snd + 5000, sack: [(0, 1000)]))
        #expect(h.connection.counters.congestionEventsUndone == 1)
        #expect(h.connection.congestion.congestionWindow == 10_000)
        #expect(h.connection.congestion.slowStartThreshold == .max)
        // Reported again, it undoes nothing more.
        h.send(ack(snd + 5000, sack: [(0, 1000)]))
        #expect(h.connection.counters.congestionEventsUndone == 1)
    }

    /// An ACK overtaken on its way arrives after a later one: its SACK block
    /// lies below SND.UNA but above its own acknowledgment. It is stale, not
    /// a D-SACK (taking it for one undid a cut for a real loss).
    @Test func aBlockFromAnOvertakenAckIsNoDuplicateReport() {
        let h = afterASpuriousRecovery()
        h.send(ack(snd, sack: [(1000, 5000)]))
        #expect(h.connection.counters.congestionEventsUndone == 0)
        #expect(h.connection.congestion.slowStartThreshold == 3500)
    }

    /// RFC 2883 §4's other form: the first block inside the second, above the ACK.
    @Test func aFirstBlockInsideTheSecondIsADuplicateReport() {
        let h = TCPSackRecoveryTests().sackSender()
        h.send(ack(snd, sack: [(1000, 5000)]))
        h.recv([fromUs(snd, ack: rcv, [], payload: bytes(1000))])
        // The peer got the resent copy, and reports it inside its block: it had the original too
        // (a receiver whose cumulative ACK was lost reports so).
        h.send(ack(snd, sack: [(0, 1000), (0, 5000)]))
        #expect(h.connection.counters.congestionEventsUndone == 1)
        #expect(h.connection.congestion.congestionWindow == 10_000)
    }

    @Test func withoutTheSettingNothingIsUndone() {
        var c = plainConfiguration()
        c.selectiveAcknowledgments = true
        c.undoSpuriousCongestionEvents = false
        let h = TCPHarness.synReceived(c, synOptions: TCPOptions(maximumSegmentSize: 1000, sackPermitted: true))
        h.send(fromPeer(rcv, ack: snd, []))
        _ = h.write(bytes(5000))
        h.sent.removeAll()
        h.send(ack(snd, sack: [(1000, 5000)]))
        h.send(ack(snd + 5000, sack: []))
        h.send(ack(snd + 5000, sack: [(0, 1000)]))
        #expect(h.connection.counters.congestionEventsUndone == 0)
        #expect(h.connection.congestion.slowStartThreshold == 3500)
    }

    /// The receiver's side: out-of-order data that arrives twice is reported
    /// inside the SACK block that holds it; duplicates below RCV.NXT that
    /// touch go out as one block.
    @Test func aReceiverReportsEveryCopyItGotTwice() {
        var c = plainConfiguration()
        c.selectiveAcknowledgments = true
        let h = TCPHarness.synReceived(c, synOptions: TCPOptions(maximumSegmentSize: 1000, sackPermitted: true))
        h.send(fromPeer(rcv, ack: snd, []))
        h.sent.removeAll()
        func sack(_ blocks: [(Int, Int)]) -> TCPOptions {
            TCPOptions(sackBlocks: TCPSackBlocks(blocks.map { TCPSackBlock(left: rcv + $0.0, right: rcv + $0.1) }))
        }
        h.send(fromPeer(rcv + 1000, ack: snd, [], payload: bytes(500, from: 1000)))
        h.recv([fromUs(snd, ack: rcv, [], window: 4000, options: sack([(1000, 1500)]))])
        h.send(fromPeer(rcv + 1000, ack: snd, [], payload: bytes(500, from: 1000)))
        h.recv([fromUs(snd, ack: rcv, [], window: 4000, options: sack([(1000, 1500), (1000, 1500)]))])
        // Fill the hole, then two touching copies before the ACK goes.
        h.send(fromPeer(rcv, ack: snd, [], payload: bytes(1000)))
        h.recv([fromUs(snd, ack: rcv + 1500, [], window: 2500)])
        for start in [0, 500] {
            let copy = fromPeer(rcv + start, ack: snd, [], payload: bytes(500, from: start))
            copy.payload.withUnsafeBytes { h.connection.receive(copy.header, payload: $0, now: h.now) }
        }
        h.poll()
        h.recv([fromUs(snd, ack: rcv + 1500, [], window: 2500, options: sack([(0, 1000)]))])
    }
}

/// What `CongestionControl.undoReduction` restores.
@Suite struct CongestionUndoTests {
    @Test func aRecoveryIsUndoneToTheWindowBeforeIt() {
        var cc = CongestionControl(maximumSegmentSize: 1000)
        cc.selectiveAcknowledgments = true
        cc.enterRecovery(flightSize: 10_000, highestSent: SequenceNumber(10_000))
        #expect(cc.congestionWindow == 7000 && cc.slowStartThreshold == 7000 && cc.inFastRecovery && cc.hyStart == nil)
        let undone = cc.undoReduction()
        #expect(undone)
        #expect(cc.congestionWindow == 10_000 && cc.slowStartThreshold == .max && !cc.inFastRecovery && cc.hyStart != nil)
        let again = cc.undoReduction()
        #expect(!again)
    }

    @Test func repeatedTimeoutsAreUndoneToBeforeTheFirst() {
        var cc = CongestionControl(maximumSegmentSize: 1000)
        let first = cc.onTimeout(flightSize: 10_000)
        let second = cc.onTimeout(flightSize: 10_000)
        #expect(first && !second)
        #expect(cc.congestionWindow == 1000)
        let undone = cc.undoReduction()
        #expect(undone)
        #expect(cc.congestionWindow == 10_000 && cc.slowStartThreshold == .max)
    }

    /// Each recovery keeps what it reduced: undoing the second restores the
    /// window the first left, not the one before the first.
    @Test func eachRecoveryIsUndoneToTheWindowBeforeIt() {
        var cc = CongestionControl(maximumSegmentSize: 1000)
        cc.selectiveAcknowledgments = true
        cc.enterRecovery(flightSize: 10_000, highestSent: SequenceNumber(10_000))
        _ = cc.onNewAck(acked: 10_000, highestAcked: SequenceNumber(10_000), flightSize: 10_000, now: .zero)
        let window = cc.congestionWindow
        cc.enterRecovery(flightSize: window, highestSent: SequenceNumber(20_000))
        let undone = cc.undoReduction()
        #expect(undone)
        #expect(cc.congestionWindow == window && cc.slowStartThreshold == 7000)
    }
}
