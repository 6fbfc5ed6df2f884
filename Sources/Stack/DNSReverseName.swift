public import Wire

/// The names PTR queries ask about (RFC 1035 §3.5 in-addr.arpa, RFC 3596 §2.5
/// ip6.arpa), read from the labels without building text.
public enum DNSReverseName {
    /// The address `d.c.b.a.in-addr.arpa` or `<32 nibbles>.ip6.arpa` names;
    /// nil for anything else, a partial (zone) name included.
    public static func address(_ labels: some Sequence<UnsafeRawBufferPointer>) -> IPAddress? {
        if let v4 = v4Address(labels) { return .v4(v4) }
        if let v6 = v6Address(labels) { return .v6(v6) }
        return nil
    }

    public static func address(_ name: DNSNameView) -> IPAddress? { address(name.labels) }

    /// True when the last label is `arpa`: the infrastructure domain (reverse
    /// zones, ipv4only.arpa, home.arpa), which fake-IP must never answer.
    public static func isUnderArpa(_ labels: some Sequence<UnsafeRawBufferPointer>) -> Bool {
        var last: UnsafeRawBufferPointer?
        for label in labels { last = label }
        guard let last else { return false }
        return labelIs(last, "arpa")
    }

    /// The in-addr.arpa name of `address`, for tests and logs.
    public static func name(for address: IPAddress) -> DNSName {
        switch address {
        case let .v4(v4):
            let (a, b, c, d) = v4.bytes
            return DNSName("\(d).\(c).\(b).\(a).in-addr.arpa")!
        case let .v6(v6):
            var text = ""
            for i in 0 ..< 32 {
                let half = i < 16 ? v6.low : v6.high
                text += String(half >> UInt64(4 * (i % 16)) & 0xf, radix: 16) + "."
            }
            return DNSName(text + "ip6.arpa")!
        }
    }

    static func v4Address(_ labels: some Sequence<UnsafeRawBufferPointer>) -> IPv4Address? {
        var iterator = labels.makeIterator()
        var value: UInt32 = 0
        for i in 0 ..< 4 {
            guard let label = iterator.next(), (1 ... 3).contains(label.count) else { return nil }
            // No leading zeros: "01" is not how any resolver writes an octet.
            guard label.count == 1 || label[0] != UInt8(ascii: "0") else { return nil }
            var octet: UInt32 = 0
            for byte in label {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                octet = octet * 10 + UInt32(byte - UInt8(ascii: "0"))
            }
            guard octet <= 255 else { return nil }
            value |= octet << UInt32(8 * i)
        }
        guard let zone = iterator.next(), labelIs(zone, "in-addr"),
              let top = iterator.next(), labelIs(top, "arpa"), iterator.next() == nil else { return nil }
        return IPv4Address(value)
    }

    static func v6Address(_ labels: some Sequence<UnsafeRawBufferPointer>) -> IPv6Address? {
        var iterator = labels.makeIterator()
        var high: UInt64 = 0, low: UInt64 = 0
        for i in 0 ..< 32 {
            guard let label = iterator.next(), label.count == 1, let nibble = hexValue(label[0]) else { return nil }
            if i < 16 { low |= nibble << UInt64(4 * i) } else { high |= nibble << UInt64(4 * (i - 16)) }
        }
        guard let zone = iterator.next(), labelIs(zone, "ip6"),
              let top = iterator.next(), labelIs(top, "arpa"), iterator.next() == nil else { return nil }
        return IPv6Address(high: high, low: low)
    }

    static func hexValue(_ byte: UInt8) -> UInt64? {
        switch byte {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): return UInt64(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): return UInt64(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): return UInt64(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    /// ASCII case-insensitive comparison with a lower-case literal.
    static func labelIs(_ label: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        guard label.count == text.utf8CodeUnitCount else { return false }
        let expected = UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        for i in 0 ..< label.count {
            let byte = label[i]
            let lower = byte >= 0x41 && byte <= 0x5a ? byte | 0x20 : byte
            guard lower == expected[i] else { return false }
        }
        return true
    }
}
