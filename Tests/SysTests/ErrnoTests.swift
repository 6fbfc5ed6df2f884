import Glibc
import Sys
import Testing

@Suite struct ErrnoTests {
    @Test func readOnBadDescriptorIsEBADF() {
        // A number above anything this process has open, so it is surely invalid.
        let fd = FileDescriptor(rawValue: 1_000_000)
        var byte: UInt8 = 0
        do {
            let result = try withUnsafeMutableBytes(of: &byte) { (buffer) throws(Errno) in try fd.read(into: buffer) }
            Issue.record("read on a bad descriptor returned \(result)")
        } catch {
            #expect(error == .badFileDescriptor)
        }
        _ = fd.release()
    }

    @Test func nonBlockingReadOnEmptyPipeWouldBlock() throws {
        let pipe = try FileDescriptor.Pipe(nonBlocking: true)
        var bytes = [UInt8](repeating: 0, count: 16)
        let result = try bytes.withUnsafeMutableBytes { buffer in try pipe.readEnd.read(into: buffer) }
        #expect(result == .wouldBlock)
        // And the same call reads data once there is some.
        let written = try [UInt8](arrayLiteral: 1, 2, 3).withUnsafeBytes { buffer in
            try pipe.writeEnd.write(buffer)
        }
        #expect(written == .value(3))
        let again = try bytes.withUnsafeMutableBytes { buffer in try pipe.readEnd.read(into: buffer) }
        #expect(again == .value(3))
        #expect(bytes.prefix(3) == [1, 2, 3])
    }

    @Test func wouldBlockThrownByGet() {
        #expect(throws: Errno.wouldBlock) { try SysResult<Int>.wouldBlock.get() }
        #expect((try? SysResult.value(5).get()) == 5)
    }

    @Test func interruptedCallsAreRetried() throws {
        var calls = 0
        let result = try valueOrErrno { () -> Int32 in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(result == .value(7))
        #expect(calls == 3)
    }

    @Test func closeIsNotRetriedOnInterrupt() {
        var calls = 0
        #expect(throws: Errno.interrupted) {
            try valueOrErrno(retryOnInterrupt: false) { () -> Int32 in
                calls += 1
                errno = EINTR
                return -1
            }
        }
        #expect(calls == 1)
    }

    @Test func otherErrorsAreThrownTyped() {
        do {
            _ = try valueOrErrno { () -> Int32 in
                errno = ECONNREFUSED
                return -1
            }
            Issue.record("expected a throw")
        } catch {
            // `error` is Errno here, not any Error: typed throws.
            #expect(error == .connectionRefused)
        }
    }

    @Test func descriptionNamesTheError() {
        #expect(Errno.badFileDescriptor.description == "EBADF (Bad file descriptor)")
        #expect(Errno.wouldBlock.description.hasPrefix("EAGAIN ("))
        #expect(Errno(rawValue: 4095).description.hasPrefix("errno 4095"))
        #expect(Errno(rawValue: EWOULDBLOCK) == .wouldBlock)
    }
}
