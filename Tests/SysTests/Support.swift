// Helpers shared by the Sys tests: running a command (only tests may shell
// out), a throwaway named namespace that is deleted on every path, and
// reading a TUN through epoll with a deadline.
import Foundation
import Glibc
import Sys

let isRoot = getuid() == 0
let needsRoot = "needs root: creates network namespaces, TUN devices and netlink state"

/// Runs `arguments` to completion (bounded by `timeout`) and returns exit
/// status and stdout+stderr; a command that cannot start reports status -1.
@discardableResult
func command(_ arguments: [String], timeout: TimeInterval = 10) -> (status: Int32, output: String) {
    let child: Launched
    do {
        child = try launch(arguments, captureOutput: true)
    } catch {
        return (-1, "cannot run \(arguments): \(error)")
    }
    let status = child.finish(within: timeout)
    return (status, child.readOutput())
}

/// A child process started with posix_spawn. (Foundation's Process needs a
/// run-loop helper thread that does not cope with being started from a
/// thread inside another network namespace.)
struct Launched {
    let pid: pid_t
    let outputDescriptor: Int32?

    /// Waits up to `seconds` for it to exit, then kills it (it is ours: we
    /// started it) and reaps it. Returns the exit status, or -1 if it was killed.
    @discardableResult
    func finish(within seconds: TimeInterval = 0) -> Int32 {
        let deadline = Date().addingTimeInterval(seconds)
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { return exitStatus(status) }
            if reaped == -1 { return -1 }
            if Date() >= deadline { break }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        return -1
    }

    /// Whether it is still running (reaps it if it has exited).
    var isRunning: Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    /// Everything it wrote, once it has exited; closes the pipe.
    func readOutput() -> String {
        guard let fd = outputDescriptor else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<1024 {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += chunk.prefix(count)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private func exitStatus(_ status: Int32) -> Int32 {
        // WIFEXITED / WEXITSTATUS, which Swift cannot import as macros.
        status & 0x7F == 0 ? (status >> 8) & 0xFF : -1
    }
}

struct LaunchFailure: Error, CustomStringConvertible {
    var description: String
}

func launch(_ arguments: [String], captureOutput: Bool = false) throws -> Launched {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    var outputDescriptor: Int32?
    if captureOutput {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw LaunchFailure(description: "pipe: \(Errno.current)") }
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        posix_spawn_file_actions_adddup2(&actions, ends[1], 2)
        posix_spawn_file_actions_addclose(&actions, ends[0])
        posix_spawn_file_actions_addclose(&actions, ends[1])
        outputDescriptor = ends[0]
        defer { close(ends[1]) }
        return try spawn(arguments, &actions, outputDescriptor)
    }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    return try spawn(arguments, &actions, nil)
}

private func spawn(
    _ arguments: [String],
    _ actions: inout posix_spawn_file_actions_t,
    _ outputDescriptor: Int32?
) throws -> Launched {
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let status = posix_spawnp(&pid, arguments[0], &actions, nil, &argv, environ)
    guard status == 0 else {
        if let outputDescriptor { close(outputDescriptor) }
        throw LaunchFailure(description: "posix_spawnp \(arguments[0]): \(Errno(rawValue: status))")
    }
    return Launched(pid: pid, outputDescriptor: outputDescriptor)
}

/// Creates namespace `sluice-sys-PID-TAG` with our own code and deletes it
/// afterwards whatever happens.
func withNamespace<T>(_ tag: String, _ body: (String) throws -> T) throws -> T {
    let name = "sluice-sys-\(getpid())-\(tag)"
    if NetworkNamespace.exists(named: name) { try? NetworkNamespace.delete(named: name) }
    try NetworkNamespace.create(named: name)
    defer { try? NetworkNamespace.delete(named: name) }
    return try body(name)
}

/// Reads packets from `tun` until `matches` accepts one or `seconds` pass.
/// Returns the accepted packet's bytes, or nil; `seen` lists the first bytes
/// of everything else, for a failure message.
func readPacket(
    from tun: borrowing TunDevice,
    within seconds: Double,
    seen: inout [String],
    where matches: ([UInt8]) -> Bool
) throws -> [UInt8]? {
    var vouched = false
    return try readPacket(from: tun, within: seconds, seen: &seen, checksumVouchedFor: &vouched, where: matches)
}

/// As above, and says whether the TUN vouched for the matching packet's checksum.
func readPacket(
    from tun: borrowing TunDevice,
    within seconds: Double,
    seen: inout [String],
    checksumVouchedFor: inout Bool,
    where matches: ([UInt8]) -> Bool
) throws -> [UInt8]? {
    let epoll = try Epoll()
    try epoll.add(tun.descriptor, events: .readable, token: 42)
    var events = Epoll.EventBuffer(capacity: 4)
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)
    defer { buffer.deallocate() }
    let deadline = Date().addingTimeInterval(seconds)
    for _ in 0..<1000 {
        let remaining = deadline.timeIntervalSinceNow
        if remaining <= 0 { return nil }
        let ready = try epoll.wait(into: &events, timeoutMilliseconds: Int32(remaining * 1000) + 1)
        guard ready > 0 else { continue }
        for _ in 0..<64 {
            guard case .value(let count) = try tun.read(into: buffer, checksumVouchedFor: &checksumVouchedFor) else { break }
            let packet = Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            if matches(packet) { return packet }
            seen.append(packet.prefix(48).map { String($0, radix: 16) }.joined(separator: " "))
        }
    }
    return nil
}

/// The inode of a namespace file: equal inodes, same namespace.
func namespaceInode(_ path: String) -> UInt64? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return UInt64(info.st_ino)
}
