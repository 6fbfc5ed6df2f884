public import Wire

/// One line of [Host], in Surge's forms: `NAME = ADDRESS[, ADDRESS…]` answers
/// with real addresses (an IPv4 and an IPv6 one for a dual-stack name); `NAME = OTHER.NAME` answers as that name would (an alias, sent as
/// a CNAME); `NAME = server:ADDRESS[:PORT]` or `server:system` resolves the
/// name through that DNS server (split DNS: a company's names through its
/// own resolver). A name starting with "*." covers every name under it (not
/// the bare suffix itself). Answered before anything else.
public struct HostEntry: Equatable, Sendable, CustomStringConvertible {
    public enum Value: Equatable, Sendable, CustomStringConvertible {
        /// In the order written; never empty.
        case addresses([IPAddress])
        /// Lowercased, no trailing dot.
        case alias(String)
        case server(HostServer)

        public var description: String {
            switch self {
            case let .addresses(list): list.map(\.description).joined(separator: ", ")
            case let .alias(name): name
            case let .server(server): "server:\(server)"
            }
        }
    }

    /// Lowercased, no trailing dot.
    public var name: String
    public var value: Value
    public var line: Int

    public init(name: String, value: Value, line: Int) {
        self.name = name; self.value = value; self.line = line
    }

    public init(name: String, address: IPAddress, line: Int) {
        self.init(name: name, value: .addresses([address]), line: line)
    }

    public var isWildcard: Bool { name.hasPrefix("*.") }

    /// Whether `queried` (lowercased, no trailing dot) is answered by this entry.
    public func matches(_ queried: String) -> Bool {
        if isWildcard { return queried.hasSuffix(name.dropFirst()) }
        return queried == name
    }

    public var description: String { "\(name) = \(value)" }
}

extension [HostEntry] {
    /// The entry for a name (lowercased, no trailing dot): an exact entry
    /// first, then the longest wildcard.
    public func entry(for name: String) -> HostEntry? {
        if let entry = first(where: { !$0.isWildcard && $0.name == name }) { return entry }
        return filter { $0.isWildcard && $0.matches(name) }.max { $0.name.count < $1.name.count }
    }
}

/// The DNS server a `server:` line names.
public enum HostServer: Equatable, Sendable, CustomStringConvertible {
    /// The host's own resolvers (/etc/resolv.conf), whatever [General] dns-server says.
    case system
    case address(IPAddress, port: UInt16)

    /// `system`, `10.0.0.53`, `10.0.0.53:5353`, `fd00::53` or `[fd00::53]:5353`; nil for anything else.
    public init?(_ text: String) {
        if text == "system" {
            self = .system
            return
        }
        if let address = IPAddress(text) {
            self = .address(address, port: 53)
            return
        }
        var host = Substring(text), portText: Substring
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]"), host[host.index(after: close)...].hasPrefix(":") else { return nil }
            portText = host[host.index(close, offsetBy: 2)...]
            host = host[host.index(after: host.startIndex) ..< close]
        } else {
            guard let colon = host.lastIndex(of: ":"), !host[..<colon].contains(":") else { return nil }
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard let address = IPAddress(String(host)), let port = UInt16(portText), port > 0,
              portText.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        self = .address(address, port: port)
    }

    public var description: String {
        switch self {
        case .system: "system"
        case let .address(address, 53): "\(address)"
        case let .address(.v6(address), port): "[\(address)]:\(port)"
        case let .address(address, port): "\(address):\(port)"
        }
    }
}
