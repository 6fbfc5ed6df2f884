internal import Stack
internal import Sys
internal import Wire

/// `--forward auto`, as pasta's `-t auto` and `-u auto`: every TCP port a
/// program in the command's namespace listens on, and every UDP port one
/// serves on (bound, unconnected, below the ephemeral range where client
/// sockets get theirs), is forwarded from the same port on Sluice's
/// 127.0.0.1, while it does. Once a second the kernel's socket
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
    /// A UDP port at or above this is taken for a client's (Linux's
    /// ip_local_port_range starts here): not a server to forward.
    static let ephemeralUDP: UInt16 = 32768
    /// A port and whether it is UDP's.
    struct Port: Hashable, Comparable {
        var number: UInt16
        var udp: Bool
        static func < (a: Port, b: Port) -> Bool { (a.number, a.udp ? 1 : 0) < (b.number, b.udp ? 1 : 0) }
        var text: String { udp ? "\(number)/udp" : "\(number)" }
    }
    var nextScan: Instant
    /// App port → our listener's token.
    var listening: [Port: UInt64] = [:]
    var refused: Set<Port> = []
    /// The app ports explicit `--forward`s already take.
    let explicit: Set<Port>

    init(explicit: Set<Port>, now: Instant) {
        self.explicit = explicit
        nextScan = now
    }
}

extension Tunnel {
    /// Starts `--forward auto`: the first scan comes with the first timer.
    func forwardAutomatically(besides forwards: [PortForward]) {
        autoForward = AutoForward(explicit: Set(forwards.map { AutoForward.Port(number: $0.appPort, udp: $0.udp) }), now: now)
        if forwardAddresses == nil {
            forwardAddresses = (IPAddress(NamespaceSetup.addressV4)!, IPAddress(NamespaceSetup.gatewayV4)!)
        }
    }

    var autoForwardDeadline: Instant? { autoForward?.nextScan }

    func scanAutoForwards() {
        guard let auto = autoForward, let (app, gateway) = forwardAddresses else { return }
        auto.nextScan = now + AutoForward.interval
        guard let diagnostics = ownerLookup?.diagnostics else { return }
        var ports = Set<AutoForward.Port>()
        for family in [SysIPAddress.Family.v4, .v6] {
            if let entries = try? diagnostics.listeningTCPSockets(family: family) {
                for entry in entries where Self.reachableThroughTun(entry.localAddress) {
                    ports.insert(AutoForward.Port(number: entry.localPort, udp: false))
                }
            }
            if let entries = try? diagnostics.unconnectedUDPSockets(family: family) {
                for entry in entries where entry.localPort < AutoForward.ephemeralUDP && Self.reachableThroughTun(entry.localAddress) {
                    ports.insert(AutoForward.Port(number: entry.localPort, udp: true))
                }
            }
        }
        for (port, token) in auto.listening where !ports.contains(port) {
            closeForwardListener(token)
            auto.listening[port] = nil
            trace("--forward auto: the command stopped serving on \(port.text)")
        }
        auto.refused.formIntersection(ports)
        for port in ports.sorted() where auto.listening[port] == nil && !auto.refused.contains(port) && !auto.explicit.contains(port) {
            let forward = PortForward(host: "127.0.0.1", port: port.number, appPort: port.number, udp: port.udp)
            do {
                auto.listening[port] = try listen(forward, app: app, gateway: gateway)
                EngineLog.warning("--forward auto: 127.0.0.1:\(port.text) now reaches the command's port \(port.text)")
            } catch {
                auto.refused.insert(port)
                EngineLog.warning("--forward auto: the command serves on \(port.text), but 127.0.0.1:\(port.text) is taken here (\(error)); "
                                  + "give it another with --forward OTHER:\(port.text)")
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
