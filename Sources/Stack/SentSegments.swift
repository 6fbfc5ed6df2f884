import Wire

/// What RACK (RFC 8985) needs to know of each data segment in flight: its
/// sequence range, when it was last (re)transmitted, and whether the peer has
/// selectively acknowledged it or RACK has declared it lost.
///
/// The records are kept in sequence order. New data is appended at the end,
/// and a retransmission updates the record in place. Loss is then decided by
/// time rather than by counting duplicate ACKs: a segment is lost when a
/// segment sent after it was delivered and a reordering window has passed.
/// This catches losses that the duplicate-ACK threshold cannot see (a window
/// of three segments, the last segment of a burst) and lost retransmissions,
/// which RFC 6675 leaves to the retransmission timer.
///
/// The storage is a power-of-two ring that doubles when it fills and never
/// shrinks, so a connection in steady state allocates nothing per segment.
/// At `maximumCapacity` records it stops growing and merges a new segment
/// into the last record instead: coarser loss detection, bounded memory.
struct SentSegments {
    struct Record {
        var start: SequenceNumber
        var end: SequenceNumber
        /// The clock, in nanoseconds, of the latest transmission.
        var sentAt: Int64
        /// The latest transmission's place in the order of all of them: one
        /// `output` sends many segments at the same `now`, and RACK must still
        /// know which left first (RFC 8985 §6.2 orders by time, then by sequence,
        /// which would put a retransmission before new data sent with it).
        var order: UInt64
        var retransmitted: Bool
        var selectivelyAcknowledged: Bool
        /// Declared lost and not retransmitted since.
        var lost: Bool

        var length: Int { end - start }
    }

    static let initialCapacity = 8
    static let maximumCapacity = 4096

    private var storage: [Record] = []
    private var head = 0
    private(set) var count = 0
    private var nextOrder: UInt64 = 0
    /// Bytes of records declared lost and not retransmitted since: RFC 6675's
    /// pipe leaves them out, they are no longer in the network.
    private(set) var lostBytes = 0
    /// Records the peer selectively acknowledged (RFC 8985 §6.2 compares it
    /// with DupThresh).
    private(set) var selectivelyAcknowledgedCount = 0

    var isEmpty: Bool { count == 0 }

    subscript(index: Int) -> Record {
        get { storage[(head + index) & (storage.count - 1)] }
        set { storage[(head + index) & (storage.count - 1)] = newValue }
    }

    /// A first transmission of `[start, end)`, which must follow the last record.
    mutating func append(start: SequenceNumber, end: SequenceNumber, sentAt: Int64) {
        guard start < end else { return }
        if count == storage.count {
            if storage.count >= Self.maximumCapacity {
                self[count - 1].end = end
                self[count - 1].sentAt = sentAt
                self[count - 1].order = takeOrder()
                return
            }
            grow()
        }
        count += 1
        self[count - 1] = Record(start: start, end: end, sentAt: sentAt, order: takeOrder(), retransmitted: false,
                                 selectivelyAcknowledged: false, lost: false)
    }

    private mutating func takeOrder() -> UInt64 {
        defer { nextOrder += 1 }
        return nextOrder
    }

    private mutating func grow() {
        let capacity = max(storage.count * 2, Self.initialCapacity)
        var bigger: [Record] = []
        bigger.reserveCapacity(capacity)
        for i in 0 ..< count { bigger.append(self[i]) }
        let filler = Record(start: SequenceNumber(0), end: SequenceNumber(0), sentAt: 0, order: 0, retransmitted: false,
                            selectivelyAcknowledged: false, lost: false)
        while bigger.count < capacity { bigger.append(filler) }
        storage = bigger
        head = 0
    }

    /// The index of the first record that ends after `sequence` (`count` if none).
    func firstIndex(endingAfter sequence: SequenceNumber) -> Int {
        var low = 0, high = count
        while low < high {
            let middle = (low + high) / 2
            if sequence < self[middle].end { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// Removes the records the cumulative acknowledgment covers, calling
    /// `delivered` for each that had not been selectively acknowledged. A
    /// record only partly covered is trimmed to what remains.
    mutating func removeAcknowledged(upTo acknowledgment: SequenceNumber, delivered: (Record) -> Void) {
        while count > 0 {
            var first = self[0]
            if acknowledgment < first.end {
                if first.start < acknowledgment {
                    if first.lost { lostBytes -= acknowledgment - first.start }
                    first.start = acknowledgment
                    self[0] = first
                }
                return
            }
            if first.lost { lostBytes -= first.length }
            if first.selectivelyAcknowledged { selectivelyAcknowledgedCount -= 1 } else { delivered(first) }
            head = (head + 1) & (storage.count - 1)
            count -= 1
        }
    }

    /// Marks the records inside `[left, right)` as selectively acknowledged,
    /// calling `delivered` for each newly marked one.
    mutating func selectivelyAcknowledge(from left: SequenceNumber, to right: SequenceNumber, delivered: (Record) -> Void) {
        var i = firstIndex(endingAfter: left)
        while i < count {
            var record = self[i]
            guard record.end <= right else { return }
            if left <= record.start, !record.selectivelyAcknowledged {
                record.selectivelyAcknowledged = true
                selectivelyAcknowledgedCount += 1
                if record.lost {
                    record.lost = false
                    lostBytes -= record.length
                }
                self[i] = record
                delivered(record)
            }
            i += 1
        }
    }

    mutating func markLost(_ index: Int) {
        guard !self[index].lost, !self[index].selectivelyAcknowledged else { return }
        self[index].lost = true
        lostBytes += self[index].length
    }

    /// `[start, end)` went out again at `sentAt`: every record it touches counts
    /// as retransmitted then (a record it covers only in part too: loss
    /// detection for the rest then waits a little longer, never less).
    mutating func noteRetransmission(start: SequenceNumber, end: SequenceNumber, sentAt: Int64) {
        var i = firstIndex(endingAfter: start)
        while i < count, self[i].start < end {
            if self[i].lost {
                self[i].lost = false
                lostBytes -= self[i].length
            }
            self[i].sentAt = sentAt
            self[i].order = takeOrder()
            self[i].retransmitted = true
            i += 1
        }
    }

    /// After a retransmission timeout the peer's selective acknowledgments
    /// are no longer trusted (RFC 6675 §5.1), and go-back-N resends everything.
    mutating func forgetSelectiveAcknowledgmentsAndLosses() {
        for i in 0 ..< count {
            self[i].selectivelyAcknowledged = false
            self[i].lost = false
        }
        lostBytes = 0
        selectivelyAcknowledgedCount = 0
    }

    /// Gives the storage back (TIME-WAIT).
    mutating func release() {
        storage = []
        head = 0
        count = 0
        lostBytes = 0
        selectivelyAcknowledgedCount = 0
    }
}
