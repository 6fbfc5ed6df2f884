public import Wire

/// Segment arrival: RFC 9293 §3.10.7, in the order the RFC checks things,
/// with the RFC 5961 protections and RFC 7323 PAWS.
extension TCPConnection {
    /// Processes one segment from the peer. `payload` is borrowed for the
    /// duration of the call; the in-order part is copied into the receive buffer.
    public func receive(_ segment: TCPHeader, payload: UnsafeRawBufferPointer, now: Instant) {
        switch state {
        case .closed, .listen:
            // RFC 9293 §3.10.7.1: everything but a RST gets a RST.
            if let reply = TCPConnection.resetReply(to: segment, payloadLength: payload.count) {
                resetToSend = (reply.sequenceNumber, reply.flags.contains(.ack) ? reply.acknowledgmentNumber : nil)
            }
            return
        case .synSent:
            receiveInSynSent(segment, payload: payload, now: now)
            return
        case .synReceived, .established, .finWait1, .finWait2, .closeWait, .closing, .lastAck, .timeWait:
            break
        }
        let flags = segment.flags
        let sequence = segment.sequenceNumber
        let length = payload.count + (flags.contains(.syn) ? 1 : 0) + (flags.contains(.fin) ? 1 : 0)
        let silence = now - lastActivity
        lastActivity = now
        keepalivesUnanswered = 0
        if let idle = keepaliveIdle, state.isSynchronized { keepaliveDeadline = now + idle }

        // A retransmitted SYN in SYN-RECEIVED means our SYN-ACK was lost: send it again now.
        if state == .synReceived, flags.contains(.syn), !flags.contains(.ack), sequence == initialReceiveSequence {
            sendSynAck = true
            return
        }

        // RFC 7323 §5.3 R1: PAWS. A segment older than TS.Recent is a duplicate.
        if timestampsEnabled, !flags.contains(.rst), let ts = segment.options.timestamps,
           Int32(bitPattern: ts.value &- timestampRecent) < 0 {
            ackNow = true
            return
        }

        // First: is the sequence number acceptable? (RFC 9293 §3.10.7.4, the four cases.)
        guard isAcceptable(sequence: sequence, length: length) else {
            // RFC 1122 §4.2.3.6: a keepalive probe carries SEG.SEQ = RCV.NXT − 1
            // and no data or one garbage octet. We answer it (below) as the
            // peer's peer would; the engine hears of it, so that it can check
            // the real peer behind us as often (`peerKeepaliveIdle`).
            let keepaliveProbe = !flags.contains(.rst) && !flags.contains(.syn) && !flags.contains(.fin)
                && payload.count <= 1 && sequence == receiveNext - 1 && state.isSynchronized
            if keepaliveProbe {
                peerKeepaliveIdle = silence
                events.insert(.peerKeepalive)
            } else if !flags.contains(.rst) {
                noteDuplicate(sequence: sequence, length: payload.count)
            }
            if !flags.contains(.rst) {
                // RFC 9293: reply with an ACK. In TIME-WAIT a retransmitted FIN also restarts the timer.
                if state == .timeWait, flags.contains(.fin) { timeWaitDeadline = now.advanced(byNanoseconds: timeWaitNanoseconds) }
                if length > 0 {
                    ackNow = true
                    immediateAckRequired = true
                } else if now - lastUnacceptableAck >= Self.unacceptableAckInterval {
                    // An empty unacceptable segment (a keepalive, or a peer whose state went
                    // astray) is answered at most twice a second: two such peers would
                    // otherwise ACK each other's ACKs forever.
                    lastUnacceptableAck = now
                    ackNow = true
                }
            }
            return
        }

        // RFC 7323 §4.3: remember the timestamp to echo.
        if timestampsEnabled, let ts = segment.options.timestamps,
           Int32(bitPattern: ts.value &- timestampRecent) >= 0, sequence <= lastAcknowledgmentSent {
            timestampRecent = ts.value
        }

        // Second: RST (RFC 5961 §3.2: only an exact match resets; in-window gets a challenge ACK).
        if flags.contains(.rst) {
            if sequence == receiveNext {
                switch state {
                case .timeWait:
                    // RFC 1337: TIME-WAIT ignores RSTs rather than be assassinated.
                    return
                case .synReceived, .established, .finWait1, .finWait2, .closeWait, .closing, .lastAck:
                    events.insert(.reset)
                    enterClosed()
                case .closed, .listen, .synSent:
                    return
                }
            } else {
                challengeAck(now: now)
            }
            return
        }

        // Fourth: SYN in a synchronized state (RFC 5961 §4.2: challenge ACK, never a reset).
        if flags.contains(.syn) {
            if state == .synReceived {
                // RFC 9293 §3.10.7.4: a passively opened connection goes back to LISTEN; for us, it ends.
                events.insert(.reset)
                enterClosed()
            } else {
                challengeAck(now: now)
            }
            return
        }

        // Fifth: ACK. Without it the segment is dropped.
        guard flags.contains(.ack) else { return }
        let acknowledgment = segment.acknowledgmentNumber
        if state == .synReceived {
            // RFC 9293 §3.10.7.4 fifth, SYN-RECEIVED: SND.UNA < SEG.ACK =< SND.NXT completes the handshake.
            guard sendUnacknowledged < acknowledgment, acknowledgment <= sendMaximum else {
                resetToSend = (acknowledgment, nil)
                return
            }
            state = finQueued ? .finWait1 : .established
            events.insert(.connected)
            if let idle = keepaliveIdle { keepaliveDeadline = now + idle }
            updateSendWindow(segment)
        }
        guard processAcknowledgment(segment, payloadLength: payload.count, now: now) else { return }

        // Sixth: URG is not supported; urgent data is delivered in line (docs/tcp.md).

        // Seventh: segment text.
        if !payload.isEmpty {
            switch state {
            case .established, .finWait1, .finWait2:
                receiveText(sequence: sequence, payload: payload, now: now)
            case .closeWait, .closing, .lastAck, .timeWait, .closed, .listen, .synSent, .synReceived:
                // After the peer's FIN no new text can be valid; it was trimmed as unacceptable or is ignored.
                break
            }
        }

        // Eighth: FIN, processed once every byte before it has arrived.
        if flags.contains(.fin) {
            let finSequence = sequence + payload.count
            if finSequence == receiveNext {
                processFin(now: now)
            } else if receiveNext < finSequence {
                pendingFinSequence = finSequence
                ackNow = true
            } else {
                ackNow = true
            }
        }
    }

    /// RFC 9293 §3.10.7.4, first check: the four cases of segment length and window.
    func isAcceptable(sequence: SequenceNumber, length: Int) -> Bool {
        let window = max(advertisedRightEdge - receiveNext, receiveBuffer.window, 0)
        switch (length == 0, window == 0) {
        case (true, true):
            return sequence == receiveNext
        case (true, false):
            return sequence.isIn(receiveNext, size: window)
        case (false, true):
            return false
        case (false, false):
            return sequence.isIn(receiveNext, size: window) || (sequence + (length - 1)).isIn(receiveNext, size: window)
        }
    }

    /// The fifth check for synchronized states. Returns false when the segment
    /// must be dropped (RFC 5961 §5.2 acceptable ACK range).
    func processAcknowledgment(_ segment: TCPHeader, payloadLength: Int, now: Instant) -> Bool {
        let acknowledgment = segment.acknowledgmentNumber
        // RFC 5961 §5.2: acceptable when SND.UNA − MAX.SND.WND =< SEG.ACK =< SND.NXT (we use the
        // highest sequence sent, since a timeout pulls SND.NXT back).
        if sendMaximum < acknowledgment || acknowledgment < sendUnacknowledged - max(maximumSendWindow, 1) {
            ackNow = true
            return false
        }
        let previousWindow = sendWindow
        if sackPermitted, !segment.options.sackBlocks.isEmpty { recordSack(segment.options.sackBlocks, acknowledgment: acknowledgment, now: now) }
        if sendUnacknowledged < acknowledgment {
            acknowledge(upTo: acknowledgment, segment: segment, now: now)
        } else if acknowledgment == sendUnacknowledged, payloadLength == 0,
                  !segment.flags.contains(.syn), !segment.flags.contains(.fin),
                  Int(segment.windowSize) << Int(sendWindowShift) == previousWindow, previousWindow > 0,
                  sendMaximum != sendUnacknowledged {
            // RFC 5681 §2: a duplicate ACK; the third begins fast recovery.
            let wasRecovering = congestion.inFastRecovery
            let action = congestion.onDuplicateAck(flightSize: sendMaximum - sendUnacknowledged, highestSent: sendMaximum)
            if !wasRecovering, congestion.inFastRecovery {
                counters.fastRecoveries += 1
                beginUndoEpisode()
            }
            if action == .retransmitFirstUnacknowledged { beginRecoveryRetransmission() }
        }
        // With SACK, RACK decides what is lost (RFC 8985), once the peer has
        // reported a hole; it also covers RFC 6675's DupThresh rule.
        if sackPermitted {
            if scoreboard.rangeCount > 0 { detectLosses(now: now) } else { rackDeadline = nil }
        }
        // RFC 9293 §3.10.7.4: update the send window when the segment is newer.
        if sendWindowUpdateSequence < segment.sequenceNumber
            || (sendWindowUpdateSequence == segment.sequenceNumber && sendWindowUpdateAcknowledgment <= acknowledgment) {
            updateSendWindow(segment)
        }

        let finAcknowledged = finSent && sendBuffer.isEmpty && sendUnacknowledged == sendBufferSequence + 1
        switch state {
        case .finWait1:
            if finAcknowledged { state = .finWait2 }
        case .closing:
            if finAcknowledged { enterTimeWait(now: now) }
        case .lastAck:
            if finAcknowledged {
                enterClosed()
                return false
            }
        case .established, .finWait2, .closeWait, .timeWait, .synReceived, .closed, .listen, .synSent:
            break
        }
        return true
    }

    func updateSendWindow(_ segment: TCPHeader) {
        sendWindow = Int(segment.windowSize) << Int(sendWindowShift)
        maximumSendWindow = max(maximumSendWindow, sendWindow)
        sendWindowUpdateSequence = segment.sequenceNumber
        sendWindowUpdateAcknowledgment = segment.acknowledgmentNumber
        if sendWindow > 0 { persistDeadline = nil }
    }

    /// New data (or our SYN or FIN) was acknowledged.
    func acknowledge(upTo acknowledgment: SequenceNumber, segment: TCPHeader, now: Instant) {
        let acked = acknowledgment - sendUnacknowledged
        var remaining = acked
        let synAcknowledged = sendUnacknowledged == initialSendSequence
        if synAcknowledged { remaining -= 1 } // our SYN
        let dataAcked = max(0, min(remaining, sendBuffer.count))
        scoreboard.advance(by: acked)
        sentSegments.removeAcknowledged(upTo: acknowledgment) { rack.delivered($0, now: now.nanoseconds) }
        sendBuffer.discard(dataAcked)
        sendBuffer.restartIfEmpty() // the next response goes out in one segment
        sendBufferSequence += dataAcked
        let flightSize = sendMaximum - sendUnacknowledged
        sendUnacknowledged = acknowledgment
        if sendNext < acknowledgment { sendNext = acknowledgment }
        if let point = retransmitNext, point < acknowledgment {
            retransmitNext = acknowledgment < sendNext ? acknowledgment : nil
        }
        if dataAcked > 0, !finQueued { events.insert(.writable) }

        // RTT: from the echoed timestamp (RFC 7323 §4.1), else from one timed segment (Karn's rule).
        var roundTrip: Int64?
        if timestampsEnabled, let ts = segment.options.timestamps, ts.echoReply != 0 {
            let elapsed = timestampValue(now) &- ts.echoReply
            if elapsed < 3_600_000 {
                roundTrip = Int64(elapsed) * 1_000_000
                retransmission.sample(nanoseconds: roundTrip!)
            }
        } else if let timed = timedSequence, timed.sequence < acknowledgment {
            roundTrip = now.nanoseconds &- timed.sentAt.nanoseconds
            retransmission.sample(nanoseconds: roundTrip!)
            timedSequence = nil
        } else {
            retransmission.acknowledged()
        }
        consecutiveTimeouts = 0
        // The SYN's acknowledgment does not grow the window (RFC 5681 §3.1 counts data).
        let ackedForCongestion = acked - (synAcknowledged ? 1 : 0)
        let wasRecovering = congestion.inFastRecovery
        let windowLimited = windowUsage.limits(congestionWindow: congestion.congestionWindow,
                                               inSlowStart: congestion.congestionWindow < congestion.slowStartThreshold,
                                               segmentSize: sendMaximumSegmentSize)
        windowUsage.acknowledged(upTo: acknowledgment, highestSent: sendMaximum, flight: sendMaximum - acknowledgment)
        if ackedForCongestion > 0,
           congestion.onNewAck(acked: ackedForCongestion, highestAcked: acknowledgment, flightSize: flightSize, now: now,
                               smoothedRoundTripNanoseconds: retransmission.smoothedRTTNanoseconds,
                               highestSent: sendMaximum, roundTripSampleNanoseconds: roundTrip, windowLimited: windowLimited)
            == .retransmitFirstUnacknowledged {
            retransmitOne = true
        }
        if wasRecovering, !congestion.inFastRecovery {
            rack.recoveryEnded()
            retransmissionOwed = false
        }
        // RFC 6298 §5.2 and §5.3: stop the timer when everything is acknowledged, else restart it.
        retransmissionDeadline = sendUnacknowledged == sendMaximum ? nil : now.advanced(byNanoseconds: retransmission.timeoutNanoseconds)
        armProbe(now: now)
    }

    /// In-window text from the peer (the seventh check).
    func receiveText(sequence: SequenceNumber, payload: UnsafeRawBufferPointer, now: Instant) {
        let offset = sequence - receiveNext
        if offset < 0 {
            noteDuplicate(sequence: sequence, length: payload.count)
        } else if offset > 0, sackPermitted, payload.count > 0 {
            // Out-of-order data that is held already: a D-SACK block inside
            // the SACK block that holds it (RFC 2883 §4, its second case).
            let ranges = receiveBuffer.outOfOrder
            for i in 0 ..< ranges.rangeCount where ranges[i].lowerBound <= offset && offset + payload.count <= ranges[i].upperBound {
                duplicateReport = (sequence, sequence + payload.count)
            }
        }
        switch receiveBuffer.insert(offset: offset, payload) {
        case let .accepted(advanced, _):
            if advanced > 0 {
                receiveNext += advanced
                events.insert(.readable)
            }
            if offset > 0 {
                // Out of order: ACK at once so the sender's fast retransmit starts (RFC 5681 §4.2).
                lastOutOfOrder = offset ..< offset + payload.count
                ackNow = true
                immediateAckRequired = true
            } else if advanced != payload.count || !receiveBuffer.outOfOrder.isEmpty || offset < 0 {
                // A duplicate, a trimmed segment, or one that filled (part of) a gap: ACK at once.
                ackNow = true
                immediateAckRequired = true
            } else {
                // In order: ACK every second full segment, else after a short delay or when drained.
                unacknowledgedSegments += 1
                if unacknowledgedSegments >= 2 {
                    ackNow = true
                } else if delayedAckDeadline == nil {
                    delayedAckDeadline = now.advanced(byNanoseconds: delayedAckNanoseconds)
                }
            }
        case .refused:
            ackNow = true
            immediateAckRequired = true
        }
        if let fin = pendingFinSequence, fin == receiveNext {
            pendingFinSequence = nil
            processFin(now: now)
        }
    }

    /// The part of a segment's data below RCV.NXT arrived before: the next
    /// ACK reports it as a D-SACK block (RFC 2883 §4), if SACK was agreed.
    func noteDuplicate(sequence: SequenceNumber, length: Int) {
        guard sackPermitted, length > 0, sequence < receiveNext, state.isSynchronized else { return }
        let end = sequence + length < receiveNext ? sequence + length : receiveNext
        // Duplicates that touch the one not yet reported go out as one block
        // (RFC 2883 §4 lets a D-SACK block cover contiguous duplicates): the
        // sender counts a block in segments, one per spurious retransmission.
        if let pending = duplicateReport, sequence <= pending.right, pending.left <= end {
            duplicateReport = (sequence < pending.left ? sequence : pending.left, pending.right < end ? end : pending.right)
        } else {
            duplicateReport = (sequence, end)
        }
    }

    /// The peer's FIN, now in order (the eighth check).
    func processFin(now: Instant) {
        if finReceived {
            ackNow = true
            return
        }
        finReceived = true
        receiveNext += 1
        ackNow = true
        events.insert(.readClosed)
        switch state {
        case .synReceived, .established:
            state = .closeWait
        case .finWait1:
            let finAcknowledged = finSent && sendBuffer.isEmpty && sendUnacknowledged == sendBufferSequence + 1
            if finAcknowledged { enterTimeWait(now: now) } else { state = .closing }
        case .finWait2:
            enterTimeWait(now: now)
        case .closeWait, .closing, .lastAck, .timeWait, .closed, .listen, .synSent:
            break
        }
    }

    func enterTimeWait(now: Instant) {
        state = .timeWait
        retransmissionDeadline = nil
        persistDeadline = nil
        keepaliveDeadline = nil
        delayedAckDeadline = nil
        timeWaitDeadline = now.advanced(byNanoseconds: timeWaitNanoseconds)
        events.insert(.closed)
    }

    /// Starts retransmitting in recovery: with SACK the segments declared lost
    /// go out in `emitLostRetransmissions`; without it, NewReno resends SND.UNA.
    func beginRecoveryRetransmission() {
        if sackPermitted {
            // Duplicate ACKs without SACK blocks from a peer that agreed to
            // SACK: RFC 6675's IsLost(SND.UNA), by DupThresh.
            if !sentSegments.isEmpty, sentSegments[0].start == sendUnacknowledged { sentSegments.markLost(0) }
            retransmissionOwed = true
        } else {
            retransmitOne = true
        }
    }

    /// RFC 5961 §7: at most ten challenge ACKs a second per connection.
    func challengeAck(now: Instant) {
        if now - challengeAcks.windowStart >= .seconds(1) { challengeAcks = (now, 0) }
        guard challengeAcks.count < 10 else { return }
        challengeAcks.count += 1
        ackNow = true
    }

    /// RFC 9293 §3.10.7.3: a segment arriving in SYN-SENT.
    func receiveInSynSent(_ segment: TCPHeader, payload: UnsafeRawBufferPointer, now: Instant) {
        let flags = segment.flags
        var ackAcceptable = false
        if flags.contains(.ack) {
            let ack = segment.acknowledgmentNumber
            if ack <= initialSendSequence || sendMaximum < ack {
                if !flags.contains(.rst) { resetToSend = (ack, nil) }
                return
            }
            ackAcceptable = true
        }
        if flags.contains(.rst) {
            if ackAcceptable {
                events.insert(.reset)
                enterClosed()
            }
            return
        }
        guard flags.contains(.syn) else { return }
        lastActivity = now
        initialReceiveSequence = segment.sequenceNumber
        receiveNext = segment.sequenceNumber + 1
        advertisedRightEdge = receiveNext // our SYN advertised relative to nothing yet
        negotiate(segment.options)
        if timestampsEnabled, let ts = segment.options.timestamps { timestampRecent = ts.value }
        sendWindow = Int(segment.windowSize) // unscaled in a SYN
        maximumSendWindow = sendWindow
        sendWindowUpdateSequence = segment.sequenceNumber
        sendWindowUpdateAcknowledgment = segment.acknowledgmentNumber
        if ackAcceptable {
            acknowledge(upTo: segment.acknowledgmentNumber, segment: segment, now: now)
            state = finQueued ? .finWait1 : .established
            events.insert(.connected)
            if let idle = keepaliveIdle { keepaliveDeadline = now + idle }
            ackNow = true
            if !payload.isEmpty { receiveText(sequence: receiveNext, payload: payload, now: now) }
        } else {
            // Simultaneous open.
            state = .synReceived
            sendSynAck = true
        }
    }

    /// RFC 9293 §3.10.7.1: the RST answering `segment` where no connection exists; nil for a RST.
    public static func resetReply(to segment: TCPHeader, payloadLength: Int) -> TCPHeader? {
        guard !segment.flags.contains(.rst) else { return nil }
        if segment.flags.contains(.ack) {
            return TCPHeader(sourcePort: segment.destinationPort, destinationPort: segment.sourcePort,
                             sequenceNumber: segment.acknowledgmentNumber, flags: .rst, windowSize: 0)
        }
        let length = payloadLength + (segment.flags.contains(.syn) ? 1 : 0) + (segment.flags.contains(.fin) ? 1 : 0)
        return TCPHeader(sourcePort: segment.destinationPort, destinationPort: segment.sourcePort,
                         sequenceNumber: SequenceNumber(0), acknowledgmentNumber: segment.sequenceNumber + length,
                         flags: [.rst, .ack], windowSize: 0)
    }

    /// Our TSval: a millisecond clock plus the connection's offset (RFC 7323 §5.4).
    func timestampValue(_ now: Instant) -> UInt32 {
        UInt32(truncatingIfNeeded: now.nanoseconds / 1_000_000) &+ timestampOffset
    }
}
