/// The connection states of RFC 9293 §3.3.2.
public enum TCPState: Sendable, Equatable, CustomStringConvertible {
    case closed, listen, synSent, synReceived, established
    case finWait1, finWait2, closeWait, closing, lastAck, timeWait

    /// RFC 9293 §3.10.7.4 calls these the synchronized states.
    public var isSynchronized: Bool {
        switch self {
        case .closed, .listen, .synSent, .synReceived: return false
        case .established, .finWait1, .finWait2, .closeWait, .closing, .lastAck, .timeWait: return true
        }
    }

    public var description: String {
        switch self {
        case .closed: return "CLOSED"
        case .listen: return "LISTEN"
        case .synSent: return "SYN-SENT"
        case .synReceived: return "SYN-RECEIVED"
        case .established: return "ESTABLISHED"
        case .finWait1: return "FIN-WAIT-1"
        case .finWait2: return "FIN-WAIT-2"
        case .closeWait: return "CLOSE-WAIT"
        case .closing: return "CLOSING"
        case .lastAck: return "LAST-ACK"
        case .timeWait: return "TIME-WAIT"
        }
    }
}

/// What happened to a connection since the engine last asked.
public struct TCPEvents: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The three-way handshake completed.
    public static let connected = TCPEvents(rawValue: 1 << 0)
    /// New in-order bytes can be read.
    public static let readable = TCPEvents(rawValue: 1 << 1)
    /// Room appeared in the send buffer.
    public static let writable = TCPEvents(rawValue: 1 << 2)
    /// The peer sent FIN and every byte before it has been delivered in order.
    public static let readClosed = TCPEvents(rawValue: 1 << 3)
    /// The connection reached CLOSED (or TIME-WAIT, which needs nothing more from the engine).
    public static let closed = TCPEvents(rawValue: 1 << 4)
    /// The peer reset the connection.
    public static let reset = TCPEvents(rawValue: 1 << 5)
    /// Retransmissions, keepalives or the idle timer gave up.
    public static let timedOut = TCPEvents(rawValue: 1 << 6)
    /// The peer sent a keepalive probe (`TCPConnection.peerKeepaliveIdle` says after how long a silence).
    public static let peerKeepalive = TCPEvents(rawValue: 1 << 7)

    public var description: String {
        let names: [(TCPEvents, String)] = [(.connected, "connected"), (.readable, "readable"), (.writable, "writable"),
                                            (.readClosed, "readClosed"), (.closed, "closed"), (.reset, "reset"),
                                            (.timedOut, "timedOut"), (.peerKeepalive, "peerKeepalive")]
        return "[" + names.filter { contains($0.0) }.map(\.1).joined(separator: ",") + "]"
    }
}

/// Which timer gave up on a connection (`.timedOut`): the engine tells the
/// app that stopped acknowledging from the one that closed and went quiet,
/// and both from a connection that was merely idle.
public enum TCPTimeout: Sendable, Equatable, CustomStringConvertible {
    /// RFC 9293 §3.8.3: R2, `maximumRetransmissions` (or the SYN's) retransmissions unanswered.
    case retransmissions
    /// RFC 1122 §4.2.3.6: `keepaliveProbes` probes unanswered.
    case keepalive
    /// `TCPConfiguration.idleTimeout` of silence both ways.
    case idle

    public var description: String {
        switch self {
        case .retransmissions: "retransmissions unanswered"
        case .keepalive: "keepalive probes unanswered"
        case .idle: "idle"
        }
    }
}
