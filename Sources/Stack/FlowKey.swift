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

    public var isIPv6: Bool {
        if case .v6 = appAddress { return true }
        return false
    }

    /// `TCP 10.0.0.1.40000 > 93.184.216.34.80`, in tcpdump's address.port form.
    public var description: String {
        "\(transport) \(appAddress).\(appPort) > \(destinationAddress).\(destinationPort)"
    }
}
