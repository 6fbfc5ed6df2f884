public import Wire

/// Where `sluice proxy` may listen. A proxy without credentials on an address
/// other machines can reach is an open relay: anyone could send traffic out
/// as this host. Loopback is always fine; anything else needs credentials.
public enum ListenPolicy {
    public struct Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        public var address: IPAddress
        public var port: UInt16

        public var description: String {
            let shown = ProxyTarget(address, port: port)
            return "refusing to listen on \(shown) without authentication: anyone who can reach that address "
                + "could relay traffic through this machine (an open proxy). Listen on 127.0.0.1 or ::1, "
                + "or set a username and password."
        }
    }

    /// Throws when `address` is not loopback and no credentials are set.
    /// 0.0.0.0 and :: (every interface) are not loopback.
    public static func check(address: IPAddress, port: UInt16 = 0, authenticated: Bool) throws(Refusal) {
        if authenticated || isLoopback(address) { return }
        throw Refusal(address: address, port: port)
    }

    /// 127.0.0.0/8, ::1, and IPv4-mapped 127/8 (::ffff:127.x.y.z).
    public static func isLoopback(_ address: IPAddress) -> Bool {
        switch address {
        case let .v4(a):
            return a.value >> 24 == 127
        case let .v6(a):
            if a == .loopback { return true }
            return a.high == 0 && a.low >> 32 == 0xffff && (a.low >> 24) & 0xff == 127
        }
    }
}
