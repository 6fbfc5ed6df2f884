// UnixSocket exists for Sluice's control API: a stream socket on a path in
// the file system, whose file mode and owner decide who may connect (the
// kernel checks write permission on the socket file at connect(2)).
internal import CShim
internal import Glibc

public struct UnixSocket: ~Copyable {
    public let descriptor: FileDescriptor

    init(adopting raw: Int32) {
        descriptor = FileDescriptor(rawValue: raw)
    }

    /// sun_path holds 108 bytes with its terminating NUL.
    public static let maximumPathLength = 107

    /// What `listen` found at the path before it.
    public enum PathState: Sendable, Equatable {
        /// Nothing there.
        case free
        /// A socket nobody listens on (left by a process that died): safe to replace.
        case stale
        /// A live server answers there.
        case inUse
        /// Something that is not a socket: never replaced.
        case notASocket
    }

    /// Probes `path` without changing anything.
    public static func state(of path: String) -> PathState {
        var info = stat()
        guard lstat(path, &info) == 0 else { return .free }
        guard info.st_mode & S_IFMT == S_IFSOCK else { return .notASocket }
        guard let probe = try? UnixSocket.connect(to: path, timeoutMilliseconds: 500) else { return .stale }
        _ = probe
        return .inUse
    }

    /// A non-blocking listening socket at `path` with exactly `mode` and
    /// `owner`, from the moment the path exists: it is bound under a
    /// temporary name, given its mode and owner, then renamed into place, so
    /// no other user ever sees it with looser permissions. A stale socket at
    /// `path` is replaced; a live one, or anything that is not a socket, is
    /// left alone (EADDRINUSE, EEXIST).
    public static func listen(at path: String, mode: UInt32 = 0o600, owner: (user: UInt32, group: UInt32)? = nil,
                              backlog: Int32 = 16) throws(Errno) -> UnixSocket {
        guard path.utf8.count <= maximumPathLength else { throw Errno.nameTooLong }
        switch state(of: path) {
        case .inUse: throw Errno.addressInUse
        case .notASocket: throw Errno.fileExists
        case .free, .stale: break
        }
        let temporary = path + ".\(getpid()).new"
        guard temporary.utf8.count <= maximumPathLength else { throw Errno.nameTooLong }
        _ = unlink(temporary)
        let socket = try make()
        let bound = withAddress(temporary) { sa, length in Glibc.bind(socket.descriptor.rawValue, sa, length) }
        guard bound == 0 else { throw Errno.current }
        do {
            _ = try valueOrErrno { chmod(temporary, mode_t(mode)) }.get()
            if let owner { _ = try valueOrErrno { chown(temporary, owner.user, owner.group) }.get() }
            _ = try valueOrErrno { Glibc.listen(socket.descriptor.rawValue, backlog) }.get()
            _ = try valueOrErrno { Glibc.rename(temporary, path) }.get()
        } catch {
            _ = unlink(temporary)
            throw error
        }
        return socket
    }

    /// A blocking connection to the server at `path`; reads and writes give
    /// up after `timeoutMilliseconds` (EAGAIN), so a stuck server cannot hang a client.
    /// EACCES means the socket's mode does not let this user in.
    public static func connect(to path: String, timeoutMilliseconds: Int = 5000) throws(Errno) -> UnixSocket {
        guard path.utf8.count <= maximumPathLength else { throw Errno.nameTooLong }
        let raw = try valueOrErrno { Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }.get()
        let socket = UnixSocket(adopting: raw)
        var limit = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        _ = setsockopt(raw, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(raw, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        _ = try valueOrErrno { withAddress(path) { sa, length in Glibc.connect(raw, sa, length) } }.get()
        return socket
    }

    /// Accepts one connection, non-blocking and close-on-exec; nil when none is waiting.
    public func accept() throws(Errno) -> UnixSocket? {
        let result = try valueOrErrno {
            cshim_accept4(descriptor.rawValue, nil, nil, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
        }
        guard case let .value(raw) = result else { return nil }
        return UnixSocket(adopting: raw)
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> SysResult<Int> {
        try descriptor.read(into: buffer)
    }

    /// MSG_NOSIGNAL: a client that went away is an EPIPE for its connection, not a SIGPIPE for Sluice.
    public func write(_ buffer: UnsafeRawBufferPointer) throws(Errno) -> SysResult<Int> {
        try valueOrErrno { Glibc.send(descriptor.rawValue, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Writes everything on a blocking socket (the client's side).
    public func writeAll(_ bytes: [UInt8]) throws(Errno) {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(Errno) in try write(UnsafeRawBufferPointer(rebasing: raw[offset...])).get() }
            }
            offset += try result.get()
        }
    }

    /// Reads until the peer closes or `limit` bytes arrived (the client's side).
    public func readToEnd(limit: Int) throws(Errno) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while bytes.count < limit {
            let result = chunk.withUnsafeMutableBytes { raw in Result { () throws(Errno) in try read(into: raw).get() } }
            let n = try result.get()
            if n == 0 { break }
            bytes += chunk.prefix(n)
        }
        return bytes
    }

    public func shutdownWrite() { _ = Glibc.shutdown(descriptor.rawValue, Int32(SHUT_WR)) }

    private static func make() throws(Errno) -> UnixSocket {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        return UnixSocket(adopting: try valueOrErrno { Glibc.socket(AF_UNIX, type, 0) }.get())
    }

    /// Runs `body` with a sockaddr_un for `path` (whose length the callers checked).
    private static func withAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.initializeMemory(as: UInt8.self, repeating: 0)
            for (i, byte) in path.utf8.prefix(maximumPathLength).enumerated() { raw[i] = byte }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}

extension Files {
    /// Removes `path` only if it is still the socket this process put there
    /// (same device and inode): a newer Sluice that took the path over keeps it.
    public static func removeSocket(_ path: String, identity: FileIdentity) {
        guard Files.identity(of: path) == identity else { return }
        _ = unlink(path)
    }

    /// Which file `path` names now (lstat's device and inode), or nil.
    public static func identity(of path: String) -> FileIdentity? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Makes a directory with `mode` if it is missing (mkdir(2) applies the umask, so the mode is set again).
    public static func makeDirectory(_ path: String, mode: UInt32) {
        if mkdir(path, mode_t(mode)) == 0 { _ = chmod(path, mode_t(mode)) }
    }
}

/// A file's identity: what stays the same across renames and differs between two files.
public struct FileIdentity: Sendable, Hashable {
    public var device: UInt64
    public var inode: UInt64
}
