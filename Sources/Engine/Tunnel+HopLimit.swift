internal import Stack
internal import Sys
internal import Wire

/// The app's TTL (IPv4) or hop limit (IPv6) goes upstream with its datagram,
/// so that `traceroute`, `mtr` and `ping -t` work inside `sluice exec`: a
/// probe with TTL 1 expires at the first router past the host, whose time
/// exceeded comes back to the app as that router sent it
/// (Tunnel+UpstreamErrors.swift). Sluice itself is no hop, as a tunnel is
/// none. A socket's hop limit is set when it differs from the app's last
/// (once per session for most apps, which keep one), not per datagram.
/// For TCP, a SYN's TTL below the usual 64 is carried to its connect
/// (`traceroute -T`): a time exceeded about Sluice's SYN answers the app's
/// (`queuedConnectError`); the segments after it are Sluice's own.
extension Tunnel {
    /// Linux's default TTL and hop limit: a SYN with it needs nothing set.
    static let defaultHopLimit: UInt8 = 64

    static func hopLimit(of packet: IPPacketView) -> UInt8 {
        switch packet.network {
        case let .v4(ip): ip.timeToLive
        case let .v6(ip): ip.hopLimit
        }
    }

    func carryHopLimit(to flow: UDPFlow) {
        flow.socket.setHopLimit(appHopLimit)
        flow.hopLimit = appHopLimit
    }
}
