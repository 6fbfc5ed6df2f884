// SocketDiagnostics exists so Sluice can tell which socket of the tunnelled
// programs sent a flow: sock_diag(7) answers with the socket's owner (uid)
// and inode, and the inode leads to the process (`ProcessTable`). The socket
// is opened in the programs' network namespace, since sock_diag sees only the
// sockets of its own.
import CShim
import Glibc

public final class SocketDiagnostics {
    public enum Transport: Sendable { case tcp, udp }

    /// What the kernel says of one socket.
    public struct Entry: Sendable, Equatable {
        /// The socket's local address and port, as the kernel has it (the
        /// unspecified address for an unbound or wildcard socket).
        public var localAddress: SysIPAddress
        public var localPort: UInt16
        public var userID: UInt32
        /// The socket's inode: /proc/PID/fd/N of its holders stat to it.
        public var inode: UInt32
        /// The port it is connected to; 0 for a listener or an unconnected UDP socket.
        public var remotePort: UInt16

        public init(localAddress: SysIPAddress, localPort: UInt16, userID: UInt32, inode: UInt32, remotePort: UInt16 = 0) {
            self.localAddress = localAddress; self.localPort = localPort; self.userID = userID; self.inode = inode
            self.remotePort = remotePort
        }
    }

    public let descriptor: FileDescriptor
    private let buffer: UnsafeMutableRawBufferPointer
    private var sequence: UInt32 = 0

    /// Enough for a UDP dump's datagrams (the kernel fills up to a page or
    /// two per recv) and every request.
    private static let bufferSize = 32 * 1024
    /// A dump's walk ends here, however many sockets the namespace holds.
    public static let maximumDumpMessages = 100_000

    /// A NETLINK_SOCK_DIAG socket in the calling thread's network namespace.
    /// Replies slower than `timeoutMilliseconds` fail with ETIMEDOUT.
    public convenience init(timeoutMilliseconds: Int = 200) throws(Errno) {
        let raw = try valueOrErrno {
            socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_SOCK_DIAG)
        }.get()
        try self.init(adopting: raw, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Takes over a NETLINK_SOCK_DIAG socket made elsewhere: it answers for the
    /// namespace it was made in (`sluice exec` without root gets one from
    /// the helper inside the command's namespace).
    public init(adopting raw: Int32, timeoutMilliseconds: Int = 200) throws(Errno) {
        descriptor = FileDescriptor(rawValue: raw)
        var timeout = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        _ = try valueOrErrno {
            setsockopt(raw, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }.get()
        buffer = .allocate(byteCount: Self.bufferSize, alignment: 8)
    }

    deinit { buffer.deallocate() }

    /// The TCP socket bound to `local` and connected to `remote` (a SYN_SENT
    /// socket included), found by the kernel's own hash lookup; nil if none.
    public func tcpSocket(local: SysIPAddress, localPort: UInt16, remote: SysIPAddress, remotePort: UInt16) throws(Errno) -> Entry? {
        var found: Entry?
        try exchange(family: local.family, protocolNumber: UInt8(IPPROTO_TCP), dump: false,
                     local: local, localPort: localPort, remote: remote, remotePort: remotePort) { entry in
            found = entry
            return false
        }
        return found
    }

    /// The UDP socket that sends from `local`:`localPort` of `family`: a
    /// dump of the family's UDP sockets, since an unconnected socket has no
    /// remote end to look up by. A socket bound to the wildcard address
    /// counts; one bound to `local` itself wins.
    public func udpSocket(family: SysIPAddress.Family, local: SysIPAddress, localPort: UInt16) throws(Errno) -> Entry? {
        var wildcard: Entry?
        var exact: Entry?
        let any: SysIPAddress = family == .v4 ? .anyV4 : .anyV6
        try exchange(family: family, protocolNumber: UInt8(IPPROTO_UDP), dump: true,
                     local: any, localPort: 0, remote: any, remotePort: 0) { entry in
            guard entry.localPort == localPort else { return true }
            if entry.localAddress == local || entry.localAddress == Self.mapped(local) {
                exact = entry
                return false
            }
            if entry.localAddress == any, wildcard == nil { wildcard = entry }
            return true
        }
        return exact ?? wildcard
    }

    /// The TCP sockets of `family` listening in this socket's namespace (a
    /// dump restricted to the LISTEN state), at most `limit` of them.
    public func listeningTCPSockets(family: SysIPAddress.Family, limit: Int = 4096) throws(Errno) -> [Entry] {
        var found: [Entry] = []
        let any: SysIPAddress = family == .v4 ? .anyV4 : .anyV6
        try exchange(family: family, protocolNumber: UInt8(IPPROTO_TCP), dump: true, states: 1 << Self.listenState,
                     local: any, localPort: 0, remote: any, remotePort: 0) { entry in
            found.append(entry)
            return found.count < limit
        }
        return found
    }

    /// The UDP sockets of `family` bound and not connected (a server's, or a
    /// client's that sends with sendto), at most `limit` of them.
    public func unconnectedUDPSockets(family: SysIPAddress.Family, limit: Int = 4096) throws(Errno) -> [Entry] {
        var found: [Entry] = []
        let any: SysIPAddress = family == .v4 ? .anyV4 : .anyV6
        try exchange(family: family, protocolNumber: UInt8(IPPROTO_UDP), dump: true,
                     local: any, localPort: 0, remote: any, remotePort: 0) { entry in
            if entry.remotePort == 0, entry.localPort != 0 { found.append(entry) }
            return found.count < limit
        }
        return found
    }

    /// TCP_LISTEN in the kernel's numbering of TCP states.
    static let listenState: UInt32 = 10

    /// ::ffff:a.b.c.d for an IPv4 address: how an IPv6 socket holds one.
    public static func mapped(_ address: SysIPAddress) -> SysIPAddress {
        guard case let .v4(value) = address else { return address }
        return .v6(high: 0, low: 0xffff_0000_0000 | UInt64(value))
    }

    /// Sends one SOCK_DIAG_BY_FAMILY request and hands each answer to
    /// `body` until it returns false, the dump ends or an error comes.
    private func exchange(family: SysIPAddress.Family, protocolNumber: UInt8, dump: Bool, states: UInt32 = 0xffff_ffff,
                          local: SysIPAddress, localPort: UInt16, remote: SysIPAddress, remotePort: UInt16,
                          _ body: (Entry) -> Bool) throws(Errno) {
        sequence &+= 1
        let expected = sequence
        var request = inet_diag_req_v2()
        request.sdiag_family = family.addressFamily
        request.sdiag_protocol = protocolNumber
        request.idiag_states = states
        request.id.idiag_sport = localPort.bigEndian
        request.id.idiag_dport = remotePort.bigEndian
        Self.store(local, into: &request.id.idiag_src)
        Self.store(remote, into: &request.id.idiag_dst)
        // INET_DIAG_NOCOOKIE: match whatever socket has this address.
        request.id.idiag_cookie = (0xffff_ffff, 0xffff_ffff)
        var header = nlmsghdr()
        header.nlmsg_len = UInt32(MemoryLayout<nlmsghdr>.size + MemoryLayout<inet_diag_req_v2>.size)
        header.nlmsg_type = UInt16(SOCK_DIAG_BY_FAMILY)
        header.nlmsg_flags = UInt16(NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0))
        header.nlmsg_seq = expected
        let headerSize = MemoryLayout<nlmsghdr>.size
        withUnsafeBytes(of: &header) { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: headerSize) }
        withUnsafeBytes(of: &request) { (buffer.baseAddress! + headerSize).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        var kernel = sockaddr_nl()
        kernel.nl_family = sa_family_t(AF_NETLINK)
        let length = Int(header.nlmsg_len)
        _ = try valueOrErrno {
            withUnsafePointer(to: &kernel) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor.rawValue, buffer.baseAddress, length, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                }
            }
        }.get()
        var seen = 0
        var wanted = true
        while seen < Self.maximumDumpMessages {
            let received = try valueOrErrno { recv(descriptor.rawValue, buffer.baseAddress, buffer.count, 0) }.get()
            let datagram = UnsafeRawBufferPointer(rebasing: buffer[0..<received])
            let step = Self.walk(datagram, sequence: expected) { entry in
                seen += 1
                if wanted { wanted = body(entry) }
                // After a single lookup's answer, or once `body` is done with a dump,
                // the rest is read only to leave the socket clean for the next request.
                return true
            }
            switch step {
            // A lookup's answer is one message; a datagram without it was left by an
            // earlier request that timed out, and is skipped.
            case .more: if !dump, seen > 0 { return }
            case .done: return
            case let .failed(errno):
                if errno == .noSuchFileOrDirectory { return }
                throw errno
            }
        }
    }

    /// What one datagram of answers said.
    public enum Step: Equatable {
        /// Answers (or none for this request); a dump continues in the next datagram.
        case more
        /// NLMSG_DONE.
        case done
        /// NLMSG_ERROR, or a datagram shorter than its headers say.
        case failed(Errno)
    }

    /// Walks the messages of one datagram, handing each inet_diag_msg that
    /// answers `sequence` to `body` (false stops the walk). Every length is
    /// checked before a read.
    public static func walk(_ datagram: UnsafeRawBufferPointer, sequence: UInt32, _ body: (Entry) -> Bool) -> Step {
        let headerSize = MemoryLayout<nlmsghdr>.size
        var offset = 0
        while offset + headerSize <= datagram.count {
            let messageLength = Int(datagram.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            let type = Int32(datagram.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self))
            let messageSequence = datagram.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            guard messageLength >= headerSize, offset + messageLength <= datagram.count else { return .failed(.protocolError) }
            if messageSequence == sequence {
                if type == NLMSG_DONE { return .done }
                if type == NLMSG_ERROR {
                    guard messageLength >= headerSize + 4 else { return .failed(.protocolError) }
                    let error = datagram.loadUnaligned(fromByteOffset: offset + headerSize, as: Int32.self)
                    return error == 0 ? .done : .failed(Errno(rawValue: -error))
                }
                if type == SOCK_DIAG_BY_FAMILY {
                    guard messageLength >= headerSize + MemoryLayout<inet_diag_msg>.size else { return .failed(.protocolError) }
                    let message = datagram.loadUnaligned(fromByteOffset: offset + headerSize, as: inet_diag_msg.self)
                    let address = Self.address(family: message.idiag_family, message.id.idiag_src)
                    let entry = Entry(localAddress: address, localPort: UInt16(bigEndian: message.id.idiag_sport),
                                      userID: message.idiag_uid, inode: message.idiag_inode,
                                      remotePort: UInt16(bigEndian: message.id.idiag_dport))
                    if !body(entry) { return .more }
                }
            }
            offset += Int(cshim_nlmsg_align(Int32(messageLength)))
        }
        return .more
    }

    private static func store(_ address: SysIPAddress, into words: inout (UInt32, UInt32, UInt32, UInt32)) {
        switch address {
        case let .v4(value):
            words = (value.bigEndian, 0, 0, 0)
        case let .v6(high, low):
            words = (UInt32(truncatingIfNeeded: high >> 32).bigEndian, UInt32(truncatingIfNeeded: high).bigEndian,
                     UInt32(truncatingIfNeeded: low >> 32).bigEndian, UInt32(truncatingIfNeeded: low).bigEndian)
        }
    }

    private static func address(family: UInt8, _ words: (UInt32, UInt32, UInt32, UInt32)) -> SysIPAddress {
        if Int32(family) == AF_INET { return .v4(UInt32(bigEndian: words.0)) }
        let high = UInt64(UInt32(bigEndian: words.0)) << 32 | UInt64(UInt32(bigEndian: words.1))
        let low = UInt64(UInt32(bigEndian: words.2)) << 32 | UInt64(UInt32(bigEndian: words.3))
        return .v6(high: high, low: low)
    }
}
