/// An IPv4 address as a host-order 32-bit value. Prints dotted-quad.
public struct IPv4Address: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var value: UInt32

    @inlinable public init(_ value: UInt32) { self.value = value }

    @inlinable
    public init(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) {
        value = UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)
    }

    /// Parses dotted-quad text ("10.0.0.1"): four parts of one to three
    /// decimal digits, each at most 255; nil for anything else. Byte by byte:
    /// the rules ask of every request's host whether it is an address.
    public init?(_ text: some StringProtocol) {
        // One generic call for the bytes, then a plain loop: walking a
        // generic string's UTF-8 byte by byte goes through witness tables.
        let parsed = text.utf8.withContiguousStorageIfAvailable { Self.parse($0) }
            ?? Array(text.utf8).withUnsafeBufferPointer { Self.parse($0) }
        guard let parsed else { return nil }
        value = parsed
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32? {
        var value: UInt32 = 0, part: UInt32 = 0, digits = 0, parts = 0
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, parts < 3 else { return nil }
                value = value << 8 | part
                parts += 1; part = 0; digits = 0
            } else {
                guard byte &- UInt8(ascii: "0") < 10, digits < 3 else { return nil }
                part = part * 10 + UInt32(byte &- UInt8(ascii: "0"))
                digits += 1
                guard part <= 255 else { return nil }
            }
        }
        guard digits > 0, parts == 3 else { return nil }
        return value << 8 | part
    }

    public static let any = IPv4Address(0)
    public static let broadcast = IPv4Address(0xffff_ffff)

    @inlinable public static func < (a: Self, b: Self) -> Bool { a.value < b.value }

    public var description: String {
        "\(value >> 24).\(value >> 16 & 0xff).\(value >> 8 & 0xff).\(value & 0xff)"
    }

    /// The four bytes in network order.
    @inlinable public var bytes: (UInt8, UInt8, UInt8, UInt8) {
        (UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff))
    }

    @inlinable
    public static func load(_ buffer: UnsafeRawBufferPointer, _ offset: Int) -> IPv4Address {
        IPv4Address(buffer.u32(offset))
    }

    @inlinable
    public func store(_ buffer: UnsafeMutableRawBufferPointer, _ offset: Int) {
        buffer.setU32(offset, value)
    }
}

/// An IPv6 address as two host-order 64-bit halves. Prints in the canonical
/// text form of RFC 5952 (lower case, longest zero run compressed).
public struct IPv6Address: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var high: UInt64
    public var low: UInt64

    @inlinable public init(high: UInt64, low: UInt64) { self.high = high; self.low = low }

    /// Builds an address from eight 16-bit groups.
    public init(_ groups: [UInt16]) {
        precondition(groups.count == 8, "an IPv6 address has eight groups")
        var h: UInt64 = 0, l: UInt64 = 0
        for i in 0 ..< 4 { h = h << 16 | UInt64(groups[i]) }
        for i in 4 ..< 8 { l = l << 16 | UInt64(groups[i]) }
        high = h; low = l
    }

    /// Parses RFC 4291 §2.2 text, with "::" and an embedded IPv4 tail.
    public init?(_ text: some StringProtocol) {
        // Every IPv6 text has a colon; most text asked about (host names) has none.
        let colon = text.utf8.withContiguousStorageIfAvailable { $0.contains(UInt8(ascii: ":")) }
            ?? text.utf8.contains(UInt8(ascii: ":"))
        guard colon else { return nil }
        let s = String(text)
        var head: [UInt16] = [], tail: [UInt16] = []
        let halves = s.components(separatedByDoubleColon: ())
        guard halves.count <= 2 else { return nil }
        func groups(_ part: Substring, allowV4Tail: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            var out: [UInt16] = []
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            for (i, f) in fields.enumerated() {
                if allowV4Tail, i == fields.count - 1, f.contains(".") {
                    guard let v4 = IPv4Address(f) else { return nil }
                    out.append(UInt16(v4.value >> 16)); out.append(UInt16(v4.value & 0xffff))
                } else {
                    guard !f.isEmpty, f.count <= 4, let g = UInt16(f, radix: 16) else { return nil }
                    out.append(g)
                }
            }
            return out
        }
        if halves.count == 1 {
            guard let g = groups(halves[0], allowV4Tail: true), g.count == 8 else { return nil }
            head = g
        } else {
            guard let h = groups(halves[0], allowV4Tail: false),
                  let t = groups(halves[1], allowV4Tail: true), h.count + t.count <= 7 else { return nil }
            head = h + Array(repeating: 0, count: 8 - h.count - t.count); tail = t
        }
        self.init(head + tail)
    }

    public static let any = IPv6Address(high: 0, low: 0)
    public static let loopback = IPv6Address(high: 0, low: 1)

    @inlinable public static func < (a: Self, b: Self) -> Bool { (a.high, a.low) < (b.high, b.low) }

    public var groups: [UInt16] {
        (0 ..< 8).map { i in
            let half = i < 4 ? high : low
            return UInt16(truncatingIfNeeded: half >> (UInt64(3 - i % 4) * 16))
        }
    }

    public var description: String {
        let g = groups
        // RFC 5952 §4.2: compress the longest run of two or more zero groups, the first on a tie.
        var bestStart = -1, bestLength = 1, i = 0
        while i < 8 {
            if g[i] == 0 {
                var j = i
                while j < 8, g[j] == 0 { j += 1 }
                if j - i > bestLength { bestStart = i; bestLength = j - i }
                i = j
            } else { i += 1 }
        }
        func hex(_ range: Range<Int>) -> String {
            range.map { String(g[$0], radix: 16) }.joined(separator: ":")
        }
        if bestStart < 0 { return hex(0 ..< 8) }
        return hex(0 ..< bestStart) + "::" + hex(bestStart + bestLength ..< 8)
    }

    @inlinable
    public static func load(_ buffer: UnsafeRawBufferPointer, _ offset: Int) -> IPv6Address {
        IPv6Address(
            high: UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
            low: UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)))
    }

    @inlinable
    public func store(_ buffer: UnsafeMutableRawBufferPointer, _ offset: Int) {
        buffer.storeBytes(of: high.bigEndian, toByteOffset: offset, as: UInt64.self)
        buffer.storeBytes(of: low.bigEndian, toByteOffset: offset + 8, as: UInt64.self)
    }
}

extension String {
    /// Splits at the first "::" only; a second "::" makes a third part, which
    /// the IPv6 parser rejects.
    fileprivate func components(separatedByDoubleColon: ()) -> [Substring] {
        var parts: [Substring] = []
        var rest = self[...]
        while let r = rest.firstRange(of: "::") {
            parts.append(rest[..<r.lowerBound])
            rest = rest[r.upperBound...]
        }
        parts.append(rest)
        return parts
    }
}

/// Either kind of address, for code that handles both families.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4(IPv4Address)
    case v6(IPv6Address)

    public init?(_ text: some StringProtocol) {
        if let a = IPv4Address(text) { self = .v4(a) } else if let a = IPv6Address(text) { self = .v6(a) } else { return nil }
    }

    public var description: String {
        switch self {
        case let .v4(a): return a.description
        case let .v6(a): return a.description
        }
    }
}

/// IP protocol numbers (IANA "Assigned Internet Protocol Numbers"), also used
/// as IPv6 next-header values.
public struct IPProtocol: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let hopByHop = IPProtocol(rawValue: 0)
    public static let icmp = IPProtocol(rawValue: 1)
    public static let tcp = IPProtocol(rawValue: 6)
    public static let udp = IPProtocol(rawValue: 17)
    public static let ipv6Route = IPProtocol(rawValue: 43)
    public static let ipv6Fragment = IPProtocol(rawValue: 44)
    public static let esp = IPProtocol(rawValue: 50)
    public static let ah = IPProtocol(rawValue: 51)
    public static let icmpv6 = IPProtocol(rawValue: 58)
    public static let ipv6NoNext = IPProtocol(rawValue: 59)
    public static let ipv6Options = IPProtocol(rawValue: 60)

    public var description: String {
        switch rawValue {
        case 1: return "ICMP"
        case 6: return "TCP"
        case 17: return "UDP"
        case 58: return "ICMP6"
        default: return "proto-\(rawValue)"
        }
    }
}
