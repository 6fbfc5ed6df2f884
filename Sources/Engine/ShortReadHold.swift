/// Whether a short read from a flow's upstream waits a moment for what
/// follows it before it goes to the app.
///
/// Why: servers often answer in two writes a few microseconds apart (nginx
/// writes a response's head, then sends its body with sendfile). A loop that
/// sleeps wakes up late enough to read both at once; a polling loop
/// (`BusyPollWindow`) reads the head alone and sends the app two segments.
/// Two segments each under the size the app's kernel has seen make it
/// acknowledge the pair at once when the app reads them (Linux's
/// ICSK_ACK_PUSHED2), where one segment's acknowledgment would have ridden
/// on the app's next request: a TUN write, a TUN read and the app's kernel
/// work more, per response. Measured (docs/engine.md, "Holding a short
/// read"): with polling, 45% of nginx's 1 KiB responses went out split,
/// against 15% for slirp4netns, which does not poll.
///
/// This is not Nagle: nothing waits for an acknowledgment, the wait is
/// bounded by `window` (tens of microseconds, while the loop is polling
/// anyway), and a flow whose held reads are not followed in time stops
/// being held, backing off exponentially, so that a request-response
/// protocol of small messages pays the window at most once per `maximumSkip`
/// replies. A flow's joins excuse as many later expiries (`credit`): a run of
/// late bodies while the server lost its CPU is noise, and backing off for it
/// sent hundreds of heads alone afterwards.
///
/// Pure: the loop reads, holds and flushes; this decides.
struct ShortReadHold {
    /// The longest a short read is held, in nanoseconds.
    static let window: Int64 = 20_000
    /// A read at least this long is not short: it goes at once.
    static let shortRead = 1024
    /// The most short reads let through unheld after held ones went unjoined.
    static let maximumSkip = 128
    /// The most expiries a flow's earlier joins excuse.
    static let maximumCredit = 32

    /// Short reads still to let through before holding one again.
    private(set) var skip = 0
    /// What `skip` is set to when a held read is next not joined.
    private(set) var backoff = 0
    /// Joins not yet spent excusing expiries (at most `maximumCredit`).
    private(set) var credit = 0

    /// Whether to hold a read of `count` bytes that emptied the socket
    /// (`socketEmptied`: fewer bytes came than there was room for, so what
    /// follows is not already waiting). A hold makes the loop poll through
    /// its window, so none is made where the user turned polling off
    /// (`mayPoll` false: `--busy-poll 0`).
    mutating func shouldHold(count: Int, socketEmptied: Bool, mayPoll: Bool) -> Bool {
        guard mayPoll, socketEmptied, count > 0, count < Self.shortRead else { return false }
        if skip > 0 {
            skip -= 1
            return false
        }
        return true
    }

    /// More bytes came while a read was held: they go to the app together.
    mutating func joined() {
        backoff = 0
        credit = min(Self.maximumCredit, credit + 1)
    }

    /// The window passed with nothing more: hold fewer reads for a while,
    /// unless earlier joins excuse it.
    mutating func expired() {
        if credit > 0 {
            credit -= 1
            return
        }
        backoff = min(Self.maximumSkip, max(1, backoff * 2))
        skip = backoff
    }
}
