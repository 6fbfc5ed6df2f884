import Foundation
public import Sys

/// Network namespaces, veth links and background processes that one test
/// creates for itself and removes when it is done, whatever happened.
///
/// Tests may shell out to `ip` (Sluice itself never does). Every name carries
/// the test process's pid and a counter, so parallel tests never collide, and
/// `destroy()` kills only the processes this object started, by PID.
public final class TestNetwork: @unchecked Sendable {
    public let tag: String
    private let lock = NSLock()
    private var namespaces: [String] = []
    private var processes: [ChildProcess] = []
    private nonisolated(unsafe) static var counter = 0
    private static let counterLock = NSLock()

    public struct CommandFailed: Error, CustomStringConvertible {
        public var command: [String], status: Int32, output: String
        public init(command: [String], status: Int32, output: String) {
            self.command = command; self.status = status; self.output = output
        }
        public var description: String { "`\(command.joined(separator: " "))` exited \(status): \(output)" }
    }

    public static var isRoot: Bool { getuid() == 0 }

    public init(_ label: String) {
        Self.counterLock.lock()
        Self.counter += 1
        let n = Self.counter
        Self.counterLock.unlock()
        tag = "sl\(label.prefix(4))\(getpid() % 100_000)x\(n)"
    }

    deinit { destroy() }

    /// Creates a namespace with loopback up and returns its name.
    @discardableResult
    public func namespace(_ role: String) throws -> String {
        let name = "\(tag)-\(role)"
        try run(["ip", "netns", "add", name])
        lock.lock(); namespaces.append(name); lock.unlock()
        try run(["ip", "-n", name, "link", "set", "lo", "up"])
        return name
    }

    /// A veth pair between two namespaces, both ends up, with offloads off so
    /// that captured checksums are real.
    public func link(_ a: String, _ aName: String, _ b: String, _ bName: String, mtu: Int? = nil) throws {
        try run(["ip", "link", "add", aName, "netns", a, "type", "veth", "peer", "name", bName, "netns", b])
        for (ns, dev) in [(a, aName), (b, bName)] {
            if let mtu { try run(["ip", "-n", ns, "link", "set", dev, "mtu", String(mtu)]) }
            _ = try? run(["ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", "gso", "off", "tso", "off", "gro", "off"])
            try run(["ip", "-n", ns, "link", "set", dev, "up"])
        }
    }

    public func address(_ ns: String, _ dev: String, _ cidr: String) throws {
        var args = ["ip", "-n", ns, "addr", "add", cidr, "dev", dev]
        if cidr.contains(":") { args.append("nodad") }
        try run(args)
    }

    /// Runs a command to completion (bounded by `timeout` seconds), in a
    /// namespace when one is given. Output goes through a file, not a pipe, and
    /// the child inherits no descriptor of ours (see ChildProcess.spawn), so no
    /// background server can keep anything open on our behalf.
    @discardableResult
    public func run(_ command: [String], in ns: String? = nil, check: Bool = true,
                    timeout: Double = 60) throws -> (status: Int32, output: String) {
        let full = ns.map { ["ip", "netns", "exec", $0] + command } ?? command
        let outputPath = Self.scratchPath()
        defer { unlink(outputPath) }
        let child = try ChildProcess.spawn(full, output: outputPath, input: "/dev/null")
        let deadline = Date().addingTimeInterval(timeout)
        var exit: ChildProcess.Exit?
        while exit == nil {
            exit = try child.poll()
            if exit == nil {
                if Date() > deadline { child.terminate(graceMilliseconds: 500); exit = .signaled(9); break }
                usleep(2_000)
            }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let status = exit!.shellStatus
        if check, status != 0 {
            throw CommandFailed(command: full, status: status, output: output)
        }
        return (status, output)
    }

    /// Starts a command in the background; `destroy()` stops it by PID.
    @discardableResult
    public func start(_ command: [String], in ns: String? = nil, log: String? = nil) throws -> ChildProcess {
        let full = ns.map { ["ip", "netns", "exec", $0] + command } ?? command
        let child = try ChildProcess.spawn(full, output: log ?? "/dev/null", input: "/dev/null")
        lock.lock(); processes.append(child); lock.unlock()
        return child
    }

    private static func scratchPath() -> String {
        counterLock.lock()
        counter += 1
        let n = counter
        counterLock.unlock()
        return NSTemporaryDirectory() + "/sluice-testnetwork-\(getpid())-\(n).out"
    }

    /// Polls `condition` every 20 ms until it holds or `seconds` pass.
    public static func waitUntil(seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return try condition()
    }

    /// Kills what this object started and deletes its namespaces. Idempotent.
    public func destroy() {
        lock.lock()
        let procs = processes, names = namespaces
        processes = []; namespaces = []
        lock.unlock()
        for p in procs { p.terminate(graceMilliseconds: 3000) }
        for name in names.reversed() { _ = try? run(["ip", "netns", "del", name], check: false) }
    }
}
