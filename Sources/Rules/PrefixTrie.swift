public import Wire

/// IP-CIDR and IP-CIDR6 rules as two binary tries (one per family), walked bit
/// by bit from the top of the address. Every node on the path is a covering
/// prefix, and each keeps the smallest rule index inserted for it, so a lookup
/// costs at most 32 or 128 steps whatever the number of rules.
///
/// An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is looked up in the IPv4 trie as
/// well, since a dual-stack socket reports IPv4 peers that way.
public struct PrefixTrie<Value: Sendable>: Sendable {
    struct Node: Sendable {
        var zero: Int32 = -1
        var one: Int32 = -1
        var slot: Int32 = -1
    }

    private var v4: [Node] = [Node()]
    private var v6: [Node] = [Node()]
    private var entries: [(index: Int, value: Value)] = []

    public init() {}

    public var count: Int { entries.count }

    /// Adds `address/prefixLength`; host bits below the prefix are ignored, as
    /// `ip route` does. False for a prefix length out of range.
    @discardableResult
    public mutating func insert(_ address: IPv4Address, prefixLength: Int, index: Int, value: Value) -> Bool {
        guard (0 ... 32).contains(prefixLength) else { return false }
        Self.insert(into: &v4, entries: &entries, bits: prefixLength, index: index, value: value) { UInt64(address.value >> (31 - $0) & 1) }
        return true
    }

    @discardableResult
    public mutating func insert(_ address: IPv6Address, prefixLength: Int, index: Int, value: Value) -> Bool {
        guard (0 ... 128).contains(prefixLength) else { return false }
        Self.insert(into: &v6, entries: &entries, bits: prefixLength, index: index, value: value) { Self.bit(address, $0) }
        return true
    }

    @discardableResult
    public mutating func insert(_ address: IPAddress, prefixLength: Int, index: Int, value: Value) -> Bool {
        switch address {
        case let .v4(a): return insert(a, prefixLength: prefixLength, index: index, value: value)
        case let .v6(a): return insert(a, prefixLength: prefixLength, index: index, value: value)
        }
    }

    private static func insert(into trie: inout [Node], entries: inout [(index: Int, value: Value)], bits: Int, index: Int, value: Value, bit: (Int) -> UInt64) {
        var node = 0
        for i in 0 ..< bits {
            let next = bit(i) == 0 ? trie[node].zero : trie[node].one
            if next >= 0 { node = Int(next); continue }
            let new = Int32(trie.count)
            trie.append(Node())
            if bit(i) == 0 { trie[node].zero = new } else { trie[node].one = new }
            node = Int(new)
        }
        let old = trie[node].slot
        if old >= 0, entries[Int(old)].index <= index { return }
        trie[node].slot = Int32(entries.count)
        entries.append((index, value))
    }

    /// The covering prefix with the smallest rule index.
    public func lookup(_ address: IPv4Address) -> (index: Int, value: Value)? {
        let slot = walk(v4, bits: 32) { UInt64(address.value >> (31 - $0) & 1) }
        return slot < 0 ? nil : entries[Int(slot)]
    }

    public func lookup(_ address: IPv6Address) -> (index: Int, value: Value)? {
        var slot = walk(v6, bits: 128) { Self.bit(address, $0) }
        if address.high == 0, address.low >> 32 == 0xffff {
            let mapped = IPv4Address(UInt32(truncatingIfNeeded: address.low))
            let s4 = walk(v4, bits: 32) { UInt64(mapped.value >> (31 - $0) & 1) }
            if s4 >= 0, slot < 0 || entries[Int(s4)].index < entries[Int(slot)].index { slot = s4 }
        }
        return slot < 0 ? nil : entries[Int(slot)]
    }

    public func lookup(_ address: IPAddress) -> (index: Int, value: Value)? {
        switch address {
        case let .v4(a): return lookup(a)
        case let .v6(a): return lookup(a)
        }
    }

    /// The prefix with the smallest rule index among those that cover all of
    /// `address/prefixLength` (their length at most `prefixLength`).
    public func covering(_ address: IPAddress, prefixLength: Int) -> (index: Int, value: Value)? {
        let slot: Int32
        switch address {
        case let .v4(a): slot = walk(v4, bits: min(max(prefixLength, 0), 32)) { UInt64(a.value >> (31 - $0) & 1) }
        case let .v6(a): slot = walk(v6, bits: min(max(prefixLength, 0), 128)) { Self.bit(a, $0) }
        }
        return slot < 0 ? nil : entries[Int(slot)]
    }

    @inline(__always)
    private func walk(_ trie: [Node], bits: Int, bit: (Int) -> UInt64) -> Int32 {
        var best: Int32 = -1
        var node = 0
        var depth = 0
        while true {
            let slot = trie[node].slot
            if slot >= 0, best < 0 || entries[Int(slot)].index < entries[Int(best)].index { best = slot }
            guard depth < bits else { break }
            let next = bit(depth) == 0 ? trie[node].zero : trie[node].one
            guard next >= 0 else { break }
            node = Int(next)
            depth += 1
        }
        return best
    }

    @inline(__always)
    static func bit(_ address: IPv6Address, _ i: Int) -> UInt64 {
        i < 64 ? address.high >> UInt64(63 - i) & 1 : address.low >> UInt64(127 - i) & 1
    }
}
