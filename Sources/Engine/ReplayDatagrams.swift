internal import Stack
internal import Wire

/// UDP sessions and ping flows in a capture, kept as the live flow table
/// keeps them (`Stack/DatagramFlowTable.swift`): the sender of a pair's first
/// datagram is the app, what comes back on the same pair is the answer, and a
/// session silent for the live idle timeout (60 s for UDP, 10 s for pings)
/// has ended: a later datagram on the pair starts a new one. Only echo
/// requests and replies make ping flows; other ICMP belongs to no flow.
struct ReplayDatagrams {
    private(set) var open: [FlowKey: ReplayFlow] = [:]
    private(set) var finished: [ReplayFlow] = []
    /// The map stops taking new sessions here (a capture of a scan).
    static let maximumOpen = 1 << 16
    private(set) var untracked = 0
    static let udpIdleNanoseconds: UInt64 = 60_000_000_000
    static let echoIdleNanoseconds: UInt64 = 10_000_000_000


    mutating func receive(_ packet: IPPacketView, at now: UInt64, names: ReplayNames) {
        switch packet.upperLayerProtocol {
        case .udp:
            guard let udp = try? UDPView(packet.payload) else { return }
            let key = FlowKey(transport: .udp, appAddress: packet.source, appPort: udp.sourcePort,
                              destinationAddress: packet.destination, destinationPort: udp.destinationPort)
            let reversed = FlowKey(transport: .udp, appAddress: packet.destination, appPort: udp.destinationPort,
                                   destinationAddress: packet.source, destinationPort: udp.sourcePort)
            if open[key] == nil, open[reversed] != nil {
                take(reversed, down: true, length: udp.payload.count, at: now, names: names)
            } else {
                take(key, down: false, length: udp.payload.count, at: now, names: names)
                open[key]?.readDatagram(udp.payload)
            }
        case .icmp, .icmpv6:
            // An echo request comes from the app; a reply goes back to it.
            let echo: (identifier: UInt16, isReply: Bool, length: Int)?
            if packet.upperLayerProtocol == .icmp {
                guard let icmp = try? ICMPv4View(packet.payload) else { return }
                switch icmp.message {
                case let .echoRequest(id, _): echo = (id, false, icmp.payload.count)
                case let .echoReply(id, _): echo = (id, true, icmp.payload.count)
                default: echo = nil
                }
            } else {
                guard let icmp = try? ICMPv6View(packet.payload) else { return }
                switch icmp.message {
                case let .echoRequest(id, _): echo = (id, false, icmp.payload.count)
                case let .echoReply(id, _): echo = (id, true, icmp.payload.count)
                default: echo = nil
                }
            }
            guard let echo else { return }
            let (app, remote) = echo.isReply ? (packet.destination, packet.source) : (packet.source, packet.destination)
            take(Self.echoKey(packet.upperLayerProtocol, app: app, remote: remote, echo.identifier),
                 down: echo.isReply, length: echo.length, at: now, names: names)
        default:
            return
        }
    }

    /// An echo flow's key as the live table makes it (the identifier as the app's port).
    static func echoKey(_ transport: IPProtocol, app: IPAddress, remote: IPAddress, _ identifier: UInt16) -> FlowKey {
        FlowKey(transport: transport, appAddress: app, appPort: identifier, destinationAddress: remote, destinationPort: 0)
    }

    private mutating func take(_ key: FlowKey, down: Bool, length: Int, at now: UInt64, names: ReplayNames) {
        let idle = key.transport == .udp ? Self.udpIdleNanoseconds : Self.echoIdleNanoseconds
        if let flow = open[key], now > flow.ended, now - flow.ended >= idle {
            open[key] = nil
            flow.endReason = .idle
            finished.append(flow)
        }
        if open[key] == nil {
            // A reply whose request the capture missed starts nothing: its sender is no app.
            guard !down else { return }
            guard open.count < Self.maximumOpen else {
                untracked += 1
                return
            }
            let flow = ReplayFlow(id: 0, key: key, started: now, sawHandshake: true)
            if let name = names.name(for: key.destinationAddress) {
                flow.dnsName = name.name
                flow.dnsNameIsFake = name.isFake
            }
            open[key] = flow
        }
        let flow = open[key]!
        if down { flow.bytesDown += length } else { flow.bytesUp += length }
        flow.ended = now
    }

    /// The capture ended: what is still open ends with it, or ended idle before.
    mutating func finish(at end: UInt64) {
        for flow in open.values {
            let idle = flow.key.transport == .udp ? Self.udpIdleNanoseconds : Self.echoIdleNanoseconds
            flow.endReason = end > flow.ended && end - flow.ended >= idle ? .idle : .endOfCapture
            finished.append(flow)
        }
        open.removeAll()
    }
}
