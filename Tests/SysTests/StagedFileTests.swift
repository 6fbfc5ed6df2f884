import Glibc
import Synchronization
import Sys
import Testing

/// A fresh path under /var/tmp (a disk filesystem: /tmp may be tmpfs elsewhere).
private func scratchPath(_ name: String) -> String {
    "/var/tmp/sluice-staged-\(getpid())-\(name)"
}

private func contents(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var result: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        result += chunk[0 ..< n]
    }
    return result
}

/// Deterministic bytes, different at every offset of a block.
private func pattern(_ count: Int, seed: Int) -> [UInt8] {
    (0 ..< count).map { UInt8(truncatingIfNeeded: ($0 &* 31) ^ ($0 >> 8) ^ seed) }
}

@Suite struct StagedFileTests {
    @Test func appendsFlushesAndClosesToTheExactBytesWithDirectIO() throws {
        let path = scratchPath("direct")
        defer { unlink(path) }
        // A small buffer (3 blocks), so appends wrap it many times and leave
        // partial blocks that flush() must write padded and then rewrite.
        let file = try StagedFile(path: path, bufferSize: 3 * StagedFile.blockSize)
        #expect(file.isDirect, "ext4 under /var/tmp takes O_DIRECT")
        var expected: [UInt8] = []
        for (i, length) in [1, 24, 4095, 4096, 4097, 10_000, 0, 13, 70_000, 5].enumerated() {
            let chunk = pattern(length, seed: i)
            try chunk.withUnsafeBytes { try file.append($0) }
            expected += chunk
            if i % 3 == 0 {
                try file.flush()
                // After a flush the file ends at the last byte appended, padding cut off.
                #expect(contents(path) == expected, "after flush \(i)")
            }
        }
        #expect(file.size == expected.count)
        try file.close()
        #expect(contents(path) == expected)
        try file.close() // idempotent
    }

    /// A program following a live capture never sees the file longer than
    /// what was flushed: no zeros of a padded block, not even for the moment
    /// between a write and a cut. A reader thread watches the size while
    /// 2,000 flushes of odd lengths go by.
    @Test func aReaderNeverSeesPadding() throws {
        let path = scratchPath("follow")
        defer { unlink(path) }
        let file = try StagedFile(path: path, bufferSize: 3 * StagedFile.blockSize)
        #expect(file.isDirect)
        let flushed = Atomic<Int>(0)
        let done = Atomic<Bool>(false)
        let beyond = Atomic<Int>(0)
        let watcher = try WorkerThread {
            var status = stat()
            for _ in 0 ..< 50_000_000 where !done.load(ordering: .acquiring) {
                guard stat(path, &status) == 0 else { continue }
                // Read after the size: `flushed` can only have grown meanwhile.
                if Int(status.st_size) > flushed.load(ordering: .acquiring) { beyond.add(1, ordering: .relaxed) }
            }
        }
        let chunk = pattern(777, seed: 3)
        for _ in 0 ..< 2_000 {
            try chunk.withUnsafeBytes { try file.append($0) }
            // Published before the flush: the file may reach this size from now on.
            flushed.store(file.size, ordering: .releasing)
            try file.flush()
        }
        done.store(true, ordering: .releasing)
        watcher.join()
        try file.close()
        #expect(beyond.load(ordering: .acquiring) == 0, "the file was seen longer than its bytes")
        #expect(contents(path).count == 2_000 * 777)
    }

    @Test func flushWithoutNewBytesChangesNothing() throws {
        let path = scratchPath("idle")
        defer { unlink(path) }
        let file = try StagedFile(path: path)
        let chunk = pattern(5000, seed: 7)
        try chunk.withUnsafeBytes { try file.append($0) }
        try file.flush()
        try file.flush()
        try file.close()
        #expect(contents(path) == chunk)
    }

    @Test func buffersWrittenWithoutDirectIOAreTheSameBytes() throws {
        let path = scratchPath("buffered")
        defer { unlink(path) }
        let file = try StagedFile(path: path, bufferSize: 8192, direct: false)
        #expect(!file.isDirect)
        var expected: [UInt8] = []
        for i in 0 ..< 50 {
            let chunk = pattern(i * 397 % 9000, seed: i)
            try chunk.withUnsafeBytes { try file.append($0) }
            expected += chunk
            if i % 7 == 0 { try file.flush() }
        }
        try file.close()
        #expect(contents(path) == expected)
    }

    @Test func aCharacterDeviceIsWrittenInOrderWithoutDirectIO() throws {
        let file = try StagedFile(path: "/dev/null", bufferSize: 4096)
        #expect(!file.isDirect)
        let chunk = pattern(10_000, seed: 1)
        try chunk.withUnsafeBytes { try file.append($0) }
        try file.close()
        #expect(file.size == 10_000)
    }

    @Test func aPathThatCannotBeCreatedFailsAtOnce() {
        #expect(throws: Errno.self) { try StagedFile(path: "/nonexistent-dir/capture.pcap") }
    }

    @Test func appendingAfterCloseFails() throws {
        let path = scratchPath("closed")
        defer { unlink(path) }
        let file = try StagedFile(path: path, bufferSize: 4096)
        try file.close()
        let chunk = pattern(10_000, seed: 2)
        #expect(throws: Errno.self) { try chunk.withUnsafeBytes { try file.append($0) } }
    }
}
