/// DOMAIN and DOMAIN-SUFFIX rules as one trie over reversed labels, so that a
/// lookup walks the host's labels once ("x.ads.test" visits test, ads, x) and
/// never looks at an entry that does not share its suffix. Each node keeps the
/// smallest rule index seen for it per kind: first match wins, so a later
/// duplicate can never decide.
///
/// Labels compare ASCII case-insensitively (RFC 4343); a trailing dot on either
/// side is ignored. Edges are keyed by a 64-bit hash of the lowered label plus
/// the parent node, with the label bytes kept to confirm a hit, so a lookup
/// builds no strings.
public struct DomainSuffixIndex<Value: Sendable>: Sendable {
    public enum Kind: Sendable, Equatable, CustomStringConvertible {
        /// DOMAIN: the host itself only.
        case exact
        /// DOMAIN-SUFFIX: the host and every name below it, at a label boundary.
        case suffix

        public var description: String { self == .exact ? "DOMAIN" : "DOMAIN-SUFFIX" }
    }

    struct Node: Sendable {
        var labelStart: Int32
        var labelLength: Int32
        /// The next sibling whose label hashes the same (a collision chain).
        var collision: Int32 = -1
        var exact: Int32 = -1
        var suffix: Int32 = -1
    }

    struct Edge: Hashable, Sendable {
        var parent: Int32
        var hash: UInt64
    }

    private var nodes: [Node] = [Node(labelStart: 0, labelLength: 0)]
    private var labelBytes: [UInt8] = []
    private var edges: [Edge: Int32] = [:]
    private var entries: [(index: Int, value: Value)] = []

    public init() {}

    /// Entries that decide something (duplicates with a larger index are dropped).
    public var count: Int { entries.count }

    /// Adds a DOMAIN or DOMAIN-SUFFIX entry. Returns false, adding nothing, for a
    /// name that is empty or has an empty label ("a..b", ".a").
    @discardableResult
    public mutating func insert(_ domain: String, kind: Kind, index: Int, value: Value) -> Bool {
        var name = Array(domain.utf8)
        if name.last == UInt8(ascii: ".") { name.removeLast() }
        guard !name.isEmpty else { return false }
        for i in name.indices { name[i] = Self.lower(name[i]) }
        let labels = name.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard labels.allSatisfy({ !$0.isEmpty }) else { return false }
        var node: Int32 = 0
        for label in labels.reversed() {
            node = child(of: node, label: Array(label))
        }
        let slot = Int32(entries.count)
        switch kind {
        case .exact:
            if nodes[Int(node)].exact >= 0, entries[Int(nodes[Int(node)].exact)].index <= index { return true }
            nodes[Int(node)].exact = slot
        case .suffix:
            if nodes[Int(node)].suffix >= 0, entries[Int(nodes[Int(node)].suffix)].index <= index { return true }
            nodes[Int(node)].suffix = slot
        }
        entries.append((index, value))
        return true
    }

    private mutating func child(of parent: Int32, label: [UInt8]) -> Int32 {
        let hash = label.withUnsafeBufferPointer { Self.hash($0, 0, $0.count) }
        let edge = Edge(parent: parent, hash: hash)
        var last: Int32 = -1
        if var n = edges[edge] {
            while n >= 0 {
                if label.withUnsafeBufferPointer({ matches(n, $0, 0, $0.count) }) { return n }
                last = n
                n = nodes[Int(n)].collision
            }
        }
        let new = Int32(nodes.count)
        nodes.append(Node(labelStart: Int32(labelBytes.count), labelLength: Int32(label.count)))
        labelBytes.append(contentsOf: label)
        if last >= 0 { nodes[Int(last)].collision = new } else { edges[edge] = new }
        return new
    }

    /// The entry with the smallest rule index that matches `host`, if any.
    /// Cost: one hash and one compare per label of `host`.
    public func lookup(_ host: String) -> (index: Int, value: Value)? {
        if let hit = host.utf8.withContiguousStorageIfAvailable({ lookup(bytes: $0) }) { return hit }
        let copy = Array(host.utf8)
        return copy.withUnsafeBufferPointer { lookup(bytes: $0) }
    }

    private func lookup(bytes: UnsafeBufferPointer<UInt8>) -> (index: Int, value: Value)? {
        var end = bytes.count
        if end > 0, bytes[end - 1] == UInt8(ascii: ".") { end -= 1 }
        guard end > 0 else { return nil }
        var best: Int32 = -1
        func consider(_ slot: Int32) {
            if slot >= 0, best < 0 || entries[Int(slot)].index < entries[Int(best)].index { best = slot }
        }
        var node: Int32 = 0
        while true {
            var start = end
            while start > 0, bytes[start - 1] != UInt8(ascii: ".") { start -= 1 }
            guard start < end, var n = edges[Edge(parent: node, hash: Self.hash(bytes, start, end))] else { break }
            while n >= 0, !matches(n, bytes, start, end) { n = nodes[Int(n)].collision }
            guard n >= 0 else { break }
            node = n
            consider(nodes[Int(n)].suffix)
            if start == 0 {
                consider(nodes[Int(n)].exact)
                break
            }
            end = start - 1
        }
        return best < 0 ? nil : entries[Int(best)]
    }

    private func matches(_ node: Int32, _ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Bool {
        let n = nodes[Int(node)]
        guard Int(n.labelLength) == end - start else { return false }
        let base = Int(n.labelStart)
        for i in 0 ..< (end - start) where labelBytes[base + i] != Self.lower(bytes[start + i]) { return false }
        return true
    }

    @inline(__always)
    static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// FNV-1a over the lowered label: cheap, and the label compare settles collisions.
    @inline(__always)
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for i in start ..< end { h = (h ^ UInt64(lower(bytes[i]))) &* 0x0000_0100_0000_01b3 }
        return h
    }
}
