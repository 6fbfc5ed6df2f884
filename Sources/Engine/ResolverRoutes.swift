internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// Split DNS: the [Host] lines of the form `NAME = server:ADDRESS` (or
/// `server:system`), as the DNS servers that resolve those names. Consulted
/// only for names the [Host] table does not answer itself (DNSFakeServer
/// leaves a `.delegated` entry to us), so the most specific line for a name
/// decides whichever its form. Used wherever Sluice resolves or forwards a
/// name: DIRECT flows to fake IPs, forward mode's relayed queries, DNS over
/// TCP, `sluice proxy`'s targets.
struct ResolverRoutes {
    private var table = DNSNameTable<[SocketAddress]>()
    /// Every server a line names, so that answers from them are accepted.
    private(set) var servers: Set<SocketAddress> = []
    private(set) var isEmpty = true

    init() {}

    /// `system`: the host's own resolvers (/etc/resolv.conf).
    init(_ profile: Profile?, system: @autoclosure () -> [SocketAddress]) {
        guard let profile else { return }
        for entry in profile.hosts {
            guard case let .server(server) = entry.value, let pattern = DNSNamePattern(entry.name) else { continue }
            let addresses: [SocketAddress]
            switch server {
            case .system: addresses = system()
            case let .address(address, port): addresses = [SocketAddress(address.sysAddress, port: port)]
            }
            table.insert(pattern, addresses)
            servers.formUnion(addresses)
            isEmpty = false
        }
    }

    /// The servers for `name`, or nil when no `server:` line covers it.
    func servers(for name: DNSName) -> [SocketAddress]? {
        isEmpty ? nil : table.value(for: name)
    }

    func servers(for name: DNSNameView) -> [SocketAddress]? {
        isEmpty ? nil : table.value(for: name)
    }
}
