import Testing
import Stack
import TestSupport

@Suite struct ByteRingTests {
    @Test func appendPeekReadAcrossTheWrap() {
        let r2 = ByteRing(capacity: 8)
        let six: [UInt8] = [1, 2, 3, 4, 5, 6]
        #expect(six.withUnsafeBytes { r2.append($0) } == 6)
        #expect(r2.discard(4) == 4)
        let five: [UInt8] = [7, 8, 9, 10, 11]
        #expect(five.withUnsafeBytes { r2.append($0) } == 5) // wraps
        #expect(r2.count == 7 && r2.free == 1)
        var out = [UInt8](repeating: 0, count: 7)
        let got = out.withUnsafeMutableBytes { r2.peek(at: 0, into: $0) }
        #expect(got == 7)
        #expect(out == [5, 6, 7, 8, 9, 10, 11])
        #expect(r2.contiguousReadable(at: 0).count == 4) // 5,6,7,8 before the wrap
        #expect(Array(r2.contiguousReadable(at: 4)) == [9, 10, 11])
        var three = [UInt8](repeating: 0, count: 3)
        let got2 = three.withUnsafeMutableBytes { r2.peek(at: 5, into: $0) }
        #expect(got2 == 2)
        #expect(three == [10, 11, 0])
    }

    @Test func appendStopsAtCapacity() {
        let ring = ByteRing(capacity: 4)
        let bytes: [UInt8] = [1, 2, 3, 4, 5, 6]
        #expect(bytes.withUnsafeBytes { ring.append($0) } == 4)
        #expect(ring.free == 0)
        #expect(bytes.withUnsafeBytes { ring.append($0) } == 0)
    }

    /// The ring against an Array model: random appends, peeks and discards.
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func matchesAnArrayModel(seed: UInt64) {
        var rng = SeededRandom(seed: seed)
        let capacity = Int.random(in: 1 ... 64, using: &rng)
        let ring = ByteRing(capacity: capacity)
        var model: [UInt8] = []
        var next: UInt8 = 0
        for step in 0 ..< 2000 {
            switch Int.random(in: 0 ..< 3, using: &rng) {
            case 0:
                let chunk = (0 ..< Int.random(in: 0 ... capacity, using: &rng)).map { _ in next &+= 1; return next }
                let taken = chunk.withUnsafeBytes { ring.append($0) }
                #expect(taken == min(chunk.count, capacity - model.count), "step \(step)")
                model += chunk.prefix(taken)
            case 1:
                let offset = Int.random(in: 0 ... capacity, using: &rng)
                var out = [UInt8](repeating: 0, count: Int.random(in: 0 ... capacity, using: &rng))
                let n = out.withUnsafeMutableBytes { ring.peek(at: offset, into: $0) }
                let expected = offset < model.count ? Array(model[offset ..< min(model.count, offset + out.count)]) : []
                #expect(Array(out.prefix(n)) == expected, "step \(step)")
            default:
                let n = Int.random(in: 0 ... capacity, using: &rng)
                let k = ring.discard(n)
                #expect(k == min(n, model.count))
                model.removeFirst(k)
            }
            #expect(ring.count == model.count)
        }
    }
}

@Suite struct ByteRingFillTests {
    @Test func contiguousFreeSpaceStopsAtTheWrapAndCommits() {
        let ring = ByteRing(capacity: 8)
        let five: [UInt8] = [1, 2, 3, 4, 5]
        _ = five.withUnsafeBytes { ring.append($0) }
        ring.discard(4)                                   // head at 4, one readable byte
        let space = ring.contiguousFree()
        #expect(space.count == 3)                         // offsets 5, 6, 7: up to the wrap
        for i in 0 ..< 3 { space[i] = UInt8(10 + i) }
        ring.commit(3)
        #expect(ring.contiguousFree().count == 4)         // offsets 0...3 after the wrap
        var out = [UInt8](repeating: 0, count: 4)
        let n = out.withUnsafeMutableBytes { ring.read(into: $0) }
        #expect(n == 4 && out == [5, 10, 11, 12])
    }
}
