import Testing
@testable import Engine
import Rules
import Stack
import TestSupport
import Wire

/// Replay's UDP sessions and ping flows (ReplayDatagrams) and their
/// decisions (FlowDirector.judge), fed IP datagrams as a capture holds them.
@Suite struct ReplayDatagramsTests {
    static let app = IPv4Address(10, 233, 0, 1), server = IPv4Address(10, 88, 0, 2), fake = IPv4Address(198, 18, 0, 7)
    static let second: UInt64 = 1_000_000_000

    static func udp(from source: IPv4Address, _ sourcePort: UInt16, to destination: IPv4Address, _ destinationPort: UInt16,
                    payload: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0x61, count: 28 + payload)
        bytes.withUnsafeMutableBytes { out in
            _ = try! UDPHeader(sourcePort: sourcePort, destinationPort: destinationPort, payloadLength: payload)
                .emit(into: UnsafeMutableRawBufferPointer(rebasing: out[20...]), source: source, destination: destination)
            _ = try! IPv4Header(source: source, destination: destination, protocol: .udp, payloadLength: 8 + payload)
                .emit(into: UnsafeMutableRawBufferPointer(rebasing: out[0 ..< 20]))
        }
        return bytes
    }

    /// A UDP datagram carrying `payload` itself (QUIC's Initials).
    static func udp(from source: IPv4Address, _ sourcePort: UInt16, to destination: IPv4Address, _ destinationPort: UInt16,
                    bytes payload: [UInt8]) -> [UInt8] {
        var bytes = udp(from: source, sourcePort, to: destination, destinationPort, payload: payload.count)
        bytes.replaceSubrange(28..., with: payload)
        // The checksum covered 0x61 bytes: none, as a sender may leave it (RFC 768).
        bytes[26] = 0
        bytes[27] = 0
        return bytes
    }

    static func echo(from source: IPv4Address, to destination: IPv4Address, reply: Bool, id: UInt16, payload: Int = 56) -> [UInt8] {
        var bytes = [UInt8](repeating: 0x62, count: 28 + payload)
        bytes.withUnsafeMutableBytes { out in
            let message: ICMPv4Message = reply ? .echoReply(identifier: id, sequenceNumber: 1) : .echoRequest(identifier: id, sequenceNumber: 1)
            _ = try! message.emit(into: UnsafeMutableRawBufferPointer(rebasing: out[20...]), payloadLength: payload)
            _ = try! IPv4Header(source: source, destination: destination, protocol: .icmp, payloadLength: 8 + payload)
                .emit(into: UnsafeMutableRawBufferPointer(rebasing: out[0 ..< 20]))
        }
        return bytes
    }

    static func feed(_ datagrams: inout ReplayDatagrams, _ packet: [UInt8], at time: UInt64, names: ReplayNames) {
        packet.withUnsafeBytes { datagrams.receive(try! IPPacketView($0), at: time, names: names) }
    }

    @Test func aSessionIsItsFirstSendersWithTheAnswersCountedDown() {
        var datagrams = ReplayDatagrams()
        let names = ReplayNames(fakeRange: GeneralSettings.defaultFakeIPRange)
        Self.feed(&datagrams, Self.udp(from: Self.app, 5000, to: Self.server, 9999, payload: 10), at: 1, names: names)
        Self.feed(&datagrams, Self.udp(from: Self.server, 9999, to: Self.app, 5000, payload: 30), at: 2, names: names)
        Self.feed(&datagrams, Self.udp(from: Self.app, 5000, to: Self.server, 9999, payload: 5), at: 3, names: names)
        datagrams.finish(at: 5)
        #expect(datagrams.finished.count == 1)
        let flow = datagrams.finished[0]
        #expect(flow.key == FlowKey(transport: .udp, appAddress: .v4(Self.app), appPort: 5000, destinationAddress: .v4(Self.server), destinationPort: 9999))
        #expect(flow.bytesUp == 15 && flow.bytesDown == 30)
        #expect(flow.started == 1 && flow.ended == 3 && flow.endReason == .endOfCapture)
    }

    /// As the live table: after 60 s of silence the pair's next datagram is a new session.
    @Test func silenceEndsASessionAsLive() {
        var datagrams = ReplayDatagrams()
        let names = ReplayNames(fakeRange: GeneralSettings.defaultFakeIPRange)
        let packet = Self.udp(from: Self.app, 5000, to: Self.server, 9999, payload: 10)
        Self.feed(&datagrams, packet, at: 1, names: names)
        Self.feed(&datagrams, packet, at: 1 + 59 * Self.second, names: names)
        Self.feed(&datagrams, packet, at: 1 + 119 * Self.second, names: names)
        datagrams.finish(at: 1 + 200 * Self.second)
        #expect(datagrams.finished.map(\.endReason) == [.idle, .idle])
        #expect(datagrams.finished.map(\.bytesUp) == [20, 10])
    }

    @Test func pingsPairRequestsWithReplies() {
        var datagrams = ReplayDatagrams()
        let names = ReplayNames(fakeRange: GeneralSettings.defaultFakeIPRange)
        Self.feed(&datagrams, Self.echo(from: Self.app, to: Self.server, reply: false, id: 7), at: 1, names: names)
        Self.feed(&datagrams, Self.echo(from: Self.server, to: Self.app, reply: true, id: 7), at: 2, names: names)
        // A reply whose request the capture missed starts nothing: its sender is no app.
        Self.feed(&datagrams, Self.echo(from: Self.server, to: Self.app, reply: true, id: 8), at: 3, names: names)
        datagrams.finish(at: 4)
        #expect(datagrams.finished.count == 1)
        #expect(datagrams.finished.first?.key == FlowKey(transport: .icmp, appAddress: .v4(Self.app), appPort: 7,
                                                         destinationAddress: .v4(Self.server), destinationPort: 0))
        #expect(datagrams.finished.first.map { ($0.bytesUp, $0.bytesDown) } ?? (0, 0) == (56, 56))
    }

    /// A QUIC flow sent to an address: as live, its name comes from the
    /// ClientHello in its first datagrams (here across two) when a rule needs
    /// it, and a reply in between changes nothing.
    @Test func quicFlowsAreNamedByTheirInitialPackets() throws {
        let director = try ReplayFlowTests.director("""
        [Rule]
        DOMAIN,h3.test,REJECT
        FINAL,DIRECT
        """)
        let halves = QUICInitialBuilder.helloInTwoDatagrams(serverName: "h3.test")
        let (first, second) = (halves[0], halves[1])
        var datagrams = ReplayDatagrams()
        let names = ReplayNames(fakeRange: GeneralSettings.defaultFakeIPRange)
        Self.feed(&datagrams, Self.udp(from: Self.app, 5000, to: Self.server, 443, bytes: first), at: 1, names: names)
        Self.feed(&datagrams, Self.udp(from: Self.server, 443, to: Self.app, 5000, payload: 100), at: 2, names: names)
        Self.feed(&datagrams, Self.udp(from: Self.app, 5000, to: Self.server, 443, bytes: second), at: 3, names: names)
        // Not QUIC: a datagram of 0x61 bytes to the same port from another socket.
        Self.feed(&datagrams, Self.udp(from: Self.app, 5001, to: Self.server, 443, payload: 1200), at: 4, names: names)
        datagrams.finish(at: 5)
        let flows = datagrams.finished.sorted { $0.key.appPort < $1.key.appPort }
        #expect(flows.count == 2)
        guard flows.count == 2 else { return }
        let quic = director.judge(flows[0])
        #expect(quic.domain == "h3.test" && quic.domainSource == "sni" && quic.applicationProtocol == "QUIC", "\(quic)")
        #expect(quic.policy == "REJECT" && quic.action == .drop)
        let other = director.judge(flows[1])
        #expect(other.domain == nil && other.applicationProtocol == "UDP" && other.policy == "DIRECT", "\(other)")
    }

    /// SRC-IP sees a capture's sender, as live: a gateway's capture holds
    /// several devices, told apart by the rule.
    @Test func sourceIPRulesSeeTheCapturesSender() throws {
        let director = try ReplayFlowTests.director("""
        [Rule]
        SRC-IP,\(Self.app),REJECT
        FINAL,DIRECT
        """)
        func flow(from source: IPv4Address) -> ReplayFlow {
            ReplayFlow(id: 1, key: FlowKey(transport: .udp, appAddress: .v4(source), appPort: 40000,
                                           destinationAddress: .v4(Self.server), destinationPort: 9000),
                       started: 1, sawHandshake: true)
        }
        #expect(director.judge(flow(from: Self.app)).policy == "REJECT")
        #expect(director.judge(flow(from: IPv4Address(192, 0, 2, 77))).policy == "DIRECT")
    }

    /// Decided as Tunnel.udpRoute decides: on what is known at the first
    /// datagram (here the fake IP's name), through a proxy only with
    /// udp-relay, a rejection dropping the datagrams; Sluice's own DNS
    /// answers its queries; pings meet only the rules' rejections.
    @Test func datagramFlowsAreDecidedAsLive() throws {
        let director = try ReplayFlowTests.director("""
        [Proxy]
        relay = socks5, 10.9.0.1, 1080, udp-relay=true
        plain = socks5, 10.9.0.2, 1080
        [Rule]
        DOMAIN,voice.test,relay
        DEST-PORT,9000,plain
        DEST-PORT,5000,REJECT
        FINAL,DIRECT
        """)
        func flow(to destination: IPv4Address, port: UInt16, name: String? = nil, isFake: Bool = false) -> ReplayFlow {
            let flow = ReplayFlow(id: 1, key: FlowKey(transport: .udp, appAddress: .v4(Self.app), appPort: 40000,
                                                      destinationAddress: .v4(destination), destinationPort: port),
                                  started: 1, sawHandshake: true)
            flow.dnsName = name
            flow.dnsNameIsFake = isFake
            return flow
        }
        let voice = director.judge(flow(to: Self.fake, port: 3478, name: "voice.test", isFake: true))
        #expect(voice.policy == "relay" && voice.action == .forward && voice.domain == "voice.test" && voice.domainSource == "dns")
        #expect(voice.route?.identity == .proxy("relay"))
        #expect(voice.applicationProtocol == "UDP")
        let plain = director.judge(flow(to: Self.server, port: 9000))
        #expect(plain.route?.identity == .direct && plain.action == .forward, "no udp-relay: DIRECT, as live")
        let rejected = director.judge(flow(to: Self.server, port: 5000))
        #expect(rejected.action == .drop && rejected.policy == "REJECT")
        let dns = director.judge(flow(to: IPv4Address(10, 233, 0, 53), port: 53))
        #expect(dns.action == .answered && dns.applicationProtocol == "DNS")
        let otherDNS = director.judge(flow(to: Self.server, port: 53))
        #expect(otherDNS.action == .forward && otherDNS.applicationProtocol == "DNS" && otherDNS.rule.contains("FINAL"))
        let ping = director.judge(ReplayFlow(id: 1, key: FlowKey(transport: .icmp, appAddress: .v4(Self.app), appPort: 7,
                                                                 destinationAddress: .v4(Self.server), destinationPort: 0),
                                             started: 1, sawHandshake: true))
        #expect(ping.action == .forward && ping.applicationProtocol == "ICMP" && ping.rule.contains("FINAL"))
        // A ping to the rejected port's server is still sent (the port rule cannot match it); one a
        // DOMAIN rule to a proxy names goes DIRECT (no proxy carries ICMP).
        let namedPing = ReplayFlow(id: 1, key: FlowKey(transport: .icmp, appAddress: .v4(Self.app), appPort: 8,
                                                       destinationAddress: .v4(Self.fake), destinationPort: 0),
                                   started: 1, sawHandshake: true)
        namedPing.dnsName = "voice.test"
        namedPing.dnsNameIsFake = true
        let proxied = director.judge(namedPing)
        #expect(proxied.action == .forward && proxied.route?.identity == .direct && proxied.rule.contains("DOMAIN,voice.test"), "\(proxied)")
        let sandbox = try ReplayFlowTests.director("[Rule]\nFINAL,REJECT\n")
        let kept = sandbox.judge(ReplayFlow(id: 1, key: FlowKey(transport: .icmp, appAddress: .v4(Self.app), appPort: 7,
                                                               destinationAddress: .v4(Self.server), destinationPort: 0),
                                            started: 1, sawHandshake: true))
        #expect(kept.action == .drop && kept.policy == "REJECT", "\(kept)")
        // The table and the flow log: the DNS query Sluice answers has no flow-log line, as live.
        let report = ReplayReport(flows: [(flow(to: Self.server, port: 5000), rejected), (flow(to: IPv4Address(10, 233, 0, 53), port: 53), dns)])
        let lines = report.flowLog()
        #expect(lines.count == 1 && lines[0].contains(#""transport":"udp""#) && lines[0].contains(#""status":"blocked""#), "\(lines)")
        let table = report.table()
        #expect(table.count == 3 && table[1].hasSuffix("drop") && table[2].hasSuffix("answered by Sluice's DNS"), "\(table)")
    }
}
