internal import Capture
internal import Stack
internal import Sys
internal import Wire

/// DNS over TCP to Sluice's DNS address (RFC 7766: every DNS implementation
/// must speak it). A client turns to TCP when a UDP answer comes back
/// truncated (TC), which a forwarded answer over 512 bytes or a long [Host]
/// alias chain does, or when it is told to (`dig +tcp`, `options use-vc`).
/// The connection is ended here: each message (a two-byte length, then the
/// query) goes to FakeDNS as a UDP query would. Its own answers are written
/// back at once; a query it forwards goes, over one TCP connection per
/// client connection, to the host's first resolver (or the `server:` line's
/// for its name; when a host's resolver cannot be reached or breaks off
/// unanswered, the next one is asked the same questions), whose answers are passed back whole. Answers may come out of order, which RFC 7766 §6.2.1.1 allows
/// (clients match them by ID).
final class DNSStream {
    /// Bytes from the app that do not yet make a whole message.
    var input: [UInt8] = []
    /// Framed answers the app's connection has not taken yet.
    var output: [UInt8] = []
    /// The connection to the host's resolver, once a query is forwarded.
    var upstream: DNSUpstream?
    /// Where `upstream` goes: the default resolver, or a `server:` line's.
    var upstreamServer: SocketAddress?
    /// Framed queries for the resolver, waiting for its connection or its window.
    var toUpstream: [UInt8] = []
    /// Bytes from the resolver that do not yet make a whole message.
    var fromUpstream: [UInt8] = []
    /// Forwarded queries whose answers have not come yet.
    var forwarded = 0
    /// The queries forwarded over `upstream` and not answered yet (framed, in
    /// order): a resolver that closes after so many (dnsmasq: 100 a
    /// connection) gets them again on a new connection.
    var unanswered: [(id: UInt16, framed: [UInt8])] = []
    /// Answers on the current connection to the resolver: one that closes
    /// having answered none is not asked again.
    var answeredOnConnection = 0
    /// The host's resolvers that failed this connection: the next is asked.
    var failedServers: [SocketAddress] = []

    /// The largest DNS message: its length is a 16-bit field.
    static let maximumMessage = 65535
    /// Answers or forwarded queries waiting beyond this stop reading the app.
    static let backlogLimit = 256 * 1024
    /// A connection silent this long is reset.
    static let idleTimeout: Duration = .seconds(30)
    /// A resolver that has not answered the connect by then is given up
    /// for the next: one that drops SYNs silently held the app's questions
    /// until the app's connection idled out. A resolver answers a SYN in a
    /// round trip; glibc gives a whole query 5 s.
    static let connectTimeout: Duration = .seconds(2)

    /// Calls `each` with every whole message in `bytes`, framed (its
    /// two-byte length first, RFC 7766 §8), then drops them; a partial
    /// message stays for more bytes.
    static func takeMessages(from bytes: inout [UInt8], _ each: (UnsafeRawBufferPointer) -> Void) {
        let taken = bytes.withUnsafeBytes { raw in
            var offset = 0
            while raw.count - offset >= 2 {
                let length = Int(raw[offset]) << 8 | Int(raw[offset + 1])
                guard raw.count - offset - 2 >= length else { break }
                each(UnsafeRawBufferPointer(rebasing: raw[offset ..< offset + 2 + length]))
                offset += 2 + length
            }
            return offset
        }
        if taken > 0 { bytes.removeFirst(taken) }
    }
}

/// A DNS stream's connection to the host's resolver.
final class DNSUpstream {
    let socket: Socket
    let token: UInt64
    var connected = false
    /// Until the connect is answered: when the resolver is given up.
    var connectDeadline: Instant?

    init(socket: consuming Socket, token: UInt64) {
        self.socket = socket
        self.token = token
    }
}

extension Tunnel {
    /// A flow (UDP or TCP) to Sluice's DNS: port 53 at one of its addresses, or at any with the DNS hijacked.
    func isDNSQuery(_ key: FlowKey) -> Bool {
        dns != nil && key.destinationPort == 53 && (configuration.hijackDNS || configuration.dnsAddresses.contains(key.destinationAddress))
    }

    func startDNSStream(_ key: FlowKey, sink: inout TunSink) {
        beginRecord(key)
        flowRecords[key]?.record.policy = "DNS (Sluice)"
        // RFC 7766 §6.2.3: a server closes idle connections, or clients that
        // never close them would hold flows without end.
        guard acceptApp(key, idleTimeout: DNSStream.idleTimeout, sink: &sink) else {
            finishRecord(key, status: .refused, error: "no room for the connection")
            return
        }
        trace("\(key): DNS over TCP, answered here")
        dnsStreams[key] = DNSStream()
    }

    /// Moves what can move: the app's queries in, answers out, and the end of the connection.
    func pumpDNSStream(_ key: FlowKey, sink: inout TunSink) {
        guard let stream = dnsStreams[key], let connection = tcp.connection(key) else {
            endDNSStream(key)
            return
        }
        _ = connection.takeEvents()
        // Backpressure: an app that asks without reading its answers, or a slow
        // resolver, stops our reading, and the app's window closes.
        flushDNSStream(stream, connection: connection)
        while connection.readableCount > 0, stream.output.count < DNSStream.backlogLimit, stream.toUpstream.count < DNSStream.backlogLimit {
            let bytes = connection.peekReadable()
            stream.input.append(contentsOf: bytes)
            connection.consume(bytes.count)
        }
        DNSStream.takeMessages(from: &stream.input) { framed in
            answerDNSMessage(UnsafeRawBufferPointer(rebasing: framed.dropFirst(2)), on: stream, key: key)
        }
        flushDNSStream(stream, connection: connection)
        // The app is done asking, and every answer is out: our FIN follows.
        if connection.isReadClosed, stream.forwarded == 0, stream.output.isEmpty { connection.shutdownWrite() }
        tcp.flush(key, connection: connection, now: now, sink: &sink)
        if connection.state == .closed || connection.state == .timeWait { endDNSStream(key) }
    }

    /// One query: answered here, or forwarded to the host's resolver.
    func answerDNSMessage(_ message: UnsafeRawBufferPointer, on stream: DNSStream, key: FlowKey) {
        switch dns!.respond(toMessage: message, now: now, into: dnsScratch, maximumLength: dnsScratch.count) {
        case let .answer(length):
            stream.output += [UInt8(length >> 8), UInt8(length & 0xff)]
            stream.output += UnsafeRawBufferPointer(dnsScratch.sub(0, length))
        case .forward:
            let routed = routedQuery(message)
            // The host's resolver this connection talks to, or the first that has not failed it.
            let host = stream.upstreamServer.flatMap { resolver.servers.contains($0) ? $0 : nil }
                ?? resolver.servers.first { !stream.failedServers.contains($0) }
            guard let server = routed?.server ?? host else {
                failDNSStream(key, reason: "no resolver to forward to")
                return
            }
            // Through an alias the answer is rewritten, and the connection
            // forwards to one server: such a question goes over UDP
            // (Tunnel+SplitDNS.swift), its answer written here.
            if routed?.aliases != nil || stream.upstream != nil && stream.upstreamServer != server {
                if resolver.relay(message, to: server, aliases: routed?.aliases, for: key, now: now) {
                    stream.forwarded += 1
                } else if let failure = serverFailure(for: message) {
                    stream.output += failure
                }
                return
            }
            let framed = [UInt8(message.count >> 8), UInt8(message.count & 0xff)] + Array(message)
            stream.toUpstream += framed
            stream.unanswered.append((UInt16(message[0]) << 8 | UInt16(message[1]), framed))
            stream.forwarded += 1
            if stream.upstream == nil { openDNSUpstream(stream, key: key, server: server) }
            writeDNSUpstream(stream, key: key)
        case .drop:
            break
        }
    }

    func flushDNSStream(_ stream: DNSStream, connection: TCPConnection) {
        guard !stream.output.isEmpty else { return }
        let n = stream.output.withUnsafeBytes { connection.write($0) }
        io.statistics.bytesToApp += n
        stream.output.removeFirst(n)
    }

    func openDNSUpstream(_ stream: DNSStream, key: FlowKey, server: SocketAddress) {
        guard let socket = try? Socket(.tcp, family: server.address.family, mark: configuration.mark) else {
            failDNSStream(key, reason: "no socket for the resolver \(server)")
            return
        }
        stream.upstreamServer = server
        do { _ = try socket.connect(to: server) } catch {
            return resolverFailed(stream, key: key, reason: "connect to the resolver \(server): \(error)")
        }
        let token = nextToken
        nextToken += 1
        guard (try? epoll.add(socket.descriptor, events: [.writable], token: token)) != nil else {
            failDNSStream(key, reason: "epoll")
            return
        }
        let upstream = DNSUpstream(socket: socket, token: token)
        upstream.connectDeadline = now + DNSStream.connectTimeout
        stream.upstream = upstream
        stream.answeredOnConnection = 0
        dnsStreamTokens[token] = key
        trace("\(key): DNS over TCP: forwarding to \(server)")
    }

    func writeDNSUpstream(_ stream: DNSStream, key: FlowKey) {
        guard let upstream = stream.upstream, upstream.connected, !stream.toUpstream.isEmpty else { return }
        let result = stream.toUpstream.withUnsafeBytes { try? upstream.socket.write($0) }
        switch result {
        case let .value(n)?: stream.toUpstream.removeFirst(n)
        case .wouldBlock?: break
        case nil: return resolverFailed(stream, key: key, reason: "writing to the resolver failed")
        }
        watchDNSUpstream(stream)
    }

    func watchDNSUpstream(_ stream: DNSStream) {
        guard let upstream = stream.upstream else { return }
        var wanted: Epoll.Events = upstream.connected ? [.readable] : [.writable]
        if upstream.connected, !stream.toUpstream.isEmpty { wanted.insert(.writable) }
        try? epoll.modify(upstream.socket.descriptor, events: wanted, token: upstream.token)
    }

    /// The resolver's socket is ready: connected, writable, or with answers.
    func dnsUpstreamReady(_ key: FlowKey, events: Epoll.Events) {
        guard let stream = dnsStreams[key], let upstream = stream.upstream else { return }
        if !upstream.connected {
            if let error = upstream.socket.pendingError() {
                return resolverFailed(stream, key: key, reason: "connect to the resolver \(stream.upstreamServer.map { "\($0)" } ?? ""): \(error)")
            }
            guard events.contains(.writable) else { return }
            upstream.connected = true
            upstream.connectDeadline = nil
        }
        writeDNSUpstream(stream, key: key)
        guard dnsStreams[key] != nil else { return }
        if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) {
            for _ in 0 ..< 16 {
                let result: SysResult<Int>
                do { result = try upstream.socket.read(into: scratch) } catch {
                    takeResolverAnswers(stream)
                    return resolverFailed(stream, key: key, reason: "reading from the resolver: \(error)")
                }
                guard case let .value(n) = result else { break }
                if n == 0 {
                    // The resolver closed: its answers so far go to the app first.
                    takeResolverAnswers(stream)
                    closeDNSUpstream(stream)
                    guard !stream.unanswered.isEmpty else { break }
                    // A resolver that takes so many questions a connection (dnsmasq: 100)
                    // is asked the rest on a new one; one that answered nothing has failed.
                    guard stream.answeredOnConnection > 0, let server = stream.upstreamServer else {
                        return resolverFailed(stream, key: key, reason: "the resolver closed with \(stream.unanswered.count) questions unanswered")
                    }
                    trace("\(key): DNS over TCP: the resolver closed; \(stream.unanswered.count) questions go again on a new connection")
                    stream.toUpstream = stream.unanswered.flatMap(\.framed)
                    openDNSUpstream(stream, key: key, server: server)
                    guard dnsStreams[key] != nil else { return }
                    break
                }
                stream.fromUpstream += UnsafeRawBufferPointer(scratch.sub(0, n))
                guard stream.fromUpstream.count <= 2 + DNSStream.maximumMessage + 2 * 65536 else {
                    failDNSStream(key, reason: "the resolver sent more than it was asked for")
                    return
                }
            }
            takeResolverAnswers(stream)
        }
        var sink = TunSink(io: io)
        pumpDNSStream(key, sink: &sink)
    }

    /// The resolver's whole answers, on to the app.
    func takeResolverAnswers(_ stream: DNSStream) {
        DNSStream.takeMessages(from: &stream.fromUpstream) { framed in
            // As over UDP, the answers name the addresses they give (DNSAnswerNames).
            answerNames.learn(message: UnsafeRawBufferPointer(rebasing: framed.dropFirst(2)), now: now)
            stream.output += framed
            stream.forwarded = max(stream.forwarded - 1, 0)
            stream.answeredOnConnection += 1
            if framed.count >= 4, let index = stream.unanswered.firstIndex(where: { $0.id == UInt16(framed[2]) << 8 | UInt16(framed[3]) }) {
                stream.unanswered.remove(at: index)
            }
        }
    }

    /// The resolver could not be reached or broke off: the questions it left
    /// unanswered go to the next of the host's resolvers, as the host's own
    /// lookups would go (a `server:` line's resolver has no other); with
    /// none left, the app's connection is reset.
    func resolverFailed(_ stream: DNSStream, key: FlowKey, reason: String) {
        closeDNSUpstream(stream)
        stream.fromUpstream = []
        guard let failed = stream.upstreamServer, resolver.servers.contains(failed), !stream.unanswered.isEmpty else {
            return failDNSStream(key, reason: reason)
        }
        stream.failedServers.append(failed)
        guard let next = resolver.servers.first(where: { !stream.failedServers.contains($0) }) else {
            return failDNSStream(key, reason: reason)
        }
        trace("\(key): DNS over TCP: \(reason); \(stream.unanswered.count) questions go to \(next)")
        stream.toUpstream = stream.unanswered.flatMap(\.framed)
        openDNSUpstream(stream, key: key, server: next)
        if dnsStreams[key] != nil { writeDNSUpstream(stream, key: key) }
    }

    /// The earliest connect to a resolver that may time out (few streams forward at once: a scan is cheap).
    var dnsConnectDeadline: Instant? {
        guard !dnsStreams.isEmpty else { return nil }
        var earliest: Instant?
        for stream in dnsStreams.values {
            guard let deadline = stream.upstream?.connectDeadline else { continue }
            if earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        return earliest
    }

    /// Resolvers that let a connect go unanswered past `connectTimeout` give way to the next.
    func expireDNSConnects(now time: Instant) {
        for key in Array(dnsStreams.keys) {
            guard let stream = dnsStreams[key], let upstream = stream.upstream, !upstream.connected,
                  let deadline = upstream.connectDeadline, deadline <= time else { continue }
            resolverFailed(stream, key: key, reason: "connect to the resolver \(stream.upstreamServer.map { "\($0)" } ?? ""): no answer in \(DNSStream.connectTimeout.components.seconds) s")
        }
    }

    func closeDNSUpstream(_ stream: DNSStream) {
        guard let upstream = stream.upstream else { return }
        try? epoll.remove(upstream.socket.descriptor)
        dnsStreamTokens[upstream.token] = nil
        stream.upstream = nil
    }

    /// The resolver cannot be reached or broke off: the app's connection is
    /// reset, so that its resolver library tries the next server or says so.
    func failDNSStream(_ key: FlowKey, reason: String) {
        EngineLog.warning("\(key): DNS over TCP: \(reason)")
        io.statistics.upstreamErrors += 1
        var sink = TunSink(io: io)
        tcp.connection(key)?.abort()
        tcp.flush(key, now: now, sink: &sink)
        endDNSStream(key, status: .failed, error: reason)
    }

    func endDNSStream(_ key: FlowKey, status: FlowRecord.Status = .closed, error: String? = nil) {
        guard let stream = dnsStreams.removeValue(forKey: key) else { return }
        closeDNSUpstream(stream)
        finishRecord(key, status: status, error: error)
    }
}
