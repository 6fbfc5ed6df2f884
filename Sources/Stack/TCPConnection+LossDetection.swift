import Wire

/// Loss detection with SACK: RACK (RFC 8985) over the records of what was
/// sent (`SentSegments`), and retransmission of what it declares lost within
/// RFC 6675's pipe. Connections without SACK keep NewReno's duplicate ACKs
/// (`CongestionControl.swift`). docs/tcp.md, "Loss recovery", says why.
extension TCPConnection {
    /// New data left: remember when, for RACK.
    func recordTransmission(start: SequenceNumber, length: Int, now: Instant) {
        guard sackPermitted, length > 0 else { return }
        sentSegments.append(start: start, end: start + length, sentAt: now.nanoseconds)
    }

    /// Data went out again.
    func recordRetransmission(start: SequenceNumber, length: Int, now: Instant) {
        guard sackPermitted, length > 0 else { return }
        sentSegments.noteRetransmission(start: start, end: start + length, sentAt: now.nanoseconds)
        noteRetransmissionForUndo()
    }

    /// RFC 8985 §6.2 step 5 (RACK_detect_loss): every segment sent before the
    /// most recently sent delivered one, and not delivered a round trip and a
    /// reordering window after its own transmission, is lost. For the others
    /// the reordering timer is armed (§6.3).
    func detectLosses(now: Instant) {
        rackDeadline = nil
        guard let rackOrder = rack.order, !sentSegments.isEmpty, retransmitNext == nil else { return }
        let window = rack.reorderingWindow(inRecovery: congestion.inFastRecovery,
                                           selectivelyAcknowledged: sentSegments.selectivelyAcknowledgedCount,
                                           smoothedRoundTrip: retransmission.smoothedRTTNanoseconds)
        var earliest: Int64?
        for i in 0 ..< sentSegments.count {
            let record = sentSegments[i]
            if record.selectivelyAcknowledged || record.lost { continue }
            guard record.order < rackOrder else { continue }
            let remaining = record.sentAt + rack.roundTrip + window - now.nanoseconds
            if remaining <= 0 {
                sentSegments.markLost(i)
            } else if earliest.map({ remaining < $0 }) ?? true {
                earliest = remaining
            }
        }
        if let earliest { rackDeadline = now.advanced(byNanoseconds: earliest) }
        if sentSegments.lostBytes > 0, !congestion.inFastRecovery {
            // RFC 6675 §5 step 4 / RFC 8985 §3.4: loss starts fast recovery; the
            // first retransmission goes even if the new window holds it back.
            congestion.enterRecovery(flightSize: sendMaximum - sendUnacknowledged, highestSent: sendMaximum)
            counters.fastRecoveries += 1
            beginUndoEpisode()
            retransmissionOwed = true
        }
    }

    /// Retransmits the segments declared lost, lowest first, while the
    /// congestion window exceeds the pipe (RFC 6675 §5 step C).
    func emitLostRetransmissions(now: Instant, emit: Emit) {
        var index = 0
        var rounds = 0
        while index < sentSegments.count, sentSegments.lostBytes > 0, rounds < 64 {
            let record = sentSegments[index]
            index += 1
            guard record.lost else { continue }
            guard retransmissionOwed || pipe() + min(record.length, sendMaximumSegmentSize) <= congestion.congestionWindow else { break }
            retransmissionOwed = false
            rounds += 1
            var sequence = record.start
            while sequence < record.end {
                let payload = sendBuffer.contiguousReadable(at: sequence - sendBufferSequence,
                                                            maxLength: min(record.end - sequence, sendMaximumSegmentSize))
                guard payload.count > 0 else { break }
                emitSegment(sequence: sequence, flags: .ack, payload: payload, now: now, emit: emit)
                counters.sackRetransmits += 1
                noteRetransmissionForUndo()
                sequence += payload.count
            }
            // Also when nothing could be sent: the record stops counting as lost, so the loop ends.
            sentSegments.noteRetransmission(start: record.start, end: max(sequence, record.start + 1), sentAt: now.nanoseconds)
            timedSequence = nil
            if retransmissionDeadline == nil { retransmissionDeadline = now.advanced(byNanoseconds: retransmission.timeoutNanoseconds) }
        }
    }

    /// RFC 6675 §4 SetPipe(): what is outstanding, less what was selectively
    /// acknowledged, less what was declared lost and not yet sent again.
    func pipe() -> Int {
        max(sendMaximum - sendUnacknowledged - sackedBytes - sentSegments.lostBytes, 0)
    }

    /// Adds the peer's SACK blocks to the scoreboard, clipped to what is
    /// outstanding (RFC 6675 §4 Update()), and tells RACK what they delivered.
    /// The first block is a D-SACK (RFC 2883 §4) when it lies below the
    /// segment's own cumulative `acknowledgment`, or inside the second block:
    /// data arrived twice, so a retransmission was spurious. Any other block
    /// below SND.UNA is stale, from an ACK that was overtaken on its way.
    func recordSack(_ blocks: TCPSackBlocks, acknowledgment: SequenceNumber, now: Instant) {
        for (index, block) in blocks.enumerated() {
            if index == 0, block.right <= acknowledgment
                || (blocks.count > 1 && blocks[1].left <= block.left && block.right <= blocks[1].right) {
                rack.sawDuplicateSelectiveAcknowledgment(now: now.nanoseconds)
                noteDuplicateSelectiveAcknowledgment(left: block.left, right: block.right)
                continue
            }
            if block.right <= sendUnacknowledged { continue }
            let start = max(block.left - sendUnacknowledged, 0)
            let end = min(block.right - sendUnacknowledged, sendMaximum - sendUnacknowledged)
            guard end > start else { continue } // a stale block
            _ = scoreboard.add(offset: start, length: end - start)
            sentSegments.selectivelyAcknowledge(from: sendUnacknowledged + start, to: sendUnacknowledged + end) {
                rack.delivered($0, now: now.nanoseconds)
            }
        }
    }

    /// Bytes above SND.UNA the peer has selectively acknowledged.
    var sackedBytes: Int {
        var total = 0
        for i in 0 ..< scoreboard.rangeCount { total += scoreboard[i].count }
        return total
    }
}
