// EventFD exists so another thread (or a signal handler's proxy) can wake the
// event loop out of epoll_wait: signal() from anywhere, the loop drains it.
import CShim
import Glibc

public struct EventFD: ~Copyable, Sendable {
    public let descriptor: FileDescriptor

    /// Non-blocking and close-on-exec, starting at zero.
    public init() throws(Errno) {
        let raw = try valueOrErrno { eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)) }.get()
        descriptor = FileDescriptor(rawValue: raw)
    }

    /// Adds `count` to the counter, making the descriptor readable. Returns
    /// false only when the counter is saturated, which still leaves it readable.
    @discardableResult
    public func signal(_ count: UInt64 = 1) throws(Errno) -> Bool {
        var value = count
        let result = try withUnsafeBytes(of: &value) { (bytes) throws(Errno) -> SysResult<Int> in
            try descriptor.write(bytes)
        }
        switch result {
        case .value: return true
        case .wouldBlock: return false
        }
    }

    /// Reads and resets the counter: the number of signals since the last
    /// drain, or 0 if there were none.
    public func drain() throws(Errno) -> UInt64 {
        var value: UInt64 = 0
        let result = try withUnsafeMutableBytes(of: &value) { (bytes) throws(Errno) -> SysResult<Int> in
            try descriptor.read(into: bytes)
        }
        switch result {
        case .value: return value
        case .wouldBlock: return 0
        }
    }

    /// Blocks until the counter is non-zero or `timeoutMilliseconds` pass, for a
    /// thread that has nothing else to wait on (the capture writer). Returns
    /// whether it became readable; does not drain.
    @discardableResult
    public func wait(timeoutMilliseconds: Int32) throws(Errno) -> Bool {
        var entry = pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        let ready = try valueOrErrno { poll(&entry, 1, timeoutMilliseconds) }.get()
        return ready > 0
    }
}
