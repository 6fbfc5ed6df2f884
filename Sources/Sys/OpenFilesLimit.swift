internal import Glibc

/// The open-files limit (RLIMIT_NOFILE). Every relayed flow holds a socket,
/// and Debian's soft default of 1024 would refuse the thousand-and-somethingth
/// flow while the hard limit allows many more; so Sluice lifts its own soft
/// limit to the hard one when it starts. A command Sluice starts gets the soft
/// limit it would have had, since programs built on select(2) break on
/// descriptors above 1023.
public enum OpenFilesLimit {
    public struct Limits: Sendable, Equatable {
        public var soft: UInt64
        public var hard: UInt64
    }

    public static func current() -> Limits? {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return nil }
        return Limits(soft: UInt64(limit.rlim_cur), hard: UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard one. Returns the limits as they were,
    /// or nil when they could not be read (nothing changed then).
    @discardableResult
    public static func raiseSoftToHard() -> Limits? {
        guard let before = current() else { return nil }
        if before.soft < before.hard { try? setSoft(before.hard) }
        return before
    }

    public static func setSoft(_ soft: UInt64) throws(Errno) {
        guard let limits = current() else { throw Errno.current }
        var limit = rlimit(rlim_cur: rlim_t(soft), rlim_max: rlim_t(limits.hard))
        guard setrlimit(resource, &limit) == 0 else { throw Errno.current }
    }

    /// What ran out, for the message that says so: `error` is EMFILE or ENFILE.
    public static func shortage(_ error: Errno) -> String {
        if error == .tooManyOpenFilesInSystem { return "the system is out of file descriptors (ENFILE; see sysctl fs.file-max)" }
        return "out of file descriptors" + (current().map { " (the limit is \($0.soft))" } ?? "")
    }

    /// RLIMIT_NOFILE, which Glibc imports as an enum case.
    private static var resource: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }
}

extension Errno {
    /// EMFILE or ENFILE: no descriptor for a new socket, until some close.
    public var isDescriptorShortage: Bool { self == .tooManyOpenFiles || self == .tooManyOpenFilesInSystem }
}
