internal import Stack
internal import Sys
internal import Wire

/// Pings without CAP_NET_RAW (`sluice exec` in a user namespace): the raw
/// ICMP sockets that carry every ping flow of a family are root's, so each
/// ping flow gets an ICMP echo ("ping") socket of its own instead, as the
/// ping program itself does. The kernel gives such a socket its own echo
/// identifier and hands it only the replies that carry it, so the socket
/// names the flow, and the reply goes back with the app's identifier. The
/// socket lives in `pingSockets` until the flow expires. The kernel lets a
/// user have one only when its group is in net.ipv4.ping_group_range
/// (Debian's systemd opens it to everyone); otherwise pings fail, said once.
extension Tunnel {
    /// Sends the echo request already in `message` on `key`'s ping socket, opened on its first request.
    func sendEchoOnPingSocket(_ key: FlowKey, to destination: IPAddress, message: UnsafeRawBufferPointer, sequenceNumber: UInt16) {
        if pingSockets[key] == nil {
            let socket: Socket
            do {
                socket = try Self.connectedPingSocket(to: destination.sysAddress, mark: configuration.mark)
            } catch {
                if !pingSocketsRefused, error == .permissionDenied || error == .notPermitted {
                    pingSocketsRefused = true
                    EngineLog.warning("pings cannot be relayed: raw ICMP sockets need root, and this user's group is not in "
                                      + "net.ipv4.ping_group_range, which ping sockets need (sysctl -w net.ipv4.ping_group_range='0 2147483647')")
                }
                socketFailed(error)
                echoFailed(key, sequenceNumber: sequenceNumber, error)
                return
            }
            let queuesErrors = socket.setReceiveErrors()
            guard let flow = watchedFlow(key, socket: socket) else { return }
            flow.queuesErrors = queuesErrors
            pingSockets[key] = flow
        }
        guard let flow = pingSockets[key] else { return }
        if flow.hopLimit != appHopLimit { carryHopLimit(to: flow) }
        do { try Self.sendEcho(message, on: flow.socket, to: nil) } catch {
            io.statistics.upstreamErrors += 1
            echoFailed(key, sequenceNumber: sequenceNumber, error)
            return
        }
        let payloadLength = message.count - 8
        io.statistics.bytesFromApp += payloadLength
        countBytes(key, up: payloadLength)
    }

    static func connectedPingSocket(to address: SysIPAddress, mark: UInt32?) throws(Errno) -> Socket {
        let socket = try Socket(.ping, family: address.family, mark: mark)
        _ = try socket.connect(to: SocketAddress(address, port: 0))
        return socket
    }

    /// Echo replies on a flow's ping socket: the kernel strips the IP header
    /// and checked the ICMP checksum; the identifier is the socket's.
    func readPingSocketReplies(_ flow: UDPFlow, sink: inout TunSink) {
        for _ in 0 ..< 64 {
            guard case let .value((n, _))? = try? flow.socket.receive(into: scratch) else { return }
            let bytes = UnsafeRawBufferPointer(scratch.sub(0, n))
            let sequence: UInt16, data: UnsafeRawBufferPointer
            // The socket's family is the real address's (a fake IP's name may have only the other).
            if echoRealAddresses[flow.key].map({ Self.echoTransport(to: $0) == .icmpv6 }) ?? flow.key.isIPv6 {
                guard let icmp = try? ICMPv6View(bytes), case let .echoReply(_, seq) = icmp.message else { continue }
                (sequence, data) = (seq, icmp.payload)
            } else {
                guard let icmp = try? ICMPv4View(bytes), case let .echoReply(_, seq) = icmp.message else { continue }
                (sequence, data) = (seq, icmp.payload)
            }
            io.statistics.bytesToApp += data.count
            countBytes(flow.key, down: data.count)
            datagrams.sendEchoReply(flow.key, sequenceNumber: sequence, payload: data, now: now, sink: &sink)
        }
    }

    /// The flow expired or was closed: its socket goes with it.
    func closePingSocket(_ key: FlowKey) {
        guard let flow = pingSockets.removeValue(forKey: key) else { return }
        try? epoll.remove(flow.socket.descriptor)
        tokens[flow.token] = nil
    }
}
