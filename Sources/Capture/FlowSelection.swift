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
// Kept packets are written when their verdict comes, after packets of other
// flows that arrived meanwhile: a file's timestamps may go back by that delay
// (about a round trip; Wireshark shows them as they are, `reordercap` sorts).
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
    let idleNanoseconds: UInt64
    private var entries: [CaptureFlow: Entry] = [:]
    private(set) var heldTotal = 0
    /// Packets no `capture` rule asked for, or held past a limit.
    private(set) var packetsLeftOut = 0

    init(idleSeconds: Int = 30) {
        idleNanoseconds = UInt64(idleSeconds) * 1_000_000_000
    }

    var flowCount: Int { entries.count }

    /// One packet: written at once if its flow is kept, held while it is
    /// pending, left out otherwise.
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
            if let stale = entries[flow] { forget(stale) }
            entry = Entry(lastSeen: timestamp)
            entries[flow] = entry
        }
        entry.lastSeen = timestamp
        switch entry.fate {
        case .kept:
            write(bytes, originalLength, outbound, timestamp)
        case .leftOut:
            packetsLeftOut += 1
        case .pending:
            guard entry.heldBytes + bytes.count <= Self.maximumHeldPerFlow,
                  heldTotal + bytes.count <= Self.maximumHeldTotal else {
                packetsLeftOut += 1
                return
            }
            entry.held.append(HeldPacket(bytes: Array(bytes), originalLength: originalLength, outbound: outbound, timestamp: timestamp))
            entry.heldBytes += bytes.count
            heldTotal += bytes.count
        }
    }

    /// The loop's verdict on `flow`: its held packets are written (in the
    /// order they came) or left out, and so are its later ones.
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
            for packet in entry.held {
                packet.bytes.withUnsafeBytes { write($0, packet.originalLength, packet.outbound, packet.timestamp) }
            }
        } else {
            packetsLeftOut += entry.held.count
        }
        release(entry)
    }

    /// Forgets flows without a packet for `idleNanoseconds`; what they still hold is left out.
    func sweep(now: UInt64) {
        var idle: [CaptureFlow] = []
        for (flow, entry) in entries where now > entry.lastSeen && now - entry.lastSeen >= idleNanoseconds { idle.append(flow) }
        for flow in idle {
            if let entry = entries.removeValue(forKey: flow) { forget(entry) }
        }
    }

    /// Selection ends (a reload dropped the `capture` rules): what undecided
    /// flows hold is written, oldest first, and every flow is forgotten.
    func releaseAll(write: Write) {
        var held: [HeldPacket] = []
        for entry in entries.values where entry.fate == .pending { held += entry.held }
        // Stable: a flow's packets of one batch share a timestamp and keep their order.
        let ordered = held.enumerated().sorted { ($0.element.timestamp, $0.offset) < ($1.element.timestamp, $1.offset) }.map(\.element)
        for packet in ordered {
            packet.bytes.withUnsafeBytes { write($0, packet.originalLength, packet.outbound, packet.timestamp) }
        }
        for entry in entries.values { release(entry) }
        entries.removeAll()
    }

    /// At close: flows still pending never got a verdict.
    func finish() {
        for entry in entries.values { forget(entry) }
        entries.removeAll()
    }

    private func forget(_ entry: Entry) {
        packetsLeftOut += entry.held.count
        release(entry)
    }

    private func release(_ entry: Entry) {
        heldTotal -= entry.heldBytes
        entry.held = []
        entry.heldBytes = 0
    }
}
