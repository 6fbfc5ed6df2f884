internal import Stack
internal import Sys
internal import Wire

/// Where a ping to a fake IP really goes. With fake-IP DNS (the default),
/// `ping host.test` pings an address of 198.18.0.0/15 or fd73:6c75:6963::/64
/// that only Sluice knows; its echo requests went out to that address as
/// they were, left the host towards its default route, and nothing answered.
/// Now, as for TCP and UDP, the name is resolved through the host's
/// resolvers (IPv4 first, then IPv6, whatever the ping's family: fake DNS
/// answers AAAA for every name, so `ping name` of an IPv4-only host pings a
/// fake IPv6 address), the requests go to the real address in its own
/// family, and the replies, which come from it, are written to the app as
/// replies from the fake address, in the app's family.
struct EchoRoute: Hashable {
    var address: IPAddress
    var identifier: UInt16
    var transport: IPProtocol
}

extension Tunnel {
    /// The address `key`'s echo requests go to, or nil: the name is being
    /// resolved (this request waits, the latest one only), or it has no
    /// address (the request is dropped and counted).
    func echoDestination(_ key: FlowKey, sequenceNumber: UInt16, payload: UnsafeRawBufferPointer) -> IPAddress? {
        guard dns?.pool.contains(key.destinationAddress) == true else { return key.destinationAddress }
        if let real = echoRealAddresses[key] { return real }
        guard pin(key), let name = dns!.pool.name(for: key.destinationAddress, now: now) else {
            // A fake IP nobody asked for (or one recycled since).
            trace("\(key): a ping to a fake IP with no name")
            io.statistics.upstreamErrors += 1
            return nil
        }
        trace("\(key): fake IP for \(name)")
        if let address = resolver.resolve(name, family: .v4, for: key, now: now) {
            return routeEcho(key, to: address)
        }
        echoAwaitingResolution[key] = (sequenceNumber, Array(payload))
        heldHopLimits[key] = appHopLimit
        return nil
    }

    /// The resolver answered for a ping that waits: its request goes now
    /// (no IPv4 address: IPv6 is asked first), or is dropped.
    func echoResolved(_ key: FlowKey, _ found: IPAddress?, type: DNSType) {
        guard let held = echoAwaitingResolution[key] else { return }
        var address = found
        if found == nil, type == .a, let name = dns?.pool.name(for: key.destinationAddress, now: now) {
            address = resolver.resolve(name, family: .v6, for: key, now: now)
            if address == nil, resolver.isPending(key) { return }
        }
        echoAwaitingResolution[key] = nil
        guard let address else {
            trace("\(key): fails: no address")
            io.statistics.upstreamErrors += 1
            return
        }
        _ = routeEcho(key, to: address)
        appHopLimit = heldHopLimits.removeValue(forKey: key) ?? 64
        held.payload.withUnsafeBytes { sendEcho(key, sequenceNumber: held.sequenceNumber, payload: $0) }
    }

    /// Remembers `key`'s real address both ways.
    private func routeEcho(_ key: FlowKey, to address: IPAddress) -> IPAddress {
        echoRealAddresses[key] = address
        echoFlowsByRealAddress[EchoRoute(address: address, identifier: key.appPort, transport: Self.echoTransport(to: address))] = key
        return address
    }

    /// ICMP for an IPv4 address, ICMPv6 for an IPv6 one.
    static func echoTransport(to address: IPAddress) -> IPProtocol {
        switch address {
        case .v4: .icmp
        case .v6: .icmpv6
        }
    }

    /// The flow ended: its route goes with it.
    func forgetEchoRoute(_ key: FlowKey) {
        echoAwaitingResolution[key] = nil
        guard let address = echoRealAddresses.removeValue(forKey: key) else { return }
        let route = EchoRoute(address: address, identifier: key.appPort, transport: Self.echoTransport(to: address))
        if echoFlowsByRealAddress[route] == key { echoFlowsByRealAddress[route] = nil }
    }
}
