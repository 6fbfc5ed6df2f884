/// Decrypted bytes waiting for HTTP mode, in one allocation whose address
/// does not move while they are read: HTTP mode parses them in place, as it
/// parses a TCP receive ring, and only `append` (never called while a view
/// is held) may compact or grow it.
final class PlaintextQueue {
    private var storage: UnsafeMutableRawBufferPointer
    private var start = 0
    private var end = 0

    init(capacity: Int) {
        storage = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { storage.deallocate() }

    var count: Int { end - start }
    var isEmpty: Bool { start == end }

    /// The bytes not yet consumed.
    var readable: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[start ..< end]) }

    func consume(_ n: Int) {
        start += min(n, count)
        if start == end {
            start = 0
            end = 0
        }
    }

    func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        if storage.count - end < bytes.count {
            let live = count
            if storage.count - live < bytes.count {
                // Grown to what a transfer needs (its reader bounds it: `InterceptedApp.readAhead`).
                let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: max(storage.count * 2, live + bytes.count), alignment: 16)
                grown.copyMemory(from: readable)
                storage.deallocate()
                storage = grown
            } else if live > 0 {
                storage.baseAddress!.copyMemory(from: storage.baseAddress! + start, byteCount: live)
            }
            start = 0
            end = live
        }
        (storage.baseAddress! + end).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        end += bytes.count
    }

    /// Moves up to `buffer.count` bytes out; returns how many.
    func take(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let n = min(buffer.count, count)
        if n > 0 { buffer.baseAddress!.copyMemory(from: storage.baseAddress! + start, byteCount: n) }
        consume(n)
        return n
    }
}
