import Testing
@testable import Stack
import Wire

/// An echo reply names the destination and the identifier, not the app: the
/// table finds its flow through an index instead of scanning every session.
extension DatagramFlowTableTests {
    func echo4(from app: IPv4Address, to destination: IPv4Address, id: UInt16) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: 28)
        b.withUnsafeMutableBytes { out in
            _ = try! ICMPv4Message.echoRequest(identifier: id, sequenceNumber: 1).emit(into: out.sub(20, 8), payloadLength: 0)
            _ = try! IPv4Header(source: app, destination: destination, protocol: .icmp, payloadLength: 8).emit(into: out.sub(0, 20))
        }
        return b
    }

    /// A seeded walk of new flows, removals and expiries, with two apps that
    /// share destinations and identifiers: after every step, each reply finds
    /// a live flow it belongs to, and none when no flow matches (the model is
    /// the old linear scan).
    @Test(arguments: [1, 2, 3] as [UInt64])
    func echoRepliesFindTheirFlowAsAScanWould(seed: UInt64) {
        var c = DatagramFlowTable.Configuration()
        c.echoIdleTimeout = .seconds(10)
        let table = DatagramFlowTable(configuration: c)
        var sink = CollectingSink()
        var random = SplitMix64(seed: seed)
        let apps = [IPv4Address(10, 7, 0, 2), IPv4Address(10, 7, 0, 3)]
        let destinations = [IPv4Address(198, 18, 0, 1), IPv4Address(198, 18, 0, 2), IPv4Address(198, 18, 0, 3)]
        var live: [FlowKey: Int64] = [:] // flow → last activity, ms
        var now: Int64 = 0
        for step in 0 ..< 3000 {
            switch random.next() % 6 {
            case 0:
                if let key = live.keys.sorted(by: { "\($0)" < "\($1)" }).first(where: { _ in random.next() % 3 == 0 }) {
                    table.remove(key)
                    live[key] = nil
                }
            case 1:
                now += Int64(random.next() % 3000)
                for key in table.expire(now: .milliseconds(now)) { live[key] = nil }
                #expect(live.allSatisfy { $0.value + 10_000 > now }, "step \(step)")
            default:
                let app = apps[Int(random.next() % 2)], destination = destinations[Int(random.next() % 3)]
                let id = UInt16(random.next() % 3)
                feed(table, echo4(from: app, to: destination, id: id), now: .milliseconds(now), sink: &sink) { input in
                    guard case let .echoRequest(key, _, _, _) = input else { Issue.record("\(input)"); return }
                    live[key] = now
                }
            }
            for destination in destinations {
                for id in 0 ..< 3 as Range<UInt16> {
                    let found = table.echoFlow(destination: .v4(destination), identifier: id, transport: .icmp)
                    let matching = live.keys.filter { $0.destinationAddress == .v4(destination) && $0.appPort == id }
                    if let found {
                        #expect(matching.contains(found), "step \(step): \(found) is not a live flow to \(destination) id \(id)")
                    } else {
                        #expect(matching.isEmpty, "step \(step): no flow found to \(destination) id \(id), but \(matching) match")
                    }
                }
            }
        }
        #expect(table.echoFlows.count <= table.count)
    }

    @Test func aRemovedEchoFlowIsNotFound() {
        let table = DatagramFlowTable()
        var sink = CollectingSink()
        var key: FlowKey?
        feed(table, echo4(id: 9, seq: 1, payload: []), sink: &sink) { if case let .echoRequest(k, _, _, _) = $0 { key = k } }
        #expect(table.echoFlow(destination: .v4(server4), identifier: 9, transport: .icmp) == key)
        #expect(table.echoFlow(destination: .v4(server4), identifier: 9, transport: .icmpv6) == nil)
        table.remove(key!)
        #expect(table.echoFlow(destination: .v4(server4), identifier: 9, transport: .icmp) == nil)
        #expect(table.echoFlows.isEmpty)
    }
}
