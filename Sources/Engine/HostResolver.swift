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
        /// Nil without any resolver: the query fails when its time is up.
        var server: SocketAddress?
        var deadline: Instant
        var waiting: [FlowKey]
        var attempts: Int
    }

    /// A query of the app's that Sluice sends on (forward mode, a name a
    /// `server:` line routes) under an id of its own, and whose answer goes
    /// back to `key` with the app's id. With `aliases`, the query asked for
    /// the last of them (a [Host] alias leading out of the table) and the
    /// answer is rewritten to answer the app's question through them.
    struct Relay {
        var key: FlowKey
        var appQuery: [UInt8]
        var query: [UInt8]
        var aliases: [DNSName]?
        var server: SocketAddress
        var deadline: Instant
        var attempts: Int
    }

    /// The default resolvers: [General] dns-server's, else the host's.
    let servers: [SocketAddress]
    /// `server:` lines: resolvers of their own for some names.
    var routes = ResolverRoutes() {
        didSet { trusted = Set(servers).union(routes.servers) }
    }
    /// Whose answers count.
    private var trusted: Set<SocketAddress>
    /// One socket per family: a `server:` line may name either.
    let channels: [(family: SysIPAddress.Family, box: SocketBox)]
    let token: UInt64
    var pending: [UInt16: Pending] = [:]
    /// The resolvers the last query that failed for want of an answer was sent to
    /// (the engine says so: "no address" alone reads like a name that does not exist).
    var unanswered: [SocketAddress] = []
    var relays: [UInt16: Relay] = [:]
    /// Answers to relayed queries, for the app's flows: taken by the caller after `receive`.
    var relayed: [(FlowKey, [UInt8])] = []
    /// By name and family: an app that asks for IPv6 gets an AAAA answer, not
    /// the A answer another flow left.
    var cache: [CacheKey: (address: IPAddress, expires: Instant)] = [:]

    struct CacheKey: Hashable {
        var name: DNSName
        var type: DNSType
    }
    /// What the host knows without DNS, looked at first (HostsFile.swift):
    /// for `sluice proxy`, whose clients name hosts as the host's programs
    /// do. Not for the tunnel: its apps read /etc/hosts themselves, and a
    /// fake IP's name that /etc/hosts maps to loopback would reach Sluice's
    /// own loopback without --host-loopback.
    var hostsFile: HostsFile?
    var nextID: UInt16
    let timeout: Duration = .seconds(2)
    /// Queries relayed and unanswered past this are not taken on.
    static let maximumRelays = 1024

    /// `mark`: Sluice's own mark in whole-host mode, so its queries go out
    /// directly and never come back through the TUN (where they would be
    /// relayed, or with the DNS hijacked, answered by Sluice itself).
    /// `servers`: the resolvers to ask (port 53); empty, /etc/resolv.conf's.
    init(token: UInt64, seed: UInt64, mark: UInt32? = nil, servers: [IPAddress] = []) {
        self.servers = servers.isEmpty ? Self.nameservers() : servers.map { SocketAddress($0.sysAddress, port: 53) }
        self.token = token
        trusted = Set(self.servers)
        nextID = UInt16(truncatingIfNeeded: seed)
        var made: [(family: SysIPAddress.Family, box: SocketBox)] = []
        for family in [SysIPAddress.Family.v4, .v6] {
            if let socket = try? Socket(.udp, family: family, mark: mark) { made.append((family, SocketBox(socket))) }
        }
        channels = made
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

    /// The resolvers for `name`: its `server:` line's, else the defaults.
    func servers(for name: DNSName) -> [SocketAddress] { routes.servers(for: name) ?? servers }

    /// A cached address for `name`, or nil after starting (or joining) a query
    /// whose answer `receive` will hand to `key`.
    func resolve(_ name: DNSName, family: SysIPAddress.Family, for key: FlowKey, now: Instant) -> IPAddress? {
        if let listed = hostsFile?.address(of: name.description, family: family) { return listed }
        let type: DNSType = family == .v4 ? .a : .aaaa
        if let hit = cache[CacheKey(name: name, type: type)], now < hit.expires { return hit.address }
        if let id = pending.first(where: { $0.value.name == name && $0.value.type == type })?.key {
            pending[id]!.waiting.append(key)
            return nil
        }
        let id = freshID()
        pending[id] = Pending(name: name, type: type, server: servers(for: name).first, deadline: now + timeout, waiting: [key], attempts: 0)
        send(id)
        return nil
    }

    /// An id no query under way uses (should all 65,536 be, the next one).
    private func freshID() -> UInt16 {
        for _ in 0 ... UInt16.max {
            nextID &+= 1
            if pending[nextID] == nil, relays[nextID] == nil { break }
        }
        return nextID
    }

    private func channel(for server: SocketAddress) -> SocketBox? {
        channels.first { $0.family == server.address.family }?.box
    }

    func send(_ id: UInt16) {
        guard let query = pending[id], let server = query.server, let channel = channel(for: server) else { return }
        withUnsafeTemporaryAllocation(byteCount: 512, alignment: 8) { buffer in
            guard var writer = try? DNSMessageWriter(into: buffer, header: DNSHeader(id: id, recursionDesired: true)),
                  (try? writer.appendQuestion(query.name, type: query.type)) != nil else { return }
            _ = try? channel.socket.send(writer.bytes, to: server)
        }
    }

    /// Sends the app's query `message` (from `key`) on to `server` under an id
    /// of ours; its answer comes back through `relayed`. With `aliases`, the
    /// question asked is the last alias's, with the app's type.
    func relay(_ message: UnsafeRawBufferPointer, to server: SocketAddress, aliases: [DNSName]? = nil, for key: FlowKey, now: Instant) -> Bool {
        guard relays.count < Self.maximumRelays, message.count >= DNSHeader.length, channel(for: server) != nil else { return false }
        let id = freshID()
        var query = Array(message)
        if let target = aliases?.last {
            guard let view = try? DNSMessageView(message), let question = view.question else { return false }
            let built: [UInt8]? = withUnsafeTemporaryAllocation(byteCount: 512, alignment: 8) { buffer in
                // EDNS with RFC 8900's 1232 bytes: an answer past 512 comes whole
                // over UDP (without it the server cut it), for an app over TCP.
                guard var writer = try? DNSMessageWriter(into: buffer, header: DNSHeader(id: id, recursionDesired: true)),
                      (try? writer.appendQuestion(target, type: question.type)) != nil,
                      (try? writer.appendEDNS(payloadSize: 1232)) != nil else { return nil }
                return Array(writer.bytes)
            }
            guard let built else { return false }
            query = built
        }
        query[0] = UInt8(id >> 8)
        query[1] = UInt8(id & 0xff)
        relays[id] = Relay(key: key, appQuery: Array(message), query: query, aliases: aliases, server: server, deadline: now + timeout, attempts: 0)
        // A resolver the host has no route to fails the send at once: the next
        // is tried, and with none left the caller tells the app so at once (as a
        // socket of its own would have heard), rather than leave it to time out.
        let candidates = servers.contains(server) ? servers : [server]
        let first = candidates.firstIndex(of: server) ?? 0
        for step in 0 ..< candidates.count {
            relays[id]!.server = candidates[(first + step) % candidates.count]
            if sendRelay(id) { return true }
        }
        relays[id] = nil
        unanswered = candidates
        return false
    }

    /// False when the socket refused the datagram (no route to the resolver).
    @discardableResult
    private func sendRelay(_ id: UInt16) -> Bool {
        guard let relay = relays[id], let channel = channel(for: relay.server) else { return false }
        return relay.query.withUnsafeBytes { (try? channel.socket.send($0, to: relay.server)) != nil }
    }

    /// Reads the answers that arrived; returns each waiting flow with its
    /// address (nil: no such name). Answers to relayed queries go to `relayed`.
    func receive(now: Instant) -> [(FlowKey, IPAddress?, DNSType)] {
        var results: [(FlowKey, IPAddress?, DNSType)] = []
        withUnsafeTemporaryAllocation(byteCount: 65536, alignment: 8) { buffer in
            for (_, channel) in channels {
                for _ in 0 ..< 64 {
                    guard case let .value((n, from))? = try? channel.socket.receive(into: buffer) else { break }
                    // Only our servers' answers count (a forged datagram from elsewhere is ignored).
                    guard let from, trusted.contains(from) else { continue }
                    let bytes = UnsafeRawBufferPointer(buffer.sub(0, n))
                    guard let message = try? DNSMessageView(bytes), message.header.isResponse else { continue }
                    if let relay = relays[message.id], relay.server == from {
                        relays[message.id] = nil
                        if let answer = relayAnswer(relay, message, bytes) { relayed.append((relay.key, answer)) }
                        continue
                    }
                    // An earlier server's late answer counts as well as the one asked last.
                    guard let query = pending[message.id], query.server == from || servers(for: query.name).contains(from),
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
                    if let answer { cache[CacheKey(name: query.name, type: query.type)] = (answer, now + .seconds(Int64(max(ttl, 1)))) }
                    for key in query.waiting { results.append((key, answer, query.type)) }
                }
            }
        }
        return results
    }

    /// The app's answer to a relayed query: the server's, under the app's id;
    /// through aliases, the app's question answered by the CNAME chain and
    /// the server's address records for its last name.
    private func relayAnswer(_ relay: Relay, _ message: DNSMessageView, _ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let aliases = relay.aliases else {
            var answer = Array(bytes)
            answer[0] = relay.appQuery[0]
            answer[1] = relay.appQuery[1]
            return answer
        }
        // An app over UDP takes 512 bytes (RFC 1035 §4.2.1): a longer answer
        // is the question alone with TC set, and the app asks again over TCP.
        let limit = relay.key.transport == .tcp ? 4096 : 512
        return relay.appQuery.withUnsafeBytes { raw -> [UInt8]? in
            guard let appQuery = try? DNSMessageView(raw) else { return nil }
            return withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 8) { whole -> [UInt8]? in
                let buffer = UnsafeMutableRawBufferPointer(rebasing: whole[0 ..< limit])
                var answer: [UInt8]
                if let chain = Self.chainAnswer(appQuery, aliases, message, into: buffer) {
                    answer = chain
                } else {
                    guard let writer = try? DNSMessageWriter(respondingTo: appQuery, into: buffer, responseCode: message.header.responseCode)
                    else { return nil }
                    answer = Array(writer.bytes)
                    answer[2] |= 0x02
                }
                // The server's own TC (it cut its answer) stays said.
                if message.header.truncated { answer[2] |= 0x02 }
                return answer
            }
        }
    }

    /// The CNAME chain and the server's address records, answering the app's
    /// question; nil when they do not fit in `buffer`.
    private static func chainAnswer(_ appQuery: DNSMessageView, _ aliases: [DNSName], _ message: DNSMessageView,
                                    into buffer: UnsafeMutableRawBufferPointer) -> [UInt8]? {
        guard var writer = try? DNSMessageWriter(respondingTo: appQuery, into: buffer, responseCode: message.header.responseCode) else { return nil }
        var owner: DNSName?
        for target in aliases {
            if let owner {
                guard (try? writer.appendAnswer(name: owner, .cname(target), timeToLive: 60)) != nil else { return nil }
            } else {
                guard (try? writer.appendAnswer(.cname(target), timeToLive: 60)) != nil else { return nil }
            }
            owner = target
        }
        for record in message.answers {
            let data: DNSResourceData
            switch record.data {
            case let .a(address): data = .a(address)
            case let .aaaa(address): data = .aaaa(address)
            case let .cname(target): data = .cname(DNSName(target))
            case .ptr, .other: continue
            }
            guard (try? writer.appendAnswer(name: DNSName(record.name), data, timeToLive: record.timeToLive)) != nil else { return nil }
        }
        return Array(writer.bytes)
    }

    /// Asks the next resolver (each of several once, a single one twice), then
    /// gives up on queries past their deadline; returns the flows that waited
    /// for them. A dead first resolver failed every name, where the host's own
    /// lookups (glibc) go on to the next `nameserver`. Relayed queries go the
    /// same way (a `server:` line's to its one resolver twice), and are then
    /// dropped: the app's resolver asks again or gives up, as with a lost answer.
    func expire(now: Instant) -> [FlowKey] {
        var failed: [FlowKey] = []
        for (id, query) in pending where query.deadline <= now {
            let candidates = servers(for: query.name)
            if query.attempts + 1 < max(2, candidates.count) {
                pending[id]!.attempts += 1
                pending[id]!.deadline = now + timeout
                if !candidates.isEmpty { pending[id]!.server = candidates[(query.attempts + 1) % candidates.count] }
                send(id)
            } else {
                failed += query.waiting
                pending[id] = nil
                unanswered = candidates
            }
        }
        for (id, relay) in relays where relay.deadline <= now {
            // A query for the default resolvers goes on to the next, as glibc's
            // do (forward mode asked only the first: a dead one failed every name).
            let candidates = servers.contains(relay.server) ? servers : [relay.server]
            if relay.attempts + 1 < max(2, candidates.count) {
                relays[id]!.attempts += 1
                relays[id]!.deadline = now + timeout
                if let index = candidates.firstIndex(of: relay.server) { relays[id]!.server = candidates[(index + 1) % candidates.count] }
                sendRelay(id)
            } else {
                relays[id] = nil
                unanswered = candidates
            }
        }
        return failed
    }

    var nextDeadline: Instant? {
        var earliest: Instant?
        for query in pending.values where earliest.map({ query.deadline < $0 }) ?? true { earliest = query.deadline }
        for relay in relays.values where earliest.map({ relay.deadline < $0 }) ?? true { earliest = relay.deadline }
        return earliest
    }

    /// True while a query `key` waits for is under way.
    func isPending(_ key: FlowKey) -> Bool { pending.values.contains { $0.waiting.contains(key) } }
}

/// A socket where an optional or a closure needs a reference (a non-copyable
/// value cannot be consumed out of a class's optional).
final class SocketBox {
    let socket: Socket
    /// What the socket's hop limit was last set to (0: never, the kernel's default).
    var hopLimit: UInt8 = 0
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
