import Testing
import Wire

@Suite struct SequenceNumberTests {
    @Test func ordersAcrossTheWrap() {
        let nearTop = SequenceNumber(0xffff_fff0)
        let wrapped = nearTop + 0x20 // 0x10
        #expect(wrapped.rawValue == 0x10)
        #expect(nearTop < wrapped)
        #expect(!(wrapped < nearTop))
        #expect(wrapped > nearTop)
        #expect(wrapped - nearTop == 0x20)
        #expect(nearTop - wrapped == -0x20)
        #expect(wrapped - 0x20 == nearTop)
    }

    @Test func halfTheSpaceAwayIsStillOrdered() {
        let a = SequenceNumber(5)
        #expect(a < a + (1 << 31 - 1))
        #expect(a + (1 << 31 - 1) - a == (1 << 31) - 1)
    }

    @Test func windowMembershipAcrossTheWrap() {
        let start = SequenceNumber(0xffff_ff00)
        #expect(start.isIn(start, size: 1))
        #expect(!start.isIn(start, size: 0))
        #expect((start + 0x1ff).isIn(start, size: 0x200))
        #expect(!(start + 0x200).isIn(start, size: 0x200))
        #expect(!(start - 1).isIn(start, size: 0x200))
    }

    @Test func printsItsValue() {
        #expect("\(SequenceNumber(4_294_967_295))" == "4294967295")
    }
}
