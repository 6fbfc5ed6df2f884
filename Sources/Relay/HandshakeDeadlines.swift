/// How long each stage of a proxy handshake may take. Relay has no clock: the
/// engine arms a timer with `limit(for: handshake.stage)` whenever the stage
/// changes, and on expiry fails the flow with `RelayError.timedOut(stage)`.
///
/// Defaults: a proxy that does not accept a TCP connection within 5 s is
/// treated as unreachable; greeting and authentication are one round trip
/// each on a proxy that is up, so 5 s is generous; the reply includes the
/// proxy's own connect to the target (and often its DNS lookup), so it gets 10 s,
/// a little under the kernel's first SYN retries giving up, so the app
/// hears from us before it would from its own connect timeout.
public struct HandshakeDeadlines: Hashable, Sendable, CustomStringConvertible {
    public var connect: Duration
    public var greeting: Duration
    public var auth: Duration
    public var reply: Duration

    public init(connect: Duration = .seconds(5), greeting: Duration = .seconds(5),
                auth: Duration = .seconds(5), reply: Duration = .seconds(10)) {
        self.connect = connect
        self.greeting = greeting
        self.auth = auth
        self.reply = reply
    }

    public static let `default` = HandshakeDeadlines()

    public func limit(for stage: HandshakeStage) -> Duration {
        switch stage {
        case .connect: return connect
        case .greeting: return greeting
        case .auth: return auth
        case .reply: return reply
        }
    }

    /// The same limit in nanoseconds, for engines that keep time as UInt64.
    public func limitNs(for stage: HandshakeStage) -> UInt64 {
        let (seconds, attoseconds) = limit(for: stage).components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }

    public var description: String {
        "connect \(connect), greeting \(greeting), auth \(auth), reply \(reply)"
    }
}
