/// A byte ring with a fixed budget: the storage behind a TCP connection's send
/// buffer and receive (reassembly) buffer.
///
/// `capacity` is the budget: the most it ever holds, and what the receive
/// window is computed from. The storage starts small (`initialAllocation`)
/// and doubles, up to the budget, only when the bytes held need it. Most flows
/// carry small messages and never grow; a bulk flow reaches its budget within
/// a few round trips. (Allocating the whole budget up front, zeroed, made each
/// connection resident at 512 KiB: 515 MB for a thousand kept-alive
/// connections, and a stall of a few hundred milliseconds while a thousand
/// connections opened at once.) Every allocation is zeroed, so no byte of
/// another flow can ever be read from it.
///
/// Readable bytes are the `count` bytes after `head`; bytes past them may be
/// written ahead of time (`write(at:)`, for out-of-order segments) and become
/// readable only when `commit` says so. Growing keeps both where they are
/// relative to `head`.
public final class ByteRing {
    public let capacity: Int
    /// Bytes of storage allocated now (a power of two, or `capacity`).
    public private(set) var allocated: Int
    @usableFromInline var storage: UnsafeMutableRawBufferPointer
    @usableFromInline var head = 0
    public private(set) var count = 0

    /// Where the storage starts: enough for a kept-alive request or response.
    public static let initialAllocation = 4096

    public init(capacity: Int) {
        precondition(capacity > 0, "a ring needs room for at least one byte")
        self.capacity = capacity
        allocated = min(capacity, Self.initialAllocation)
        storage = .allocate(byteCount: allocated, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { storage.deallocate() }

    /// Makes room for `needed` bytes from `head` (readable, and written ahead),
    /// within the budget: the next power of two that holds them. The bytes
    /// move to the start of the new storage in ring order.
    func reserve(_ needed: Int) {
        guard needed > allocated, allocated < capacity else { return }
        var size = allocated
        while size < needed, size < capacity { size *= 2 }
        size = min(size, capacity)
        let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        let tail = allocated - head
        UnsafeMutableRawBufferPointer(rebasing: grown[0 ..< tail]).copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[head ..< allocated]))
        UnsafeMutableRawBufferPointer(rebasing: grown[tail ..< allocated]).copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[0 ..< head]))
        UnsafeMutableRawBufferPointer(rebasing: grown[allocated ..< size]).initializeMemory(as: UInt8.self, repeating: 0)
        storage.deallocate()
        storage = grown
        allocated = size
        head = 0
    }

    @inlinable public var free: Int { capacity - count }
    @inlinable public var isEmpty: Bool { count == 0 }

    /// Appends as much of `bytes` as fits; returns how many bytes were taken.
    @discardableResult
    public func append(_ bytes: UnsafeRawBufferPointer) -> Int {
        let n = write(at: 0, bytes)
        count += n
        return n
    }

    /// Copies `bytes` to `offset` bytes past the readable end, clipped to the
    /// capacity, without making them readable. Returns how many were stored.
    @discardableResult
    public func write(at offset: Int, _ bytes: UnsafeRawBufferPointer) -> Int {
        precondition(offset >= 0)
        let room = free - offset
        guard room > 0 else { return 0 }
        let n = min(room, bytes.count)
        reserve(count + offset + n)
        forEachSpan(from: head + count + offset, length: n) { ring, linear in
            UnsafeMutableRawBufferPointer(rebasing: storage[ring])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[linear]))
        }
        return n
    }

    /// The free bytes right after the readable ones that sit contiguously in
    /// memory: a zero-copy place to `read(2)` into, followed by `commit`.
    ///
    /// Past half full, the storage grows first (within the budget): a flow
    /// whose bytes pile up (a bulk download the app drains more slowly than
    /// the upstream fills) gets the room of its budget, one doubling at a time.
    public func contiguousFree() -> UnsafeMutableRawBufferPointer {
        guard free > 0 else { return UnsafeMutableRawBufferPointer(start: nil, count: 0) }
        if count >= allocated / 2 { reserve(allocated * 2) }
        let start = (head + count) % allocated
        return UnsafeMutableRawBufferPointer(rebasing: storage[start ..< start + min(allocated - count, allocated - start)])
    }

    /// Makes `n` bytes written by `write(at:)` readable.
    public func commit(_ n: Int) {
        precondition(n >= 0 && n <= allocated - count, "commit past the ring's free space")
        count += n
    }

    /// Copies readable bytes from `offset` into `out` without consuming them
    /// (retransmission reads the unacknowledged data this way).
    @discardableResult
    public func peek(at offset: Int, into out: UnsafeMutableRawBufferPointer) -> Int {
        guard offset < count else { return 0 }
        let n = min(count - offset, out.count)
        forEachSpan(from: head + offset, length: n) { ring, linear in
            UnsafeMutableRawBufferPointer(rebasing: out[linear])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[ring]))
        }
        return n
    }

    /// The readable bytes from `offset` that sit contiguously in memory, up to
    /// `maxLength`: a zero-copy look, for writing straight to a socket.
    public func contiguousReadable(at offset: Int, maxLength: Int = .max) -> UnsafeRawBufferPointer {
        guard offset < count else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        let start = (head + offset) % allocated
        let n = min(count - offset, allocated - start, maxLength)
        return UnsafeRawBufferPointer(rebasing: storage[start ..< start + n])
    }

    /// Calls `body` once or twice (at the wrap) with a range of the ring's
    /// storage and the matching range of a linear buffer, covering `length`
    /// bytes from ring position `position`.
    @inline(__always)
    func forEachSpan(from position: Int, length: Int, _ body: (Range<Int>, Range<Int>) -> Void) {
        var start = position % allocated
        var done = 0
        while done < length {
            let chunk = min(length - done, allocated - start)
            body(start ..< start + chunk, done ..< done + chunk)
            done += chunk
            start = 0
        }
    }

    /// Consumes up to `n` readable bytes; returns how many were consumed.
    @discardableResult
    public func discard(_ n: Int) -> Int {
        let k = min(max(n, 0), count)
        head = (head + k) % allocated
        count -= k
        // The head stays where it is even when the ring empties: bytes written
        // ahead by `write(at:)` are placed relative to it.
        return k
    }

    /// Moves an empty ring's start back to the start of its storage, so that
    /// the next message lies in one piece: a response that straddled the end
    /// of the storage went to the app as two segments (two TUN writes, and an
    /// ACK from the app for the pair). Only for a ring with nothing written
    /// ahead (`write(at:)` places those bytes relative to `head`).
    public func restartIfEmpty() {
        if count == 0 { head = 0 }
    }

    /// Copies and consumes readable bytes into `out`.
    @discardableResult
    public func read(into out: UnsafeMutableRawBufferPointer) -> Int {
        discard(peek(at: 0, into: out))
    }
}
