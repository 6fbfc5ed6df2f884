import Stack
import TestSupport
import Testing
import Wire

private func u16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xff)] }

/// A query as a stub resolver sends it: RD set, one question, nothing else.
private func query(_ dotted: String, _ type: DNSType, class qclass: DNSClass = .internet, id: UInt16 = 0x1234,
                   flags: UInt16 = 0x0100, questionCount: UInt16 = 1) -> [UInt8] {
    u16(id) + u16(flags) + u16(questionCount) + u16(0) + u16(0) + u16(0) + DNSName(dotted)!.wire
        + u16(type.rawValue) + u16(qclass.rawValue)
}

private func at(_ seconds: Int64) -> Instant { .milliseconds(seconds * 1000) }

/// A response read back: its header, its question and its answers as
/// `owner TYPE data ttl N`, which is how a failed expectation prints.
struct Reply: CustomStringConvertible {
    var header: DNSHeader
    var question: String?
    var answers: [String]
    var length: Int
    var bytes: [UInt8]

    var rcode: DNSResponseCode { header.responseCode }
    var description: String { "\(header) \(question ?? "-") \(answers)" }
}

/// The server behind a reference, so that #expect can call it; every
/// response is checked against the query before it is returned.
final class Server {
    var dns: FakeDNS
    init(_ configuration: FakeDNSConfiguration = FakeDNSConfiguration()) { dns = FakeDNS(configuration) }

    func action(_ bytes: [UInt8], now: Instant = .zero, limit: Int = FakeDNS.udpLimit) -> DNSAction {
        var out = [UInt8](repeating: 0xaa, count: 1500)
        return bytes.withUnsafeBytes { message in
            out.withUnsafeMutableBytes { dns.respond(toMessage: message, now: now, into: $0, maximumLength: limit) }
        }
    }

    /// The response, or nil (with an issue recorded) when the server forwards or drops.
    func ask(_ bytes: [UInt8], now: Instant = .zero, limit: Int = FakeDNS.udpLimit,
             sourceLocation: SourceLocation = #_sourceLocation) throws -> Reply {
        var out = [UInt8](repeating: 0xaa, count: 1500)
        let action = bytes.withUnsafeBytes { message in
            out.withUnsafeMutableBytes { dns.respond(toMessage: message, now: now, into: $0, maximumLength: limit) }
        }
        guard case let .answer(length) = action else {
            Issue.record("expected an answer, got \(action)", sourceLocation: sourceLocation)
            throw Unanswered()
        }
        let response = Array(out[..<length])
        return try Self.check(response, against: bytes, limit: limit, sourceLocation: sourceLocation)
    }

    struct Unanswered: Error {}

    /// RFC 1035 §4.1.1 for a response: id and RD copied, QR and RA set, the
    /// question echoed; the whole message parses and fills exactly `length`.
    static func check(_ response: [UInt8], against query: [UInt8], limit: Int,
                      sourceLocation: SourceLocation) throws -> Reply {
        #expect(response.count <= limit, "response over the limit", sourceLocation: sourceLocation)
        let queryHeader = try query.withUnsafeBytes { try DNSHeader.parse($0) }
        return try response.withUnsafeBytes { raw in
            let view = try DNSMessageView(raw)
            #expect(view.length == response.count, "bytes after the message", sourceLocation: sourceLocation)
            let header = view.header
            #expect(header.isResponse && header.recursionAvailable, sourceLocation: sourceLocation)
            #expect(header.id == queryHeader.id && header.opcode == queryHeader.opcode
                && header.recursionDesired == queryHeader.recursionDesired, sourceLocation: sourceLocation)
            #expect(header.authorityCount == 0 && header.additionalCount == 0, sourceLocation: sourceLocation)
            var question: String?
            if let asked = view.question {
                #expect(header.questionCount == 1, sourceLocation: sourceLocation)
                try query.withUnsafeBytes { queryRaw in
                    let original = try #require(try DNSMessageView(queryRaw).question, sourceLocation: sourceLocation)
                    #expect(asked.name.matches(original.name) && asked.type == original.type
                        && asked.class == original.class, "question not echoed", sourceLocation: sourceLocation)
                }
                question = asked.description
            } else {
                #expect(header.questionCount == 0, sourceLocation: sourceLocation)
            }
            let answers = view.answers.map { "\($0.name) \($0) ttl \($0.timeToLive)" }
            #expect(answers.count == Int(header.answerCount), sourceLocation: sourceLocation)
            return Reply(header: header, question: question, answers: answers, length: response.count, bytes: response)
        }
    }
}

private func hosts(_ lines: [(String, String)]) -> DNSHostTable {
    var table = DNSHostTable()
    for (pattern, value) in lines { precondition(table.insert(pattern, value), "\(pattern) = \(value)") }
    return table
}

/// 198.18.0.0/29 (four names) for the tests that fill the pool.
private let tinyPool = FakeIPPoolConfiguration(prefixLength: 29)

@Suite struct FakeDNSTests {
    // MARK: Fake answers

    @Test func aAndAAAAGetTwinFakeAddressesWithAOneSecondTTL() throws {
        let server = Server()
        let a = try server.ask(query("api.example.test", .a, id: 7))
        #expect(a.rcode == .noError && a.header.authoritativeAnswer)
        #expect(a.question == "A? api.example.test.")
        #expect(a.answers == ["api.example.test. A 198.18.0.3 ttl 1"])
        let aaaa = try server.ask(query("API.Example.Test", .aaaa, id: 8), now: at(1))
        #expect(aaaa.answers == ["API.Example.Test. AAAA fd73:6c75:6963::3 ttl 1"])
        let any = try server.ask(query("api.example.test.", .any), now: at(2))
        #expect(any.answers == ["api.example.test. A 198.18.0.3 ttl 1", "api.example.test. AAAA fd73:6c75:6963::3 ttl 1"])
        let other = try server.ask(query("www.example.test", .aaaa), now: at(3))
        #expect(other.answers == ["www.example.test. AAAA fd73:6c75:6963::4 ttl 1"])
        #expect(server.dns.pool.name(for: .v6(IPv6Address("fd73:6c75:6963::4")!), now: at(3)) == DNSName("www.example.test"))
    }

    @Test func aaaaCanBeAnsweredEmpty() throws {
        let server = Server(FakeDNSConfiguration(aaaaPolicy: .empty))
        let aaaa = try server.ask(query("api.example.test", .aaaa))
        #expect(aaaa.rcode == .noError && aaaa.answers.isEmpty)
        #expect(server.dns.pool.count == 0)
        #expect(try server.ask(query("api.example.test", .any)).answers == ["api.example.test. A 198.18.0.3 ttl 1"])
    }

    @Test func otherTypesGetNoDataAndNoAddress() throws {
        let server = Server()
        for type in [DNSType.mx, .txt, .https, .svcb, .srv, .ns, .soa, .cname, DNSType(rawValue: 999)] {
            let reply = try server.ask(query("api.example.test", type))
            #expect(reply.rcode == .noError && reply.answers.isEmpty, "\(type)")
        }
        #expect(server.dns.pool.count == 0)
    }

    @Test func ptrForFakeAddressesNamesTheirName() throws {
        let server = Server()
        _ = try server.ask(query("Api.Example.Test", .a))
        let v4 = try server.ask(query("3.0.18.198.in-addr.arpa", .ptr), now: at(1))
        #expect(v4.answers == ["3.0.18.198.in-addr.arpa. PTR api.example.test. ttl 1"])
        let v6Name = DNSReverseName.name(for: .v6(IPv6Address("fd73:6c75:6963::3")!)).description
        #expect(v6Name == "3." + String(repeating: "0.", count: 19) + "3.6.9.6.5.7.c.6.3.7.d.f.ip6.arpa.")
        let v6 = try server.ask(query(v6Name.uppercased(), .ptr), now: at(1))
        #expect(v6.answers == ["\(v6Name.uppercased()) PTR api.example.test. ttl 1"])
        // In the pool but unmapped (or reserved): no such name.
        #expect(try server.ask(query("4.0.18.198.in-addr.arpa", .ptr)).rcode == .nameError)
        #expect(try server.ask(query("1.0.18.198.in-addr.arpa", .ptr)).rcode == .nameError)
        // A question about the fake reverse name of another type: nothing, not an error.
        #expect(try server.ask(query("3.0.18.198.in-addr.arpa", .a)).answers.isEmpty)
        // Real addresses, zone names and other arpa names are the host's business.
        #expect(server.action(query("1.1.168.192.in-addr.arpa", .ptr)) == .forward)
        #expect(server.action(query("18.198.in-addr.arpa", .ptr)) == .forward)
        #expect(server.action(query("03.0.18.198.in-addr.arpa", .ptr)) == .forward)
        #expect(server.action(query("ipv4only.arpa", .aaaa)) == .forward)
        #expect(server.dns.pool.count == 1)
    }

    @Test func everyAddressPinnedGivesServfail() throws {
        let server = Server(FakeDNSConfiguration(pool: tinyPool))
        for i in 0 ..< 4 {
            let reply = try server.ask(query("n\(i).test", .a))
            let address = try #require(IPv4Address(String(reply.answers[0].split(separator: " ")[2])))
            #expect(server.dns.pool.pin(.v4(address), now: .zero) != nil)
        }
        let refused = try server.ask(query("n4.test", .a))
        #expect(refused.rcode == .serverFailure && refused.answers.isEmpty)
        // Names already mapped still resolve.
        #expect(try server.ask(query("n2.test", .a)).answers == ["n2.test. A 198.18.0.5 ttl 1"])
        server.dns.pool.unpin(.v4(IPv4Address("198.18.0.4")!), now: at(1))
        #expect(try server.ask(query("n4.test", .a), now: at(2)).answers == ["n4.test. A 198.18.0.4 ttl 1"])
    }

    // MARK: [Host]

    @Test func staticHostsExactBeforeWildcardClosestWildcardFirst() throws {
        let table = hosts([
            ("*.example.test", "10.0.0.1"),
            ("*.deep.example.test", "10.0.0.2"),
            ("www.example.test", "10.0.0.3, fd00::3, 10.0.0.33"),
            ("*.www.example.test", "fd00::4"),
        ])
        let server = Server(FakeDNSConfiguration(hosts: table))
        #expect(try server.ask(query("www.example.test", .a)).answers
            == ["www.example.test. A 10.0.0.3 ttl 60", "www.example.test. A 10.0.0.33 ttl 60"])
        #expect(try server.ask(query("WWW.example.test.", .aaaa)).answers == ["WWW.example.test. AAAA fd00::3 ttl 60"])
        #expect(try server.ask(query("mail.example.test", .a)).answers == ["mail.example.test. A 10.0.0.1 ttl 60"])
        #expect(try server.ask(query("a.b.example.test", .a)).answers == ["a.b.example.test. A 10.0.0.1 ttl 60"])
        #expect(try server.ask(query("x.deep.example.test", .a)).answers == ["x.deep.example.test. A 10.0.0.2 ttl 60"])
        // A wildcard does not cover its own apex: example.test gets a fake address.
        #expect(try server.ask(query("example.test", .a)).answers == ["example.test. A 198.18.0.3 ttl 1"])
        // The name exists with IPv6 only: an A question gets NOERROR and nothing.
        let v4Less = try server.ask(query("img.www.example.test", .a))
        #expect(v4Less.rcode == .noError && v4Less.answers.isEmpty)
        #expect(try server.ask(query("mail.example.test", .mx)).answers.isEmpty)
        #expect(server.dns.pool.count == 1)
    }

    @Test func aliasesAnswerWithCNAMEChains() throws {
        let table = hosts([
            ("alias.example.test", "middle.example.test"),
            ("middle.example.test", "real.example.test"),
            ("real.example.test", "10.0.0.9, fd00::9"),
            ("out.example.test", "elsewhere.test"),
            ("loop1.test", "loop2.test"),
            ("loop2.test", "loop1.test"),
            ("local.example.test", "printer.lan"),
        ])
        let server = Server(FakeDNSConfiguration(hosts: table))
        #expect(try server.ask(query("alias.example.test", .a)).answers == [
            "alias.example.test. CNAME middle.example.test. ttl 60",
            "middle.example.test. CNAME real.example.test. ttl 60",
            "real.example.test. A 10.0.0.9 ttl 60",
        ])
        #expect(try server.ask(query("alias.example.test", .cname)).answers
            == ["alias.example.test. CNAME middle.example.test. ttl 60"])
        // Out of the table: the target gets a fake address, under its own name.
        #expect(try server.ask(query("out.example.test", .aaaa)).answers == [
            "out.example.test. CNAME elsewhere.test. ttl 60", "elsewhere.test. AAAA fd73:6c75:6963::3 ttl 1",
        ])
        #expect(server.dns.pool.name(for: .v4(IPv4Address("198.18.0.3")!), now: .zero) == DNSName("elsewhere.test"))
        #expect(try server.ask(query("loop1.test", .a)).rcode == .serverFailure)
        #expect(server.action(query("local.example.test", .a)) == .forward)
    }

    /// A `server:` line (`.delegated`) leaves its names to the engine, which
    /// picks their resolver: a fake address in fake-IP mode (rules see the
    /// name), forwarded in forward mode; the most specific line decides,
    /// whatever its form, and an alias can lead to such a name.
    @Test func delegatedNamesAreAnsweredAsNamesOutsideTheTable() throws {
        var table = hosts([("ldap.corp.test", "10.9.9.9"), ("intranet.test", "www.corp.test"), ("*.test", "10.0.0.1")])
        table.insert(DNSNamePattern("*.corp.test")!, .delegated)
        let fake = Server(FakeDNSConfiguration(hosts: table))
        #expect(try fake.ask(query("www.corp.test", .a)).answers == ["www.corp.test. A 198.18.0.3 ttl 1"])
        #expect(try fake.ask(query("ldap.corp.test", .a)).answers == ["ldap.corp.test. A 10.9.9.9 ttl 60"])
        #expect(try fake.ask(query("other.test", .a)).answers == ["other.test. A 10.0.0.1 ttl 60"])
        #expect(try fake.ask(query("intranet.test", .a)).answers == [
            "intranet.test. CNAME www.corp.test. ttl 60", "www.corp.test. A 198.18.0.3 ttl 1",
        ])
        let intranet = try #require(try table.resolve(DNSName("intranet.test")!)?.get())
        #expect(intranet.aliases == [DNSName("www.corp.test")!] && intranet.addresses == nil)
        #expect(table.resolve(DNSName("www.corp.test")!) == nil)
        let forward = Server(FakeDNSConfiguration(mode: .forward, hosts: table))
        #expect(forward.action(query("www.corp.test", .a)) == .forward)
        #expect(forward.action(query("intranet.test", .a)) == .forward)
        #expect(try forward.ask(query("ldap.corp.test", .a)).answers == ["ldap.corp.test. A 10.9.9.9 ttl 60"])
    }

    /// ipv6 = false: no AAAA in either mode, [Host] names included; A as ever.
    @Test func withIPv6OffNoAAAAIsGivenInEitherMode() throws {
        let table = hosts([("v6.test", "fd00::9"), ("both.test", "10.0.0.9, fd00::9")])
        for mode in [DNSMode.fakeIP, .forward] {
            let server = Server(FakeDNSConfiguration(mode: mode, aaaaPolicy: .empty, hosts: table))
            for name in ["v6.test", "both.test", "elsewhere.test"] {
                let reply = try server.ask(query(name, .aaaa))
                #expect(reply.rcode == .noError && reply.answers.isEmpty, "\(mode) \(name)")
            }
            #expect(try server.ask(query("both.test", .a)).answers == ["both.test. A 10.0.0.9 ttl 60"])
            // ANY too: the [Host] name's IPv4 address alone (it gave the AAAA before).
            #expect(try server.ask(query("both.test", .any)).answers == ["both.test. A 10.0.0.9 ttl 60"], "\(mode)")
        }
        #expect(Server(FakeDNSConfiguration(mode: .forward, aaaaPolicy: .empty)).action(query("elsewhere.test", .a)) == .forward)
    }

    @Test func hostLinesThatDoNotParseAreRefused() {
        var table = DNSHostTable()
        let refused = [("*", "10.0.0.1"), ("a.*.test", "10.0.0.1"), ("a.test", ""), ("a.test", "10.0.0.1, not-an-address"),
                       ("a.test", "b.test, c.test"), ("", "10.0.0.1")]
        for (pattern, value) in refused {
            let added = table.insert(pattern, value)
            #expect(!added, "\(pattern) = \(value)")
        }
        #expect(table.isEmpty)
        let added = table.insert("a.test", " 10.0.0.1 ,fd00::1 ")
        #expect(added)
        #expect(table.entry(for: DNSName("A.TEST")!) == .addresses([.v4(IPv4Address("10.0.0.1")!), .v6(IPv6Address("fd00::1")!)]))
    }

    // MARK: Forwarding

    @Test func exclusionsAndLocalNamesAreForwarded() throws {
        var exclusions = FakeDNSConfiguration.defaultExclusions
        exclusions.insert(DNSNamePattern("*.corp.example")!)
        exclusions.insert(DNSNamePattern("bank.example")!)
        let server = Server(FakeDNSConfiguration(exclusions: exclusions))
        for name in ["localhost", "a.localhost", "printer.local", "nas.lan", "NAS.LAN.", "db.internal", "printer",
                     "git.corp.example", "bank.example"] {
            #expect(server.action(query(name, .a)) == .forward, "\(name)")
        }
        #expect(server.dns.pool.count == 0)
        // Not excluded: the apex of a wildcard, and a name merely ending alike.
        #expect(try server.ask(query("corp.example", .a)).answers.count == 1)
        #expect(try server.ask(query("mybank.example", .a)).answers.count == 1)
        #expect(try server.ask(query("www.bank.example", .a)).answers.count == 1)
    }

    @Test func forwardModeForwardsAllButHosts() throws {
        let table = hosts([("static.test", "10.0.0.5"), ("alias.test", "elsewhere.test")])
        let server = Server(FakeDNSConfiguration(mode: .forward, hosts: table))
        for type in [DNSType.a, .aaaa, .mx, .https] { #expect(server.action(query("api.example.test", type)) == .forward) }
        #expect(server.action(query("3.0.18.198.in-addr.arpa", .ptr)) == .forward)
        #expect(server.action(query("version.bind", .txt, class: .chaos)) == .forward)
        #expect(server.action(query("alias.test", .a)) == .forward)
        #expect(try server.ask(query("static.test", .a)).answers == ["static.test. A 10.0.0.5 ttl 60"])
        #expect(server.dns.pool.count == 0)
    }

    // MARK: What we will not answer

    @Test func unsupportedAndMalformedQueriesGetTheirRCODE() throws {
        let server = Server()
        // Opcode STATUS (2) and NOTIFY (4): not implemented, question echoed.
        #expect(try server.ask(query("a.test", .a, flags: 0x1100)).rcode == .notImplemented)
        let notify = try server.ask(query("a.test", .soa, flags: 0x2000))
        #expect(notify.rcode == .notImplemented && notify.question == "SOA? a.test.")
        // No question, two questions: format errors, nothing echoed.
        let none = try server.ask(u16(9) + u16(0x0100) + [0, 0, 0, 0, 0, 0, 0, 0])
        #expect(none.rcode == .formatError && none.question == nil)
        let two = query("a.test", .a, questionCount: 2) + DNSName("b.test")!.wire + u16(1) + u16(1)
        let twoReply = try server.ask(two)
        #expect(twoReply.rcode == .formatError && twoReply.question == nil)
        // Classes other than IN, zone transfers, OPT as a question.
        #expect(try server.ask(query("version.bind", .txt, class: .chaos)).rcode == .notImplemented)
        #expect(try server.ask(query("a.test", .a, class: .any)).rcode == .notImplemented)
        #expect(try server.ask(query("a.test", DNSType(rawValue: 252))).rcode == .notImplemented)
        #expect(try server.ask(query("a.test", .opt)).rcode == .formatError)
        // A header followed by garbage: FORMERR with the id kept.
        let garbage = u16(77) + u16(0x0100) + u16(1) + [0, 0, 0, 0, 0, 0] + [0xc0, 0xff, 0, 1, 0, 1]
        let garbled = try server.ask(garbage)
        #expect(garbled.rcode == .formatError && garbled.header.id == 77 && garbled.question == nil)
        #expect(server.dns.pool.count == 0)
    }

    @Test func responsesAndRuntsAreDropped() throws {
        let server = Server()
        #expect(server.action(query("a.test", .a, flags: 0x8180)) == .drop)
        #expect(server.action(Array(query("a.test", .a).prefix(11))) == .drop)
        #expect(server.action([]) == .drop)
        #expect(server.action(query("a.test", .a), limit: 11) == .drop)
        // Room for the header but not the question: nothing sent, and no address spent.
        #expect(server.action(query("a.test", .a), limit: 23) == .drop)
        #expect(server.dns.pool.count == 0)
        // Room for the question alone: TC, and the address is kept for the retry over TCP.
        #expect(try server.ask(query("a.test", .a), limit: 24).header.truncated)
        #expect(try server.ask(query("a.test", .a), limit: 4096).answers == ["a.test. A 198.18.0.3 ttl 1"])
    }

    @Test func oversizedAnswersAreTruncatedToTheQuestion() throws {
        let many = (1 ... 40).map { "fd00::\($0)" }.joined(separator: ", ")
        let server = Server(FakeDNSConfiguration(hosts: hosts([("big.test", many)])))
        let udp = try server.ask(query("big.test", .aaaa))
        #expect(udp.header.truncated && udp.rcode == .noError)
        #expect(udp.answers.isEmpty && udp.question == "AAAA? big.test.")
        let tcp = try server.ask(query("big.test", .aaaa), limit: 4096)
        #expect(!tcp.header.truncated && tcp.answers.count == 40 && tcp.length > 512)
        // A limit that leaves room for some answers still sends none: all or the question.
        let tight = try server.ask(query("big.test", .aaaa), limit: 100)
        #expect(tight.header.truncated && tight.answers.isEmpty && tight.length <= 100)
        // The longest name still fits in 512 with its fake answer.
        let label = String(repeating: "a", count: 63)
        let longest = [label, label, label, String(repeating: "b", count: 61)].joined(separator: ".")
        #expect(try server.ask(query(longest, .any)).answers.count == 2)
    }

    @Test func sameQueriesSameBytes() throws {
        func run() throws -> [[UInt8]] {
            let server = Server(FakeDNSConfiguration(pool: tinyPool))
            return try (0 ..< 12).map { i in
                try server.ask(query("n\(i % 7).test", i % 3 == 0 ? .aaaa : .a, id: UInt16(i)), now: at(Int64(i))).bytes
            }
        }
        #expect(try run() == run())
    }

    // MARK: dns.pcap

    /// The queries of dns.pcap (dig through dnsmasq), taken out of their UDP datagrams.
    static func fixture() throws -> [[UInt8]] {
        let wireTests = String(#filePath.dropLast("StackTests/FakeDNSTests.swift".count)) + "WireTests/Here.swift"
        let fixture = try PcapFixture.named("dns.pcap", near: wireTests)
        return try fixture.packets.map { packet in
            try packet.bytes.withUnsafeBytes { raw in
                let ip = try IPPacketView(raw)
                try #require(ip.upperLayerProtocol == .udp)
                return Array(try UDPView(ip.payload).payload)
            }
        }
    }

    @Test func capturedQueriesGetFakeAnswers() throws {
        let messages = try Self.fixture()
        try #require(messages.count == 10)
        let server = Server()
        let a = try server.ask(messages[0])
        #expect(a.header.id == 61632 && a.answers == ["api.sluice.test. A 198.18.0.3 ttl 1"])
        #expect(try server.ask(messages[2], now: at(1)).answers == ["api.sluice.test. AAAA fd73:6c75:6963::3 ttl 1"])
        #expect(try server.ask(messages[4], now: at(2)).answers == ["alias.sluice.test. A 198.18.0.4 ttl 1"])
        #expect(server.action(messages[6], now: at(3)) == .forward)
        #expect(try server.ask(messages[8], now: at(4)).answers == ["www.sluice.test. A 198.18.0.5 ttl 1"])
        // dnsmasq's responses are responses: never answered.
        for i in stride(from: 1, to: 10, by: 2) { #expect(server.action(messages[i]) == .drop) }
    }

    /// With dnsmasq's data as [Host] lines, the answers are dnsmasq's.
    @Test func capturedQueriesAnsweredFromHostsMatchDnsmasq() throws {
        let messages = try Self.fixture()
        try #require(messages.count == 10)
        let table = hosts([
            ("api.sluice.test", "10.99.1.81, fd00:99:1::81"),
            ("alias.sluice.test", "api.sluice.test"),
            ("*.sluice.test", "10.99.1.80"),
        ])
        let server = Server(FakeDNSConfiguration(hosts: table))
        for i in [0, 2, 4, 8] {
            let ours = try server.ask(messages[i])
            let theirs = try messages[i + 1].withUnsafeBytes { raw in
                try DNSMessageView(raw).answers.map { "\($0.name) \($0)" }
            }
            #expect(ours.answers.map { String($0.split(separator: " ").dropLast(2).joined(separator: " ")) } == theirs,
                    "query \(i)")
        }
        #expect(server.dns.pool.count == 0)
    }

    @Test func capturedQueriesInForwardModeAreForwarded() throws {
        let server = Server(FakeDNSConfiguration(mode: .forward))
        for (i, message) in try Self.fixture().enumerated() {
            #expect(server.action(message) == (i % 2 == 0 ? .forward : .drop), "packet \(i)")
        }
    }
}
