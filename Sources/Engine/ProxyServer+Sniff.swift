internal import Relay
internal import Stack
internal import Sys
internal import Wire

/// `--sniff`: tunnels to an address whose rules want a name. A SOCKS5 client
/// that resolved the name itself (`--socks5` rather than `--socks5-hostname`,
/// many browsers' SOCKS setting) gives only an address, and DOMAIN rules
/// cannot match it. With the option, as the tunnel does with an app's SYN,
/// the listener answers first ("succeeded", "200 Connection established"),
/// reads the client's first bytes (a TLS ClientHello's SNI, an HTTP
/// request's Host) and then lets the rules decide. The price is the
/// tunnel's too: a target that then cannot be reached, or a rule that
/// refuses it, can only reset the client, where without the option it gets
/// the precise reply (REP 2, 4, 5; 403, 502, 504). Off by default; the
/// first such client of a run is named in the log, with the way out.
extension ProxyServer {
    func acceptToSniff(_ connection: InboundConnection) {
        let reply: [UInt8]
        switch connection.listener {
        case .socks5: reply = connection.socks.reply(for: .succeeded(bound: ProxyTarget(host: .ipv4(.any), port: 0)))
        case .http: reply = connection.http.reply(for: .succeeded)
        }
        _ = connection.toClient.append(reply)
        connection.repliedEarly = true
        connection.phase = .sniffing
        // (The sweep checks it every 200 ms.) A tunnel to a name [MITM] intercepts
        // carries TLS, whose client speaks first: a slow one is waited for.
        var clientHello = false
        if let target = connection.target, case let .domain(name) = target.host, let mitm = director.profile?.mitm {
            clientHello = mitm.intercepts(host: name, port: target.port)
        }
        connection.deadline = now + (clientHello ? FlowFacts.clientHelloTimeout : FlowFacts.sniffTimeout)
        trace("\(connection.description): answered; reading its first bytes for the rules")
        // Bytes pipelined behind the request may already say enough.
        sniffClient(connection, final: false)
    }

    func readToSniff(_ connection: InboundConnection) {
        let room = FlowFacts.sniffLimit - connection.received.count
        guard room > 0, !connection.clientReadClosed else { return }
        let result: SysResult<Int>
        do { result = try connection.client.read(into: scratch.sub(0, min(room, scratch.count))) } catch {
            abort(connection, reason: "client: \(error)")
            return
        }
        guard case let .value(n) = result else { return }
        if n == 0 {
            connection.clientReadClosed = true
        } else {
            connection.received += UnsafeRawBufferPointer(scratch.sub(0, n))
        }
        sniffClient(connection, final: connection.clientReadClosed || connection.received.count >= FlowFacts.sniffLimit)
    }

    /// Decides once the first bytes say enough (or `final`: they never will).
    func sniffClient(_ connection: InboundConnection, final: Bool) {
        guard connection.phase == .sniffing, let target = connection.target else { return }
        let base = flowFacts(for: connection, target: target)
        let sniffed = connection.received.withUnsafeBytes { base.sniffing($0, final: final) }
        guard let sniffed else { return }
        if sniffed.applicationProtocol == .tls, startInterception(connection, target: target, facts: sniffed) { return }
        let route: FlowRoute
        switch director.decide(sniffed, final: true, forHTTP: false) {
        case let .route(decided, reason):
            route = decided
            connection.route = reason
        case .sniff:
            // Never with final: true.
            route = .direct
            connection.route = "DIRECT"
        }
        connection.deadline = nil
        follow(route, connection, target: target, sniffed: sniffed)
    }
}
