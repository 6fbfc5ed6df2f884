import Testing
@testable import Stack
import Wire
import TestSupport

/// The fragmenter's output is what RFC 791 and RFC 8200 ask for, and the
/// reassembler turns it back into the very bytes it came from.
@Suite struct IPFragmenterTests {
    func fragment(_ whole: [UInt8], mtu: Int, identification: UInt32 = 0xabcd) throws
        -> (IPFragmenter.Outcome, [[UInt8]])
    {
        var sink = PoisonedSink()
        let outcome = try withPacket(whole) { IPFragmenter.fragment($0, mtu: mtu, identification: identification, sink: &sink) }
        return (outcome, sink.packets)
    }

    /// Checks every fragment on its own: fits, parses, data a multiple of 8 but the last.
    func checkFragments(_ fragments: [[UInt8]], mtu: Int, trace: String) throws {
        for (i, bytes) in fragments.enumerated() {
            #expect(bytes.count <= mtu, "\(trace) #\(i)")
            try withPacket(bytes) { packet in
                let info = try #require(packet.fragment, "\(trace) #\(i): \(packet)")
                #expect(info.moreFragments == (i < fragments.count - 1), "\(trace) #\(i): \(packet)")
                if info.moreFragments { #expect(fragmentData(packet).count % 8 == 0, "\(trace) #\(i): \(packet)") }
                if case let .v4(ip) = packet.network { #expect(ip.verifyChecksum(), "\(trace) #\(i)") }
            }
        }
    }

    @Test func randomDatagramsRoundTripThroughTheReassembler() throws {
        var random = SeededRandom(seed: 0x5eed_f4a9)
        var configuration = FragmentReassembler.Configuration()
        configuration.maximumFragmentsPerDatagram = 8192
        var fragmented = 0
        for trial in 0 ..< 400 {
            let v6 = trial % 2 == 1
            let size = Int(random.next() % 9000)
            let data = Frag.payload(size, seed: random.next())
            let mtu = v6 ? 96 + Int(random.next() % 1500) : 68 + Int(random.next() % 1500)
            let whole = v6 ? Frag.udp6(data) : Frag.udp4(data, identification: UInt16(truncatingIfNeeded: random.next()))
            let trace = "trial \(trial): \(v6 ? "IPv6" : "IPv4") \(whole.count) bytes, mtu \(mtu)"
            let (outcome, fragments) = try fragment(whole, mtu: mtu, identification: UInt32(truncatingIfNeeded: random.next()))
            if whole.count <= mtu {
                #expect(outcome == .whole, "\(trace)")
                #expect(fragments == [whole], "\(trace)")
                continue
            }
            fragmented += 1
            #expect(outcome == .fragments(fragments.count), "\(trace)")
            try checkFragments(fragments, mtu: mtu, trace: trace)

            // Shuffled, with one fragment sent twice.
            var arrivals = fragments
            arrivals.shuffle(using: &random)
            let again = Int(random.next() % UInt64(arrivals.count))
            arrivals.insert(fragments[Int(random.next() % UInt64(fragments.count))], at: again)
            let reassembler = FragmentReassembler(configuration: configuration)
            var results: [ReassembledDatagram] = []
            for bytes in arrivals {
                if let d = try reassembler.insert(bytes).datagram { results.append(d) }
            }
            #expect(results.count == 1, "\(trace)")
            #expect(results.first?.bytes == whole, "\(trace)")
            #expect(results.first?.fragmentCount == fragments.count, "\(trace)")
            results.first?.withPacket { #expect($0.verifyUpperLayerChecksum() == true, "\(trace)") }
        }
        #expect(fragmented > 300)
    }

    @Test func onlyCopiedOptionsRepeatAfterTheFirstFragment() throws {
        // Router alert (148: copy flag set) and record route (7: not copied): 4 + 7 bytes, padded to 12.
        let options: [UInt8] = [148, 4, 0, 0, 7, 7, 4, 0, 0, 0, 0]
        let whole = Frag.udp4(Frag.payload(1200), options: options)
        let (outcome, fragments) = try fragment(whole, mtu: 500)
        #expect(outcome == .fragments(3))
        try checkFragments(fragments, mtu: 500, trace: "options")
        for (i, bytes) in fragments.enumerated() {
            try withPacket(bytes) { packet in
                guard case let .v4(ip) = packet.network else { Issue.record("not IPv4"); return }
                #expect(ip.headerLength == (i == 0 ? 32 : 24))
                #expect(Array(ip.options) == (i == 0 ? options + [0] : [148, 4, 0, 0]))
            }
        }
        let reassembler = FragmentReassembler()
        let results = try fragments.compactMap { try reassembler.insert($0).datagram }
        #expect(results.map(\.bytes) == [whole])
    }

    @Test func aFragmentIsSplitFurtherWithItsOffsetsKept() throws {
        let whole = Frag.udp4(Frag.payload(2000))
        let head = Frag.fragment4(whole, 0 ..< 1000, more: true)
        let tail = Frag.fragment4(whole, 1000 ..< 2008, more: false)
        let (outcome, pieces) = try fragment(head, mtu: 300)
        #expect(outcome == .fragments(4))
        // Every piece of the first fragment says more follow.
        try checkFragments(pieces + [tail], mtu: 1100, trace: "refragmented")
        let reassembler = FragmentReassembler()
        let results = try (pieces + [tail]).compactMap { try reassembler.insert($0).datagram }
        #expect(results.map(\.bytes) == [whole])
    }

    @Test func refusals() throws {
        let df = Frag.udp4(Frag.payload(2000), dontFragment: true)
        #expect(try fragment(df, mtu: 1500) == (.refused(.dontFragment), []))
        #expect(try fragment(Frag.udp4(Frag.payload(2000)), mtu: 27) == (.refused(.mtuTooSmall), []))
        // 40 + 8 + 8 leaves no room for the UDP header and 8 bytes of data... with 55 there are only 7.
        #expect(try fragment(Frag.udp6(Frag.payload(2000)), mtu: 55) == (.refused(.mtuTooSmall), []))
        let atomic = Frag.fragment6(Frag.udp6(Frag.payload(2000)), 0 ..< 2008, more: false)
        #expect(try fragment(atomic, mtu: 1280) == (.refused(.alreadyFragmented), []))
        // A DF datagram that fits is written as it is.
        #expect(try fragment(df, mtu: 2028) == (.whole, [df]))
    }

    @Test func ipv6FirstFragmentHoldsTheWholeHeaderChain() throws {
        // A TCP segment: the 20-byte header must all be in the first fragment,
        // so an MTU leaving 16 bytes of data is refused.
        let tcp = Frag.ipv6(.tcp, Frag.payload(100))
        #expect(try fragment(tcp, mtu: 40 + 8 + 16) == (.refused(.mtuTooSmall), []))
        let (outcome, fragments) = try fragment(tcp, mtu: 40 + 8 + 24)
        #expect(outcome == .fragments(5))
        #expect(fragments.first.map { $0.count - 48 } == 24)
    }

    /// Hop-by-hop options stay in every fragment (the unfragmentable part);
    /// destination options without a routing header after them travel in the
    /// first fragment only. Reassembly puts the chain back as it was.
    @Test func ipv6ExtensionHeadersRoundTrip() throws {
        let data = Frag.payload(3000)
        let udpLength = 8 + data.count
        var whole = [UInt8](repeating: 0, count: 40 + 8 + 8 + udpLength)
        whole.withUnsafeMutableBytes { out in
            _ = try! IPv6Header(source: Frag.app6, destination: Frag.server6, nextHeader: .hopByHop,
                                payloadLength: 16 + udpLength).emit(into: out.sub(0, 40))
            // Hop-by-hop, then destination options, each one PadN option of 4 bytes.
            for (at, next) in [(40, IPProtocol.ipv6Options), (48, IPProtocol.udp)] {
                out[at] = next.rawValue; out[at + 1] = 0; out[at + 2] = 1; out[at + 3] = 4
            }
            for (i, b) in data.enumerated() { out[64 + i] = b }
            _ = try! UDPHeader(sourcePort: 40000, destinationPort: 53, payloadLength: data.count)
                .emit(into: out.sub(56, udpLength), source: Frag.app6, destination: Frag.server6)
        }
        try withPacket(whole) { #expect($0.verifyUpperLayerChecksum() == true) }
        let (outcome, fragments) = try fragment(whole, mtu: 1280)
        #expect(outcome == .fragments(3))
        try checkFragments(fragments, mtu: 1280, trace: "extension headers")
        for (i, bytes) in fragments.enumerated() {
            #expect(bytes[6] == IPProtocol.hopByHop.rawValue)
            #expect(bytes[40] == IPProtocol.ipv6Fragment.rawValue)
            // The fragment header names what the hop-by-hop header named before.
            #expect(bytes[48] == IPProtocol.ipv6Options.rawValue, "#\(i)")
        }
        let reassembler = FragmentReassembler()
        for order in permutations(Array(fragments.indices)) {
            let results = try order.compactMap { try reassembler.insert(fragments[$0]).datagram }
            #expect(results.map(\.bytes) == [whole], "order \(order)")
        }
    }

    @Test func fragmentsPrintLikeTcpdump() throws {
        let (_, fragments) = try fragment(Frag.udp6(Frag.payload(2000)), mtu: 1280, identification: 0x1234)
        let lines = try fragments.map { try withPacket($0) { $0.description } }
        #expect(lines == [
            "IP6 fd00:7::2 > fd00:99::5: frag (id 4660, offset 0+), UDP, length 1232",
            "IP6 fd00:7::2 > fd00:99::5: frag (id 4660, offset 1232), UDP, length 776",
        ])
    }
}

/// Outcome and packets together, for one #expect.
func == (a: (IPFragmenter.Outcome, [[UInt8]]), b: (IPFragmenter.Outcome, [[UInt8]])) -> Bool {
    a.0 == b.0 && a.1 == b.1
}
