// NetworkNamespace exists so tests and the integration harness can build
// isolated networks (a TUN, addresses, routes) without touching the host's,
// and so Sluice can run inside one. Named namespaces follow `ip netns`'s
// conventions (a bind mount under /run/netns) so `ip -n NAME` sees ours.
import CShim
import Glibc

public struct NetworkNamespace: ~Copyable, Sendable {
    /// An open /proc/.../ns/net (or /run/netns/NAME) handle: holding it keeps the namespace alive.
    public let descriptor: FileDescriptor

    public static let runDirectory = "/run/netns"

    public static func path(named name: String) -> String { "\(runDirectory)/\(name)" }

    /// Opens the named namespace /run/netns/NAME.
    public init(named name: String) throws(Errno) {
        try Self.validate(name)
        descriptor = try FileDescriptor.open(Self.path(named: name), flags: O_RDONLY)
    }

    /// Opens the namespace whose file is `path` (/proc/PID/ns/net, or a bind
    /// mount of one elsewhere, as rootless container tools keep them).
    public init(file path: String) throws(Errno) {
        descriptor = try FileDescriptor.open(path, flags: O_RDONLY)
    }

    /// Opens the namespace process `pid` is in.
    public init(pid: Int32) throws(Errno) {
        descriptor = try FileDescriptor.open("/proc/\(pid)/ns/net", flags: O_RDONLY)
    }

    /// Whether the open file is a network namespace (NS_GET_NSTYPE, Linux
    /// 4.11), so that a folder or another kind of namespace given by mistake
    /// is named for what it is, not as setns's bare EINVAL.
    public var isNetworkNamespace: Bool {
        let nsGetType: UInt = 0xb703 // _IO(0xb7, 0x3)
        return cshim_ioctl_int(descriptor.rawValue, nsGetType, 0) == cshim_CLONE_NEWNET
    }

    /// The calling thread's namespace (not necessarily the process's main thread's).
    public static func current() throws(Errno) -> NetworkNamespace {
        NetworkNamespace(descriptor: try FileDescriptor.open("/proc/thread-self/ns/net", flags: O_RDONLY))
    }

    private init(descriptor: consuming FileDescriptor) {
        self.descriptor = descriptor
    }

    /// Moves the calling thread into this namespace (setns). Other threads,
    /// and processes already started, stay where they are.
    public func enter() throws(Errno) {
        let raw = descriptor.rawValue
        _ = try valueOrErrno { cshim_setns(raw, cshim_CLONE_NEWNET) }.get()
    }

    /// Runs `body` inside this namespace on a dedicated thread and returns
    /// its result; the calling thread never changes namespace. Throws what
    /// `body` throws, or the Errno of a failed setns.
    public func run<T>(_ body: () throws -> T) throws -> T {
        let raw = descriptor.rawValue
        var outcome: Result<T, any Error>?
        try DedicatedThread.run {
            if cshim_setns(raw, cshim_CLONE_NEWNET) != 0 {
                outcome = .failure(Errno.current)
                return
            }
            outcome = Result { try body() }
        }
        guard let outcome else { throw Errno.protocolError }
        return try outcome.get()
    }

    /// Creates an empty namespace NAME as `ip netns add` does: a fresh
    /// namespace is made on a throwaway thread (unshare) and kept alive by
    /// bind-mounting that thread's ns/net onto /run/netns/NAME.
    public static func create(named name: String) throws(Errno) {
        try validate(name)
        try prepareRunDirectory()
        let path = path(named: name)
        let placeholder = try valueOrErrno {
            cshim_open_mode(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0)
        }.get()
        Glibc.close(placeholder)
        var failure: Errno?
        do {
            try DedicatedThread.run {
                if cshim_unshare(cshim_CLONE_NEWNET) != 0 {
                    failure = .current
                    return
                }
                if mount("/proc/thread-self/ns/net", path, "none", UInt(MS_BIND), nil) != 0 {
                    failure = .current
                }
            }
        } catch {
            failure = error
        }
        if let failure {
            // Leave no placeholder behind for a later create to trip over.
            unlink(path)
            throw failure
        }
    }

    /// Removes NAME as `ip netns delete` does: detach the bind mount and
    /// unlink the file. The namespace itself dies when nothing (process,
    /// open descriptor, mount) holds it any more.
    public static func delete(named name: String) throws(Errno) {
        try validate(name)
        let path = path(named: name)
        if umount2(path, Int32(MNT_DETACH)) != 0 {
            let error = Errno.current
            // EINVAL: not a mount point (a half-created namespace); still unlink it.
            if error != .invalidArgument { throw error }
        }
        _ = try valueOrErrno { unlink(path) }.get()
    }

    /// Whether /run/netns/NAME exists.
    /// The names under /run/netns, as `ip netns list` shows them.
    public static func names() -> [String] {
        Files.names(in: runDirectory)
    }

    /// True while a process with this id exists.
    public static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    public static func exists(named name: String) -> Bool {
        access(path(named: name), F_OK) == 0
    }

    /// Names are single path components, as ip-netns(8) requires.
    private static func validate(_ name: String) throws(Errno) {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count < Int(NAME_MAX), name != ".", name != "..",
            !bytes.contains(UInt8(ascii: "/"))
        else { throw Errno.invalidArgument }
    }

    /// Makes /run/netns exist and be a shared mount, so a namespace mounted
    /// here later is also seen from other mount namespaces (`ip netns exec`
    /// creates one per command).
    private static func prepareRunDirectory() throws(Errno) {
        if mkdir(runDirectory, 0o755) != 0 {
            let error = Errno.current
            if error != .fileExists { throw error }
        }
        if mount("", runDirectory, "none", UInt(MS_SHARED | MS_REC), nil) == 0 { return }
        let error = Errno.current
        guard error == .invalidArgument else { throw error }
        // EINVAL: not a mount point yet. Bind it onto itself, then share it.
        _ = try valueOrErrno {
            mount(runDirectory, runDirectory, "none", UInt(MS_BIND | MS_REC), nil)
        }.get()
        _ = try valueOrErrno {
            mount("", runDirectory, "none", UInt(MS_SHARED | MS_REC), nil)
        }.get()
    }
}
