import Testing
@testable import Stack
import Wire

/// Idle timers kept lazily: sessions expire exactly when a model says they
/// should, the table's next deadline is never later than a session's own, and
/// removed sessions leave no entries behind.
extension DatagramFlowTableTests {
    @Test func idleTimersMatchAModelAcrossManySessions() {
        var c = DatagramFlowTable.Configuration()
        c.udpIdleTimeout = .seconds(30)
        c.maximumSessions = 2000
        let table = DatagramFlowTable(configuration: c)
        var sink = CollectingSink()
        var random = SplitMix64(seed: 53)
        var lastActivity: [UInt16: Int64] = [:] // port → ms
        var now: Int64 = 0
        for step in 0 ..< 20_000 {
            if random.next() % 8 == 0 {
                // Time passes; expire and compare with the model.
                now += Int64(random.next() % 4000)
                let expired = Set(table.expire(now: .milliseconds(now)).map(\.appPort))
                let model = Set(lastActivity.filter { $0.value + 30_000 <= now }.keys)
                #expect(expired == model, "step \(step) at \(now) ms")
                for port in model { lastActivity[port] = nil }
            } else {
                let port = UInt16(6000 + random.next() % 1500)
                feed(table, udp4(from: port, payload: [1]), now: .milliseconds(now), sink: &sink) { _ in }
                lastActivity[port] = now
            }
            if let earliest = lastActivity.values.min() {
                guard let next = table.nextDeadline, next <= .milliseconds(earliest + 30_000) else {
                    Issue.record("step \(step): a session is due at \(earliest + 30_000) ms, the table says \(String(describing: table.nextDeadline))")
                    return
                }
            }
            #expect(table.count == lastActivity.count)
        }
    }

    @Test func removedSessionsLeaveNoTimerEntriesBehind() {
        let table = DatagramFlowTable()
        var sink = CollectingSink()
        for i in 0 ..< 10_000 {
            var key: FlowKey?
            feed(table, udp4(from: UInt16(1024 + i % 60_000), payload: [1]), now: .milliseconds(Int64(i)), sink: &sink) { input in
                if case let .udp(k, _, _) = input { key = k }
            }
            guard let key else { Issue.record("no session for datagram \(i)"); return }
            table.remove(key)
        }
        #expect(table.count == 0)
        #expect(table.timers.count <= 64 + 1, "\(table.timers.count) entries left for no session")
    }
}
