import Testing
import Stack
import TestSupport

@Suite struct AssemblerTests {
    @Test func mergesOverlappingAndAdjacentRanges() {
        var a = Assembler()
        do { let result = a.add(offset: 10, length: 5); #expect(result) }   // [10,15)
        do { let result = a.add(offset: 20, length: 5); #expect(result) }   // [10,15) [20,25)
        do { let result = a.add(offset: 15, length: 5); #expect(result) }   // adjacent on both sides → [10,25)
        #expect(a.description == "[10..<25]")
        do { let result = a.add(offset: 0, length: 3); #expect(result) }
        do { let result = a.add(offset: 2, length: 9); #expect(result) }    // overlaps both → [0,25)
        #expect(a.description == "[0..<25]")
        do { let result = a.removeFront(); #expect(result == 25) }
        #expect(a.isEmpty)
    }

    @Test func refusesANinthHoleAndChangesNothing() {
        var a = Assembler()
        for i in 0 ..< Assembler.maxRanges { let ok = a.add(offset: 10 + i * 10, length: 2); #expect(ok) }
        let before = a
        do { let result = a.add(offset: 200, length: 1); #expect(!result) }
        #expect(a == before)
        // Filling a gap still works: it merges two ranges into one.
        do { let result = a.add(offset: 12, length: 8); #expect(result) }
        #expect(a.rangeCount == Assembler.maxRanges - 1)
    }

    @Test func advanceDropsWhatArrivedInOrder() {
        var a = Assembler()
        _ = a.add(offset: 5, length: 5)
        _ = a.add(offset: 20, length: 5)
        a.advance(by: 7)
        #expect(a.description == "[0..<3, 13..<18]")
    }
}

@Suite struct ReassemblerTests {
    @Test func outOfOrderSegmentsComeOutInOrder() {
        let r = Reassembler(capacity: 100)
        let stream = (0 ..< 30).map { UInt8($0) }
        stream.withUnsafeBytes { s in
            #expect(r.insert(offset: 20, s.sub(20, 10)) == .accepted(advanced: 0, trimmed: 0))
            #expect(r.insert(offset: 10, s.sub(10, 10)) == .accepted(advanced: 0, trimmed: 0))
            #expect(r.outOfOrder.description == "[10..<30]")
            #expect(r.insert(offset: 0, s.sub(0, 10)) == .accepted(advanced: 30, trimmed: 0))
        }
        var out = [UInt8](repeating: 0, count: 40)
        let got = out.withUnsafeMutableBytes { r.read(into: $0) }
        #expect(got == 30)
        #expect(Array(out.prefix(30)) == stream)
    }

    /// Eight out-of-order ranges held: a ninth hole is refused, but the
    /// segment at RCV.NXT is taken (it needs no slot). Refusing it stalled an
    /// upload for good under 10% loss: the peer's timeout resends that
    /// segment alone, again and again.
    @Test func theSegmentAtTheFrontIsTakenWhenEveryRangeIsHeld() {
        let r = Reassembler(capacity: 1000)
        let stream = (0 ..< 200).map { UInt8($0) }
        stream.withUnsafeBytes { s in
            for i in 1 ... Assembler.maxRanges {
                #expect(r.insert(offset: i * 20, s.sub(i * 20, 10)) == .accepted(advanced: 0, trimmed: 0))
            }
            #expect(r.insert(offset: 195, s.sub(195, 5)) == .refused, "a ninth hole")
            #expect(r.insert(offset: 0, s.sub(0, 10)) == .accepted(advanced: 10, trimmed: 0))
            #expect(r.outOfOrder.description == "[10..<20, 30..<40, 50..<60, 70..<80, 90..<100, 110..<120, 130..<140, 150..<160]")
            // The next in-order piece joins the first held range.
            #expect(r.insert(offset: 0, s.sub(10, 10)) == .accepted(advanced: 20, trimmed: 0))
        }
        var out = [UInt8](repeating: 0, count: 40)
        let got = out.withUnsafeMutableBytes { r.read(into: $0) }
        #expect(got == 30 && Array(out.prefix(30)) == Array(stream.prefix(30)))
    }

    @Test func trimsOldBytesAndBytesBeyondTheWindow() {
        let r = Reassembler(capacity: 10)
        let data = [UInt8](repeating: 7, count: 8)
        data.withUnsafeBytes { d in
            #expect(r.insert(offset: -3, d) == .accepted(advanced: 5, trimmed: 3))
            #expect(r.window == 5)
            #expect(r.insert(offset: 0, d) == .accepted(advanced: 5, trimmed: 3))
            #expect(r.window == 0)
            #expect(r.insert(offset: 0, d) == .accepted(advanced: 0, trimmed: 8))
        }
    }

    /// Random segmentation, order, duplication and overlap of a known stream,
    /// with a reader that drains at random: what comes out is the stream, and the
    /// ring never holds more than its capacity.
    @Test(arguments: Array(1 ... 20) as [UInt64])
    func deliversTheStreamWhateverTheOrder(seed: UInt64) {
        var rng = SeededRandom(seed: seed)
        let capacity = Int.random(in: 16 ... 512, using: &rng)
        let stream = (0 ..< 20_000).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
        let r = Reassembler(capacity: capacity)
        var delivered: [UInt8] = []
        var nextExpected = 0 // absolute offset of RCV.NXT
        var out = [UInt8](repeating: 0, count: 600)
        var steps = 0
        while delivered.count < stream.count, steps < 200_000 {
            steps += 1
            // A segment somewhere around RCV.NXT: maybe old, maybe past the window.
            let start = max(0, nextExpected + Int.random(in: -64 ... capacity, using: &rng))
            let length = min(Int.random(in: 1 ... 128, using: &rng), stream.count - start)
            if length > 0 {
                let outcome = stream.withUnsafeBytes { r.insert(offset: start - nextExpected, $0.sub(start, length)) }
                if case let .accepted(advanced, _) = outcome { nextExpected += advanced }
            }
            #expect(r.readable <= capacity)
            if Bool.random(using: &rng) {
                let n = out.withUnsafeMutableBytes { r.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<Int.random(in: 0 ... 600, using: &rng)])) }
                delivered += out.prefix(n)
            }
        }
        while r.readable > 0 {
            let n = out.withUnsafeMutableBytes { r.read(into: $0) }
            delivered += out.prefix(n)
        }
        #expect(delivered.count == stream.count, "seed \(seed) after \(steps) steps")
        let firstDifference = zip(delivered, stream).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(firstDifference == nil, "seed \(seed): delivered bytes differ from the stream")
    }
}

extension UnsafeRawBufferPointer {
    func sub(_ offset: Int, _ count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[offset ..< offset + count])
    }
}
