internal import Stack
internal import Sys
internal import Wire

/// Queries Sluice's DNS forwards (forward mode, names it leaves to the
/// host) whose name the profile's [Host] section sends elsewhere: a
/// `server:` line's resolver (split DNS), or an alias whose chain leaves the
/// table, answered through the chain with the last name's records. They go
/// through `HostResolver.relay`, one unconnected socket, under ids of
/// Sluice's own, so one app socket may ask names that different servers
/// answer. Every other forwarded query keeps the plain path (a UDP session
/// to the default resolver per app socket).
extension Tunnel {
    struct RoutedQuery {
        var server: SocketAddress
        var aliases: [DNSName]?
    }

    /// Where a forwarded query goes when not to the default resolvers; nil: the default path.
    func routedQuery(_ message: UnsafeRawBufferPointer) -> RoutedQuery? {
        guard let dns, !resolver.routes.isEmpty || !dns.configuration.hosts.isEmpty,
              let query = try? DNSMessageView(message), let question = query.question else { return nil }
        if case let .success(resolution)? = dns.configuration.hosts.resolve(question.name), resolution.addresses == nil,
           let last = resolution.aliases.last, let server = resolver.servers(for: last).first {
            return RoutedQuery(server: server, aliases: resolution.aliases)
        }
        guard let servers = resolver.routes.servers(for: question.name), let server = servers.first else { return nil }
        return RoutedQuery(server: server, aliases: nil)
    }

    /// A UDP query routed elsewhere: relayed; false when it takes the default path.
    func relayRoutedQuery(_ key: FlowKey, _ message: UnsafeRawBufferPointer) -> Bool {
        guard let routed = routedQuery(message) else { return false }
        trace("\(key): DNS: relayed to \(routed.server)\(routed.aliases.map { " as \($0.last!)" } ?? "")")
        if !resolver.relay(message, to: routed.server, aliases: routed.aliases, for: key, now: now) { io.statistics.upstreamErrors += 1 }
        return true
    }

    /// Answers to relayed queries, to the apps that asked (UDP, or a DNS stream's connection).
    func deliverRelayedAnswers() {
        guard !resolver.relayed.isEmpty else { return }
        let answers = resolver.relayed
        resolver.relayed.removeAll()
        var sink = TunSink(io: io)
        for (key, answer) in answers {
            answer.withUnsafeBytes { bytes in
                answerNames.learn(message: bytes, now: now)
                if key.transport == .tcp {
                    guard let stream = dnsStreams[key] else { return }
                    stream.output += [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xff)]
                    stream.output += bytes
                    stream.forwarded = max(stream.forwarded - 1, 0)
                } else {
                    io.statistics.bytesToApp += bytes.count
                    datagrams.sendUDP(key, payload: bytes, now: now, sink: &sink)
                }
            }
            if key.transport == .tcp, dnsStreams[key] != nil { pumpDNSStream(key, sink: &sink) }
        }
    }

    /// SERVFAIL for `message` (a question Sluice will not forward), framed for a DNS stream; nil if it cannot be written.
    func serverFailure(for message: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let query = try? DNSMessageView(message),
              let writer = try? DNSMessageWriter(respondingTo: query, into: dnsScratch, responseCode: .serverFailure) else { return nil }
        let length = writer.bytes.count
        return [UInt8(length >> 8), UInt8(length & 0xff)] + Array(writer.bytes)
    }
}
