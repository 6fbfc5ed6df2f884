import Testing
import Stack
import Wire

@Suite struct RoundTrackerTests {
    /// RFC 9406 §4.2: a round ends once the byte at SND.NXT when it began is
    /// acknowledged; the ACK that does so begins the next, across the wrap.
    @Test func aRoundEndsPastWhatWasSentWhenItBegan() {
        var rounds = RoundTracker()
        let start = SequenceNumber(0xffff_ff00)
        var begun: [Bool] = []
        for (acknowledged, sent) in [(100, 1000), (500, 1500), (1000, 2000), (1001, 3000), (3000, 3000), (3100, 3100)] {
            begun.append(rounds.beginsRound(acknowledgment: start + acknowledged, highestSent: start + sent))
        }
        #expect(begun == [true, false, false, true, false, true])
    }
}
