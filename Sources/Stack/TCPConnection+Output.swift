public import Wire

/// Segment generation and timers: everything the connection sends, decided
/// from its flags and deadlines at the time the engine calls `output`.
extension TCPConnection {
    /// A segment the connection wants sent; the payload is borrowed for the call.
    public typealias Emit = (TCPHeader, UnsafeRawBufferPointer) -> Void

    /// Fires the timers that are due at `now`, then emits every segment the
    /// connection owes: handshake, resets, data within the windows, probes, ACKs.
    public func output(now: Instant, emit: Emit) {
        fireTimers(now: now)
        if let reset = resetToSend {
            resetToSend = nil
            let flags: TCPFlags = reset.acknowledgment == nil ? .rst : [.rst, .ack]
            emit(TCPHeader(sourcePort: localPort, destinationPort: remotePort, sequenceNumber: reset.sequence,
                           acknowledgmentNumber: reset.acknowledgment ?? SequenceNumber(0), flags: flags, windowSize: 0),
                 UnsafeRawBufferPointer(start: nil, count: 0))
        }
        switch state {
        case .closed, .listen:
            return
        case .synSent:
            if sendSyn {
                sendSyn = false
                emitHandshake(flags: .syn, now: now, emit: emit)
            }
            return
        case .synReceived:
            if sendSynAck || retransmitOne {
                sendSynAck = false
                retransmitOne = false
                emitHandshake(flags: [.syn, .ack], now: now, emit: emit)
            }
            return
        case .established, .finWait1, .finWait2, .closeWait, .closing, .lastAck, .timeWait:
            break
        }
        if retransmitOne {
            retransmitOne = false
            emitRetransmission(now: now, emit: emit)
        }
        if probePending {
            probePending = false
            emitTailLossProbe(now: now, emit: emit)
        }
        if sentSegments.lostBytes > 0 { emitLostRetransmissions(now: now, emit: emit) }
        if state != .timeWait { emitData(now: now, emit: emit) }
        if ackNow { emitSegment(sequence: sendNext, flags: .ack, payload: UnsafeRawBufferPointer(start: nil, count: 0), now: now, emit: emit) }
    }

    // MARK: Timers

    func fireTimers(now: Instant) {
        if let d = timeWaitDeadline, d <= now {
            timeWaitDeadline = nil
            state = .closed
            return
        }
        if let d = idleDeadline, d <= now {
            events.insert(.timedOut)
            timeout = .idle
            abort()
            return
        }
        if let d = retransmissionDeadline, d <= now {
            retransmissionDeadline = nil
            retransmissionTimedOut(now: now)
        }
        if let d = delayedAckDeadline, d <= now {
            delayedAckDeadline = nil
            ackNow = true
        }
        if let d = probeDeadline, d <= now {
            probeDeadline = nil
            probePending = true
        }
        if let d = rackDeadline, d <= now {
            detectLosses(now: now)
        }
        if let d = keepaliveDeadline, d <= now {
            keepaliveTimedOut(now: now)
        }
    }

    /// RFC 6298 §5.4–5.6 and RFC 5681 §3.1: back off, collapse the window, go back to SND.UNA.
    func retransmissionTimedOut(now: Instant) {
        consecutiveTimeouts += 1
        counters.retransmissionTimeouts += 1
        let limit = state.isSynchronized ? configuration.maximumRetransmissions : configuration.maximumSynRetransmissions
        guard consecutiveTimeouts <= limit else {
            events.insert(.timedOut)
            timeout = .retransmissions
            abort()
            return
        }
        retransmission.expired()
        if congestion.onTimeout(flightSize: sendMaximum - sendUnacknowledged) { beginUndoEpisode() }
        timedSequence = nil // Karn: never time a retransmission
        // RFC 6675 §5.1: after a timeout the scoreboard is not trusted (the receiver may have reneged).
        scoreboard = Assembler()
        sentSegments.forgetSelectiveAcknowledgmentsAndLosses()
        rackDeadline = nil
        retransmissionOwed = false
        // Resend from SND.UNA, one congestion window at a time. SND.NXT stays where it
        // was: pulling it back would put our ACKs' sequence numbers behind what the peer
        // already received, and it would discard them as old (RFC 9293 §3.10.7.4, first check).
        if sendUnacknowledged < sendNext { retransmitNext = sendUnacknowledged }
        switch state {
        case .synSent: sendSyn = true
        case .synReceived: sendSynAck = true
        case .established, .finWait1, .finWait2, .closeWait, .closing, .lastAck, .timeWait, .closed, .listen: break
        }
    }

    /// RFC 9293 §3.8.4 / RFC 1122 §4.2.3.6: a probe with SEG.SEQ = SND.NXT − 1 asks for an ACK.
    func keepaliveTimedOut(now: Instant) {
        guard keepalivesUnanswered < keepaliveProbes else {
            events.insert(.timedOut)
            timeout = .keepalive
            abort()
            return
        }
        keepalivesUnanswered += 1
        keepaliveDeadline = now + keepaliveInterval
        keepaliveProbePending = true
    }

    // MARK: Segments

    func emitHandshake(flags: TCPFlags, now: Instant, emit: Emit) {
        let shift = flags.contains(.ack) ? receiveWindowShift : configuration.windowScaleShift
        var options = TCPOptions()
        options.maximumSegmentSize = UInt16(clamping: configuration.maximumSegmentSize)
        let offerAll = !flags.contains(.ack) // in a SYN-ACK, answer only what the SYN offered (RFC 7323 §§1.3, 2.2)
        if configuration.selectiveAcknowledgments, offerAll || sackPermitted { options.sackPermitted = true }
        if configuration.timestamps, offerAll || timestampsEnabled {
            options.timestamps = TCPTimestamps(value: timestampValue(now), echoReply: flags.contains(.ack) ? timestampRecent : 0)
        }
        if configuration.windowScaling, offerAll || sendWindowShift > 0 || receiveWindowShift > 0 {
            options.windowScale = shift
        }
        let window = min(receiveBuffer.window, 65535) // RFC 7323 §2.2: a SYN's window is never scaled
        let header = TCPHeader(sourcePort: localPort, destinationPort: remotePort, sequenceNumber: initialSendSequence,
                               acknowledgmentNumber: flags.contains(.ack) ? receiveNext : SequenceNumber(0),
                               flags: flags, windowSize: UInt16(window), options: options)
        emit(header, UnsafeRawBufferPointer(start: nil, count: 0))
        advertisedRightEdge = receiveNext + window
        lastAcknowledgmentSent = receiveNext
        sendNext = initialSendSequence + 1
        if sendMaximum < sendNext { sendMaximum = sendNext }
        if retransmissionDeadline == nil { retransmissionDeadline = now.advanced(byNanoseconds: retransmission.timeoutNanoseconds) }
    }

    /// Sends new data (and the FIN) as far as the peer's window and the
    /// congestion window allow, one MSS at a time; Nagle is off.
    func emitData(now: Instant, emit: Emit) {
        var segments = 0
        var heldByWindow = false
        defer { windowUsage.sent(flight: sendMaximum - sendUnacknowledged, heldBack: heldByWindow) }
        while segments < 1024 {
            // After a timeout, retransmission walks from SND.UNA to SND.NXT before new data goes.
            let retransmitting = retransmitNext != nil
            let point = retransmitNext ?? sendNext
            let offset = point - sendBufferSequence
            let available = sendBuffer.count - offset
            guard available >= 0 else { break } // our FIN is already out
            let flight = point - sendUnacknowledged
            // In SACK recovery the congestion window limits the pipe (RFC 6675); the peer's window still limits the flight.
            let congestionRoom = sackPermitted && congestion.inFastRecovery && !retransmitting
                ? congestion.congestionWindow - pipe() : congestion.congestionWindow - flight
            let usable = min(sendWindow - flight, congestionRoom)
            // SACK blocks ride on our data segments while we hold out-of-order data or
            // owe a D-SACK: leave them room (two NOPs, kind, length, 8 bytes a block),
            // so the segment never outgrows the MTU the MSS was derived from.
            let optionRoom = sackPermitted && (!receiveBuffer.outOfOrder.isEmpty || duplicateReport != nil)
                ? 4 + 8 * sackBlockRoom : 0
            // The congestion window, not the peer's, keeps data waiting (RFC 7661's "cwnd-limited").
            let windowHolds = congestionRoom < min(available, sendMaximumSegmentSize - optionRoom) && congestionRoom < sendWindow - flight
            if windowHolds { heldByWindow = true }
            var length = min(available, sendMaximumSegmentSize - optionRoom, max(usable, 0))
            if length == 0, available > 0 {
                // Zero window with data waiting: the persist timer probes it (RFC 9293 §3.8.6.1).
                if sendWindow == 0, flight == 0 { armPersist(now: now, emit: emit) }
                break
            }
            // Sender-side silly window avoidance for the congestion window (RFC
            // 9293 §3.8.6.2.1, RFC 5681 counts it in segments): a window that
            // grew by part of a segment (CUBIC's growth, HyStart++'s CSS) does
            // not send that part alone while data is in flight; the next ACK
            // makes room for a whole segment.
            if length > 0, flight > 0, windowHolds { break }
            let payload = sendBuffer.contiguousReadable(at: offset, maxLength: length)
            length = payload.count
            let fin = finQueued && offset + length == sendBuffer.count
            guard length > 0 || fin else { break }
            var flags: TCPFlags = .ack
            if length > 0, offset + length == sendBuffer.count { flags.insert(.psh) }
            if fin { flags.insert(.fin) }
            if length > 0, !retransmitting, !timestampsEnabled, timedSequence == nil {
                timedSequence = (point, now)
            }
            emitSegment(sequence: point, flags: flags, payload: payload, now: now, emit: emit)
            if retransmitting {
                counters.goBackRetransmits += 1
                recordRetransmission(start: point, length: length, now: now)
            } else {
                recordTransmission(start: point, length: length, now: now)
            }
            let after = point + length + (fin ? 1 : 0)
            if retransmitting {
                retransmitNext = after < sendNext ? after : nil
            } else {
                sendNext = after
            }
            if fin { finSent = true }
            if sendMaximum < sendNext { sendMaximum = sendNext }
            if retransmissionDeadline == nil { retransmissionDeadline = now.advanced(byNanoseconds: retransmission.timeoutNanoseconds) }
            segments += 1
            if fin { break }
        }
        if segments > 0 { armProbe(now: now) }
        if keepaliveProbePending {
            keepaliveProbePending = false
            emitSegment(sequence: sendUnacknowledged - 1, flags: .ack, payload: UnsafeRawBufferPointer(start: nil, count: 0), now: now, emit: emit)
        }
    }

    /// RFC 8985 §7.2: PTO = 2·SRTT, plus the peer's worst delayed-ACK time when
    /// only one segment is out (it may be waiting for a second one), and never
    /// later than the retransmission timer it is meant to beat. At least 10 ms
    /// (as Linux): on a TUN the SRTT is tens of microseconds, and a floor of
    /// 2 ms fired whenever the app's kernel took longer to ACK a full window
    /// (a loaded machine, a reader slow to drain): 136 probes, 119 of them 64 KB
    /// resent for nothing (each met by a D-SACK), in 145 clean downloads.
    func armProbe(now: Instant) {
        guard let srtt = retransmission.smoothedRTTNanoseconds, sendUnacknowledged < sendMaximum,
              !congestion.inFastRecovery, retransmitNext == nil else {
            probeDeadline = nil
            return
        }
        var pto = max(srtt * 2, 10_000_000)
        if sendMaximum - sendUnacknowledged <= sendMaximumSegmentSize { pto += 40_000_000 }
        let deadline = now.advanced(byNanoseconds: pto)
        if let rto = retransmissionDeadline, rto <= deadline {
            probeDeadline = nil
        } else {
            probeDeadline = deadline
        }
    }

    /// RFC 8985 §7.3: one new segment if the windows allow, else the last one
    /// sent again, so that the peer's ACK (with SACK) reveals a tail loss
    /// without waiting for the retransmission timer.
    func emitTailLossProbe(now: Instant, emit: Emit) {
        guard sendUnacknowledged < sendMaximum else { return }
        let unsent = sendBuffer.count - (sendNext - sendBufferSequence)
        let flight = sendNext - sendUnacknowledged
        if unsent > 0, sendWindow - flight >= min(unsent, sendMaximumSegmentSize) {
            let payload = sendBuffer.contiguousReadable(at: sendNext - sendBufferSequence,
                                                        maxLength: min(unsent, sendMaximumSegmentSize))
            emitSegment(sequence: sendNext, flags: .ack, payload: payload, now: now, emit: emit)
            recordTransmission(start: sendNext, length: payload.count, now: now)
            sendNext += payload.count
            if sendMaximum < sendNext { sendMaximum = sendNext }
        } else {
            // The last segment sent: its end is the highest byte sent, not the
            // end of the buffer (bytes past it are new data the window holds back).
            let dataEnd = sendBufferSequence + sendBuffer.count
            let sentEnd = sendMaximum < dataEnd ? sendMaximum : dataEnd
            let length = min(sendMaximumSegmentSize, max(sentEnd - sendUnacknowledged, 0))
            guard length > 0 else { return }
            let start = sentEnd - length
            let payload = sendBuffer.contiguousReadable(at: start - sendBufferSequence, maxLength: length)
            emitSegment(sequence: start, flags: .ack, payload: payload, now: now, emit: emit)
            recordRetransmission(start: start, length: payload.count, now: now)
        }
        counters.tailLossProbes += 1
        timedSequence = nil
        // §7.3: the retransmission timer restarts after a probe.
        retransmissionDeadline = now.advanced(byNanoseconds: retransmission.timeoutNanoseconds)
    }

    /// Fast retransmit or a NewReno partial ACK: the first unacknowledged segment, window or not.
    func emitRetransmission(now: Instant, emit: Emit) {
        let length = min(sendBuffer.count, sendMaximumSegmentSize)
        let payload = sendBuffer.contiguousReadable(at: 0, maxLength: length)
        let fin = finSent && payload.count == sendBuffer.count
        guard payload.count > 0 || fin else { return }
        var flags: TCPFlags = .ack
        if fin { flags.insert(.fin) }
        timedSequence = nil
        counters.fastRetransmits += 1
        emitSegment(sequence: sendUnacknowledged, flags: flags, payload: payload, now: now, emit: emit)
        recordRetransmission(start: sendUnacknowledged, length: payload.count, now: now)
        if retransmissionDeadline == nil { retransmissionDeadline = now.advanced(byNanoseconds: retransmission.timeoutNanoseconds) }
    }

    /// The persist timer: when it expires, one byte goes out beyond the zero window.
    func armPersist(now: Instant, emit: Emit) {
        retransmissionDeadline = nil
        guard let deadline = persistDeadline else {
            persistDeadline = now.advanced(byNanoseconds: retransmission.timeoutNanoseconds)
            return
        }
        guard deadline <= now else { return }
        retransmission.expired() // probes back off like retransmissions (RFC 9293 §3.8.6.1)
        persistDeadline = now.advanced(byNanoseconds: retransmission.timeoutNanoseconds)
        let payload = sendBuffer.contiguousReadable(at: sendNext - sendBufferSequence, maxLength: 1)
        emitSegment(sequence: sendNext, flags: .ack, payload: payload, now: now, emit: emit)
        // The probe byte is not counted as sent: if the window opened, the ACK covers it
        // and SND.NXT catches up in `acknowledge`.
        if sendMaximum < sendNext + payload.count { sendMaximum = sendNext + payload.count }
    }

    /// Every segment in a synchronized state carries ACK, the current window,
    /// timestamps and SACK blocks; sending one satisfies any pending ACK.
    func emitSegment(sequence: SequenceNumber, flags: TCPFlags, payload: UnsafeRawBufferPointer, now: Instant, emit: Emit) {
        var options = TCPOptions()
        if timestampsEnabled { options.timestamps = TCPTimestamps(value: timestampValue(now), echoReply: timestampRecent) }
        if sackPermitted { fillSackBlocks(&options.sackBlocks, room: sackBlockRoom) }
        let header = TCPHeader(sourcePort: localPort, destinationPort: remotePort, sequenceNumber: sequence,
                               acknowledgmentNumber: receiveNext, flags: flags, windowSize: windowField(),
                               options: options)
        emit(header, payload)
        counters.segmentsSent += 1
        ackNow = false
        immediateAckRequired = false
        delayedAckDeadline = nil
        unacknowledgedSegments = 0
        lastAcknowledgmentSent = receiveNext
    }

    /// The window to advertise, scaled: the room, and never less than the
    /// right edge offered before (RFC 9293 §3.8.6.2.2), truncated to the scale
    /// unit as RFC 7323 §2.4 lets it be, so the edge recedes by less than a
    /// unit at most and a full buffer says 0. Rounding up offered a unit (8
    /// bytes at shift 3) past a full buffer: the peer sent into it instead of
    /// probing a zero window, saw the bytes trimmed as lost, and backed off
    /// its timer, so when the reader came back it ignored the window update
    /// until that timer fired (47 s after a 60 s pause).
    func windowField() -> UInt16 {
        var edge = receiveNext + receiveBuffer.window
        if edge < advertisedRightEdge { edge = advertisedRightEdge }
        let window = edge - receiveNext
        let field = min(window >> Int(receiveWindowShift), 65535)
        advertisedRightEdge = receiveNext + (field << Int(receiveWindowShift))
        return UInt16(field)
    }

    /// SACK blocks that fit beside the other options in 40 bytes: three next to timestamps, else four.
    var sackBlockRoom: Int { timestampsEnabled ? 3 : 4 }

    /// RFC 2883 §4: a duplicate segment's D-SACK block first, once; then
    /// RFC 2018 §4: the block holding the most recent segment, then the others.
    func fillSackBlocks(_ blocks: inout TCPSackBlocks, room: Int) {
        if let duplicate = duplicateReport {
            blocks.append(TCPSackBlock(left: duplicate.left, right: duplicate.right))
            duplicateReport = nil
        }
        let ranges = receiveBuffer.outOfOrder
        guard !ranges.isEmpty else {
            lastOutOfOrder = nil
            return
        }
        var first = -1
        if let recent = lastOutOfOrder {
            for i in 0 ..< ranges.rangeCount where ranges[i].contains(recent.lowerBound) { first = i }
        }
        if first >= 0, blocks.count < room {
            blocks.append(TCPSackBlock(left: receiveNext + ranges[first].lowerBound, right: receiveNext + ranges[first].upperBound))
        }
        for i in 0 ..< ranges.rangeCount where i != first && blocks.count < room {
            blocks.append(TCPSackBlock(left: receiveNext + ranges[i].lowerBound, right: receiveNext + ranges[i].upperBound))
        }
    }
}
