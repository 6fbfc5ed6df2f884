internal import CShim
internal import Glibc

/// The few file operations the engine needs (resolver configuration, the
/// resolv.conf it gives a command), kept here so Sys stays the only layer
/// that talks to the kernel.
public enum Files {
    /// The names in a folder (without `.` and `..`); empty when it cannot be read.
    public static func names(in directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// The whole file, or nil when it cannot be read.
    public static func read(_ path: String, limit: Int = 1 << 20) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }
            bytes += chunk.prefix(n)
        }
        return bytes
    }

    /// Where the symbolic link `path` points (readlink(2)), or nil.
    public static func readLink(_ path: String) -> String? {
        var target = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let n = target.withUnsafeMutableBytes { readlink(path, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count) }
        guard n > 0 else { return nil }
        return String(decoding: target[0..<n], as: UTF8.self)
    }

    /// Writes `contents` to `path` (created with mode 0644, replaced if present).
    public static func write(_ contents: String, to path: String) throws(Errno) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Errno.current }
        defer { close(fd) }
        var remaining = Array(contents.utf8)[...]
        while !remaining.isEmpty {
            let n = remaining.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw Errno.current }
            remaining = remaining.dropFirst(n)
        }
    }

    public static func remove(_ path: String) { unlink(path) }

    /// Writes `bytes` to a new file at `path` that only this user may read
    /// (mode 0600); refuses (EEXIST) when something is already there, a
    /// symbolic link included, so a planted file is never written through.
    public static func createPrivate(_ bytes: [UInt8], at path: String) throws(Errno) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Errno.current }
        defer { close(fd) }
        var remaining = bytes[...]
        while !remaining.isEmpty {
            let n = remaining.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw Errno.current }
            remaining = remaining.dropFirst(n)
        }
        guard fsync(fd) == 0 else { throw Errno.current }
    }

    /// Whether `path` is a regular file (not a link) owned by this user that
    /// nobody else may write; with `secret`, that nobody else may read either.
    public static func isOwnFile(_ path: String, secret: Bool) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid() else { return false }
        return info.st_mode & (secret ? 0o077 : 0o022) == 0
    }

    /// Whether `path` is a directory (not a link) owned by this user that nobody else may write.
    public static func isOwnDirectory(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid() else { return false }
        return info.st_mode & 0o022 == 0
    }

    /// rename(2): atomically replaces `to` if it exists.
    public static func rename(_ from: String, to: String) throws(Errno) {
        _ = try valueOrErrno { Glibc.rename(from, to) }.get()
    }

    /// Whether this process may open `path` for reading and writing
    /// (access(2), by its real user and group).
    public static func isReadableAndWritable(_ path: String) -> Bool {
        access(path, R_OK | W_OK) == 0
    }

    /// Whether `path` names something (stat succeeds).
    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    public static func makeDirectory(_ path: String) {
        mkdir(path, 0o755)
    }

    /// Makes `path` a directory of this user's that nobody else may write
    /// (mode 0700 when made here) and says whether it is one: an existing
    /// path that is a symbolic link, someone else's, or writable by others
    /// is refused, since a shared folder such as /tmp lets anyone plant one.
    public static func makePrivateDirectory(_ path: String) -> Bool {
        _ = mkdir(path, 0o700)
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return false }
        return info.st_uid == geteuid() && info.st_mode & 0o022 == 0
    }

    /// Removes an empty directory; a directory with anything in it stays.
    public static func removeDirectory(_ path: String) {
        rmdir(path)
    }

    /// The process's working directory, so relative paths given on the command
    /// line can be made absolute before the working directory matters.
    public static func currentDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public enum Kind: Sendable { case file, directory, other }

    /// What is at `path` (following symbolic links), or nil when nothing is.
    public static func kind(of path: String) -> Kind? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFDIR: return .directory
        default: return .other
        }
    }
}

/// What `sluice exec` runs inside the command's namespace before the command
/// itself: a private mount namespace in which the command's /etc/resolv.conf
/// is Sluice's, so that only the command sees Sluice's DNS.
public enum Launcher {
    /// Does not return on success: the process becomes `command`, as the
    /// invoking user when Sluice was started through sudo (SUDO_UID/SUDO_GID),
    /// with the open-files soft limit Sluice had before it raised its own
    /// (`openFilesSoftLimit`; see `OpenFilesLimit`). In a user namespace of
    /// our own (`switchingToSudoUser` false) the process already is that user.
    /// `endingWithSluice`: the command gets SIGTERM when the thread that
    /// started this process ends (PR_SET_PDEATHSIG): only for a process that
    /// Sluice's main thread started, not one started from a thread that ends
    /// sooner (a thread that entered a namespace, say), whose end would stop
    /// the command at once.
    /// `caBundle`: a CA bundle with Sluice's interception CA in it, bound
    /// over the system's bundle and named by the variables TLS libraries
    /// and tools read, so the command trusts what Sluice intercepts.
    /// `gate`: a descriptor (a socket of a pair with Sluice) on which the
    /// command waits for one byte before it starts: Sluice sends it when its
    /// tunnel runs. Its end closing instead (Sluice failed to start) ends
    /// this process unstarted.
    public static func exec(networkNamespace: String? = nil, bindingResolvConf resolv: String?, caBundle: String? = nil,
                            openFilesSoftLimit: UInt64?, switchingToSudoUser: Bool = true, endingWithSluice: Bool = false,
                            gate: Int32? = nil, command: [String]) -> Never {
        let sluice = getppid()
        // The root path enters the command's network namespace here, in the
        // child, so that Sluice's main thread (not a thread that entered the
        // namespace and ends) is the parent PR_SET_PDEATHSIG watches.
        if let networkNamespace {
            let descriptor = open(networkNamespace, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { fail("opening \(networkNamespace)") }
            guard cshim_setns(descriptor, cshim_CLONE_NEWNET) == 0 else { fail("entering \(networkNamespace)") }
            Glibc.close(descriptor)
        }
        if resolv != nil || caBundle != nil {
            guard cshim_unshare(cshim_CLONE_NEWNS) == 0 else { fail("unshare(CLONE_NEWNS)") }
            // Keep our mounts to ourselves: the binds below must not reach the host.
            guard mount("none", "/", nil, UInt(MS_REC | MS_PRIVATE), nil) == 0 else { fail("making / private") }
        }
        if let resolv {
            guard mount(resolv, "/etc/resolv.conf", nil, UInt(MS_BIND), nil) == 0 else { fail("binding \(resolv) on /etc/resolv.conf") }
        }
        if let caBundle {
            // Programs that read the system's bundle (OpenSSL's default, GnuTLS's, Go's) find Sluice's CA in it.
            let system = "/etc/ssl/certs/ca-certificates.crt"
            if access(system, F_OK) == 0, mount(caBundle, system, nil, UInt(MS_BIND), nil) != 0 { fail("binding \(caBundle) on \(system)") }
            for name in ["SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO"] {
                setenv(name, caBundle, 1)
            }
        }
        if let openFilesSoftLimit {
            do { try OpenFilesLimit.setSoft(openFilesSoftLimit) } catch { fail("setrlimit(RLIMIT_NOFILE, \(openFilesSoftLimit))") }
        }
        // Started through sudo: the command runs as the user who typed it, not as root.
        if switchingToSudoUser, let uidText = getenv("SUDO_UID").map({ String(cString: $0) }), let uid = UInt32(uidText), uid != 0 {
            let gid = getenv("SUDO_GID").flatMap { UInt32(String(cString: $0)) } ?? uid
            if let user = getenv("SUDO_USER") {
                guard initgroups(user, gid) == 0 else { fail("initgroups") }
            } else {
                guard setgroups(0, nil) == 0 else { fail("setgroups") }
            }
            guard setgid(gid) == 0 else { fail("setgid(\(gid))") }
            guard setuid(uid) == 0 else { fail("setuid(\(uid))") }
        }
        // The command ends with Sluice, as it does when Sluice stops itself:
        // a Sluice killed outright (SIGKILL, the OOM killer) must not leave it
        // running in a namespace nothing relays. Set after the change of user,
        // which clears it; kept across exec for anything but set-user-ID binaries.
        if endingWithSluice {
            guard cshim_set_parent_death_signal(SIGTERM) == 0 else { fail("prctl(PR_SET_PDEATHSIG)") }
            if getppid() != sluice { Glibc.exit(128 + SIGTERM) }
        }
        if let gate {
            // Last, so that the command starts the moment the byte comes.
            var go: UInt8 = 0
            while true {
                let n = Glibc.read(gate, &go, 1)
                if n == 1 { break }
                if n < 0, errno == EINTR { continue }
                // Sluice says why it did not start; the command never ran.
                Glibc.exit(127)
            }
            Glibc.close(gate)
        }
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        execvp(command[0], &argv)
        // As shells, env and sudo say it: 127 for a command not found, 126 for one found but not runnable.
        let error = Errno.current
        fail("exec \(command[0])", status: error == .noSuchFileOrDirectory || error == Errno(rawValue: ENOTDIR) ? 127 : 126)
    }

    static func fail(_ what: String, status: Int32 = 127) -> Never {
        let message = "sluice: \(what): \(Errno.current)\n"
        _ = message.withCString { Glibc.write(2, $0, strlen($0)) }
        Glibc.exit(status)
    }
}
