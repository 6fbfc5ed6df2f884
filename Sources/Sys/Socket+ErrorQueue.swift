internal import CShim
internal import Glibc

/// An ICMP error that a network sent about one of a socket's datagrams,
/// read from the socket's error queue (IP_RECVERR): what a router said
/// (network or host unreachable, prohibited, time exceeded), which Linux
/// otherwise keeps from a UDP or ping socket unless the error is "hard"
/// (udp(7), ip(7)).
public struct QueuedICMPError: Sendable, Equatable {
    /// ICMPv4 or ICMPv6, by which family's message it was.
    public var isICMPv6: Bool
    public var type: UInt8
    public var code: UInt8
    /// Who sent it: a router on the way, or the destination itself.
    public var offender: SysIPAddress?
    /// Where the datagram that drew it was going.
    public var destination: SocketAddress?
    /// How many bytes of the datagram the caller's buffer got: a UDP
    /// socket's payload, or a ping socket's echo request from its ICMP header on.
    public var quotedCount: Int
}

extension Socket {
    /// Asks for ICMP errors on the error queue (IP_RECVERR, and IPV6_RECVERR
    /// for an IPv6 socket): every one the kernel matches to this socket, not
    /// only those it reports as errors by itself. Then `receive` fails once
    /// per error, and EPOLLERR holds until `receiveQueuedError` has read
    /// the queue empty. False when the kernel refused both. `false` turns it
    /// off and empties the queue (a TCP socket must not keep it once
    /// connected: with it, Linux turns an ICMP error about an established
    /// connection, which RFC 1122 §4.2.3.9 calls soft, into its end).
    @discardableResult
    public func setReceiveErrors(_ on: Bool = true) -> Bool {
        let value: Int32 = on ? 1 : 0
        let v4 = (try? setOption(Int32(IPPROTO_IP), cshim_IP_RECVERR, value)) != nil
        let v6 = (try? setOption(Int32(IPPROTO_IPV6), cshim_IPV6_RECVERR, value)) != nil
        return v4 || v6
    }

    /// One entry of the error queue, with what it quoted of the datagram's
    /// payload in `buffer`; `.wouldBlock` once the queue is empty. Entries
    /// that are not ICMP (local errors, timestamps) are read and skipped.
    public func receiveQueuedError(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> SysResult<QueuedICMPError> {
        // Bounded: a queue holds at most a socket buffer's worth.
        for _ in 0 ..< 64 {
            var queued = cshim_queued_error()
            var name = sockaddr_storage()
            let result = try valueOrErrno { cshim_receive_error(descriptor.rawValue, buffer.baseAddress, buffer.count, &queued, &name) }
            guard case let .value(n) = result else { return .wouldBlock }
            let origin = Int32(queued.origin)
            guard origin == cshim_SO_EE_ORIGIN_ICMP || origin == cshim_SO_EE_ORIGIN_ICMP6 else { continue }
            let offender = withUnsafeBytes(of: &queued.offender) { SocketAddress.from($0.baseAddress!) }
            let destination = withUnsafeBytes(of: &name) { SocketAddress.from($0.baseAddress!) }
            return .value(QueuedICMPError(isICMPv6: origin == cshim_SO_EE_ORIGIN_ICMP6, type: queued.type, code: queued.code,
                                          offender: offender?.address, destination: destination, quotedCount: n))
        }
        return .wouldBlock
    }
}
