internal import Sys
internal import Stack
internal import Wire
internal import Rules

/// `sluice exec`: runs a command in a fresh namespace whose traffic goes
/// through Sluice's TUN and is relayed from Sluice's own namespace, then exits
/// with the command's status and removes what it made, whatever way it ends.
public struct ExecCommand {
    /// `--busy-poll`'s default and its range, in µs.
    public static let defaultBusyPoll = 50
    public static let busyPollRange = 0 ... 1000

    /// `--busy-poll`'s value, or nil with `busyPollHint` to show.
    public static func parseBusyPoll(_ text: String?) -> Int? {
        guard let text, let micros = Int(text), busyPollRange.contains(micros) else { return nil }
        return micros
    }

    public static let busyPollHint = "--busy-poll wants microseconds from \(busyPollRange.lowerBound) to \(busyPollRange.upperBound) (0 never polls)"

    public struct Options: Sendable {
        public var command: [String]
        /// The TUN's MTU (`--mtu`); nil: the profile's mtu, else
        /// `TunnelSession.defaultMTU`, large as slirp4netns's is: the path
        /// beyond the TUN is Sluice's own sockets, so segments this size cost
        /// one system call each instead of forty, and the kernel's path MTU
        /// still governs the real link.
        public var mtu: Int?
        /// The longest the loop polls for events before it sleeps, in µs
        /// (`--busy-poll`); 0 never polls. The window adapts (BusyPollWindow):
        /// an idle tunnel sleeps as if this were 0.
        public var busyPoll = ExecCommand.defaultBusyPoll
        /// Seeded faults between the TUN and the stack (`--faults`), for testing.
        public var faults: String?
        public var faultSeed: UInt64 = 1
        /// `fake`: names get fake IPs, so rules see them; `forward`: queries
        /// go to the host's resolvers; `off`: CMD keeps the host's resolv.conf.
        /// nil: the profile's dns-mode (fake unless it says forward).
        public var dns: DNSChoice?
        /// Lets the command reach Sluice's loopback services at 10.233.0.2 / fd00:233::2.
        public var hostLoopback = false
        /// `--root`: CMD runs as root: Sluice's own root (not the user who
        /// typed sudo), or without root the root of CMD's user namespace,
        /// with every capability over CMD's namespace and none beyond it.
        public var commandAsRoot = false
        /// `--forward`: ports Sluice listens on and connects to the command's ports.
        public var forwards: [PortForward] = []
        /// `--forward auto`: every TCP port the command listens on, while it does (Tunnel+AutoForward.swift).
        public var autoForward = false
        /// The profile (`--profile FILE`); nil: the built-in default, everything DIRECT.
        public var profile: String?
        /// `--pcap FILE` and friends.
        public var capture = CaptureOptions()
        /// The control API's socket (`--control PATH`, `--no-control`).
        public var control = ControlSocketOption.standard
        /// Where Sluice's CA for [MITM] lives (`--ca-dir`); nil: `InterceptionCA.defaultDirectory`.
        public var caDirectory: String?
        public init(command: [String]) { self.command = command }
    }

    public enum DNSChoice: String, Sendable {
        case fake, forward, off
    }

    public let options: Options

    public init(options: Options) { self.options = options }

    /// Runs to completion and returns the command's exit status (128 + signal if it was killed).
    public func run(log: (String) -> Void) throws -> (status: Int32, statistics: TunnelStatistics) {
        guard !options.command.isEmpty else { throw EngineError.usage("sluice exec: no command given") }
        // Without the privilege to make namespaces, the command's is made in a user namespace.
        let rootless = EngineError.missingPrivileges() != nil
        let faults = try options.faults.map { text throws(EngineError) in try FaultSpec.parse(text) }
        // A bad profile stops Sluice before anything is created.
        let profile = try TunnelSession.loadProfile(options.profile)
        // A bad capture filter or path also stops Sluice before anything is created.
        let recorder = try options.capture.recorder(profile: profile)
        let flowLog = try options.capture.flowLogWriter()
        let har = try options.capture.harRecorder(profile: profile)
        let control = try ControlServer.start(options.control, log: log)
        defer { control?.stop() }
        let signals: SignalBox
        do { signals = SignalBox(try SignalFD([Signal.interrupt, Signal.terminate, Signal.hangup])) } catch {
            throw EngineError.system("signalfd", error)
        }
        let (mtu, dns) = TunnelSession.settings(profile, mtu: options.mtu, dns: options.dns, defaultDNS: .fake)
        // Each flow holds a socket: lift the soft open-files limit (CMD gets its own back).
        var openFilesSoftLimit: UInt64?
        if let before = OpenFilesLimit.raiseSoftToHard(), before.soft < before.hard { openFilesSoftLimit = before.soft }
        // CMD alone sees Sluice's DNS: a resolv.conf bind-mounted in a mount namespace of its own.
        var resolvPath: String?
        if dns != .off {
            guard let directory = RunDirectory.prepare() else {
                throw EngineError.report("sluice: error: exec: \(RunDirectory.path) is not a folder of this user's that only it may write "
                                         + "(for the command's resolv.conf); remove it, or set XDG_RUNTIME_DIR")
            }
            if rootless { NamespaceSetup.removeStaleResolvConfs(in: directory) }
            let path = NamespaceSetup.execResolvConf(in: directory, pid: ProcessControl.currentID)
            do {
                try Files.write(NamespaceSetup.resolvConf(header: "# written by sluice exec for its command\n"), to: path)
            } catch { throw EngineError.system("writing \(path)", error) }
            resolvPath = path
        }
        defer { if let resolvPath { Files.remove(resolvPath) } }
        // [MITM]: the command trusts Sluice's CA through a bundle of its own.
        let ca = try TunnelSession.interceptionCA(profile, directory: options.caDirectory, log: log)
        var caBundle: String?
        if let ca {
            guard let directory = RunDirectory.prepare() else {
                throw EngineError.report("sluice: error: exec: \(RunDirectory.path) is not a folder of this user's that only it may write "
                                         + "(for the command's CA bundle); remove it, or set XDG_RUNTIME_DIR")
            }
            let path = NamespaceSetup.execCABundle(in: directory, pid: ProcessControl.currentID)
            // What Sluice itself trusts (SSL_CERT_FILE, else the system's): a user's own
            // bundle stays trusted for the HTTPS Sluice does not intercept.
            let system = Files.read(Interception.trustStorePath, limit: 16 << 20).map { String(decoding: $0, as: UTF8.self) } ?? ""
            do {
                try Files.write(system + (system.hasSuffix("\n") || system.isEmpty ? "" : "\n") + "# Sluice's interception CA (\(ca.certificatePath))\n" + ca.pem, to: path)
            } catch { throw EngineError.system("writing \(path)", error) }
            caBundle = path
        }
        defer { if let caBundle { Files.remove(caBundle) } }
        var setup: NamespaceSetup?
        defer { setup?.remove() }
        let raw: Int32, child: ChildProcess, gate: CommandGate, owners: FlowOwnerLookup?
        if rootless {
            let made = try UserNamespaceSetup.start(for: "exec", mtu: mtu, resolv: resolvPath, caBundle: caBundle, openFilesSoftLimit: openFilesSoftLimit,
                                                    asRoot: options.commandAsRoot, command: options.command)
            (raw, child, gate) = (made.tun, made.child, made.gate)
            owners = FlowOwnerLookup.open(adopting: made.diagnostics, namespaceFile: "/proc/\(child.pid)/ns/net", log: log)
        } else {
            let made = try NamespaceSetup.create(name: "sluice-exec-\(ProcessControl.currentID)", mtu: mtu)
            setup = made
            var launch: [String] = []
            if let openFilesSoftLimit { launch += ["--nofile", "\(openFilesSoftLimit)"] }
            if let resolvPath { launch += ["--resolv", resolvPath] }
            if let caBundle { launch += ["--ca-bundle", caBundle] }
            if options.commandAsRoot { launch += ["--keep-root"] }
            (raw, child, gate) = try made.configure(launching: launch, command: options.command)
            owners = FlowOwnerLookup.open(namespace: made.name, log: log)
        }
        defer { child.terminate() }

        var configuration = TunnelSession.configuration(mtu: mtu, busyPoll: options.busyPoll, dns: dns, profile: profile,
                                                        faults: faults, faultSeed: options.faultSeed)
        configuration.interceptionCA = ca
        configuration.caDirectory = options.caDirectory
        if options.hostLoopback {
            configuration.hostLoopbackGateways = [IPAddress(NamespaceSetup.gatewayV4)!, IPAddress(NamespaceSetup.gatewayV6)!]
        }
        let tunnel = try Tunnel(tun: TunDevice(adopting: raw, name: NamespaceSetup.tunName, virtioHeaderLength: NamespaceSetup.tunVirtioHeaderLength), configuration: configuration)
        tunnel.apply(profile, log: log)
        tunnel.useOwnerLookup(owners, log: log)
        tunnel.io.recorder = recorder
        // Before CMD starts, so that its kernel leaves checksums to us from its first packet.
        tunnel.acceptChecksumOffload()
        tunnel.flowLog = flowLog
        tunnel.har = har
        try tunnel.listen(options.forwards)
        if options.autoForward { tunnel.forwardAutomatically(besides: options.forwards) }
        gate.open()
        let status = try TunnelSession.run(tunnel, signals: signals, child: child, profilePath: options.profile, control: control, log: log)
        return (status, tunnel.finalStatistics)
    }
}

/// The part of `exec` and `run` that is the same: the tunnel's configuration
/// and its loop, stopped by a signal or by the command's exit.
enum TunnelSession {
    static let signalToken: UInt64 = 4
    static let childToken: UInt64 = 5
    static let controlToken: UInt64 = 9
    static let reloadToken: UInt64 = 10

    /// The TUN's MTU (65520 unless --mtu or the profile's mtu says) and the DNS
    /// choice: the command line's, else the profile's dns-mode where the
    /// command's default is fake-IP (`forward` switches it), else the default.
    static func settings(_ profile: Profile?, mtu: Int?, dns: ExecCommand.DNSChoice?,
                         defaultDNS: ExecCommand.DNSChoice) -> (mtu: Int, dns: ExecCommand.DNSChoice) {
        var choice = dns ?? defaultDNS
        if dns == nil, defaultDNS == .fake, profile?.general.dnsMode == .forward { choice = .forward }
        return (mtu ?? profile?.general.mtu ?? defaultMTU, choice)
    }

    /// Large, as slirp4netns's (ExecCommand.Options.mtu says why).
    static let defaultMTU = 65520

    static func configuration(mtu: Int, busyPoll: Int, dns: ExecCommand.DNSChoice, profile: Profile?,
                              faults: FaultInjector.Plan?, faultSeed: UInt64) -> Tunnel.Configuration {
        var configuration = Tunnel.Configuration()
        configuration.tcp.tcp.maximumSegmentSize = mtu - 40
        configuration.mtu = mtu
        configuration.faults = faults
        configuration.faultSeed = faultSeed
        configuration.busyPollMicroseconds = busyPoll
        if dns != .off {
            configuration.dnsAddresses = [IPAddress(NamespaceSetup.dnsV4)!, IPAddress(NamespaceSetup.dnsV6)!]
            configuration.dns = FakeDNSConfiguration(mode: dns == .fake ? .fakeIP : .forward)
            if let range = profile?.general.fakeIPRange, range != GeneralSettings.defaultFakeIPRange {
                configuration.dns!.pool = FakeIPPoolConfiguration(network: range.network, prefixLength: range.length)
            }
        }
        // [General] dns-server: the resolvers for forward mode and DIRECT names (else the host's).
        configuration.resolvers = profile?.general.dnsServers ?? []
        return configuration
    }

    /// Sluice's CA when the profile has [MITM] hostnames (made on first use); nil otherwise.
    static func interceptionCA(_ profile: Profile?, directory: String?, log: (String) -> Void) throws(EngineError) -> InterceptionCA? {
        guard let profile, !profile.mitm.isEmpty else { return nil }
        do {
            let ca = try InterceptionCA.load(directory: directory ?? InterceptionCA.defaultDirectory, create: true)
            if ca.created {
                log("sluice: made a CA for [MITM] at \(ca.certificatePath) (SHA-256 \(ca.fingerprint)); "
                    + "`sluice exec` gives it to its command; `sluice ca` says how to trust it elsewhere")
            }
            return ca
        } catch {
            throw EngineError.report("sluice: error: [MITM]: \(error)")
        }
    }

    /// Reads the profile named on the command line; nil without one.
    static func loadProfile(_ path: String?) throws(EngineError) -> Profile? {
        guard let path else { return nil }
        do { return try ProfileLoader.loadForRun(path) } catch {
            throw EngineError.report(error.description + "\nsluice: the profile has errors; nothing was started")
        }
    }

    /// Runs the loop; returns the command's status (or 128 + the stop signal).
    static func run(_ tunnel: Tunnel, signals: SignalBox, child: ChildProcess?, profilePath: String?,
                    control: ControlServer? = nil, log: (String) -> Void) throws -> Int32 {
        try tunnel.watch(rawDescriptor: signals.signals.descriptor.rawValue, token: signalToken)
        // SIGHUP and POST /reload read the profile on a worker thread (ProfileReloader).
        var reloader: ProfileReloader?
        if let profilePath {
            do { reloader = try ProfileReloader(path: profilePath) } catch { throw EngineError.system("eventfd", error) }
            try tunnel.watch(rawDescriptor: reloader!.descriptor, token: reloadToken)
        }
        // The control API answers from this thread, between the tunnel's events.
        let controlTarget = LoopControl(tunnel, reloader: reloader)
        if let control {
            try tunnel.watch(rawDescriptor: control.descriptor, token: controlToken)
            // Per-flow bytes are counted only when someone can ask for them.
            tunnel.controlWatching = true
        }
        // Kept alive (open) for the whole loop: the pidfd the loop watches.
        var exitWatch: DescriptorBox?
        if let child {
            let watch: FileDescriptor
            do { watch = try child.exitDescriptor() } catch { throw EngineError.system("pidfd_open", error) }
            try tunnel.watch(rawDescriptor: watch.rawValue, token: childToken)
            exitWatch = DescriptorBox(watch)
        }
        var status: Int32?
        var stopping = false
        var passedCtrlC = false
        try tunnel.run(handleOther: { token in
            switch token {
            case signalToken:
                guard let delivery = try? signals.signals.nextDelivery() else { return true }
                let signal = delivery.signal
                if signal == Signal.interrupt, delivery.fromKernel, let child, child.sharesOurProcessGroup {
                    // A terminal's Ctrl-C went to CMD as well (one foreground process
                    // group): CMD decides, as under sudo. A command that stops on it
                    // ends the session with its status; an interactive shell, which
                    // ignores it, keeps its tunnel. `kill -INT` (SI_USER) still stops Sluice.
                    if !passedCtrlC {
                        passedCtrlC = true
                        if EngineLog.verbose { log("sluice: debug: Ctrl-C is CMD's to handle; Sluice stops when CMD exits (or on SIGTERM)") }
                    }
                    return true
                }
                if signal == Signal.hangup {
                    controlTarget.reloadOnSignal()
                    for line in controlTarget.takeLog() { log(line) }
                    return true
                }
                log("sluice: signal \(signal): stopping")
                child?.signal(Signal.terminate)
                status = 128 + signal
                stopping = true
                return false
            case controlToken:
                control?.serve(controlTarget)
                for line in controlTarget.takeLog() { log(line) }
                return true
            case reloadToken:
                reloader?.deliver { outcome, generation in
                    let result = controlTarget.apply(outcome, generation: generation)
                    control?.finishReloads(generation: generation, result, target: controlTarget)
                }
                for line in controlTarget.takeLog() { log(line) }
                return true
            case childToken:
                if let exit = try? child?.poll() {
                    status = exit.shellStatus
                    stopping = true
                    return false
                }
                return true
            default:
                return true
            }
        }, shouldStop: { stopping })
        tunnel.closeAll()
        if status == nil, let child, let exit = try? child.wait() { status = exit.shellStatus }
        _ = exitWatch
        return status ?? 0
    }
}

/// Owns a descriptor where an optional needs a reference.
final class DescriptorBox {
    let descriptor: FileDescriptor
    init(_ descriptor: consuming FileDescriptor) { self.descriptor = descriptor }
}

/// Holds the signalfd where a closure can reach it (closures cannot capture
/// a non-copyable value).
final class SignalBox {
    let signals: SignalFD
    init(_ signals: consuming SignalFD) { self.signals = signals }
}
