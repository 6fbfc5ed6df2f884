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

    public var isIPv6: Bool {
        if case .v6 = appAddress { return true }
        return false
    }

    /// `TCP 10.0.0.1.40000 > 93.184.216.34.80`, in tcpdump's address.port form.
    public var description: String {
        "\(transport) \(appAddress).\(appPort) > \(destinationAddress).\(destinationPort)"
    }
}
