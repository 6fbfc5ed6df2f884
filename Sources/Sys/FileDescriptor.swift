// FileDescriptor exists so that every kernel handle Sluice holds has exactly
// one owner and is closed exactly once: it is ~Copyable, so the compiler
// rejects a second owner, and its deinit closes what an explicit close() did
// not. (A final class would give the same single close but costs a heap
// allocation and reference counting per descriptor, and lets aliases exist.)
public import CShim
import Glibc

public struct FileDescriptor: ~Copyable, Sendable {
    /// The kernel's number. Borrow it for a call; do not close it behind the owner's back.
    public let rawValue: Int32

    /// Takes ownership of `rawValue`: it will be closed when this value ends.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    deinit {
        // Errors here have nowhere to go; close(2) releases the number regardless.
        _ = Glibc.close(rawValue)
    }

    /// Closes now and reports the kernel's verdict; afterwards deinit does nothing.
    public consuming func close() throws(Errno) {
        let raw = rawValue
        discard self
        _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.close(raw) }.get()
    }

    /// Gives up ownership without closing: the caller now owns the number.
    public consuming func release() -> Int32 {
        let raw = rawValue
        discard self
        return raw
    }

    /// Opens `path`, always with O_CLOEXEC so children (ping, ip) never inherit our descriptors.
    public static func open(_ path: String, flags: Int32) throws(Errno) -> FileDescriptor {
        let raw = try valueOrErrno { cshim_open(path, flags | O_CLOEXEC) }.get()
        return FileDescriptor(rawValue: raw)
    }

    /// Opens `path` for writing, creating it (mode 0644) if needed, and
    /// truncating it unless `append`: for logs and capture files.
    public static func create(_ path: String, append: Bool = false) throws(Errno) -> FileDescriptor {
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC)
        let raw = try valueOrErrno { cshim_open_mode(path, flags, 0o644) }.get()
        return FileDescriptor(rawValue: raw)
    }

    /// Writes all of `buffer` to a blocking descriptor (a regular file),
    /// continuing after short writes.
    public func writeAll(_ buffer: UnsafeRawBufferPointer) throws(Errno) {
        var offset = 0
        while offset < buffer.count {
            let rest = UnsafeRawBufferPointer(rebasing: buffer[offset...])
            switch try write(rest) {
            case .value(let written): offset += written
            case .wouldBlock: throw Errno.wouldBlock
            }
        }
    }

    /// Writes all of `buffer` at `offset` of a regular file (pwrite(2)),
    /// continuing after short writes; the file position does not move.
    public func writeAll(_ buffer: UnsafeRawBufferPointer, at offset: Int) throws(Errno) {
        var done = 0
        while done < buffer.count {
            let written = try valueOrErrno {
                Glibc.pwrite(rawValue, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            }.get()
            guard written > 0 else { throw Errno.noSpace }
            done += written
        }
    }

    /// Cuts (or extends with zeros) a regular file to `length` bytes (ftruncate(2)).
    public func truncate(to length: Int) throws(Errno) {
        _ = try valueOrErrno { Glibc.ftruncate(rawValue, off_t(length)) }.get()
    }

    /// One read(2) into the caller's buffer. `.value(0)` means end of file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> SysResult<Int> {
        try valueOrErrno { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// One write(2) from the caller's buffer; the count may be short.
    public func write(_ buffer: UnsafeRawBufferPointer) throws(Errno) -> SysResult<Int> {
        try valueOrErrno { Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Scatter read into the caller's iovecs.
    public func readv(_ vectors: UnsafeBufferPointer<iovec>) throws(Errno) -> SysResult<Int> {
        try valueOrErrno { Glibc.readv(rawValue, vectors.baseAddress, Int32(vectors.count)) }
    }

    /// Gather write from the caller's iovecs.
    public func writev(_ vectors: UnsafeBufferPointer<iovec>) throws(Errno) -> SysResult<Int> {
        try valueOrErrno { Glibc.writev(rawValue, vectors.baseAddress, Int32(vectors.count)) }
    }

    /// Sets or clears O_NONBLOCK; the event loop wants every descriptor non-blocking.
    public func setNonBlocking(_ nonBlocking: Bool = true) throws(Errno) {
        let flags = try valueOrErrno { cshim_fcntl_getfl(rawValue) }.get()
        let wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if wanted == flags { return }
        _ = try valueOrErrno { cshim_fcntl_setfl(rawValue, wanted) }.get()
    }

    public var isNonBlocking: Bool {
        get throws(Errno) {
            let flags = try valueOrErrno { cshim_fcntl_getfl(rawValue) }.get()
            return flags & O_NONBLOCK != 0
        }
    }

    /// SO_MARK on a socket: in whole-host mode Sluice marks its own upstream
    /// sockets so a fwmark rule routes them around the TUN instead of into it.
    public func setMark(_ mark: UInt32) throws(Errno) {
        var value = mark
        _ = try valueOrErrno {
            setsockopt(rawValue, SOL_SOCKET, cshim_SO_MARK, &value, socklen_t(MemoryLayout<UInt32>.size))
        }.get()
    }

    public var mark: UInt32 {
        get throws(Errno) {
            var value: UInt32 = 0
            var length = socklen_t(MemoryLayout<UInt32>.size)
            _ = try valueOrErrno { getsockopt(rawValue, SOL_SOCKET, cshim_SO_MARK, &value, &length) }.get()
            return value
        }
    }
}

extension FileDescriptor {
    /// Both ends of a pipe(2), each with its own owner. Frozen so other
    /// modules may take the ends apart (`let reader = pipe.readEnd`).
    @frozen
    public struct Pipe: ~Copyable {
        public let readEnd: FileDescriptor
        public let writeEnd: FileDescriptor

        /// Created with O_CLOEXEC, and O_NONBLOCK on both ends when asked.
        public init(nonBlocking: Bool = false) throws(Errno) {
            var ends: (Int32, Int32) = (-1, -1)
            let flags = O_CLOEXEC | (nonBlocking ? O_NONBLOCK : 0)
            _ = try withUnsafeMutableBytes(of: &ends) { (raw) throws(Errno) -> SysResult<Int32> in
                let fds = raw.baseAddress!.assumingMemoryBound(to: Int32.self)
                return try valueOrErrno { cshim_pipe2(fds, flags) }
            }.get()
            readEnd = FileDescriptor(rawValue: ends.0)
            writeEnd = FileDescriptor(rawValue: ends.1)
        }
    }
}
