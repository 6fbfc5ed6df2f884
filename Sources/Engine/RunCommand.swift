internal import Sys
internal import Stack
internal import Rules
internal import Capture

/// `sluice run --netns NAME|FILE` (or `--pid PID`): attaches Sluice to a
/// namespace that already exists, as root, or without root to a namespace of
/// the user's own (`UserNamespaceSetup.join`). Its traffic is relayed until Sluice is stopped; then the TUN (and
/// with it every address and route Sluice added) disappears.
public struct RunCommand {
    public struct Options: Sendable {
        /// The namespace to attach to; empty for whole-host mode (`--tun`).
        public var namespace: String
        public var wholeHost = false
        /// `--forward` (with --netns): ports Sluice listens on and connects to the namespace's.
        public var forwards: [PortForward] = []
        /// `--forward auto` (with --netns), as exec's.
        public var autoForward = false
        /// `--exclude` (with --tun): destinations that skip the TUN.
        public var excluded: [ExcludedPrefix] = []
        /// SO_MARK on Sluice's own sockets in whole-host mode; nil: the
        /// profile's routing-mark, else `RunCommand.defaultMark`.
        public var mark: UInt32?
        public var table: UInt32 = 2333
        public var rulePriority: UInt32 = 100
        /// The TUN's MTU; nil: the profile's mtu, else large for the same reason as exec's.
        public var mtu: Int?
        /// As exec's `--busy-poll`.
        public var busyPoll = ExecCommand.defaultBusyPoll
        /// `--dns`; nil: the mode's default, fake for --netns, off for --tun.
        public var dns: ExecCommand.DNSChoice?
        /// The profile (`--profile FILE`); nil: the built-in default, everything DIRECT.
        public var profile: String?
        /// `--pcap FILE` and friends.
        public var capture = CaptureOptions()
        /// The control API's socket (`--control PATH`, `--no-control`).
        public var control = ControlSocketOption.standard
        /// Where Sluice's CA for [MITM] lives (`--ca-dir`); nil: `InterceptionCA.defaultDirectory`.
        public var caDirectory: String?
        public init(namespace: String) { self.namespace = namespace }
    }

    public let options: Options

    public init(options: Options) { self.options = options }

    public static let defaultMark: UInt32 = 0x2333

    public func run(log: (String) -> Void) throws -> (status: Int32, statistics: TunnelStatistics) {
        // Without privilege, only a namespace file (a user's own namespace) can be joined, by a helper.
        let rootless = !options.wholeHost && NamespaceSetup.isFile(options.namespace) && EngineError.missingPrivileges() != nil
        if !rootless { try EngineError.requirePrivileges(for: "run") }
        let signals: SignalBox
        do { signals = SignalBox(try SignalFD([Signal.interrupt, Signal.terminate, Signal.hangup])) } catch {
            throw EngineError.system("signalfd", error)
        }
        let profile = try TunnelSession.loadProfile(options.profile)
        // A bad capture filter or path also stops Sluice before anything is created.
        let recorder = try options.capture.recorder(profile: profile)
        let flowLog = try options.capture.flowLogWriter()
        let har = try options.capture.harRecorder(profile: profile)
        let ca = try TunnelSession.interceptionCA(profile, directory: options.caDirectory, log: log)
        // A mistyped namespace is said before the control socket's line.
        if !options.wholeHost, !rootless { _ = try NamespaceSetup.openChecked(options.namespace) }
        let control = try ControlServer.start(options.control, log: log)
        defer { control?.stop() }
        // Each flow holds a socket (OpenFilesLimit says why the soft limit is not enough).
        OpenFilesLimit.raiseSoftToHard()
        if options.wholeHost {
            return try runWholeHost(signals: signals, profile: profile, ca: ca, recorder: recorder, flowLog: flowLog, har: har, control: control, log: log)
        }
        let (mtu, dns) = TunnelSession.settings(profile, mtu: options.mtu, dns: options.dns, defaultDNS: .fake)
        let raw: Int32, owners: FlowOwnerLookup?
        if rootless {
            let joined = try UserNamespaceSetup.join(for: "run", file: options.namespace, mtu: mtu)
            raw = joined.tun
            owners = FlowOwnerLookup.open(adopting: joined.diagnostics, namespaceFile: options.namespace, log: log)
        } else {
            raw = try NamespaceSetup.attach(to: options.namespace, mtu: mtu)
            owners = FlowOwnerLookup.open(namespace: options.namespace, log: log)
        }
        // `ip netns exec NAME` gives its commands /etc/netns/NAME/resolv.conf:
        // Sluice's DNS for them, unless the user already put a file there.
        // A namespace file has no such convention: its programs keep their resolver.
        var written: String?
        if dns != .off, NamespaceSetup.isFile(options.namespace) {
            log("sluice: the namespace's programs keep their resolver; point them at \(NamespaceSetup.dnsV4) or \(NamespaceSetup.dnsV6) "
                + "for Sluice's DNS (so that rules see names)")
        } else if dns != .off {
            let directory = "/etc/netns/\(options.namespace)"
            let path = directory + "/resolv.conf"
            let existing = Files.read(path).map { String(decoding: $0, as: UTF8.self) }
            // One a Sluice killed outright left (SIGKILL: no cleanup) is taken over, not kept for good.
            let stale = existing.map(Self.isStaleResolvConf) ?? false
            if existing == nil || stale {
                if stale { log("sluice: \(path) was left by a Sluice that is gone; replaced") }
                Files.makeDirectory("/etc/netns")
                Files.makeDirectory(directory)
                let header = "\(Self.resolvConfHeader)\(ProcessControl.currentID)); removed when it stops\n"
                if (try? Files.write(NamespaceSetup.resolvConf(header: header), to: path)) != nil {
                    written = path
                }
            } else {
                log("sluice: \(path) exists and is left alone: commands started with `ip netns exec \(options.namespace)` keep their resolver")
            }
        }
        defer {
            if let written {
                Files.remove(written)
                Files.removeDirectory("/etc/netns/\(options.namespace)")
            }
        }
        var configuration = TunnelSession.configuration(mtu: mtu, busyPoll: options.busyPoll, dns: dns, profile: profile, faults: nil, faultSeed: 1)
        configuration.interceptionCA = ca
        configuration.caDirectory = options.caDirectory
        let tunnel = try Tunnel(tun: TunDevice(adopting: raw, name: NamespaceSetup.tunName, virtioHeaderLength: NamespaceSetup.tunVirtioHeaderLength), configuration: configuration)
        tunnel.apply(profile, log: log)
        tunnel.useOwnerLookup(owners, log: log)
        tunnel.io.recorder = recorder
        tunnel.flowLog = flowLog
        tunnel.har = har
        try tunnel.listen(options.forwards)
        if options.autoForward { tunnel.forwardAutomatically(besides: options.forwards) }
        log("sluice: relaying namespace \(options.namespace) through \(NamespaceSetup.tunName); Ctrl-C stops")
        let status = try TunnelSession.run(tunnel, signals: signals, child: nil, profilePath: options.profile, control: control, log: log)
        return (status, tunnel.finalStatistics)
    }

    static let resolvConfHeader = "# written by sluice run (pid "

    /// A resolv.conf of `run`'s whose Sluice no longer runs: its pid is
    /// gone, or it predates the pid in the header (a live run holds the
    /// namespace's TUN, so no second run gets this far beside it).
    static func isStaleResolvConf(_ text: String) -> Bool {
        if text.hasPrefix("# written by sluice run; removed when it stops\n") { return true }
        guard text.hasPrefix(resolvConfHeader) else { return false }
        let digits = text.dropFirst(resolvConfHeader.count).prefix { $0.isNumber }
        guard let pid = Int32(digits) else { return false }
        return !NetworkNamespace.processExists(pid)
    }

    /// `sluice run --tun`: the namespace Sluice itself runs in goes through it.
    func runWholeHost(signals: SignalBox, profile: Profile?, ca: InterceptionCA?, recorder: PacketRecorder?, flowLog: FlowLogWriter?, har: HARRecorder?, control: ControlServer?,
                      log: (String) -> Void) throws -> (status: Int32, statistics: TunnelStatistics) {
        // Whole-host mode relays DNS unless --dns says otherwise (the profile's dns-mode does not switch it).
        let (mtu, dns) = TunnelSession.settings(profile, mtu: options.mtu, dns: options.dns, defaultDNS: .off)
        let mark = options.mark ?? profile?.general.routingMark ?? Self.defaultMark
        let raw = try NamespaceSetup.attachHost(mtu: mtu, mark: mark, table: options.table,
                                                priority: options.rulePriority, excluded: options.excluded)
        defer { NamespaceSetup.detachHost(table: options.table, priority: options.rulePriority, excluded: options.excluded) }
        // By default no DNS of Sluice's here: the host's resolver stays, and its
        // queries are relayed like any UDP. With --dns fake or forward, every
        // query that enters the TUN, to whatever server, is Sluice's to answer.
        var configuration = TunnelSession.configuration(mtu: mtu, busyPoll: options.busyPoll, dns: dns, profile: profile, faults: nil, faultSeed: 1)
        configuration.hijackDNS = dns != .off
        configuration.mark = mark
        configuration.tunInterfaceIndex = try? RouteSocket.interfaceIndex(named: NamespaceSetup.tunName)
        configuration.interceptionCA = ca
        configuration.caDirectory = options.caDirectory
        let tunnel = try Tunnel(tun: TunDevice(adopting: raw, name: NamespaceSetup.tunName, virtioHeaderLength: NamespaceSetup.tunVirtioHeaderLength), configuration: configuration)
        tunnel.apply(profile, log: log)
        tunnel.useOwnerLookup(FlowOwnerLookup.open(namespace: nil, log: log), log: log)
        tunnel.io.recorder = recorder
        tunnel.flowLog = flowLog
        tunnel.har = har
        var skipped = options.excluded.isEmpty ? "" : "; \(options.excluded.map(\.description).joined(separator: ", ")) excluded"
        if dns != .off { skipped += "; DNS queries to port 53 answered by Sluice (\(dns.rawValue))" }
        log("sluice: relaying this namespace's traffic through \(NamespaceSetup.tunName) (unmarked packets → table \(options.table); Sluice's own sockets carry mark 0x\(String(mark, radix: 16))\(skipped)); Ctrl-C stops")
        let status = try TunnelSession.run(tunnel, signals: signals, child: nil, profilePath: options.profile, control: control, log: log)
        return (status, tunnel.finalStatistics)
    }
}
