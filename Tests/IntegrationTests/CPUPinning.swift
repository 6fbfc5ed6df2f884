import Foundation

/// Where the two-write tests put their processes: Sluice on CPU 0, the
/// peers (Python servers and clients) on CPU 1. Their counts measure
/// `ShortReadHold`, and with three busy processes on two CPUs the scheduler
/// otherwise sometimes put a server on Sluice's CPU for stretches, its
/// bodies came late, and the count measured that (CI, 2026-12-07). On one
/// CPU nothing is pinned.
enum CPUPinning {
    /// Whether there are CPUs enough to keep Sluice apart from its peers.
    static let available = ProcessInfo.processInfo.activeProcessorCount >= 2

    /// A shell line for a script that Sluice runs as its command: keeps
    /// Sluice (the script's parent, every thread of it) on CPU 0.
    static var sluiceLine: String { available ? "taskset -a -p -c 0 $PPID > /dev/null" : "true" }

    /// A command's prefix that runs it on the peers' CPU.
    static var peerCommand: [String] { available ? ["taskset", "-c", "1"] : [] }

    /// `peerCommand` for a shell line.
    static var peerShellPrefix: String { available ? "taskset -c 1 " : "" }
}
