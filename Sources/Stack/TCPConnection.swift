public import Wire

/// One TCP connection: the state machine of RFC 9293 with the extensions in
/// docs/tcp.md. Pure: segments and the current time go in (`receive`,
/// `output`), segments come out through the `emit` closure, and the engine
/// moves bytes with `read`, `write`, `shutdownWrite` and `abort`.
///
/// Segment arrival lives in TCPConnection+Receive.swift, segment generation
/// and timers in TCPConnection+Output.swift.
public final class TCPConnection: CustomStringConvertible {
    public let configuration: TCPConfiguration
    /// The configuration's durations that deadlines use on every segment, in
    /// nanoseconds once (Duration's arithmetic is 128-bit).
    let idleTimeoutNanoseconds: Int64?
    let delayedAckNanoseconds: Int64
    let timeWaitNanoseconds: Int64
    public internal(set) var state: TCPState
    public let localPort: UInt16
    public let remotePort: UInt16

    // MARK: Send sequence variables (RFC 9293 §3.3.1)
    public internal(set) var initialSendSequence: SequenceNumber          // ISS
    public internal(set) var sendUnacknowledged: SequenceNumber           // SND.UNA
    public internal(set) var sendNext: SequenceNumber                     // SND.NXT
    public internal(set) var sendWindow = 0                               // SND.WND, scaled
    var sendWindowUpdateSequence = SequenceNumber(0)                      // SND.WL1
    var sendWindowUpdateAcknowledgment = SequenceNumber(0)                // SND.WL2
    /// The largest window the peer ever offered (RFC 5961 §5.2 MAX.SND.WND).
    var maximumSendWindow = 0
    /// The highest sequence number sent so far: SND.NXT can move back on a
    /// timeout (go-back-N) while this stays.
    var sendMaximum: SequenceNumber

    // MARK: Receive sequence variables
    public internal(set) var initialReceiveSequence = SequenceNumber(0)   // IRS
    public internal(set) var receiveNext = SequenceNumber(0)              // RCV.NXT
    /// The right edge of the window we last advertised; never moved left (RFC 9293 §3.8.6.2.2).
    var advertisedRightEdge = SequenceNumber(0)

    // MARK: Buffers
    /// Bytes from `sendBufferSequence` on: unacknowledged, then unsent.
    /// Both rings are replaced by empty one-byte ones in TIME-WAIT (`releaseBuffersInTimeWait`).
    private(set) var sendBuffer: ByteRing
    /// The sequence number of the send buffer's first byte.
    var sendBufferSequence: SequenceNumber
    private(set) var receiveBuffer: Reassembler
    /// A FIN that arrived ahead of missing data: its sequence number.
    var pendingFinSequence: SequenceNumber?
    /// The peer's FIN has been processed.
    public internal(set) var finReceived = false
    /// The engine closed its write side: a FIN follows the buffered data.
    public internal(set) var finQueued = false
    var finSent = false

    // MARK: Negotiated options
    /// MSS for our segments' payload, options already subtracted.
    public internal(set) var sendMaximumSegmentSize: Int
    var sendWindowShift: UInt8 = 0
    var receiveWindowShift: UInt8 = 0
    var sackPermitted = false
    var timestampsEnabled = false
    var timestampRecent: UInt32 = 0                                       // TS.Recent (RFC 7323 §4.3)
    var lastAcknowledgmentSent = SequenceNumber(0)                        // Last.ACK.sent
    /// Added to the clock in our TSval, so the value tells nothing about uptime.
    let timestampOffset: UInt32

    // MARK: Timers and recovery
    var retransmission = RetransmissionTimer()
    var congestion: CongestionControl
    var retransmissionDeadline: Instant?
    var delayedAckDeadline: Instant?
    /// The deadline of this connection's live entry in its table's timer queue.
    var queuedDeadline: Instant?
    /// Its table may reset it to make room for a new connection (`TCPFlowTable.letGiveWay`).
    public internal(set) var givesWayWhenFull = false
    var persistDeadline: Instant?
    /// RFC 8985 §7: the tail loss probe timeout, armed while data is outstanding.
    var probeDeadline: Instant?
    var timeWaitDeadline: Instant?
    var keepaliveDeadline: Instant?
    /// Keepalive's rhythm: the configuration's, or what `startKeepalive` set.
    var keepaliveIdle: Duration?
    var keepaliveInterval: Duration
    var keepaliveProbes: Int
    var keepalivesUnanswered = 0
    var lastActivity: Instant
    /// The silence before the peer's last keepalive probe (`TCPEvents.peerKeepalive`).
    public internal(set) var peerKeepaliveIdle: Duration?
    var consecutiveTimeouts = 0
    /// A sequence number whose ACK gives an RTT sample when timestamps are off (Karn's rule applies).
    var timedSequence: (sequence: SequenceNumber, sentAt: Instant)?
    /// The largest segment seen from the peer, for ACK-every-second-segment.
    var unacknowledgedSegments = 0

    // MARK: What the next `output` must send
    var ackNow = false
    /// An ACK is owed now (bytes drained, a FIN, a window that opened): the
    /// engine's next flush sends it, whatever else it might have waited for.
    public var acknowledgmentDue: Bool { ackNow }
    /// The pending ACK must not wait for the end of the engine's batch: each
    /// out-of-order or duplicate segment owes the sender its own duplicate ACK
    /// (RFC 5681 §4.2), which is how the sender counts losses.
    public internal(set) var immediateAckRequired = false
    var sendSynAck = false
    var sendSyn = false
    var retransmitOne = false
    /// After a retransmission timeout: the next sequence number to resend, walking to SND.NXT.
    var retransmitNext: SequenceNumber?
    /// RFC 6675's scoreboard: the ranges the peer reported in SACK blocks, relative to SND.UNA.
    var scoreboard = Assembler()
    /// With SACK: each data segment in flight, for RACK (TCPConnection+LossDetection.swift).
    var sentSegments = SentSegments()
    var rack = RecentAcknowledgment()
    /// RFC 8985 §6.3: the reordering timer, when a segment may be lost but its window has not passed.
    var rackDeadline: Instant?
    /// Recovery has begun and its first retransmission goes whatever the window (RFC 6675 §5 step 4.3).
    var retransmissionOwed = false
    /// With SACK, the evidence that the last congestion event was spurious
    /// (TCPConnection+Undo.swift): SND.UNA when it began, nil once undone.
    var undoMarker: SequenceNumber?
    /// Segments retransmitted since `undoMarker` that no D-SACK has reported yet.
    var undoRetransmissions = 0
    var lastUnacceptableAck = Instant(nanoseconds: .min / 2)
    static let unacceptableAckInterval: Duration = .milliseconds(500)
    var keepaliveProbePending = false
    var probePending = false
    var resetToSend: (sequence: SequenceNumber, acknowledgment: SequenceNumber?)?
    /// Challenge ACKs sent in the current second (RFC 5961 §7 rate limit).
    var challengeAcks = (windowStart: Instant.zero, count: 0)
    /// The most recent out-of-order range received, for the first SACK block (RFC 2018 §4).
    var lastOutOfOrder: Range<Int>?
    /// Data that arrived twice, below RCV.NXT: reported once as a D-SACK
    /// block (RFC 2883), so the sender can tell a spurious retransmission
    /// and undo its window cut (Linux does).
    var duplicateReport: (left: SequenceNumber, right: SequenceNumber)?

    public internal(set) var events: TCPEvents = []
    /// Which timer gave up, once one did (the `.timedOut` event's cause).
    public internal(set) var timeout: TCPTimeout?

    /// What recovery cost this connection, for statistics and tuning.
    public struct Counters: Sendable, Equatable {
        public var segmentsSent = 0
        public var retransmissionTimeouts = 0
        public var fastRetransmits = 0
        public var sackRetransmits = 0
        public var goBackRetransmits = 0
        public var tailLossProbes = 0
        /// Fast recoveries entered (with the timeouts, the congestion events).
        public var fastRecoveries = 0
        /// Congestion events undone: every retransmission they caused proved spurious.
        public var congestionEventsUndone = 0
    }
    public internal(set) var counters = Counters()
    /// Whether the congestion window limited what was sent lately: only then do ACKs grow it.
    var windowUsage = CongestionWindowUsage()

    // MARK: Creation

    /// A passive open: `syn` arrived for a flow that did not exist. The caller
    /// has decided to accept it; the SYN-ACK leaves with the next `output`.
    /// RFC 9293 §3.10.7.2, LISTEN state, third check.
    public convenience init(acceptingSyn syn: TCPHeader, initialSequence: SequenceNumber,
                            configuration: TCPConfiguration = TCPConfiguration(), now: Instant, timestampOffset: UInt32 = 0) {
        self.init(state: .synReceived, localPort: syn.destinationPort, remotePort: syn.sourcePort,
                  initialSequence: initialSequence, configuration: configuration, now: now, timestampOffset: timestampOffset)
        initialReceiveSequence = syn.sequenceNumber
        receiveNext = syn.sequenceNumber + 1
        negotiate(syn.options)
        sendWindow = Int(syn.windowSize) // RFC 7323 §2.2: never scaled in a SYN
        maximumSendWindow = sendWindow
        sendWindowUpdateSequence = syn.sequenceNumber
        sendWindowUpdateAcknowledgment = initialSequence
        if timestampsEnabled, let ts = syn.options.timestamps { timestampRecent = ts.value }
        sendSynAck = true
    }

    /// An active open: the SYN leaves with the next `output` (RFC 9293 §3.10.1).
    public convenience init(connectingFrom localPort: UInt16, to remotePort: UInt16, initialSequence: SequenceNumber,
                            configuration: TCPConfiguration = TCPConfiguration(), now: Instant, timestampOffset: UInt32 = 0) {
        self.init(state: .synSent, localPort: localPort, remotePort: remotePort,
                  initialSequence: initialSequence, configuration: configuration, now: now, timestampOffset: timestampOffset)
        sendSyn = true
    }

    /// What both opens share: the send variables at ISS, the two rings (the
    /// flow's whole memory budget, allocated here once), the controllers.
    init(state: TCPState, localPort: UInt16, remotePort: UInt16, initialSequence: SequenceNumber,
         configuration: TCPConfiguration, now: Instant, timestampOffset: UInt32) {
        self.configuration = configuration
        keepaliveIdle = configuration.keepaliveIdle
        keepaliveInterval = configuration.keepaliveInterval
        keepaliveProbes = configuration.keepaliveProbes
        idleTimeoutNanoseconds = configuration.idleTimeout?.nanoseconds
        delayedAckNanoseconds = configuration.delayedAckTimeout.nanoseconds
        timeWaitNanoseconds = configuration.timeWaitDuration.nanoseconds
        self.timestampOffset = timestampOffset
        self.localPort = localPort
        self.remotePort = remotePort
        self.state = state
        initialSendSequence = initialSequence
        sendUnacknowledged = initialSequence
        sendNext = initialSequence
        sendMaximum = initialSequence
        sendBufferSequence = initialSequence + 1
        sendBuffer = ByteRing(capacity: configuration.sendBufferSize)
        receiveBuffer = Reassembler(capacity: configuration.receiveBufferSize)
        sendMaximumSegmentSize = configuration.maximumSegmentSize
        congestion = CongestionControl(maximumSegmentSize: configuration.maximumSegmentSize, algorithm: configuration.congestionControl,
                                       hyStart: configuration.hyStart)
        lastActivity = now
    }

    /// Applies the options of the peer's SYN (RFC 9293 §3.7.1, RFC 7323 §§2.2 and 3.2, RFC 2018 §2).
    func negotiate(_ options: TCPOptions) {
        // Without an MSS option the peer accepts 536 bytes (RFC 9293 §3.7.1).
        let peerMSS = options.maximumSegmentSize.map(Int.init) ?? 536
        timestampsEnabled = configuration.timestamps && options.timestamps != nil
        sackPermitted = configuration.selectiveAcknowledgments && options.sackPermitted
        if configuration.windowScaling, let shift = options.windowScale {
            sendWindowShift = min(shift, 14) // RFC 7323 §2.3: larger values are treated as 14
            receiveWindowShift = configuration.windowScaleShift
        } else {
            sendWindowShift = 0
            receiveWindowShift = 0
        }
        // RFC 9293 §3.7.1: the MSS excludes options, so subtract what every segment carries.
        sendMaximumSegmentSize = max(min(peerMSS, configuration.maximumSegmentSize) - (timestampsEnabled ? 12 : 0), 64)
        congestion = CongestionControl(maximumSegmentSize: sendMaximumSegmentSize, algorithm: configuration.congestionControl,
                                       hyStart: configuration.hyStart)
        congestion.selectiveAcknowledgments = sackPermitted
    }

    // MARK: The engine's side

    /// In-order bytes waiting to be read.
    public var readableCount: Int { receiveBuffer.readable }

    /// Room in the send buffer.
    public var writableCount: Int {
        guard !finQueued else { return 0 }
        switch state {
        case .synSent, .synReceived, .established, .closeWait: return sendBuffer.free
        case .closed, .listen, .finWait1, .finWait2, .closing, .lastAck, .timeWait: return 0
        }
    }

    /// Bytes handed to `write` that the peer has not yet acknowledged.
    public var unacknowledgedCount: Int { sendBuffer.count }

    /// True once the peer's FIN was processed and every byte before it has been read.
    public var isReadClosed: Bool { finReceived && receiveBuffer.readable == 0 }

    /// Copies and consumes in-order bytes. Draining is what opens the window,
    /// so the window update goes out with the next `output` (no delayed ACK:
    /// that is how Sluice avoids the Nagle/delayed-ACK stall of
    /// ../shared/spec/bench-anchors.md).
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let n = receiveBuffer.read(into: buffer)
        if n > 0 { noteDrained() }
        return n
    }

    /// Zero-copy reading: the contiguous readable bytes, then `consume`.
    public func peekReadable(maxLength: Int = .max) -> UnsafeRawBufferPointer {
        receiveBuffer.ring.contiguousReadable(at: 0, maxLength: maxLength)
    }

    public func consume(_ n: Int) {
        receiveBuffer.consume(n)
        if n > 0 { noteDrained() }
    }

    func noteDrained() {
        // Acknowledge promptly if data is waiting for its ACK, or if the window
        // opened enough to matter (receiver SWS avoidance, RFC 9293 §3.8.6.2.2).
        let opened = (receiveNext + receiveBuffer.window) - advertisedRightEdge
        if delayedAckDeadline != nil || opened >= min(configuration.receiveBufferSize / 2, sendMaximumSegmentSize) {
            ackNow = true
        }
    }

    /// Appends bytes to send; returns how many fit.
    public func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard writableCount > 0 else { return 0 }
        return sendBuffer.append(bytes)
    }

    /// Zero-copy writing: `fill` gets free send-buffer space (possibly less than
    /// all of it, at the ring's wrap) and returns how many bytes it stored there,
    /// typically by reading an upstream socket straight into it.
    public func write<E: Error>(filling fill: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E) -> Int {
        guard writableCount > 0 else { return 0 }
        let space = sendBuffer.contiguousFree()
        let n = try fill(space)
        precondition(n >= 0 && n <= space.count, "filled more than was offered")
        sendBuffer.commit(n)
        return n
    }

    /// Closes our direction: a FIN follows the buffered data (RFC 9293 §3.10.4).
    public func shutdownWrite() {
        guard !finQueued else { return }
        switch state {
        case .synReceived:
            // The FIN waits for the handshake: FIN-WAIT-1 begins when the SYN-ACK is acknowledged.
            finQueued = true
        case .established:
            finQueued = true
            state = .finWait1
        case .closeWait:
            finQueued = true
            state = .lastAck
        case .synSent:
            if sendBuffer.count > 0 {
                // Bytes wait for the handshake (a forwarded client that wrote
                // and closed at once): the FIN follows them, FIN-WAIT-1 begins
                // when the SYN-ACK comes.
                finQueued = true
            } else {
                // Nothing was synchronized and nothing waits: just forget the connection.
                state = .closed
                events.insert(.closed)
            }
        case .closed, .listen, .finWait1, .finWait2, .closing, .lastAck, .timeWait:
            return
        }
    }

    /// Resets the connection: one RST now, then CLOSED (RFC 9293 §3.10.5).
    public func abort() {
        switch state {
        case .synReceived, .established, .finWait1, .finWait2, .closeWait:
            resetToSend = (sendNext, nil)
        case .closed, .listen, .synSent, .closing, .lastAck, .timeWait:
            break
        }
        enterClosed()
    }

    /// Forgets the connection without a word to the peer (REJECT-DROP after
    /// the handshake): its retransmissions then meet the table's RST for unknown flows.
    public func abortSilently() {
        enterClosed()
    }

    /// TIME-WAIT only re-ACKs a retransmitted FIN, so once the engine has
    /// drained the last data the rings (the flow's whole memory budget, zeroed
    /// and so resident: 512 KiB by default) go back at once rather than after
    /// the 2 s of the wait. At a high rate of short connections most flows are
    /// in TIME-WAIT; holding their rings made each new connection fault in
    /// fresh pages (and `sluice exec` grew past 1 GB in seconds). The window we
    /// advertise does not shrink: its right edge never moves left.
    /// Returns whether the rings were released.
    @discardableResult
    public func releaseBuffersInTimeWait() -> Bool {
        guard state == .timeWait, sendBuffer.capacity > 1, sendBuffer.isEmpty, receiveBuffer.readable == 0 else { return false }
        sendBuffer = ByteRing(capacity: 1)
        receiveBuffer = Reassembler(capacity: 1)
        sentSegments.release()
        return true
    }

    /// Returns and clears the events since the last call.
    public func takeEvents() -> TCPEvents {
        defer { events = [] }
        return events
    }

    func enterClosed() {
        state = .closed
        retransmissionDeadline = nil
        delayedAckDeadline = nil
        persistDeadline = nil
        probeDeadline = nil
        rackDeadline = nil
        keepaliveDeadline = nil
        timeWaitDeadline = nil
        events.insert(.closed)
    }

    /// The earliest time `output` has work to do without new input.
    /// Probes the peer from now on, however the connection was configured:
    /// after `idle` of silence, then every `interval`; `probes` unanswered
    /// reset it (`.timedOut`). The engine probes an app that closed its side
    /// while its request waits: a closed socket's orphan stops answering once
    /// its kernel drops it, a half-closed one answers for as long as it lives.
    public func startKeepalive(idle: Duration, interval: Duration, probes: Int, now: Instant) {
        keepaliveIdle = idle
        keepaliveInterval = interval
        keepaliveProbes = probes
        guard state.isSynchronized, state != .timeWait, state != .closed else { return }
        keepaliveDeadline = lastActivity + idle > now ? lastActivity + idle : now
    }

    public var nextDeadline: Instant? {
        func earlier(_ a: Instant?, _ b: Instant?) -> Instant? {
            guard let a else { return b }
            guard let b else { return a }
            return min(a, b)
        }
        return earlier(earlier(earlier(retransmissionDeadline, delayedAckDeadline), earlier(persistDeadline, timeWaitDeadline)),
                       earlier(earlier(keepaliveDeadline, idleDeadline), earlier(probeDeadline, rackDeadline)))
    }

    var idleDeadline: Instant? {
        guard state != .closed, state != .timeWait, let idle = idleTimeoutNanoseconds else { return nil }
        return lastActivity.advanced(byNanoseconds: idle)
    }

    public var description: String {
        "\(state) snd.una=\(sendUnacknowledged) snd.nxt=\(sendNext) snd.wnd=\(sendWindow) rcv.nxt=\(receiveNext) rcv.wnd=\(receiveBuffer.window) cwnd=\(congestion.congestionWindow)"
    }
}
