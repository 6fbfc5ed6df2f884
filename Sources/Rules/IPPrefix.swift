public import Wire

/// An IPv4 network written as ADDRESS/LENGTH. The address is stored with its
/// host bits cleared, so two spellings of one network compare equal.
public struct IPv4Prefix: Hashable, Sendable, CustomStringConvertible {
    public let network: IPv4Address
    public let length: Int

    /// nil when `length` is outside 0...32.
    public init?(network: IPv4Address, length: Int) {
        guard (0 ... 32).contains(length) else { return nil }
        self.network = IPv4Address(network.value & IPv4Prefix.mask(length))
        self.length = length
    }

    /// Parses "10.0.0.0/8"; a bare address is a /32.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPv4Address(parts[0]) else { return nil }
        var length = 32
        if parts.count == 2 {
            guard parts[1].count <= 2, parts[1].allSatisfy(\.isASCII), let n = Int(parts[1]) else { return nil }
            length = n
        }
        self.init(network: address, length: length)
    }

    public var mask: UInt32 { IPv4Prefix.mask(length) }

    public func contains(_ address: IPv4Address) -> Bool { address.value & mask == network.value }

    static func mask(_ length: Int) -> UInt32 { length == 0 ? 0 : ~UInt32(0) << UInt32(32 - length) }

    public var description: String { "\(network)/\(length)" }
}

/// An IPv6 network written as ADDRESS/LENGTH, host bits cleared.
/// SRC-IP's value: a network of either family.
public enum SourcePrefix: Hashable, Sendable, CustomStringConvertible {
    case v4(IPv4Prefix)
    case v6(IPv6Prefix)

    public func contains(_ address: IPAddress) -> Bool {
        switch (self, address) {
        case let (.v4(prefix), .v4(a)): prefix.contains(a)
        case let (.v6(prefix), .v6(a)): prefix.contains(a)
        case (.v4, .v6), (.v6, .v4): false
        }
    }

    /// A lone address prints bare, as it is usually written.
    public var description: String {
        switch self {
        case let .v4(prefix): prefix.length == 32 ? "\(prefix.network)" : "\(prefix)"
        case let .v6(prefix): prefix.length == 128 ? "\(prefix.network)" : "\(prefix)"
        }
    }
}

public struct IPv6Prefix: Hashable, Sendable, CustomStringConvertible {
    public let network: IPv6Address
    public let length: Int

    public init?(network: IPv6Address, length: Int) {
        guard (0 ... 128).contains(length) else { return nil }
        let (high, low) = IPv6Prefix.mask(length)
        self.network = IPv6Address(high: network.high & high, low: network.low & low)
        self.length = length
    }

    /// Parses "fd00::/8"; a bare address is a /128.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPv6Address(parts[0]) else { return nil }
        var length = 128
        if parts.count == 2 {
            guard parts[1].count <= 3, parts[1].allSatisfy(\.isASCII), let n = Int(parts[1]) else { return nil }
            length = n
        }
        self.init(network: address, length: length)
    }

    public func contains(_ address: IPv6Address) -> Bool {
        let (high, low) = IPv6Prefix.mask(length)
        return address.high & high == network.high && address.low & low == network.low
    }

    static func mask(_ length: Int) -> (UInt64, UInt64) {
        let high: UInt64 = length >= 64 ? ~0 : length == 0 ? 0 : ~UInt64(0) << UInt64(64 - length)
        let low: UInt64 = length <= 64 ? 0 : length == 128 ? ~0 : ~UInt64(0) << UInt64(128 - length)
        return (high, low)
    }

    public var description: String { "\(network)/\(length)" }
}
