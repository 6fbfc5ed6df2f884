internal import Stack
internal import Sys

/// Kept-alive connections to HTTP forward proxies, reused across app
/// connections: one proxy session serves many requests (the seeds learned
/// that one connection per request is what makes proxying slow). A
/// connection is parked when its HTTP session ends between responses, and
/// handed to the next session that routes through the same proxy. Parked
/// connections are watched only for their end, and closed after
/// `proxyPoolIdle` or beyond `proxyPoolLimit` per proxy.
extension Tunnel {
    static let proxyPoolLimit = 4
    static let proxyPoolIdle: Duration = .seconds(30)

    /// Parks `flow` if it is an idle connection to an HTTP forward proxy; true if it did.
    func parkProxyConnection(_ flow: TCPFlow, session: HTTPSession) -> Bool {
        guard let upstream = session.upstream, case let .proxy(name) = upstream.route, upstream.host.isEmpty,
              flow.connected, flow.handshake == nil, !flow.upstreamClosed, !flow.upstreamWriteClosed,
              session.inFlight.isEmpty, session.toUpstream.isEmpty, session.waiting == nil, !session.passthrough,
              session.requestBodyPending == 0, session.responses.isIdle,
              (proxyPool[name]?.count ?? 0) < Self.proxyPoolLimit else { return false }
        tcpFlows[flow.key] = nil
        tokens[flow.token] = nil
        flow.parkedAt = now
        flow.pooledFor = name
        watch(flow, for: [.readable])
        pooledTokens[flow.token] = flow
        proxyPool[name, default: []].append(flow)
        trace("\(flow.key): proxy connection to \(name) parked for reuse")
        return true
    }

    /// A parked connection to `proxy` for `key`'s session, if one is there.
    func takePooledProxyConnection(_ proxy: String, for key: FlowKey) -> TCPFlow? {
        guard var parked = proxyPool[proxy], !parked.isEmpty else { return nil }
        let flow = parked.removeLast()
        proxyPool[proxy] = parked.isEmpty ? nil : parked
        pooledTokens[flow.token] = nil
        trace("\(key): reusing a kept-alive connection to \(proxy) (from \(flow.key))")
        flow.key = key
        flow.parkedAt = nil
        flow.pooledFor = nil
        tcpFlows[key] = flow
        tokens[flow.token] = key
        return flow
    }

    /// A parked connection spoke (the proxy closed it, or sent what nobody asked for): it goes.
    func closePooled(_ flow: TCPFlow) {
        try? epoll.remove(flow.socket.descriptor)
        pooledTokens[flow.token] = nil
        if let name = flow.pooledFor {
            proxyPool[name]?.removeAll { $0 === flow }
            if proxyPool[name]?.isEmpty == true { proxyPool[name] = nil }
        }
    }

    func expirePooled() {
        let time = now
        for flow in pooledTokens.values where (flow.parkedAt ?? time) + Self.proxyPoolIdle <= time {
            closePooled(flow)
        }
    }

    var pooledDeadline: Instant? {
        var earliest: Instant?
        for flow in pooledTokens.values {
            guard let parked = flow.parkedAt else { continue }
            let deadline = parked + Self.proxyPoolIdle
            if earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        return earliest
    }
}
