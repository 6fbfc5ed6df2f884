internal import Sys
internal import Stack

/// `sluice run --netns NAME`: attaches Sluice to a namespace that already
/// exists. Its traffic is relayed until Sluice is stopped; then the TUN (and
/// with it every address and route Sluice added) disappears.
public struct RunCommand {
    public struct Options: Sendable {
        public var namespace: String
        public var mtu = 1500
        public var dns: ExecCommand.DNSChoice = .fake
        public init(namespace: String) { self.namespace = namespace }
    }

    public let options: Options

    public init(options: Options) { self.options = options }

    public func run(log: (String) -> Void) throws -> (status: Int32, statistics: TunnelStatistics) {
        let signals: SignalBox
        do { signals = SignalBox(try SignalFD([Signal.interrupt, Signal.terminate, Signal.hangup])) } catch {
            throw EngineError.system("signalfd", error)
        }
        let raw = try NamespaceSetup.attach(to: options.namespace, mtu: options.mtu)
        // `ip netns exec NAME` gives its commands /etc/netns/NAME/resolv.conf:
        // Sluice's DNS for them, unless the user already put a file there.
        var written: String?
        if options.dns != .off {
            let directory = "/etc/netns/\(options.namespace)"
            let path = directory + "/resolv.conf"
            if Files.read(path) == nil {
                Files.makeDirectory("/etc/netns")
                Files.makeDirectory(directory)
                if (try? Files.write("# written by sluice run; removed when it stops\nnameserver \(NamespaceSetup.dnsV4)\nnameserver \(NamespaceSetup.dnsV6)\n", to: path)) != nil {
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
        let configuration = TunnelSession.configuration(mtu: options.mtu, dns: options.dns, faults: nil, faultSeed: 1)
        let tunnel = try Tunnel(tun: TunDevice(adopting: raw, name: NamespaceSetup.tunName), configuration: configuration)
        log("sluice: relaying namespace \(options.namespace) through \(NamespaceSetup.tunName); Ctrl-C stops")
        let status = try TunnelSession.run(tunnel, signals: signals, child: nil, log: log)
        return (status, tunnel.statistics)
    }
}
