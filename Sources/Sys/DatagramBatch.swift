internal import CShim
internal import Glibc

/// Batched datagram I/O with sendmmsg(2) and recvmmsg(2): many UDP datagrams
/// per system call, on a connected socket. The headers and iovecs are
/// allocated once for `capacity` datagrams and reused for every batch.
public final class DatagramBatch {
    public let capacity: Int
    let headers: UnsafeMutablePointer<cshim_mmsghdr>
    let vectors: UnsafeMutablePointer<iovec>

    public init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        headers = .allocate(capacity: capacity)
        headers.initialize(repeating: cshim_mmsghdr(), count: capacity)
        vectors = .allocate(capacity: capacity)
        vectors.initialize(repeating: iovec(), count: capacity)
    }

    deinit {
        headers.deallocate()
        vectors.deallocate()
    }

    /// Sends `datagrams` (at most `capacity`) in one call; returns how many went.
    public func send(_ datagrams: [UnsafeRawBufferPointer], on socket: borrowing Socket) throws(Errno) -> SysResult<Int> {
        let count = min(datagrams.count, capacity)
        for i in 0 ..< count {
            vectors[i] = iovec(iov_base: UnsafeMutableRawPointer(mutating: datagrams[i].baseAddress), iov_len: datagrams[i].count)
            headers[i] = cshim_mmsghdr()
            headers[i].msg_hdr.msg_iov = vectors + i
            headers[i].msg_hdr.msg_iovlen = 1
        }
        let fd = socket.descriptor.rawValue
        return try valueOrErrno { cshim_sendmmsg(fd, headers, UInt32(count), Int32(MSG_NOSIGNAL)) }.map(Int.init)
    }

    /// Receives up to `buffers.count` datagrams (at most `capacity`) in one call,
    /// storing each length in `lengths`; returns how many arrived.
    public func receive(into buffers: [UnsafeMutableRawBufferPointer], lengths: inout [Int],
                        on socket: borrowing Socket) throws(Errno) -> SysResult<Int> {
        let count = min(buffers.count, capacity)
        for i in 0 ..< count {
            vectors[i] = iovec(iov_base: buffers[i].baseAddress, iov_len: buffers[i].count)
            headers[i] = cshim_mmsghdr()
            headers[i].msg_hdr.msg_iov = vectors + i
            headers[i].msg_hdr.msg_iovlen = 1
        }
        let fd = socket.descriptor.rawValue
        let result = try valueOrErrno { cshim_recvmmsg(fd, headers, UInt32(count), Int32(MSG_DONTWAIT)) }
        if case let .value(n) = result {
            if lengths.count < Int(n) { lengths += Array(repeating: 0, count: Int(n) - lengths.count) }
            for i in 0 ..< Int(n) { lengths[i] = Int(headers[i].msg_len) }
            return .value(Int(n))
        }
        return .wouldBlock
    }
}

extension SysResult {
    func map<U>(_ transform: (Value) -> U) -> SysResult<U> {
        switch self {
        case let .value(v): return .value(transform(v))
        case .wouldBlock: return .wouldBlock
        }
    }
}
