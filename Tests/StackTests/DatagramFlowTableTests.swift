import Testing
@testable import Stack
import Wire

/// UDP sessions and ICMP echo flows.
@Suite struct DatagramFlowTableTests {
    let app4 = IPv4Address(10, 7, 0, 2), server4 = IPv4Address(198, 18, 0, 9)
    let app6 = IPv6Address("fd00:7::2")!, server6 = IPv6Address("fd00:99::9")!

    func udp4(from port: UInt16 = 5000, to dport: UInt16 = 53, payload: [UInt8]) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: 28 + payload.count)
        b.withUnsafeMutableBytes { out in
            payload.withUnsafeBytes { out.sub(28, payload.count).copyMemory(from: $0) }
            _ = try! UDPHeader(sourcePort: port, destinationPort: dport, payloadLength: payload.count).emit(into: out.sub(20, 8 + payload.count), source: app4, destination: server4)
            _ = try! IPv4Header(source: app4, destination: server4, protocol: .udp, payloadLength: 8 + payload.count).emit(into: out.sub(0, 20))
        }
        return b
    }

    func udp6(payload: [UInt8]) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: 48 + payload.count)
        b.withUnsafeMutableBytes { out in
            payload.withUnsafeBytes { out.sub(48, payload.count).copyMemory(from: $0) }
            _ = try! UDPHeader(sourcePort: 6000, destinationPort: 443, payloadLength: payload.count).emit(into: out.sub(40, 8 + payload.count), source: app6, destination: server6)
            _ = try! IPv6Header(source: app6, destination: server6, nextHeader: .udp, payloadLength: 8 + payload.count).emit(into: out.sub(0, 40))
        }
        return b
    }

    func echo4(id: UInt16, seq: UInt16, payload: [UInt8]) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: 28 + payload.count)
        b.withUnsafeMutableBytes { out in
            payload.withUnsafeBytes { out.sub(28, payload.count).copyMemory(from: $0) }
            _ = try! ICMPv4Message.echoRequest(identifier: id, sequenceNumber: seq).emit(into: out.sub(20, 8 + payload.count), payloadLength: payload.count)
            _ = try! IPv4Header(source: app4, destination: server4, protocol: .icmp, payloadLength: 8 + payload.count).emit(into: out.sub(0, 20))
        }
        return b
    }

    func feed(_ table: DatagramFlowTable, _ bytes: [UInt8], now: Instant = .zero, sink: inout CollectingSink,
              check: (DatagramFlowTable.Input) -> Void) {
        bytes.withUnsafeBytes { raw in check(table.input(try! IPPacketView(raw), now: now, sink: &sink)) }
    }

    @Test func firstDatagramOpensASessionAndTheRestReuseIt() {
        let table = DatagramFlowTable()
        var sink = CollectingSink()
        feed(table, udp4(payload: bytes(12)), sink: &sink) { input in
            guard case let .udp(key, payload, isNew) = input else { Issue.record("\(input)"); return }
            #expect(isNew && Array(payload) == bytes(12))
            #expect(key == FlowKey(transport: .udp, appAddress: .v4(app4), appPort: 5000, destinationAddress: .v4(server4), destinationPort: 53))
        }
        feed(table, udp4(payload: bytes(3)), sink: &sink) { input in
            guard case let .udp(_, _, isNew) = input else { Issue.record("\(input)"); return }
            #expect(!isNew)
        }
        #expect(table.count == 1)
    }

    /// The app's kernel answers a datagram we delivered with ICMP port
    /// unreachable (nothing listens there): the table names the session, both
    /// families; an error about no session of ours is dropped.
    @Test func theAppsPortUnreachableNamesItsSession() {
        for v6 in [false, true] {
            let table = DatagramFlowTable()
            var sink = CollectingSink()
            var key: FlowKey?
            feed(table, v6 ? udp6(payload: bytes(5)) : udp4(payload: bytes(5)), sink: &sink) { if case let .udp(k, _, _) = $0 { key = k } }
            // Our datagram toward the app, and the app kernel's error about it.
            #expect([UInt8](bytes(9)).withUnsafeBytes { table.sendUDP(key!, payload: $0, now: .zero, sink: &sink) })
            let delivered = sink.packets.removeLast()
            var error = CollectingSink()
            delivered.withUnsafeBytes { raw in
                let packet = try! IPPacketView(raw)
                error.send(capacity: 1280) { IPFraming.writeUnreachable(into: $0, replyingTo: packet, reason: .port) }
            }
            feed(table, error.packets[0], sink: &sink) { input in
                guard case let .appPortUnreachable(named) = input else { Issue.record("\(input)"); return }
                #expect(named == key)
            }
            // The same error to a table without the session: about nothing of ours.
            let other = DatagramFlowTable()
            feed(other, error.packets[0], sink: &sink) { input in
                guard case .dropped = input else { Issue.record("\(input)"); return }
            }
        }
    }

    /// A router's ICMP error about Sluice's datagram goes to the app from the
    /// router, with the router's type and code, quoting the session's header
    /// (what the app's kernel matches its socket by); a router of the other
    /// family cannot be named, and the error comes from the destination.
    @Test func upstreamErrorsComeFromTheRouterAndQuoteTheSession() throws {
        let table = DatagramFlowTable()
        var sink = CollectingSink()
        var key: FlowKey?
        feed(table, udp4(payload: bytes(5)), sink: &sink) { if case let .udp(k, _, _) = $0 { key = k } }
        let hostUnreachable = try #require(UpstreamICMPError(isICMPv6: false, type: 3, code: 1))
        let router = IPAddress.v4(IPv4Address(10, 88, 0, 2))
        #expect(table.sendUDPError(key!, hostUnreachable, from: router, now: .zero, sink: &sink))
        #expect(table.sendUDPError(key!, hostUnreachable, from: .v6(server6), now: .zero, sink: &sink))
        for (packet, source) in zip(sink.packets, [router, .v4(server4)]) {
            packet.withUnsafeBytes { raw in
                let ip = try! IPPacketView(raw)
                #expect(ip.source == source && ip.destination == .v4(app4))
                #expect(ip.verifyUpperLayerChecksum() == true)
                let icmp = try! ICMPv4View(ip.payload)
                #expect(icmp.message == .destinationUnreachable(code: .host))
                let quoted = try! IPPacketView(quoted: icmp.payload)
                #expect(quoted.source == .v4(app4) && quoted.destination == .v4(server4))
                let udp = try! UDPView(quoted.payload)
                #expect(udp.sourcePort == 5000 && udp.destinationPort == 53)
            }
        }
        // No session, no error.
        let gone = FlowKey(transport: .udp, appAddress: .v4(app4), appPort: 1, destinationAddress: .v4(server4), destinationPort: 1)
        #expect(!table.sendUDPError(gone, hostUnreachable, now: .zero, sink: &sink))
    }

    /// A ping's error quotes the app's echo request: its identifier and the
    /// sequence number the error was about, which is what ping prints.
    @Test func aPingsErrorQuotesTheAppsRequest() throws {
        let table = DatagramFlowTable()
        var sink = CollectingSink()
        var key: FlowKey?
        feed(table, echo4(id: 77, seq: 3, payload: bytes(56)), sink: &sink) { if case let .echoRequest(k, _, _, _) = $0 { key = k } }
        let prohibited = try #require(UpstreamICMPError(isICMPv6: false, type: 3, code: 13))
        #expect(table.sendEchoError(key!, sequenceNumber: 3, prohibited, from: .v4(IPv4Address(10, 88, 0, 2)), now: .zero, sink: &sink))
        try sink.packets[0].withUnsafeBytes { raw in
            let ip = try IPPacketView(raw)
            #expect(ip.source == .v4(IPv4Address(10, 88, 0, 2)) && ip.destination == .v4(app4))
            let icmp = try ICMPv4View(ip.payload)
            #expect(icmp.verifyChecksum())
            #expect(icmp.message == .destinationUnreachable(code: .administrativelyProhibited))
            let quoted = try IPPacketView(quoted: icmp.payload)
            #expect(quoted.source == .v4(app4) && quoted.destination == .v4(server4))
            let echo = try ICMPv4View(quoted.payload)
            #expect(echo.message == .echoRequest(identifier: 77, sequenceNumber: 3))
        }
    }

    /// Same family: the code as sent. Across families (a fake IP's name
    /// reached over the other one): the nearest code. Errors about Sluice's
    /// own path (fragmentation needed, packet too big) and others pass not.
    @Test func upstreamErrorsKeepTheirCodeOrTakeTheNearest() {
        func both(_ v6: Bool, _ type: UInt8, _ code: UInt8) -> String {
            UpstreamICMPError(isICMPv6: v6, type: type, code: code).map { "\($0)" } ?? "not passed on"
        }
        #expect(both(false, 3, 0) == "net unreachable / destination unreachable, unreachable route")
        #expect(both(false, 3, 1) == "host unreachable / destination unreachable, unreachable address")
        #expect(both(false, 3, 3) == "port unreachable / destination unreachable, unreachable port")
        #expect(both(false, 3, 10) == "host prohibited unreachable / destination unreachable, unreachable prohibited")
        #expect(both(false, 3, 13) == "admin prohibited filter unreachable / destination unreachable, unreachable prohibited")
        #expect(both(false, 11, 0) == "time exceeded in-transit / time exceeded in-transit")
        #expect(both(false, 3, 4) == "not passed on")
        #expect(both(false, 5, 1) == "not passed on")
        #expect(both(true, 1, 0) == "net unreachable / destination unreachable, unreachable route")
        #expect(both(true, 1, 1) == "admin prohibited filter unreachable / destination unreachable, unreachable prohibited")
        #expect(both(true, 1, 3) == "host unreachable / destination unreachable, unreachable address")
        #expect(both(true, 1, 4) == "port unreachable / destination unreachable, unreachable port")
        #expect(both(true, 3, 0) == "time exceeded in-transit / time exceeded in-transit")
        #expect(both(true, 2, 0) == "not passed on")
        #expect(both(true, 4, 1) == "not passed on")
        #expect(UpstreamICMPError(.port) == UpstreamICMPError(isICMPv6: false, type: 3, code: 3))
    }

    /// Every type and code a socket's error queue can name: none traps, and
    /// each one passed on is an error the app's kernel takes (destination
    /// unreachable or time exceeded, in both families), framed whole.
    @Test func everyQueuedErrorIsPassedOnAsAnErrorOrNotAtAll() throws {
        let table = DatagramFlowTable()
        var sink = CollectingSink()
        var key: FlowKey?
        feed(table, udp4(payload: bytes(5)), sink: &sink) { if case let .udp(k, _, _) = $0 { key = k } }
        var passed = 0
        for v6 in [false, true] {
            for type in 0 ... 255 {
                for code in 0 ... 255 {
                    guard let error = UpstreamICMPError(isICMPv6: v6, type: UInt8(type), code: UInt8(code)) else { continue }
                    passed += 1
                    #expect([ICMPv4Message.destinationUnreachableType, ICMPv4Message.timeExceededType].contains(error.v4.type), "\(error)")
                    #expect([ICMPv6Message.destinationUnreachableType, ICMPv6Message.timeExceededType].contains(error.v6.type), "\(error)")
                    #expect(error.v4 != .destinationUnreachable(code: .fragmentationNeeded), "\(error)")
                    #expect(table.sendUDPError(key!, error, now: .zero, sink: &sink), "\(error)")
                }
            }
        }
        // ICMPv4: codes 0-15 but 4, and 2 time exceeded; ICMPv6: codes 0-7, and 2 time exceeded.
        #expect(passed == 15 + 2 + 8 + 2)
        #expect(sink.packets.count == passed)
    }

    @Test func repliesComeFromTheDestinationWithValidChecksums() {
        let table = DatagramFlowTable()
        var sink = CollectingSink()
        var key: FlowKey?
        feed(table, udp6(payload: bytes(5)), sink: &sink) { if case let .udp(k, _, _) = $0 { key = k } }
        let reply = bytes(700)
        #expect(reply.withUnsafeBytes { table.sendUDP(key!, payload: $0, now: .zero, sink: &sink) })
        sink.packets[0].withUnsafeBytes { raw in
            let ip = try! IPPacketView(raw)
            #expect(ip.source == .v6(server6) && ip.destination == .v6(app6))
            #expect(ip.verifyUpperLayerChecksum() == true)
            let udp = try! UDPView(ip.payload)
            #expect(udp.sourcePort == 443 && udp.destinationPort == 6000 && Array(udp.payload) == reply)
        }
    }

    @Test func echoRequestsBecomeEchoFlowsAndRepliesMatch() {
        let table = DatagramFlowTable()
        var sink = CollectingSink()
        var key: FlowKey?
        feed(table, echo4(id: 77, seq: 3, payload: bytes(56)), sink: &sink) { input in
            guard case let .echoRequest(k, seq, payload, isNew) = input else { Issue.record("\(input)"); return }
            #expect(seq == 3 && payload.count == 56 && isNew)
            #expect(k.appPort == 77 && k.transport == .icmp)
            key = k
        }
        #expect(bytes(56).withUnsafeBytes { table.sendEchoReply(key!, sequenceNumber: 3, payload: $0, now: .zero, sink: &sink) })
        sink.packets[0].withUnsafeBytes { raw in
            let ip = try! IPPacketView(raw)
            let icmp = try! ICMPv4View(ip.payload)
            #expect(icmp.verifyChecksum())
            #expect(icmp.message == .echoReply(identifier: 77, sequenceNumber: 3))
            #expect(ip.source == .v4(server4))
        }
    }

    @Test func sessionsExpireWhenIdle() {
        var c = DatagramFlowTable.Configuration()
        c.udpIdleTimeout = .seconds(30)
        c.echoIdleTimeout = .seconds(5)
        let table = DatagramFlowTable(configuration: c)
        var sink = CollectingSink()
        feed(table, udp4(payload: bytes(1)), now: .zero, sink: &sink) { _ in }
        feed(table, echo4(id: 1, seq: 1, payload: []), now: .zero, sink: &sink) { _ in }
        #expect(table.nextDeadline == .zero + .seconds(5))
        #expect(table.expire(now: .milliseconds(4999)).isEmpty)
        #expect(table.expire(now: .milliseconds(5000)).map(\.transport) == [.icmp])
        feed(table, udp4(payload: bytes(1)), now: .milliseconds(20_000), sink: &sink) { _ in }
        #expect(table.expire(now: .milliseconds(49_999)).isEmpty)
        #expect(table.expire(now: .milliseconds(50_000)).count == 1)
        #expect(table.count == 0)
    }

    /// An upstream error on a UDP session becomes ICMP destination unreachable
    /// from the destination, quoting an IP and UDP header of the session (the
    /// app's kernel finds its socket by those addresses and ports).
    @Test func anUpstreamErrorIsAnICMPUnreachableThatQuotesTheSession() {
        let table = DatagramFlowTable()
        var sink = CollectingSink()
        var key4: FlowKey?, key6: FlowKey?
        feed(table, udp4(from: 5353, to: 5999, payload: bytes(20)), sink: &sink) { if case let .udp(k, _, _) = $0 { key4 = k } }
        feed(table, udp6(payload: bytes(20)), sink: &sink) { if case let .udp(k, _, _) = $0 { key6 = k } }
        #expect(table.sendUDPUnreachable(key4!, reason: .port, now: .zero, sink: &sink))
        #expect(table.sendUDPUnreachable(key6!, reason: .network, now: .zero, sink: &sink))
        let unknown = FlowKey(transport: .udp, appAddress: .v4(app4), appPort: 1, destinationAddress: .v4(server4), destinationPort: 2)
        #expect(!table.sendUDPUnreachable(unknown, reason: .port, now: .zero, sink: &sink), "no session, no answer")
        #expect(sink.packets.count == 2, "and nothing else")
        sink.packets[0].withUnsafeBytes { raw in
            let ip = try! IPPacketView(raw)
            #expect(ip.source == .v4(server4) && ip.destination == .v4(app4))
            let icmp = try! ICMPv4View(ip.payload)
            #expect(icmp.type == 3 && icmp.code == 3 && icmp.verifyChecksum())
            let quoted = try! IPPacketView(icmp.payload)
            #expect(quoted.source == .v4(app4) && quoted.destination == .v4(server4) && quoted.upperLayerProtocol == .udp)
            let udp = try! UDPView(quoted.payload)
            #expect(udp.sourcePort == 5353 && udp.destinationPort == 5999)
        }
        sink.packets[1].withUnsafeBytes { raw in
            let ip = try! IPPacketView(raw)
            #expect(ip.source == .v6(server6) && ip.destination == .v6(app6))
            let icmp = try! ICMPv6View(ip.payload)
            #expect(icmp.type == 1 && icmp.code == 0)
            #expect(ip.verifyUpperLayerChecksum() == true)
            let quoted = try! IPPacketView(icmp.payload)
            #expect(quoted.source == .v6(app6) && quoted.destination == .v6(server6))
            let udp = try! UDPView(quoted.payload)
            #expect(udp.sourcePort == 6000 && udp.destinationPort == 443)
        }
    }

    /// A full table makes room: the session closest to expiring (the least
    /// recently active) gives way, and the engine hears of it. Refusing new
    /// sessions let one app's scan cut every app off UDP, Sluice's DNS included.
    @Test func aFullTableEvictsTheSessionClosestToExpiring() {
        var c = DatagramFlowTable.Configuration()
        c.maximumSessions = 2
        c.udpIdleTimeout = .seconds(60)
        let table = DatagramFlowTable(configuration: c)
        var sink = CollectingSink()
        feed(table, udp4(from: 1, payload: bytes(1)), now: .milliseconds(0), sink: &sink) { _ in }
        feed(table, udp4(from: 2, payload: bytes(1)), now: .milliseconds(1000), sink: &sink) { _ in }
        // Port 1 is active again: port 2 is now the least recently active.
        feed(table, udp4(from: 1, payload: bytes(1)), now: .milliseconds(2000), sink: &sink) { _ in }
        #expect(table.takeEvicted().isEmpty)
        feed(table, udp4(from: 3, payload: bytes(1)), now: .milliseconds(3000), sink: &sink) { input in
            guard case let .udp(key, _, isNew) = input else { Issue.record("\(input)"); return }
            #expect(key.appPort == 3 && isNew)
        }
        #expect(table.takeEvicted().map(\.appPort) == [2])
        #expect(table.takeEvicted().isEmpty, "taken once")
        #expect(table.count == 2 && sink.packets.isEmpty, "nothing is sent to the app")
        feed(table, udp4(from: 4, payload: bytes(1)), now: .milliseconds(4000), sink: &sink) { _ in }
        #expect(table.takeEvicted().map(\.appPort) == [1])
        #expect(Set(table.expire(now: .milliseconds(70_000)).map(\.appPort)) == [3, 4])
    }

    /// A session opened from our side (a forwarded port's client): the app's
    /// answer to it is not new, it expires when idle, and it counts against
    /// the limit; opening one twice, or past the limit, is refused.
    @Test func aSessionOpenedFromOurSideTakesTheAppsAnswer() {
        var c = DatagramFlowTable.Configuration()
        c.maximumSessions = 2
        c.udpIdleTimeout = .seconds(30)
        let table = DatagramFlowTable(configuration: c)
        var sink = CollectingSink()
        let key = FlowKey(transport: .udp, appAddress: .v4(app4), appPort: 5000, destinationAddress: .v4(server4), destinationPort: 53)
        #expect(table.open(key, now: .zero))
        #expect(!table.open(key, now: .zero))
        let sent = [UInt8]([1, 2, 3]).withUnsafeBytes { table.sendUDP(key, payload: $0, now: .zero, sink: &sink) }
        #expect(sent && sink.packets.count == 1)
        sink.packets[0].withUnsafeBytes { raw in
            let ip = try! IPPacketView(raw)
            let udp = try! UDPView(ip.payload)
            #expect(ip.source == .v4(server4) && ip.destination == .v4(app4) && udp.sourcePort == 53 && udp.destinationPort == 5000)
        }
        feed(table, udp4(payload: bytes(4)), now: .milliseconds(10_000), sink: &sink) { input in
            guard case let .udp(answered, _, isNew) = input else { Issue.record("\(input)"); return }
            #expect(answered == key && !isNew)
        }
        var other = key
        other.destinationPort = 54
        #expect(table.open(other, now: .milliseconds(10_000)))
        other.destinationPort = 55
        #expect(!table.open(other, now: .milliseconds(10_000)), "past the limit")
        #expect(!table.open(FlowKey(transport: .tcp, appAddress: .v4(app4), appPort: 1, destinationAddress: .v4(server4), destinationPort: 2), now: .zero))
        #expect(table.expire(now: .milliseconds(39_999)).isEmpty)
        #expect(Set(table.expire(now: .milliseconds(40_000)).map(\.destinationPort)) == [53, 54])
        #expect(table.count == 0)
    }

    @Test func badChecksumsAndNonEchoICMPAreDropped() {
        let table = DatagramFlowTable()
        var sink = CollectingSink()
        var bad = udp4(payload: bytes(4))
        bad[29] ^= 1
        feed(table, bad, sink: &sink) { input in
            guard case .dropped(.badChecksum) = input else { Issue.record("\(input)"); return }
        }
        var reply = [UInt8](repeating: 0, count: 28)
        reply.withUnsafeMutableBytes { out in
            _ = try! ICMPv4Message.echoReply(identifier: 1, sequenceNumber: 1).emit(into: out.sub(20, 8), payloadLength: 0)
            _ = try! IPv4Header(source: app4, destination: server4, protocol: .icmp, payloadLength: 8).emit(into: out.sub(0, 20))
        }
        feed(table, reply, sink: &sink) { input in
            guard case .dropped(.notEchoRequest) = input else { Issue.record("\(input)"); return }
        }
        #expect(table.count == 0 && sink.packets.isEmpty)
    }
}
