public import Wire

/// A name as a dictionary key: the wire form with ASCII folded to lower case
/// (RFC 4343), so that dropping the first label gives the parent's key.
struct DNSNameKey: Hashable, Sendable {
    var wire: [UInt8]

    init(_ labels: some Sequence<UnsafeRawBufferPointer>) {
        wire = []
        for label in labels {
            wire.append(UInt8(label.count))
            for byte in label { wire.append(byte >= 0x41 && byte <= 0x5a ? byte | 0x20 : byte) }
        }
        wire.append(0)
    }

    init(_ name: DNSName) { self = name.withLabels { DNSNameKey($0) } }

    init(wire: [UInt8]) { self.wire = wire }

    /// The name without its first label; nil for the root.
    var parent: DNSNameKey? {
        guard wire[0] != 0 else { return nil }
        return DNSNameKey(wire: Array(wire[(1 + Int(wire[0]))...]))
    }
}

/// A name pattern of a profile: `example.test` matches that name only;
/// `*.example.test` matches every name below example.test, but not
/// example.test itself (as Surge reads it).
public struct DNSNamePattern: Hashable, Sendable, CustomStringConvertible {
    public var name: DNSName
    public var isWildcard: Bool

    public init(name: DNSName, isWildcard: Bool) {
        self.name = name
        self.isWildcard = isWildcard
    }

    /// Parses `example.test`, `example.test.` or `*.example.test`; nil for
    /// anything DNSName refuses, a bare `*`, or a `*` elsewhere.
    public init?(_ text: String) {
        var rest = Substring(text)
        let wildcard = rest.hasPrefix("*.")
        if wildcard { rest = rest.dropFirst(2) }
        guard !rest.contains("*"), !rest.isEmpty, rest != ".", let name = DNSName(String(rest)) else { return nil }
        self.init(name: name, isWildcard: wildcard)
    }

    public var description: String { isWildcard ? "*.\(name)" : name.description }
}

/// Values found by name: an exact pattern first, then the wildcard of the
/// closest enclosing name (`*.a.example.test` before `*.example.test`).
public struct DNSNameTable<Value: Sendable>: Sendable {
    private var exact: [DNSNameKey: Value] = [:]
    private var wildcard: [DNSNameKey: Value] = [:]

    public init() {}

    public var isEmpty: Bool { exact.isEmpty && wildcard.isEmpty }

    /// Adds or replaces the value of `pattern`.
    public mutating func insert(_ pattern: DNSNamePattern, _ value: Value) {
        let key = DNSNameKey(pattern.name)
        if pattern.isWildcard { wildcard[key] = value } else { exact[key] = value }
    }

    public func value(for name: DNSName) -> Value? { value(for: DNSNameKey(name)) }

    public func value(for name: DNSNameView) -> Value? { value(for: DNSNameKey(name.labels)) }

    func value(for key: DNSNameKey) -> Value? {
        if let value = exact[key] { return value }
        guard !wildcard.isEmpty else { return nil }
        var ancestor = key.parent
        while let current = ancestor {
            if let value = wildcard[current] { return value }
            ancestor = current.parent
        }
        return nil
    }
}

/// A set of name patterns, such as the names kept out of fake-IP.
public struct DNSNameSet: Sendable, ExpressibleByArrayLiteral {
    private var table = DNSNameTable<Bool>()
    public private(set) var patterns: [DNSNamePattern] = []

    public init() {}

    /// Patterns that do not parse are left out.
    public init(_ texts: [String]) {
        for text in texts { if let pattern = DNSNamePattern(text) { insert(pattern) } }
    }

    public init(arrayLiteral elements: String...) { self.init(elements) }

    public mutating func insert(_ pattern: DNSNamePattern) {
        table.insert(pattern, true)
        patterns.append(pattern)
    }

    public func contains(_ name: DNSName) -> Bool { table.value(for: name) ?? false }
    public func contains(_ name: DNSNameView) -> Bool { table.value(for: name) ?? false }
}
