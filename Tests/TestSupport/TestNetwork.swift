public import Foundation

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
    private var processes: [Process] = []
    private nonisolated(unsafe) static var counter = 0
    private static let counterLock = NSLock()

    public struct CommandFailed: Error, CustomStringConvertible {
        public var command: [String], status: Int32, output: String
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

    /// Runs a command to completion, in a namespace when one is given.
    @discardableResult
    public func run(_ command: [String], in ns: String? = nil, check: Bool = true) throws -> (status: Int32, output: String) {
        let full = ns.map { ["ip", "netns", "exec", $0] + command } ?? command
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = full
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let output = String(decoding: data, as: UTF8.self)
        if check, p.terminationStatus != 0 {
            throw CommandFailed(command: full, status: p.terminationStatus, output: output)
        }
        return (p.terminationStatus, output)
    }

    /// Starts a command in the background; `destroy()` stops it by PID.
    @discardableResult
    public func start(_ command: [String], in ns: String? = nil, log: String? = nil) throws -> Process {
        let full = ns.map { ["ip", "netns", "exec", $0] + command } ?? command
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = full
        if let log {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            let handle = FileHandle(forWritingAtPath: log)
            p.standardOutput = handle
            p.standardError = handle
        } else {
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
        }
        try p.run()
        lock.lock(); processes.append(p); lock.unlock()
        return p
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
        for p in procs where p.isRunning { kill(p.processIdentifier, SIGTERM) }
        for p in procs {
            let deadline = Date().addingTimeInterval(3)
            while p.isRunning, Date() < deadline { usleep(10_000) }
            if p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        }
        for name in names.reversed() { _ = try? run(["ip", "netns", "del", name], check: false) }
    }
}
