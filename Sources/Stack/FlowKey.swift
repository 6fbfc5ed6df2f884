public import Wire

/// A flow as the app sees it: its own address and port, the destination it
/// asked for, and the transport. IPv4 and IPv6 flows never collide because
/// the address enum carries the version.
public struct FlowKey: Hashable, Sendable, CustomStringConvertible {
    public var transport: IPProtocol
    /// The app's side (the packet's source on the way in).
    public var appAddress: IPAddress
    public var appPort: UInt16
    /// Where the app wants to go (the packet's destination on the way in).
    public var destinationAddress: IPAddress
    public var destinationPort: UInt16

    public init(transport: IPProtocol, appAddress: IPAddress, appPort: UInt16,
                destinationAddress: IPAddress, destinationPort: UInt16) {
        self.transport = transport
        self.appAddress = appAddress
        self.appPort = appPort
        self.destinationAddress = destinationAddress
        self.destinationPort = destinationPort
    }

    /// Every packet looks its flow up several times (the flow table, the
    /// engine's maps), so the key feeds the hasher two words for IPv4 instead
    /// of six fields one by one. Equality stays field by field.
    public func hash(into hasher: inout Hasher) {
        let ports = UInt64(appPort) << 32 | UInt64(destinationPort) << 16 | UInt64(transport.rawValue)
        switch (appAddress, destinationAddress) {
        case let (.v4(app), .v4(destination)):
            hasher.combine(UInt64(app.value) << 32 | UInt64(destination.value))
            hasher.combine(ports)
        case (.v4, .v6), (.v6, .v4), (.v6, .v6):
            hasher.combine(appAddress)
            hasher.combine(destinationAddress)
            hasher.combine(ports | 1 << 63)
        }
    }

    /// What Dictionary and Set actually call. The default goes through Hasher
    /// (SipHash-1-3, about 20 ns for this key), and a kept-alive request looks
    /// its flow up about ten times on its way through the engine; two or three
    /// rounds of a 64-bit multiply-xorshift mixer do the same job in a few ns.
    /// The seed is the table's own and enters the first round, so which keys
    /// collide differs from table to table, as with Hasher. (Only local apps
    /// choose flow keys, and the tables are bounded, so flooding one chain
    /// would hurt only the flooder.)
    public func _rawHashValue(seed: Int) -> Int {
        let ports = UInt64(appPort) << 32 | UInt64(destinationPort) << 16 | UInt64(transport.rawValue)
        var h = Self.mix(UInt64(UInt(bitPattern: seed)) ^ ports)
        switch (appAddress, destinationAddress) {
        case let (.v4(app), .v4(destination)):
            h = Self.mix(h ^ (UInt64(app.value) << 32 | UInt64(destination.value)))
        case (.v4, .v6), (.v6, .v4), (.v6, .v6):
            h = Self.mix(h ^ appAddress.hashSeed)
            h = Self.mix(h ^ destinationAddress.hashSeed)
        }
        return Int(truncatingIfNeeded: h)
    }

    /// A bijective 64-bit finalizer (two multiplies by odd constants, each
    /// followed by an xorshift), so every input bit reaches every output bit.
    @inline(__always)
    static func mix(_ x: UInt64) -> UInt64 {
        var z = (x ^ (x >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    public var isIPv6: Bool {
        if case .v6 = appAddress { return true }
        return false
    }

    /// `TCP 10.0.0.1.40000 > 93.184.216.34.80`, in tcpdump's address.port form.
    public var description: String {
        "\(transport) \(appAddress).\(appPort) > \(destinationAddress).\(destinationPort)"
    }
}
