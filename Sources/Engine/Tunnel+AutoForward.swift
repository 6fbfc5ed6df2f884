internal import Stack
internal import Sys
internal import Wire

/// `--forward auto`, as pasta's `-t auto`: every TCP port a program in the
/// command's namespace listens on is forwarded from the same port on
/// Sluice's 127.0.0.1, while it listens. Once a second the kernel's socket
/// table is read in that namespace (through the owner lookup's sock_diag
/// socket: a dump of LISTEN sockets, both families); a new port gets a
/// `--forward PORT:PORT` listener, a port no longer listened on loses it
/// (connections already made go on). Only listeners reachable through the
/// TUN count: on every address, or on the command's own; one on its
/// loopback cannot be reached from outside its namespace. A port Sluice
/// cannot listen on here (in use) is said once, and tried again after the
/// command stops and starts listening on it again. Ports given with
/// `--forward` keep their own listeners.
final class AutoForward {
    static let interval: Duration = .seconds(1)
    var nextScan: Instant
    /// App port → our listener's token.
    var listening: [UInt16: UInt64] = [:]
    var refused: Set<UInt16> = []
    /// The app ports explicit `--forward`s already take.
    let explicit: Set<UInt16>

    init(explicit: Set<UInt16>, now: Instant) {
        self.explicit = explicit
        nextScan = now
    }
}

extension Tunnel {
    /// Starts `--forward auto`: the first scan comes with the first timer.
    func forwardAutomatically(besides forwards: [PortForward]) {
        autoForward = AutoForward(explicit: Set(forwards.filter { !$0.udp }.map(\.appPort)), now: now)
        if forwardAddresses == nil {
            forwardAddresses = (IPAddress(NamespaceSetup.addressV4)!, IPAddress(NamespaceSetup.gatewayV4)!)
        }
    }

    var autoForwardDeadline: Instant? { autoForward?.nextScan }

    func scanAutoForwards() {
        guard let auto = autoForward, let (app, gateway) = forwardAddresses else { return }
        auto.nextScan = now + AutoForward.interval
        guard let diagnostics = ownerLookup?.diagnostics else { return }
        var ports = Set<UInt16>()
        for family in [SysIPAddress.Family.v4, .v6] {
            guard let entries = try? diagnostics.listeningTCPSockets(family: family) else { continue }
            for entry in entries where Self.reachableThroughTun(entry.localAddress) { ports.insert(entry.localPort) }
        }
        for (port, token) in auto.listening where !ports.contains(port) {
            closeForwardListener(token)
            auto.listening[port] = nil
            trace("--forward auto: the command stopped listening on \(port)")
        }
        auto.refused.formIntersection(ports)
        for port in ports.sorted() where auto.listening[port] == nil && !auto.refused.contains(port) && !auto.explicit.contains(port) {
            let forward = PortForward(host: "127.0.0.1", port: port, appPort: port)
            do {
                auto.listening[port] = try listen(forward, app: app, gateway: gateway)
                EngineLog.warning("--forward auto: 127.0.0.1:\(port) now reaches the command's port \(port)")
            } catch {
                auto.refused.insert(port)
                EngineLog.warning("--forward auto: the command listens on \(port), but 127.0.0.1:\(port) is taken here (\(error)); "
                                  + "give it another with --forward OTHER:\(port)")
            }
        }
    }

    /// A listener the TUN leads to: on every address, or on the command's own.
    static func reachableThroughTun(_ address: SysIPAddress) -> Bool {
        switch address {
        case .anyV4, .anyV6: return true
        default:
            return address == IPAddress(NamespaceSetup.addressV4)!.sysAddress || address == IPAddress(NamespaceSetup.addressV6)!.sysAddress
                || address == SocketDiagnostics.mapped(IPAddress(NamespaceSetup.addressV4)!.sysAddress)
        }
    }
}
