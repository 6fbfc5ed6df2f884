import Testing
import Wire

private typealias T = IPTestSupport

private let fixtures = ["ipv4-icmp-udp.pcap", "ipv6-icmp-udp.pcap", "fragments.pcap", "tcp-http.pcap", "dns.pcap",
                        "unreachable.pcap"]

/// Real traffic captured by tools/capture-fixtures: tcpdump on a veth with offloads off, so
/// every checksum in it was computed by the kernel and must agree with ours.
@Suite struct IPFixtureTests {
    @Test(arguments: fixtures)
    func everyPacketParsesAndEveryChecksumVerifies(_ name: String) throws {
        let packets = try T.fixture(name)
        #expect(!packets.isEmpty)
        for (i, bytes) in packets.enumerated() {
            try bytes.withUnsafeBytes { raw in
                let packet = try IPPacketView(raw)
                #expect(packet.bytes.count == bytes.count, "\(name) #\(i): \(packet)")
                if case let .v4(ip) = packet.network {
                    #expect(ip.verifyChecksum(), "\(name) #\(i): \(packet)")
                }
                // Whole datagrams verify; only fragments cannot be checked alone.
                switch packet.verifyUpperLayerChecksum() {
                case .some(let ok): #expect(ok, "\(name) #\(i): \(packet)")
                case .none: #expect(packet.isFragment, "\(name) #\(i): no checksum checked for \(packet)")
                }
            }
        }
    }

    @Test(arguments: fixtures)
    func reEmittingEveryHeaderGivesTheKernelsBytes(_ name: String) throws {
        for (i, bytes) in try T.fixture(name).enumerated() {
            try bytes.withUnsafeBytes { raw in
                let packet = try IPPacketView(raw)
                let headerLength: Int
                let emitted: [UInt8]
                switch packet.network {
                case let .v4(ip):
                    headerLength = ip.headerLength
                    emitted = try T.poisoned(headerLength) { buffer in
                        _ = try IPv4Header(ip).emit(into: buffer, options: ip.options)
                    }
                case let .v6(ip):
                    headerLength = IPv6View.headerLength
                    emitted = try T.poisoned(headerLength) { buffer in _ = try IPv6Header(ip).emit(into: buffer) }
                }
                #expect(emitted == Array(bytes[0 ..< headerLength]), "\(name) #\(i): \(packet)")

                if packet.isFragment { return }
                let upper = Array(packet.payload)
                let offset = bytes.count - upper.count
                let rebuilt: [UInt8]? = try T.poisoned(upper.count) { buffer in
                    for j in 8 ..< upper.count { buffer[j] = upper[j] }
                    switch (packet.network, packet.upperLayerProtocol) {
                    case let (.v4(ip), .udp):
                        _ = try UDPHeader(try UDPView(packet.payload)).emit(into: buffer, source: ip.source,
                                                                           destination: ip.destination)
                    case let (.v6(ip), .udp):
                        _ = try UDPHeader(try UDPView(packet.payload)).emit(into: buffer, source: ip.source,
                                                                           destination: ip.destination)
                    case (.v4, .icmp):
                        _ = try ICMPv4Message(try ICMPv4View(packet.payload)).emit(into: buffer,
                                                                                   payloadLength: upper.count - 8)
                    case let (.v6(ip), .icmpv6):
                        _ = try ICMPv6Message(try ICMPv6View(packet.payload)).emit(
                            into: buffer, payloadLength: upper.count - 8, source: ip.source, destination: ip.destination)
                    default:
                        // TCP is another parser's business; copy it so the comparison below is trivially true.
                        for j in 0 ..< 8 { buffer[j] = upper[j] }
                    }
                }
                #expect(rebuilt == upper, "\(name) #\(i) at \(offset): \(packet)")
            }
        }
    }

    /// The lines tcpdump -nn printed for these packets (where it does not decode an application protocol).
    @Test func describesPacketsAsTcpdumpDid() throws {
        let expected: [(String, Int, String)] = [
            ("ipv4-icmp-udp.pcap", 0, "IP 10.99.0.1 > 10.99.1.2: ICMP echo request, id 5146, seq 1, length 64"),
            ("ipv4-icmp-udp.pcap", 1, "IP 10.99.1.2 > 10.99.0.1: ICMP echo reply, id 5146, seq 1, length 64"),
            ("ipv4-icmp-udp.pcap", 5, "IP 10.99.1.2 > 10.99.0.1: ICMP 10.99.1.2 udp port 5353 unreachable, length 60"),
            ("ipv6-icmp-udp.pcap", 0, "IP6 fd00:99::1 > fd00:99:1::2: ICMP6, echo request, id 5158, seq 1, length 64"),
            ("ipv6-icmp-udp.pcap", 3, "IP6 fd00:99:1::2 > fd00:99::1: ICMP6, echo reply, id 5158, seq 2, length 64"),
            ("ipv6-icmp-udp.pcap", 5,
             "IP6 fd00:99:1::2 > fd00:99::1: ICMP6, destination unreachable, unreachable port, fd00:99:1::2 udp port 5353, length 80"),
            ("fragments.pcap", 7, "IP6 fd00:99::2 > fd00:99::1: ICMP6, packet too big, mtu 1280, length 1240"),
            ("unreachable.pcap", 0, "IP 10.99.0.1 > 10.99.1.2: ICMP echo request, id 5194, seq 1, length 1408"),
            ("unreachable.pcap", 1,
             "IP 10.99.0.2 > 10.99.0.1: ICMP 10.99.1.2 unreachable - need to frag (mtu 1280), length 556"),
            ("unreachable.pcap", 2, "IP6 fe80::f076:4fff:fe67:da7a > ff02::2: ICMP6, router solicitation, length 16"),
            ("unreachable.pcap", 5, "IP 10.99.1.2 > 10.99.0.1: ICMP 10.99.1.2 udp port 9 unreachable, length 38"),
        ]
        for (name, index, line) in expected {
            #expect(try T.line(T.fixture(name)[index]) == line)
        }
        // DNS on port 53 is decoded, as tcpdump does.
        #expect(try T.line(T.fixture("dns.pcap")[0]) == "IP 10.99.0.1.43371 > 10.99.1.2.53: 61632+ [1au] A? api.sluice.test. (56)")
        #expect(try T.line(T.fixture("dns.pcap")[1]) == "IP 10.99.1.2.53 > 10.99.0.1.43371: 61632* 1/0/1 A 10.99.1.81 (60)")
    }

    /// tcpdump -S -nn's lines for the whole HTTP exchange over both families (the IP line delegates to TCPView).
    @Test func describesTCPAsTcpdumpDid() throws {
        let expected = [
            "IP 10.99.0.1.52992 > 10.99.1.2.8080: Flags [S], seq 1418113096, win 64480, options [mss 1240,sackOK,TS val 2349174887 ecr 0,nop,wscale 10], length 0",
            "IP 10.99.1.2.8080 > 10.99.0.1.52992: Flags [S.], seq 2990937981, ack 1418113097, win 65084, options [mss 1240,sackOK,TS val 1861569255 ecr 2349174887,nop,wscale 10], length 0",
            "IP 10.99.0.1.52992 > 10.99.1.2.8080: Flags [.], ack 2990937982, win 63, options [nop,nop,TS val 2349174887 ecr 1861569255], length 0",
            "IP 10.99.0.1.52992 > 10.99.1.2.8080: Flags [P.], seq 1418113097:1418113175, ack 2990937982, win 63, options [nop,nop,TS val 2349174887 ecr 1861569255], length 78",
            "IP 10.99.1.2.8080 > 10.99.0.1.52992: Flags [.], ack 1418113175, win 64, options [nop,nop,TS val 1861569255 ecr 2349174887], length 0",
            "IP 10.99.1.2.8080 > 10.99.0.1.52992: Flags [P.], seq 2990937982:2990938160, ack 1418113175, win 64, options [nop,nop,TS val 1861569255 ecr 2349174887], length 178",
            "IP 10.99.0.1.52992 > 10.99.1.2.8080: Flags [.], ack 2990938160, win 63, options [nop,nop,TS val 2349174887 ecr 1861569255], length 0",
            "IP 10.99.0.1.52992 > 10.99.1.2.8080: Flags [F.], seq 1418113175, ack 2990938160, win 63, options [nop,nop,TS val 2349174888 ecr 1861569255], length 0",
            "IP 10.99.1.2.8080 > 10.99.0.1.52992: Flags [F.], seq 2990938160, ack 1418113176, win 64, options [nop,nop,TS val 1861569257 ecr 2349174888], length 0",
            "IP 10.99.0.1.52992 > 10.99.1.2.8080: Flags [.], ack 2990938161, win 63, options [nop,nop,TS val 2349174889 ecr 1861569257], length 0",
            "IP6 fd00:99::1.48446 > fd00:99:1::2.8080: Flags [S], seq 2390896994, win 64660, options [mss 1220,sackOK,TS val 2156318725 ecr 0,nop,wscale 10], length 0",
            "IP6 fd00:99:1::2.8080 > fd00:99::1.48446: Flags [S.], seq 2339670490, ack 2390896995, win 65232, options [mss 1220,sackOK,TS val 1465039012 ecr 2156318725,nop,wscale 10], length 0",
            "IP6 fd00:99::1.48446 > fd00:99:1::2.8080: Flags [.], ack 2339670491, win 64, options [nop,nop,TS val 2156318725 ecr 1465039012], length 0",
            "IP6 fd00:99::1.48446 > fd00:99:1::2.8080: Flags [P.], seq 2390896995:2390897078, ack 2339670491, win 64, options [nop,nop,TS val 2156318725 ecr 1465039012], length 83",
            "IP6 fd00:99:1::2.8080 > fd00:99::1.48446: Flags [.], ack 2390897078, win 64, options [nop,nop,TS val 1465039012 ecr 2156318725], length 0",
            "IP6 fd00:99:1::2.8080 > fd00:99::1.48446: Flags [P.], seq 2339670491:2339670669, ack 2390897078, win 64, options [nop,nop,TS val 1465039012 ecr 2156318725], length 178",
            "IP6 fd00:99::1.48446 > fd00:99:1::2.8080: Flags [.], ack 2339670669, win 64, options [nop,nop,TS val 2156318725 ecr 1465039012], length 0",
            "IP6 fd00:99::1.48446 > fd00:99:1::2.8080: Flags [F.], seq 2390897078, ack 2339670669, win 64, options [nop,nop,TS val 2156318725 ecr 1465039012], length 0",
            "IP6 fd00:99:1::2.8080 > fd00:99::1.48446: Flags [F.], seq 2339670669, ack 2390897079, win 64, options [nop,nop,TS val 1465039012 ecr 2156318725], length 0",
            "IP6 fd00:99::1.48446 > fd00:99:1::2.8080: Flags [.], ack 2339670670, win 64, options [nop,nop,TS val 2156318725 ecr 1465039012], length 0",
        ]
        let packets = try T.fixture("tcp-http.pcap")
        #expect(packets.count == expected.count)
        for (bytes, line) in zip(packets, expected) {
            #expect(try T.line(bytes) == line)
        }
    }

    /// The fragment fields are right if putting the pieces where they say gives messages whose checksums verify.
    @Test func fragmentsReassembleIntoMessagesThatVerify() throws {
        struct Piece { var offset: Int; var more: Bool; var data: [UInt8] }
        struct Datagram { var network: String; var pseudo: InternetChecksum?; var pieces: [Piece] = [] }
        var datagrams: [String: Datagram] = [:]
        var order: [String] = []
        for bytes in try T.fixture("fragments.pcap") {
            try bytes.withUnsafeBytes { raw in
                let packet = try IPPacketView(raw)
                guard let fragment = packet.fragment else { return }
                let key = "\(packet.source) \(packet.destination) \(fragment.identification)"
                if datagrams[key] == nil {
                    order.append(key)
                    if case .v6 = packet.network { datagrams[key] = Datagram(network: "6", pseudo: nil) } else {
                        datagrams[key] = Datagram(network: "4", pseudo: nil)
                    }
                }
                datagrams[key]!.pieces.append(Piece(offset: fragment.byteOffset, more: fragment.moreFragments,
                                                    data: Array(packet.payload)))
                if fragment.byteOffset == 0, case let .v6(ip) = packet.network {
                    // The pseudo-header needs the reassembled length; remember the addresses by a zero-length sum.
                    datagrams[key]!.pseudo = ip.pseudoHeader(protocol: ip.upperLayerProtocol, length: 0)
                }
            }
        }
        // Two IPv4 pings (request and reply) and three IPv6 datagrams (a request at 1500, a request and reply at 1280).
        #expect(order.count == 5)
        var identifiers: [UInt16] = []
        for key in order {
            let datagram = datagrams[key]!
            let pieces = datagram.pieces.sorted { $0.offset < $1.offset }
            var whole: [UInt8] = []
            for (i, piece) in pieces.enumerated() {
                #expect(piece.offset == whole.count, "\(key): a gap or overlap at \(piece.offset)")
                #expect(piece.more == (i < pieces.count - 1), "\(key): more-fragments flag")
                if i < pieces.count - 1 { #expect(piece.data.count % 8 == 0, "\(key): a middle fragment not a multiple of 8") }
                whole += piece.data
            }
            try whole.withUnsafeBytes { raw in
                if datagram.network == "4" {
                    let icmp = try ICMPv4View(raw)
                    #expect(icmp.verifyChecksum(), "\(key)")
                    identifiers.append(icmp.identifier)
                } else {
                    // RFC 8200 §8.1: the pseudo-header length is the upper-layer length after reassembly.
                    var sum = try #require(datagram.pseudo)
                    sum.add(UInt32(whole.count))
                    sum.add(raw)
                    #expect(sum.folded == 0xffff, "\(key)")
                    identifiers.append(try ICMPv6View(raw).identifier)
                }
            }
        }
        #expect(Set(identifiers) == [5169, 5170, 5171])
    }

    @Test func aPacketTooBigQuotesTheFragmentItRefused() throws {
        let packets = try T.fixture("fragments.pcap")
        let refused = try packets[6].withUnsafeBytes { raw throws(WireError) in try IPPacketView(raw).fragment }
        try packets[7].withUnsafeBytes { raw in
            let packet = try IPPacketView(raw)
            let icmp = try ICMPv6View(packet.payload)
            #expect(icmp.message == .packetTooBig(mtu: 1280))
            let quoted = try IPPacketView(quoted: icmp.payload)
            #expect(quoted.fragment != nil)
            #expect(quoted.fragment == refused)
            #expect(quoted.upperLayerProtocol == .icmpv6)
        }
    }
}
