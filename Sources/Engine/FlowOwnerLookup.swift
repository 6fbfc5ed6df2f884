internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// Who opened a flow, for PROCESS-NAME, PROCESS-PATH and UID rules: the
/// kernel's socket table (sock_diag, in the apps' namespace) gives the
/// socket's owner and inode, and /proc the process that holds it. Asked once
/// per new TCP or UDP flow, and only while the profile has such a rule.
final class FlowOwnerLookup {
    private let diagnostics: SocketDiagnostics
    private var processes = ProcessTable()
    /// Flows asked about, and those whose socket or process was not found.
    private(set) var lookups = 0
    private(set) var unknown = 0

    init(diagnostics: SocketDiagnostics) { self.diagnostics = diagnostics }

    /// A lookup socket in the namespace named `name` (`sluice exec`, `run --netns`),
    /// or in Sluice's own with nil (`run --tun`); nil, with the reason logged, if
    /// the kernel refuses one: owner rules then match nothing.
    static func open(namespace name: String?, log: (String) -> Void) -> FlowOwnerLookup? {
        do {
            let diagnostics: SocketDiagnostics
            if let name {
                let namespace = try NetworkNamespace(named: name)
                diagnostics = try namespace.run { try SocketDiagnostics() }
            } else {
                diagnostics = try SocketDiagnostics()
            }
            return FlowOwnerLookup(diagnostics: diagnostics)
        } catch {
            log("sluice: warning: cannot open a sock_diag socket (\(error)): PROCESS-NAME, PROCESS-PATH and UID rules will match nothing")
            return nil
        }
    }

    /// A proxy's client: the socket bound to `client` and connected to `server`.
    func owner(client: SocketAddress, server: SocketAddress) -> FlowOwner? {
        lookups += 1
        // A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d; their sockets are IPv4.
        let entry = try? diagnostics.tcpSocket(local: Self.unmapped(client.address), localPort: client.port,
                                               remote: Self.unmapped(server.address), remotePort: server.port)
        return owner(entry)
    }

    static func unmapped(_ address: SysIPAddress) -> SysIPAddress {
        guard case let .v6(high, low) = address, high == 0, low >> 32 == 0xffff else { return address }
        return .v4(UInt32(truncatingIfNeeded: low))
    }

    func owner(of key: FlowKey) -> FlowOwner? {
        lookups += 1
        let app = key.appAddress.sysAddress
        let entry: SocketDiagnostics.Entry?
        switch key.transport {
        case .tcp:
            entry = try? diagnostics.tcpSocket(local: app, localPort: key.appPort,
                                               remote: key.destinationAddress.sysAddress, remotePort: key.destinationPort)
        case .udp:
            // An IPv6 socket may send to IPv4 addresses (v4-mapped): it is in the IPv6 table.
            entry = (try? diagnostics.udpSocket(family: app.family, local: app, localPort: key.appPort))
                ?? (app.family == .v4 ? try? diagnostics.udpSocket(family: .v6, local: app, localPort: key.appPort) : nil)
        default:
            entry = nil
        }
        return owner(entry)
    }

    private func owner(_ entry: SocketDiagnostics.Entry?) -> FlowOwner? {
        guard let entry else {
            unknown += 1
            return nil
        }
        var owner = FlowOwner(userID: entry.userID)
        if let process = processes.process(holdingSocket: entry.inode, userID: entry.userID) {
            owner.processID = process.id
            owner.processName = process.name
            owner.processPath = process.path
        } else {
            unknown += 1
        }
        return owner
    }
}
