public import Wire

/// [General].
public struct GeneralSettings: Equatable, Sendable {
    public var logLevel: LogLevel
    public var dnsMode: DNSMode
    /// Resolvers for forward mode and for DIRECT flows; empty: the host's (also written `system`).
    public var dnsServers: [IPAddress]
    public var fakeIPRange: IPv4Prefix
    /// The TUN's MTU; nil: the command's default.
    public var mtu: Int?
    /// SO_MARK on Sluice's own upstream sockets (whole-host mode); nil: the command's default.
    public var routingMark: UInt32?
    /// The MaxMind DB file GEOIP rules look addresses up in (absolute), if any (ext).
    public var geoIPDatabase: String?
    /// The MaxMind DB file IP-ASN rules look addresses up in (absolute), if any (ext).
    public var asnDatabase: String?
    /// Surge's always-real-ip: names (exact, or `*.` wildcards) Sluice's DNS
    /// gives their real addresses instead of fake ones (games, VoIP, STUN).
    public var realIPNames: [String] = []
    /// Surge's ipv6: false answers AAAA questions with nothing, so apps use IPv4.
    public var ipv6 = true
    /// Surge's exclude-simple-hostnames: names of one label go to the host's
    /// resolvers (true, Sluice's default too) or get fake IPs like others.
    public var excludeSimpleHostnames = true
    /// Surge's proxy-test-url and test-timeout: health checks of fallback and
    /// url-test groups that give no url= or timeout= of their own.
    public var proxyTestURL: String?
    public var testTimeout: Int?
    /// Surge's socks5-listen and http-listen (`ADDRESS:PORT`): `sluice proxy`'s
    /// listeners when its command line names none.
    public var socksListen: String?
    public var httpListen: String?
    /// The largest body [Body Rewrite] holds to rewrite (ext; bytes).
    public var bodyRewriteLimit = BodyRewriter.defaultBodyLimit

    public static let defaultFakeIPRange = IPv4Prefix(network: IPv4Address(198, 18, 0, 0), length: 15)!

    public init(logLevel: LogLevel = .info, dnsMode: DNSMode = .fakeIP, dnsServers: [IPAddress] = [],
                fakeIPRange: IPv4Prefix = defaultFakeIPRange, mtu: Int? = nil, routingMark: UInt32? = nil) {
        self.logLevel = logLevel; self.dnsMode = dnsMode; self.dnsServers = dnsServers
        self.fakeIPRange = fakeIPRange; self.mtu = mtu; self.routingMark = routingMark
    }
}

public enum LogLevel: String, Equatable, Sendable, CaseIterable, Comparable {
    case error, warning, info, debug

    private var rank: Int {
        switch self {
        case .error: return 0
        case .warning: return 1
        case .info: return 2
        case .debug: return 3
        }
    }

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rank < b.rank }
}

public enum DNSMode: String, Equatable, Sendable, CaseIterable {
    /// Names get addresses from fake-ip-range, mapped back to names for the rules.
    case fakeIP = "fake-ip"
    /// Queries go to the resolvers; rules see names only from SNI, Host and [Host].
    case forward
}
