public import Wire

/// An ICMP error that a network sent about one of Sluice's own upstream
/// datagrams (a UDP session's, a ping's), as the app is to hear it: the same
/// type and code when the app's flow is of the message's family, else the
/// nearest of the other family's (a fake IP's name reached over the other
/// family). Linux turns the code into the app's errno and decides by it
/// whether to report the error at all (a host unreachable only to sockets
/// with IP_RECVERR, an administratively prohibited to every connected one),
/// so keeping it keeps what the app would have seen without Sluice.
///
/// Only errors about the destination pass: fragmentation needed and packet
/// too big concern Sluice's socket's path (its kernel fragments for it), and
/// parameter problems and redirects are about Sluice's own packets.
public struct UpstreamICMPError: Sendable, Equatable, CustomStringConvertible {
    /// What an IPv4 app hears.
    public var v4: ICMPv4Message
    /// What an IPv6 app hears.
    public var v6: ICMPv6Message

    public init(v4: ICMPv4Message, v6: ICMPv6Message) {
        self.v4 = v4
        self.v6 = v6
    }

    /// From an error queue's entry; nil for a message that is not passed on.
    public init?(isICMPv6: Bool, type: UInt8, code: UInt8) {
        if isICMPv6 {
            switch (type, code) {
            case (ICMPv6Message.destinationUnreachableType, 0 ... 7):
                let v4Code: ICMPv4UnreachableCode
                switch code {
                case 0: v4Code = .network                      // no route to destination
                case 1, 5, 6: v4Code = .administrativelyProhibited // prohibited, failed policy, reject route
                case 4: v4Code = .port
                default: v4Code = .host                        // beyond scope, address unreachable, source routing
                }
                self.init(v4: .destinationUnreachable(code: v4Code), v6: .destinationUnreachable(code: ICMPv6UnreachableCode(rawValue: code)))
            case (ICMPv6Message.timeExceededType, 0 ... 1):
                self.init(v4: .timeExceeded(code: code), v6: .timeExceeded(code: code))
            default:
                return nil
            }
        } else {
            switch (type, code) {
            case (ICMPv4Message.destinationUnreachableType, ICMPv4UnreachableCode.fragmentationNeeded.rawValue):
                return nil
            case (ICMPv4Message.destinationUnreachableType, 0 ... 15):
                // RFC 792 and RFC 1812 §5.2.7.1's codes, to RFC 4443 §3.1's.
                let v6Code: ICMPv6UnreachableCode
                switch code {
                case 0, 6, 11: v6Code = .noRoute                        // net, net unknown, net for TOS
                case 2, 3: v6Code = .port                               // protocol, port
                case 9, 10, 13, 14, 15: v6Code = .administrativelyProhibited
                default: v6Code = .address                              // host and its kinds, source route failed
                }
                self.init(v4: .destinationUnreachable(code: ICMPv4UnreachableCode(rawValue: code)), v6: .destinationUnreachable(code: v6Code))
            case (ICMPv4Message.timeExceededType, 0 ... 1):
                self.init(v4: .timeExceeded(code: code), v6: .timeExceeded(code: code))
            default:
                return nil
            }
        }
    }

    /// What Sluice itself answers when its own socket failed (a connect with
    /// no route, a closed port reported on the next send).
    public init(_ reason: UnreachableReason) {
        switch reason {
        case .network: self.init(v4: .destinationUnreachable(code: .network), v6: .destinationUnreachable(code: .noRoute))
        case .host: self.init(v4: .destinationUnreachable(code: .host), v6: .destinationUnreachable(code: .address))
        case .port: self.init(v4: .destinationUnreachable(code: .port), v6: .destinationUnreachable(code: .port))
        case .administrativelyProhibited:
            self.init(v4: .destinationUnreachable(code: .administrativelyProhibited),
                      v6: .destinationUnreachable(code: .administrativelyProhibited))
        }
    }

    /// `net unreachable / destination unreachable, no route`
    public var description: String { "\(v4) / \(v6)" }
}
