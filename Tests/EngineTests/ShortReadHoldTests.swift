import Testing
@testable import Engine

/// Which short upstream reads wait for what follows them (ShortReadHold):
/// a server's head-then-body answers, and a small-message protocol whose
/// replies nothing follows.
struct ShortReadHoldTests {
    /// `shouldHold`, asked outside `#expect` (which takes no mutation).
    func ask(_ hold: inout ShortReadHold, count: Int, socketEmptied: Bool, mayPoll: Bool) -> Bool {
        hold.shouldHold(count: count, socketEmptied: socketEmptied, mayPoll: mayPoll)
    }

    @Test func holdsOnlyAShortReadThatEmptiedTheSocketWhilePolling() {
        var hold = ShortReadHold()
        #expect(ask(&hold, count: 240, socketEmptied: true, mayPoll: true))
        #expect(!ask(&hold, count: 240, socketEmptied: true, mayPoll: false), "--busy-poll 0: the user wants no polling")
        #expect(!ask(&hold, count: 240, socketEmptied: false, mayPoll: true), "more is already waiting in the socket")
        #expect(!ask(&hold, count: ShortReadHold.shortRead, socketEmptied: true, mayPoll: true), "not short")
        #expect(!ask(&hold, count: 0, socketEmptied: true, mayPoll: true))
        #expect(ask(&hold, count: ShortReadHold.shortRead - 1, socketEmptied: true, mayPoll: true))
    }

    /// nginx's head, then its body within the window, every time: every
    /// head is held.
    @Test func aServerWhoseHeadsAreJoinedKeepsBeingHeld() {
        var hold = ShortReadHold()
        for _ in 0 ..< 100 {
            #expect(ask(&hold, count: 240, socketEmptied: true, mayPoll: true))
            hold.joined()
        }
    }

    /// Small replies that nothing follows: each unjoined hold lets twice as
    /// many short reads through unheld as the one before, up to the
    /// maximum, so the window is paid once in `maximumSkip` replies.
    @Test func unjoinedHoldsBackOffExponentiallyUpToTheMaximum() {
        var hold = ShortReadHold()
        var heldAt: [Int] = []
        for read in 0 ..< 2000 {
            if hold.shouldHold(count: 64, socketEmptied: true, mayPoll: true) {
                heldAt.append(read)
                hold.expired()
            }
        }
        let gaps = zip(heldAt.dropFirst(), heldAt).map { $0 - $1 - 1 }
        #expect(Array(gaps.prefix(10)) == [1, 2, 4, 8, 16, 32, 64, 128, 128, 128])
        #expect(gaps.allSatisfy { $0 <= ShortReadHold.maximumSkip })
    }

    /// Reads that are not held (not polling, not short) do not use up the
    /// skips: only short reads a hold would have taken count.
    @Test func onlyShortReadsCountTowardsTheSkip() {
        var hold = ShortReadHold()
        #expect(ask(&hold, count: 64, socketEmptied: true, mayPoll: true))
        hold.expired()
        hold.expired()  // two unjoined in a row: skip 2
        #expect(hold.skip == 2)
        #expect(!ask(&hold, count: 64, socketEmptied: true, mayPoll: false))
        #expect(!ask(&hold, count: 4096, socketEmptied: true, mayPoll: true))
        #expect(hold.skip == 2)
        #expect(!ask(&hold, count: 64, socketEmptied: true, mayPoll: true))
        #expect(!ask(&hold, count: 64, socketEmptied: true, mayPoll: true))
        #expect(ask(&hold, count: 64, socketEmptied: true, mayPoll: true))
    }

    /// One joined hold forgets the backoff and excuses one expiry: the next
    /// unjoined hold skips nothing, the one after it one read.
    @Test func aJoinedHoldResetsTheBackoff() {
        var hold = ShortReadHold()
        /// Short reads until one is held (at most the longest skip and one more).
        func untilHeld() -> Bool {
            (0 ... ShortReadHold.maximumSkip).contains { _ in hold.shouldHold(count: 64, socketEmptied: true, mayPoll: true) }
        }
        for _ in 0 ..< 5 {
            #expect(untilHeld())
            hold.expired()
        }
        #expect(hold.backoff == 16)
        #expect(untilHeld())
        hold.joined()
        #expect(ask(&hold, count: 64, socketEmptied: true, mayPoll: true))
        hold.expired()
        #expect(hold.skip == 0, "the join before it excuses this one")
        #expect(ask(&hold, count: 64, socketEmptied: true, mayPoll: true))
        hold.expired()
        #expect(hold.skip == 1)
    }

    /// A server whose heads were joined, then late for a while (it lost its
    /// CPU: on a loaded machine, a run of late bodies is noise, not a new
    /// protocol): its joins excuse up to `maximumCredit` expiries in a row,
    /// every head still held, before the backoff starts; then it backs off
    /// as a flow that never joined. Each excused expiry is paid for by an
    /// earlier join, so a flow pays the window unjoined at most once per
    /// read it joined, and once in `maximumSkip` beyond that.
    @Test func earlierJoinsExcuseARunOfExpiries() {
        var hold = ShortReadHold()
        for _ in 0 ..< 1000 {
            #expect(ask(&hold, count: 240, socketEmptied: true, mayPoll: true))
            hold.joined()
        }
        #expect(hold.credit == ShortReadHold.maximumCredit)
        var heldAt: [Int] = []
        for read in 0 ..< 2000 {
            if hold.shouldHold(count: 240, socketEmptied: true, mayPoll: true) {
                heldAt.append(read)
                hold.expired()
            }
        }
        let excused = ShortReadHold.maximumCredit
        #expect(heldAt.prefix(excused + 1) == ArraySlice(0 ... excused), "held through the excused run")
        let gaps = zip(heldAt.dropFirst(excused), heldAt.dropFirst(excused).dropFirst()).map { $1 - $0 - 1 }
        #expect(Array(gaps.prefix(9)) == [1, 2, 4, 8, 16, 32, 64, 128, 128])
        #expect(hold.credit == 0)
    }
}
