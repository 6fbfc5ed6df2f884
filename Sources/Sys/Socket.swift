internal import CShim
internal import Glibc

/// An address and port for a socket: the value Sluice connects its upstream
/// sockets to and binds its servers on.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    public var address: SysIPAddress
    public var port: UInt16

    public init(_ address: SysIPAddress, port: UInt16) {
        self.address = address
        self.port = port
    }

    public var description: String {
        switch address {
        case .v4: return "\(address):\(port)"
        case .v6: return "[\(address)]:\(port)"
        }
    }

    /// Runs `body` with the sockaddr_in or sockaddr_in6 for this address.
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        switch address {
        case let .v4(value):
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = port.bigEndian
            sa.sin_addr.s_addr = value.bigEndian
            return withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case let .v6(high, low):
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sa.sin6_addr) { raw in
                raw.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
                raw.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
            }
            return withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    /// Reads a sockaddr_in/sockaddr_in6 the kernel filled in.
    static func from(_ storage: UnsafeRawPointer) -> SocketAddress? {
        let family = storage.load(as: sa_family_t.self)
        if family == sa_family_t(AF_INET) {
            let sa = storage.load(as: sockaddr_in.self)
            return SocketAddress(.v4(UInt32(bigEndian: sa.sin_addr.s_addr)), port: UInt16(bigEndian: sa.sin_port))
        }
        if family == sa_family_t(AF_INET6) {
            let sa = storage.load(as: sockaddr_in6.self)
            var a = sa.sin6_addr
            let (high, low) = withUnsafeBytes(of: &a) { raw in
                (UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                 UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
            }
            return SocketAddress(.v6(high: high, low: low), port: UInt16(bigEndian: sa.sin6_port))
        }
        return nil
    }
}

/// A non-blocking TCP or UDP socket with a single owner. The engine's
/// upstream connections and its local servers are all made of these.
public struct Socket: ~Copyable {
    public enum Kind: Sendable { case tcp, udp, rawICMP, ping }

    public let descriptor: FileDescriptor
    public let kind: Kind

    /// A new non-blocking, close-on-exec socket of the address's family.
    /// `mark` sets SO_MARK, so policy routing keeps Sluice's own traffic out of its TUN.
    public init(_ kind: Kind, family: SysIPAddress.Family, mark: UInt32? = nil) throws(Errno) {
        let domain = family == .v4 ? AF_INET : AF_INET6
        let base: Int32
        var proto: Int32 = 0
        switch kind {
        case .tcp: base = Int32(SOCK_STREAM.rawValue)
        case .udp: base = Int32(SOCK_DGRAM.rawValue)
        case .rawICMP:
            // Raw ICMP (CAP_NET_RAW): ping sockets would need ping_group_range, a
            // sysctl of the host's that Sluice must not change.
            base = Int32(SOCK_RAW.rawValue)
            proto = family == .v4 ? Int32(IPPROTO_ICMP) : Int32(IPPROTO_ICMPV6)
        case .ping:
            // An ICMP echo ("ping") socket: no privilege, but the user's group
            // must be in ping_group_range, and the kernel owns the identifier.
            base = Int32(SOCK_DGRAM.rawValue)
            proto = family == .v4 ? Int32(IPPROTO_ICMP) : Int32(IPPROTO_ICMPV6)
        }
        let type = base | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let raw = try valueOrErrno { socket(domain, type, proto) }.get()
        // Options go on the raw descriptor first, so that a failure closes it before any owner exists.
        do {
            if var value = mark {
                _ = try valueOrErrno { setsockopt(raw, SOL_SOCKET, cshim_SO_MARK, &value, socklen_t(MemoryLayout<UInt32>.size)) }.get()
            }
            if kind == .tcp {
                // Nagle off: the app's segment boundaries are already the right ones
                // (../shared/spec/bench-anchors.md, the 91 req/s trap).
                var one: Int32 = 1
                _ = try valueOrErrno { setsockopt(raw, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) }.get()
            }
        } catch {
            _ = Glibc.close(raw)
            throw error
        }
        descriptor = FileDescriptor(rawValue: raw)
        self.kind = kind
    }

    /// Starts a connection. `.value(())` when it completed at once, `.wouldBlock`
    /// while in progress (wait for writability, then check `pendingError`).
    public func connect(to address: SocketAddress) throws(Errno) -> SysResult<Void> {
        let result = address.withSockaddr { sa, length in Glibc.connect(descriptor.rawValue, sa, length) }
        if result == 0 { return .value(()) }
        let errno = Errno.current
        if errno == .inProgress || errno == .wouldBlock { return .wouldBlock }
        if errno == .interrupted { return .wouldBlock } // the connect goes on in the background
        throw errno
    }

    /// SO_ERROR: the outcome of a non-blocking connect, or an asynchronous error.
    public func pendingError() -> Errno? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor.rawValue, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return Errno.current }
        return value == 0 ? nil : Errno(rawValue: value)
    }

    public func bind(_ address: SocketAddress, reuseAddress: Bool = true) throws(Errno) {
        if reuseAddress { try setOption(SOL_SOCKET, SO_REUSEADDR, 1) }
        let result = address.withSockaddr { sa, length in Glibc.bind(descriptor.rawValue, sa, length) }
        if result != 0 { throw Errno.current }
    }

    /// The TTL (IPv4) or hop limit (IPv6) of what the socket sends: both
    /// options are set, whichever the socket's family takes.
    public func setHopLimit(_ value: UInt8) {
        try? setOption(Int32(IPPROTO_IP), IP_TTL, Int32(value))
        try? setOption(Int32(IPPROTO_IPV6), IPV6_UNICAST_HOPS, Int32(value))
    }

    /// SO_REUSEADDR after the fact: a socket bound alone lets later sockets
    /// that ask for reuse bind beside it (UDP: they share the port).
    public func setReuseAddress() throws(Errno) {
        try setOption(SOL_SOCKET, SO_REUSEADDR, 1)
    }

    public func listen(backlog: Int32 = 512) throws(Errno) {
        _ = try valueOrErrno { Glibc.listen(descriptor.rawValue, backlog) }.get()
    }

    /// A connection a listening socket accepted. Frozen so other modules may
    /// take the socket out (`let socket = accepted.socket`).
    @frozen
    public struct Accepted: ~Copyable {
        public var socket: Socket
        public var peer: SocketAddress
    }

    /// Accepts one connection, non-blocking, with its peer's address; nil when none is waiting.
    public func accept() throws(Errno) -> Accepted? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try withUnsafeMutablePointer(to: &storage) { pointer throws(Errno) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(Errno) in
                try valueOrErrno { cshim_accept4(descriptor.rawValue, sa, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)) }
            }
        }
        guard case let .value(raw) = result else { return nil }
        let peer = withUnsafeBytes(of: &storage) { SocketAddress.from($0.baseAddress!) } ?? SocketAddress(.anyV4, port: 0)
        return Accepted(socket: Socket(adopting: raw, kind: .tcp), peer: peer)
    }

    init(adopting raw: Int32, kind: Kind) {
        descriptor = FileDescriptor(rawValue: raw)
        self.kind = kind
        if kind == .tcp { try? setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1) }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> SysResult<Int> {
        try descriptor.read(into: buffer)
    }

    public func write(_ buffer: UnsafeRawBufferPointer) throws(Errno) -> SysResult<Int> {
        // MSG_NOSIGNAL: a peer that went away is an EPIPE for this flow, not a SIGPIPE for the tunnel.
        try valueOrErrno { Glibc.send(descriptor.rawValue, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Sends one datagram to `address` (UDP), or on the connected peer when nil.
    public func send(_ buffer: UnsafeRawBufferPointer, to address: SocketAddress?) throws(Errno) -> SysResult<Int> {
        guard let address else { return try write(buffer) }
        return try valueOrErrno {
            address.withSockaddr { sa, length in
                Glibc.sendto(descriptor.rawValue, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), sa, length)
            }
        }
    }

    /// Receives one datagram and who sent it.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> SysResult<(Int, SocketAddress?)> {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try withUnsafeMutablePointer(to: &storage) { pointer throws(Errno) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(Errno) in
                try valueOrErrno { recvfrom(descriptor.rawValue, buffer.baseAddress, buffer.count, 0, sa, &length) }
            }
        }
        switch result {
        case .wouldBlock: return .wouldBlock
        case let .value(n):
            let from = withUnsafeBytes(of: &storage) { SocketAddress.from($0.baseAddress!) }
            return .value((n, from))
        }
    }

    public enum ShutdownDirection { case read, write, both }

    public func shutdown(_ direction: ShutdownDirection) {
        let how: Int32
        switch direction {
        case .read: how = Int32(SHUT_RD)
        case .write: how = Int32(SHUT_WR)
        case .both: how = Int32(SHUT_RDWR)
        }
        _ = Glibc.shutdown(descriptor.rawValue, how)
    }

    /// Makes close() send a RST instead of a FIN (SO_LINGER with a zero timeout):
    /// how an app's RST is passed upstream.
    public func setResetOnClose() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(descriptor.rawValue, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    }

    /// The local address the kernel chose.
    public var localAddress: SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor.rawValue, $0, &length) }
        }
        guard ok == 0 else { return nil }
        return withUnsafeBytes(of: &storage) { SocketAddress.from($0.baseAddress!) }
    }

    /// SO_OOBINLINE: a peer's urgent byte stays in the stream. A relay that
    /// reads only the stream loses it otherwise (the kernel takes it out of
    /// line, for MSG_OOB, which the relay never asks for).
    public func setOutOfBandInline() {
        try? setOption(SOL_SOCKET, SO_OOBINLINE, 1)
    }

    /// SO_RCVBUFFORCE, which may pass net.core.rmem_max (with CAP_NET_ADMIN),
    /// else SO_RCVBUF (capped there).
    public func setReceiveBuffer(_ bytes: Int32) {
        if (try? setOption(SOL_SOCKET, SO_RCVBUFFORCE, bytes)) == nil { try? setOption(SOL_SOCKET, SO_RCVBUF, bytes) }
    }

    public func setBufferSizes(send: Int32? = nil, receive: Int32? = nil) {
        if let send { try? setOption(SOL_SOCKET, SO_SNDBUF, send) }
        if let receive { try? setOption(SOL_SOCKET, SO_RCVBUF, receive) }
    }

    /// TCP keepalive (SO_KEEPALIVE): after `idleSeconds` without traffic the
    /// kernel probes the peer every `intervalSeconds`, and `count` unanswered
    /// probes end the connection with ETIMEDOUT. Nil leaves the kernel's
    /// setting (tcp_keepalive_time, 2 hours by default, and so on).
    public func setKeepalive(idleSeconds: Int? = nil, intervalSeconds: Int? = nil, count: Int? = nil) {
        try? setOption(SOL_SOCKET, SO_KEEPALIVE, 1)
        if let idleSeconds { try? setOption(Int32(IPPROTO_TCP), TCP_KEEPIDLE, Int32(clamping: idleSeconds)) }
        if let intervalSeconds { try? setOption(Int32(IPPROTO_TCP), TCP_KEEPINTVL, Int32(clamping: intervalSeconds)) }
        if let count { try? setOption(Int32(IPPROTO_TCP), TCP_KEEPCNT, Int32(clamping: count)) }
    }

    func setOption(_ level: Int32, _ name: Int32, _ value: Int32) throws(Errno) {
        var v = value
        _ = try valueOrErrno { setsockopt(descriptor.rawValue, level, name, &v, socklen_t(MemoryLayout<Int32>.size)) }.get()
    }
}
