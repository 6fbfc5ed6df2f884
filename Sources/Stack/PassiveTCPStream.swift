public import Wire

/// One direction of a TCP connection that someone else is having: the byte
/// stream a capture shows, in order, whatever order the segments were
/// captured in. No ACKs are sent, so nothing is ever retransmitted for us: a
/// segment the capture missed stays missing, and the stream reports the hole
/// as a gap and moves on rather than waiting forever.
///
/// In-order segments (the usual case) are handed on where they lie, without a
/// copy. Only out-of-order ones are held, in a `Reassembler` created for that
/// moment and released once the hole is filled, so idle flows cost no buffer.
public final class PassiveTCPStream {
    /// The next byte's sequence number; nil until the first segment is seen.
    public private(set) var nextSequence: SequenceNumber?
    /// Where this direction's FIN sits, once one was seen.
    public private(set) var finSequence: SequenceNumber?
    /// The FIN was reached in order: no more bytes will come.
    public private(set) var isFinished = false
    /// Bytes handed on in order.
    public private(set) var deliveredBytes = 0
    /// Bytes seen again (retransmissions, overlaps) and dropped.
    public private(set) var duplicateBytes = 0
    /// Bytes never seen: the holes reported as gaps.
    public private(set) var missingBytes = 0
    /// Times an out-of-order segment could not be held (a limit, too many holes).
    public private(set) var overflows = 0
    /// The most out-of-order data held at once in this direction.
    public let holdCapacity: Int
    /// Out-of-order data waiting for a hole to fill.
    var held: Reassembler?

    public init(holdCapacity: Int) { self.holdCapacity = holdCapacity }

    /// Bytes of buffer this direction holds now (counted against a table's budget).
    public var heldCapacity: Int { held?.ring.capacity ?? 0 }

    /// What a stream hands on: in-order bytes (valid during the call only), or
    /// the size of a hole the capture never filled.
    public enum Chunk {
        case data(UnsafeRawBufferPointer)
        case gap(Int)
    }

    /// Takes one segment. `canHold` is asked before a buffer of `holdCapacity`
    /// bytes is created for out-of-order data; when it says no, the stream
    /// gives up on the hole instead (a gap) and goes on from this segment.
    public func receive(sequence: SequenceNumber, syn: Bool, fin: Bool, payload: UnsafeRawBufferPointer,
                        canHold: () -> Bool, deliver: (Chunk) -> Void) {
        let dataStart = syn ? sequence + 1 : sequence
        if nextSequence == nil { nextSequence = dataStart }
        if fin, finSequence == nil { finSequence = dataStart + payload.count }
        guard !isFinished, let next = nextSequence else { return }
        let offset = dataStart - next
        if offset + payload.count <= 0 {
            duplicateBytes += payload.count
            checkFinished()
            return
        }
        if held == nil, offset <= 0 {
            // In order, perhaps with an old part in front (a retransmission that grew).
            let fresh = payload.suffix(from: -offset)
            duplicateBytes += -offset
            handOn(fresh, deliver)
            return
        }
        if held == nil {
            guard offset < holdCapacity, canHold() else {
                skip(to: dataStart, payload: payload, deliver)
                return
            }
            held = Reassembler(capacity: holdCapacity)
        }
        guard let reassembler = held else { return }
        let before = reassembler.outOfOrder
        switch reassembler.insert(offset: offset, payload) {
        case let .accepted(advanced, trimmed):
            if trimmed > max(-offset, 0) {
                // Past what may be held: the hole before it is given up.
                flushHeld(deliver)
                skip(to: dataStart, payload: payload, deliver)
                return
            }
            if advanced == 0, reassembler.outOfOrder == before { duplicateBytes += payload.count }
            deliverReadable(reassembler, deliver)
        case .refused:
            flushHeld(deliver)
            skip(to: dataStart, payload: payload, deliver)
        }
    }

    /// The connection ended (RST, end of capture): what is held is handed on,
    /// holes reported as gaps.
    public func flush(_ deliver: (Chunk) -> Void) {
        flushHeld(deliver)
    }

    private func handOn(_ bytes: UnsafeRawBufferPointer, _ deliver: (Chunk) -> Void) {
        guard let next = nextSequence else { return }
        if !bytes.isEmpty { deliver(.data(bytes)) }
        deliveredBytes += bytes.count
        nextSequence = next + bytes.count
        checkFinished()
    }

    /// Bytes the reassembler made contiguous, handed on in place; the buffer
    /// is let go once no hole remains.
    private func deliverReadable(_ reassembler: Reassembler, _ deliver: (Chunk) -> Void) {
        while reassembler.readable > 0 {
            let piece = reassembler.ring.contiguousReadable(at: 0)
            handOn(piece, deliver)
            reassembler.consume(piece.count)
        }
        if reassembler.outOfOrder.isEmpty { held = nil }
    }

    /// Gives up on every hole: held ranges go out in order with gaps between.
    private func flushHeld(_ deliver: (Chunk) -> Void) {
        guard let reassembler = held else { return }
        held = nil
        deliverReadable(reassembler, deliver)
        let ranges = reassembler.outOfOrder
        guard !ranges.isEmpty else { return }
        let end = ranges[ranges.rangeCount - 1].upperBound
        // Everything up to the last held byte becomes readable, holes included;
        // the holes' bytes are skipped, never shown.
        reassembler.ring.commit(end)
        var position = 0
        for index in 0 ..< ranges.rangeCount {
            let range = ranges[index]
            reportGap(range.lowerBound - position, deliver)
            var at = range.lowerBound
            while at < range.upperBound {
                let piece = reassembler.ring.contiguousReadable(at: at, maxLength: range.upperBound - at)
                handOn(piece, deliver)
                at += piece.count
            }
            position = range.upperBound
        }
    }

    /// Jumps over the hole in front of `dataStart` and hands on the segment.
    private func skip(to dataStart: SequenceNumber, payload: UnsafeRawBufferPointer, _ deliver: (Chunk) -> Void) {
        guard let next = nextSequence else { return }
        overflows += 1
        let hole = dataStart - next
        if hole > 0 {
            reportGap(hole, deliver)
        }
        let old = max(-(dataStart - (nextSequence ?? dataStart)), 0)
        duplicateBytes += min(old, payload.count)
        handOn(payload.suffix(from: min(old, payload.count)), deliver)
    }

    private func reportGap(_ n: Int, _ deliver: (Chunk) -> Void) {
        guard n > 0, let next = nextSequence else { return }
        deliver(.gap(n))
        missingBytes += n
        nextSequence = next + n
    }

    private func checkFinished() {
        if let finSequence, let nextSequence, !(nextSequence < finSequence) { isFinished = true }
    }
}

extension PassiveTCPStream: CustomStringConvertible {
    /// `next 1001 delivered 1000 dup 0 missing 0 held [10..<20] fin`
    public var description: String {
        var text = "next \(nextSequence.map(\.description) ?? "-") delivered \(deliveredBytes) dup \(duplicateBytes) missing \(missingBytes)"
        if let held { text += " held \(held.outOfOrder)" }
        if isFinished { text += " fin" }
        return text
    }
}
