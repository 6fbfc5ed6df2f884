internal import CShim
internal import Glibc

/// A program Sluice starts (the CMD of `sluice exec` or `sluice dump`), with
/// posix_spawn. The child inherits the calling thread's network namespace, so
/// spawning from inside `NetworkNamespace.run` puts it there. Foundation's
/// Process is not used: its helper thread cannot start from another namespace.
public struct ChildProcess: Sendable {
    public let pid: Int32

    /// Starts `arguments[0]` (searched in PATH) with the caller's environment,
    /// every signal unblocked and at its default whatever the caller blocked
    /// for its own signalfd, and no descriptor but 0, 1 and 2: a child must
    /// never hold one of Sluice's sockets or pipes open. `output` sends
    /// stdout and stderr to a file instead of the caller's; `input` reads
    /// stdin from a file (such as /dev/null). `passing` is a descriptor the
    /// child gets as its 3 (the one exception).
    public static func spawn(_ arguments: [String], environment: [String]? = nil,
                             output: String? = nil, input: String? = nil, passing: Int32? = nil) throws(Errno) -> ChildProcess {
        guard !arguments.isEmpty else { throw Errno.invalidArgument }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let input { posix_spawn_file_actions_addopen(&actions, 0, input, O_RDONLY, 0) }
        if let output {
            posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        if let passing {
            // dup2 clears close-on-exec on the copy (also when passing is already 3: POSIX 2017, glibc 2.29).
            posix_spawn_file_actions_adddup2(&actions, passing, 3)
            cshim_spawn_closefrom(&actions, 4)
        } else {
            cshim_spawn_closefrom(&actions, 3)
        }

        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup($0) } + [nil] }
        defer { for p in envp ?? [] { free(p) } }
        var pid: pid_t = 0
        let status: Int32
        if envp != nil {
            status = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, &envp!)
        } else {
            status = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, environ)
        }
        guard status == 0 else { throw Errno(rawValue: status) }
        return ChildProcess(pid: pid)
    }

    public enum Exit: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        /// The status a shell would report: the code, or 128 + the signal.
        public var shellStatus: Int32 {
            switch self {
            case let .exited(code): return code
            case let .signaled(signal): return 128 + signal
            }
        }

        public var description: String {
            switch self {
            case let .exited(code): return "exited with status \(code)"
            case let .signaled(signal): return "killed by signal \(signal)"
            }
        }
    }

    /// A descriptor that becomes readable when the child exits (pidfd_open,
    /// Linux 5.3), so an event loop can wait for the exit in epoll.
    public func exitDescriptor() throws(Errno) -> FileDescriptor {
        FileDescriptor(rawValue: try valueOrErrno { cshim_pidfd_open(pid) }.get())
    }

    /// Reaps the child if it has exited; nil while it runs.
    public func poll() throws(Errno) -> Exit? {
        var status: Int32 = 0
        let reaped = try valueOrErrno { waitpid(pid, &status, WNOHANG) }.get()
        guard reaped == pid else { return nil }
        return Self.decode(status)
    }

    /// Waits for the child to exit.
    public func wait() throws(Errno) -> Exit {
        var status: Int32 = 0
        _ = try valueOrErrno { waitpid(pid, &status, 0) }.get()
        return Self.decode(status)
    }

    /// Whether the child is in this process's process group, so that a
    /// terminal's Ctrl-C (sent to the whole foreground group) reaches it too.
    public var sharesOurProcessGroup: Bool {
        let group = getpgid(pid)
        return group >= 0 && group == getpgrp()
    }

    /// Sends `signal` to the child (only ever to a child we started).
    public func signal(_ signal: Int32) {
        _ = Glibc.kill(pid, signal)
    }

    /// Stops the child if it still runs: SIGTERM, then SIGKILL after `graceMilliseconds`.
    /// A child already reaped (waitpid says ECHILD) is left alone: its pid may
    /// belong to someone else by now, and only our own child may be signalled.
    public func terminate(graceMilliseconds: Int = 2000) {
        guard isRunning else { return }
        signal(SIGTERM)
        for _ in 0 ..< max(1, graceMilliseconds / 10) {
            if !isRunning { return }
            usleep(10_000)
        }
        signal(SIGKILL)
        _ = try? wait()
    }

    /// True while the child runs; reaps it if it has exited. False once reaped.
    var isRunning: Bool {
        do { return try poll() == nil } catch { return false }
    }

    static func decode(_ status: Int32) -> Exit {
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which are macros.
        let termination = status & 0x7f
        if termination == 0 { return .exited((status >> 8) & 0xff) }
        return .signaled(termination)
    }
}
