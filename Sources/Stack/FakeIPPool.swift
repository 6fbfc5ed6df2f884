public import Wire

/// The two fake addresses of one name. Both come from the same offset into
/// their pools (198.18.0.5 goes with fd73:6c75:6963::5), so a name answers A
/// and AAAA consistently and either address finds the same mapping.
public struct FakeIPAddresses: Hashable, Sendable, CustomStringConvertible {
    public var v4: IPv4Address
    public var v6: IPv6Address

    @inlinable public init(v4: IPv4Address, v6: IPv6Address) { self.v4 = v4; self.v6 = v6 }

    public var description: String { "\(v4) \(v6)" }
}

/// Where fake addresses come from, which of them are never handed out, and
/// how long an unused mapping lives.
public struct FakeIPPoolConfiguration: Sendable, Equatable, CustomStringConvertible {
    /// The IPv4 range, 198.18.0.0/15 by default: RFC 2544's benchmarking block,
    /// which no real service uses, so a fake address never shadows a real one.
    public var network: IPv4Address
    public var prefixLength: Int
    /// The IPv6 /64 whose low 64 bits carry the same offset as the IPv4 address.
    /// fd73:6c75:6963::/64 by default: a ULA (RFC 4193) whose 40-bit global ID
    /// spells "sluic" in ASCII, unlikely to collide with a site's own ULA.
    public var v6Prefix: IPv6Address
    /// Addresses never handed out: the TUN's own address, the DNS address, the
    /// network and the last ("broadcast-like") address. Their IPv6 twins (same
    /// offset) are excluded with them.
    public var reserved: [IPv4Address]
    /// A mapping neither looked up nor pinned for this long is forgotten.
    public var idleLifetime: Duration

    public static let defaultNetwork = IPv4Address(198, 18, 0, 0)
    public static let defaultV6Prefix = IPv6Address(high: 0xfd73_6c75_6963_0000, low: 0)

    /// `reserved` nil means the network address, the next two (the gateway and
    /// the DNS server on the TUN) and the last address of the range.
    public init(network: IPv4Address = defaultNetwork, prefixLength: Int = 15,
                v6Prefix: IPv6Address = defaultV6Prefix, reserved: [IPv4Address]? = nil,
                idleLifetime: Duration = .seconds(3600)) {
        precondition((12 ... 30).contains(prefixLength), "a fake-IP pool is a /12 to a /30")
        let mask: UInt32 = ~0 << UInt32(32 - prefixLength)
        let base = network.value & mask
        self.network = IPv4Address(base)
        self.prefixLength = prefixLength
        self.v6Prefix = IPv6Address(high: v6Prefix.high, low: 0)
        self.reserved = reserved ?? [IPv4Address(base), IPv4Address(base + 1), IPv4Address(base + 2),
                                     IPv4Address(base | ~mask)]
        self.idleLifetime = idleLifetime
    }

    /// Addresses in the IPv4 range, reserved ones included.
    public var size: Int { 1 << (32 - prefixLength) }

    public var description: String {
        "\(network)/\(prefixLength) \(v6Prefix)/64 reserved \(reserved.map(\.description).joined(separator: ",")) idle \(idleLifetime)"
    }
}

/// One name and its fake addresses, for tests and status output.
public struct FakeIPMapping: Hashable, Sendable, CustomStringConvertible {
    public var name: DNSName
    public var addresses: FakeIPAddresses
    public var pinCount: Int
    public var lastUsed: Instant

    public var description: String {
        "\(name) \(addresses)\(pinCount > 0 ? " pinned \(pinCount)" : "") used \(lastUsed)"
    }
}

/// Names ↔ fake addresses, both ways, in bounded memory.
///
/// An address is handed out fresh (never used) while any remain, then from
/// the addresses of expired mappings, oldest first, and only then by taking
/// the least recently used unpinned mapping away from its name: each choice
/// delays reusing an address that an app might still have cached. A pinned
/// mapping (a flow to it is open) is never taken; when every address is
/// pinned, allocation fails and the DNS answer is SERVFAIL, which hurts no
/// open flow and makes the client retry.
///
/// Time only moves through the `now` arguments, which must not go backwards.
public struct FakeIPPool: Sendable, CustomStringConvertible {
    public struct Counters: Sendable, Equatable {
        /// Names given an address.
        public var allocated = 0
        /// Mappings taken away under pressure before they expired.
        public var recycled = 0
        /// Mappings forgotten after `idleLifetime` unused.
        public var expired = 0
        /// Allocations refused because every address was pinned.
        public var exhausted = 0
    }

    public let configuration: FakeIPPoolConfiguration
    /// How many names can hold an address at once: the range minus the reserved addresses.
    public let capacity: Int
    public private(set) var counters = Counters()

    private let size: Int
    private let reservedOffsets: Set<Int32>
    // Per offset, grown as fresh offsets are handed out; a reserved offset
    // keeps a nil name forever.
    private var names: [DNSName?] = []
    private var lastUsed: [Instant] = []
    private var pins: [Int32] = []
    // The LRU list of mapped, unpinned offsets: head most recent, tail least.
    private var newer: [Int32] = []
    private var older: [Int32] = []
    private var head: Int32 = -1
    private var tail: Int32 = -1
    private var offsetOfName: [DNSName: Int32] = [:]
    // Offsets of expired mappings, reused first in, first out.
    private var freed: [Int32] = []
    private var freedStart = 0

    public init(_ configuration: FakeIPPoolConfiguration = FakeIPPoolConfiguration()) {
        self.configuration = configuration
        size = configuration.size
        var reserved = Set<Int32>()
        for address in configuration.reserved {
            let offset = address.value &- configuration.network.value
            if offset < UInt32(size) { reserved.insert(Int32(offset)) }
        }
        reservedOffsets = reserved
        capacity = size - reserved.count
    }

    /// Mapped names, live or expired but not yet purged by a mutating call.
    public var count: Int { offsetOfName.count }

    // MARK: Allocation

    /// The fake addresses of `name` (case ignored, final dot or not), giving it
    /// some if it has none. Counts as a use. Nil when every address is pinned.
    public mutating func allocate(_ name: DNSName, now: Instant) -> FakeIPAddresses? {
        expire(now: now)
        if let offset = offsetOfName[name] {
            touch(offset, now: now)
            return addresses(at: offset)
        }
        guard let offset = takeOffset() else {
            counters.exhausted += 1
            return nil
        }
        let canonical = Self.canonical(name)
        names[Int(offset)] = canonical
        offsetOfName[canonical] = offset
        pins[Int(offset)] = 0
        lastUsed[Int(offset)] = now
        linkAtHead(offset)
        counters.allocated += 1
        return addresses(at: offset)
    }

    /// A fresh offset, else the oldest freed one, else the LRU mapping's, taken from its name.
    private mutating func takeOffset() -> Int32? {
        while names.count < size {
            let offset = Int32(names.count)
            names.append(nil)
            lastUsed.append(.zero)
            pins.append(0)
            newer.append(-1)
            older.append(-1)
            if !reservedOffsets.contains(offset) { return offset }
        }
        if freedStart < freed.count {
            let offset = freed[freedStart]
            freedStart += 1
            if freedStart > 64, freedStart * 2 > freed.count {
                freed.removeFirst(freedStart)
                freedStart = 0
            }
            return offset
        }
        guard tail >= 0 else { return nil }
        let victim = tail
        forget(victim)
        counters.recycled += 1
        return victim
    }

    // MARK: Lookups

    /// Forward lookup without counting as a use.
    public func addresses(for name: DNSName, now: Instant) -> FakeIPAddresses? {
        guard let offset = offsetOfName[name], isLive(offset, now: now) else { return nil }
        return addresses(at: offset)
    }

    /// Reverse lookup without counting as a use: the name behind a fake
    /// address of either family, nil for an address no live mapping holds.
    public func name(for address: IPAddress, now: Instant) -> DNSName? {
        guard let offset = mappedOffset(address), isLive(offset, now: now) else { return nil }
        return names[Int(offset)]
    }

    /// Reverse lookup that counts as a use, keeping the mapping alive.
    public mutating func lookup(_ address: IPAddress, now: Instant) -> DNSName? {
        expire(now: now)
        guard let offset = mappedOffset(address) else { return nil }
        touch(offset, now: now)
        return names[Int(offset)]
    }

    /// True when `address` lies in either pool (mapped or not, reserved or not):
    /// such an address never reaches the real network.
    public func contains(_ address: IPAddress) -> Bool {
        switch address {
        case let .v4(v4): return v4.value &- configuration.network.value < UInt32(size)
        case let .v6(v6): return v6.high == configuration.v6Prefix.high && v6.low < UInt64(size)
        }
    }

    // MARK: Pinning

    /// Marks a flow open to `address`: its mapping cannot be recycled or expire
    /// until the matching `unpin`. Returns the name, or nil (and pins nothing)
    /// when no live mapping holds the address.
    public mutating func pin(_ address: IPAddress, now: Instant) -> DNSName? {
        expire(now: now)
        guard let offset = mappedOffset(address) else { return nil }
        let i = Int(offset)
        if pins[i] == 0 { unlink(offset) }
        pins[i] &+= 1
        lastUsed[i] = now
        return names[i]
    }

    /// Ends one pin; the last one starts the idle clock. False when the
    /// address was not pinned.
    @discardableResult
    public mutating func unpin(_ address: IPAddress, now: Instant) -> Bool {
        guard let offset = mappedOffset(address), pins[Int(offset)] > 0 else { return false }
        let i = Int(offset)
        pins[i] -= 1
        if pins[i] == 0 {
            lastUsed[i] = now
            linkAtHead(offset)
        }
        return true
    }

    public func pinCount(of address: IPAddress) -> Int {
        guard let offset = mappedOffset(address) else { return 0 }
        return Int(pins[Int(offset)])
    }

    // MARK: Expiry

    /// Forgets unpinned mappings unused for `idleLifetime`; returns how many.
    /// Every mutating call does this first, so calling it is only needed to
    /// free memory while no queries arrive.
    @discardableResult
    public mutating func expire(now: Instant) -> Int {
        var count = 0
        // Bounded by the mappings there are, even if the list were ever corrupt.
        var budget = offsetOfName.count
        while tail >= 0, budget > 0, !isLive(tail, now: now) {
            budget -= 1
            let offset = tail
            forget(offset)
            freed.append(offset)
            counters.expired += 1
            count += 1
        }
        return count
    }

    /// Every mapped name, in offset order.
    public var mappings: [FakeIPMapping] {
        names.indices.compactMap { i in
            names[i].map {
                FakeIPMapping(name: $0, addresses: addresses(at: Int32(i)), pinCount: Int(pins[i]),
                              lastUsed: lastUsed[i])
            }
        }
    }

    /// `fake-ip 198.18.0.0/15: 3/131068 mapped, 1 pinned; allocated 5 recycled 0 expired 2 exhausted 0`
    public var description: String {
        let pinned = pins.reduce(0) { $0 + ($1 > 0 ? 1 : 0) }
        return "fake-ip \(configuration.network)/\(configuration.prefixLength): \(count)/\(capacity) mapped, "
            + "\(pinned) pinned; allocated \(counters.allocated) recycled \(counters.recycled) "
            + "expired \(counters.expired) exhausted \(counters.exhausted)"
    }

    // MARK: Internals

    private func isLive(_ offset: Int32, now: Instant) -> Bool {
        let i = Int(offset)
        return pins[i] > 0 || lastUsed[i] + configuration.idleLifetime > now
    }

    private func addresses(at offset: Int32) -> FakeIPAddresses {
        FakeIPAddresses(v4: IPv4Address(configuration.network.value &+ UInt32(offset)),
                        v6: IPv6Address(high: configuration.v6Prefix.high, low: UInt64(offset)))
    }

    /// The offset of `address` when a name is mapped there (live or not).
    private func mappedOffset(_ address: IPAddress) -> Int32? {
        guard contains(address) else { return nil }
        let offset: Int
        switch address {
        case let .v4(v4): offset = Int(v4.value &- configuration.network.value)
        case let .v6(v6): offset = Int(v6.low)
        }
        guard offset < names.count, names[offset] != nil else { return nil }
        return Int32(offset)
    }

    private mutating func touch(_ offset: Int32, now: Instant) {
        lastUsed[Int(offset)] = now
        if pins[Int(offset)] == 0 {
            unlink(offset)
            linkAtHead(offset)
        }
    }

    /// Removes the mapping at an unpinned offset.
    private mutating func forget(_ offset: Int32) {
        unlink(offset)
        if let name = names[Int(offset)] { offsetOfName[name] = nil }
        names[Int(offset)] = nil
    }

    private mutating func linkAtHead(_ offset: Int32) {
        let i = Int(offset)
        older[i] = head
        newer[i] = -1
        if head >= 0 { newer[Int(head)] = offset } else { tail = offset }
        head = offset
    }

    private mutating func unlink(_ offset: Int32) {
        let i = Int(offset)
        let before = newer[i], after = older[i]
        // An offset that is neither linked nor the only element has no neighbours and is not the head.
        guard before >= 0 || after >= 0 || head == offset else { return }
        if before >= 0 { older[Int(before)] = after } else { head = after }
        if after >= 0 { newer[Int(after)] = before } else { tail = before }
        newer[i] = -1
        older[i] = -1
    }

    /// ASCII lower case, so that logs and rules see one spelling whatever the
    /// app typed. A name with a "." or a non-ASCII byte inside a label (which
    /// dotted text cannot carry) keeps its spelling: lookups ignore case anyway.
    static func canonical(_ name: DNSName) -> DNSName {
        var text = ""
        var plain = true
        name.withLabels { labels in
            for label in labels {
                if !text.isEmpty { text.append(".") }
                for byte in label {
                    guard byte < 0x80, byte != UInt8(ascii: ".") else { plain = false; return }
                    let lower = byte >= 0x41 && byte <= 0x5a ? byte | 0x20 : byte
                    text.unicodeScalars.append(Unicode.Scalar(lower))
                }
            }
        }
        guard plain, let lowered = DNSName(text) else { return name }
        return lowered
    }
}
