import Testing
@testable import Stack
import Wire

/// The flow table's timers are kept lazily (an entry per flow that may be
/// early, never late): across many flows doing random things, no timer fires
/// late, every due one fires at the poll that reaches it, and closed flows'
/// entries do not pile up.
extension TCPFlowTableTests {
    struct Peer {
        var key: FlowKey
        var port: UInt16
        var sequence: SequenceNumber
    }

    func establish(_ table: TCPFlowTable, port: UInt16, now: Instant, sink: inout CollectingSink) -> Peer? {
        var syn = fromPeer(remoteISS, .syn)
        syn.header.sourcePort = port
        guard case let .connectionRequest(key) = input(table, datagram(syn, from: app4, to: server4), sink: &sink, now: now),
              table.accept(key, now: now, sink: &sink) != nil else { return nil }
        let iss = tcp(sink.packets.removeLast()).segment.header.sequenceNumber
        var ack = fromPeer(remoteISS + 1, ack: iss + 1, [])
        ack.header.sourcePort = port
        _ = input(table, datagram(ack, from: app4, to: server4), sink: &sink, now: now)
        return Peer(key: key, port: port, sequence: remoteISS + 1)
    }

    /// Never late: the table's next deadline is no later than any flow's own.
    func expectNeverLate(_ table: TCPFlowTable, _ context: String) -> Bool {
        for (key, connection) in table.connections {
            guard let own = connection.nextDeadline else { continue }
            guard let next = table.nextDeadline, next <= own else {
                Issue.record("\(context): \(key) is due at \(own), the table says \(String(describing: table.nextDeadline))")
                return false
            }
        }
        return true
    }

    @Test func timersAcrossManyFlowsFireOnTimeAndNeverLate() {
        var configuration = TCPFlowTable.Configuration()
        configuration.tcp = plainConfiguration()
        configuration.tcp.idleTimeout = .seconds(30)
        configuration.maximumFlows = 1000
        let table = TCPFlowTable(configuration: configuration)
        var sink = CollectingSink()
        var random = SplitMix64(seed: 2026)
        var now = Instant.milliseconds(1)
        var peers: [Peer] = []
        for i in 0 ..< 300 {
            guard let peer = establish(table, port: UInt16(2000 + i), now: now, sink: &sink) else {
                Issue.record("flow \(i) did not open"); return
            }
            peers.append(peer)
        }
        var fired = 0, polls = 0
        for step in 0 ..< 6000 {
            let index = Int(random.next() % UInt64(peers.count))
            let peer = peers[index]
            guard let connection = table.connection(peer.key), connection.state == .established else { continue }
            switch random.next() % 4 {
            case 0: // The app sends a little: a delayed ACK is owed.
                var data = fromPeer(peer.sequence, ack: connection.sendUnacknowledged, [.psh], payload: [1, 2, 3])
                data.header.sourcePort = peer.port
                _ = input(table, datagram(data, from: app4, to: server4), sink: &sink, now: now)
                peers[index].sequence = peer.sequence + 3
                _ = withUnsafeTemporaryAllocation(byteCount: 8, alignment: 1) { connection.read(into: $0) }
            case 1: // We send: the retransmission timer runs.
                _ = [UInt8](repeating: 9, count: 100).withUnsafeBytes { connection.write($0) }
                table.flush(peer.key, now: now, sink: &sink)
            case 2: // The app acknowledges everything: the retransmission timer stops.
                var ack = fromPeer(peer.sequence, ack: connection.sendNext, [])
                ack.header.sourcePort = peer.port
                _ = input(table, datagram(ack, from: app4, to: server4), sink: &sink, now: now)
            default: // Time passes, up to the next deadline or a little past it.
                let next = table.nextDeadline ?? now.advanced(byNanoseconds: 5_000_000)
                now = max(now, random.next() % 2 == 0 ? next : next.advanced(byNanoseconds: Int64(random.next() % 3_000_000)))
                let due = table.connections.filter { $0.value.nextDeadline.map { $0 <= now } ?? false }.count
                _ = table.poll(now: now, sink: &sink)
                polls += 1
                fired += due
                // Every flow that was due has been served: none is still due.
                for (key, connection) in table.connections {
                    if let own = connection.nextDeadline, own <= now {
                        Issue.record("step \(step): \(key) still due at \(own) after a poll at \(now)"); return
                    }
                }
            }
            guard expectNeverLate(table, "step \(step)") else { return }
            #expect(table.timers.count <= 2 * table.connections.count + 64 + 1)
            sink.packets.removeAll(keepingCapacity: true)
        }
        #expect(polls > 500 && fired > 500, "the walk must exercise the timers: \(polls) polls, \(fired) fired")
    }

    /// At a high rate of short flows, the entries of closed flows (whose idle
    /// timer was minutes away) are dropped, not kept until they come due.
    @Test func closedFlowsLeaveNoTimerEntriesBehind() {
        var configuration = TCPFlowTable.Configuration()
        configuration.tcp = plainConfiguration()
        configuration.tcp.idleTimeout = .seconds(600)
        let table = TCPFlowTable(configuration: configuration)
        var sink = CollectingSink()
        for i in 0 ..< 5000 {
            let now = Instant.milliseconds(Int64(i))
            guard let peer = establish(table, port: UInt16(1000 + i % 50_000), now: now, sink: &sink) else {
                Issue.record("flow \(i) did not open"); return
            }
            var reset = fromPeer(peer.sequence, .rst)
            reset.header.sourcePort = peer.port
            _ = input(table, datagram(reset, from: app4, to: server4), sink: &sink, now: now)
            table.flush(peer.key, now: now, sink: &sink)
            sink.packets.removeAll(keepingCapacity: true)
        }
        #expect(table.count == 0)
        #expect(table.timers.count <= 64 + 1, "\(table.timers.count) entries left for no flow")
    }
}
