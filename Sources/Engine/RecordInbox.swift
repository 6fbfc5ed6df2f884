internal import TLS

/// A peer's TLS records after the handshake, opened where they lie: bytes
/// are read into `buffer` (from a socket by `TLSOverSocket`, from the app's
/// TCP receive ring by `InterceptedApp`) and each whole application_data
/// record is decrypted there, its content left at `opened` for the reader
/// to copy out. Any other record goes to the machine's `receive` whole.
///
/// The buffer is made at the first record and kept for the connection's
/// life: freed while empty, it went back to the kernel and was faulted in
/// again on every read (malloc trims the heap's top past 128 KiB).
final class RecordInbox {
    private var buffer: UnsafeMutableRawBufferPointer?
    /// Records read and not yet opened.
    private var start = 0
    private var end = 0
    /// The content of the last record opened that the reader has not taken.
    private var opened = 0 ..< 0

    /// Four whole records and a read's worth: reads large enough to batch
    /// what arrived, and room for a record's start carried over.
    static var capacity: Int { 4 * (RecordFramer.headerSize + RecordFramer.maximumCiphertextLength) }

    deinit { buffer?.deallocate() }

    enum Step {
        /// A record was opened: its content is `openedBytes`.
        case opened
        /// A record the machine read whole (an alert, a KeyUpdate, a
        /// close_notify, or one it refuses to open in place).
        case output(TLSOutput)
        /// No whole record: read more (`room`, then `filled`).
        case needMore
    }

    /// Opens the next record, if one is whole. A thrown error is the
    /// machine's: the caller sends its alert.
    func open<Machine: TLSMachine>(_ machine: inout Machine) throws(TLSError) -> Step {
        if machine.hasUnframedBytes { carry(machine.takeUnframedBytes()) }
        guard start < end else { return .needMore }
        switch try machine.receive(inPlace: UnsafeMutableRawBufferPointer(rebasing: buffer![start ..< end])) {
        case let .applicationData(consumed, content):
            opened = start + content.lowerBound ..< start + content.upperBound
            start += consumed
            return .opened
        case let .output(consumed, output):
            start += consumed
            return .output(output)
        case let .notInPlace(count):
            let record = Array(UnsafeRawBufferPointer(rebasing: buffer![start ..< start + count]))
            start += count
            return .output(try machine.receive(record))
        case .needMore:
            return .needMore
        }
    }

    /// The content opened and not yet taken.
    var openedBytes: UnsafeRawBufferPointer {
        guard let buffer else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(rebasing: buffer[opened])
    }

    /// Copies up to `into.count` bytes of the opened content out.
    func takeOpened(into destination: UnsafeMutableRawBufferPointer) -> Int {
        let n = min(destination.count, opened.count)
        guard n > 0 else { return 0 }
        destination.baseAddress!.copyMemory(from: buffer!.baseAddress! + opened.lowerBound, byteCount: n)
        opened = opened.lowerBound + n ..< opened.upperBound
        return n
    }

    /// The reader took all of the opened content (`openedBytes`).
    func discardOpened() {
        opened = opened.upperBound ..< opened.upperBound
    }

    /// A whole record waits (or content was opened and not taken): reading
    /// nothing more would still give something.
    var hasWholeRecord: Bool {
        guard opened.isEmpty else { return true }
        guard let buffer, let header = RecordFramer.peekHeader(UnsafeRawBufferPointer(rebasing: buffer[start ..< end])) else { return false }
        return end - start >= header.count
    }

    /// Everything read and not opened, for the machine's `receive` (the
    /// connection left the connected state: Sluice sent close_notify).
    func takeUnopened() -> [UInt8] {
        guard start < end else { return [] }
        let rest = Array(UnsafeRawBufferPointer(rebasing: buffer![start ..< end]))
        start = end
        return rest
    }

    /// Where the next bytes go: after those not yet opened, moved to the
    /// buffer's start (less than a record, since whole ones are opened
    /// first). Only while no opened content waits: it would be overwritten.
    func room() -> UnsafeMutableRawBufferPointer {
        precondition(opened.isEmpty, "room asked for before the opened content was taken")
        let buffer = allocated()
        if start > 0 {
            if start < end { buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: end - start) }
            end -= start
            start = 0
        }
        return UnsafeMutableRawBufferPointer(rebasing: buffer[end...])
    }

    /// `n` bytes were written at the start of `room()`.
    func filled(_ n: Int) {
        end += n
    }

    private func allocated() -> UnsafeMutableRawBufferPointer {
        if let buffer { return buffer }
        let made = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.capacity, alignment: 16)
        buffer = made
        return made
    }

    /// A record's start the machine had framed during the handshake: in
    /// front of what is read next.
    private func carry(_ bytes: [UInt8]) {
        let buffer = allocated()
        precondition(start == end && bytes.count < buffer.count, "carried bytes behind unopened records")
        bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        start = 0
        end = bytes.count
    }
}
