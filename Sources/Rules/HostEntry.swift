public import Wire

/// One line of [Host]: `NAME = ADDRESS`. A name starting with "*." covers every
/// name under it (not the bare suffix itself). Answered before anything else.
public struct HostEntry: Equatable, Sendable, CustomStringConvertible {
    /// Lowercased, no trailing dot.
    public var name: String
    public var address: IPAddress
    public var line: Int

    public init(name: String, address: IPAddress, line: Int) {
        self.name = name; self.address = address; self.line = line
    }

    public var isWildcard: Bool { name.hasPrefix("*.") }

    /// Whether `queried` (lowercased, no trailing dot) is answered by this entry.
    public func matches(_ queried: String) -> Bool {
        if isWildcard { return queried.hasSuffix(name.dropFirst()) }
        return queried == name
    }

    public var description: String { "\(name) = \(address)" }
}
