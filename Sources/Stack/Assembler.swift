/// Which byte ranges past the contiguous point have arrived: the bookkeeping
/// of TCP reassembly (RFC 9293 §3.10.7.4 lets a receiver keep out-of-order
/// segments; RFC 2018 SACK reports what it kept).
///
/// Offsets are relative to the first byte not yet contiguous (RCV.NXT). At most
/// `maxRanges` disjoint ranges are held, inline, so reassembly never allocates;
/// a segment that would need one more is refused and the peer retransmits it
/// (unless it starts at RCV.NXT: `Reassembler.insert` takes that one without a slot).
public struct Assembler: Sendable, Equatable, CustomStringConvertible {
    public static let maxRanges = 8

    /// Disjoint, sorted, non-adjacent ranges `[start, end)`.
    @usableFromInline var starts = InlineArray<8, Int>(repeating: 0)
    @usableFromInline var ends = InlineArray<8, Int>(repeating: 0)
    public private(set) var rangeCount = 0

    public init() {}

    public var isEmpty: Bool { rangeCount == 0 }

    public subscript(index: Int) -> Range<Int> {
        precondition(index < rangeCount)
        return starts[index] ..< ends[index]
    }

    /// Records `[offset, offset+length)`. Returns false, changing nothing, when
    /// the range would need more than `maxRanges` holes.
    public mutating func add(offset: Int, length: Int) -> Bool {
        guard length > 0 else { return true }
        var lo = offset, hi = offset + length
        // Ranges entirely before, ranges that touch or overlap, ranges entirely after.
        var first = 0
        while first < rangeCount, ends[first] < lo { first += 1 }
        var last = first
        while last < rangeCount, starts[last] <= hi {
            lo = min(lo, starts[last]); hi = max(hi, ends[last]); last += 1
        }
        let merged = last - first
        let newCount = rangeCount - merged + 1
        guard newCount <= Self.maxRanges else { return false }
        if merged == 0 {
            var i = rangeCount
            while i > first { starts[i] = starts[i - 1]; ends[i] = ends[i - 1]; i -= 1 }
        } else if merged > 1 {
            let shift = merged - 1
            for i in last ..< rangeCount { starts[i - shift] = starts[i]; ends[i - shift] = ends[i] }
        }
        starts[first] = lo; ends[first] = hi
        rangeCount = newCount
        return true
    }

    /// If the first range starts at offset 0, removes it and returns its length:
    /// those bytes are now contiguous. Remaining offsets shift down by that much.
    public mutating func removeFront() -> Int {
        guard rangeCount > 0, starts[0] == 0 else { return 0 }
        let n = ends[0]
        for i in 1 ..< rangeCount { starts[i - 1] = starts[i] - n; ends[i - 1] = ends[i] - n }
        rangeCount -= 1
        return n
    }

    /// Moves the origin forward by `n` bytes that arrived in order, dropping
    /// any range (or part) those bytes cover.
    public mutating func advance(by n: Int) {
        guard n > 0 else { return }
        var out = 0
        for i in 0 ..< rangeCount {
            let s = max(starts[i] - n, 0), e = ends[i] - n
            if e > 0 { starts[out] = s; ends[out] = e; out += 1 }
        }
        rangeCount = out
    }

    public static func == (a: Assembler, b: Assembler) -> Bool {
        guard a.rangeCount == b.rangeCount else { return false }
        for i in 0 ..< a.rangeCount where a.starts[i] != b.starts[i] || a.ends[i] != b.ends[i] { return false }
        return true
    }

    public var description: String {
        "[" + (0 ..< rangeCount).map { "\(starts[$0])..<\(ends[$0])" }.joined(separator: ", ") + "]"
    }
}
