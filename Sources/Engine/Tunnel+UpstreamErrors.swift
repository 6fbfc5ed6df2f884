internal import Stack
internal import Sys
internal import Wire

/// ICMP errors that the network sends about Sluice's own datagrams, passed
/// on to the app whose datagram it was, as the network would have told it
/// (#4: "upstream failures reach the app as it would see them from a real
/// network"): a router's net or host unreachable, prohibited or time
/// exceeded, with the router as the sender, so that `ping` prints "From
/// 10.0.0.1 icmp_seq=1 Destination Net Unreachable" and a UDP app with
/// IP_RECVERR gets EHOSTUNREACH where it would have waited out its timeout.
///
/// Linux tells a plain UDP or ping socket only of "hard" errors (a closed
/// port, a prohibition), and as an errno that has lost the code and the
/// sender; with IP_RECVERR it queues every ICMP error with both. A raw ICMP
/// socket (pings as root) receives the errors themselves.
extension Tunnel {
    /// Reads a direct UDP session's or a ping socket's error queue empty,
    /// each error to the flow's app; returns how many it read. Reading it
    /// is also what ends the socket's EPOLLERR, which would otherwise wake
    /// the loop forever.
    @discardableResult
    func passQueuedErrors(_ flow: UDPFlow, sink: inout TunSink) -> Int {
        var read = 0
        for _ in 0 ..< 64 {
            guard case let .value(queued)? = try? flow.socket.receiveQueuedError(into: scratch) else { return read }
            read += 1
            // Counted where the socket reported it (the read or send it failed).
            guard let error = UpstreamICMPError(isICMPv6: queued.isICMPv6, type: queued.type, code: queued.code) else { continue }
            let router = Self.router(queued.offender.map(\.wireAddress), about: queued.destination.map { $0.address.wireAddress })
            let key = flow.key
            trace("\(key): ICMP \(error) from \(queued.offender.map { "\($0)" } ?? "?")")
            if key.transport == .udp {
                datagrams.sendUDPError(key, error, from: router, now: now, sink: &sink)
            } else if queued.quotedCount >= 8 {
                // A ping socket quotes its echo request from the ICMP header on.
                let sequence = UnsafeRawBufferPointer(scratch.sub(0, 8)).u16(6)
                datagrams.sendEchoError(key, sequenceNumber: sequence, error, from: router, now: now, sink: &sink)
            }
        }
        return read
    }

    /// A direct TCP connect failed: the ICMP error behind it (a router's
    /// time exceeded for a SYN whose TTL ran out, its net unreachable or
    /// prohibition), read from the socket's error queue, with the router as
    /// its sender; nil when none is queued (a RST, a timeout). Only the
    /// errno reached the app before, as an unreachable from the destination.
    func queuedConnectError(_ flow: TCPFlow) -> (error: UpstreamICMPError, router: IPAddress?)? {
        for _ in 0 ..< 8 {
            guard case let .value(queued)? = try? flow.socket.receiveQueuedError(into: scratch) else { return nil }
            guard let error = UpstreamICMPError(isICMPv6: queued.isICMPv6, type: queued.type, code: queued.code) else { continue }
            trace("\(flow.key): connect: ICMP \(error) from \(queued.offender.map { "\($0)" } ?? "?")")
            return (error, Self.router(queued.offender.map(\.wireAddress), about: queued.destination.map { $0.address.wireAddress }))
        }
        return nil
    }

    /// An ICMP error a raw socket received (pings as root): when it quotes
    /// one of the flows' echo requests, the flow's app hears it.
    func passEchoError(_ message: UpstreamICMPError, quote: UnsafeRawBufferPointer, from sender: IPAddress, v6: Bool,
                       sink: inout TunSink) {
        guard let quoted = try? IPPacketView(quoted: quote) else { return }
        let echo = quoted.payload
        let transport: IPProtocol = v6 ? .icmpv6 : .icmp
        guard quoted.upperLayerProtocol == transport, echo.count >= 8,
              echo.u8(0) == (v6 ? ICMPv6Message.echoRequestType : ICMPv4Message.echoRequestType) else { return }
        let identifier = echo.u16(4), sequence = echo.u16(6), destination = quoted.destination
        guard let flow = datagrams.echoFlow(destination: destination, identifier: identifier, transport: transport)
            ?? echoFlowsByRealAddress[EchoRoute(address: destination, identifier: identifier, transport: transport)] else { return }
        io.statistics.upstreamErrors += 1
        trace("\(flow): ICMP \(message) from \(sender)")
        datagrams.sendEchoError(flow, sequenceNumber: sequence, message, from: Self.router(sender, about: destination),
                                now: now, sink: &sink)
    }

    /// Sends an echo request, once more when the first send fails: the
    /// failure may be an ICMP error that an earlier request drew (Linux
    /// reports it on the next call, and on the raw socket every ping flow
    /// shares, the next call may be another flow's); a second failure is
    /// this request's own (no route).
    static func sendEcho(_ message: UnsafeRawBufferPointer, on socket: borrowing Socket, to destination: SocketAddress?) throws(Errno) {
        do { _ = try socket.send(message, to: destination) } catch {
            _ = try socket.send(message, to: destination)
        }
    }

    /// A ping Sluice could not send (the host has no route to its
    /// destination): the app hears it as a gateway would say it, net or host
    /// unreachable, where its ping waited out its timeout.
    func echoFailed(_ key: FlowKey, sequenceNumber: UInt16, _ error: Errno) {
        trace("\(key): ping: \(error)")
        guard let reason = Self.unreachableReason(for: error) else { return }
        var sink = TunSink(io: io)
        datagrams.sendEchoError(key, sequenceNumber: sequenceNumber, UpstreamICMPError(reason), now: now, sink: &sink)
    }

    /// The sender of an error when it is a router on the way; nil when it is
    /// the destination itself, which the app knows by the address it used
    /// (a fake IP's, not the real one behind it).
    static func router(_ sender: IPAddress?, about destination: IPAddress?) -> IPAddress? {
        guard let sender, sender != destination else { return nil }
        return sender
    }
}
