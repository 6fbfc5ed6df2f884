import Testing
@testable import Stack

/// The ring's storage starts at `initialAllocation` and doubles, within the
/// budget, only when the bytes it holds need it; growing keeps readable and
/// written-ahead bytes where they were relative to the head.
@Suite struct ByteRingGrowthTests {
    @Test func smallMessagesNeverGrowTheStorage() {
        let ring = ByteRing(capacity: 256 * 1024)
        #expect(ring.allocated == ByteRing.initialAllocation && ring.free == 256 * 1024)
        let message = [UInt8](repeating: 7, count: 1300)
        for _ in 0 ..< 1000 {
            #expect(message.withUnsafeBytes { ring.append($0) } == 1300)
            #expect(ring.discard(1300) == 1300)
        }
        #expect(ring.allocated == ByteRing.initialAllocation)
    }

    /// A seeded walk of appends, zero-copy fills, written-ahead stores,
    /// commits, peeks and discards against an array model: every byte read
    /// back is the one the model holds, across wraps and every doubling.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func aRandomWalkMatchesAModel(seed: UInt64) {
        let capacity = 100_000
        let ring = ByteRing(capacity: capacity)
        var model: [UInt8] = []          // readable bytes
        var ahead: [Int: UInt8] = [:]    // written ahead, by offset past the readable end
        var random = SplitMix64(seed: seed)
        var next: UInt8 = 0
        func bytes(_ n: Int) -> [UInt8] { (0 ..< n).map { _ in next &+= 1; return next } }
        for step in 0 ..< 4000 {
            switch random.next() % 5 {
            case 0:
                let data = bytes(Int(random.next() % 9000))
                let taken = data.withUnsafeBytes { ring.append($0) }
                #expect(taken == min(data.count, capacity - model.count), "step \(step)")
                // An append lands right after the readable bytes, over anything written ahead there.
                for i in 0 ..< taken { ahead[i] = nil }
                ahead = Dictionary(uniqueKeysWithValues: ahead.map { ($0.key - taken, $0.value) }.filter { $0.0 >= 0 })
                model += data.prefix(taken)
            case 1:
                let space = ring.contiguousFree()
                let n = min(space.count, Int(random.next() % 20_000))
                let data = bytes(n)
                data.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: space[0 ..< n]).copyMemory(from: $0) }
                ring.commit(n)
                ahead = Dictionary(uniqueKeysWithValues: ahead.map { ($0.key - n, $0.value) }.filter { $0.0 >= 0 })
                model += data
            case 2:
                let offset = Int(random.next() % 30_000)
                let data = bytes(Int(random.next() % 3000))
                let stored = data.withUnsafeBytes { ring.write(at: offset, $0) }
                #expect(stored == max(0, min(data.count, capacity - model.count - offset)), "step \(step)")
                for i in 0 ..< stored { ahead[offset + i] = data[i] }
                // Commit what is contiguous from the readable end, as the reassembler does.
                var run = 0
                while let byte = ahead[run] { model.append(byte); run += 1 }
                if run > 0 {
                    ring.commit(run)
                    ahead = Dictionary(uniqueKeysWithValues: ahead.map { ($0.key - run, $0.value) }.filter { $0.0 >= 0 })
                }
            case 3:
                let n = Int(random.next() % 12_000)
                #expect(ring.discard(n) == min(n, model.count))
                model.removeFirst(min(n, model.count))
            default:
                let offset = model.isEmpty ? 0 : Int(random.next() % UInt64(model.count))
                var out = [UInt8](repeating: 0, count: min(5000, model.count - offset))
                let got = out.withUnsafeMutableBytes { ring.peek(at: offset, into: $0) }
                #expect(got == out.count && out[...] == model[offset ..< offset + got], "step \(step)")
                let piece = ring.contiguousReadable(at: offset)
                #expect(piece.count <= model.count - offset && Array(piece) == Array(model[offset ..< offset + piece.count]), "step \(step)")
            }
            #expect(ring.count == model.count && ring.free == capacity - model.count)
            #expect(ring.allocated <= capacity)
        }
        #expect(ring.allocated == capacity, "the walk must have grown the ring to its budget")
    }

    @Test func bytesWrittenAheadSurviveGrowth() {
        let ring = ByteRing(capacity: 64 * 1024)
        let first = [UInt8](repeating: 1, count: 3000)
        _ = first.withUnsafeBytes { ring.append($0) }
        #expect(ring.discard(2500) == 2500)                 // the head moves off the start
        let late = [UInt8](repeating: 3, count: 2000)
        #expect(late.withUnsafeBytes { ring.write(at: 6000, $0) } == 2000) // needs 8500 bytes: grows
        #expect(ring.allocated == 16 * 1024)
        let gap = [UInt8](repeating: 2, count: 6000)
        #expect(gap.withUnsafeBytes { ring.write(at: 0, $0) } == 6000)
        ring.commit(8000)
        var out = [UInt8](repeating: 0, count: 8500)
        #expect(out.withUnsafeMutableBytes { ring.read(into: $0) } == 8500)
        #expect(out == [UInt8](repeating: 1, count: 500) + gap + late)
    }

    @Test func aFillPastHalfFullGrowsFirst() {
        let ring = ByteRing(capacity: 32 * 1024)
        #expect(ring.contiguousFree().count == 4096)
        ring.commit(2048)
        #expect(ring.contiguousFree().count == 8192 - 2048 && ring.allocated == 8192)
        ring.commit(8192 - 2048)
        #expect(ring.contiguousFree().count == 8192 && ring.allocated == 16 * 1024)
        ring.commit(8192)
        ring.commit(ring.contiguousFree().count)
        #expect(ring.allocated == 32 * 1024 && ring.free == 0 && ring.contiguousFree().count == 0)
    }
}
