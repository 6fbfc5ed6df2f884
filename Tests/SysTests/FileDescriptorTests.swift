import Glibc
import Sys
import Testing

/// Moves `fd` to a high number no other test will be handed meanwhile, so
/// "that number is closed now" can be checked without races.
private func highNumbered(_ fd: borrowing FileDescriptor, at floor: Int32) -> FileDescriptor {
    let moved = fcntl(fd.rawValue, F_DUPFD_CLOEXEC, floor)
    precondition(moved >= floor, "F_DUPFD failed: \(Errno.current)")
    return FileDescriptor(rawValue: moved)
}

private func isOpen(_ raw: Int32) -> Bool {
    fcntl(raw, F_GETFD) != -1
}

@Suite(.serialized) struct FileDescriptorTests {
    @Test func explicitCloseClosesAndDeinitDoesNotCloseAgain() throws {
        let pipe = try FileDescriptor.Pipe()
        let fd = highNumbered(pipe.readEnd, at: 900)
        let raw = fd.rawValue
        #expect(isOpen(raw))
        try fd.close()
        let status = fcntl(raw, F_GETFD)
        let error = Errno.current
        #expect(status == -1 && error == .badFileDescriptor)
        // Had close() let deinit run too, this stand-in would be closed under us.
        let standIn = dup2(pipe.writeEnd.rawValue, raw)
        #expect(standIn == raw)
        #expect(isOpen(raw))
        Glibc.close(raw)
    }

    @Test func deinitClosesAtEndOfScope() throws {
        var raw: Int32 = -1
        do {
            let pipe = try FileDescriptor.Pipe()
            let fd = highNumbered(pipe.readEnd, at: 910)
            raw = fd.rawValue
            #expect(isOpen(raw))
        }
        #expect(!isOpen(raw))
    }

    @Test func releaseHandsOverWithoutClosing() throws {
        let pipe = try FileDescriptor.Pipe()
        let fd = highNumbered(pipe.readEnd, at: 920)
        let raw = fd.release()
        #expect(isOpen(raw))
        Glibc.close(raw)
    }

    @Test func pipeSplitsIntoTwoOwners() throws {
        let pipe = try FileDescriptor.Pipe(nonBlocking: true)
        let reader = pipe.readEnd
        let writer = pipe.writeEnd
        var byte: UInt8 = 0x5A
        #expect(try withUnsafeBytes(of: &byte) { buffer in try writer.write(buffer) } == .value(1))
        byte = 0
        #expect(try withUnsafeMutableBytes(of: &byte) { buffer in try reader.read(into: buffer) } == .value(1))
        #expect(byte == 0x5A)
    }

    @Test func setNonBlockingTogglesTheFlag() throws {
        let pipe = try FileDescriptor.Pipe()
        #expect(try !pipe.readEnd.isNonBlocking)
        try pipe.readEnd.setNonBlocking()
        #expect(try pipe.readEnd.isNonBlocking)
        try pipe.readEnd.setNonBlocking(false)
        #expect(try !pipe.readEnd.isNonBlocking)
    }

    @Test func vectoredWriteThenRead() throws {
        let pipe = try FileDescriptor.Pipe(nonBlocking: true)
        var first: [UInt8] = [1, 2, 3]
        var second: [UInt8] = [4, 5]
        let written = try first.withUnsafeMutableBytes { a in
            try second.withUnsafeMutableBytes { b in
                let vectors = [iovec(iov_base: a.baseAddress, iov_len: a.count), iovec(iov_base: b.baseAddress, iov_len: b.count)]
                return try vectors.withUnsafeBufferPointer { v in try pipe.writeEnd.writev(v) }
            }
        }
        #expect(written == .value(5))
        var head = [UInt8](repeating: 0, count: 2)
        var tail = [UInt8](repeating: 0, count: 8)
        let read = try head.withUnsafeMutableBytes { a in
            try tail.withUnsafeMutableBytes { b in
                let vectors = [iovec(iov_base: a.baseAddress, iov_len: a.count), iovec(iov_base: b.baseAddress, iov_len: b.count)]
                return try vectors.withUnsafeBufferPointer { v in try pipe.readEnd.readv(v) }
            }
        }
        #expect(read == .value(5))
        #expect(head == [1, 2])
        #expect(tail.prefix(3) == [3, 4, 5])
    }
}
