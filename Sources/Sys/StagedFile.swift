// StagedFile exists because the page cache is the expensive part of writing a
// capture at line rate. On these machines a buffered write of 1.5 GB costs
// 3.1 s of CPU (ext4 reserves blocks and allocates folios page by page), the
// same bytes written with O_DIRECT cost 0.13 s and reach the disk four times
// faster: the device copies them, not our cores.
//
// O_DIRECT wants the buffer, the file offset and the length aligned to the
// device's block. So bytes are staged in one aligned buffer and written in
// whole blocks; `flush()` writes the last, partial block through the page
// cache at its exact length (O_DIRECT off for that one write), and keeps it
// staged, to be written again, whole and direct, at the same offset once it
// fills. A reader (tshark on a live capture) always sees a file that ends at
// the last flushed byte. (Writing the partial block padded and then cutting
// the file back, as this once did, showed a reader up to 4 KiB of zeros
// between the write and the ftruncate: a record header of zeros to a
// program that follows the file.)
//
// Where O_DIRECT is refused (a pipe, /dev/null, a filesystem without it) the
// same staging buffer is written with plain write(2) calls instead.
internal import CShim
import Glibc

public final class StagedFile {
    /// Alignment and write granularity: 4 KiB satisfies every logical block size up to it.
    public static let blockSize = 4096

    public let path: String
    /// Whether writes bypass the page cache.
    public private(set) var isDirect: Bool
    /// Bytes handed to `append`, all told (the file's size after `flush`).
    public private(set) var size = 0

    private var descriptor: Int32
    private let isRegular: Bool
    private let capacity: Int
    private let staging: UnsafeMutableRawPointer
    /// Bytes staged; `staging[0]` is at file offset `base`.
    private var used = 0
    /// A multiple of `blockSize` when `isDirect`.
    private var base = 0

    /// Creates or truncates `path` (mode 0644). `bufferSize` is rounded up to whole blocks.
    public init(path: String, bufferSize: Int = 4 << 20, direct: Bool = true) throws(Errno) {
        let flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC
        var raw: Int32 = -1
        var direct = direct
        if direct {
            raw = cshim_open_mode(path, flags | cshim_O_DIRECT, 0o644)
            if raw < 0 { direct = false }
        }
        if raw < 0 {
            raw = try valueOrErrno { cshim_open_mode(path, flags, 0o644) }.get()
        }
        var status = stat()
        isRegular = fstat(raw, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
        if direct, !isRegular {
            // A character device or a pipe: nothing to align to.
            _ = cshim_fcntl_setfl(raw, cshim_fcntl_getfl(raw) & ~cshim_O_DIRECT)
            direct = false
        }
        self.path = path
        descriptor = raw
        isDirect = direct
        capacity = max((bufferSize + Self.blockSize - 1) / Self.blockSize, 2) * Self.blockSize
        staging = AlignedMemory.allocate(byteCount: capacity, alignment: Self.blockSize)
    }

    deinit {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        staging.deallocate()
    }

    /// Appends `bytes` (staged; whole blocks go to the file when the buffer fills).
    public func append(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var rest = bytes
        while !rest.isEmpty {
            if used == capacity { try writeFullBlocks() }
            let n = min(rest.count, capacity - used)
            (staging + used).copyMemory(from: rest.baseAddress!, byteCount: n)
            used += n
            size += n
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
        }
    }

    /// Everything appended reaches the file (the device, with O_DIRECT).
    public func flush() throws(Errno) {
        guard descriptor >= 0, used > 0 else { return }
        guard isDirect else {
            try writeStaged(count: used, at: base)
            base += used
            used = 0
            return
        }
        let full = used / Self.blockSize * Self.blockSize
        if full > 0 { try writeStaged(count: full, at: base) }
        if used > full, isDirect {
            // The partial block, through the page cache: exactly its bytes, no padding.
            // (A later direct write of the whole block flushes and replaces these pages.)
            _ = try valueOrErrno { cshim_fcntl_setfl(descriptor, cshim_fcntl_getfl(descriptor) & ~cshim_O_DIRECT) }.get()
            let written = Result { () throws(Errno) in try writeStaged(from: full, count: used - full, at: base + full) }
            _ = try valueOrErrno { cshim_fcntl_setfl(descriptor, cshim_fcntl_getfl(descriptor) | cshim_O_DIRECT) }.get()
            try written.get()
        } else if used > full {
            // O_DIRECT was refused on the way: the rest goes as it is.
            try writeStaged(from: full, count: used - full, at: base + full)
        }
        // Keep only the partial block: the full ones are on disk for good.
        if full > 0 {
            (staging).copyMemory(from: staging + full, byteCount: used - full)
            base += full
            used -= full
        }
    }

    /// Flushes and closes. Idempotent; appending afterwards fails with EBADF.
    public func close() throws(Errno) {
        guard descriptor >= 0 else { return }
        defer {
            _ = Glibc.close(descriptor)
            descriptor = -1
        }
        try flush()
    }

    /// The buffer is full: write its whole blocks and keep the partial rest.
    private func writeFullBlocks() throws(Errno) {
        guard isDirect else {
            try writeStaged(count: used, at: base)
            base += used
            used = 0
            return
        }
        let full = used / Self.blockSize * Self.blockSize
        try writeStaged(count: full, at: base)
        if used > full { staging.copyMemory(from: staging + full, byteCount: used - full) }
        base += full
        used -= full
    }

    /// Writes `staging[0 ..< count]` at file offset `offset` (sequentially on
    /// anything but a regular file), continuing after short writes. An
    /// O_DIRECT write the filesystem refuses (EINVAL) turns O_DIRECT off for good.
    private func writeStaged(from start: Int = 0, count: Int, at offset: Int) throws(Errno) {
        guard descriptor >= 0 else { throw Errno(rawValue: EBADF) }
        var done = 0
        while done < count {
            let n: Int
            if isRegular {
                let result = pwrite(descriptor, staging + start + done, count - done, off_t(offset + done))
                if result < 0 {
                    let error = Errno.current
                    if error.rawValue == EINTR { continue }
                    if error.rawValue == EINVAL, isDirect, start == 0 {
                        try fallBackToBuffered()
                        // Buffered now: write exactly the staged bytes.
                        return try writeStaged(count: min(count, used), at: offset)
                    }
                    throw error
                }
                n = result
            } else {
                let result = Glibc.write(descriptor, staging + start + done, count - done)
                if result < 0 {
                    let error = Errno.current
                    if error.rawValue == EINTR { continue }
                    throw error
                }
                n = result
            }
            if n == 0 { throw Errno(rawValue: EIO) }
            done += n
        }
    }

    private func fallBackToBuffered() throws(Errno) {
        isDirect = false
        _ = try valueOrErrno { cshim_fcntl_setfl(descriptor, cshim_fcntl_getfl(descriptor) & ~cshim_O_DIRECT) }.get()
    }
}
