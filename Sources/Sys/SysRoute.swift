// SysRoute and SysRule exist to describe, without Wire's types, the routing
// state Sluice installs: routes that send traffic into the TUN, and the
// fwmark rule that lets Sluice's own marked sockets bypass them.

/// A unicast route: `destination/prefixLength [via gateway] [dev outputInterface] table t [metric m]`.
public struct SysRoute: Sendable, Hashable {
    public var destination: SysIPAddress
    public var prefixLength: UInt8
    public var gateway: SysIPAddress?
    /// Interface index (RTA_OIF).
    public var outputInterface: UInt32?
    /// RT_TABLE_MAIN is 254.
    public var table: UInt32
    /// RTA_PRIORITY, which `ip route` prints as "metric".
    public var metric: UInt32?

    public static let mainTable: UInt32 = 254

    public init(
        destination: SysIPAddress,
        prefixLength: UInt8,
        gateway: SysIPAddress? = nil,
        outputInterface: UInt32? = nil,
        table: UInt32 = SysRoute.mainTable,
        metric: UInt32? = nil
    ) {
        self.destination = destination
        self.prefixLength = prefixLength
        self.gateway = gateway
        self.outputInterface = outputInterface
        self.table = table
        self.metric = metric
    }

    /// 0.0.0.0/0 or ::/0.
    public static func defaultRoute(
        _ family: SysIPAddress.Family,
        gateway: SysIPAddress? = nil,
        outputInterface: UInt32? = nil,
        table: UInt32 = SysRoute.mainTable
    ) -> SysRoute {
        let any: SysIPAddress = family == .v4 ? .anyV4 : .anyV6
        return SysRoute(
            destination: any, prefixLength: 0, gateway: gateway,
            outputInterface: outputInterface, table: table)
    }
}

extension SysRoute: CustomStringConvertible {
    /// In `ip route` order: `10.78.0.0/16 via 10.77.0.254 dev #5 table 100 metric 10`.
    public var description: String {
        var text = prefixLength == 0 ? "default" : "\(destination)/\(prefixLength)"
        if let gateway { text += " via \(gateway)" }
        if let outputInterface { text += " dev #\(outputInterface)" }
        if table != SysRoute.mainTable { text += " table \(table)" }
        if let metric { text += " metric \(metric)" }
        return text
    }
}

/// A policy-routing rule: packets carrying `mark` (under `mask`) look up `table`.
public struct SysRule: Sendable, Hashable {
    public var family: SysIPAddress.Family
    /// nil: packets are not selected by their mark.
    public var mark: UInt32?
    /// nil: the kernel's default, all 32 bits.
    public var mask: UInt32?
    /// `to ADDRESS/LENGTH`: packets for this prefix only.
    public var destination: SysIPAddress?
    public var destinationLength: UInt8 = 0
    public var table: UInt32
    public var priority: UInt32

    public init(family: SysIPAddress.Family, mark: UInt32, mask: UInt32? = nil, table: UInt32, priority: UInt32) {
        self.family = family
        self.mark = mark
        self.mask = mask
        self.table = table
        self.priority = priority
    }

    /// `ip rule add to ADDRESS/LENGTH lookup TABLE priority P`.
    public init(destination: SysIPAddress, length: UInt8, table: UInt32, priority: UInt32) {
        family = destination.family
        self.destination = destination
        destinationLength = length
        self.table = table
        self.priority = priority
    }

    /// The kernel's `main` table.
    public static let mainTable: UInt32 = 254
}

extension SysRule: CustomStringConvertible {
    /// As `ip rule` prints it: `1000: from all fwmark 0x77 lookup 100`.
    public var description: String {
        var text = "\(priority): from all"
        if let destination { text += " to \(destination)/\(destinationLength)" }
        if let mark {
            text += " fwmark 0x\(String(mark, radix: 16))"
            if let mask { text += "/0x\(String(mask, radix: 16))" }
        }
        return text + " lookup \(table == SysRule.mainTable ? "main" : "\(table)")"
    }
}
