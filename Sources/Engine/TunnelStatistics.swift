/// What the tunnel did, for the exit summary (and later the control API).
public struct TunnelStatistics: Sendable, CustomStringConvertible {
    public var packetsFromApp = 0
    public var packetsToApp = 0
    public var malformedPackets = 0
    public var tcpFlows = 0
    /// New flows whose upstream connect was refused (the app got a RST).
    public var tcpRefused = 0
    /// New flows whose upstream could not be reached: no route, no answer
    /// to the connect (the app got ICMP unreachable, or silence).
    public var tcpUnreachable = 0
    /// Flows a rule rejected (REJECT, REJECT-RST, REJECT-DROP).
    public var tcpRejected = 0
    /// Flows (or requests) Sluice answered itself: rejections with a body, redirects, Map Local.
    public var tcpAnswered = 0
    public var udpSessions = 0
    /// UDP flows a rule rejected (their datagrams are dropped).
    public var udpRejected = 0
    /// Datagrams from addresses no UDP session of the app's port talks to,
    /// dropped as a NAT's address-dependent filter drops them.
    public var udpFiltered = 0
    public var echoFlows = 0
    public var bytesFromApp = 0
    public var bytesToApp = 0
    public var tunWriteDrops = 0
    public var upstreamErrors = 0
    public var retransmissionTimeouts = 0
    public var fastRetransmits = 0
    public var sackRetransmits = 0
    public var goBackRetransmits = 0
    public var tailLossProbes = 0
    /// Window cuts taken back: every retransmission they caused proved spurious (D-SACKs).
    public var congestionEventsUndone = 0
    /// Flows that gave way in a full table (the oldest pending SYN, the
    /// least recently active UDP session), and new TCP flows a full table refused.
    public var evictions = 0
    public var tableFullRefusals = 0
    /// The profile's [Statistics] tables, rendered at exit.
    public var requestStatistics: String?
    /// Proxy groups: current member and health.
    public var groups: String?
    /// The pcap writer's summary, when capturing.
    public var capture: String?
    /// Owner lookups (PROCESS-NAME, PROCESS-PATH, UID rules), when there were any.
    public var owners: String?

    public init() {}

    public var description: String {
        "\(tcpFlows) TCP flows relayed (besides \(tcpRefused) refused, \(tcpUnreachable > 0 ? "\(tcpUnreachable) unreachable, " : "")\(tcpRejected) rejected by rules, \(tcpAnswered) answered locally), \(udpSessions) UDP sessions, \(echoFlows) ping flows; "
            + "\(bytesFromApp) bytes up, \(bytesToApp) bytes down; \(packetsFromApp) packets in, \(packetsToApp) out; "
            + "\(malformedPackets) malformed, \(upstreamErrors) upstream errors, \(tunWriteDrops) TUN write drops; "
            + "retransmissions: \(retransmissionTimeouts) timeouts, \(fastRetransmits) fast, \(sackRetransmits) SACK, \(goBackRetransmits) after timeouts, \(tailLossProbes) tail-loss probes"
            + (congestionEventsUndone > 0 ? " (\(congestionEventsUndone) window cuts undone: the retransmissions proved spurious)" : "")
            + (evictions + tableFullRefusals > 0 ? "; full flow tables: \(evictions) flows gave way, \(tableFullRefusals) refused" : "")
            + (udpFiltered > 0 ? "; \(udpFiltered) UDP datagrams from addresses the app never sent to, dropped" : "")
            + (owners.map { "\n" + $0 } ?? "")
            + (groups.map { "\ngroups:\n" + $0 } ?? "")
            + (capture.map { "\n" + $0 } ?? "")
            + (requestStatistics.map { "\n" + $0 } ?? "")
    }
}
