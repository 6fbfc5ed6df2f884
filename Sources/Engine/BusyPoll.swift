/// How long the event loop keeps polling for its next event before it goes
/// to sleep in epoll_wait.
///
/// Why poll at all: a sleeping loop is expensive to wake. On the 2-vCPU VMs
/// we measure on, an idle vCPU halts, and the wake-up that follows a packet
/// goes through the hypervisor; a kept-alive request wakes the loop twice
/// (the app's request, the server's response), and each wake-up cost
/// more than all of Sluice's own work for the request. Polling a few tens
/// of microseconds catches the next event without that cost: the round
/// trip through Sluice fell from ~90 µs to ~50 µs (docs/engine.md, "Busy
/// polling").
///
/// Why adaptive: polling burns CPU. The window grows only while events keep
/// arriving within the maximum after the loop ran out of work (so polling
/// would have caught them), and halves when the loop polled and then slept
/// longer than the maximum anyway. An idle tunnel's window falls to zero
/// after a few wake-ups, so it sleeps as before; a busy one polls at most
/// `maximum` per time it runs out of work. The idea is the guest kernel's
/// own halt polling (cpuidle-haltpoll), done for one process.
///
/// Why a closed window needs two short sleeps in a row to open: one short
/// sleep between long lulls is a request and its reply (a ping, a DNS
/// query). Opening on it would poll in vain after every reply and close
/// again at the next lull: a quarter of the maximum burnt per exchange
/// (with `--busy-poll 1000`, 250 µs in every 4 ms of a 250-a-second ping,
/// while catching nothing). Traffic that polling helps, a stream of
/// requests or a transfer, brings short sleeps back to back.
///
/// Pure: the loop measures and reports; this decides.
struct BusyPollWindow {
    /// The longest the loop polls, in nanoseconds; 0 never polls.
    let maximum: Int64
    /// How long the loop polls before its next sleep, in nanoseconds.
    private(set) var current: Int64 = 0
    /// Short sleeps (events within the maximum) since the last long one.
    private var shortSleepsInARow = 0

    init(maximumMicroseconds: Int) {
        maximum = Int64(max(0, maximumMicroseconds)) * 1000
    }

    /// The first window after zero, and the smallest kept: a quarter of the maximum.
    var smallest: Int64 { maximum / 4 }

    /// What one wait was like: `idle` is the time from running out of work
    /// to the next event (or to the sleep's timeout, if none came); `caught`
    /// says that polling, not a sleep, saw the event.
    mutating func observe(idle: Int64, caught: Bool) {
        guard maximum > 0 else { return }
        if caught {
            // Polling paid off; the window stays as it is.
            return
        }
        if idle <= maximum {
            // The event came soon after the window closed: a longer window would have caught it.
            shortSleepsInARow += 1
            if current > 0 {
                current = min(maximum, current * 2)
            } else if shortSleepsInARow >= 2 {
                current = smallest
            }
        } else {
            // Polled for nothing (or not at all), then slept anyway: poll less next time.
            shortSleepsInARow = 0
            current /= 2
            if current < smallest { current = 0 }
        }
    }
}
