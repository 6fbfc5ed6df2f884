/// The Internet checksum (RFC 1071): the ones' complement of the ones'
/// complement sum of 16-bit big-endian words.
///
/// Data may be added in pieces of any length; an odd-length piece shifts the
/// word boundary for the next one, which RFC 1071 §2(B) lets us correct by
/// swapping the bytes of that piece's sum. Words are summed in native order 8
/// bytes at a time and swapped once at the end (RFC 1071 §2(B) again).
public struct InternetChecksum: Sendable, Equatable {
    /// The running sum in big-endian word order, folded to 16 bits.
    @usableFromInline var sum: UInt32 = 0
    /// True when an odd number of bytes has been added so far.
    @usableFromInline var odd = false

    @inlinable public init() {}

    @inlinable
    public mutating func add(_ bytes: UnsafeRawBufferPointer) {
        var piece = UInt32(Self.foldedSum(bytes))
        if odd { piece = UInt32(UInt16(truncatingIfNeeded: piece).byteSwapped) }
        sum = Self.fold(sum &+ piece)
        if bytes.count & 1 == 1 { odd.toggle() }
    }

    /// Adds one 16-bit word. Only valid at an even offset.
    @inlinable
    public mutating func add(_ word: UInt16) {
        sum = Self.fold(sum &+ UInt32(word))
    }

    @inlinable
    public mutating func add(_ word: UInt32) {
        sum = Self.fold(sum &+ (word >> 16) &+ (word & 0xffff))
    }

    /// The ones' complement sum, before complementing. A packet whose checksum
    /// field is included verifies when this is 0xffff.
    @inlinable public var folded: UInt16 { UInt16(truncatingIfNeeded: sum) }

    /// The value to store in a checksum field.
    @inlinable public var value: UInt16 { ~folded }

    @inlinable
    static func fold(_ value: UInt32) -> UInt32 {
        var v = value
        v = (v & 0xffff) &+ (v >> 16)
        v = (v & 0xffff) &+ (v >> 16)
        return v
    }

    /// The folded ones' complement sum of `bytes`, in big-endian word order.
    @inlinable
    public static func foldedSum(_ bytes: UnsafeRawBufferPointer) -> UInt16 {
        var i = 0
        let n = bytes.count
        // 32 bytes a round into four independent sums of 32-bit halves: no
        // carries to chain (2^32 ≡ 1 mod 0xffff, so hi + lo sums like the
        // 64-bit word), which lets the adds run in parallel. A 64 KiB segment
        // adds at most 2^44 per sum: far from overflow.
        var a0: UInt64 = 0, a1: UInt64 = 0, a2: UInt64 = 0, a3: UInt64 = 0
        while i + 32 <= n {
            let x0 = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let x1 = bytes.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)
            let x2 = bytes.loadUnaligned(fromByteOffset: i + 16, as: UInt64.self)
            let x3 = bytes.loadUnaligned(fromByteOffset: i + 24, as: UInt64.self)
            a0 &+= (x0 & 0xffff_ffff) &+ (x0 >> 32)
            a1 &+= (x1 & 0xffff_ffff) &+ (x1 >> 32)
            a2 &+= (x2 & 0xffff_ffff) &+ (x2 >> 32)
            a3 &+= (x3 & 0xffff_ffff) &+ (x3 >> 32)
            i += 32
        }
        var acc = a0 &+ a1 &+ a2 &+ a3
        while i + 8 <= n {
            let (s, o) = acc.addingReportingOverflow(bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            acc = s &+ (o ? 1 : 0)
            i += 8
        }
        if i + 4 <= n {
            let (s, o) = acc.addingReportingOverflow(UInt64(bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self)))
            acc = s &+ (o ? 1 : 0)
            i += 4
        }
        if i + 2 <= n {
            acc = acc &+ UInt64(bytes.loadUnaligned(fromByteOffset: i, as: UInt16.self))
            i += 2
        }
        if i < n {
            // A trailing byte is the high half of a zero-padded big-endian word.
            acc = acc &+ UInt64((UInt16(bytes[i]) << 8).bigEndian)
        }
        // Fold 64 → 32 → 16 with end-around carries.
        var s32 = (acc & 0xffff_ffff) &+ (acc >> 32)
        s32 = (s32 & 0xffff_ffff) &+ (s32 >> 32)
        var s16 = (s32 & 0xffff) &+ (s32 >> 16)
        s16 = (s16 & 0xffff) &+ (s16 >> 16)
        s16 = (s16 & 0xffff) &+ (s16 >> 16)
        return UInt16(bigEndian: UInt16(truncatingIfNeeded: s16))
    }

    /// The checksum of `bytes` alone.
    @inlinable
    public static func of(_ bytes: UnsafeRawBufferPointer) -> UInt16 {
        var c = InternetChecksum()
        c.add(bytes)
        return c.value
    }

    // MARK: Incremental update (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'))

    /// The new checksum after one 16-bit field changes from `old` to `new`.
    @inlinable
    public static func updated(_ checksum: UInt16, old: UInt16, new: UInt16) -> UInt16 {
        var c = InternetChecksum()
        c.add(~checksum)
        c.add(~old)
        c.add(new)
        return c.value
    }

    /// The new checksum after one 32-bit field (an IPv4 address) changes.
    @inlinable
    public static func updated(_ checksum: UInt16, old: UInt32, new: UInt32) -> UInt16 {
        var c = InternetChecksum()
        c.add(~checksum)
        c.add(~UInt16(truncatingIfNeeded: old >> 16))
        c.add(~UInt16(truncatingIfNeeded: old))
        c.add(new)
        return c.value
    }

    /// Completes a checksum left partial for offload: the field at
    /// `start + offset` holds the pseudo-header's sum, and the sum of every
    /// byte from `start` (the field included) is stored there, complemented.
    /// This is what a device does with a packet marked NEEDS_CSUM.
    public static func completePartial(in packet: UnsafeMutableRawBufferPointer, start: Int, offset: Int) {
        guard start >= 0, start + offset + 2 <= packet.count, start & 1 == 0 else { return }
        var sum = InternetChecksum()
        sum.add(UnsafeRawBufferPointer(rebasing: packet[start...]))
        let value = sum.value
        packet[start + offset] = UInt8(truncatingIfNeeded: value >> 8)
        packet[start + offset + 1] = UInt8(truncatingIfNeeded: value)
    }

    // MARK: Pseudo-headers

    /// The IPv4 pseudo-header sum (RFC 793 §3.1, RFC 768).
    @inlinable
    public static func pseudoHeader(source: IPv4Address, destination: IPv4Address,
                                    protocol proto: IPProtocol, length: Int) -> InternetChecksum {
        var c = InternetChecksum()
        c.add(source.value)
        c.add(destination.value)
        c.add(UInt16(proto.rawValue))
        c.add(UInt16(truncatingIfNeeded: length))
        return c
    }

    /// The IPv6 pseudo-header sum (RFC 8200 §8.1).
    @inlinable
    public static func pseudoHeader(source: IPv6Address, destination: IPv6Address,
                                    protocol proto: IPProtocol, length: Int) -> InternetChecksum {
        var c = InternetChecksum()
        c.add(UInt32(truncatingIfNeeded: source.high >> 32)); c.add(UInt32(truncatingIfNeeded: source.high))
        c.add(UInt32(truncatingIfNeeded: source.low >> 32)); c.add(UInt32(truncatingIfNeeded: source.low))
        c.add(UInt32(truncatingIfNeeded: destination.high >> 32)); c.add(UInt32(truncatingIfNeeded: destination.high))
        c.add(UInt32(truncatingIfNeeded: destination.low >> 32)); c.add(UInt32(truncatingIfNeeded: destination.low))
        c.add(UInt32(truncatingIfNeeded: length))
        c.add(UInt16(proto.rawValue))
        return c
    }
}
