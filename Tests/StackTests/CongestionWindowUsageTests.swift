import Testing
@testable import Stack
import Wire

/// RFC 7661's question, as Linux asks it: did the congestion window limit
/// the sender? Only then does an ACK grow it.
@Suite struct CongestionWindowUsageTests {
    @Test func slowStartGrowsWhileTheWindowIsUnderTwiceTheLargestFlight() {
        var usage = CongestionWindowUsage()
        usage.sent(flight: 1000, heldBack: false)
        #expect(usage.limits(congestionWindow: 1999, inSlowStart: true, segmentSize: 1000))
        #expect(!usage.limits(congestionWindow: 2000, inSlowStart: true, segmentSize: 1000))
        usage.sent(flight: 6000, heldBack: false)
        #expect(usage.limits(congestionWindow: 10_000, inSlowStart: true, segmentSize: 1000))
    }

    @Test func congestionAvoidanceGrowsOnlyAWindowThatHeldDataBackOrWasFull() {
        var usage = CongestionWindowUsage()
        usage.sent(flight: 8000, heldBack: false)
        #expect(!usage.limits(congestionWindow: 10_000, inSlowStart: false, segmentSize: 1000))
        usage.sent(flight: 9000, heldBack: false)
        #expect(usage.limits(congestionWindow: 10_000, inSlowStart: false, segmentSize: 1000))
        var held = CongestionWindowUsage()
        held.sent(flight: 2000, heldBack: true)
        #expect(held.limits(congestionWindow: 10_000, inSlowStart: false, segmentSize: 1000))
    }

    @Test func eachRoundIsJudgedByItsOwnFlight() {
        var usage = CongestionWindowUsage()
        let start = SequenceNumber(100)
        usage.sent(flight: 9000, heldBack: true)
        // The first ACK begins a round that ends when what is out now (to 9100) is acknowledged.
        usage.acknowledged(upTo: start + 1000, highestSent: start + 9000, flight: 8000)
        #expect(usage.largestFlight == 8000 && !usage.heldBack)
        usage.acknowledged(upTo: start + 9000, highestSent: start + 9000, flight: 0)
        #expect(usage.largestFlight == 8000)
        // Past its end: the next round starts from what is in flight then.
        usage.sent(flight: 500, heldBack: false)
        usage.acknowledged(upTo: start + 9500, highestSent: start + 9500, flight: 0)
        #expect(usage.largestFlight == 0)
        #expect(!usage.limits(congestionWindow: 10_000, inSlowStart: false, segmentSize: 1000))
    }

    @Test func anUnusedWindowDoesNotGrow() {
        var slowStart = CongestionControl(maximumSegmentSize: 1000)
        _ = slowStart.onNewAck(acked: 1000, highestAcked: SequenceNumber(1001), flightSize: 1000, now: .zero, windowLimited: false)
        #expect(slowStart.congestionWindow == 10_000)
        _ = slowStart.onNewAck(acked: 1000, highestAcked: SequenceNumber(2001), flightSize: 1000, now: .zero, windowLimited: true)
        #expect(slowStart.congestionWindow == 11_000)
        for algorithm in [CongestionAlgorithm.cubic, .newReno] {
            var avoidance = CongestionControl(maximumSegmentSize: 1000, algorithm: algorithm)
            avoidance.onTimeout(flightSize: 10_000)
            var sequence = SequenceNumber(1)
            // Back to ssthresh in slow start, then congestion avoidance.
            while avoidance.congestionWindow < avoidance.slowStartThreshold {
                sequence += 1000
                _ = avoidance.onNewAck(acked: 1000, highestAcked: sequence, flightSize: 1000, now: .zero)
            }
            let window = avoidance.congestionWindow
            for i in 1 ... 50 {
                sequence += 1000
                _ = avoidance.onNewAck(acked: 1000, highestAcked: sequence, flightSize: 1000, now: .milliseconds(Int64(i) * 100),
                                       smoothedRoundTripNanoseconds: 10_000_000, windowLimited: false)
            }
            #expect(avoidance.congestionWindow == window, "\(algorithm)")
        }
    }
}
