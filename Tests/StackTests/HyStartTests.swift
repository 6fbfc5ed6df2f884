import Testing
@testable import Stack
import Wire

/// HyStart++ (RFC 9406), round by round: each round is the ACKs of one
/// window, with the round trip each ACK measured.
@Suite struct HyStartTests {
    static func ms(_ n: Double) -> Int64 { Int64(n * 1_000_000) }

    /// Feeds rounds to `hyStart`: round `r` has `samples[r]` ACKs, the round
    /// trip each measured, acknowledging 1000 bytes each; a round ends where
    /// the next one's first ACK passes what was sent when it began. Returns
    /// the growth of every ACK, round by round.
    static func run(_ hyStart: inout HyStart, rounds: [[Int64?]], sequence: inout SequenceNumber) -> [[HyStart.Growth]] {
        var growths: [[HyStart.Growth]] = []
        for round in rounds {
            // What is sent this round: its ACKs' bytes, all in flight when the round begins.
            let roundEnd = sequence + round.count * 1000
            var perAck: [HyStart.Growth] = []
            for sample in round {
                sequence += 1000
                perAck.append(hyStart.onAck(acknowledgment: sequence, highestSent: roundEnd, roundTripNanoseconds: sample))
            }
            growths.append(perAck)
        }
        return growths
    }

    @Test func theThresholdIsAnEighthOfTheLastRoundWithin4And16Milliseconds() {
        #expect(HyStart.threshold(lastRound: Self.ms(0)) == Self.ms(4))
        #expect(HyStart.threshold(lastRound: Self.ms(10)) == Self.ms(4))
        #expect(HyStart.threshold(lastRound: Self.ms(80)) == Self.ms(10))
        #expect(HyStart.threshold(lastRound: Self.ms(128)) == Self.ms(16))
        #expect(HyStart.threshold(lastRound: Self.ms(900)) == Self.ms(16))
    }

    @Test func aSteadyRoundTripKeepsSlowStart() {
        var hyStart = HyStart()
        var sequence = SequenceNumber(1)
        let rounds = (0 ..< 12).map { r in (0 ..< 10 + r).map { i -> Int64? in Self.ms(20 + Double(i % 3)) } }
        let growths = Self.run(&hyStart, rounds: rounds, sequence: &sequence)
        #expect(growths.allSatisfy { $0.allSatisfy { $0 == .slowStart } })
        #expect(hyStart.phase == .slowStart)
    }

    @Test func aRiseOfTheThresholdStartsConservativeSlowStartAtTheEighthSample() {
        var hyStart = HyStart()
        var sequence = SequenceNumber(1)
        // 20 ms, then a round whose every sample is 24 ms: the threshold is 4 ms (an eighth of 20, at least 4).
        let growths = Self.run(&hyStart, rounds: [Array(repeating: Self.ms(20), count: 10), Array(repeating: Self.ms(24), count: 10)],
                               sequence: &sequence)
        #expect(growths[0] == Array(repeating: .slowStart, count: 10))
        // Seven samples are not enough to judge a round (N_RTT_SAMPLE = 8).
        #expect(growths[1] == Array(repeating: .slowStart, count: 7) + Array(repeating: .conservative, count: 3))
        #expect(hyStart.phase == .conservative(baselineNanoseconds: Self.ms(24), roundsDone: 0))
    }

    @Test func aRiseUnderTheThresholdDoesNot() {
        var hyStart = HyStart()
        var sequence = SequenceNumber(1)
        // 80 ms: the threshold is 10 ms; 89.9 is under it.
        _ = Self.run(&hyStart, rounds: [Array(repeating: Self.ms(80), count: 10), Array(repeating: Self.ms(89.9), count: 20)],
                     sequence: &sequence)
        #expect(hyStart.phase == .slowStart)
        // One sample of the round under the threshold keeps its minimum there.
        _ = Self.run(&hyStart, rounds: [[Self.ms(80)] + Array(repeating: Self.ms(200), count: 20)], sequence: &sequence)
        #expect(hyStart.phase == .slowStart)
    }

    @Test func roundsWithoutSamplesNeverLeaveSlowStart() {
        var hyStart = HyStart()
        var sequence = SequenceNumber(1)
        // Without timestamps a round gives one sample (Karn's timed segment) or none.
        let rounds: [[Int64?]] = (0 ..< 10).map { r in [Self.ms(10 * Double(r + 1))] + Array(repeating: nil, count: 15) }
        let growths = Self.run(&hyStart, rounds: rounds, sequence: &sequence)
        #expect(growths.allSatisfy { $0.allSatisfy { $0 == .slowStart } })
    }

    @Test func fiveRoundsOfConservativeSlowStartEndIt() {
        var hyStart = HyStart()
        var sequence = SequenceNumber(1)
        let steady = Array(repeating: Optional(Self.ms(20)), count: 10)
        let risen = Array(repeating: Optional(Self.ms(30)), count: 10)
        // CSS starts in round 1; rounds 1 (its end) to 5 are its five; round 6's first ACK ends it.
        let growths = Self.run(&hyStart, rounds: [steady, risen, risen, risen, risen, risen, risen], sequence: &sequence)
        #expect(growths[1].last == .conservative)
        #expect(growths[2 ... 5].allSatisfy { $0.allSatisfy { $0 == .conservative } })
        #expect(growths[6].allSatisfy { $0 == .stop })
        #expect(hyStart.phase == .done)
    }

    @Test func aRoundBelowTheBaselineResumesSlowStart() {
        var hyStart = HyStart()
        var sequence = SequenceNumber(1)
        let growths = Self.run(&hyStart, rounds: [Array(repeating: Self.ms(20), count: 10), Array(repeating: Self.ms(30), count: 10),
                                                  Array(repeating: Self.ms(29), count: 10)], sequence: &sequence)
        // The third round's minimum, 29 ms, is below the 30 that started CSS: after eight samples, slow start again.
        #expect(growths[2] == Array(repeating: .conservative, count: 7) + Array(repeating: .slowStart, count: 3))
        #expect(hyStart.phase == .slowStart)
        // And it watches on: the next rise starts CSS again (29 + 4 ms).
        _ = Self.run(&hyStart, rounds: [Array(repeating: Self.ms(33), count: 10)], sequence: &sequence)
        #expect(hyStart.phase == .conservative(baselineNanoseconds: Self.ms(33), roundsDone: 0))
    }

    // MARK: In congestion control

    /// One round of ACKs of `mss` bytes each, all with the same round trip;
    /// the window after each.
    @discardableResult
    static func window(_ cc: inout CongestionControl, acks: Int, roundTrip: Int64, sequence: inout SequenceNumber, mss: Int) -> [Int] {
        let roundEnd = sequence + acks * mss
        var windows: [Int] = []
        for _ in 0 ..< acks {
            sequence += mss
            _ = cc.onNewAck(acked: mss, highestAcked: sequence, flightSize: acks * mss, now: .zero,
                            highestSent: roundEnd, roundTripSampleNanoseconds: roundTrip)
            windows.append(cc.congestionWindow)
        }
        return windows
    }

    @Test func conservativeSlowStartGrowsAQuarterAsFastThenSlowStartEndsAtTheWindow() {
        let mss = 1000
        var cc = CongestionControl(maximumSegmentSize: mss)
        var sequence = SequenceNumber(1)
        Self.window(&cc, acks: 10, roundTrip: Self.ms(20), sequence: &sequence, mss: mss)
        #expect(cc.congestionWindow == 20_000)
        // A round 10 ms slower: a segment an ACK for seven samples, then a quarter of one from the eighth.
        let risen = Self.window(&cc, acks: 10, roundTrip: Self.ms(30), sequence: &sequence, mss: mss)
        #expect(risen == [21_000, 22_000, 23_000, 24_000, 25_000, 26_000, 27_000, 27_250, 27_500, 27_750])
        #expect(cc.slowStartThreshold == .max)
        for _ in 0 ..< 4 { Self.window(&cc, acks: 12, roundTrip: Self.ms(30), sequence: &sequence, mss: mss) }
        #expect(cc.congestionWindow == 27_750 + 48 * 250)
        #expect(cc.hyStart?.phase != .done)
        // The next round's first ACK: five CSS rounds are over; ssthresh is the window, nothing was lost.
        Self.window(&cc, acks: 1, roundTrip: Self.ms(30), sequence: &sequence, mss: mss)
        #expect(cc.slowStartThreshold == 39_750)
        #expect(cc.congestionWindow == 39_750)
        #expect(cc.hyStart?.phase == .done)
        // Congestion avoidance from here: the window grows by less than a segment an ACK.
        Self.window(&cc, acks: 1, roundTrip: Self.ms(30), sequence: &sequence, mss: mss)
        #expect(cc.congestionWindow > 39_750 && cc.congestionWindow < 40_750)
    }

    @Test func onlyTheFirstSlowStartIsWatched() {
        let mss = 1000
        var cc = CongestionControl(maximumSegmentSize: mss)
        var sequence = SequenceNumber(1)
        Self.window(&cc, acks: 10, roundTrip: Self.ms(20), sequence: &sequence, mss: mss)
        cc.onTimeout(flightSize: 20_000)
        #expect(cc.hyStart == nil)
        #expect(cc.congestionWindow == mss)
        // After the timeout slow start runs to ssthresh (14,000) whatever the round trip does.
        Self.window(&cc, acks: 10, roundTrip: Self.ms(20), sequence: &sequence, mss: mss)
        Self.window(&cc, acks: 10, roundTrip: Self.ms(60), sequence: &sequence, mss: mss)
        #expect(cc.congestionWindow >= 14_000)
        #expect(cc.hyStart == nil)

        var lossy = CongestionControl(maximumSegmentSize: mss)
        lossy.enterRecovery(flightSize: 10_000, highestSent: SequenceNumber(10_001))
        #expect(lossy.hyStart == nil)
    }

    @Test func offOrWithoutSendNextSlowStartIsRFC5681s() {
        let mss = 1000
        var off = CongestionControl(maximumSegmentSize: mss, hyStart: false)
        var sequence = SequenceNumber(1)
        Self.window(&off, acks: 10, roundTrip: Self.ms(20), sequence: &sequence, mss: mss)
        Self.window(&off, acks: 20, roundTrip: Self.ms(60), sequence: &sequence, mss: mss)
        #expect(off.congestionWindow == 40_000)
        var blind = CongestionControl(maximumSegmentSize: mss)
        for i in 1 ... 30 {
            _ = blind.onNewAck(acked: mss, highestAcked: SequenceNumber(UInt32(i * mss)), flightSize: 10_000, now: .zero,
                               roundTripSampleNanoseconds: Self.ms(i > 10 ? 60 : 20))
        }
        #expect(blind.congestionWindow == 40_000)
    }
}
