// CaptureRing exists so the event loop can hand every packet to the capture
// writer without waiting for it: one preallocated slab, one producer (the loop)
// and one consumer (the writer thread), no lock, no allocation. A record that
// does not fit is refused at once and the caller counts it as dropped; the
// traffic itself never waits for the disk.
//
// Layout: records back to back, each 8-byte aligned:
//   [u32 size][u32 kind][u32 captured][u32 original][u64 timestamp ns][bytes...]
// `size` covers header and padding. A record never wraps: when it does not fit
// before the end of the slab, the producer writes a `skip` record over the rest
// and starts again at offset 0.
//
// Positions (`tail` written by the producer, `head` by the consumer) only grow;
// `position & mask` is the offset. The producer publishes a record with a
// store of `tail` after writing its bytes, and the consumer frees it with a
// store of `head` after using them, so each side's acquiring load sees the
// other's bytes complete.
import Synchronization
internal import Sys

final class CaptureRing: @unchecked Sendable {
    static let headerSize = 24
    static let kindPacket: UInt32 = 0
    static let kindSkip: UInt32 = 1
    static let kindOutbound: UInt32 = 2
    /// Not a packet: a `CaptureFlow` selection (PacketRecorder.select).
    static let kindSelection: UInt32 = 3
    /// Not a packet: selection by rule turned on (one byte 1) or off (0)
    /// (PacketRecorder.setSelectsFlows, on a reload).
    static let kindSelectionMode: UInt32 = 4

    let capacity: Int
    private let mask: Int
    private let slab: UnsafeMutableRawPointer

    // The two positions live on separate cache lines so the producer's stores
    // do not keep invalidating the line the consumer reads, and back.
    private let tail = Atomic<Int>(0)
    private let padding1: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
    private let head = Atomic<Int>(0)
    private let padding2: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
    /// The producer's own copy of `tail`, read without an atomic. Only the producer touches it.
    private var producerTail = 0
    /// The consumer's own copy of `head`. Only the consumer touches it.
    private var consumerHead = 0

    /// `capacity` is rounded up to a power of two. The slab is written once
    /// here so that no page fault lands on the packet path later.
    init(capacity requested: Int) {
        var capacity = 4096
        while capacity < requested { capacity <<= 1 }
        self.capacity = capacity
        mask = capacity - 1
        slab = AlignedMemory.allocate(byteCount: capacity, alignment: 64) // huge pages from 2 MiB
        slab.initializeMemory(as: UInt8.self, repeating: 0, count: capacity)
    }

    deinit { slab.deallocate() }

    /// The slab bytes a packet of `captured` bytes occupies.
    static func recordSize(captured: Int) -> Int {
        (headerSize + captured + 7) & ~7
    }

    // MARK: producer

    /// Where `reserve` put the record it handed out: the slab offset of its
    /// header, and the skip record that must precede it (0 for none).
    private var reservedOffset = 0
    private var reservedSkip = 0

    /// Room for a record of up to `maximum` bytes: the producer writes the
    /// bytes there itself (a TUN read, a packet built in place) and publishes
    /// them with `commit`, or reserves again and so abandons this space.
    /// Nil, having written nothing, when there is no room. Never blocks.
    @inline(__always)
    func reserve(maximum: Int) -> UnsafeMutableRawBufferPointer? {
        let size = Self.recordSize(captured: maximum)
        let start = producerTail
        let free = capacity - (start - head.load(ordering: .acquiring))
        let offset = start & mask
        let untilEnd = capacity - offset
        let skip = untilEnd < size ? untilEnd : 0
        guard size + skip <= free else { return nil }
        reservedSkip = skip
        reservedOffset = skip > 0 ? 0 : offset
        return UnsafeMutableRawBufferPointer(start: slab + reservedOffset + Self.headerSize, count: maximum)
    }

    /// Publishes the reserved record: `stored` bytes written in it, of which
    /// the first `captured` go to the file. `stored` sets the record's size,
    /// so bytes the producer still reads after publishing (a packet it goes
    /// on processing) are not overwritten by its next records.
    @inline(__always)
    func commit(stored: Int, captured: Int, originalLength: Int, outbound: Bool, timestamp: UInt64) {
        commit(stored: stored, captured: captured, originalLength: originalLength,
               kind: outbound ? Self.kindOutbound : Self.kindPacket, timestamp: timestamp)
    }

    @inline(__always)
    func commit(stored: Int, captured: Int, originalLength: Int, kind: UInt32, timestamp: UInt64) {
        let size = Self.recordSize(captured: stored)
        let offset = reservedOffset
        if reservedSkip > 0 {
            let skipOffset = producerTail & mask
            slab.storeBytes(of: UInt32(truncatingIfNeeded: reservedSkip), toByteOffset: skipOffset, as: UInt32.self)
            slab.storeBytes(of: Self.kindSkip, toByteOffset: skipOffset + 4, as: UInt32.self)
        }
        slab.storeBytes(of: UInt32(truncatingIfNeeded: size), toByteOffset: offset, as: UInt32.self)
        slab.storeBytes(of: kind, toByteOffset: offset + 4, as: UInt32.self)
        slab.storeBytes(of: UInt32(truncatingIfNeeded: captured), toByteOffset: offset + 8, as: UInt32.self)
        slab.storeBytes(of: UInt32(truncatingIfNeeded: originalLength), toByteOffset: offset + 12, as: UInt32.self)
        slab.storeBytes(of: timestamp, toByteOffset: offset + 16, as: UInt64.self)
        producerTail += reservedSkip + size
        reservedSkip = 0
        // Sequentially consistent, not just releasing: PacketRecorder's wake-up
        // check (load of `writerSleeping` right after) must not be reordered
        // before this store, or a sleeping writer could miss the record.
        tail.store(producerTail, ordering: .sequentiallyConsistent)
    }

    /// Copies `bytes` (already cut to snaplen) into the ring. Returns false,
    /// having written nothing, when there is no room. Never blocks.
    @inline(__always)
    func push(_ bytes: UnsafeRawBufferPointer, originalLength: Int, outbound: Bool, timestamp: UInt64) -> Bool {
        guard let space = reserve(maximum: bytes.count) else { return false }
        if let base = bytes.baseAddress { space.baseAddress!.copyMemory(from: base, byteCount: bytes.count) }
        commit(stored: bytes.count, captured: bytes.count, originalLength: originalLength, outbound: outbound, timestamp: timestamp)
        return true
    }

    // MARK: consumer

    /// One record as the consumer sees it; `bytes` point into the slab and are
    /// valid only inside `drain`'s closure.
    struct Record {
        var bytes: UnsafeRawBufferPointer
        var originalLength: Int
        var outbound: Bool
        var timestamp: UInt64
        var kind = Kind.packet

        enum Kind {
            case packet
            /// `kindSelection`: a flow's fate.
            case selection
            /// `kindSelectionMode`: selection by rule on or off.
            case selectionMode
        }
    }

    /// Whether a record is waiting. Sequentially consistent for the writer's
    /// sleep check (the mirror of `push`'s store).
    var isEmpty: Bool {
        tail.load(ordering: .sequentiallyConsistent) == consumerHead
    }

    /// Hands every record published so far to `body`, in order, freeing each
    /// one's space as soon as `body` returns. Returns how many there were.
    @discardableResult
    func drain(_ body: (Record) -> Void) -> Int {
        let end = tail.load(ordering: .acquiring)
        var count = 0
        while consumerHead < end {
            let offset = consumerHead & mask
            let size = Int(slab.load(fromByteOffset: offset, as: UInt32.self))
            let kind = slab.load(fromByteOffset: offset + 4, as: UInt32.self)
            if kind != Self.kindSkip {
                let captured = Int(slab.load(fromByteOffset: offset + 8, as: UInt32.self))
                let record = Record(
                    bytes: UnsafeRawBufferPointer(start: slab + offset + Self.headerSize, count: captured),
                    originalLength: Int(slab.load(fromByteOffset: offset + 12, as: UInt32.self)),
                    outbound: kind == Self.kindOutbound,
                    timestamp: slab.load(fromByteOffset: offset + 16, as: UInt64.self),
                    kind: kind == Self.kindSelection ? .selection : kind == Self.kindSelectionMode ? .selectionMode : .packet
                )
                body(record)
                count += 1
            }
            consumerHead += size
            head.store(consumerHead, ordering: .releasing)
        }
        return count
    }
}
