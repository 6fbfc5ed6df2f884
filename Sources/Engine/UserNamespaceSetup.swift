internal import Sys

/// `sluice exec` and `sluice dump` without root, as slirp4netns and pasta
/// run: the command's namespace is made by a helper (`sluice __userns`, fd 3
/// its end of a `DescriptorChannel`) in a user namespace of its own, since
/// only a single-threaded process may create one. Inside, the helper holds
/// every capability over its new network and mount namespaces: it makes the
/// TUN with its addresses and routes (`NamespaceSetup.openTun`), lets the
/// command's group ping, opens a sock_diag socket for owner lookups, sends
/// both descriptors back, then becomes the command (`Launcher.exec`: the
/// resolv.conf bind, the open-files limit) once Sluice opens the channel
/// as its `CommandGate`. The command runs as the same user
/// and loses those capabilities at exec. Sluice stays in its own namespace
/// and relays from there as ever. Nothing needs removing afterwards: the
/// namespaces die with the command and the TUN's descriptor.
enum UserNamespaceSetup {
    /// What the helper hands back.
    struct Made {
        var tun: Int32
        /// A sock_diag socket in the command's namespace; nil if the kernel refused one there.
        var diagnostics: Int32?
        /// The command (the helper became it).
        var child: ChildProcess
        /// Starts the command (the helper waits on the channel for it).
        var gate: CommandGate
    }

    /// How long the helper may take to say it is ready.
    static let patienceMilliseconds: Int32 = 10_000

    /// The helper's end of the channel (`ChildProcess.spawn`'s `passing`).
    static let helperChannel: Int32 = 3

    /// Message kinds, the first byte of the helper's one message.
    static let readyByte = UInt8(ascii: "T")
    static let failedByte = UInt8(ascii: "E")

    /// Starts the helper, which runs `command` (an argv such as `__launch`'s
    /// arguments after its options) once its namespace is ready.
    static func start(for name: String, mtu: Int, resolv: String?, caBundle: String? = nil, openFilesSoftLimit: UInt64?, asRoot: Bool = false,
                      command: [String]) throws(EngineError) -> Made {
        var arguments = ["--mtu", "\(mtu)"]
        if asRoot { arguments += ["--root"] }
        if let resolv { arguments += ["--resolv", resolv] }
        if let caBundle { arguments += ["--ca-bundle", caBundle] }
        if let openFilesSoftLimit { arguments += ["--nofile", "\(openFilesSoftLimit)"] }
        return try launch(for: name, arguments + ["--"] + command)
    }

    /// `sluice run --netns FILE` without root: a helper joins the network
    /// namespace at `file` through the user namespace that owns it (the
    /// kernel lets it only when that is this user's: a rootless container's,
    /// or one made with `unshare --user --net`), adds the TUN there as `run`
    /// does as root (routes for both halves of each address space), hands
    /// it back with a sock_diag socket, and ends.
    static func join(for name: String, file: String, mtu: Int) throws(EngineError) -> (tun: Int32, diagnostics: Int32?) {
        let made = try launch(for: name, ["--join", file, "--mtu", "\(mtu)"])
        _ = try? made.child.wait()
        return (made.tun, made.diagnostics)
    }

    /// Spawns `sluice __userns ARGUMENTS` and waits for its one message.
    private static func launch(for name: String, _ helperArguments: [String]) throws(EngineError) -> Made {
        let ends: (ours: Int32, theirs: Int32)
        do { ends = try DescriptorChannel.pair() } catch { throw EngineError.system("socketpair", error) }
        let ours = DescriptorChannel(adopting: ends.ours)
        let theirs = FileDescriptor(rawValue: ends.theirs)
        let arguments = ["/proc/self/exe", "__userns"] + helperArguments
        let child: ChildProcess
        do { child = try ChildProcess.spawn(arguments, passing: theirs.rawValue) } catch {
            throw EngineError.system("\(name): starting the user-namespace helper", error)
        }
        // Only the helper may hold its end: its exit must read here as the end of the channel.
        _ = consume theirs
        let message: (bytes: [UInt8], descriptors: [Int32])
        do { message = try ours.receive(timeoutMilliseconds: patienceMilliseconds) } catch {
            child.terminate()
            throw EngineError.system("\(name): waiting for the user-namespace helper", error)
        }
        if message.bytes.first == readyByte, let tun = message.descriptors.first {
            return Made(tun: tun, diagnostics: message.descriptors.count > 1 ? message.descriptors[1] : nil, child: child, gate: CommandGate(ours))
        }
        for raw in message.descriptors { _ = FileDescriptor(rawValue: raw) }
        let said = message.bytes.first == failedByte ? String(decoding: message.bytes.dropFirst(), as: UTF8.self) : nil
        let exit = said == nil ? (try? child.wait()) : nil
        child.terminate()
        throw EngineError.system(what: name, detail: said ?? "the user-namespace helper ended without a word (\(exit.map { "\($0)" } ?? "still running"))",
                                 needsPrivilege: false)
    }

    /// The helper's side (`sluice __userns`); does not return.
    static func helper(mtu: Int, resolv: String?, caBundle: String?, openFilesSoftLimit: UInt64?, asRoot: Bool, command: [String]) -> Never {
        do { try UserNamespace.enterNew(asRoot: asRoot) } catch {
            switch error {
            case .notPermitted, .noSpace, .permissionDenied:
                fail("without root, sluice runs the command in a user namespace of its own, and this system refuses this user one "
                     + "(unshare: \(error)); allow them (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone=1, "
                     + "or the AppArmor policy that restricts them), or run sluice as root")
            default:
                fail("making a user namespace (unshare): \(error)")
            }
        }
        makeTun(in: "the command's user namespace", mtu: mtu, routes: .defaultRoutes)
        // Best effort: without it ping fails in the command as it would for this user anyway.
        try? UserNamespace.allowPing()
        Launcher.exec(bindingResolvConf: resolv, caBundle: caBundle, openFilesSoftLimit: openFilesSoftLimit, switchingToSudoUser: false,
                      endingWithSluice: true, gate: helperChannel, command: command)
    }

    /// The joining helper's side (`sluice __userns --join FILE`); does not return.
    static func joinHelper(file: String, mtu: Int) -> Never {
        do { try UserNamespace.join(networkNamespaceFile: file) } catch {
            switch error {
            case .notPermitted, .invalidArgument, .permissionDenied:
                fail("the network namespace \(file) is not this user's (its user namespace is another user's, or the host's), "
                     + "so only root can attach to it: run sluice as root")
            default:
                fail("joining the network namespace \(file): \(error)")
            }
        }
        makeTun(in: file, mtu: mtu, routes: .halves)
        ProcessControl.exit(0)
    }

    /// In the namespace just entered: the TUN with its addresses and `routes`,
    /// handed to Sluice with a sock_diag socket of the namespace; on failure
    /// the helper says why and ends.
    private static func makeTun(in name: String, mtu: Int, routes: NamespaceSetup.RouteStyle) {
        // The device's own permission first: the usual reason, and one with a known remedy.
        guard Files.isReadableAndWritable("/dev/net/tun") else { fail(explainTunDevice()) }
        let tun: Int32
        do { tun = try NamespaceSetup(name: name, mtu: mtu).openTun(routes: routes) } catch { fail("\(error)") }
        send(tun: tun)
    }

    /// Hands the TUN and a sock_diag socket of this namespace to Sluice.
    private static func send(tun: Int32) {
        let diagnostics = try? SocketDiagnostics()
        var passed = [tun]
        if let diagnostics { passed.append(diagnostics.descriptor.rawValue) }
        let channel = DescriptorChannel(adopting: helperChannel)
        do { try channel.send([readyByte], descriptors: passed) } catch { ProcessControl.exit(127) }
        // Still open: the command waits on it for Sluice's go (`CommandGate`).
        _ = channel.release()
        _ = FileDescriptor(rawValue: tun)
        _ = diagnostics
    }

    /// Tells Sluice what went wrong, and ends the helper.
    static func fail(_ text: String) -> Never {
        let channel = DescriptorChannel(adopting: helperChannel)
        try? channel.send([failedByte] + Array(text.utf8))
        ProcessControl.exit(127)
    }

    /// Why /dev/net/tun did not open for this user, and what to do.
    static func explainTunDevice() -> String {
        if !Files.exists("/dev/net/tun") {
            return "there is no /dev/net/tun (load the tun module: modprobe tun), so sluice cannot make its TUN"
        }
        return "/dev/net/tun is not open to this user, so without root sluice cannot make its TUN (Debian's udev "
            + "rule gives the device mode 0666; on this machine it has less): run sluice as root, or chmod 0666 /dev/net/tun"
    }
}

/// The CLI's door to the helper (`sluice __userns`).
public enum UserNamespaceHelper {
    public static func run(mtu: Int, resolv: String?, caBundle: String?, openFilesSoftLimit: UInt64?, asRoot: Bool, command: [String]) -> Never {
        UserNamespaceSetup.helper(mtu: mtu, resolv: resolv, caBundle: caBundle, openFilesSoftLimit: openFilesSoftLimit, asRoot: asRoot, command: command)
    }

    public static func join(file: String, mtu: Int) -> Never {
        UserNamespaceSetup.joinHelper(file: file, mtu: mtu)
    }
}
