// PacketRecorder is what the engine holds for `--pcap`: record() is called on
// the event loop's thread for every packet crossing the TUN, and must cost a
// copy and nothing else (reserve/commit not even that: the loop reads or
// builds the packet in the ring). The packet is copied (cut to snaplen) into
// a CaptureRing; a writer thread filters it with libpcap's BPF, writes it
// through a DirectPcapFile (O_DIRECT), flushes when idle and rotates files. When the writer falls behind
// and the ring is full, the packet is left out of the capture and counted;
// the loop never waits, never locks, never allocates.
//
// Waking the writer: when the ring is empty it first naps (1 ms at a time,
// 10 ms in all) without telling anyone, so a busy loop's packets are written
// in batches. Then it announces its sleep (`writerSleeping`), re-checks the
// ring and blocks on an eventfd. record() publishes the packet first and looks
// at the flag second (both sequentially consistent), so either the writer
// sees the packet or record() sees the flag and signals. The eventfd write is
// therefore one syscall per idle period, not per packet.
internal import Sys
import Synchronization

public final class PacketRecorder {
    public struct Statistics: Sendable, Equatable, CustomStringConvertible {
        /// Packets handed to record() while open.
        public var packetsRecorded = 0
        /// Packets written to a capture file.
        public var packetsCaptured = 0
        /// Packets the BPF filter did not keep.
        public var packetsFilteredOut = 0
        /// Packets left out because the ring was full (the writer was behind).
        public var packetsDropped = 0
        /// Packets the writer could not write after a write error.
        public var packetsUnwritten = 0
        /// Times a file was closed for size and a new one started.
        public var filesRotated = 0
        /// `perFlowDirectory`: files opened, one per flow (more if a flow's file was closed and it went on).
        public var flowFilesOpened = 0
        /// `selectsFlows`: packets of flows no `capture` rule decided (or held past the limits).
        public var packetsNotSelected = 0
        /// Times record() had to wake a sleeping writer (one eventfd write each).
        public var writerWakeUps = 0
        /// The first write error, if any; the writer stops writing after it.
        public var failure: String?

        public init() {}

        public var description: String {
            var text = "\(packetsRecorded) recorded, \(packetsCaptured) captured, \(packetsFilteredOut) filtered out, "
                + "\(packetsDropped) dropped, \(filesRotated) files rotated"
            if flowFilesOpened > 0 { text += ", \(flowFilesOpened) flow files" }
            if packetsNotSelected > 0 { text += ", \(packetsNotSelected) left out of flows no capture rule chose" }
            if packetsUnwritten > 0 { text += ", \(packetsUnwritten) unwritten" }
            if let failure { text += "; \(failure)" }
            return text
        }
    }

    /// Test seams. `writerWillDrain` runs on the writer thread before each pass
    /// over the ring; a test makes the writer slow by blocking in it.
    public struct Hooks: Sendable {
        public var writerWillDrain: (@Sendable () -> Void)?
        public init(writerWillDrain: (@Sendable () -> Void)? = nil) {
            self.writerWillDrain = writerWillDrain
        }
    }

    /// The default ring: 16 MiB holds about 11,000 full-size 1500-byte packets,
    /// a few milliseconds of a fast transfer, enough to ride out a slow flush.
    public static let defaultRingCapacity = 16 << 20

    /// The capture file, nil when only per-flow files are written.
    public let path: String?
    /// One file per flow in this folder (`--pcap-per-flow`), or nil.
    public let perFlowDirectory: String?
    public let snaplen: Int
    /// Only the flows `select` keeps are written (the profile's `capture` rules).
    public private(set) var selectsFlows: Bool
    private let shared: Shared
    private var writerThread: WorkerThread?
    private var isClosed = false
    // Counted by record() alone, on the loop's thread, so plain fields: the
    // packet path makes no atomic read-modify-write and shares no counter's
    // cache line with the writer.
    private var packetsRecorded = 0
    private var packetsDropped = 0
    private var writerWakeUps = 0
    /// Whether `reserve` lends ring space (see there).
    private let lendsSpace: Bool

    /// Opens `path` (the first file) and compiles `filter` at once, so a bad
    /// path or expression fails here, not on the writer thread.
    /// - Parameters:
    ///   - snaplen: bytes kept of each packet (the file header says so too).
    ///   - filter: a tcpdump expression (`tcp port 80`), compiled for raw IP.
    ///   - rotateSize: cut files before they would exceed this many bytes.
    ///   - rotateCount: keep at most this many files (`path`, `path.1`, ...); nil keeps all.
    ///   - ringCapacity: bytes of the ring between the loop and the writer.
    ///   - perFlowDirectory: also write one file per flow there (FlowPcapFiles).
    ///   - selectsFlows: write only the flows `select` keeps (FlowSelection).
    public init(
        path: String?,
        perFlowDirectory: String? = nil,
        snaplen: Int = 65535,
        filter: String? = nil,
        rotateSize: Int? = nil,
        rotateCount: Int? = nil,
        ringCapacity: Int = PacketRecorder.defaultRingCapacity,
        selectsFlows: Bool = false,
        hooks: Hooks = Hooks()
    ) throws(CaptureError) {
        guard snaplen > 0, snaplen <= 262_144 else {
            throw .invalidOption("snaplen \(snaplen) is outside 1...262144")
        }
        guard ringCapacity >= CaptureRing.recordSize(captured: snaplen) else {
            throw .invalidOption("ring of \(ringCapacity) bytes cannot hold one packet of snaplen \(snaplen)")
        }
        let compiled = try filter.map { (expression) throws(CaptureError) in
            try PcapFilter(expression, linkType: .raw, snaplen: snaplen)
        }
        guard path != nil || perFlowDirectory != nil else {
            throw .invalidOption("a capture needs a file or a folder for per-flow files")
        }
        let files = try path.map { (path) throws(CaptureError) in
            try PcapRotation(path: path, snaplen: snaplen, rotateSize: rotateSize, rotateCount: rotateCount)
        }
        let flows = try perFlowDirectory.map { (directory) throws(CaptureError) in
            try FlowPcapFiles(directory: directory, snaplen: snaplen)
        }
        let wake: EventFD
        do { wake = try EventFD() } catch { throw .system("eventfd", error) }
        self.path = path
        self.perFlowDirectory = perFlowDirectory
        self.snaplen = snaplen
        self.selectsFlows = selectsFlows
        // A whole packet's space for a snaplen that keeps 2 KiB or more, and
        // only in a ring of many packets: a lent record is still being read
        // while the next ones are written after it.
        lendsSpace = snaplen >= 2048 && ringCapacity >= 16 * CaptureRing.recordSize(captured: 65536 + 256)
        shared = Shared(ring: CaptureRing(capacity: ringCapacity), wake: wake)
        let writer = Writer(shared: shared, files: files, flows: flows, filter: compiled,
                            selecting: selectsFlows, hooks: hooks)
        do {
            // The traffic comes first: under load the writer falls behind and
            // the capture drops (counted), rather than taking the loop's core.
            writerThread = try WorkerThread {
                WorkerThread.idleCurrentThread()
                writer.run()
            }
        } catch {
            throw .system("pthread_create", error)
        }
    }

    deinit { close() }

    /// Copies `packet` for the capture. Called on the event loop's thread only
    /// (one producer). Never blocks: when the ring is full the packet is
    /// counted in `packetsDropped` and left out of the capture.
    public func record(_ packet: UnsafeRawBufferPointer, outbound: Bool) {
        record(packet, outbound: outbound, timestamp: WallClock.now())
    }

    /// The same with the caller's timestamp (nanoseconds since the epoch), for
    /// a loop that reads the clock once per batch of packets.
    public func record(_ packet: UnsafeRawBufferPointer, outbound: Bool, timestamp: UInt64) {
        guard !isClosed else { return }
        packetsRecorded += 1
        let kept = packet.count <= snaplen ? packet : UnsafeRawBufferPointer(rebasing: packet[0 ..< snaplen])
        guard shared.ring.push(kept, originalLength: packet.count, outbound: outbound, timestamp: timestamp) else {
            packetsDropped += 1
            return
        }
        wakeWriterIfAsleep()
    }

    /// With `selectsFlows`: whether the capture keeps `flow`, said once when
    /// the flow is decided. Its packets so far wait on the writer thread for
    /// this (FlowSelection). On the loop's thread, like record().
    public func select(_ flow: CaptureFlow, keep: Bool) {
        guard !isClosed, selectsFlows else { return }
        let size = CaptureFlow.selectionSize
        guard let space = shared.ring.reserve(maximum: size) else {
            packetsDropped += 1
            return
        }
        flow.encodeSelection(keep: keep, into: space)
        shared.ring.commit(stored: size, captured: size, originalLength: size, kind: CaptureRing.kindSelection,
                           timestamp: WallClock.now())
        wakeWriterIfAsleep()
    }

    /// A reload turned the profile's `capture` rules on or off: from the next
    /// packet on, the capture keeps only the flows `select` keeps, or every
    /// flow again (what was held for a verdict is then written). On the loop's
    /// thread; false when the ring had no room for the change (nothing changed).
    @discardableResult
    public func setSelectsFlows(_ on: Bool) -> Bool {
        guard !isClosed else { return false }
        guard on != selectsFlows else { return true }
        guard let space = shared.ring.reserve(maximum: 1) else {
            packetsDropped += 1
            return false
        }
        space[0] = on ? 1 : 0
        shared.ring.commit(stored: 1, captured: 1, originalLength: 1, kind: CaptureRing.kindSelectionMode, timestamp: WallClock.now())
        selectsFlows = on
        wakeWriterIfAsleep()
        return true
    }

    @inline(__always)
    private func wakeWriterIfAsleep() {
        if shared.writerSleeping.load(ordering: .sequentiallyConsistent),
           shared.writerSleeping.exchange(false, ordering: .sequentiallyConsistent) {
            _ = try? shared.wake.signal()
            writerWakeUps += 1
        }
    }

    /// Zero-copy recording, for the loop's own packet buffers: space in the
    /// ring for a packet of up to `maximum` bytes, which the caller reads from
    /// the TUN or builds there, then publishes with `commit`. Nil when the
    /// ring has no room, and when copying is cheaper (a snaplen that keeps
    /// only headers) or the ring too small to lend a whole packet's space
    /// safely: the caller then uses its own buffer and `record`.
    public func reserve(maximum: Int) -> UnsafeMutableRawBufferPointer? {
        guard !isClosed, lendsSpace else { return nil }
        return shared.ring.reserve(maximum: maximum)
    }

    /// Publishes the packet of `length` bytes the caller put in the space
    /// `reserve` returned (cut to snaplen in the file). The bytes stay valid
    /// and untouched while the caller goes on using them, until it reserves
    /// again after the ring has wrapped (megabytes later).
    public func commit(length: Int, outbound: Bool, timestamp: UInt64) {
        packetsRecorded += 1
        shared.ring.commit(stored: length, captured: min(length, snaplen), originalLength: length,
                           outbound: outbound, timestamp: timestamp)
        wakeWriterIfAsleep()
    }

    /// The counters so far; exact once `close()` has returned. Read it on the
    /// loop's thread, like record().
    public var statistics: Statistics {
        var statistics = shared.writerStatistics()
        statistics.packetsRecorded = packetsRecorded
        statistics.packetsDropped = packetsDropped
        statistics.writerWakeUps = writerWakeUps
        return statistics
    }

    /// Writes everything still in the ring, flushes and closes the file, and
    /// joins the writer thread. Later record() calls are ignored. Idempotent.
    @discardableResult
    public func close() -> Statistics {
        if !isClosed {
            isClosed = true
            shared.stopping.store(true, ordering: .sequentiallyConsistent)
            _ = try? shared.wake.signal()
            writerThread.take()?.join()
        }
        return statistics
    }
}

extension PacketRecorder: CustomStringConvertible {
    public var description: String {
        "capture \([path, perFlowDirectory.map { "\($0)/ (per flow)" }].compactMap { $0 }.joined(separator: " and ")), snaplen \(snaplen): \(statistics)"
    }
}

extension PacketRecorder {
    /// What the loop thread and the writer thread share. The writer's
    /// counters have one writing thread, so plain loads and stores suffice;
    /// they sit a cache line away from the flags record() reads per packet,
    /// so the writer's per-packet stores do not evict them.
    final class Shared: Sendable {
        let ring: CaptureRing
        let wake: EventFD
        let writerSleeping = Atomic<Bool>(false)
        let stopping = Atomic<Bool>(false)
        private let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
        let packetsCaptured = Atomic<Int>(0)
        let packetsFilteredOut = Atomic<Int>(0)
        let packetsUnwritten = Atomic<Int>(0)
        let filesRotated = Atomic<Int>(0)
        let flowFilesOpened = Atomic<Int>(0)
        let packetsNotSelected = Atomic<Int>(0)
        let failure = Mutex<String?>(nil)

        init(ring: CaptureRing, wake: consuming EventFD) {
            self.ring = ring
            self.wake = wake
        }

        /// The writer's half of the statistics.
        func writerStatistics() -> Statistics {
            var statistics = Statistics()
            statistics.packetsCaptured = packetsCaptured.load(ordering: .acquiring)
            statistics.packetsFilteredOut = packetsFilteredOut.load(ordering: .acquiring)
            statistics.packetsUnwritten = packetsUnwritten.load(ordering: .acquiring)
            statistics.filesRotated = filesRotated.load(ordering: .acquiring)
            statistics.flowFilesOpened = flowFilesOpened.load(ordering: .acquiring)
            statistics.packetsNotSelected = packetsNotSelected.load(ordering: .acquiring)
            statistics.failure = failure.withLock { $0 }
            return statistics
        }
    }

    /// The writer thread's state. Created on the caller's thread, then used
    /// only by the writer thread: hence unchecked.
    final class Writer: @unchecked Sendable {
        let shared: Shared
        let files: PcapRotation?
        let flows: FlowPcapFiles?
        let filter: PcapFilter?
        /// Holds undecided flows' packets while `selecting` (the profile has `capture` rules).
        let selection = FlowSelection()
        var selecting: Bool
        let hooks: Hooks
        private var failed = false
        private var unflushed = false
        private var lastFlush = ContinuousClock.now
        /// Naps of 1 ms an idle writer takes before it sleeps until woken.
        static let lingerNaps = 10
        static let flushInterval = Duration.milliseconds(100)
        /// How long an idle writer sleeps before looking again. record() wakes
        /// it; this bound is only a safety net, so it can be long.
        static let idleMilliseconds: Int32 = 1000

        init(shared: Shared, files: PcapRotation?, flows: FlowPcapFiles?, filter: PcapFilter?, selecting: Bool, hooks: Hooks) {
            self.flows = flows
            self.selecting = selecting
            self.shared = shared
            self.files = files
            self.filter = filter
            self.hooks = hooks
        }

        func run() {
            var idleNaps = 0
            while true {
                hooks.writerWillDrain?()
                if shared.ring.drain(write) > 0 {
                    idleNaps = 0
                    flushIfDue()
                    continue
                }
                if shared.stopping.load(ordering: .sequentiallyConsistent) {
                    // close() stores `stopping` after its last record(), so
                    // this pass sees every packet there will ever be.
                    shared.ring.drain(write)
                    break
                }
                flushIfDue()
                // A writer that announced its sleep at every empty ring would
                // make record() pay an eventfd write for nearly every packet
                // (the writer empties the ring faster than the loop fills it).
                // Napping a few milliseconds first, unannounced, lets packets
                // pile up and be written in batches; only a writer idle for
                // `lingerNaps` naps asks to be woken.
                if idleNaps < Self.lingerNaps {
                    idleNaps += 1
                    _ = try? shared.wake.wait(timeoutMilliseconds: 1)
                    _ = try? shared.wake.drain() // a stale signal must not turn naps into spins
                    continue
                }
                flush()
                shared.writerSleeping.store(true, ordering: .sequentiallyConsistent)
                if !shared.ring.isEmpty || shared.stopping.load(ordering: .sequentiallyConsistent) {
                    shared.writerSleeping.store(false, ordering: .sequentiallyConsistent)
                    continue
                }
                _ = try? shared.wake.wait(timeoutMilliseconds: Self.idleMilliseconds)
                _ = try? shared.wake.drain()
                shared.writerSleeping.store(false, ordering: .sequentiallyConsistent)
                idleNaps = 0
            }
            selection.finish(write: writePacket)
            shared.packetsNotSelected.store(selection.packetsLeftOut, ordering: .releasing)
            do { try files?.close() } catch { fail(error) }
            do { try flows?.close() } catch { fail(error) }
        }

        private func write(_ record: CaptureRing.Record) {
            switch record.kind {
            case .packet:
                break
            case .selection:
                guard selecting, let (flow, keep) = CaptureFlow.decodeSelection(record.bytes) else { return }
                selection.select(flow, keep: keep, timestamp: record.timestamp, write: writePacket)
                shared.packetsNotSelected.store(selection.packetsLeftOut, ordering: .releasing)
                return
            case .selectionMode:
                let on = record.bytes.first == 1
                // Off: every flow is kept now, those still undecided included.
                if selecting, !on { selection.releaseAll(write: writePacket) }
                selecting = on
                return
            }
            if let filter, !filter.matches(record.bytes, originalLength: record.originalLength) {
                bump(shared.packetsFilteredOut)
                return
            }
            if selecting {
                selection.offer(record.bytes, originalLength: record.originalLength, outbound: record.outbound,
                                timestamp: record.timestamp, write: writePacket)
                shared.packetsNotSelected.store(selection.packetsLeftOut, ordering: .releasing)
                return
            }
            writePacket(record.bytes, originalLength: record.originalLength, outbound: record.outbound, timestamp: record.timestamp)
        }

        private func writePacket(_ bytes: UnsafeRawBufferPointer, originalLength: Int, outbound: Bool, timestamp: UInt64) {
            guard !failed else {
                bump(shared.packetsUnwritten)
                return
            }
            let rotatedBefore = files?.filesRotated ?? 0
            let flowFilesBefore = flows?.filesOpened ?? 0
            do {
                try files?.write(bytes, originalLength: originalLength, timestamp: timestamp)
                try flows?.write(bytes, originalLength: originalLength, outbound: outbound, timestamp: timestamp)
            } catch {
                fail(error)
                bump(shared.packetsUnwritten)
                return
            }
            if let files, files.filesRotated != rotatedBefore {
                shared.filesRotated.store(files.filesRotated, ordering: .releasing)
            }
            if let flows, flows.filesOpened != flowFilesBefore {
                shared.flowFilesOpened.store(flows.filesOpened, ordering: .releasing)
            }
            unflushed = true
            bump(shared.packetsCaptured)
        }

        /// Flushes when something was written and the last flush is older
        /// than `flushInterval`: a trickle of packets reaches the disk within
        /// that time even when the writer never sleeps.
        private func flushIfDue() {
            guard unflushed, ContinuousClock.now - lastFlush >= Self.flushInterval else { return }
            flush()
        }

        private func flush() {
            lastFlush = ContinuousClock.now
            if selecting {
                selection.sweep(now: WallClock.now(), write: writePacket)
                shared.packetsNotSelected.store(selection.packetsLeftOut, ordering: .releasing)
            }
            guard unflushed, !failed else { return }
            unflushed = false
            do { try files?.flush() } catch { fail(error) }
            do { try flows?.flush(now: WallClock.now()) } catch { fail(error) }
        }

        private func fail(_ error: CaptureError) {
            guard !failed else { return }
            failed = true
            shared.failure.withLock { $0 = error.description }
        }

        private func bump(_ counter: borrowing Atomic<Int>) {
            counter.store(counter.load(ordering: .relaxed) + 1, ordering: .releasing)
        }
    }
}
