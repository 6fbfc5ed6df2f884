import Glibc
import Testing
@testable import Engine
import Rules
import Stack
import Sys
import Wire

/// The tunnel's side of owner lookups, on the test's own loopback connection:
/// the socket at once, the process from the search thread, and a flow whose
/// search takes too long let go with its uid.
@Suite struct FlowOwnerLookupTests {
    /// A connected loopback pair and the flow key the tunnel would see for it.
    func connection(_ body: (FlowKey) throws -> Void) throws {
        let loopback = SysIPAddress("127.0.0.1")!
        let server = try Socket(.tcp, family: .v4)
        try server.bind(SocketAddress(loopback, port: 0))
        try server.listen()
        let serverPort = try #require(server.localAddress as SocketAddress?).port
        let client = try Socket(.tcp, family: .v4)
        _ = try client.connect(to: SocketAddress(loopback, port: serverPort))
        let clientPort = try #require(client.localAddress as SocketAddress?).port
        try body(FlowKey(transport: .tcp, appAddress: .v4(IPv4Address(127, 0, 0, 1)), appPort: clientPort,
                         destinationAddress: .v4(IPv4Address(127, 0, 0, 1)), destinationPort: serverPort))
    }

    func waitForAnswers(_ lookup: FlowOwnerLookup) -> [(FlowOwnerLookup.Waiter, Rules.FlowOwner)] {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let answers = lookup.finished()
            if !answers.isEmpty { return answers }
            usleep(1000)
        }
        return []
    }

    @Test func theSocketAtOnceAndTheProcessFromTheSearchThread() throws {
        let lookup = try #require(FlowOwnerLookup.open(namespace: nil, log: { Issue.record("\($0)") }))
        try connection { key in
            guard case let .known(owner) = lookup.start(key, needsProcess: false, now: .zero) else {
                Issue.record("a UID-only lookup waited"); return
            }
            #expect(owner?.userID == getuid() && owner?.processName == nil)
            guard case .pending = lookup.start(key, needsProcess: true, now: .zero) else {
                Issue.record("the process was not searched for"); return
            }
            let answers = waitForAnswers(lookup)
            #expect(answers.count == 1)
            #expect(answers.first?.0 == .flow(key))
            #expect(answers.first?.1.processID == getpid())
            #expect(answers.first?.1.userID == getuid())
            #expect(lookup.nextDeadline == nil)
        }
    }

    @Test func aFlowThatWaitsTooLongGoesOnWithItsUid() throws {
        let lookup = try #require(FlowOwnerLookup.open(namespace: nil, log: { Issue.record("\($0)") }))
        try connection { key in
            let start = Instant(nanoseconds: 1_000_000_000)
            guard case .pending = lookup.start(key, needsProcess: true, now: start) else {
                Issue.record("the process was not searched for"); return
            }
            #expect(lookup.nextDeadline == start + FlowOwnerLookup.patience)
            #expect(lookup.expire(now: start + .seconds(1)).isEmpty)
            let expired = lookup.expire(now: start + FlowOwnerLookup.patience)
            #expect(expired.map(\.0) == [.flow(key)])
            #expect(expired.first?.1 == Rules.FlowOwner(userID: getuid()))
            #expect(lookup.nextDeadline == nil)
            // The late answer is dropped: the flow went on already.
            usleep(200_000)
            #expect(lookup.finished().isEmpty)
            #expect(lookup.unknown == 1 && lookup.lookups == 1)
        }
    }
}
