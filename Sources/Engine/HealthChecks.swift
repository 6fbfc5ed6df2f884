internal import Relay
internal import Rules
internal import Stack
internal import Sys
internal import Wire

/// One health check of a group member: an HTTP GET of the group's `url`
/// made through the member (its proxy handshake first), timed from connect
/// to the status line. Probes live beside the flows in the same loop.
final class HealthProbe {
    let group: String
    let member: String
    let token: UInt64
    let socket: Socket
    var handshake: ProxyHandshake?
    let request: [UInt8]
    var requestSent = false
    let started: Instant
    let deadline: Instant
    var response: [UInt8] = []

    init(group: String, member: String, token: UInt64, socket: consuming Socket, handshake: ProxyHandshake?,
         request: [UInt8], started: Instant, deadline: Instant) {
        self.group = group
        self.member = member
        self.token = token
        self.socket = socket
        self.handshake = handshake
        self.request = request
        self.started = started
        self.deadline = deadline
    }
}

/// A check whose target's address was not known yet: it waits for the
/// lookup it started, looking again every `retry` until its deadline. (It
/// failed at once before, "no address yet", so with a resolver that answers
/// with TTL 0 a DIRECT member was never up.)
struct AwaitedProbe {
    static let retry: Duration = .milliseconds(100)
    let group: String
    let member: String
    let url: RequestURL
    let timeout: Duration
    let deadline: Instant
    var nextTry: Instant
}

/// What a loop that checks its groups' members offers the checks: the
/// tunnel and `sluice proxy` both. The checks live beside the flows in the
/// loop's own epoll, under tokens the loop hands out.
protocol HealthCheckingLoop: AnyObject {
    var director: FlowDirector { get }
    var now: Instant { get }
    var resolver: HostResolver { get }
    var probes: [UInt64: HealthProbe] { get set }
    var probesAwaitingAddress: [AwaitedProbe] { get set }
    /// One read's worth of space, for a probe's answer.
    var probeScratch: UnsafeMutableRawBufferPointer { get }
    /// The mark Sluice's own sockets carry (whole-host mode), if any.
    var probeMark: UInt32? { get }
    func nextProbeToken() -> UInt64
    /// Lends the loop's epoll, where the probes' sockets sit beside the flows'.
    func withEpoll<R>(_ body: (borrowing Epoll) -> R) -> R
    func trace(_ text: @autoclosure () -> String)
}

extension HealthCheckingLoop {
    /// The probe's socket into the loop's epoll; false when it could not be added.
    func watchProbe(_ probe: HealthProbe, events: Epoll.Events) -> Bool {
        withEpoll { (try? $0.add(probe.socket.descriptor, events: events, token: probe.token)) != nil }
    }

    func rewatchProbe(_ probe: HealthProbe, events: Epoll.Events) {
        withEpoll { _ = try? $0.modify(probe.socket.descriptor, events: events, token: probe.token) }
    }

    func unwatchProbe(_ probe: HealthProbe) {
        withEpoll { _ = try? $0.remove(probe.socket.descriptor) }
    }

    /// Starts the checks that are due (fallback and url-test groups with a url).
    func startDueHealthChecks() {
        guard let profile = director.profile else { return }
        let clock = UInt64(max(now.nanoseconds, 0))
        for definition in profile.groups where definition.kind != .select {
            guard let url = definition.url, let parts = RequestURL(url), var group = director.groups[definition.name] else { continue }
            let due = group.dueChecks(now: clock)
            director.groups[definition.name] = group
            for member in due {
                startProbe(group: definition.name, member: member, url: parts, timeout: .seconds(max(definition.timeout, 1)))
            }
        }
    }

    /// `deadline`: an awaited probe's, kept from its first try.
    func startProbe(group: String, member: String, url: RequestURL, timeout: Duration, deadline: Instant? = nil) {
        // The member, as a route: a proxy, DIRECT, or a nested group's current choice.
        let route = director.profile.map { director.route(forPolicy: member, profile: $0, isHTTP: true).route } ?? .direct
        let port = url.port ?? 80
        let request = Array("GET \(url.target) HTTP/1.1\r\nHost: \(url.hostHeader)\r\nUser-Agent: sluice-health-check\r\nConnection: close\r\n\r\n".utf8)
        var host = url.host
        var connectPort = port
        var handshake: ProxyHandshake?
        switch route {
        case .direct:
            break
        case let .proxy(proxy):
            host = proxy.host
            connectPort = proxy.port
            handshake = try? ProxyHandshake(proxy: proxy, target: ProxyTarget(host: ProxyTarget.Host(name: url.host) ?? .domain(url.host), port: port))
            if handshake == nil { return finishProbe(group: group, member: member, success: false, reason: "cannot ask \(proxy.name) for \(url.host)") }
        case .refuse, .answer:
            return finishProbe(group: group, member: member, success: false, reason: "the member rejects")
        }
        // Probes share one resolver key: the answer is taken from the cache, which it fills.
        let key = FlowKey(transport: .tcp, appAddress: .v4(.any), appPort: 0, destinationAddress: .v4(.any), destinationPort: 0)
        let deadline = deadline ?? now + timeout
        guard let address = resolver.addressNow(of: host, director: director, key: key, now: now) else {
            guard now < deadline else {
                return finishProbe(group: group, member: member, success: false, reason: "no address for \(host) in time")
            }
            if !probesAwaitingAddress.contains(where: { $0.group == group && $0.member == member }) {
                probesAwaitingAddress.append(AwaitedProbe(group: group, member: member, url: url, timeout: timeout, deadline: deadline,
                                                          nextTry: now + AwaitedProbe.retry))
            }
            return
        }
        guard let socket = try? Socket(.tcp, family: address.family, mark: probeMark),
              (try? socket.connect(to: SocketAddress(address, port: connectPort))) != nil else {
            return finishProbe(group: group, member: member, success: false, reason: "cannot connect to \(host):\(connectPort)")
        }
        let token = nextProbeToken()
        let probe = HealthProbe(group: group, member: member, token: token, socket: socket, handshake: handshake,
                                request: request, started: now, deadline: deadline)
        guard watchProbe(probe, events: [.writable]) else { return }
        probes[token] = probe
    }

    func probeReady(_ probe: HealthProbe, events: Epoll.Events) {
        if events.contains(.error) || events.contains(.hangup), !events.contains(.readable) {
            return endProbe(probe, success: false, reason: "connection failed")
        }
        if events.contains(.writable), !probe.requestSent, probe.response.isEmpty {
            rewatchProbe(probe, events: [.readable])
            let first = probe.handshake?.start() ?? probe.request
            if probe.handshake == nil { probe.requestSent = true }
            guard first.withUnsafeBytes({ try? probe.socket.write($0) }) != nil else {
                return endProbe(probe, success: false, reason: "cannot send")
            }
            return
        }
        guard events.contains(.readable) else { return }
        let scratch = probeScratch
        guard case let .value(n)? = try? probe.socket.read(into: scratch) else {
            return endProbe(probe, success: false, reason: "read failed")
        }
        if n == 0 { return endProbe(probe, success: false, reason: "closed before answering") }
        let bytes = UnsafeRawBufferPointer(scratch.sub(0, n))
        if let handshake = probe.handshake {
            do throws(ProxyFailure) {
                switch try handshake.receive(bytes) {
                case .needMore:
                    return
                case let .send(more):
                    _ = more.withUnsafeBytes { try? probe.socket.write($0) }
                    return
                case let .established(leftover, _):
                    probe.handshake = nil
                    probe.requestSent = true
                    guard probe.request.withUnsafeBytes({ try? probe.socket.write($0) }) != nil else {
                        return endProbe(probe, success: false, reason: "cannot send")
                    }
                    probe.response += bytes.suffix(from: leftover)
                }
            } catch {
                return endProbe(probe, success: false, reason: error.message)
            }
        } else {
            probe.response += bytes
        }
        // "HTTP/1.1 204 ..." is all a check needs: any answer below 500 means the path works.
        guard probe.response.count >= 12 else { return }
        let status = Int(String(decoding: probe.response[9 ..< 12], as: UTF8.self)) ?? 0
        endProbe(probe, success: probe.response.starts(with: Array("HTTP/1.".utf8)) && status >= 100 && status < 500,
                 reason: "status \(status)")
    }

    func endProbe(_ probe: HealthProbe, success: Bool, reason: String) {
        unwatchProbe(probe)
        probes[probe.token] = nil
        finishProbe(group: probe.group, member: probe.member, success: success, reason: reason,
                    latency: UInt64(max(now.nanoseconds - probe.started.nanoseconds, 0)))
    }

    func finishProbe(group: String, member: String, success: Bool, reason: String, latency: UInt64 = 0) {
        guard var state = director.groups[group] else { return }
        let before = state.health(of: member)
        let change = state.record(member: member, result: success ? .success(latencyNs: max(latency, 1)) : .failure,
                                  at: UInt64(max(now.nanoseconds, 0)))
        director.groups[group] = state
        trace("group \(group): check of \(member): \(success ? "ok" : "failed") (\(reason))")
        if let change {
            EngineLog.warning("group \(change) (\(member) \(success ? "healthy" : "down: \(reason)")); \(state)")
        } else if before != state.health(of: member), !success {
            EngineLog.warning("group \(group): \(member) is down (\(reason))")
        }
    }

    /// A flow through `proxy` could not get through: groups that use it learn at once.
    func noteProxyFailure(_ proxy: String, reason: String) {
        for (name, group) in director.groups where group.current == proxy {
            guard case .fallback = group.kind else { continue }
            finishProbe(group: name, member: proxy, success: false, reason: reason)
        }
    }

    /// Probes past their deadline fail.
    func expireProbes() {
        let time = now
        for probe in probes.values where probe.deadline <= time {
            endProbe(probe, success: false, reason: "timed out")
        }
        let due = probesAwaitingAddress.filter { $0.nextTry <= time }
        probesAwaitingAddress.removeAll { $0.nextTry <= time }
        for awaited in due {
            startProbe(group: awaited.group, member: awaited.member, url: awaited.url, timeout: awaited.timeout, deadline: awaited.deadline)
        }
    }

    var probeDeadline: Instant? {
        var earliest: Instant?
        for probe in probes.values where earliest.map({ probe.deadline < $0 }) ?? true { earliest = probe.deadline }
        for awaited in probesAwaitingAddress where earliest.map({ awaited.nextTry < $0 }) ?? true { earliest = awaited.nextTry }
        // Asked on every wake-up of the loop: most profiles have no checks, and
        // the groups are looked at only when some do.
        guard director.hasHealthChecks else { return earliest }
        var next: UInt64?
        for group in director.groups.values {
            if case .select = group.kind { continue }
            if next.map({ group.nextCheckNs < $0 }) ?? true { next = group.nextCheckNs }
        }
        if let next {
            let instant = Instant(nanoseconds: Int64(min(next, UInt64(Int64.max))))
            if earliest.map({ instant < $0 }) ?? true { earliest = instant }
        }
        return earliest
    }
}

extension FlowDirector {
    /// Some group checks its members' health.
    var hasHealthChecks: Bool {
        profile?.groups.contains { $0.kind != .select && $0.url != nil } ?? false
    }
}
