internal import Capture
internal import HTTP
internal import Relay
internal import Rules
internal import Stack
internal import Sys
internal import TLS
internal import Wire

/// Bytes on their way from one socket to the other, in a fixed buffer: a side
/// is read only while its peer's buffer has room, so a slow reader stops a
/// fast writer (backpressure) and memory per connection stays bounded.
final class RelayBuffer {
    let storage: UnsafeMutableRawBufferPointer
    /// Unsent bytes are storage[start ..< end].
    private(set) var start = 0
    private(set) var end = 0

    init(capacity: Int) {
        storage = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { storage.deallocate() }

    var count: Int { end - start }
    var isEmpty: Bool { start == end }
    var hasRoom: Bool { end < storage.count || start > 0 }
    /// How many bytes more it can take (sliding the unsent ones to the front if need be).
    var room: Int { storage.count - count }

    /// The unsent bytes.
    var readable: UnsafeRawBufferPointer { UnsafeRawBufferPointer(storage.sub(start, end - start)) }

    /// Where the next read goes; slides the unsent bytes to the front first when that makes room.
    var freeSpace: UnsafeMutableRawBufferPointer {
        if end == storage.count, start > 0 { compact() }
        return storage.sub(end, storage.count - end)
    }

    func commit(_ n: Int) { end += n }

    func consume(_ n: Int) {
        start += n
        if start == end { start = 0; end = 0 }
    }

    /// Keeps the first `n` unsent bytes and forgets the rest.
    func truncate(to n: Int) {
        precondition(n >= 0 && n <= count)
        end = start + n
        if start == end { start = 0; end = 0 }
    }

    /// Puts `bytes` in place of the unsent bytes at `range` (offsets into
    /// `readable`); false, changing nothing, when the result would not fit.
    func replace(_ range: Range<Int>, with bytes: [UInt8]) -> Bool {
        precondition(range.lowerBound >= 0 && range.upperBound <= count)
        let newCount = count - range.count + bytes.count
        guard newCount <= storage.count else { return false }
        compact()
        let base = storage.baseAddress!
        let tail = count - range.upperBound
        if tail > 0 {
            (base + range.lowerBound + bytes.count).copyMemory(from: base + range.upperBound, byteCount: tail)
        }
        bytes.withUnsafeBytes { (base + range.lowerBound).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        end = newCount
        return true
    }

    /// Copies `bytes` in whole, or nothing when they do not fit.
    func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count > 0 else { return true }
        if storage.count - end < bytes.count { compact() }
        guard storage.count - end >= bytes.count else { return false }
        storage.baseAddress!.advanced(by: end).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        end += bytes.count
        return true
    }

    func append(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { append($0) } }

    private func compact() {
        guard start > 0 else { return }
        let n = end - start
        if n > 0 { storage.baseAddress!.copyMemory(from: storage.baseAddress!.advanced(by: start), byteCount: n) }
        start = 0
        end = n
    }
}

/// One client of `sluice proxy`: its socket, the listener's handshake, the
/// upstream connection once there is one, and a buffer per direction.
final class InboundConnection {
    enum Phase: String, CaseIterable {
        /// Reading the client's greeting / request through Relay's server machine.
        case handshake
        /// Answered already, reading the client's first bytes for the rules
        /// (its target is an address and a DOMAIN rule needs a name: TLS SNI, Host).
        case sniffing
        /// Waiting for the host's resolver to name an address.
        case resolving
        /// Non-blocking connect to the target or the upstream proxy under way.
        case connecting
        /// Connected to an upstream proxy, shaking hands with it.
        case proxyHandshake
        /// Connected (perhaps through a proxy) to an https origin: Sluice's
        /// TLS handshake with it is under way (ProxyServer+Intercept.swift).
        case originTLS
        /// Bytes flow both ways.
        case relaying
        /// A SOCKS5 UDP association: datagrams flow; the TCP connection only keeps it alive.
        case associated
        /// A last answer (a refusal, a failure reply) is being written; then close.
        case closing
    }

    enum Listener: String { case socks5 = "SOCKS5", http = "HTTP" }

    let id: UInt64
    let client: Socket
    let peer: SocketAddress
    let listener: Listener
    var socks: SOCKS5ServerHandshake
    var http: HTTPProxyServerHandshake
    var phase: Phase = .handshake
    /// Client bytes the handshake has not consumed (the request, and anything pipelined after it).
    var received: [UInt8] = []
    var target: ProxyTarget?
    /// For an absolute-form HTTP request: the head to send first, as planned
    /// (origin form, or absolute form to an upstream HTTP proxy).
    var forwardHead: [UInt8]?
    /// The HTTP listener's plain-HTTP exchange under way (ProxyServer+HTTP.swift).
    var forwarding: HTTPForwarding?
    /// Plain-HTTP exchanges this connection finished: a kept-alive client
    /// waiting for its next request is idle, not stalled in a handshake.
    var requestsServed = 0
    /// Where the upstream socket leads, so a next request for the same place reuses it.
    var upstreamTarget: UpstreamTarget? { didSet { upstreamLabel = upstreamTarget?.description } }
    /// `upstreamTarget` as each request's record names it: made once per upstream, not per request.
    private(set) var upstreamLabel: String?
    /// The address it connected to (HAR's serverIPAddress).
    var upstreamAddress: SysIPAddress?
    /// With `--flow-log`: the connection's line, written when it ends, and how it ended.
    var record: FlowRecord?
    /// Who the client is, when an owner rule asked (ProxyServer+Owner.swift).
    var ownerLookup: OwnerLookupState = .notAsked
    var owner: FlowOwner? {
        if case let .known(owner) = ownerLookup { return owner }
        return nil
    }

    enum OwnerLookupState {
        case notAsked
        /// Its process is being searched for.
        case pending
        /// Nil: the client's socket was not found.
        case known(FlowOwner?)
    }
    var endStatus: FlowRecord.Status?
    /// The next plain-HTTP request's number on this connection (the flow log's requestIndex).
    var requestIndex = 0
    var route = "?"
    var upstream: SocketBox?
    var proxyHandshake: ProxyHandshake?
    /// The name and port a resolving connection waits for.
    var pendingName: DNSName?
    var pendingPort: UInt16 = 0
    let toUpstream: RelayBuffer
    let toClient: RelayBuffer
    /// Bytes for the client after all of `toClient`'s: a response [Body
    /// Rewrite] held and let go whole, larger than `toClient` could take. They
    /// move into `toClient` as it drains, and the upstream is not read
    /// until they all have (`ProxyServer.upstreamHasRoom`), so order holds.
    var toClientLater = OutgoingBytes()
    /// Something is still to go to the client.
    var clientOwed: Bool { !toClient.isEmpty || !toClientLater.isEmpty }
    /// As `toClientLater`, for a request [Body Rewrite] held: the client is
    /// not read (`ProxyServer.readsClient`) until they all went into `toUpstream`.
    var toUpstreamLater = OutgoingBytes()
    /// Something is still to go upstream.
    var upstreamOwed: Bool { !toUpstream.isEmpty || !toUpstreamLater.isEmpty }
    var clientReadClosed = false
    /// A closing client's EOF was read: stop watching it for reads (level-triggered epoll would repeat it).
    var clientDrained = false
    /// The client's FIN came while its plain-HTTP exchange waited for the
    /// response (epoll's RDHUP; the FIN itself is read later, after anything
    /// pipelined before it). Its keepalive then probes every few seconds.
    var clientFinSeen = false
    var upstreamReadClosed = false
    var clientWriteClosed = false
    var upstreamWriteClosed = false
    var clientInterest: Epoll.Events = []
    var upstreamInterest: Epoll.Events = []
    /// The socket reported a hang-up or an error. epoll reports those whatever
    /// the interest, so a hung-up socket we cannot act on yet (its peer's buffer
    /// is full) is taken out of the set ("parked") until there is room again.
    var clientHungUp = false
    var upstreamHungUp = false
    var clientParked = false
    var upstreamParked = false
    /// Set for a SOCKS5 UDP ASSOCIATE: the datagram sockets, while the TCP connection keeps it alive.
    var association: UDPAssociation?
    /// Set once a tunnel's bytes move through pipes (ProxyServer+Splice.swift); the buffers stay empty then.
    var spliced: SplicedRelay?
    /// Set once a tunnel to a [MITM] name is intercepted: Sluice's TLS toward
    /// the client. The buffers and `received` then hold plaintext.
    var clientTLS: TLSOverSocket<TLSServer>?
    /// Sluice's TLS to an https origin, for the upstream connection it rides on.
    var upstreamTLS: InterceptedUpstream?
    /// The success reply went before the upstream was open (sniffing): a
    /// failure from then on can only be a reset.
    var repliedEarly = false
    /// The sniff was given more time once for a ClientHello that came in part.
    var waitedForHello = false
    /// When the current stage gives up (nil while relaying).
    var deadline: Instant?
    var bytesUp = 0
    var bytesDown = 0

    init(id: UInt64, client: consuming Socket, peer: SocketAddress, listener: Listener,
         credentials: ProxyCredentials?, bufferSize: Int) {
        self.id = id
        self.client = client
        self.peer = peer
        self.listener = listener
        socks = SOCKS5ServerHandshake(credentials: credentials)
        http = HTTPProxyServerHandshake(credentials: credentials)
        toUpstream = RelayBuffer(capacity: bufferSize)
        toClient = RelayBuffer(capacity: bufferSize)
    }

    /// Four tokens per connection: the client's TCP socket, the upstream TCP
    /// socket (or a UDP association's IPv4 socket to targets), the association's
    /// socket facing the client, and its IPv6 socket to targets.
    var clientToken: UInt64 { ProxyServer.firstConnectionToken + id * 4 }
    var upstreamToken: UInt64 { clientToken + 1 }
    var relayToken: UInt64 { clientToken + 2 }
    var outboundV6Token: UInt64 { clientToken + 3 }

    /// A key of this connection's own for the host's resolver (clients of two
    /// listeners may share an address and port; ids never repeat).
    var resolverKey: FlowKey {
        FlowKey(transport: .tcp, appAddress: .v6(IPv6Address(high: 0, low: id)), appPort: 0,
                destinationAddress: .v6(.any), destinationPort: 0)
    }

    /// What may be written to the client now: all of `toClient`, except a response head still being read.
    var sendableToClient: Int { spliced?.down.count ?? forwarding?.heldFrom ?? toClient.count }

    /// The client took `n` bytes: offsets into `toClient.readable` move with them.
    func sentToClient(_ n: Int) {
        toClient.consume(n)
        forwarding?.sentToClient(n)
        refillToClient()
    }

    /// Moves what `toClientLater` holds into `toClient`'s room. Those bytes
    /// were scanned before any still in `toClient`'s scan, so the exchange's
    /// offsets move past them.
    func refillToClient() {
        let n = Self.refill(toClient, from: &toClientLater)
        if n > 0 { forwarding?.movedBeforeScan(n) }
    }

    /// Moves as much of `later` as `buffer` has room for; returns how much.
    private static func refill(_ buffer: RelayBuffer, from later: inout OutgoingBytes) -> Int {
        var moved = 0
        later.drain { bytes in
            let n = min(bytes.count, buffer.room)
            guard n > 0, buffer.append(UnsafeRawBufferPointer(rebasing: bytes[0 ..< n])) else { return 0 }
            moved = n
            return n
        }
        return moved
    }

    /// The upstream took `n` bytes.
    func sentUpstream(_ n: Int, now: Instant) {
        toUpstream.consume(n)
        bytesUp += n
        forwarding?.sentUpstream(n, now: now)
        refillToUpstream()
    }

    /// Moves what `toUpstreamLater` holds into `toUpstream`'s room: bytes the
    /// request's scan has passed already.
    func refillToUpstream() {
        let n = Self.refill(toUpstream, from: &toUpstreamLater)
        if n > 0 { forwarding?.requestScanned += n }
    }

    var description: String {
        "#\(id) \(peer) \(listener) → \(target.map { "\($0)" } ?? "?") [\(phase.rawValue)]"
    }
}

extension InboundConnection {
    /// A request head without the client's hop-by-hop Connection and
    /// Keep-Alive lines (they were for us, RFC 9110 §7.6.1), and with
    /// `Connection: close` when this is the connection's last exchange, or
    /// `Connection: upgrade` when it asks for a protocol switch (its Upgrade
    /// line stays: the origin must see both to answer 101).
    /// Works on bytes: header values need not be UTF-8.
    static func forwardedHead(_ head: [UInt8], close: Bool, upgrade: Bool = false) -> [UInt8] {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = 0
        var i = 0
        while i + 1 < head.count {
            if head[i] == 0x0d, head[i + 1] == 0x0a {
                lines.append(head[lineStart ..< i])
                i += 2
                lineStart = i
            } else {
                i += 1
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(head.count + 20)
        for (index, line) in lines.enumerated() where !line.isEmpty {
            if index > 0, isHopByHop(line) { continue }
            out += line
            out += [0x0d, 0x0a]
        }
        if upgrade {
            out += Array("Connection: upgrade\r\n".utf8)
        } else if close {
            out += Array("Connection: close\r\n".utf8)
        }
        out += [0x0d, 0x0a]
        return out
    }

    private static func isHopByHop(_ line: ArraySlice<UInt8>) -> Bool {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return false }
        let name = String(decoding: line[line.startIndex ..< colon], as: UTF8.self).lowercased()
        return name == "connection" || name == "keep-alive"
    }
}
