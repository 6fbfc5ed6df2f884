/// The knobs of one TCP connection. Defaults suit a tunnel whose peer is an
/// app on the same host: short timers, generous buffers.
public struct TCPConfiguration: Sendable, Equatable {
    /// The MSS we advertise: the TUN MTU less the IP and TCP headers.
    public var maximumSegmentSize: Int = 1460
    /// The receive (reassembly) buffer: the most we ever advertise, and the
    /// per-flow memory budget for inbound data.
    public var receiveBufferSize: Int = 256 * 1024
    /// The send buffer: bytes the engine handed us that are not yet acknowledged.
    public var sendBufferSize: Int = 256 * 1024
    public var timestamps = true
    public var selectiveAcknowledgments = true
    public var windowScaling = true
    /// The window's reduction and growth towards the app (docs/tcp.md, "Congestion control").
    public var congestionControl: CongestionAlgorithm = .cubic
    /// The first slow start ends when the round trip grows (HyStart++, RFC
    /// 9406), not at the first loss; off, it runs until something is lost.
    public var hyStart = true
    /// A congestion event whose retransmissions all prove spurious (D-SACKs)
    /// is undone (RFC 9438 §4.9); off, its reduction stays, as before 2026-12-07.
    public var undoSpuriousCongestionEvents = true
    /// How long in-order data may wait for its ACK when the engine has not yet
    /// drained it (RFC 9293 §3.8.6.3 allows up to 500 ms; we stay far below).
    public var delayedAckTimeout: Duration = .milliseconds(20)
    /// TIME-WAIT, much shorter than 2·MSL (docs/tcp.md explains why it is safe here).
    public var timeWaitDuration: Duration = .seconds(2)
    /// Keepalive probes after this much silence; nil turns keepalive off.
    public var keepaliveIdle: Duration? = nil
    public var keepaliveInterval: Duration = .seconds(10)
    public var keepaliveProbes = 3
    /// A connection with no traffic at all for this long is reset; nil (the
    /// default) for never. A network lets an idle connection live (an SSH
    /// session, a database pool's spare connection), and so must a tunnel;
    /// the engine finds dead ones through TCP keepalive on its upstream
    /// sockets instead (docs/tcp.md, "Idle connections").
    public var idleTimeout: Duration? = nil
    /// Consecutive retransmission timeouts before giving up (RFC 9293 §3.8.3 R2).
    public var maximumRetransmissions = 10
    /// SYN or SYN-ACK retransmissions before giving up.
    public var maximumSynRetransmissions = 5

    public init() {}

    /// The smallest shift that lets the receive buffer be advertised (RFC 7323 §2.3), at most 14.
    public var windowScaleShift: UInt8 {
        guard windowScaling else { return 0 }
        var shift: UInt8 = 0
        while shift < 14, receiveBufferSize >> Int(shift) > 65535 { shift += 1 }
        return shift
    }
}
