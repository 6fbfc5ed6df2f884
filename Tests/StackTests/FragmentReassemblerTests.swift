import Testing
@testable import Stack
import Wire
import TestSupport

/// The reassembler on the kernel's own fragments (fragments.pcap) and on
/// hand-made ones: every order, duplicates, overlaps, limits and timeouts.
@Suite struct FragmentReassemblerTests {
    typealias R = FragmentReassembler

    // MARK: Captured fragments

    @Test func capturedFragmentsAreFiveDatagramsOfThree() throws {
        let groups = try Frag.capturedDatagrams()
        #expect(groups.count == 5)
        #expect(groups.allSatisfy { $0.count == 3 })
    }

    @Test func capturedFragmentsReassembleInEveryOrder() throws {
        for group in try Frag.capturedDatagrams() {
            var first: [UInt8]? = nil
            for order in permutations(Array(group.indices)) {
                let reassembler = R()
                var outcomes: [R.Outcome] = []
                for i in order { outcomes.append(try reassembler.insert(group[i])) }
                let trace = "order \(order): \(outcomes)"
                #expect(outcomes[0].isIncomplete && outcomes[1].isIncomplete, "\(trace)")
                let datagram = try #require(outcomes[2].datagram, "\(trace)")
                #expect(datagram.fragmentCount == 3)
                #expect(reassembler.count == 0 && reassembler.memoryInUse == 0)
                #expect(reassembler.counters.fragments == 3 && reassembler.counters.reassembled == 1)
                // Every order gives the same bytes.
                if let first { #expect(datagram.bytes == first, "\(trace)") } else { first = datagram.bytes }
                try datagram.withPacket { packet in
                    #expect(!packet.isFragment)
                    #expect(packet.verifyUpperLayerChecksum() == true, "\(packet)")
                    // The data is the fragments' data, end to end.
                    let pieces = try group.map { bytes in
                        try withPacket(bytes) { p in (p.fragment!.byteOffset, Array(fragmentData(p))) }
                    }.sorted { $0.0 < $1.0 }
                    let data = pieces.flatMap(\.1)
                    switch packet.network {
                    case let .v4(ip):
                        #expect(ip.verifyChecksum())
                        #expect(Array(ip.payload) == data)
                        #expect(Int(ip.totalLength) == 20 + data.count)
                        #expect(!ip.moreFragments && ip.fragmentOffset == 0)
                    case let .v6(ip):
                        #expect(ip.fragmentHeaderOffset == nil)
                        #expect(Array(ip.payload) == data)
                        #expect(Int(ip.payloadLength) == data.count)
                        #expect(ip.nextHeader == .icmpv6)
                    }
                }
            }
        }
    }

    @Test func capturedDatagramsPrintLikeTcpdump() throws {
        let groups = try Frag.capturedDatagrams()
        let reassembler = R()
        var lines: [String] = []
        for group in groups {
            for bytes in group {
                if case let .complete(d) = try reassembler.insert(bytes) { lines.append(d.description) }
            }
        }
        #expect(lines == [
            "IP 10.99.0.1 > 10.99.1.2: ICMP echo request, id 5170, seq 1, length 3008 (reassembled from 3)",
            "IP 10.99.1.2 > 10.99.0.1: ICMP echo reply, id 5170, seq 1, length 3008 (reassembled from 3)",
            "IP6 fd00:99::1 > fd00:99:1::2: ICMP6, echo request, id 5171, seq 1, length 3008 (reassembled from 3)",
            "IP6 fd00:99::1 > fd00:99:1::2: ICMP6, echo request, id 5169, seq 1, length 3008 (reassembled from 3)",
            "IP6 fd00:99:1::2 > fd00:99::1: ICMP6, echo reply, id 5169, seq 1, length 3008 (reassembled from 3)",
        ])
    }

    @Test func interleavedDatagramsDoNotMix() throws {
        let groups = try Frag.capturedDatagrams()
        let reassembler = R()
        var complete = 0
        // Round-robin: every datagram's first fragment, then every second, then every third.
        for round in 0 ..< 3 {
            for group in groups {
                let outcome = try reassembler.insert(group[round])
                if round < 2 { #expect(outcome.isIncomplete, "\(outcome)") }
                if let d = outcome.datagram {
                    complete += 1
                    d.withPacket { #expect($0.verifyUpperLayerChecksum() == true, "\($0)") }
                }
            }
            #expect(reassembler.count == (round < 2 ? groups.count : 0))
        }
        #expect(complete == groups.count)
    }

    @Test func duplicatesAreDroppedAndTheDatagramCompletes() throws {
        for group in try Frag.capturedDatagrams() {
            let reassembler = R()
            let order = [0, 0, 2, 2, 0, 1]
            var reasons: [String] = []
            var result: ReassembledDatagram? = nil
            for i in order {
                let outcome = try reassembler.insert(group[i])
                reasons.append(outcome.description.components(separatedBy: ":").first!)
                if let d = outcome.datagram { result = d }
            }
            #expect(reasons == ["incomplete", "dropped", "incomplete", "dropped", "dropped", "complete"])
            #expect(reassembler.counters.duplicates == 3)
            let d = try #require(result)
            d.withPacket { #expect($0.verifyUpperLayerChecksum() == true) }
            // A duplicate after completion starts a new datagram, which can only time out.
            #expect(try reassembler.insert(group[1]).isIncomplete)
            #expect(reassembler.count == 1)
        }
    }

    @Test func notAFragmentPassesThrough() throws {
        #expect(try R().insert(Frag.udp4(Frag.payload(100))).description == "not a fragment")
        #expect(try R().insert(Frag.udp6(Frag.payload(100))).description == "not a fragment")
    }

    // MARK: Overlaps

    /// A 2000-byte UDP payload: 2008 bytes of fragmentable data.
    var whole4: [UInt8] { Frag.udp4(Frag.payload(2000)) }
    var whole6: [UInt8] { Frag.udp6(Frag.payload(2000)) }

    @Test func ipv6DiscardsTheDatagramOnAnyOverlapEvenWithIdenticalBytes() throws {
        let w = whole6
        for overlapping in [800 ..< 1608, 992 ..< 1000, 0 ..< 1008, 8 ..< 16, 992 ..< 2008] {
            let reassembler = R()
            #expect(try reassembler.insert(Frag.fragment6(w, 0 ..< 1000, more: true)).isIncomplete)
            let more = overlapping.upperBound < 2008
            let outcome = try reassembler.insert(Frag.fragment6(w, overlapping, more: more))
            #expect(outcome.dropReason == .overlap, "\(overlapping): \(outcome)")
            #expect(outcome.description == "dropped: overlapping fragments")
            #expect(reassembler.count == 0 && reassembler.memoryInUse == 0)
            #expect(reassembler.counters.overlaps == 1)
            // The fragment held before is gone: the rest cannot complete the datagram.
            #expect(try reassembler.insert(Frag.fragment6(w, 1000 ..< 2008, more: false)).isIncomplete)
        }
    }

    @Test func ipv6ExactDuplicateWithOtherBytesIsAnOverlap() throws {
        let w = whole6
        let reassembler = R()
        #expect(try reassembler.insert(Frag.fragment6(w, 0 ..< 1000, more: true)).isIncomplete)
        let outcome = try reassembler.insert(Frag.fragment6(w, 0 ..< 1000, more: true, replacing: [500: 0x55 ^ w[540]]))
        #expect(outcome.dropReason == .overlap)
        #expect(reassembler.count == 0)
    }

    @Test func ipv4AcceptsAnOverlapWhoseBytesAgree() throws {
        let w = whole4
        let reassembler = R()
        #expect(try reassembler.insert(Frag.fragment4(w, 0 ..< 1000, more: true)).isIncomplete)
        #expect(try reassembler.insert(Frag.fragment4(w, 504 ..< 1504, more: true)).isIncomplete)
        #expect(try reassembler.insert(Frag.fragment4(w, 8 ..< 16, more: true)).dropReason == .duplicate)
        let d = try #require(try reassembler.insert(Frag.fragment4(w, 1000 ..< 2008, more: false)).datagram)
        #expect(d.bytes == w)
        #expect(reassembler.counters.overlaps == 0)
    }

    @Test func ipv4DiscardsTheDatagramOnAConflictingOverlap() throws {
        let w = whole4
        let reassembler = R()
        #expect(try reassembler.insert(Frag.fragment4(w, 0 ..< 1000, more: true)).isIncomplete)
        // RFC 1858's attack: rewrite the start of the UDP header with a later fragment.
        let outcome = try reassembler.insert(Frag.fragment4(w, 0 ..< 8, more: true, replacing: [2: 0x01]))
        #expect(outcome.dropReason == .overlap, "\(outcome)")
        #expect(reassembler.count == 0 && reassembler.counters.overlaps == 1)
        #expect(try reassembler.insert(Frag.fragment4(w, 1000 ..< 2008, more: false)).isIncomplete)
    }

    // MARK: Lengths

    @Test func nonLastFragmentsMustBeMultiplesOfEight() throws {
        let reassembler = R()
        #expect(try reassembler.insert(Frag.fragment4(whole4, 0 ..< 1004, more: true)).dropReason == .badLength)
        #expect(try reassembler.insert(Frag.fragment6(whole6, 0 ..< 1004, more: true)).dropReason == .badLength)
        // The last may be any length.
        #expect(try reassembler.insert(Frag.fragment6(whole6, 1000 ..< 2005, more: false)).isIncomplete)
        #expect(reassembler.counters.badLengths == 2)
    }

    @Test func fragmentsEndingPast65535AreDropped() throws {
        let reassembler = R()
        // IPv6: offset 65528 with 16 bytes ends at 65544.
        let big6 = Frag.udp6(Frag.payload(100)) + [UInt8](repeating: 7, count: 65544 - 108)
        #expect(try reassembler.insert(Frag.fragment6(big6, 65528 ..< 65544, more: false)).dropReason == .tooLong)
        // IPv4: the data ends at 65528, inside what IPv4View allows, but 20 header bytes make 65548.
        var big4 = Frag.udp4(Frag.payload(100))
        big4 += [UInt8](repeating: 7, count: 65528 - 108)
        let fragment = Frag.fragment4(big4, 65512 ..< 65528, more: false)
        #expect(try reassembler.insert(fragment).dropReason == .tooLong)
        #expect(reassembler.counters.tooLong == 2 && reassembler.count == 0)
    }

    @Test func fragmentsDisagreeingAboutTheEndDiscardTheDatagram() throws {
        let w = whole6
        do {
            let reassembler = R()
            #expect(try reassembler.insert(Frag.fragment6(w, 1000 ..< 2008, more: false)).isIncomplete)
            #expect(try reassembler.insert(Frag.fragment6(w, 504 ..< 1000, more: false)).dropReason == .inconsistentLength)
            #expect(reassembler.count == 0)
        }
        do {
            let reassembler = R()
            #expect(try reassembler.insert(Frag.fragment6(w, 504 ..< 1000, more: false)).isIncomplete)
            #expect(try reassembler.insert(Frag.fragment6(w, 1000 ..< 1504, more: true)).dropReason == .inconsistentLength)
            #expect(reassembler.counters.inconsistentLengths == 1)
        }
    }

    @Test func ipv6TinyFirstFragmentIsDropped() throws {
        // A TCP segment whose first fragment stops 4 bytes into the 20-byte TCP header.
        let tcp = Frag.ipv6(.tcp, Frag.payload(100))
        let reassembler = R()
        let outcome = try reassembler.insert(Frag.fragment6(tcp, 0 ..< 16, more: true))
        #expect(outcome.dropReason == .tinyFirstFragment)
        #expect(reassembler.count == 0 && reassembler.counters.tinyFirstFragments == 1)
        // 24 bytes hold the whole header.
        #expect(try reassembler.insert(Frag.fragment6(tcp, 0 ..< 24, more: true)).isIncomplete)
    }

    // MARK: Atomic fragments

    @Test func ipv6AtomicFragmentIsCompleteAtOnceAndIsolated() throws {
        let w = whole6
        let reassembler = R()
        // A datagram with the same addresses and identification is in reassembly…
        #expect(try reassembler.insert(Frag.fragment6(w, 0 ..< 1000, more: true)).isIncomplete)
        // …and the atomic fragment (offset 0, M clear) neither joins nor disturbs it (RFC 6946).
        let atomic = Frag.fragment6(w, 0 ..< 2008, more: false)
        let d = try #require(try reassembler.insert(atomic).datagram)
        #expect(d.bytes == w)
        #expect(d.fragmentCount == 1)
        d.withPacket { #expect($0.verifyUpperLayerChecksum() == true) }
        #expect(reassembler.counters.atomicFragments == 1 && reassembler.counters.fragments == 1)
        #expect(reassembler.count == 1)
        #expect(try reassembler.insert(Frag.fragment6(w, 1000 ..< 2008, more: false)).datagram?.bytes == w)
    }

    // MARK: Limits

    @Test func countLimitEvictsTheOldest() throws {
        var configuration = R.Configuration()
        configuration.maximumDatagrams = 3
        let reassembler = R(configuration: configuration)
        let datagrams = (0 ..< 4).map { Frag.udp4(Frag.payload(2000, seed: UInt64($0)), identification: UInt16(100 + $0)) }
        for (i, w) in datagrams.enumerated() {
            #expect(try reassembler.insert(Frag.fragment4(w, 0 ..< 1000, more: true), now: .milliseconds(Int64(i))).isIncomplete)
        }
        #expect(reassembler.count == 3 && reassembler.counters.evictedForCount == 1)
        // The first was evicted: its second half starts a new datagram, which evicts the next oldest (#1).
        #expect(try reassembler.insert(Frag.fragment4(datagrams[0], 1000 ..< 2008, more: false)).isIncomplete)
        #expect(reassembler.counters.evictedForCount == 2)
        for i in 2 ..< 4 {
            #expect(try reassembler.insert(Frag.fragment4(datagrams[i], 1000 ..< 2008, more: false)).datagram?.bytes == datagrams[i])
        }
        #expect(reassembler.count == 1)
    }

    @Test func memoryLimitEvictsTheOldestAndRefusesAnOversizeDatagram() throws {
        var configuration = R.Configuration()
        configuration.maximumMemory = 3000
        let reassembler = R(configuration: configuration)
        let datagrams = (0 ..< 3).map { Frag.udp4(Frag.payload(2000, seed: UInt64($0)), identification: UInt16(200 + $0)) }
        // Each first fragment holds 1000 data bytes and a 20-byte header.
        for w in datagrams.prefix(2) { #expect(try reassembler.insert(Frag.fragment4(w, 0 ..< 1000, more: true)).isIncomplete) }
        #expect(reassembler.memoryInUse == 2040)
        #expect(try reassembler.insert(Frag.fragment4(datagrams[2], 0 ..< 1000, more: true)).isIncomplete)
        #expect(reassembler.memoryInUse == 2040 && reassembler.count == 2)
        #expect(reassembler.counters.evictedForMemory == 1)
        // The oldest went. Completing the newest needs 1008 bytes more: the next oldest goes too.
        #expect(try reassembler.insert(Frag.fragment4(datagrams[2], 1000 ..< 2008, more: false)).datagram?.bytes == datagrams[2])
        #expect(reassembler.counters.evictedForMemory == 2)
        #expect(reassembler.memoryInUse == 0 && reassembler.count == 0)
        let small = Frag.udp4(Frag.payload(2000), identification: 301)
        #expect(try reassembler.insert(Frag.fragment4(small, 0 ..< 1000, more: true)).isIncomplete)

        // A datagram that needs more than the whole limit by itself is refused without evicting anyone.
        let big = Frag.udp4(Frag.payload(4000), identification: 300)
        #expect(try reassembler.insert(Frag.fragment4(big, 3000 ..< 4008, more: false)).dropReason == .memoryLimit)
        #expect(reassembler.count == 1 && reassembler.memoryInUse == 1020)
        #expect(reassembler.counters.overMemoryLimit == 1 && reassembler.counters.evictedForMemory == 2)
    }

    @Test func fragmentCountLimit() throws {
        var configuration = R.Configuration()
        configuration.maximumFragmentsPerDatagram = 4
        let reassembler = R(configuration: configuration)
        let w = whole6
        for i in 0 ..< 4 { #expect(try reassembler.insert(Frag.fragment6(w, i * 16 ..< i * 16 + 8, more: true)).isIncomplete) }
        #expect(try reassembler.insert(Frag.fragment6(w, 200 ..< 208, more: true)).dropReason == .tooManyFragments)
        #expect(reassembler.count == 0 && reassembler.counters.tooManyFragments == 1)
    }

    @Test func manyDatagramsStayWithinTheLimits() throws {
        var configuration = R.Configuration()
        configuration.maximumMemory = 64 * 1024
        configuration.maximumDatagrams = 16
        let reassembler = R(configuration: configuration)
        var random = SeededRandom(seed: 42)
        for i in 0 ..< 2000 {
            let w = Frag.udp6(Frag.payload(Int(random.next() % 4000) + 16, seed: UInt64(i)))
            let dataLength = w.count - 40
            let start = Int(random.next() % UInt64(dataLength / 8)) * 8
            let end = min(dataLength, start + 8 * Int(random.next() % 200 + 1))
            let fragment = Frag.fragment6(w, start ..< end, more: end < dataLength, identification: UInt32(random.next() % 64))
            _ = try reassembler.insert(fragment, now: .milliseconds(Int64(i)))
            #expect(reassembler.memoryInUse <= configuration.maximumMemory)
            #expect(reassembler.count <= configuration.maximumDatagrams)
            let held = reassembler.entries.values.reduce(0) { $0 + $1.memory }
            #expect(held == reassembler.memoryInUse)
        }
    }

    // MARK: Timeouts

    @Test func partialDatagramsExpire() throws {
        let w = whole4
        let reassembler = R()
        #expect(try reassembler.insert(Frag.fragment4(w, 0 ..< 1000, more: true), now: .zero).isIncomplete)
        #expect(try reassembler.insert(Frag.fragment4(w, 1000 ..< 1504, more: true), now: .milliseconds(10_000)).isIncomplete)
        #expect(reassembler.nextDeadline == .milliseconds(30_000))
        #expect(reassembler.expire(now: .milliseconds(29_999)) == 0)
        #expect(reassembler.count == 1)
        #expect(reassembler.expire(now: .milliseconds(30_000)) == 1)
        #expect(reassembler.count == 0 && reassembler.memoryInUse == 0 && reassembler.nextDeadline == nil)
        #expect(reassembler.counters.timedOut == 1)
        #expect(try reassembler.insert(Frag.fragment4(w, 1504 ..< 2008, more: false), now: .milliseconds(30_001)).isIncomplete)
    }

    @Test func aLateFragmentDoesNotJoinATimedOutDatagram() throws {
        let w = whole6
        let reassembler = R()
        #expect(try reassembler.insert(Frag.fragment6(w, 0 ..< 1000, more: true), now: .zero).isIncomplete)
        // No expire call in between: the insert itself notices.
        #expect(try reassembler.insert(Frag.fragment6(w, 1000 ..< 2008, more: false), now: .milliseconds(31_000)).isIncomplete)
        #expect(reassembler.counters.timedOut == 1 && reassembler.count == 1)
    }

    @Test func expiryAnswersWithTimeExceededWhenTheFirstFragmentCame() throws {
        for v6 in [false, true] {
            let w = v6 ? whole6 : whole4
            let first = v6 ? Frag.fragment6(w, 0 ..< 1000, more: true) : Frag.fragment4(w, 0 ..< 1000, more: true)
            let reassembler = R()
            #expect(try reassembler.insert(first, now: .zero).isIncomplete)
            // A second datagram whose first fragment never came: expired silently.
            let other = v6 ? Frag.fragment6(w, 1000 ..< 2008, more: false, identification: 77)
                           : Frag.fragment4(Frag.udp4(Frag.payload(2000), identification: 77), 1000 ..< 2008, more: false)
            #expect(try reassembler.insert(other, now: .zero).isIncomplete)
            var sink = PoisonedSink()
            #expect(reassembler.expire(now: .milliseconds(30_000), sendingTimeExceededTo: &sink) == 2)
            #expect(sink.packets.count == 1)
            #expect(reassembler.counters.timeExceededSent == 1 && reassembler.counters.timedOut == 2)
            let reply = try #require(sink.packets.first)
            try withPacket(reply) { packet in
                #expect(packet.verifyUpperLayerChecksum() == true, "\(packet)")
                #expect(packet.source == (v6 ? .v6(Frag.server6) : .v4(Frag.server4)))
                #expect(packet.destination == (v6 ? .v6(Frag.app6) : .v4(Frag.app4)))
                let quote: UnsafeRawBufferPointer
                switch packet.network {
                case let .v4(ip):
                    #expect(ip.verifyChecksum())
                    let icmp = try ICMPv4View(ip.payload)
                    #expect(icmp.message == .timeExceeded(code: 1))
                    quote = icmp.payload
                    #expect(quote.count == 548)
                case let .v6(ip):
                    let icmp = try ICMPv6View(ip.upperLayerPayload)
                    #expect(icmp.message == .timeExceeded(code: 1))
                    quote = icmp.payload
                    #expect(quote.count == first.count)
                }
                // The quote is the first fragment as it arrived.
                #expect(Array(quote) == Array(first.prefix(quote.count)))
                #expect(packet.description.contains("reassembly time exceeded"), "\(packet)")
            }
        }
    }
}

/// The fragmentable data a fragment carries (after IPv6's fragment header).
func fragmentData(_ packet: IPPacketView) -> UnsafeRawBufferPointer {
    switch packet.network {
    case let .v4(ip): return ip.payload
    case let .v6(ip): return ip.bytes.suffix(from: ip.fragmentHeaderOffset! + 8)
    }
}
