// FlowSelection exists for the profile's `capture` rules: when rules name the
// flows to capture, the writer thread holds each flow's packets until the
// loop says what became of it (a selection record, sent when the flow is
// decided), then writes them or leaves them out. A flow is decided after its
// first packets have crossed the TUN (a TCP flow after its handshake and,
// for rules on names, its first bytes), so they must wait somewhere; the
// writer thread is that place, since the loop may not allocate per packet.
//
// Held packets are copies (the ring's space is freed as the writer goes), at
// most `maximumHeldPerFlow` bytes a flow and `maximumHeldTotal` in all; past
// either, a packet is left out. A flow whose fate never comes (a DNS query
// Sluice answers itself, a fragment without ports) is forgotten after
// `idleNanoseconds` without a packet, its packets left out. A TCP SYN from
// the app starts a flow anew, so a reused port does not inherit a verdict.
//
// Order. A kept flow's held packets are older than packets of other flows
// that crossed the TUN while it waited; writing them when the verdict comes
// would make the file's timestamps step back. So while an undecided flow
// holds packets, kept packets younger than its oldest (the `barrier`) wait
// in a queue sorted by timestamp, and go out once no undecided flow holds
// anything older. An undecided flow stops holding the others back after
// `orderPatienceNanoseconds` (a verdict later than that is rare: the loop's
// sniffing waits 300 ms at most, and flows no rule decides never get one);
// its packets, should it be kept after all, then come out of order. The
// queue is bounded by `maximumQueued` bytes: past it the oldest go out.
internal import Wire

final class FlowSelection {
    enum Fate { case pending, kept, leftOut }

    struct HeldPacket {
        var bytes: [UInt8]
        var originalLength: Int
        var outbound: Bool
        var timestamp: UInt64
    }

    final class Entry {
        var fate = Fate.pending
        var held: [HeldPacket] = []
        var heldBytes = 0
        var lastSeen: UInt64
        init(lastSeen: UInt64) { self.lastSeen = lastSeen }
    }

    typealias Write = (_ bytes: UnsafeRawBufferPointer, _ originalLength: Int, _ outbound: Bool, _ timestamp: UInt64) -> Void

    static let maximumHeldPerFlow = 256 << 10
    static let maximumHeldTotal = 16 << 20
    static let maximumQueued = 32 << 20
    let idleNanoseconds: UInt64
    let orderPatienceNanoseconds: UInt64
    private var entries: [CaptureFlow: Entry] = [:]
    private(set) var heldTotal = 0
    /// Packets no `capture` rule asked for, or held past a limit.
    private(set) var packetsLeftOut = 0
    /// Undecided flows that hold packets and still hold the others back: the
    /// timestamp of each one's oldest packet.
    private var blocking: [CaptureFlow: UInt64] = [:]
    /// The oldest of `blocking`: no kept packet younger than it is written yet.
    private var barrier: UInt64?
    /// Kept packets waiting for the barrier, oldest first (ties in arrival
    /// order), from `queueHead` on: written packets are dropped from the
    /// front in batches, not one shift of the whole queue per verdict.
    private var queue: [HeldPacket] = []
    private var queueHead = 0
    private(set) var queuedBytes = 0

    init(idleSeconds: Int = 30, orderPatienceMilliseconds: Int = 1000) {
        idleNanoseconds = UInt64(idleSeconds) * 1_000_000_000
        orderPatienceNanoseconds = UInt64(orderPatienceMilliseconds) * 1_000_000
    }

    var flowCount: Int { entries.count }

    /// One packet: written (or queued behind older undecided packets) if its
    /// flow is kept, held while it is pending, left out otherwise.
    func offer(_ bytes: UnsafeRawBufferPointer, originalLength: Int, outbound: Bool, timestamp: UInt64, write: Write) {
        guard let (flow, flags) = FlowPcapFiles.key(of: bytes, outbound: outbound) else {
            packetsLeftOut += 1
            return
        }
        let syn: UInt8 = 0x02, ack: UInt8 = 0x10
        let opening = flow.transport == 6 && !outbound && flags & (syn | ack) == syn
        let entry: Entry
        if let existing = entries[flow], !opening {
            entry = existing
        } else {
            if let stale = entries[flow] { forget(stale, flow: flow, write: write) }
            entry = Entry(lastSeen: timestamp)
            entries[flow] = entry
        }
        entry.lastSeen = timestamp
        switch entry.fate {
        case .kept:
            if queueHead == queue.count, barrier.map({ timestamp < $0 }) ?? true {
                write(bytes, originalLength, outbound, timestamp)
            } else {
                enqueue(HeldPacket(bytes: Array(bytes), originalLength: originalLength, outbound: outbound, timestamp: timestamp))
                drain(write: write)
            }
        case .leftOut:
            packetsLeftOut += 1
        case .pending:
            guard entry.heldBytes + bytes.count <= Self.maximumHeldPerFlow,
                  heldTotal + bytes.count <= Self.maximumHeldTotal else {
                packetsLeftOut += 1
                return
            }
            if entry.held.isEmpty {
                blocking[flow] = timestamp
                barrier = min(barrier ?? timestamp, timestamp)
            }
            entry.held.append(HeldPacket(bytes: Array(bytes), originalLength: originalLength, outbound: outbound, timestamp: timestamp))
            entry.heldBytes += bytes.count
            heldTotal += bytes.count
        }
    }

    /// The loop's verdict on `flow`: its held packets are written (in the
    /// order they came, and in time order with other kept flows') or left
    /// out, and so are its later ones.
    func select(_ flow: CaptureFlow, keep: Bool, timestamp: UInt64, write: Write) {
        let entry: Entry
        if let existing = entries[flow] {
            entry = existing
        } else {
            entry = Entry(lastSeen: timestamp)
            entries[flow] = entry
        }
        entry.fate = keep ? .kept : .leftOut
        if keep {
            for packet in entry.held { enqueue(packet) }
        } else {
            packetsLeftOut += entry.held.count
        }
        release(entry, flow: flow)
        drain(write: write)
    }

    /// Forgets flows without a packet for `idleNanoseconds`, what they still
    /// hold left out; flows undecided for `orderPatienceNanoseconds` stop
    /// holding the others back.
    func sweep(now: UInt64, write: Write) {
        var idle: [CaptureFlow] = []
        for (flow, entry) in entries where now > entry.lastSeen && now - entry.lastSeen >= idleNanoseconds { idle.append(flow) }
        for flow in idle {
            if let entry = entries.removeValue(forKey: flow) { forget(entry, flow: flow, write: write) }
        }
        var late: [CaptureFlow] = []
        for (flow, oldest) in blocking where now > oldest && now - oldest >= orderPatienceNanoseconds { late.append(flow) }
        for flow in late { unblock(flow) }
        drain(write: write)
    }

    /// Selection ends (a reload dropped the `capture` rules): what undecided
    /// flows hold is written in time order with the queue, and every flow is forgotten.
    func releaseAll(write: Write) {
        for entry in entries.values where entry.fate == .pending {
            for packet in entry.held { enqueue(packet) }
        }
        for (flow, entry) in entries { release(entry, flow: flow) }
        entries.removeAll()
        drain(write: write)
    }

    /// At close: flows still pending never got a verdict; the queue goes out.
    func finish(write: Write) {
        for (flow, entry) in entries { forget(entry, flow: flow, write: write) }
        entries.removeAll()
        drain(write: write)
    }

    private func forget(_ entry: Entry, flow: CaptureFlow, write: Write) {
        packetsLeftOut += entry.held.count
        release(entry, flow: flow)
        drain(write: write)
    }

    private func release(_ entry: Entry, flow: CaptureFlow) {
        heldTotal -= entry.heldBytes
        entry.held = []
        entry.heldBytes = 0
        unblock(flow)
    }

    private func unblock(_ flow: CaptureFlow) {
        guard let oldest = blocking.removeValue(forKey: flow), oldest == barrier else { return }
        barrier = blocking.values.min()
    }

    /// Inserted after every queued packet as old or older: the queue stays in
    /// time order and a flow's packets keep theirs.
    private func enqueue(_ packet: HeldPacket) {
        var low = queueHead, high = queue.count
        while low < high {
            let middle = (low + high) / 2
            if queue[middle].timestamp <= packet.timestamp { low = middle + 1 } else { high = middle }
        }
        queue.insert(packet, at: low)
        queuedBytes += packet.bytes.count
    }

    /// Writes the queued packets older than the barrier (all of them without
    /// one), and the oldest beyond that while the queue is over its bound.
    private func drain(write: Write) {
        while queueHead < queue.count,
              barrier.map({ queue[queueHead].timestamp < $0 }) ?? true || queuedBytes > Self.maximumQueued {
            let packet = queue[queueHead]
            packet.bytes.withUnsafeBytes { write($0, packet.originalLength, packet.outbound, packet.timestamp) }
            queuedBytes -= packet.bytes.count
            queue[queueHead].bytes = [] // its copy is freed now, not at the next compaction
            queueHead += 1
        }
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        } else if queueHead >= 1024, queueHead * 2 >= queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
    }
}
