// DescriptorChannel exists for `sluice exec` without root: a helper process
// makes the TUN and a sock_diag socket inside a user namespace of its own
// (only a single-threaded process may create one, and the loop's process is
// not), then hands the descriptors over here. A descriptor keeps its
// namespace: a TUN made there stays there, whoever holds it.
internal import CShim
internal import Glibc

/// One end of a SOCK_SEQPACKET socketpair: each message arrives whole, with
/// the descriptors sent beside it (SCM_RIGHTS).
public struct DescriptorChannel: ~Copyable {
    public let descriptor: FileDescriptor

    public init(adopting raw: Int32) {
        descriptor = FileDescriptor(rawValue: raw)
    }

    /// The most descriptors one message carries.
    public static let maximumDescriptors = Int(CSHIM_MAXIMUM_PASSED_DESCRIPTORS)

    /// Two connected ends, both close-on-exec (the child's end is handed to
    /// a spawned process explicitly, as its descriptor 3), as raw numbers the
    /// caller owns (a tuple cannot hold two channels).
    public static func pair() throws(Errno) -> (ours: Int32, theirs: Int32) {
        var ends: [Int32] = [-1, -1]
        _ = try valueOrErrno {
            socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends)
        }.get()
        return (ends[0], ends[1])
    }

    /// Gives the descriptor up open, as a raw number.
    public consuming func release() -> Int32 {
        descriptor.release()
    }

    /// Sends `bytes` (at least one: an empty message reads like the peer's
    /// end) with `descriptors`, which stay open here.
    public func send(_ bytes: [UInt8], descriptors: [Int32] = []) throws(Errno) {
        precondition(!bytes.isEmpty && descriptors.count <= Self.maximumDescriptors)
        let raw = descriptor.rawValue
        _ = try valueOrErrno {
            bytes.withUnsafeBytes { data in
                descriptors.withUnsafeBufferPointer { cshim_send_descriptors(raw, data.baseAddress, data.count, $0.baseAddress, Int32($0.count)) }
            }
        }.get()
    }

    /// Waits for the next message: its bytes (empty when the peer closed its
    /// end) and the descriptors that came with it, now this process's
    /// (close-on-exec; the caller owns them). Waits at most
    /// `timeoutMilliseconds`: ETIMEDOUT then.
    public func receive(capacity: Int = 4096, timeoutMilliseconds: Int32) throws(Errno) -> (bytes: [UInt8], descriptors: [Int32]) {
        var poll = pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        let ready = try valueOrErrno { Glibc.poll(&poll, 1, timeoutMilliseconds) }.get()
        guard ready > 0 else { throw Errno.timedOut }
        var bytes = [UInt8](repeating: 0, count: capacity)
        var passed = [Int32](repeating: -1, count: Self.maximumDescriptors)
        var count: Int32 = 0
        let raw = descriptor.rawValue
        let n = try valueOrErrno {
            bytes.withUnsafeMutableBytes { data in
                passed.withUnsafeMutableBufferPointer {
                    cshim_receive_descriptors(raw, data.baseAddress, data.count, $0.baseAddress, Int32($0.count), &count)
                }
            }
        }.get()
        return (Array(bytes.prefix(n)), Array(passed.prefix(Int(count))))
    }
}
