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
        // A RST for an unknown flow is dropped silently.
        #expect(input(table, datagram(fromPeer(remoteISS, .rst), from: app4, to: server4), sink: &sink) == .dropped(.malformed))
        #expect(sink.packets.count == 1)
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
        #expect(input(table, datagram(fromPeer(remoteISS, .syn), from: app4, to: server4), sink: &sink) == .answered)
        #expect(tcp(sink.packets[0]).segment.header.flags == [.rst, .ack])
        #expect(table.count == 2)
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
