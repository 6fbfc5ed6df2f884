// UserNamespace exists so that `sluice exec` runs without root, as
// slirp4netns and pasta do: in a user namespace of its own, an unprivileged
// process holds every capability over the network and mount namespaces it
// creates with it, enough to make a TUN, give it addresses and routes, and
// bind-mount a resolv.conf, while it stays an ordinary user towards the rest
// of the system.
internal import CShim
internal import Glibc

public enum UserNamespace {
    /// Moves the calling process into new user, network and mount namespaces
    /// (one unshare), in which its user and group map to themselves: files
    /// keep their owners, and the command started later runs as the same
    /// user. With `asRoot`, they map to root inside instead (as `unshare -r`
    /// and rootless containers do): the command started later is root there,
    /// with every capability over its namespaces and none beyond them. Until
    /// it execs, the process has every capability inside either way. The
    /// kernel allows this only to a single-threaded process (EINVAL
    /// otherwise); EPERM or ENOSPC: user namespaces are off for this user.
    public static func enterNew(asRoot: Bool = false) throws(Errno) {
        let uid = getuid(), gid = getgid()
        _ = try valueOrErrno { cshim_unshare(cshim_CLONE_NEWUSER | cshim_CLONE_NEWNET | cshim_CLONE_NEWNS) }.get()
        // setgroups must be denied before an unprivileged process may write its gid_map.
        try writeWhole("deny", to: "/proc/self/setgroups")
        try writeWhole("\(asRoot ? 0 : uid) \(uid) 1\n", to: "/proc/self/uid_map")
        try writeWhole("\(asRoot ? 0 : gid) \(gid) 1\n", to: "/proc/self/gid_map")
    }

    /// Moves the calling process into the network namespace at `file`
    /// (/proc/PID/ns/net, say) through the user namespace that owns it,
    /// where an unprivileged process has every capability only if that user
    /// namespace is its user's (it made it, or a process of its did).
    /// EPERM or EINVAL: the namespace is not this user's to join.
    /// Single-threaded processes only, as for `enterNew`.
    public static func join(networkNamespaceFile file: String) throws(Errno) {
        let network = try FileDescriptor.open(file, flags: O_RDONLY)
        let owner = FileDescriptor(rawValue: try valueOrErrno { cshim_owning_user_namespace(network.rawValue) }.get())
        _ = try valueOrErrno { cshim_setns(owner.rawValue, cshim_CLONE_NEWUSER) }.get()
        _ = try valueOrErrno { cshim_setns(network.rawValue, cshim_CLONE_NEWNET) }.get()
    }

    /// Lets the command's group open ICMP echo sockets (ping without
    /// CAP_NET_RAW, which an unprivileged command lacks here): a new network
    /// namespace starts with ping_group_range `1 0`, nobody.
    public static func allowPing() throws(Errno) {
        let gid = getgid()
        try writeWhole("\(gid) \(gid)\n", to: "/proc/sys/net/ipv4/ping_group_range")
    }

    /// These /proc files take one write(2) each: a map written in pieces is refused.
    private static func writeWhole(_ text: String, to path: String) throws(Errno) {
        let fd = try valueOrErrno { cshim_open(path, O_WRONLY | O_CLOEXEC) }.get()
        defer { close(fd) }
        let bytes = Array(text.utf8)
        let written = try valueOrErrno { bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } }.get()
        guard written == bytes.count else { throw Errno.invalidArgument }
    }
}
