import Testing
@testable import Engine

/// The loop's polling window (BusyPollWindow), walked through the waits a
/// busy and a quiet tunnel see. Times are nanoseconds; the maximum is 50 µs.
struct BusyPollWindowTests {
    let microsecond: Int64 = 1000

    @Test func startsClosedAndZeroNeverPolls() {
        var never = BusyPollWindow(maximumMicroseconds: 0)
        for _ in 0 ..< 10 { never.observe(idle: 1, caught: false) }
        #expect(never.current == 0)
        #expect(BusyPollWindow(maximumMicroseconds: 50).current == 0)
        #expect(BusyPollWindow(maximumMicroseconds: -5).maximum == 0)
    }

    @Test func opensStepByStepWhileEventsComeSoonAfterItCloses() {
        var window = BusyPollWindow(maximumMicroseconds: 50)
        // A request-response tunnel: the next packet comes 30 µs after the
        // loop runs out of work, and the window is too short to see it. The
        // first short sleep alone does not open it (see the next test).
        var seen: [Int64] = []
        for _ in 0 ..< 6 {
            window.observe(idle: 30 * microsecond, caught: false)
            seen.append(window.current)
        }
        #expect(seen == [0, 12_500, 25_000, 50_000, 50_000, 50_000])
    }

    /// A ping or a DNS query: the reply comes soon after the request, then
    /// the tunnel idles. Polling after the reply would be wasted every time,
    /// so a closed window stays closed; one left open by earlier traffic
    /// closes as the lulls come and does not reopen.
    @Test func aRequestAndItsReplyBetweenLullsDoNotOpenIt() {
        var window = BusyPollWindow(maximumMicroseconds: 1000)
        for _ in 0 ..< 50 {
            window.observe(idle: 100 * microsecond, caught: false)
            #expect(window.current == 0, "no poll after the reply")
            window.observe(idle: 4_000 * microsecond, caught: false)
            #expect(window.current == 0)
        }
        // A burst opens it; then the pings again.
        for _ in 0 ..< 4 { window.observe(idle: 20 * microsecond, caught: false) }
        #expect(window.current == 1000 * microsecond)
        var seen: [Int64] = []
        for _ in 0 ..< 5 {
            window.observe(idle: 100 * microsecond, caught: true)
            window.observe(idle: 4_000 * microsecond, caught: false)
            seen.append(window.current)
        }
        #expect(seen == [500_000, 250_000, 0, 0, 0])
    }

    @Test func anEventCaughtByPollingKeepsTheWindow() {
        var window = BusyPollWindow(maximumMicroseconds: 50)
        window.observe(idle: 10 * microsecond, caught: false)
        window.observe(idle: 10 * microsecond, caught: false)
        window.observe(idle: 10 * microsecond, caught: false)
        let open = window.current
        #expect(open == 25_000)
        for _ in 0 ..< 100 { window.observe(idle: 3 * microsecond, caught: true) }
        #expect(window.current == open)
    }

    @Test func aQuietTunnelClosesItWithinThreeLongSleeps() {
        var window = BusyPollWindow(maximumMicroseconds: 50)
        for _ in 0 ..< 4 { window.observe(idle: 20 * microsecond, caught: false) }
        #expect(window.current == 50 * microsecond)
        // Traffic stops: each wait is a long sleep after a wasted poll.
        var seen: [Int64] = []
        for _ in 0 ..< 4 {
            window.observe(idle: 1_000_000_000, caught: false)
            seen.append(window.current)
        }
        #expect(seen == [25_000, 12_500, 0, 0])
    }

    @Test func anEventJustPastTheMaximumDoesNotOpenIt() {
        var window = BusyPollWindow(maximumMicroseconds: 50)
        window.observe(idle: 50 * microsecond, caught: false)
        window.observe(idle: 50 * microsecond + 1, caught: false)
        #expect(window.current == 0)
        window.observe(idle: 50 * microsecond, caught: false)
        #expect(window.current == 0)
        window.observe(idle: 50 * microsecond, caught: false)
        #expect(window.current == 12_500)
    }

    /// Whatever the waits, the window stays within [0, maximum], and it is
    /// either zero or at least a quarter of the maximum (no sliver of a poll
    /// that costs a clock read and catches nothing).
    @Test func seededWalkStaysInBounds() {
        var window = BusyPollWindow(maximumMicroseconds: 50)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0 ..< 20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let idle = Int64((state >> 33) % 200_000)
            let caught = idle <= window.current && (state & 1) == 0
            window.observe(idle: idle, caught: caught)
            #expect(window.current >= 0 && window.current <= window.maximum)
            #expect(window.current == 0 || window.current >= window.smallest)
        }
    }
}
