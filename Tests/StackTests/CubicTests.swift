import Testing
@testable import Stack
import Wire

/// CUBIC (RFC 9438) as `CongestionControl` runs it: the reduction at a
/// congestion event and the growth after it, on a virtual clock.
@Suite struct CubicTests {
    let mss = 1000

    /// Acknowledges `rounds` windows, one segment per ACK, each window one
    /// `roundTrip` after the last, as a sender with a full pipe and no loss sees them.
    func run(_ cc: inout CongestionControl, rounds: Int, roundTrip: Duration, from start: Instant, una: inout SequenceNumber) -> Instant {
        let rtt = roundTrip.nanoseconds
        var now = start
        for _ in 0 ..< rounds {
            now = now.advanced(byNanoseconds: rtt)
            let window = cc.congestionWindow
            for _ in 0 ..< max(1, window / mss) {
                una += mss
                _ = cc.onNewAck(acked: mss, highestAcked: una, flightSize: window, now: now, smoothedRoundTripNanoseconds: rtt)
            }
        }
        return now
    }

    /// Slow start to `segments` segments, then three duplicate ACKs, and the
    /// ACK of the resent segment that ends recovery with the pipe still full.
    func afterOneLoss(at segments: Int, _ algorithm: CongestionAlgorithm = .cubic) -> (CongestionControl, SequenceNumber) {
        var cc = CongestionControl(maximumSegmentSize: mss, algorithm: algorithm)
        cc.selectiveAcknowledgments = true
        var una = SequenceNumber(0)
        while cc.congestionWindow < segments * mss {
            una += mss
            _ = cc.onNewAck(acked: mss, highestAcked: una, flightSize: cc.congestionWindow, now: .zero)
        }
        let flight = cc.congestionWindow
        for _ in 0 ..< 3 { _ = cc.onDuplicateAck(flightSize: flight, highestSent: una + flight) }
        _ = cc.onNewAck(acked: mss, highestAcked: una + flight, flightSize: flight, now: .zero)
        return (cc, una + flight)
    }

    @Test func aLossKeepsSevenTenthsOfTheFlight() {
        // RFC 9438 §4.6: ssthresh = flight size · β_cubic; with SACK the window is ssthresh (RFC 6675).
        var cc = CongestionControl(maximumSegmentSize: mss)
        cc.selectiveAcknowledgments = true
        for _ in 0 ..< 3 { _ = cc.onDuplicateAck(flightSize: 10_000, highestSent: SequenceNumber(10_000)) }
        #expect(cc.slowStartThreshold == 7000)
        #expect(cc.congestionWindow == 7000)
        // Without SACK, NewReno's recovery inflates by the three segments that left (RFC 5681 §3.2).
        var plain = CongestionControl(maximumSegmentSize: mss)
        for _ in 0 ..< 3 { _ = plain.onDuplicateAck(flightSize: 10_000, highestSent: SequenceNumber(10_000)) }
        #expect(plain.slowStartThreshold == 7000)
        #expect(plain.congestionWindow == 10_000)
    }

    @Test func aTimeoutCollapsesToOneSegmentWithCubicsThreshold() {
        // RFC 9438 §4.8: the window as Reno's, ssthresh with β_cubic.
        var cc = CongestionControl(maximumSegmentSize: mss)
        cc.onTimeout(flightSize: 8000)
        #expect(cc.congestionWindow == 1000)
        #expect(cc.slowStartThreshold == 5600)
        var reno = CongestionControl(maximumSegmentSize: mss, algorithm: .newReno)
        reno.onTimeout(flightSize: 8000)
        #expect(reno.slowStartThreshold == 4000)
    }

    @Test func aRepeatedTimeoutKeepsThePlateau() {
        // The second timeout finds the loss window (one segment): it says nothing
        // about the path, so W_max stays what the first one recorded.
        var (cc, una) = afterOneLoss(at: 100)
        _ = run(&cc, rounds: 5, roundTrip: .milliseconds(100), from: .zero, una: &una)
        let before = cc.congestionWindow
        cc.onTimeout(flightSize: before)
        cc.onTimeout(flightSize: before)
        #expect(cc.congestionWindow == mss)
        #expect(cc.slowStartThreshold == before * 7 / 10)
        // Slow start back to ssthresh, then the curve climbs towards the W_max the first
        // timeout recorded: 0.85 of its window, which had not got back to the loss's 100 segments (§4.7).
        let plateau = before * 85 / 100
        let now = Instant(nanoseconds: 10_000_000_000)
        while cc.congestionWindow < cc.slowStartThreshold {
            una += mss
            _ = cc.onNewAck(acked: mss, highestAcked: una, flightSize: cc.congestionWindow, now: now, smoothedRoundTripNanoseconds: 100_000_000)
        }
        // Concave towards it (K = ∛((W_max − ssthresh)/C) ≈ 3.1 s here): after 2 s
        // nearly there. Had the second timeout recorded the one-segment window as
        // W_max, the curve would start convex from ssthresh and be near it still.
        _ = run(&cc, rounds: 20, roundTrip: .milliseconds(100), from: now, una: &una)
        #expect(cc.congestionWindow > plateau * 97 / 100 && cc.congestionWindow <= plateau + mss,
                "\(cc.congestionWindow) against W_max \(plateau)")
    }

    @Test func aSecondLossShortOfTheLastPlateauLowersIt() {
        // RFC 9438 §4.7, fast convergence: W_max = cwnd · (1 + β) / 2 when cwnd < the last W_max.
        var cubic = CubicGrowth()
        _ = cubic.reduce(congestionWindow: 100_000, flightSize: 100_000)
        #expect(cubic.plateau == 100_000)
        #expect(cubic.reduce(congestionWindow: 80_000, flightSize: 80_000) == 56_000)
        #expect(abs(cubic.plateau - 68_000) < 0.001)
        _ = cubic.reduce(congestionWindow: 90_000, flightSize: 90_000)
        #expect(cubic.plateau == 90_000)
    }

    @Test func theWindowClimbsBackToThePlateauInKSeconds() {
        // A loss at 100 segments: back to 70, and K = ∛((100 − 70)/0.4) ≈ 4.22 s to
        // return to 100 (§4.2, eq. 2). At a 100 ms round trip Reno's estimate
        // (α ≈ 0.53 segments a round trip, §4.3) stays below the cubic function.
        var (cc, una) = afterOneLoss(at: 100)
        #expect(cc.congestionWindow == 70_000)
        var now = run(&cc, rounds: 1, roundTrip: .milliseconds(100), from: .zero, una: &una)
        #expect(cc.congestionWindow > 70_000 && cc.congestionWindow < 72_000, "\(cc.congestionWindow)")
        // Concave: fast at first, slow near the plateau.
        now = run(&cc, rounds: 20, roundTrip: .milliseconds(100), from: now, una: &una) // t ≈ 2.1 s
        let halfway = cc.congestionWindow
        #expect(halfway > 94_000 && halfway < 98_000, "\(halfway)")
        now = run(&cc, rounds: 21, roundTrip: .milliseconds(100), from: now, una: &una) // t ≈ 4.2 s = K
        #expect(cc.congestionWindow > 99_000 && cc.congestionWindow < 101_500, "\(cc.congestionWindow)")
        // Convex past it: probing grows faster and faster.
        now = run(&cc, rounds: 20, roundTrip: .milliseconds(100), from: now, una: &una)
        let past = cc.congestionWindow
        _ = run(&cc, rounds: 20, roundTrip: .milliseconds(100), from: now, una: &una)
        #expect(past > 102_000 && cc.congestionWindow - past > past - 100_000, "\(past) \(cc.congestionWindow)")
    }

    @Test func aShortRoundTripGrowsAsRenoWouldWithCubicsAlpha() {
        // At a 1 ms round trip the cubic function barely moves in 20 ms; the
        // Reno-friendly region (§4.3) adds α_cubic = 3·0.3/1.7 ≈ 0.53 segments a
        // round trip until the window passes the one before the loss.
        var (cc, una) = afterOneLoss(at: 100)
        _ = run(&cc, rounds: 20, roundTrip: .milliseconds(1), from: .zero, una: &una)
        let grown = Double(cc.congestionWindow - 70_000) / Double(mss)
        #expect(grown > 9.5 && grown < 11.5, "\(grown) segments in 20 round trips")
        // NewReno after the same loss: half the flight, then one segment a round trip.
        var (reno, renoUna) = afterOneLoss(at: 100, .newReno)
        #expect(reno.congestionWindow == 50_000)
        _ = run(&reno, rounds: 20, roundTrip: .milliseconds(1), from: .zero, una: &renoUna)
        #expect(reno.congestionWindow == 70_000, "NewReno: 50 segments and 20 more")
        #expect(cc.congestionWindow > reno.congestionWindow + 9000)
    }

    /// Without loss the window never falls and the epoch never restarts, at
    /// any round trip: where W_cubic(t) falls behind Reno's estimate while the
    /// window, aimed at W_cubic(t + RTT), is above both, the window stays.
    @Test(arguments: [1, 5, 10, 20, 30, 50, 100, 200, 400])
    func theWindowNeverFallsWithoutLoss(roundTripMilliseconds: Int) {
        var cubic = CubicGrowth()
        _ = cubic.reduce(congestionWindow: 100 * mss, flightSize: 100 * mss)
        var window = 70 * mss
        let rtt = Int64(roundTripMilliseconds) * 1_000_000
        var now = Instant.zero
        var epoch: Instant?
        for _ in 0 ..< 200 {
            now = now.advanced(byNanoseconds: rtt)
            for _ in 0 ..< window / mss {
                let next = cubic.grow(congestionWindow: window, acked: mss, segmentSize: mss, now: now, smoothedRoundTripNanoseconds: rtt)
                if next < window || (epoch != nil && cubic.epochStart != epoch) {
                    Issue.record("at \(now) the window went \(window) → \(next), epoch \(String(describing: epoch)) → \(String(describing: cubic.epochStart))")
                    return
                }
                epoch = cubic.epochStart
                window = next
            }
        }
        #expect(window > 100 * mss)
    }

    @Test func cubeRootsAreExact() {
        for (value, root) in [(27.0, 3.0), (75.0, 4.217163326508746), (1e-6, 0.01), (1e12, 1e4), (2.0, 1.2599210498948732)] {
            #expect(abs(CubicGrowth.cubeRoot(value) - root) <= root * 1e-9, "∛\(value)")
        }
        #expect(CubicGrowth.cubeRoot(0) == 0)
        #expect(CubicGrowth.cubeRoot(-.infinity) == 0)
        #expect(CubicGrowth.cubeRoot(.nan) == 0)
    }
}
