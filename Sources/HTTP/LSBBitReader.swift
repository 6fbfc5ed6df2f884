/// A failure that a bit stream's decoder throws when its input ends too
/// early: each decoder names its own (`LSBBitReader` throws it).
protocol TruncationFailure: Error {
    static var truncated: Self { get }
}

/// The input of a bit stream packed from each byte's lowest bit: DEFLATE's
/// (RFC 1951 §3.1.1) and Brotli's (RFC 7932 §1.5.1), which read alike: bytes
/// in order, each from its lowest bit, numbers from their least significant
/// bit. Up to 63 bits are held ahead in `bits`, the next one lowest; every
/// read checks that the input had them, so a short stream throws `Failure`'s
/// `truncated` instead of reading past its end.
///
/// Zstandard reads its bit streams backwards (`ZstdDecoder.BackwardBitReader`),
/// so it has a reader of its own.
struct LSBBitReader<Failure: TruncationFailure> {
    let input: UnsafeRawBufferPointer
    /// The next byte not yet in `bits`.
    private(set) var position = 0
    private var bits: UInt64 = 0
    /// How many bits of `bits` are counted as read ahead (the bits above them
    /// are the input's next bits, read again by the next refill, or zero past its end).
    private(set) var count = 0

    init(input: UnsafeRawBufferPointer) {
        self.input = input
    }

    /// Tops `bits` up to at least 56 bits, or to the end of the input.
    @inline(__always)
    mutating func refill() {
        if count > 56 { return }
        if input.count - position >= 8 {
            // Eight bytes in one load; only the whole bytes that fit are
            // counted, and the rest of the word is read again by the next
            // refill. Those bits stay above `count` unmasked: they are the
            // input's next bits, each where the next refill puts it again
            // (an OR of the same value), so a peek past `count` sees real
            // input, never an earlier byte.
            let word = UInt64(littleEndian: input.loadUnaligned(fromByteOffset: position, as: UInt64.self))
            let taken = (63 - count) >> 3
            bits |= word << UInt64(count)
            count += taken << 3
            position += taken
        } else {
            while count <= 56 && position < input.count {
                bits |= UInt64(input[position]) << UInt64(count)
                position += 1
                count += 8
            }
        }
    }

    /// The next `n` (0...32) bits as a number, the first bit lowest.
    @inline(__always)
    mutating func take(_ n: Int) throws(Failure) -> Int {
        if count < n {
            refill()
            guard count >= n else { throw Failure.truncated }
        }
        let value = Int(truncatingIfNeeded: bits & ((1 << UInt64(n)) - 1))
        bits >>= UInt64(n)
        count -= n
        return value
    }

    /// The next bits without taking them: at least 15 (the longest prefix
    /// code of either format) unless the input ends first (bits past its
    /// end read as zeros; `drop` checks against `count`).
    @inline(__always)
    mutating func peek() -> UInt64 {
        if count < 15 { refill() }
        return bits
    }

    /// Drops `n` bits that `peek` showed, or throws when the input did not have them.
    @inline(__always)
    mutating func drop(_ n: Int) throws(Failure) {
        guard n <= count else { throw Failure.truncated }
        bits >>= UInt64(n)
        count -= n
    }

    /// Skips to the next byte boundary and returns the bits skipped (Brotli
    /// requires them to be zero wherever it pads; DEFLATE ignores them).
    @discardableResult
    mutating func alignToByte() -> Int {
        let skip = count & 7
        let padding = Int(truncatingIfNeeded: bits & ((1 << UInt64(skip)) - 1))
        bits >>= UInt64(skip)
        count -= skip
        return padding
    }

    /// The input's bytes read so far (after `alignToByte`: the whole bytes
    /// held ahead in `bits` are not).
    var consumedBytes: Int { position - count >> 3 }

    /// How many bits have been taken so far.
    var bitsRead: Int { position * 8 - count }

    /// Whether the input is used up but for fewer than eight bits: the
    /// padding of its last byte (RFC 1951 §3.1.1: a stream that ends inside
    /// a byte fills the rest of it). After `alignToByte`: every byte read.
    var isExhausted: Bool { position == input.count && count < 8 }

    /// The next `n` whole bytes (after `alignToByte`), read from the input
    /// directly: those held in `bits` are given back first.
    mutating func takeBytes(_ n: Int) throws(Failure) -> UnsafeRawBufferPointer {
        giveBackHeldBytes()
        guard n <= input.count - position else { throw Failure.truncated }
        defer { position += n }
        return UnsafeRawBufferPointer(rebasing: input[position ..< position + n])
    }

    /// The bytes not yet read (after `alignToByte`): those held in `bits`
    /// are given back first, and the caller may then take them (`takeBytes`).
    mutating func remainingBytes() -> UnsafeRawBufferPointer {
        giveBackHeldBytes()
        return UnsafeRawBufferPointer(rebasing: input[position...])
    }

    /// Returns the whole bytes held in `bits` to the input (after `alignToByte`).
    private mutating func giveBackHeldBytes() {
        position -= count >> 3
        bits = 0
        count = 0
    }
}
