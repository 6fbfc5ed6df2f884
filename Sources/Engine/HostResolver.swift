internal import Sys
internal import Wire
internal import Stack

/// Resolves names through the host's own resolvers (/etc/resolv.conf, as
/// Sluice's namespace sees it) for DIRECT flows to fake IPs: the app
/// connected to 198.18.x.y, the rule engine knows the name, and the upstream
/// connection needs the name's real address. One UDP socket, queries matched
/// by id, answers cached for their TTL (at most a minute).
final class HostResolver {
    struct Pending {
        var name: DNSName
        var type: DNSType
        var deadline: Instant
        var waiting: [FlowKey]
        var attempts: Int
    }

    let servers: [SocketAddress]
    let channel: SocketBox?
    let token: UInt64
    var pending: [UInt16: Pending] = [:]
    var cache: [DNSName: (address: IPAddress, expires: Instant)] = [:]
    var nextID: UInt16
    let timeout: Duration = .seconds(2)

    /// `mark`: Sluice's own mark in whole-host mode, so its queries go out
    /// directly and never come back through the TUN (where they would be
    /// relayed, or with the DNS hijacked, answered by Sluice itself).
    /// `servers`: the resolvers to ask (port 53); empty, /etc/resolv.conf's.
    init(token: UInt64, seed: UInt64, mark: UInt32? = nil, servers: [IPAddress] = []) {
        self.servers = servers.isEmpty ? Self.nameservers() : servers.map { SocketAddress($0.sysAddress, port: 53) }
        self.token = token
        nextID = UInt16(truncatingIfNeeded: seed)
        if let server = self.servers.first, let socket = try? Socket(.udp, family: server.address.family, mark: mark) {
            channel = SocketBox(socket)
        } else {
            channel = nil
        }
    }

    /// `nameserver` lines of /etc/resolv.conf; loopback ones included (Sluice's
    /// sockets live in its own namespace, where they are reachable).
    static func nameservers() -> [SocketAddress] {
        guard let bytes = Files.read("/etc/resolv.conf") else { return [] }
        var result: [SocketAddress] = []
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, fields[0] == "nameserver", let address = SysIPAddress(String(fields[1])) else { continue }
            result.append(SocketAddress(address, port: 53))
        }
        return result
    }

    /// A cached address for `name`, or nil after starting (or joining) a query
    /// whose answer `receive` will hand to `key`.
    func resolve(_ name: DNSName, family: SysIPAddress.Family, for key: FlowKey, now: Instant) -> IPAddress? {
        if let hit = cache[name], now < hit.expires { return hit.address }
        let type: DNSType = family == .v4 ? .a : .aaaa
        if let id = pending.first(where: { $0.value.name == name && $0.value.type == type })?.key {
            pending[id]!.waiting.append(key)
            return nil
        }
        nextID &+= 1
        pending[nextID] = Pending(name: name, type: type, deadline: now + timeout, waiting: [key], attempts: 0)
        send(nextID)
        return nil
    }

    func send(_ id: UInt16) {
        guard let channel, let query = pending[id], let server = servers.first else { return }
        withUnsafeTemporaryAllocation(byteCount: 512, alignment: 8) { buffer in
            guard var writer = try? DNSMessageWriter(into: buffer, header: DNSHeader(id: id, recursionDesired: true)),
                  (try? writer.appendQuestion(query.name, type: query.type)) != nil else { return }
            _ = try? channel.socket.send(writer.bytes, to: server)
        }
    }

    /// Reads the answers that arrived; returns each waiting flow with its address (nil: no such name).
    func receive(now: Instant) -> [(FlowKey, IPAddress?, DNSType)] {
        guard let channel else { return [] }
        var results: [(FlowKey, IPAddress?, DNSType)] = []
        withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 8) { buffer in
            for _ in 0 ..< 64 {
                guard case let .value((n, from))? = try? channel.socket.receive(into: buffer) else { return }
                // Only our servers' answers count (a forged datagram from elsewhere is ignored).
                guard let from, servers.contains(from) else { continue }
                guard let message = try? DNSMessageView(UnsafeRawBufferPointer(buffer.sub(0, n))),
                      message.header.isResponse, let query = pending[message.id],
                      let question = message.question, query.name.matches(question.name) else { continue }
                pending[message.id] = nil
                var answer: IPAddress?
                var ttl: UInt32 = 60
                for record in message.answers {
                    switch record.data {
                    case let .a(v4) where query.type == .a: answer = answer ?? .v4(v4); ttl = min(ttl, record.timeToLive)
                    case let .aaaa(v6) where query.type == .aaaa: answer = answer ?? .v6(v6); ttl = min(ttl, record.timeToLive)
                    default: continue
                    }
                }
                if let answer { cache[query.name] = (answer, now + .seconds(Int64(max(ttl, 1)))) }
                for key in query.waiting { results.append((key, answer, query.type)) }
            }
        }
        return results
    }

    /// Retries once, then gives up on queries past their deadline; returns the flows that waited for them.
    func expire(now: Instant) -> [FlowKey] {
        var failed: [FlowKey] = []
        for (id, query) in pending where query.deadline <= now {
            if query.attempts == 0 {
                pending[id]!.attempts = 1
                pending[id]!.deadline = now + timeout
                send(id)
            } else {
                failed += query.waiting
                pending[id] = nil
            }
        }
        return failed
    }

    var nextDeadline: Instant? {
        var earliest: Instant?
        for query in pending.values where earliest.map({ query.deadline < $0 }) ?? true { earliest = query.deadline }
        return earliest
    }

    /// True while a query `key` waits for is under way.
    func isPending(_ key: FlowKey) -> Bool { pending.values.contains { $0.waiting.contains(key) } }
}

/// A socket where an optional or a closure needs a reference (a non-copyable
/// value cannot be consumed out of a class's optional).
final class SocketBox {
    let socket: Socket
    init(_ socket: consuming Socket) { self.socket = socket }
}

extension HostResolver {
    /// `host` as an address without waiting: a literal, the profile's [Host]
    /// entry, or an answer in the cache; otherwise a lookup starts (under
    /// `key`) and this caller goes without, to try again later (a UDP sender's
    /// next datagram, a health check's next round).
    func addressNow(of host: String, director: FlowDirector, key: FlowKey, now: Instant) -> SysIPAddress? {
        if let literal = SysIPAddress(host) { return literal }
        if let address = director.staticAddress(for: host) { return address.sysAddress }
        guard let name = DNSName(host) else { return nil }
        return resolve(name, family: .v4, for: key, now: now)?.sysAddress
    }
}
