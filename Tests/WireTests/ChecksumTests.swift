import Testing
import TestSupport
@testable import Wire

/// A slow, obviously correct RFC 1071 sum to compare the fast one against.
private func referenceChecksum(_ bytes: [UInt8]) -> UInt16 {
    var sum: UInt32 = 0
    var i = 0
    while i < bytes.count {
        let hi = UInt32(bytes[i])
        let lo = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0
        sum += hi << 8 | lo
        i += 2
    }
    while sum > 0xffff { sum = (sum & 0xffff) + (sum >> 16) }
    return ~UInt16(sum)
}


@Suite struct ChecksumTests {
    /// What a device does with a NEEDS_CSUM packet: the field holds a partial
    /// sum, the sum of everything from `start` (that field included) goes in
    /// its place, complemented. Against the reference over random bytes of
    /// odd and even lengths; out-of-range requests leave the bytes alone.
    @Test func completingAPartialSumMatchesTheReference() {
        var random = SeededRandom(seed: 7)
        for length in [38, 39, 60, 61, 1500, 4097] {
            var packet = (0 ..< length).map { _ in UInt8.random(in: 0 ... 255, using: &random) }
            let partial = UInt16.random(in: 0 ... 0xffff, using: &random)
            packet[20 + 16] = UInt8(partial >> 8); packet[20 + 17] = UInt8(partial & 0xff)
            // The reference: the partial sum added as a word of its own, the field zeroed.
            var zeroed = Array(packet[20...]); zeroed[16] = 0; zeroed[17] = 0
            let expected = ~InternetChecksum.fold(UInt32(~referenceChecksum(zeroed)) &+ UInt32(partial))
            packet.withUnsafeMutableBytes { InternetChecksum.completePartial(in: $0, start: 20, offset: 16) }
            #expect(UInt16(packet[36]) << 8 | UInt16(packet[37]) == UInt16(truncatingIfNeeded: expected), "length \(length)")
            // And it verifies as a receiver checks: with the pseudo-header's sum (the partial one) added back.
            #expect(InternetChecksum.fold(UInt32(~referenceChecksum(Array(packet[20...]))) &+ UInt32(partial)) == 0xffff, "length \(length)")
        }
        var short = [UInt8](repeating: 9, count: 30)
        short.withUnsafeMutableBytes { InternetChecksum.completePartial(in: $0, start: 20, offset: 16) }
        #expect(short == [UInt8](repeating: 9, count: 30))
    }

    @Test func rfc1071Example() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
        let bytes: [UInt8] = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]
        bytes.withUnsafeBytes { #expect(InternetChecksum.foldedSum($0) == 0xddf2) }
        #expect(bytes.withUnsafeBytes { InternetChecksum.of($0) } == ~0xddf2)
    }

    @Test func matchesReferenceForEveryLengthUpTo300() {
        var rng = SeededRandom(seed: 1)
        for length in 0 ... 300 {
            let bytes = (0 ..< length).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            let fast = bytes.withUnsafeBytes { InternetChecksum.of($0) }
            #expect(fast == referenceChecksum(bytes), "length \(length)")
        }
    }

    /// Long buffers take the four-sum loop for thousands of rounds: random
    /// bytes, all ones (the largest sums) and every offset of a 64 KiB segment's end.
    @Test func longBuffersMatchTheReference() {
        var random = SeededRandom(seed: 99)
        let data = (0 ..< 65_535 + 40).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let ones = [UInt8](repeating: 0xff, count: 65_535)
        for length in [1024, 1460, 9000, 65_535, 65_535 + 33] {
            data.withUnsafeBytes { #expect(InternetChecksum.of(UnsafeRawBufferPointer(rebasing: $0[0 ..< length])) == referenceChecksum(Array(data[0 ..< length]))) }
        }
        for start in 0 ..< 40 {
            data.withUnsafeBytes { #expect(InternetChecksum.of(UnsafeRawBufferPointer(rebasing: $0[start ..< start + 65_000])) == referenceChecksum(Array(data[start ..< start + 65_000]))) }
        }
        ones.withUnsafeBytes { #expect(InternetChecksum.of($0) == referenceChecksum(ones)) }
    }

    @Test func piecesOfOddLengthSumLikeTheWhole() {
        var rng = SeededRandom(seed: 2)
        for trial in 0 ..< 200 {
            let bytes = (0 ..< Int.random(in: 0 ... 200, using: &rng)).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            var cuts = (0 ..< Int.random(in: 0 ... 5, using: &rng)).map { _ in Int.random(in: 0 ... bytes.count, using: &rng) }
            cuts.sort()
            var c = InternetChecksum()
            var start = 0
            bytes.withUnsafeBytes { raw in
                for cut in cuts + [bytes.count] {
                    c.add(UnsafeRawBufferPointer(rebasing: raw[start ..< cut]))
                    start = cut
                }
            }
            #expect(c.value == referenceChecksum(bytes), "trial \(trial), cuts \(cuts)")
        }
    }

    @Test func allOnesAndAllZeros() {
        let zeros = [UInt8](repeating: 0, count: 64)
        #expect(zeros.withUnsafeBytes { InternetChecksum.of($0) } == 0xffff)
        let ones = [UInt8](repeating: 0xff, count: 64)
        #expect(ones.withUnsafeBytes { InternetChecksum.of($0) } == 0x0000)
    }

    @Test func incrementalUpdateMatchesRecomputation() {
        var rng = SeededRandom(seed: 3)
        for _ in 0 ..< 500 {
            var bytes = (0 ..< 20).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            let before = referenceChecksum(bytes)
            let at = Int.random(in: 0 ..< 10, using: &rng) * 2
            let old = UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
            let new = UInt16.random(in: 0 ... .max, using: &rng)
            bytes[at] = UInt8(new >> 8); bytes[at + 1] = UInt8(new & 0xff)
            let updated = InternetChecksum.updated(before, old: old, new: new)
            // RFC 1624 §3: the update may yield 0xffff where recomputation yields 0 (both
            // are ones' complement zero); compare the verified sums instead of the raw values.
            var check = InternetChecksum()
            bytes.withUnsafeBytes { check.add($0) }
            check.add(updated)
            #expect(check.folded == 0xffff || updated == referenceChecksum(bytes))
        }
    }

    @Test func incrementalUpdateOf32BitField() {
        var rng = SeededRandom(seed: 4)
        for _ in 0 ..< 500 {
            var bytes = (0 ..< 20).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            let before = referenceChecksum(bytes)
            let old = UInt32(bytes[12]) << 24 | UInt32(bytes[13]) << 16 | UInt32(bytes[14]) << 8 | UInt32(bytes[15])
            let new = UInt32.random(in: 0 ... .max, using: &rng)
            for k in 0 ..< 4 { bytes[12 + k] = UInt8(truncatingIfNeeded: new >> (24 - 8 * UInt32(k))) }
            let updated = InternetChecksum.updated(before, old: old, new: new)
            var check = InternetChecksum()
            bytes.withUnsafeBytes { check.add($0) }
            check.add(updated)
            #expect(check.folded == 0xffff)
        }
    }

    @Test func ipv4PseudoHeaderFollowsRFC793() {
        // Sum by hand: 10.0.0.1, 10.0.0.2, zero+6, length 20.
        let c = InternetChecksum.pseudoHeader(
            source: IPv4Address(10, 0, 0, 1), destination: IPv4Address(10, 0, 0, 2), protocol: .tcp, length: 20)
        let bytes: [UInt8] = [10, 0, 0, 1, 10, 0, 0, 2, 0, 6, 0, 20]
        #expect(c.value == referenceChecksum(bytes))
    }

    @Test func ipv6PseudoHeaderFollowsRFC8200() {
        let src = IPv6Address("fd00::1")!, dst = IPv6Address("fd00:99:1::2")!
        let c = InternetChecksum.pseudoHeader(source: src, destination: dst, protocol: .udp, length: 0x1_0020)
        var bytes: [UInt8] = []
        for g in src.groups + dst.groups { bytes += [UInt8(g >> 8), UInt8(g & 0xff)] }
        bytes += [0x00, 0x01, 0x00, 0x20, 0, 0, 0, 17]
        #expect(c.value == referenceChecksum(bytes))
    }
}
