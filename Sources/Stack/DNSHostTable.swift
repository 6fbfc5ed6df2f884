public import Wire

/// What the profile's [Host] section says about a name: real addresses to
/// answer with, another name to answer for instead (an alias, sent as a
/// CNAME), or that a DNS server of its own resolves it (a `server:` line:
/// answered as a name outside the table is, and the engine picks the server).
public enum DNSHostEntry: Hashable, Sendable, CustomStringConvertible {
    case addresses([IPAddress])
    case alias(DNSName)
    case delegated

    /// Parses the value side of a [Host] line: `10.0.0.1, fd00::1` or `other.example.test`.
    public init?(_ text: String) {
        let parts = text.split(separator: ",").map { $0.trimmingSpaces }
        guard !parts.isEmpty, !parts.contains(where: \.isEmpty) else { return nil }
        let addresses = parts.compactMap { IPAddress($0) }
        if addresses.count == parts.count {
            self = .addresses(addresses)
        } else if parts.count == 1, let name = DNSName(String(parts[0])), name != .root {
            self = .alias(name)
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case let .addresses(list): return list.map(\.description).joined(separator: ", ")
        case let .alias(name): return name.description
        case .delegated: return "server"
        }
    }
}

/// The static names of the profile's [Host] section, answered with their real
/// addresses in both DNS modes.
public struct DNSHostTable: Sendable {
    /// How a name resolves through the table.
    public struct Resolution: Equatable, Sendable {
        /// The alias targets in order; each becomes a CNAME owned by the one before.
        public var aliases: [DNSName]
        /// The addresses of the last name; nil when the last alias leads out of the table.
        public var addresses: [IPAddress]?
    }

    /// Longer chains are treated as loops.
    public static let maximumAliasChain = 8

    private var table = DNSNameTable<DNSHostEntry>()

    public init() {}

    public var isEmpty: Bool { table.isEmpty }

    public mutating func insert(_ pattern: DNSNamePattern, _ entry: DNSHostEntry) { table.insert(pattern, entry) }

    /// Adds one [Host] line given as its two sides; false when either does not parse.
    @discardableResult
    public mutating func insert(_ pattern: String, _ value: String) -> Bool {
        guard let pattern = DNSNamePattern(pattern), let entry = DNSHostEntry(value) else { return false }
        insert(pattern, entry)
        return true
    }

    public func entry(for name: DNSName) -> DNSHostEntry? { table.value(for: name) }

    /// Nil when the name is not in the table, or is delegated to a server of
    /// its own; `.failure` for an alias loop or a chain longer than
    /// `maximumAliasChain`.
    public func resolve(_ name: DNSNameView) -> Result<Resolution, AliasLoop>? {
        guard let first = table.value(for: name), first != .delegated else { return nil }
        return follow(first)
    }

    public func resolve(_ name: DNSName) -> Result<Resolution, AliasLoop>? {
        guard let first = table.value(for: name), first != .delegated else { return nil }
        return follow(first)
    }

    public struct AliasLoop: Error, Equatable {}

    private func follow(_ first: DNSHostEntry) -> Result<Resolution, AliasLoop> {
        var aliases: [DNSName] = []
        var entry = first
        while true {
            switch entry {
            case let .addresses(list):
                return .success(Resolution(aliases: aliases, addresses: list))
            case .delegated:
                // An alias to a name a server of its own resolves: the chain leaves the table there.
                return .success(Resolution(aliases: aliases, addresses: nil))
            case let .alias(target):
                guard aliases.count < Self.maximumAliasChain else { return .failure(AliasLoop()) }
                aliases.append(target)
                guard let next = table.value(for: target) else {
                    return .success(Resolution(aliases: aliases, addresses: nil))
                }
                entry = next
            }
        }
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return s
    }
}
