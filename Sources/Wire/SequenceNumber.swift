/// A TCP sequence number: 32 bits that wrap. Comparison is modular
/// (RFC 9293 §3.4): `a < b` when b lies less than 2^31 ahead of a, so the order
/// holds across the wrap as long as the two are within half the space.
public struct SequenceNumber: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt32

    @inlinable public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    @inlinable
    public static func < (a: SequenceNumber, b: SequenceNumber) -> Bool {
        Int32(bitPattern: a.rawValue &- b.rawValue) < 0
    }

    @inlinable
    public static func + (a: SequenceNumber, n: Int) -> SequenceNumber {
        SequenceNumber(a.rawValue &+ UInt32(truncatingIfNeeded: n))
    }

    @inlinable
    public static func += (a: inout SequenceNumber, n: Int) { a = a + n }

    @inlinable
    public static func - (a: SequenceNumber, n: Int) -> SequenceNumber {
        SequenceNumber(a.rawValue &- UInt32(truncatingIfNeeded: n))
    }

    /// The signed distance from `b` to `a`: positive when a is ahead.
    @inlinable
    public static func - (a: SequenceNumber, b: SequenceNumber) -> Int {
        Int(Int32(bitPattern: a.rawValue &- b.rawValue))
    }

    /// True when `self` is in the half-open window [start, start + size).
    @inlinable
    public func isIn(_ start: SequenceNumber, size: Int) -> Bool {
        let offset = rawValue &- start.rawValue
        return UInt64(offset) < UInt64(max(size, 0))
    }

    public var description: String { String(rawValue) }
}
