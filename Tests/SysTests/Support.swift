// Helpers shared by the Sys tests: running a command (only tests may shell
// out), a throwaway named namespace that is deleted on every path, and
// reading a TUN through epoll with a deadline.
import Foundation
import Glibc
import Sys

let isRoot = getuid() == 0
let needsRoot = "needs root: creates network namespaces, TUN devices and netlink state"

/// Runs `arguments` to completion (bounded by `timeout`) and returns exit status and stdout+stderr.
@discardableResult
func run(_ arguments: [String], timeout: TimeInterval = 10) throws -> (status: Int32, output: String) {
    let process = try launch(arguments, captureOutput: true)
    let deadline = Date().addingTimeInterval(timeout)
    while process.process.isRunning && Date() < deadline { usleep(10_000) }
    if process.process.isRunning { process.process.terminate() }
    process.process.waitUntilExit()
    let data = process.output?.fileHandleForReading.readDataToEndOfFile() ?? Data()
    return (process.process.terminationStatus, String(decoding: data, as: UTF8.self))
}

struct Launched {
    let process: Process
    let output: Foundation.Pipe?

    /// Ends it if still running (it is ours: we started it) and reaps it.
    func finish() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}

func launch(_ arguments: [String], captureOutput: Bool = false) throws -> Launched {
    let process = Process()
    let tool = arguments[0]
    let candidates = ["/usr/sbin/", "/usr/bin/", "/sbin/", "/bin/"].map { $0 + tool }
    process.executableURL = URL(fileURLWithPath: candidates.first { access($0, X_OK) == 0 } ?? tool)
    process.arguments = Array(arguments.dropFirst())
    var output: Foundation.Pipe?
    if captureOutput {
        let pipe = Foundation.Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        output = pipe
    } else {
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
    }
    try process.run()
    return Launched(process: process, output: output)
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
            guard case .value(let count) = try tun.read(into: buffer) else { break }
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
