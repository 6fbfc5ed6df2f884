// TimerFD exists so timers (TCP retransmission, idle flow expiry) are just one
// more readable descriptor in the epoll set, on CLOCK_MONOTONIC so wall-clock
// jumps never fire or stall them.
import CShim
import Glibc

public struct TimerFD: ~Copyable, Sendable {
    public let descriptor: FileDescriptor

    /// A disarmed CLOCK_MONOTONIC timer, non-blocking and close-on-exec.
    public init() throws(Errno) {
        let raw = try valueOrErrno {
            timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC | TFD_NONBLOCK))
        }.get()
        descriptor = FileDescriptor(rawValue: raw)
    }

    /// Fires once after `nanoseconds` (at least 1: zero would disarm).
    public func arm(afterNanoseconds nanoseconds: UInt64) throws(Errno) {
        try set(initial: max(nanoseconds, 1), interval: 0)
    }

    /// Fires after `initialNanoseconds`, then every `intervalNanoseconds`.
    public func arm(afterNanoseconds initialNanoseconds: UInt64, everyNanoseconds intervalNanoseconds: UInt64) throws(Errno) {
        try set(initial: max(initialNanoseconds, 1), interval: intervalNanoseconds)
    }

    public func disarm() throws(Errno) {
        try set(initial: 0, interval: 0)
    }

    /// How many times the timer fired since the last read (0 if none); reading resets it.
    public func readExpirations() throws(Errno) -> UInt64 {
        var value: UInt64 = 0
        let result = try withUnsafeMutableBytes(of: &value) { (bytes) throws(Errno) -> SysResult<Int> in
            try descriptor.read(into: bytes)
        }
        switch result {
        case .value: return value
        case .wouldBlock: return 0
        }
    }

    private func set(initial: UInt64, interval: UInt64) throws(Errno) {
        var spec = itimerspec(it_interval: Self.timespec(interval), it_value: Self.timespec(initial))
        _ = try valueOrErrno { timerfd_settime(descriptor.rawValue, 0, &spec, nil) }.get()
    }

    private static func timespec(_ nanoseconds: UInt64) -> Glibc.timespec {
        Glibc.timespec(
            tv_sec: Int(nanoseconds / 1_000_000_000),
            tv_nsec: Int(nanoseconds % 1_000_000_000))
    }
}
