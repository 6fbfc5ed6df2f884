import Testing
import Stack

@Suite struct RetransmissionTimerTests {
    @Test func startsAtOneSecond() {
        // RFC 6298 §2.1.
        #expect(RetransmissionTimer().timeout == .seconds(1))
    }

    @Test func firstSampleSetsSRTTAndVariance() {
        // RFC 6298 §2.2: SRTT = R, RTTVAR = R/2, RTO = SRTT + max(G, 4·RTTVAR).
        var t = RetransmissionTimer()
        t.sample(.milliseconds(100))
        #expect(t.smoothedRTT == .milliseconds(100))
        #expect(t.rttVariance == .milliseconds(50))
        #expect(t.timeout == .milliseconds(300))
    }

    @Test func laterSamplesSmooth() {
        // RFC 6298 §2.3 with R' = 200 ms after R = 100 ms:
        // RTTVAR = 3/4·50 + 1/4·100 = 62.5; SRTT = 7/8·100 + 1/8·200 = 112.5; RTO = 112.5 + 250.
        var t = RetransmissionTimer()
        t.sample(.milliseconds(100))
        t.sample(.milliseconds(200))
        #expect(t.rttVariance == .microseconds(62_500))
        #expect(t.smoothedRTT == .microseconds(112_500))
        #expect(t.timeout == .microseconds(362_500))
    }

    @Test func tinyRTTsAreFlooredAt200Milliseconds() {
        var t = RetransmissionTimer()
        for _ in 0 ..< 20 { t.sample(.microseconds(50)) }
        #expect(t.timeout == .milliseconds(200))
    }

    @Test func expiryDoublesUntilTheCapAndASampleEndsIt() {
        // RFC 6298 §5.5 backoff, §2.5 cap, §5.7 a new sample clears the backoff.
        var t = RetransmissionTimer()
        t.sample(.milliseconds(100)) // 300 ms
        t.expired()
        #expect(t.timeout == .milliseconds(600))
        t.expired()
        #expect(t.timeout == .milliseconds(1200))
        for _ in 0 ..< 20 { t.expired() }
        #expect(t.timeout == .seconds(60))
        t.sample(.milliseconds(100))
        #expect(t.backoff == 0)
        #expect(t.timeout < .seconds(1))
    }
}
