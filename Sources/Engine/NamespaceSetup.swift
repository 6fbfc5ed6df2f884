internal import Sys

/// A fresh network namespace whose default routes go into a TUN device that
/// Sluice reads: the setup shared by `sluice dump` and (issue #4) `sluice exec`.
/// Everything is done through rtnetlink from a thread inside the namespace;
/// the caller's thread never changes namespace.
struct NamespaceSetup {
    static let tunName = "sluice0"
    /// Every packet through our TUN carries a virtio_net_hdr, so that our TCP
    /// segments can leave their checksums to the app's kernel (TunSink).
    static let tunOptions: TunDevice.Options = .virtioNetHeader
    static let tunVirtioHeaderLength = VirtioNetHeader.length
    static let addressV4 = "10.233.0.1"
    static let prefixV4: UInt8 = 24
    static let addressV6 = "fd00:233::1"
    static let prefixV6: UInt8 = 64
    /// Sluice's DNS, inside the TUN's subnets.
    static let dnsV4 = "10.233.0.53"
    static let dnsV6 = "fd00:233::53"

    /// The resolv.conf Sluice gives its command or namespace: its own DNS,
    /// then the host's `search`, `domain` and `options` lines, so that short
    /// names (`search corp.example`) resolve as on the host: the search list
    /// is applied by the client's stub, never by a resolver.
    static func resolvConf(header: String, host: String? = Files.read("/etc/resolv.conf").map { String(decoding: $0, as: UTF8.self) }) -> String {
        var text = header + "nameserver \(dnsV4)\nnameserver \(dnsV6)\n"
        for line in (host ?? "").split(separator: "\n") {
            let first = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).first
            if first == "search" || first == "domain" || first == "options" { text += line + "\n" }
        }
        return text
    }

    /// With --host-loopback, the command reaches Sluice's 127.0.0.1 and ::1 here.
    static let gatewayV4 = "10.233.0.2"
    static let gatewayV6 = "fd00:233::2"

    let name: String
    let mtu: Int

    /// Removes what an earlier Sluice made and could not remove (it was
    /// killed with SIGKILL): namespaces named `sluice-exec-PID` or
    /// `sluice-dump-PID`, and exec's `/run/sluice/exec-PID.resolv.conf`,
    /// whose process is gone.
    static func removeStale() {
        for name in NetworkNamespace.names() where name.hasPrefix("sluice-exec-") || name.hasPrefix("sluice-dump-") {
            guard let pid = Int32(name.split(separator: "-").last ?? ""), !NetworkNamespace.processExists(pid) else { continue }
            try? NetworkNamespace.delete(named: name)
        }
        removeStaleResolvConfs(in: RunDirectory.root)
    }

    /// The resolv.conf files (and CA bundles) in `directory` of Sluices that are gone.
    static func removeStaleResolvConfs(in directory: String) {
        for name in Files.names(in: directory) where name.hasPrefix(resolvConfPrefix) {
            guard let suffix = [resolvConfSuffix, caBundleSuffix].first(where: { name.hasSuffix($0) }),
                  let pid = Int32(name.dropFirst(resolvConfPrefix.count).dropLast(suffix.count)),
                  !NetworkNamespace.processExists(pid) else { continue }
            Files.remove(directory + "/" + name)
        }
    }

    /// Where exec keeps the resolv.conf it bind-mounts for its command (in
    /// its `RunDirectory`): named by Sluice's pid, so that a later Sluice
    /// can tell a dead one's.
    static let resolvConfPrefix = "exec-"
    static let resolvConfSuffix = ".resolv.conf"
    static func execResolvConf(in directory: String, pid: Int32) -> String {
        directory + "/" + resolvConfPrefix + "\(pid)" + resolvConfSuffix
    }

    /// The CA bundle exec gives its command when the profile intercepts HTTPS.
    static let caBundleSuffix = ".ca-bundle.pem"
    static func execCABundle(in directory: String, pid: Int32) -> String {
        directory + "/" + resolvConfPrefix + "\(pid)" + caBundleSuffix
    }

    /// Creates the namespace; `remove()` deletes it.
    static func create(name: String, mtu: Int) throws(EngineError) -> NamespaceSetup {
        removeStale()
        do {
            try NetworkNamespace.create(named: name)
        } catch {
            throw EngineError.system("creating network namespace \(name)", error)
        }
        return NamespaceSetup(name: name, mtu: mtu)
    }

    /// Inside the namespace: loopback up, the TUN up with both addresses and
    /// default routes; then `command` (options for `sluice __launch`, which
    /// enters the namespace itself) started from the calling thread, so that
    /// the command can end with Sluice (PR_SET_PDEATHSIG watches the thread
    /// that started it). Returns the TUN's descriptor, the child, and the
    /// gate it waits at before it becomes the command.
    func configure(launching launchOptions: [String], command: [String]) throws -> (tun: Int32, child: ChildProcess, gate: CommandGate) {
        let namespace = try NetworkNamespace(named: name)
        let tun = try namespace.run { () throws -> Int32 in try openTun(routes: .defaultRoutes) }
        let ends: (ours: Int32, theirs: Int32)
        do { ends = try DescriptorChannel.pair() } catch {
            _ = FileDescriptor(rawValue: tun)
            throw EngineError.system("socketpair", error)
        }
        let gate = CommandGate(DescriptorChannel(adopting: ends.ours))
        // Only the child may hold its end: our closing ours must read there as "no go".
        let theirs = FileDescriptor(rawValue: ends.theirs)
        let launch = ["/proc/self/exe", "__launch", "--netns", NetworkNamespace.path(named: name), "--gated"] + launchOptions + ["--"] + command
        do { return (tun, try ChildProcess.spawn(launch, passing: theirs.rawValue), gate) } catch {
            _ = FileDescriptor(rawValue: tun)
            throw EngineError.system("starting \(command.joined(separator: " "))", error)
        }
    }

    /// Attaches to a namespace someone else made (`sluice run --netns`): the TUN
    /// and its addresses are added beside what is there, and its routes are the
    /// two halves of each address space (0.0.0.0/1 and 128.0.0.0/1, ::/1 and
    /// 8000::/1): more specific than any default route, so they win without
    /// replacing it, and they vanish with the TUN when Sluice exits.
    static func attach(to name: String, mtu: Int) throws -> Int32 {
        let namespace = try openChecked(name)
        let setup = NamespaceSetup(name: name, mtu: mtu)
        return try namespace.run { () throws -> Int32 in try setup.openTun(routes: .halves) }
    }

    /// `run --netns` takes a name (`ip netns`'s) or a namespace file: a path
    /// such as /proc/PID/ns/net (`--pid PID`), or a bind mount of one where
    /// rootless container tools keep theirs.
    static func isFile(_ name: String) -> Bool { name.contains("/") }

    /// The file behind a name or a path.
    static func file(of name: String) -> String { isFile(name) ? name : NetworkNamespace.path(named: name) }

    /// The namespace `run --netns` names, or an error that says what is wrong with the name.
    static func openChecked(_ name: String) throws(EngineError) -> NetworkNamespace {
        let namespace: NetworkNamespace
        do { namespace = try open(name) } catch {
            let hint = error == .noSuchFileOrDirectory && !isFile(name) ? "; `ip netns list` shows the names" : ""
            throw EngineError.system(what: "opening network namespace \(name)", detail: "\(error)\(hint)",
                                     needsPrivilege: error == .notPermitted || error == .permissionDenied)
        }
        guard namespace.isNetworkNamespace else {
            throw EngineError.usage("\(name) is not a network namespace: give an `ip netns list` name, a namespace file such as /proc/PID/ns/net, or --pid PID")
        }
        return namespace
    }

    static func open(_ name: String) throws(Errno) -> NetworkNamespace {
        isFile(name) ? try NetworkNamespace(file: name) : try NetworkNamespace(named: name)
    }

    /// Whole-host mode (`sluice run --tun`), in the namespace Sluice runs in:
    /// the TUN gets default routes in a table of its own, and one rule per
    /// family sends every *unmarked* packet to that table. Sluice's upstream
    /// sockets carry `mark`, miss the rule and use the main table, so nothing
    /// loops. `detachHost` removes the rules; the routes die with the TUN.
    /// `excluded` prefixes get a rule each, one priority ahead of Sluice's,
    /// that sends their packets to the main table instead.
    static func attachHost(mtu: Int, mark: UInt32, table: UInt32, priority: UInt32, excluded: [ExcludedPrefix] = []) throws -> Int32 {
        let setup = NamespaceSetup(name: "(this namespace)", mtu: mtu)
        let raw = try setup.openTun(routes: .table(table))
        do {
            var routes = try RouteSocket()
            // The very rule already there was left by a Sluice killed outright (SIGKILL:
            // no cleanup): with the TUN open, no other Sluice runs here, so it is ours
            // now, and goes when this one stops. It failed the run with a bare EEXIST.
            func add(_ rule: SysRule) throws(Errno) {
                do { try routes.addRule(rule) } catch where error == .fileExists {}
            }
            for prefix in excluded {
                try add(prefix.rule(priority: priority - 1))
            }
            for family in [SysIPAddress.Family.v4, .v6] {
                // mark 0 under a full mask: only packets without a mark.
                try add(SysRule(family: family, mark: 0, mask: 0xffff_ffff, table: table, priority: priority))
            }
        } catch {
            detachHost(table: table, priority: priority, excluded: excluded)
            _ = FileDescriptor(rawValue: raw) // closes the TUN, and its routes with it
            throw EngineError.system("adding the policy-routing rules", error)
        }
        _ = mark
        return raw
    }

    static func detachHost(table: UInt32, priority: UInt32, excluded: [ExcludedPrefix] = []) {
        guard var routes = try? RouteSocket() else { return }
        for family in [SysIPAddress.Family.v4, .v6] {
            try? routes.deleteRule(SysRule(family: family, mark: 0, mask: 0xffff_ffff, table: table, priority: priority))
        }
        for prefix in excluded {
            try? routes.deleteRule(prefix.rule(priority: priority - 1))
        }
    }

    enum RouteStyle { case defaultRoutes, halves, table(UInt32) }

    /// On the namespace's thread: the TUN, its addresses and routes, loopback up.
    func openTun(routes style: RouteStyle) throws -> Int32 {
        let tun: TunDevice
        do { tun = try TunDevice(name: Self.tunName, options: Self.tunOptions, virtioHeaderLength: Self.tunVirtioHeaderLength) } catch { throw EngineError.system("opening /dev/net/tun for \(Self.tunName)", error) }
        do {
            var routes = try RouteSocket()
            try routes.setLink(index: try RouteSocket.interfaceIndex(named: "lo"), up: true)
            let index = try RouteSocket.interfaceIndex(named: tun.name)
            try routes.setMTU(index: index, mtu: UInt32(mtu))
            // A TUN queues 500 packets by default; a burst (UDP at line rate) while the loop
            // is busy elsewhere should wait in the queue, not be dropped.
            try routes.setTransmitQueueLength(index: index, length: 4096)
            try routes.setLink(index: index, up: true)
            try routes.addAddress(SysIPAddress(Self.addressV4)!, prefixLength: Self.prefixV4, index: index)
            try routes.addAddress(SysIPAddress(Self.addressV6)!, prefixLength: Self.prefixV6, index: index)
            switch style {
            case .defaultRoutes:
                try routes.addRoute(.defaultRoute(.v4, outputInterface: index))
                try routes.addRoute(.defaultRoute(.v6, outputInterface: index))
            case let .table(table):
                try routes.addRoute(.defaultRoute(.v4, outputInterface: index, table: table))
                try routes.addRoute(.defaultRoute(.v6, outputInterface: index, table: table))
            case .halves:
                try routes.addRoute(SysRoute(destination: .v4(0), prefixLength: 1, outputInterface: index))
                try routes.addRoute(SysRoute(destination: .v4(0x8000_0000), prefixLength: 1, outputInterface: index))
                try routes.addRoute(SysRoute(destination: .v6(high: 0, low: 0), prefixLength: 1, outputInterface: index))
                try routes.addRoute(SysRoute(destination: .v6(high: 0x8000_0000_0000_0000, low: 0), prefixLength: 1, outputInterface: index))
            }
        } catch {
            throw EngineError.system("configuring \(Self.tunName) in \(name)", error)
        }
        return tun.releaseDescriptor()
    }

    func remove() {
        try? NetworkNamespace.delete(named: name)
    }
}

/// What goes wrong when the engine sets up, said so a user can act on it.
public enum EngineError: Error, CustomStringConvertible {
    /// A system call failed while doing `what`.
    case system(what: String, detail: String, needsPrivilege: Bool)
    case usage(String)
    /// A report that speaks for itself (a profile's `FILE:LINE: error:` lines).
    case report(String)

    public var isReport: Bool {
        if case .report = self { return true }
        return false
    }

    /// A usage error: the command line asked for something that cannot be (exit 2).
    public var isUsage: Bool {
        if case .usage = self { return true }
        return false
    }

    /// Stops `command` before it creates anything when this process cannot
    /// make namespaces and TUNs: without that, the first thing to fail would
    /// speak only of itself (the control socket under /run, say).
    static func requirePrivileges(for command: String) throws(EngineError) {
        guard let missing = missingPrivileges() else { return }
        throw .system(what: command, detail: "it makes a network namespace and a TUN, which needs root, or CAP_NET_ADMIN and "
                          + "CAP_SYS_ADMIN; this process lacks \(missing.joined(separator: " and ")) (try sudo)", needsPrivilege: false)
    }

    /// The capabilities this process lacks to make namespaces and TUNs
    /// itself; nil when it has them (or /proc cannot tell).
    static func missingPrivileges() -> [String]? {
        guard let capabilities = Capabilities.current() else { return nil }
        let missing = capabilities.missing([Capabilities.networkAdministration, Capabilities.systemAdministration])
        return missing.isEmpty ? nil : missing
    }

    static func system(_ what: String, _ error: any Error) -> EngineError {
        if let engine = error as? EngineError { return engine }
        let errno = error as? Errno
        return .system(what: what, detail: errno.map { "\($0)" } ?? "\(error)",
                       needsPrivilege: errno == .notPermitted || errno == .permissionDenied)
    }

    public var description: String {
        switch self {
        case let .system(what, detail, needsPrivilege):
            return "\(what): \(detail)" + (needsPrivilege ? "; Sluice needs root, or CAP_NET_ADMIN and CAP_SYS_ADMIN" : "")
        case let .usage(text), let .report(text):
            return text
        }
    }
}
