// Errno exists so every syscall failure in Sluice is one typed, allocation-free
// value (`throws(Errno)`), printed with its symbolic name, instead of an Int32
// read from a thread-local at some later, wrong moment.
import CShim
import Glibc

public struct Errno: RawRepresentable, Error, Hashable, Sendable {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's errno right now.
    public static var current: Errno { Errno(rawValue: cshim_errno()) }

    /// EAGAIN, which on Linux is also EWOULDBLOCK: a non-blocking call has nothing to do.
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    public static let interrupted = Errno(rawValue: EINTR)
    public static let inProgress = Errno(rawValue: EINPROGRESS)
    public static let alreadyInProgress = Errno(rawValue: EALREADY)
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    public static let connectionAborted = Errno(rawValue: ECONNABORTED)
    public static let hostUnreachable = Errno(rawValue: EHOSTUNREACH)
    public static let networkUnreachable = Errno(rawValue: ENETUNREACH)
    public static let networkDown = Errno(rawValue: ENETDOWN)
    public static let timedOut = Errno(rawValue: ETIMEDOUT)
    public static let brokenPipe = Errno(rawValue: EPIPE)
    public static let notConnected = Errno(rawValue: ENOTCONN)
    public static let isConnected = Errno(rawValue: EISCONN)
    public static let addressInUse = Errno(rawValue: EADDRINUSE)
    public static let addressNotAvailable = Errno(rawValue: EADDRNOTAVAIL)
    public static let addressFamilyNotSupported = Errno(rawValue: EAFNOSUPPORT)
    public static let protocolNotSupported = Errno(rawValue: EPROTONOSUPPORT)
    public static let notSupported = Errno(rawValue: EOPNOTSUPP)
    public static let messageTooLong = Errno(rawValue: EMSGSIZE)
    public static let noBufferSpace = Errno(rawValue: ENOBUFS)
    public static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    public static let fileExists = Errno(rawValue: EEXIST)
    public static let notPermitted = Errno(rawValue: EPERM)
    public static let permissionDenied = Errno(rawValue: EACCES)
    public static let resourceBusy = Errno(rawValue: EBUSY)
    public static let invalidArgument = Errno(rawValue: EINVAL)
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    public static let noSuchDevice = Errno(rawValue: ENODEV)
    public static let noSuchDeviceOrAddress = Errno(rawValue: ENXIO)
    public static let noSuchProcess = Errno(rawValue: ESRCH)
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    /// ENFILE: the whole system's file table is full.
    public static let tooManyOpenFilesInSystem = Errno(rawValue: ENFILE)
    public static let noMemory = Errno(rawValue: ENOMEM)
    public static let badAddress = Errno(rawValue: EFAULT)
    public static let notADirectory = Errno(rawValue: ENOTDIR)
    /// ENOSPC: the disk (or /dev/full) is full; capture and log writers report it.
    public static let noSpace = Errno(rawValue: ENOSPC)
    /// EPROTO: the peer (here, the kernel over netlink) answered with something malformed.
    public static let protocolError = Errno(rawValue: EPROTO)
    /// ENAMETOOLONG: a Unix socket's path longer than sun_path holds.
    public static let nameTooLong = Errno(rawValue: ENAMETOOLONG)
}

extension Errno: CustomStringConvertible {
    /// `EBADF (Bad file descriptor)`: the name to grep for, the text to read.
    public var description: String {
        let message = String(cString: strerror(rawValue))
        guard let name = symbolicName else { return "errno \(rawValue) (\(message))" }
        return "\(name) (\(message))"
    }

    private var symbolicName: String? {
        switch rawValue {
        case EAGAIN: return "EAGAIN"
        case EINTR: return "EINTR"
        case EINPROGRESS: return "EINPROGRESS"
        case EALREADY: return "EALREADY"
        case ECONNREFUSED: return "ECONNREFUSED"
        case ECONNRESET: return "ECONNRESET"
        case ECONNABORTED: return "ECONNABORTED"
        case EHOSTUNREACH: return "EHOSTUNREACH"
        case ENETUNREACH: return "ENETUNREACH"
        case ENETDOWN: return "ENETDOWN"
        case ETIMEDOUT: return "ETIMEDOUT"
        case EPIPE: return "EPIPE"
        case ENOTCONN: return "ENOTCONN"
        case EISCONN: return "EISCONN"
        case EADDRINUSE: return "EADDRINUSE"
        case EADDRNOTAVAIL: return "EADDRNOTAVAIL"
        case EAFNOSUPPORT: return "EAFNOSUPPORT"
        case EPROTONOSUPPORT: return "EPROTONOSUPPORT"
        case EOPNOTSUPP: return "EOPNOTSUPP"
        case EMSGSIZE: return "EMSGSIZE"
        case ENOBUFS: return "ENOBUFS"
        case ENOENT: return "ENOENT"
        case EEXIST: return "EEXIST"
        case EPERM: return "EPERM"
        case EACCES: return "EACCES"
        case EBUSY: return "EBUSY"
        case EINVAL: return "EINVAL"
        case EBADF: return "EBADF"
        case ENODEV: return "ENODEV"
        case ENXIO: return "ENXIO"
        case ESRCH: return "ESRCH"
        case EMFILE: return "EMFILE"
        case ENFILE: return "ENFILE"
        case ENOMEM: return "ENOMEM"
        case EFAULT: return "EFAULT"
        case ENOTDIR: return "ENOTDIR"
        case ENOSPC: return "ENOSPC"
        case EPROTO: return "EPROTO"
        case ENAMETOOLONG: return "ENAMETOOLONG"
        default: return nil
        }
    }
}

/// The outcome of a syscall that did not fail: either its value, or "nothing
/// to do now" on a non-blocking descriptor. Real failures are thrown, so the
/// event loop's common case (`.wouldBlock`) is a plain enum test, not a catch.
public enum SysResult<Value> {
    case value(Value)
    case wouldBlock

    /// For calls where EAGAIN is as much a failure as any other errno.
    @inlinable
    public func get() throws(Errno) -> Value {
        switch self {
        case .value(let value): return value
        case .wouldBlock: throw Errno.wouldBlock
        }
    }
}

extension SysResult: Sendable where Value: Sendable {}
extension SysResult: Equatable where Value: Equatable {}

extension SysResult: CustomStringConvertible {
    public var description: String {
        switch self {
        case .value(let value): return "value(\(value))"
        case .wouldBlock: return "wouldBlock"
        }
    }
}

/// The one way Sys calls into the kernel. Runs `body` (a syscall returning -1
/// and setting errno on failure), retrying on EINTR so that signals never leak
/// out as spurious errors; EAGAIN comes back as `.wouldBlock`, any other errno
/// is thrown.
///
/// `retryOnInterrupt: false` is for close(2): on Linux the descriptor is
/// released even when close reports EINTR, so retrying could close a
/// descriptor another thread has just been given.
public func valueOrErrno<T: FixedWidthInteger>(
    retryOnInterrupt: Bool = true,
    _ body: () -> T
) throws(Errno) -> SysResult<T> {
    while true {
        let result = body()
        if result != -1 { return .value(result) }
        let errno = cshim_errno()
        if errno == EINTR && retryOnInterrupt { continue }
        if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
        throw Errno(rawValue: errno)
    }
}
