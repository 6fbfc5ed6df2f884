/// The receive side of a TCP connection: segments go in at their offset from
/// RCV.NXT in any order, and the in-order byte stream comes out.
///
/// Memory is bounded by the ring's capacity, which is also the most the
/// receive window may ever advertise: a byte beyond it is never accepted, so
/// a slow reader closes the window instead of growing a buffer.
public final class Reassembler {
    public let ring: ByteRing
    public private(set) var assembler = Assembler()

    public init(capacity: Int) { ring = ByteRing(capacity: capacity) }

    /// Bytes that are in order and not yet read.
    public var readable: Int { ring.count }

    /// The receive window to advertise: the room left in the ring.
    public var window: Int { ring.free }

    /// Out-of-order ranges held, relative to RCV.NXT, for SACK blocks.
    public var outOfOrder: Assembler { assembler }

    public enum Outcome: Equatable, Sendable {
        /// `advanced` bytes became readable (0 when the data was out of order or
        /// a duplicate); `trimmed` bytes were cut because they fell outside the window.
        case accepted(advanced: Int, trimmed: Int)
        /// The segment would need more out-of-order ranges than are kept.
        case refused
    }

    /// Stores `data` that starts `offset` bytes past RCV.NXT. A negative
    /// offset (a partly old segment) is trimmed to its new part.
    public func insert(offset: Int, _ data: UnsafeRawBufferPointer) -> Outcome {
        var offset = offset
        var bytes = data
        var trimmed = 0
        if offset < 0 {
            let old = min(-offset, bytes.count)
            bytes = UnsafeRawBufferPointer(rebasing: bytes[old...])
            trimmed += old
            offset = 0
        }
        let room = max(ring.free - offset, 0)
        if bytes.count > room {
            trimmed += bytes.count - room
            bytes = UnsafeRawBufferPointer(rebasing: bytes[..<room])
        }
        guard !bytes.isEmpty else { return .accepted(advanced: 0, trimmed: trimmed) }
        guard assembler.add(offset: offset, length: bytes.count) else {
            // Every range slot is taken, but a segment at RCV.NXT needs none: it is
            // contiguous at once (and touches no range, or it would have merged).
            // Refusing it stalled the connection for good: after a timeout the
            // peer resends only that segment, again and again.
            guard offset == 0 else { return .refused }
            ring.write(at: 0, bytes)
            ring.commit(bytes.count)
            assembler.advance(by: bytes.count)
            return .accepted(advanced: bytes.count, trimmed: trimmed)
        }
        ring.write(at: offset, bytes)
        let advanced = assembler.removeFront()
        ring.commit(advanced)
        return .accepted(advanced: advanced, trimmed: trimmed)
    }

    /// Copies and consumes in-order bytes.
    public func read(into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = ring.read(into: out)
        restartIfDrained()
        return n
    }

    /// Consumes in-order bytes the reader already took through `ring`.
    public func consume(_ n: Int) {
        ring.discard(n)
        restartIfDrained()
    }

    /// A drained ring with no out-of-order data restarts at its storage's
    /// start, so the next message arrives in one piece (one write upstream).
    func restartIfDrained() {
        if assembler.isEmpty { ring.restartIfEmpty() }
    }
}
