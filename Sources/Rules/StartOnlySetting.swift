/// A profile setting that a running tunnel or proxy reads only when it
/// starts: the TUN's MTU and the fake-IP pool are made once, the capture
/// files are open, the listeners bound. A reload that changes one cannot
/// apply it, and saying nothing (as Sluice did until 2026-12-05) left a user
/// who had edited `[Capture] filter` looking at a capture that ignored it.
public enum StartOnlySetting: String, CaseIterable, Sendable, CustomStringConvertible {
    case dnsMode = "[General] dns-mode"
    case dnsServer = "[General] dns-server"
    case fakeIPRange = "[General] fake-ip-range"
    case mtu = "[General] mtu"
    case routingMark = "[General] routing-mark"
    case socksListen = "[General] socks5-listen"
    case httpListen = "[General] http-listen"
    case pcap = "[Capture] pcap"
    case perFlow = "[Capture] per-flow"
    case filter = "[Capture] filter"
    case snaplen = "[Capture] snaplen"
    case rotateSize = "[Capture] rotate-size"
    case rotateCount = "[Capture] rotate-count"
    case har = "[Capture] har"
    case harBodyLimit = "[Capture] har-body-limit"

    public var description: String { rawValue }

    /// What `exec` and `run` read only at start.
    public static let tunnel: [StartOnlySetting] = [
        .dnsMode, .dnsServer, .fakeIPRange, .mtu, .routingMark, .pcap, .perFlow, .filter, .snaplen, .rotateSize, .rotateCount,
        .har, .harBodyLimit,
    ]
    /// What `sluice proxy` reads only at start (it writes no pcap).
    public static let proxy: [StartOnlySetting] = [.dnsServer, .socksListen, .httpListen, .har, .harBodyLimit]

    func differs(_ old: Profile, _ new: Profile) -> Bool {
        switch self {
        case .dnsMode: old.general.dnsMode != new.general.dnsMode
        case .dnsServer: old.general.dnsServers != new.general.dnsServers
        case .fakeIPRange: old.general.fakeIPRange != new.general.fakeIPRange
        case .mtu: old.general.mtu != new.general.mtu
        case .routingMark: old.general.routingMark != new.general.routingMark
        case .socksListen: old.general.socksListen != new.general.socksListen
        case .httpListen: old.general.httpListen != new.general.httpListen
        case .pcap: old.capture.pcapPath != new.capture.pcapPath
        case .perFlow: old.capture.perFlowDirectory != new.capture.perFlowDirectory
        case .filter: old.capture.filter != new.capture.filter
        case .snaplen: old.capture.snapLength != new.capture.snapLength
        case .rotateSize: old.capture.rotateSize != new.capture.rotateSize
        case .rotateCount: old.capture.rotateCount != new.capture.rotateCount
        case .har: old.capture.harPath != new.capture.harPath
        case .harBodyLimit: old.capture.harBodyLimit != new.capture.harBodyLimit
        }
    }
}

extension Profile {
    /// The line a reload from `old` to this profile logs when it changed
    /// settings among `scope` that only a restart applies; nil when none.
    public func reloadNotice(from old: Profile, scope: [StartOnlySetting]) -> String? {
        let changed = scope.filter { $0.differs(old, self) }
        guard !changed.isEmpty else { return nil }
        let names = changed.map(\.rawValue).joined(separator: ", ")
        return "\(file): a reload does not apply \(names): \(changed.count == 1 ? "it is" : "they are") read only when Sluice starts"
    }
}
