import Foundation
import TestSupport

/// The `sluice` binary: SLUICE_BINARY when set (`make test` points it at the
/// release build, for the big transfers), else the one built next to this test bundle.
let sluiceBinary: String = {
    if let path = ProcessInfo.processInfo.environment["SLUICE_BINARY"], FileManager.default.isExecutableFile(atPath: path) {
        return path
    }
    let runner = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var dir = runner.deletingLastPathComponent()
    // The runner may sit inside the .xctest bundle directory.
    while !FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("sluice").path), dir.path != "/" {
        dir = dir.deletingLastPathComponent()
    }
    return dir.appendingPathComponent("sluice").path
}()

struct SluiceRun {
    /// Sluice's pid (`ip netns exec` execs it, keeping the pid): its namespaces are named after it.
    var pid: Int32
    var status: Int32
    var stdout: String
    var stderr: String
    var seconds: Double
}

/// Runs sluice (inside `namespace` when given) to completion, bounded by
/// `timeout` seconds; `whileRunning` may act on the process meanwhile.
/// `through` (with a namespace) is a command that execs sluice, keeping its
/// pid, such as `prlimit --nofile=256: --`.
func runSluice(_ arguments: [String], in namespace: String? = nil, environment: [String] = [], through: [String] = [],
               timeout: Double = 60, whileRunning: ((Process) -> Void)? = nil) throws -> SluiceRun {
    let p = Process()
    if let namespace {
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // Commands run as root unless a test says otherwise, whatever the runner's own sudo variables.
        p.arguments = ["ip", "netns", "exec", namespace, "env", "-u", "SUDO_UID", "-u", "SUDO_GID", "-u", "SUDO_USER"]
            + environment + through + [sluiceBinary] + arguments
    } else {
        p.executableURL = URL(fileURLWithPath: sluiceBinary)
        p.arguments = arguments
    }
    // Files, not pipes: nothing can block on a full pipe, and nothing is shared across threads.
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-test-\(getpid())-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let outURL = dir.appendingPathComponent("out"), errURL = dir.appendingPathComponent("err")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    p.standardOutput = try FileHandle(forWritingTo: outURL)
    p.standardError = try FileHandle(forWritingTo: errURL)
    let started = Date()
    try p.run()
    whileRunning?(p)
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning, Date() < deadline { usleep(20_000) }
    if p.isRunning { kill(p.processIdentifier, SIGKILL) }
    p.waitUntilExit()
    return SluiceRun(pid: p.processIdentifier, status: p.terminationStatus,
                     stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
                     stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "",
                     seconds: Date().timeIntervalSince(started))
}
