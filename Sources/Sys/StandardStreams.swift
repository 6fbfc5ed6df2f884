internal import CShim
internal import Glibc

/// The process-level calls the CLI and the engine need, so that neither
/// imports Glibc: Sys stays the only layer that talks to the kernel.
public enum ProcessControl {
    public static var currentID: Int32 { getpid() }
    /// The effective user id (0: root).
    public static var effectiveUserID: UInt32 { geteuid() }

    /// Lets another runnable task on this CPU go first (sched_yield); returns at once if there is none.
    public static func yieldProcessor() { sched_yield() }

    /// An environment variable's value.
    public static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Line-buffers stdout so that printed packets appear as they happen, even through a pipe.
    public static func lineBufferStandardOutput() { cshim_line_buffer_stdout() }

    /// Writes to stderr, unbuffered.
    public static func writeStandardError(_ text: String) {
        var remaining = Array(text.utf8)[...]
        while !remaining.isEmpty {
            let n = remaining.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
            if n <= 0 { return }
            remaining = remaining.dropFirst(n)
        }
    }

    /// True when `descriptor` (2 for stderr) is a terminal: progress lines are for people, not for files.
    public static func isTerminal(_ descriptor: Int32) -> Bool { isatty(descriptor) == 1 }

    public static func exit(_ status: Int32) -> Never {
        cshim_flush_all()
        Glibc.exit(status)
    }

    public static func sleep(milliseconds: Int) { usleep(UInt32(max(0, milliseconds)) * 1000) }
}

/// Signal numbers, named, for code above Sys.
public enum Signal {
    public static let interrupt = SIGINT
    public static let terminate = SIGTERM
    public static let hangup = SIGHUP
    public static let kill = SIGKILL
}
