internal import Relay
internal import Sys
internal import Wire

/// `sluice proxy --listen ADDR:PORT [--http-listen ADDR:PORT] [--profile FILE]
/// [--auth USER:PASS]`: local SOCKS5 and HTTP proxy servers whose clients
/// follow the profile's rules, as the tunnel's flows do. Loopback by default;
/// any other address needs --auth (no open relays).
public struct ProxyCommand {
    public struct Options: Sendable, Equatable {
        /// The SOCKS5 listener; nil: none.
        public var socksListen: String?
        /// The HTTP proxy listener; nil: none.
        public var httpListen: String?
        public var profile: String?
        /// Where Sluice's CA for [MITM] lives (`--ca-dir`); nil: `InterceptionCA.defaultDirectory`.
        public var caDirectory: String?
        /// `USER:PASS`, for both listeners.
        public var auth: String?
        /// `--har FILE [--har-body-limit BYTES]`: the HTTP listener's plain-HTTP exchanges.
        public var har: String?
        public var harBodyLimit: Int?
        /// `--flow-log FILE`: a JSON line per connection and per plain-HTTP request.
        public var flowLog: String?
        /// The control API's socket (`--control PATH`, `--no-control`), as for exec and run.
        public var control = ControlSocketOption.standard
        /// `--sniff`: tunnels to an address are answered first and decided on their first bytes.
        public var sniff = false
        /// Whether --listen or --http-listen was given; if not, the profile's
        /// socks5-listen and http-listen (Surge's keys) are the listeners, if any.
        public var listenersGiven = false

        public init(socksListen: String? = nil, httpListen: String? = nil, profile: String? = nil, auth: String? = nil) {
            self.socksListen = socksListen; self.httpListen = httpListen; self.profile = profile; self.auth = auth
        }
    }

    public static let defaultSOCKSListen = "127.0.0.1:1080"

    public let options: Options

    public init(options: Options) { self.options = options }

    /// The options from `proxy`'s arguments, or a usage message.
    public static func parse(_ arguments: ArraySlice<String>) -> Result<Options, UsageError> {
        var options = Options()
        var rest = arguments
        var given: Set<String> = []
        while let first = rest.popFirst() {
            guard given.insert(first).inserted || first == "--sniff" else {
                return .failure(UsageError("sluice proxy: \(first) is given twice; give it once"))
            }
            switch first {
            case "--no-control":
                options.control = .off
            case "--sniff":
                options.sniff = true
            case "--listen", "--http-listen", "--profile", "--auth", "--har", "--har-body-limit", "--flow-log", "--control", "--ca-dir":
                guard let value = rest.popFirst() else { return .failure(UsageError("sluice proxy: \(first) needs a value")) }
                switch first {
                case "--listen": options.socksListen = value; options.listenersGiven = true
                case "--http-listen": options.httpListen = value; options.listenersGiven = true
                case "--profile": options.profile = value
                case "--har": options.har = value
                case "--flow-log": options.flowLog = value
                case "--control": options.control = .path(value)
                case "--ca-dir": options.caDirectory = value
                case "--har-body-limit":
                    guard let n = Int(value), n >= 0 else {
                        return .failure(UsageError("sluice proxy: --har-body-limit wants a byte count; got '\(value)'"))
                    }
                    options.harBodyLimit = n
                default: options.auth = value
                }
            default:
                return .failure(UsageError("sluice proxy: unknown option '\(first)' (see sluice help)"))
            }
        }
        // What the command line names is checked here, so that a mistake is a usage error (exit 2).
        do throws(EngineError) {
            _ = try credentials(options.auth)
            let socks = try options.socksListen.map { text throws(EngineError) in try listenAddress(text, option: "--listen") }
            let http = try options.httpListen.map { text throws(EngineError) in try listenAddress(text, option: "--http-listen") }
            if let socks, let http, socks.0 == http.0 {
                return .failure(UsageError("sluice proxy: --listen and --http-listen are both \(options.socksListen ?? ""); give each listener its own port"))
            }
        } catch {
            return .failure(UsageError(error.description))
        }
        if options.socksListen == nil, options.httpListen == nil { options.socksListen = defaultSOCKSListen }
        return .success(options)
    }

    /// `127.0.0.1:1080` or `[::1]:1080` (an address, not a name: the listener binds it).
    static func listenAddress(_ text: String, option: String) throws(EngineError) -> (SocketAddress, IPAddress) {
        guard let target = ProxyTarget(authority: text) else {
            throw EngineError.report("sluice proxy: \(option) wants ADDRESS:PORT, such as 127.0.0.1:1080 or [::1]:1080; got '\(text)'")
        }
        switch target.host {
        case let .ipv4(a): return (SocketAddress(.v4(a.value), port: target.port), .v4(a))
        case let .ipv6(a): return (SocketAddress(.v6(high: a.high, low: a.low), port: target.port), .v6(a))
        case .domain:
            throw EngineError.report("sluice proxy: \(option) wants an address, not a name; got '\(text)'")
        }
    }

    static func credentials(_ text: String?) throws(EngineError) -> ProxyCredentials? {
        guard let text else { return nil }
        guard let colon = text.firstIndex(of: ":") else {
            throw EngineError.report("sluice proxy: --auth wants USER:PASS")
        }
        let credentials = ProxyCredentials(username: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
        guard credentials.fitsSOCKS5 else {
            throw EngineError.report("sluice proxy: --auth: the username and the password must each be 1 to 255 bytes")
        }
        return credentials
    }

    /// Runs until SIGINT or SIGTERM (SIGHUP reloads the profile); returns the summary.
    public func run(log: @escaping (String) -> Void) throws -> ProxyServerStatistics {
        var configuration = ProxyServer.Configuration()
        configuration.credentials = try Self.credentials(options.auth)
        configuration.sniffAddressTargets = options.sniff
        var shown: [String] = []
        let profile = try TunnelSession.loadProfile(options.profile)
        var listeners = [(options.socksListen, "--listen"), (options.httpListen, "--http-listen")]
        if !options.listenersGiven, let general = profile?.general, general.socksListen != nil || general.httpListen != nil {
            listeners = [(general.socksListen, "socks5-listen"), (general.httpListen, "http-listen")]
        }
        for (text, option) in listeners {
            guard let text else { continue }
            let (address, ip) = try Self.listenAddress(text, option: option)
            do { try ListenPolicy.check(address: ip, port: address.port, authenticated: configuration.credentials != nil) } catch {
                throw EngineError.report("sluice proxy: \(error)")
            }
            let isSOCKS = option == "--listen" || option == "socks5-listen"
            if isSOCKS { configuration.socksAddress = address } else { configuration.httpAddress = address }
            shown.append("\(isSOCKS ? "SOCKS5" : "HTTP") on \(address)")
        }
        configuration.resolvers = profile?.general.dnsServers ?? []
        configuration.interceptionCA = try TunnelSession.interceptionCA(profile, directory: options.caDirectory, log: log)
        configuration.caDirectory = options.caDirectory
        // Each client and each upstream connection holds a socket (see OpenFilesLimit).
        OpenFilesLimit.raiseSoftToHard()
        let signals: SignalBox
        do { signals = SignalBox(try SignalFD([Signal.interrupt, Signal.terminate, Signal.hangup])) } catch {
            throw EngineError.system("signalfd", error)
        }
        var capture = CaptureOptions()
        capture.har = options.har
        capture.harBodyLimit = options.harBodyLimit
        capture.flowLog = options.flowLog
        let har = try capture.harRecorder(profile: profile)
        let flowLog = try capture.flowLogWriter()
        let server = try ProxyServer(configuration: configuration, log: log)
        server.har = har
        server.flowLog = flowLog
        server.apply(profile, log: log)
        server.useOwnerLookup(FlowOwnerLookup.open(namespace: nil, log: log))
        try server.watch(rawDescriptor: signals.signals.descriptor.rawValue, token: ProxyServer.signalToken)
        // SIGHUP and POST /reload read the profile on a worker thread, as in the tunnel.
        var reloader: ProfileReloader?
        if let path = options.profile {
            do { reloader = try ProfileReloader(path: path) } catch { throw EngineError.system("eventfd", error) }
            try server.watch(rawDescriptor: reloader!.descriptor, token: ProxyServer.reloadToken)
        }
        let control = try ControlServer.start(options.control, log: log)
        defer { control?.stop() }
        let controlTarget = LoopControl(server, reloader: reloader)
        if let control {
            try server.watch(rawDescriptor: control.descriptor, token: ProxyServer.controlToken)
            // Connections keep their records (rule, route, age) only when someone can ask.
            server.controlWatching = true
            shown.append("control on \(control.path)")
        }
        server.note("sluice: proxy: \(shown.joined(separator: ", "))\(configuration.credentials == nil ? "" : " (authentication required)"); "
            + "rules from \(options.profile ?? "the built-in default (everything DIRECT)"); Ctrl-C stops")
        try server.run(handleOther: { token in
            switch token {
            case ProxyServer.controlToken:
                control?.serve(controlTarget)
            case ProxyServer.reloadToken:
                reloader?.deliver { outcome, generation in
                    let result = controlTarget.apply(outcome, generation: generation)
                    control?.finishReloads(generation: generation, result, target: controlTarget)
                }
            case ProxyServer.signalToken:
                guard let signal = try? signals.signals.next() else { break }
                if signal == Signal.hangup {
                    controlTarget.reloadOnSignal()
                } else {
                    server.note("sluice: signal \(signal): stopping")
                    return false
                }
            default:
                break
            }
            for line in controlTarget.takeLog() { log(line) }
            return true
        })
        server.closeAll()
        var statistics = server.statistics
        statistics.requestStatistics = server.director.statisticsSummary
        statistics.harSummary = har?.finish()
        statistics.flowLogSummary = flowLog.map { "\($0.close())" }
        return statistics
    }
}
