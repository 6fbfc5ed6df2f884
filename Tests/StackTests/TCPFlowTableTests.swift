import Testing
@testable import Stack
import Wire

/// The flow table: only SYNs create flows, the engine decides eagerly or
/// lazily, refusals take three forms, limits hold, and everything leaves as a
/// well-formed IPv4 or IPv6 datagram.
@Suite struct TCPFlowTableTests {
    let app4 = IPAddress.v4(IPv4Address(10, 7, 0, 2))
    let server4 = IPAddress.v4(IPv4Address(198, 18, 0, 5))
    let app6 = IPAddress.v6(IPv6Address("fd00:7::2")!)
    let server6 = IPAddress.v6(IPv6Address("fd00:99::5")!)

    func datagram(_ segment: Segment, from: IPAddress, to: IPAddress) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 100 + segment.payload.count)
        let n = buffer.withUnsafeMutableBytes { out in
            segment.payload.withUnsafeBytes { IPFraming.writeTCP(into: out, source: from, destination: to, header: segment.header, payload: $0, identification: 9) }
        }
        return Array(buffer.prefix(n))
    }

    func input(_ table: TCPFlowTable, _ bytes: [UInt8], sink: inout CollectingSink, now: Instant = .milliseconds(5)) -> TCPFlowTable.Input {
        bytes.withUnsafeBytes { raw in table.input(try! IPPacketView(raw), now: now, sink: &sink) }
    }

    /// Parses a datagram the table sent into its TCP header and payload.
    func tcp(_ bytes: [UInt8]) -> (source: IPAddress, destination: IPAddress, segment: Segment) {
        bytes.withUnsafeBytes { raw in
            let ip = try! IPPacketView(raw)
            #expect(ip.verifyUpperLayerChecksum() == true)
            let view = try! TCPView(ip.payload)
            var header = TCPHeader(view)
            header.checksum = 0 // verified above; expected headers leave it zero
            return (ip.source, ip.destination, Segment(header: header, payload: Array(view.payload)))
        }
    }

    func plainTable(maximumFlows: Int = 100) -> TCPFlowTable {
        var c = TCPFlowTable.Configuration()
        c.tcp = plainConfiguration()
        c.maximumFlows = maximumFlows
        return TCPFlowTable(configuration: c)
    }

    @Test func synBecomesAConnectionRequestAndEagerAcceptAnswers() {
        let table = plainTable()
        var sink = CollectingSink()
        let key = FlowKey(transport: .tcp, appAddress: app4, appPort: remotePort, destinationAddress: server4, destinationPort: localPort)
        #expect(input(table, datagram(fromPeer(remoteISS, .syn, options: mssOption(1000)), from: app4, to: server4), sink: &sink) == .connectionRequest(key))
        #expect(sink.packets.isEmpty)
        let connection = table.accept(key, now: .milliseconds(5), sink: &sink)
        #expect(connection?.state == .synReceived)
        #expect(sink.packets.count == 1)
        let reply = tcp(sink.packets[0])
        #expect(reply.source == server4 && reply.destination == app4)
        #expect(reply.segment.header.flags == [.syn, .ack])
        #expect(reply.segment.header.acknowledgmentNumber == remoteISS + 1)
        #expect(reply.segment.header.sourcePort == localPort && reply.segment.header.destinationPort == remotePort)
    }

    /// An active open toward the app (a forwarded port): a SYN from our side,
    /// then the app's SYN-ACK is answered and the connection is established;
    /// a second open of the same flow is refused.
    @Test func anActiveOpenConnectsToTheApp() {
        let table = plainTable()
        var sink = CollectingSink()
        let key = FlowKey(transport: .tcp, appAddress: app4, appPort: 8000, destinationAddress: server4, destinationPort: 40001)
        let connection = table.open(key, now: .milliseconds(5), sink: &sink)
        #expect(connection?.state == .synSent)
        #expect(table.open(key, now: .milliseconds(6), sink: &sink) == nil, "the flow exists")
        #expect(sink.packets.count == 1)
        let syn = tcp(sink.packets[0])
        #expect(syn.source == server4 && syn.destination == app4)
        #expect(syn.segment.header.flags == [.syn])
        #expect(syn.segment.header.sourcePort == 40001 && syn.segment.header.destinationPort == 8000)
        let ours = syn.segment.header.sequenceNumber
        var synAck = TCPHeader(sourcePort: 8000, destinationPort: 40001, sequenceNumber: remoteISS, acknowledgmentNumber: ours + 1,
                               flags: [.syn, .ack], windowSize: 64000)
        synAck.options.maximumSegmentSize = 1000
        #expect(input(table, datagram(Segment(header: synAck, payload: []), from: app4, to: server4), sink: &sink) == .segment(key))
        #expect(connection?.state == .established)
        #expect(connection?.takeEvents().contains(.connected) == true)
        table.flush(key, now: .milliseconds(7), sink: &sink)
        #expect(sink.packets.count == 2, "and nothing else")
        let ack = tcp(sink.packets[1])
        #expect(ack.segment.header.flags == [.ack] && ack.segment.header.acknowledgmentNumber == remoteISS + 1)
    }

    @Test func lazyAcceptWaitsAndIgnoresRetransmittedSyns() {
        let table = plainTable()
        var sink = CollectingSink()
        let syn = datagram(fromPeer(remoteISS, .syn), from: app4, to: server4)
        guard case let .connectionRequest(key) = input(table, syn, sink: &sink) else { Issue.record("no request"); return }
        #expect(input(table, syn, sink: &sink) == .dropped(.duplicateSyn))
        #expect(table.pendingCount == 1 && table.count == 0)
        // Later, once the upstream connected:
        table.accept(key, now: .milliseconds(50), sink: &sink)
        #expect(table.count == 1 && table.pendingCount == 0)
        #expect(sink.packets.count == 1)
    }

    @Test func refusalWithResetFollowsRFC9293() {
        let table = plainTable()
        var sink = CollectingSink()
        guard case let .connectionRequest(key) = input(table, datagram(fromPeer(remoteISS, .syn), from: app4, to: server4), sink: &sink) else { return }
        table.refuse(key, with: .reset, sink: &sink)
        let reply = tcp(sink.packets[0])
        #expect(reply.segment == Segment(header: TCPHeader(sourcePort: localPort, destinationPort: remotePort, sequenceNumber: SequenceNumber(0),
                                                           acknowledgmentNumber: remoteISS + 1, flags: [.rst, .ack], windowSize: 0), payload: []))
        #expect(table.pendingCount == 0)
    }

    @Test(arguments: [false, true])
    func refusalWithUnreachableQuotesTheSyn(v6: Bool) {
        let table = plainTable()
        var sink = CollectingSink()
        let (app, server) = v6 ? (app6, server6) : (app4, server4)
        guard case let .connectionRequest(key) = input(table, datagram(fromPeer(remoteISS, .syn), from: app, to: server), sink: &sink) else { return }
        table.refuse(key, with: .unreachable(.port), sink: &sink)
        #expect(sink.packets.count == 1)
        sink.packets[0].withUnsafeBytes { raw in
            let ip = try! IPPacketView(raw)
            #expect(ip.source == server && ip.destination == app)
            switch ip.network {
            case .v4:
                let icmp = try! ICMPv4View(ip.payload)
                #expect(icmp.verifyChecksum())
                #expect(icmp.type == 3 && icmp.code == 3)
                let quoted = try! IPPacketView(quoted: icmp.payload)
                #expect(quoted.source == app && quoted.upperLayerProtocol == .tcp)
            case let .v6(v):
                let icmp = try! ICMPv6View(ip.payload)
                #expect(icmp.verifyChecksum(source: v.source, destination: v.destination))
                #expect(icmp.type == 1 && icmp.code == 4)
            }
        }
    }

    /// A router's error about the connect answers the app's SYN from the
    /// router (`traceroute -T`): a time exceeded, quoting the SYN.
    @Test(arguments: [false, true])
    func refusalWithARoutersErrorComesFromTheRouter(v6: Bool) throws {
        let table = plainTable()
        var sink = CollectingSink()
        let (app, server) = v6 ? (app6, server6) : (app4, server4)
        let router: IPAddress = v6 ? .v6(IPv6Address(high: 0xfd00_0088_0000_0000, low: 1)) : .v4(IPv4Address(10, 88, 0, 2))
        guard case let .connectionRequest(key) = input(table, datagram(fromPeer(remoteISS, .syn), from: app, to: server), sink: &sink) else { return }
        let timeExceeded = UpstreamICMPError(v4: .timeExceeded(code: 0), v6: .timeExceeded(code: 0))
        table.refuse(key, with: timeExceeded, from: router, sink: &sink)
        #expect(sink.packets.count == 1, "and nothing else")
        #expect(table.pendingCount == 0)
        try sink.packets[0].withUnsafeBytes { raw in
            let ip = try IPPacketView(raw)
            #expect(ip.source == router && ip.destination == app)
            switch ip.network {
            case .v4:
                let icmp = try ICMPv4View(ip.payload)
                #expect(icmp.verifyChecksum())
                #expect(icmp.type == 11 && icmp.code == 0)
                let quoted = try IPPacketView(quoted: icmp.payload)
                #expect(quoted.source == app && quoted.destination == server && quoted.upperLayerProtocol == .tcp)
                let syn = try TCPView(quoted.payload)
                #expect(syn.sequenceNumber == remoteISS)
            case let .v6(v):
                let icmp = try ICMPv6View(ip.payload)
                #expect(icmp.verifyChecksum(source: v.source, destination: v.destination))
                #expect(icmp.type == 3 && icmp.code == 0)
            }
        }
    }

    @Test func refusalWithDropSendsNothing() {
        let table = plainTable()
        var sink = CollectingSink()
        guard case let .connectionRequest(key) = input(table, datagram(fromPeer(remoteISS, .syn), from: app4, to: server4), sink: &sink) else { return }
        table.refuse(key, with: .drop, sink: &sink)
        #expect(sink.packets.isEmpty && table.pendingCount == 0)
    }

    @Test func segmentsForUnknownFlowsGetResets() {
        let table = plainTable()
        var sink = CollectingSink()
        #expect(input(table, datagram(fromPeer(remoteISS, ack: localISS, [.psh], payload: bytes(5)), from: app4, to: server4), sink: &sink) == .answered)
        #expect(tcp(sink.packets[0]).segment.header == TCPHeader(sourcePort: localPort, destinationPort: remotePort, sequenceNumber: localISS, flags: .rst, windowSize: 0))
        // A RST for an unknown flow is dropped silently, and is not malformed
        // (the engine counts those): a duplicate or late one is ordinary.
        #expect(input(table, datagram(fromPeer(remoteISS, .rst), from: app4, to: server4), sink: &sink) == .dropped(.resetForUnknownFlow))
        #expect(sink.packets.count == 1)
    }

    /// REJECT-DROP after a flow was accepted: the connection ends without a
    /// word, and its segments get none until the silence ends (they met "no
    /// connection" and a RST before); after it, the RST as for any unknown flow.
    @Test func aSilencedFlowIsAnsweredNothingUntilTheSilenceEnds() {
        let table = plainTable()
        var sink = CollectingSink()
        guard case let .connectionRequest(key) = input(table, datagram(fromPeer(remoteISS, .syn), from: app4, to: server4), sink: &sink) else {
            Issue.record("no connection request")
            return
        }
        _ = table.accept(key, now: .milliseconds(5), sink: &sink)
        sink.packets.removeAll()
        table.silence(key, until: .milliseconds(1000))
        #expect(table.connection(key) == nil)
        let data = datagram(fromPeer(remoteISS + 1, ack: localISS + 1, [.psh], payload: bytes(5)), from: app4, to: server4)
        #expect(input(table, data, sink: &sink, now: .milliseconds(200)) == .dropped(.silenced))
        #expect(input(table, data, sink: &sink, now: .milliseconds(999)) == .dropped(.silenced))
        #expect(sink.packets.isEmpty, "and nothing else")
        #expect(input(table, data, sink: &sink, now: .milliseconds(1000)) == .answered)
        #expect(tcp(sink.packets[0]).segment.header.flags == .rst)
    }

    @Test func silencedFlowsAreBounded() {
        let table = plainTable()
        for port in 0 ..< UInt16(TCPFlowTable.silencedLimit + 10) {
            let key = FlowKey(transport: .tcp, appAddress: app4, appPort: 1000 + port, destinationAddress: server4, destinationPort: localPort)
            table.silence(key, until: .milliseconds(Int64(1000 + port)))
        }
        #expect(table.silenced.count == TCPFlowTable.silencedLimit)
        // The soonest to end went first.
        let first = FlowKey(transport: .tcp, appAddress: app4, appPort: 1000, destinationAddress: server4, destinationPort: localPort)
        #expect(table.silenced[first] == nil)
    }

    @Test func theFlowLimitAnswersNewSynsWithResets() {
        let table = plainTable(maximumFlows: 2)
        var sink = CollectingSink()
        for port in [1000, 1001] as [UInt16] {
            var syn = fromPeer(remoteISS, .syn)
            syn.header.sourcePort = port
            guard case let .connectionRequest(key) = input(table, datagram(syn, from: app4, to: server4), sink: &sink) else { return }
            table.accept(key, now: .milliseconds(5), sink: &sink)
        }
        sink.packets.removeAll()
        #expect(input(table, datagram(fromPeer(remoteISS, .syn), from: app4, to: server4), sink: &sink) == .refusedFull)
        #expect(tcp(sink.packets[0]).segment.header.flags == [.rst, .ack])
        #expect(table.count == 2)
    }

    /// Opens a connection from `port` and takes the app's FIN on it: the app
    /// has left, as a scan's connect-then-close does, and the engine is still
    /// connecting upstream (it never closes its own side here).
    func openAndLeave(_ table: TCPFlowTable, port: UInt16, sink: inout CollectingSink) -> FlowKey? {
        guard let (key, connection, iss) = open(table, port: port, now: .milliseconds(5), sink: &sink) else { return nil }
        _ = input(table, fromApp(port: port, remoteISS + 1, ack: iss + 1, .fin), sink: &sink)
        table.flush(key, now: .milliseconds(5), sink: &sink)
        return connection.state == .closeWait ? key : nil
    }

    /// A full table makes room for a new SYN with the oldest connection the
    /// engine let give way: it is reset towards its app, the engine hears of
    /// it, and the SYN is the engine's to decide. One taken back stays.
    @Test func aFullTableResetsTheOldestConnectionLetGiveWay() {
        let table = plainTable(maximumFlows: 3)
        var sink = CollectingSink()
        guard let first = openAndLeave(table, port: 1000, sink: &sink),
              let second = openAndLeave(table, port: 1001, sink: &sink),
              let third = openAndLeave(table, port: 1002, sink: &sink) else {
            Issue.record("the connections did not open")
            return
        }
        table.letGiveWay(first)
        table.letGiveWay(first, false)
        table.letGiveWay(second)
        table.letGiveWay(third)
        sink.packets.removeAll()
        guard case let .connectionRequest(key) = input(table, fromApp(port: 2000, remoteISS, .syn), sink: &sink) else {
            Issue.record("the new SYN was refused")
            return
        }
        #expect(key.appPort == 2000)
        #expect(table.takeEvictedConnections() == [second])
        #expect(table.takeEvictedConnections().isEmpty, "told once")
        #expect(sink.packets.count == 1, "the reset, and nothing else")
        let reset = tcp(sink.packets[0])
        #expect(reset.segment.header.flags.contains(.rst) && reset.segment.header.destinationPort == 1001)
        #expect(table.connection(second) == nil && table.connection(first) != nil && table.connection(third) != nil)
        #expect(table.accept(key, now: .milliseconds(6), sink: &sink) != nil)
        // The next one makes room with the third; then only the first is left, which was taken back.
        sink.packets.removeAll()
        if case .connectionRequest = input(table, fromApp(port: 2001, remoteISS, .syn), sink: &sink) {} else { Issue.record("2001 was refused") }
        #expect(table.takeEvictedConnections() == [third])
        sink.packets.removeAll()
        #expect(input(table, fromApp(port: 2002, remoteISS, .syn), sink: &sink) == .refusedFull)
        #expect(table.takeEvictedConnections().isEmpty && table.connection(first) != nil)
    }

    /// A full table makes room with a TIME-WAIT flow first, without a word,
    /// before any connection the engine let give way.
    @Test func aFullTableDropsTheOldestTimeWaitFlowFirst() {
        let table = plainTable(maximumFlows: 3)
        var sink = CollectingSink()
        guard let waiting = closeIntoTimeWait(table, port: 1000, now: .milliseconds(5), sink: &sink),
              let newerWaiting = closeIntoTimeWait(table, port: 1001, now: .milliseconds(7), sink: &sink),
              let left = openAndLeave(table, port: 1002, sink: &sink) else {
            Issue.record("the connections did not open")
            return
        }
        table.letGiveWay(left)
        sink.packets.removeAll()
        if case .connectionRequest = input(table, fromApp(port: 2000, remoteISS, .syn), sink: &sink) {} else { Issue.record("2000 was refused") }
        #expect(sink.packets.isEmpty, "nothing sent")
        #expect(table.takeEvictedConnections().isEmpty)
        #expect(table.connection(waiting) == nil && table.connection(newerWaiting)?.state == .timeWait)
        #expect(table.timeWaitCount == 1)
    }

    /// A full pending queue makes room: the oldest SYN gives way (the engine
    /// drops its upstream attempt), so SYNs to addresses that never answer
    /// cannot stop every new connection until the kernel gives up on them.
    @Test func aFullPendingQueueEvictsTheOldestSyn() {
        var c = TCPFlowTable.Configuration()
        c.tcp = plainConfiguration()
        c.maximumPending = 2
        let table = TCPFlowTable(configuration: c)
        var sink = CollectingSink()
        var keys: [FlowKey] = []
        for port in [1000, 1001, 1002, 1003] as [UInt16] {
            var syn = fromPeer(remoteISS, .syn)
            syn.header.sourcePort = port
            guard case let .connectionRequest(key) = input(table, datagram(syn, from: app4, to: server4), sink: &sink) else {
                Issue.record("port \(port) was not taken")
                return
            }
            keys.append(key)
            if port == 1001 {
                // 1000 is accepted meanwhile: it is no longer pending, and 1001 is the oldest.
                table.accept(keys[0], now: .milliseconds(5), sink: &sink)
                #expect(table.takeEvictedPending().isEmpty)
            }
        }
        #expect(table.takeEvictedPending() == [keys[1]])
        #expect(table.pendingCount == 2 && sink.packets.count == 1, "only 1000's SYN-ACK went out")
        #expect(table.accept(keys[1], now: .milliseconds(6), sink: &sink) == nil, "gone")
        #expect(table.accept(keys[3], now: .milliseconds(6), sink: &sink) != nil)
    }

    @Test func badChecksumsAreDroppedAndCounted() {
        let table = plainTable()
        var sink = CollectingSink()
        var packet = datagram(fromPeer(remoteISS, .syn), from: app4, to: server4)
        packet[25] ^= 0x40 // a bit of the TCP sequence number
        #expect(input(table, packet, sink: &sink) == .dropped(.badChecksum))
        #expect(sink.packets.isEmpty)
    }

    @Test func aWholeIPv6ConnectionThroughTheTable() {
        let table = plainTable()
        var sink = CollectingSink()
        guard case let .connectionRequest(key) = input(table, datagram(fromPeer(remoteISS, .syn, options: mssOption(1000)), from: app6, to: server6), sink: &sink) else { return }
        let connection = table.accept(key, now: .milliseconds(5), sink: &sink)!
        let synAck = tcp(sink.packets.removeFirst()).segment.header
        #expect(input(table, datagram(fromPeer(remoteISS + 1, ack: synAck.sequenceNumber + 1, [.psh], payload: bytes(20)), from: app6, to: server6), sink: &sink) == .segment(key))
        var out = [UInt8](repeating: 0, count: 100)
        #expect(out.withUnsafeMutableBytes { connection.read(into: $0) } == 20)
        _ = bytes(7).withUnsafeBytes { connection.write($0) }
        table.flush(key, now: .milliseconds(6), sink: &sink)
        let reply = tcp(sink.packets.removeFirst())
        #expect(reply.source == server6 && reply.segment.payload == bytes(7) && reply.segment.header.acknowledgmentNumber == remoteISS + 21)
    }

    @Test func aSynMayReplaceATimeWaitFlow() {
        let table = plainTable()
        var sink = CollectingSink()
        guard case let .connectionRequest(key) = input(table, datagram(fromPeer(remoteISS, .syn), from: app4, to: server4), sink: &sink) else { return }
        let connection = table.accept(key, now: .milliseconds(5), sink: &sink)!
        let iss = tcp(sink.packets.removeFirst()).segment.header.sequenceNumber
        _ = input(table, datagram(fromPeer(remoteISS + 1, ack: iss + 1, []), from: app4, to: server4), sink: &sink)
        connection.shutdownWrite()
        table.flush(key, now: .milliseconds(6), sink: &sink)
        _ = input(table, datagram(fromPeer(remoteISS + 1, ack: iss + 2, .fin), from: app4, to: server4), sink: &sink)
        #expect(connection.state == .timeWait)
        // An old SYN (not past RCV.NXT) goes to the TIME-WAIT connection; a newer one starts afresh.
        #expect(input(table, datagram(fromPeer(remoteISS, .syn), from: app4, to: server4), sink: &sink) == .segment(key))
        #expect(input(table, datagram(fromPeer(remoteISS + 100_000, .syn), from: app4, to: server4), sink: &sink) == .connectionRequest(key))
    }

    /// A segment from the app's port `port`.
    func fromApp(port: UInt16, _ sequence: SequenceNumber, ack: SequenceNumber? = nil, _ flags: TCPFlags) -> [UInt8] {
        var segment = fromPeer(sequence, ack: ack, flags)
        segment.header.sourcePort = port
        return datagram(segment, from: app4, to: server4)
    }

    /// Accepts a SYN from port `port` at `now`: the flow, its connection and our initial sequence number.
    func open(_ table: TCPFlowTable, port: UInt16, now: Instant, sink: inout CollectingSink)
        -> (key: FlowKey, connection: TCPConnection, iss: SequenceNumber)? {
        guard case let .connectionRequest(key) = input(table, fromApp(port: port, remoteISS, .syn), sink: &sink, now: now),
              let connection = table.accept(key, now: now, sink: &sink) else { return nil }
        return (key, connection, tcp(sink.packets.removeLast()).segment.header.sequenceNumber)
    }

    /// Takes a flow from port `port` through a close we start into TIME-WAIT at `now`.
    func closeIntoTimeWait(_ table: TCPFlowTable, port: UInt16, now: Instant, sink: inout CollectingSink) -> FlowKey? {
        guard let (key, connection, iss) = open(table, port: port, now: now, sink: &sink) else { return nil }
        _ = input(table, fromApp(port: port, remoteISS + 1, ack: iss + 1, []), sink: &sink, now: now)
        connection.shutdownWrite()
        table.flush(key, now: now, sink: &sink)
        _ = input(table, fromApp(port: port, remoteISS + 1, ack: iss + 2, .fin), sink: &sink, now: now)
        table.flush(key, now: now, sink: &sink)
        return connection.state == .timeWait ? key : nil
    }

    /// At a high rate of short connections most flows are in TIME-WAIT; the
    /// per-wake-up deadline scan must not visit them (it made each new
    /// connection cost time in proportion to the last 2 s of connections: 1.3k
    /// new connections/s through `sluice exec`, 80% of a core), yet each must
    /// still expire on time, and a retransmitted FIN must still restart its wait.
    @Test func timeWaitFlowsWaitApartAndExpireOnTime() {
        let table = plainTable(maximumFlows: 5000)
        let wait = plainConfiguration().timeWaitDuration
        var sink = CollectingSink()
        var keys: [FlowKey] = []
        for i in 0 ..< 3000 {
            guard let key = closeIntoTimeWait(table, port: UInt16(1000 + i), now: .milliseconds(Int64(i)), sink: &sink) else {
                Issue.record("flow \(i) did not reach TIME-WAIT"); return
            }
            keys.append(key)
        }
        #expect(table.count == 3000)
        // Waiting needs no buffers: the rings went back when the flow entered TIME-WAIT.
        #expect(keys.allSatisfy { table.connection($0)!.sendBuffer.capacity == 1 && table.connection($0)!.receiveBuffer.ring.capacity == 1 })
        #expect(table.connections.count == 0, "TIME-WAIT flows are still in the scanned set")
        #expect(table.connection(keys[0])?.state == .timeWait)
        #expect(table.nextDeadline == Instant.milliseconds(0) + wait)

        // Shortly before its wait ends, the first flow's app retransmits its FIN: it is re-ACKed and waits afresh.
        let first = table.connection(keys[0])!
        sink.packets.removeAll()
        var fin = fromPeer(remoteISS + 1, ack: first.sendNext, .fin)
        fin.header.sourcePort = 1000
        #expect(input(table, datagram(fin, from: app4, to: server4), sink: &sink, now: .milliseconds(1800)) == .segment(keys[0]))
        table.flush(keys[0], now: .milliseconds(1800), sink: &sink)
        #expect(sink.packets.count == 1 && tcp(sink.packets[0]).segment.header.flags == .ack)

        // Later: exactly the flows whose wait is over are gone, not the re-armed first one.
        let polled = table.poll(now: Instant.milliseconds(1499) + wait, sink: &sink)
        // A TIME-WAIT that ends is no timeout.
        #expect(polled.allSatisfy { $0.timeout == nil })
        let closed = polled.map(\.key)
        #expect(closed.count == 1499 && !closed.contains(keys[0]) && closed.contains(keys[1]) && closed.contains(keys[1499]))
        #expect(table.count == 1501 && table.connection(keys[1499]) == nil && table.connection(keys[1500])?.state == .timeWait)
        #expect(table.nextDeadline == Instant.milliseconds(1500) + wait)
        let atRearmed = table.poll(now: Instant.milliseconds(1800) + wait, sink: &sink).map(\.key)
        #expect(atRearmed.count == 302 && atRearmed.contains(keys[0]) && atRearmed.contains(keys[1800]))
        _ = table.poll(now: Instant.milliseconds(2999) + wait, sink: &sink)
        #expect(table.count == 0 && table.nextDeadline == nil)
    }

    /// The rings go back only once the engine has read the app's last bytes.
    @Test func timeWaitKeepsUndrainedDataUntilRead() {
        let table = plainTable()
        var sink = CollectingSink()
        guard case let .connectionRequest(key) = input(table, datagram(fromPeer(remoteISS, .syn), from: app4, to: server4), sink: &sink),
              let connection = table.accept(key, now: .milliseconds(5), sink: &sink) else { Issue.record("no flow"); return }
        let iss = tcp(sink.packets.removeLast()).segment.header.sequenceNumber
        _ = input(table, datagram(fromPeer(remoteISS + 1, ack: iss + 1, []), from: app4, to: server4), sink: &sink)
        connection.shutdownWrite()
        table.flush(key, now: .milliseconds(6), sink: &sink)
        _ = input(table, datagram(fromPeer(remoteISS + 1, ack: iss + 2, [.fin, .psh], payload: bytes(5)), from: app4, to: server4), sink: &sink)
        table.flush(key, now: .milliseconds(7), sink: &sink)
        #expect(connection.state == .timeWait && connection.readableCount == 5)
        #expect(connection.receiveBuffer.ring.capacity == plainConfiguration().receiveBufferSize)
        var out = [UInt8](repeating: 0, count: 10)
        #expect(out.withUnsafeMutableBytes { connection.read(into: $0) } == 5 && Array(out.prefix(5)) == bytes(5))
        table.flush(key, now: .milliseconds(8), sink: &sink)
        #expect(connection.receiveBuffer.ring.capacity == 1 && connection.sendBuffer.capacity == 1)
    }

    /// A flow whose app stopped acknowledging leaves through `poll`, which
    /// says which timer gave up: the engine records why the flow ended.
    @Test func pollSaysWhichTimerGaveUp() {
        var c = TCPFlowTable.Configuration()
        c.tcp = plainConfiguration()
        c.tcp.maximumRetransmissions = 2
        let table = TCPFlowTable(configuration: c)
        var sink = CollectingSink()
        guard case let .connectionRequest(key) = input(table, datagram(fromPeer(remoteISS, .syn), from: app4, to: server4), sink: &sink),
              let connection = table.accept(key, now: .milliseconds(5), sink: &sink) else { Issue.record("no flow"); return }
        let iss = tcp(sink.packets.removeLast()).segment.header.sequenceNumber
        _ = input(table, datagram(fromPeer(remoteISS + 1, ack: iss + 1, []), from: app4, to: server4), sink: &sink)
        _ = bytes(100).withUnsafeBytes { connection.write($0) }
        table.flush(key, now: .milliseconds(6), sink: &sink)
        var closed: [TCPFlowTable.Closed] = []
        for _ in 0 ..< 20 where closed.isEmpty {
            guard let deadline = table.nextDeadline else { break }
            closed = table.poll(now: deadline, sink: &sink)
        }
        #expect(closed == [TCPFlowTable.Closed(key: key, timeout: .retransmissions)], "\(closed)")
        #expect(table.count == 0)
    }

    @Test func closedFlowsLeaveTheTable() {
        let table = plainTable()
        var sink = CollectingSink()
        guard case let .connectionRequest(key) = input(table, datagram(fromPeer(remoteISS, .syn), from: app4, to: server4), sink: &sink) else { return }
        table.accept(key, now: .milliseconds(5), sink: &sink)
        _ = input(table, datagram(fromPeer(remoteISS + 1, .rst), from: app4, to: server4), sink: &sink)
        table.flush(key, now: .milliseconds(6), sink: &sink)
        #expect(table.count == 0)
    }

    @Test func initialSequenceNumbersDifferPerFlowAndAdvanceWithTime() {
        let table = plainTable()
        let a = FlowKey(transport: .tcp, appAddress: app4, appPort: 1, destinationAddress: server4, destinationPort: 80)
        let b = FlowKey(transport: .tcp, appAddress: app4, appPort: 2, destinationAddress: server4, destinationPort: 80)
        #expect(table.initialSequence(for: a, now: .zero) != table.initialSequence(for: b, now: .zero))
        #expect(table.initialSequence(for: a, now: .milliseconds(4)) - table.initialSequence(for: a, now: .zero) == 1000)
    }
}
