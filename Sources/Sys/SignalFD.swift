internal import CShim
internal import Glibc

/// Signals as readable events: the signals are blocked for normal delivery
/// and read from a descriptor in the event loop, so a Ctrl-C becomes one more
/// event and cleanup runs on the loop's thread, not in a handler.
///
/// Block before starting any thread: threads inherit the mask, and a thread
/// without it would take the signal the default way.
public struct SignalFD: ~Copyable {
    public let descriptor: FileDescriptor
    public let signals: [Int32]

    public init(_ signals: [Int32]) throws(Errno) {
        var set = sigset_t()
        sigemptyset(&set)
        for s in signals { sigaddset(&set, s) }
        let blocked = pthread_sigmask(SIG_BLOCK, &set, nil)
        guard blocked == 0 else { throw Errno(rawValue: blocked) }
        let raw = try valueOrErrno { signalfd(-1, &set, Int32(SFD_NONBLOCK | SFD_CLOEXEC)) }.get()
        descriptor = FileDescriptor(rawValue: raw)
        self.signals = signals
    }

    /// One delivered signal: its number, and whether the kernel sent it
    /// itself (SI_KERNEL: a terminal's Ctrl-C goes to the whole foreground
    /// process group) rather than a process through kill(2) (SI_USER).
    public struct Delivery: Equatable, Sendable {
        public var signal: Int32
        public var fromKernel: Bool

        public init(signal: Int32, fromKernel: Bool) {
            self.signal = signal
            self.fromKernel = fromKernel
        }
    }

    /// The next pending signal's number, or nil when none is waiting.
    public func next() throws(Errno) -> Int32? {
        try nextDelivery()?.signal
    }

    /// The next pending signal and where it came from, or nil when none is waiting.
    public func nextDelivery() throws(Errno) -> Delivery? {
        var info = signalfd_siginfo()
        let result = try withUnsafeMutableBytes(of: &info) { buffer throws(Errno) in try descriptor.read(into: buffer) }
        switch result {
        case .value(let n) where n == MemoryLayout<signalfd_siginfo>.size:
            return Delivery(signal: Int32(bitPattern: info.ssi_signo), fromKernel: info.ssi_code == SI_KERNEL)
        case .value: return nil
        case .wouldBlock: return nil
        }
    }
}
