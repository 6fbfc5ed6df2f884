/// A fixed-capacity byte ring: the storage behind a TCP connection's send
/// buffer and receive (reassembly) buffer.
///
/// It allocates once, when the connection is created, and never again: the
/// per-flow memory budget is its capacity. Readable bytes are the `count`
/// bytes after `head`; bytes past them may be written ahead of time
/// (`write(at:)`, for out-of-order segments) and become readable only when
/// `commit` says so.
public final class ByteRing {
    public let capacity: Int
    @usableFromInline let storage: UnsafeMutableRawBufferPointer
    @usableFromInline var head = 0
    public private(set) var count = 0

    public init(capacity: Int) {
        precondition(capacity > 0, "a ring needs room for at least one byte")
        self.capacity = capacity
        storage = .allocate(byteCount: capacity, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { storage.deallocate() }

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
        forEachSpan(from: head + count + offset, length: n) { ring, linear in
            UnsafeMutableRawBufferPointer(rebasing: storage[ring])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[linear]))
        }
        return n
    }

    /// The free bytes right after the readable ones that sit contiguously in
    /// memory: a zero-copy place to `read(2)` into, followed by `commit`.
    public func contiguousFree() -> UnsafeMutableRawBufferPointer {
        guard free > 0 else { return UnsafeMutableRawBufferPointer(start: nil, count: 0) }
        let start = (head + count) % capacity
        return UnsafeMutableRawBufferPointer(rebasing: storage[start ..< start + min(free, capacity - start)])
    }

    /// Makes `n` bytes written by `write(at:)` readable.
    public func commit(_ n: Int) {
        precondition(n >= 0 && n <= free, "commit past the ring's free space")
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
        let start = (head + offset) % capacity
        let n = min(count - offset, capacity - start, maxLength)
        return UnsafeRawBufferPointer(rebasing: storage[start ..< start + n])
    }

    /// Calls `body` once or twice (at the wrap) with a range of the ring's
    /// storage and the matching range of a linear buffer, covering `length`
    /// bytes from ring position `position`.
    @inline(__always)
    func forEachSpan(from position: Int, length: Int, _ body: (Range<Int>, Range<Int>) -> Void) {
        var start = position % capacity
        var done = 0
        while done < length {
            let chunk = min(length - done, capacity - start)
            body(start ..< start + chunk, done ..< done + chunk)
            done += chunk
            start = 0
        }
    }

    /// Consumes up to `n` readable bytes; returns how many were consumed.
    @discardableResult
    public func discard(_ n: Int) -> Int {
        let k = min(max(n, 0), count)
        head = (head + k) % capacity
        count -= k
        // The head stays where it is even when the ring empties: bytes written
        // ahead by `write(at:)` are placed relative to it.
        return k
    }

    /// Copies and consumes readable bytes into `out`.
    @discardableResult
    public func read(into out: UnsafeMutableRawBufferPointer) -> Int {
        discard(peek(at: 0, into: out))
    }
}
