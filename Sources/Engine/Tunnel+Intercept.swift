internal import Rules
internal import Stack
internal import Sys
internal import TLS
internal import Wire

/// HTTPS interception: a TLS flow whose name is in [MITM] hostname runs in
/// HTTP mode on the plaintext between Sluice's TLS server (the app's side)
/// and Sluice's TLS client (the real server's side). HTTP mode reaches the
/// app's bytes only through the `app…` functions here, which read and write
/// the TCP connection itself for plain HTTP and the plaintext inside TLS
/// for intercepted HTTPS.
extension Tunnel {
    /// Whether a TLS flow is intercepted: its name is in [MITM] hostname and
    /// its ClientHello is one Sluice's server can answer (otherwise it is
    /// passed through untouched, and the flow log says why).
    func intercepts(_ key: FlowKey, facts: FlowFacts, connection: TCPConnection) -> Bool {
        guard facts.applicationProtocol == .tls, let mitm = director.profile?.mitm, !mitm.isEmpty, interception.ca != nil else { return false }
        let host = facts.domain ?? key.destinationAddress.description
        guard mitm.intercepts(host: host, port: key.destinationPort) else { return false }
        let hello = Array(connection.peekReadable(maxLength: FlowFacts.sniffLimit))
        if let obstacle = InterceptionCheck.obstacle(inFirstRecords: hello, protocols: Interception.tunnelProtocols(prefersHTTP2: mitm.prefersHTTP2)) {
            trace("\(key): \(host) is in [MITM] but passes through: \(obstacle)")
            flowRecords[key]?.record.error = "not intercepted: \(obstacle)"
            return false
        }
        return true
    }

    /// Starts HTTP mode inside TLS on an accepted flow whose first bytes are
    /// a ClientHello for an intercepted name.
    func startIntercepted(_ key: FlowKey, facts: FlowFacts, sink: inout TunSink) {
        trace("\(key): HTTPS intercepted (\(facts.domain ?? "no name"))")
        noteDecision(key, route: .direct, reason: "[MITM] hostname: HTTPS intercepted, decided per request", facts: facts)
        let session = HTTPSession(key: key, facts: facts)
        let protocols = Interception.tunnelProtocols(prefersHTTP2: director.profile?.mitm.prefersHTTP2 ?? false)
        session.app = InterceptedApp(server: interception.server(address: key.destinationAddress.description, protocols: protocols))
        httpSessions[key] = session
        tlsHandshakeDeadlines[key] = now + Self.appHandshakeLimit
        pumpHTTP(key, sink: &sink)
    }

    /// The app's TLS failed (its alert is on its way): the connection ends
    /// after it, and the flow log says why.
    func appTLSFailed(_ session: HTTPSession, _ error: TLSError, connection: TCPConnection) {
        trace("\(session.key): TLS with the app failed: \(error)")
        flowRecords[session.key]?.record.error = "TLS with the app: \(error)"
        let name = session.app?.server.serverName ?? session.key.destinationAddress.description
        if let warning = interception.refusalWarning(error, name: name) { EngineLog.warning("\(session.key): \(warning)") }
        session.inFlight.removeAll()
        session.waiting = nil
        if connection.readableCount > 0 { connection.consume(connection.readableCount) }
    }

    // MARK: The app's bytes, plain or inside TLS

    func appReadable(_ session: HTTPSession, _ connection: TCPConnection) -> UnsafeRawBufferPointer {
        session.app?.readable ?? connection.peekReadable()
    }

    func appReadableCount(_ session: HTTPSession, _ connection: TCPConnection) -> Int {
        session.app?.readableCount ?? connection.readableCount
    }

    func appConsume(_ n: Int, _ session: HTTPSession, _ connection: TCPConnection) {
        if let app = session.app { app.consume(n) } else { connection.consume(n) }
    }

    func appIsReadClosed(_ session: HTTPSession, _ connection: TCPConnection) -> Bool {
        session.app?.isReadClosed(connection) ?? connection.isReadClosed
    }

    /// How many bytes the app's side takes now.
    func appRoom(_ session: HTTPSession, _ connection: TCPConnection) -> Int {
        session.app?.room(in: connection) ?? connection.writableCount
    }

    func appWrite(_ bytes: UnsafeRawBufferPointer, _ session: HTTPSession, _ connection: TCPConnection) -> Int {
        session.app?.write(bytes, to: connection) ?? connection.write(bytes)
    }

    func appShutdownWrite(_ session: HTTPSession, _ connection: TCPConnection) {
        if let app = session.app { app.shutdownWrite(connection) } else { connection.shutdownWrite() }
    }

    // MARK: The upstream's side

    /// Starts TLS on a connected upstream whose target is https (the first
    /// pump after the connection, or the proxy's handshake, succeeded).
    /// Returns false when the socket is full.
    func startUpstreamTLS(_ flow: TCPFlow, target: UpstreamTarget) -> Bool {
        // An app that speaks h2 offers the origin h2 as well (Tunnel+HTTP2Upstream.swift).
        let protocols = httpSessions[flow.key]?.isHTTP2 == true ? [Interception.http2, Interception.http1] : Interception.protocols
        let tls = InterceptedUpstream(interception.client(host: target.host, protocols: protocols), host: target.host)
        trace("\(flow.key): TLS to \(target.host):\(target.port)")
        tls.records.append(tls.machine.start())
        flow.tls = tls
        tlsHandshakeDeadlines[flow.key] = now + Self.originHandshakeLimit
        return tls.flush(to: flow.socket)
    }

    /// An app that never finishes its handshake (a scanner, a stuck client)
    /// gives up its session's buffers after this; an origin that accepts the
    /// connection but never answers its ClientHello fails the request.
    static let appHandshakeLimit: Duration = .seconds(30)
    static let originHandshakeLimit: Duration = .seconds(10)

    var tlsHandshakeDeadline: Instant? {
        var earliest: Instant?
        for deadline in tlsHandshakeDeadlines.values where earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        return earliest
    }

    /// Handshakes that ran out of time: an app's ends its connection (a
    /// reset), an origin's is a 502 for the request waiting on it.
    func expireTLSHandshakes(now time: Instant, sink: inout TunSink) {
        for (key, deadline) in tlsHandshakeDeadlines where deadline <= time {
            tlsHandshakeDeadlines[key] = nil
            guard let session = httpSessions[key], let connection = tcp.connection(key) else { continue }
            if let app = session.app, !app.isConnected {
                trace("\(key): the app's TLS handshake did not finish in \(Self.appHandshakeLimit.components.seconds) s")
                flowRecords[key]?.record.error = "TLS with the app: no handshake in \(Self.appHandshakeLimit.components.seconds) s"
                connection.abort()
                tcp.flush(key, now: time, sink: &sink)
                endHTTP(session, sink: &sink)
            } else if let flow = tcpFlows[key], let tls = flow.tls, !tls.isConnected {
                upstreamFailed(flow, session: session, reason: "TLS with \(tls.host): no answer to Sluice's hello in \(Self.originHandshakeLimit.components.seconds) s",
                               kind: .timedOut, sink: &sink)
            }
        }
    }

}
