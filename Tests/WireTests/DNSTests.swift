import Testing
import TestSupport
import Wire

// MARK: Hand-made messages

/// An uncompressed wire name.
private func wireName(_ dotted: String) -> [UInt8] {
    var out: [UInt8] = []
    for label in dotted.split(separator: ".") {
        out.append(UInt8(label.utf8.count))
        out += Array(label.utf8)
    }
    return out + [0]
}

/// A name the test knows to be valid.
private func dnsName(_ dotted: String) -> DNSName { DNSName(dotted)! }

private func u16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xff)] }
private func u32(_ v: UInt32) -> [UInt8] { u16(UInt16(v >> 16)) + u16(UInt16(v & 0xffff)) }

/// A header: id, flag bytes and the four counts.
private func dnsHeader(id: UInt16 = 40000, flags: UInt16 = 0x0100, qd: UInt16 = 1, an: UInt16 = 0,
                       ns: UInt16 = 0, ar: UInt16 = 0) -> [UInt8] {
    u16(id) + u16(flags) + u16(qd) + u16(an) + u16(ns) + u16(ar)
}

private func record(_ owner: [UInt8], type: UInt16, ttl: UInt32 = 60, rdata: [UInt8]) -> [UInt8] {
    owner + u16(type) + u16(1) + u32(ttl) + u16(UInt16(rdata.count)) + rdata
}

/// The dig query of dns.pcap: `61632+ [1au] A? api.sluice.test. (56)`.
private let digQuery: [UInt8] = dnsHeader(id: 61632, flags: 0x0120, ar: 1) + wireName("api.sluice.test") + u16(1) + u16(1)
    + [0, 0x00, 0x29, 0x04, 0xd0, 0, 0, 0, 0, 0, 0x0c, 0, 0x0a, 0, 0x08, 0xd7, 0xdc, 0xfd, 0x45, 0x2c, 0x8e, 0xaa, 0x51]

/// dnsmasq's answer to it: `61632* 1/0/1 A 10.99.1.81 (60)`, the owner a pointer to 12.
private let dnsmasqAnswer: [UInt8] = dnsHeader(id: 61632, flags: 0x8580, an: 1, ar: 1) + wireName("api.sluice.test")
    + u16(1) + u16(1) + record([0xc0, 0x0c], type: 1, ttl: 0, rdata: [10, 99, 1, 81])
    + [0, 0x00, 0x29, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]

/// A response with a CNAME whose target is compressed into the question name,
/// then an A record owned by a pointer into the CNAME's RDATA.
private let cnameAnswer: [UInt8] = {
    let question = dnsHeader(id: 7, flags: 0x8580, an: 2) + wireName("alias.sluice.test") + u16(1) + u16(1)
    // "sluice.test" starts at 12 + 6 = 18; the CNAME RDATA at 31 + 4 + 2 + 10 = 47.
    let cname = record([0xc0, 0x0c], type: 5, rdata: [3] + Array("api".utf8) + [0xc0, 18])
    let a = record([0xc0, 47], type: 1, rdata: [10, 99, 1, 81])
    return question + cname + a
}()

private func parseError(_ bytes: [UInt8]) -> WireError? {
    bytes.withUnsafeBytes { raw in
        do throws(WireError) { _ = try DNSMessageView(raw); return nil } catch { return error }
    }
}

private func withMessage<R>(_ bytes: [UInt8], _ body: (DNSMessageView) throws -> R) throws -> R {
    try bytes.withUnsafeBytes { raw in try body(try DNSMessageView(raw)) }
}

private let malformedPointer = WireError.malformed(layer: .dns, reason: .pointer)
private let loop = WireError.malformed(layer: .dns, reason: .compressionLoop)

@Suite struct DNSTests {
    @Test func parsesAQuery() throws {
        try withMessage(digQuery) { m in
            #expect(m.header == DNSHeader(id: 61632, recursionDesired: true, authenticData: true, questionCount: 1,
                                          additionalCount: 1))
            #expect(m.length == 56)
            let questions = Array(m.questions)
            #expect(questions.count == 1)
            #expect(questions[0].type == .a)
            #expect(questions[0].class == .internet)
            #expect(questions[0].name.matches("api.sluice.test"))
            #expect(questions[0].description == "A? api.sluice.test.")
            let opt = Array(m.additionals)
            #expect(opt.count == 1)
            #expect(opt[0].type == .opt)
            #expect(opt[0].name.isRoot)
            #expect(opt[0].class.rawValue == 1232)
            #expect(opt[0].rdata.count == 12)
            #expect(m.description == "61632+ [1au] A? api.sluice.test. (56)")
        }
    }

    @Test func parsesAResponseWithACompressedOwner() throws {
        try withMessage(dnsmasqAnswer) { m in
            #expect(m.header.isResponse && m.header.authoritativeAnswer && m.header.recursionAvailable)
            let answers = Array(m.answers)
            #expect(answers.count == 1)
            #expect(answers[0].name.offset == 33)
            #expect(answers[0].name.matches("API.Sluice.TEST."))
            #expect(answers[0].name.description == "api.sluice.test.")
            #expect(answers[0].timeToLive == 0)
            guard case let .a(address) = answers[0].data else { Issue.record("not an A record"); return }
            #expect(address == IPv4Address(10, 99, 1, 81))
            #expect(m.description == "61632* 1/0/1 A 10.99.1.81 (60)")
        }
    }

    @Test func followsPointersIntoRdata() throws {
        try withMessage(cnameAnswer) { m in
            let answers = Array(m.answers)
            guard case let .cname(target) = answers[0].data else { Issue.record("not a CNAME"); return }
            #expect(target.matches("api.sluice.test"))
            #expect(target.wireLength == 17)
            #expect(answers[1].name.matches(target))
            #expect(answers[1].name.matches("api.sluice.test"))
            #expect(!answers[1].name.matches(answers[0].name))
            #expect(m.description == "7* 2/0/0 CNAME api.sluice.test., A 10.99.1.81 (\(cnameAnswer.count))")
        }
    }

    @Test func everyTruncationThrows() {
        for message in [digQuery, dnsmasqAnswer, cnameAnswer] {
            #expect(parseError(message) == nil)
            for length in 0 ..< message.count {
                let error = parseError(Array(message[..<length]))
                guard case let .truncated(layer, needed, available)? = error else {
                    Issue.record("length \(length): \(String(describing: error))")
                    continue
                }
                #expect(layer == .dns)
                #expect(available == length)
                #expect(needed > length && needed <= message.count, "length \(length)")
            }
        }
    }

    @Test func countsLargerThanTheMessageAreTruncated() {
        // Two questions announced, one present.
        #expect(parseError(dnsHeader(qd: 2) + wireName("a.test") + u16(1) + u16(1))
            == .truncated(layer: .dns, needed: 25, available: 24))
        #expect(parseError(dnsHeader(qd: 0, an: 0xffff)) == .truncated(layer: .dns, needed: 13, available: 12))
    }

    @Test func labelOver63IsMalformed() {
        for lengthOctet: UInt8 in [0x40, 0x7f, 0x80, 0xbf] {
            let bytes = dnsHeader() + [lengthOctet] + [UInt8](repeating: 0x61, count: 70) + [0] + u16(1) + u16(1)
            #expect(parseError(bytes) == .malformed(layer: .dns, reason: .labelLength), "octet \(lengthOctet)")
        }
        let longest = String(repeating: "a", count: 63) + ".test"
        #expect(parseError(dnsHeader() + wireName(longest) + u16(1) + u16(1)) == nil)
    }

    @Test func nameOver255IsMalformed() {
        let label = String(repeating: "x", count: 63)
        // 3 × 64 + 62 + 1 = 255: the longest legal name.
        let longest = [label, label, label, String(repeating: "y", count: 61)].joined(separator: ".")
        #expect(wireName(longest).count == 255)
        #expect(parseError(dnsHeader() + wireName(longest) + u16(1) + u16(1)) == nil)
        let tooLong = [label, label, label, String(repeating: "y", count: 62)].joined(separator: ".")
        #expect(parseError(dnsHeader() + wireName(tooLong) + u16(1) + u16(1))
            == .malformed(layer: .dns, reason: .nameLength))
        // Length counts across pointers: 200 bytes at the question, 60 more in front of a pointer to it.
        let first = [label, label, label, String(repeating: "z", count: 7)].joined(separator: ".")
        let second = wireName(String(repeating: "w", count: 59)).dropLast() + [0xc0, 12]
        let bytes = dnsHeader(an: 1) + wireName(first) + u16(1) + u16(1) + record(Array(second), type: 1, rdata: [1, 2, 3, 4])
        #expect(parseError(bytes) == .malformed(layer: .dns, reason: .nameLength))
    }

    @Test func selfPointerIsALoop() {
        #expect(parseError(dnsHeader() + [0xc0, 12] + u16(1) + u16(1)) == loop)
    }

    @Test func pointerBackToItsOwnNameIsALoop() {
        // "a" then a pointer back to the "a": each pass adds a label forever.
        #expect(parseError(dnsHeader() + [1, 0x61, 0xc0, 12] + u16(1) + u16(1)) == loop)
    }

    @Test func twoPointerCycleIsALoop() {
        // Question at 12 points to 14, which points back to 12.
        #expect(parseError(dnsHeader() + [0xc0, 14, 0xc0, 12] + u16(1) + u16(1)) == loop)
        // An answer's owner pointing past itself, into its own fixed fields.
        let bytes = dnsHeader(an: 1) + wireName("a") + u16(1) + u16(1)
            + record([0xc0, 12 + 3 + 4 + 2], type: 1, rdata: [1, 2, 3, 4])
        #expect(parseError(bytes) == loop)
    }

    @Test func forwardPointerIsRefused() {
        // The question points at a name that comes later in the message.
        let bytes = dnsHeader(an: 1) + [0xc0, 18] + u16(1) + u16(1) + wireName("b") + u16(1) + u16(1) + u32(0) + u16(4) + [1, 2, 3, 4]
        #expect(parseError(bytes) == loop)
    }

    @Test func pointerPastTheEndIsRefused() {
        #expect(parseError(dnsHeader() + [0xff, 0xff] + u16(1) + u16(1)) == malformedPointer)
        #expect(parseError(dnsHeader() + [0xc0, 18] + u16(1) + u16(1)) == malformedPointer)
        // A pointer cut in half is truncation instead.
        #expect(parseError(dnsHeader() + [0xc0]) == .truncated(layer: .dns, needed: 14, available: 13))
    }

    @Test func rdataLengthsAreChecked() {
        let q = dnsHeader(flags: 0x8180, an: 1) + wireName("x.test") + u16(1) + u16(1)
        #expect(parseError(q + record([0xc0, 12], type: 1, rdata: [1, 2, 3])) == .malformed(layer: .dns, reason: .rdataLength))
        #expect(parseError(q + record([0xc0, 12], type: 28, rdata: [UInt8](repeating: 0, count: 4)))
            == .malformed(layer: .dns, reason: .rdataLength))
        // A CNAME whose name stops before RDATA ends, or whose RDATA is empty.
        #expect(parseError(q + record([0xc0, 12], type: 5, rdata: [0xc0, 12, 0]))
            == .malformed(layer: .dns, reason: .rdataLength))
        #expect(parseError(q + record([0xc0, 12], type: 12, rdata: [])) == .malformed(layer: .dns, reason: .rdataLength))
        // A PTR name running past RDATA into what follows.
        let spill = q + [0xc0, 12] + u16(12) + u16(1) + u32(0) + u16(2) + [1, 0x61, 0]
        #expect(parseError(spill) == .malformed(layer: .dns, reason: .rdataLength))
        // RDATA past the end.
        #expect(parseError(q + [0xc0, 12] + u16(1) + u16(1) + u32(0) + u16(4) + [1, 2])
            == .truncated(layer: .dns, needed: 40, available: 38))
        // Unknown types keep any length; A in another class is not checked as IN's A.
        #expect(parseError(q + record([0xc0, 12], type: 99, rdata: [1, 2, 3])) == nil)
        let chaosA = q + [0xc0, 12] + u16(1) + u16(3) + u32(0) + u16(3) + [1, 2, 3]
        #expect(parseError(chaosA) == nil)
    }

    @Test func parsesFromTheMiddleOfALargerBuffer() throws {
        let big = poisonedBytes(29) + cnameAnswer + poisonedBytes(17)
        try big.withUnsafeBytes { raw in
            let m = try DNSMessageView(raw.sub(29, cnameAnswer.count))
            #expect(m.description == "7* 2/0/0 CNAME api.sluice.test., A 10.99.1.81 (\(cnameAnswer.count))")
            // Trailing bytes are not part of the message but do not hurt it.
            let longer = try DNSMessageView(raw.sub(29, cnameAnswer.count + 17))
            #expect(longer.length == cnameAnswer.count)
            #expect(Array(longer.answers).count == 2)
        }
    }

    @Test func nameMatchingIsCaseInsensitiveAndExact() throws {
        try withMessage(dnsmasqAnswer) { m in
            let name = m.question!.name
            for yes in ["api.sluice.test", "api.sluice.test.", "API.SLUICE.TEST", "Api.Sluice.Test."] {
                #expect(name.matches(yes), "\(yes)")
            }
            for no in ["api.sluice", "sluice.test", "api.sluice.test.x", "api.sluice.tes", "api.sluice..test",
                       "api.sluice.test..", ".api.sluice.test", "", ".", "apisluice.test", "api.sluice.tesu"] {
                #expect(!name.matches(no), "\(no)")
            }
            let root = Array(m.additionals)[0].name
            #expect(root.matches("") && root.matches("."))
            #expect(!root.matches("a"))
            #expect(root.description == ".")
        }
    }

    @Test func namesWithOddBytesPrintEscaped() throws {
        let bytes = dnsHeader() + [3, 0x61, 0x2e, 0x01, 4] + Array("TeSt".utf8) + [0] + u16(1) + u16(1)
        try withMessage(bytes) { m in
            let name = m.question!.name
            #expect(name.description == "a\\.\\001.TeSt.")
            #expect(!name.matches("a..test"))
            #expect(DNSName(name).description == "a\\.\\001.TeSt.")
        }
    }

    @Test func dnsNameValues() throws {
        let name = try #require(DNSName("WWW.Example.Test."))
        #expect(name.description == "WWW.Example.Test.")
        #expect(name == DNSName("www.example.test"))
        #expect(name.hashValue == DNSName("www.example.test")!.hashValue)
        #expect(name.labelCount == 3)
        #expect(name.wire == wireName("WWW.Example.Test"))
        #expect(DNSName("") == DNSName.root && DNSName(".") == DNSName.root)
        #expect(DNSName.root.description == ".")
        #expect(DNSName.root.labelCount == 0)
        for bad in ["a..b", ".a", "a.b..", String(repeating: "a", count: 64) + ".test"] {
            #expect(DNSName(bad) == nil, "\(bad)")
        }
        let label = String(repeating: "x", count: 63)
        #expect(DNSName([label, label, label, String(repeating: "y", count: 61)].joined(separator: ".")) != nil)
        #expect(DNSName([label, label, label, String(repeating: "y", count: 62)].joined(separator: ".")) == nil)
        try withMessage(cnameAnswer) { m in
            let answers = Array(m.answers)
            #expect(DNSName(answers[1].name) == dnsName("api.sluice.test"))
            #expect(DNSName("API.sluice.test")!.matches(answers[1].name))
            #expect(!DNSName("alias.sluice.test")!.matches(answers[1].name))
        }
    }

    @Test func otherClassesAndTypesPrintLikeTcpdump() throws {
        let chaos = dnsHeader(id: 5, flags: 0) + wireName("version.bind") + u16(16) + u16(3)
        try withMessage(chaos) { m in #expect(m.description == "5 TXT CHAOS? version.bind. (30)") }
        let odd = dnsHeader(id: 6, flags: 0x8180, an: 1) + wireName("x") + u16(99) + u16(1)
            + record([0xc0, 12], type: 99, rdata: [1, 2, 3])
        try withMessage(odd) { m in
            #expect(m.description == "6 1/0/0 Type99 [3 bytes] (34)")
            #expect(m.question?.description == "Type99? x.")
            guard case let .other(rdata)? = m.answers.first(where: { _ in true })?.data else { Issue.record("\(m)"); return }
            #expect(Array(rdata) == [1, 2, 3])
        }
    }

    @Test func headerRoundTripsEveryFlag() throws {
        let headers = [
            DNSHeader(id: 0, questionCount: 0),
            DNSHeader(id: 0xffff, isResponse: true, opcode: .update, authoritativeAnswer: true, truncated: true,
                      recursionDesired: true, recursionAvailable: true, authenticData: true, checkingDisabled: true,
                      responseCode: DNSResponseCode(rawValue: 15), questionCount: 0xffff, answerCount: 2,
                      authorityCount: 3, additionalCount: 0xfffe),
            DNSHeader(id: 1234, opcode: DNSOpcode(rawValue: 15), truncated: true, responseCode: .nameError),
        ]
        for h in headers {
            for poison: UInt8 in [0xaa, 0x55] {
                var buffer = poisonedBytes(16, poison)
                let n = try buffer.withUnsafeMutableBytes { raw in try h.emit(into: raw) }
                #expect(n == 12)
                #expect(buffer[12...].allSatisfy { $0 == poison })
                #expect(try buffer.withUnsafeBytes { raw in try DNSHeader.parse(raw) } == h)
            }
        }
        var buffer = poisonedBytes(12)
        let tooWide = DNSHeader(id: 1, responseCode: DNSResponseCode(rawValue: 16))
        #expect(throws: WireError.malformed(layer: .dns, reason: .fieldRange)) {
            try buffer.withUnsafeMutableBytes { raw in try tooWide.emit(into: raw) }
        }
        #expect(throws: WireError.malformed(layer: .dns, reason: .bufferTooSmall)) {
            var small = poisonedBytes(11)
            return try small.withUnsafeMutableBytes { raw in try DNSHeader(id: 1).emit(into: raw) }
        }
    }

    @Test func headerFlagsPrintLikeTcpdump() {
        #expect(DNSHeader(id: 40000, recursionDesired: true).flagText == "40000+")
        #expect(DNSHeader(id: 40000, recursionDesired: true, checkingDisabled: true).flagText == "40000+%")
        #expect(DNSHeader(id: 40000, opcode: .notify).flagText == "40000 notify")
        #expect(DNSHeader(id: 40000, isResponse: true, authoritativeAnswer: true, recursionAvailable: true).flagText == "40000*")
        #expect(DNSHeader(id: 40000, isResponse: true).flagText == "40000-")
        #expect(DNSHeader(id: 9, isResponse: true, truncated: true, recursionAvailable: true, authenticData: true,
                          responseCode: .nameError).flagText == "9 NXDomain|$")
        #expect(DNSHeader(id: 9, isResponse: true, recursionAvailable: true, responseCode: .refused, answerCount: 1).description
            == "9 Refused 0/1/0/0")
    }
}

// MARK: Writing

private func written(_ size: Int = 512, poison: UInt8 = 0xaa,
                     _ build: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> [UInt8] {
    var buffer = poisonedBytes(size, poison)
    let n = try buffer.withUnsafeMutableBytes { raw in try build(raw) }
    #expect(buffer[n...].allSatisfy { $0 == poison }, "wrote past the length it returned")
    return Array(buffer[..<n])
}

@Suite struct DNSWriterTests {
    @Test func buildsAQueryThatParsesBack() throws {
        for poison: UInt8 in [0xaa, 0x55, 0x00] {
            let bytes = try written(poison: poison) { raw in
                var w = try DNSMessageWriter(into: raw, header: DNSHeader(id: 40000, recursionDesired: true, answerCount: 9))
                try w.appendQuestion(dnsName("example.test"), type: .a)
                return w.length
            }
            #expect(bytes == dnsHeader() + wireName("example.test") + u16(1) + u16(1))
            try withMessage(bytes) { m in
                #expect(m.header == DNSHeader(id: 40000, recursionDesired: true, questionCount: 1))
                #expect(m.description == "40000+ A? example.test. (30)")
            }
        }
    }

    /// RFC 6891 §6.1.2: root name, type 41, the payload size as class, no flags, no data.
    @Test func appendsAnEDNSRecordAfterTheQuestion() throws {
        let bytes = try written(poison: 0xaa) { raw in
            var w = try DNSMessageWriter(into: raw, header: DNSHeader(id: 40000, recursionDesired: true))
            try w.appendQuestion(dnsName("example.test"), type: .a)
            try w.appendEDNS(payloadSize: 1232)
            return w.length
        }
        #expect(bytes == dnsHeader(ar: 1) + wireName("example.test") + u16(1) + u16(1) + [0] + u16(41) + u16(1232) + [0, 0, 0, 0] + u16(0))
        try withMessage(bytes) { m in
            #expect(m.header.additionalCount == 1)
            #expect(m.description == "40000+ [1au] A? example.test. (41)")
        }
    }

    @Test func respondsWithCompressedAnswers() throws {
        let query = dnsHeader() + wireName("Example.Test") + u16(1) + u16(1)
        for poison: UInt8 in [0xaa, 0x55] {
            let response = try query.withUnsafeBytes { q in
                let queryView = try DNSMessageView(q)
                return try written(poison: poison) { raw in
                    try DNSMessageWriter.respond(to: queryView, with: [.v4(IPv4Address(198, 18, 0, 1))],
                                                 timeToLive: 1, into: raw)
                }
            }
            #expect(response == dnsHeader(flags: 0x8580, an: 1) + wireName("Example.Test") + u16(1) + u16(1)
                + [0xc0, 0x0c] + u16(1) + u16(1) + u32(1) + u16(4) + [198, 18, 0, 1])
            try withMessage(response) { m in
                #expect(m.description == "40000* 1/0/0 A 198.18.0.1 (46)")
                #expect(m.question!.name.matches("example.test"))
                let answers = Array(m.answers)
                #expect(answers.count == 1)
                #expect(answers[0].name.matches("example.test"))
                #expect(answers[0].timeToLive == 1)
            }
        }
    }

    @Test func respondPicksTheAddressFamilyAsked() throws {
        let addresses: [IPAddress] = [.v4(IPv4Address(198, 18, 0, 1)), .v6(IPv6Address("fd00::1")!),
                                      .v4(IPv4Address(198, 18, 0, 2))]
        let expected: [(UInt16, String)] = [
            (1, "1* 2/0/0 A 198.18.0.1, A 198.18.0.2"),
            (28, "1* 1/0/0 AAAA fd00::1"),
            (255, "1* 3/0/0 A 198.18.0.1, AAAA fd00::1, A 198.18.0.2"),
            (65, "1* 0/0/0"),
        ]
        for (type, text) in expected {
            let query = dnsHeader(id: 1) + wireName("x.test") + u16(type) + u16(1)
            let response = try query.withUnsafeBytes { q in
                let queryView = try DNSMessageView(q)
                return try written { raw in try DNSMessageWriter.respond(to: queryView, with: addresses, timeToLive: 5, into: raw) }
            }
            try withMessage(response) { m in
                #expect(m.description == "\(text) (\(response.count))")
                #expect(m.question?.type == DNSType(rawValue: type))
            }
        }
    }

    @Test func responseCopiesIdOpcodeAndFlagsFromTheQuery() throws {
        let query = dnsHeader(id: 0xbeef, flags: 0x0110) + wireName("a.b") + u16(28) + u16(1) // RD and CD
        let response = try query.withUnsafeBytes { q in
            let queryView = try DNSMessageView(q)
            return try written { raw in
                let w = try DNSMessageWriter(respondingTo: queryView, into: raw, responseCode: .nameError, authoritative: false)
                return w.length
            }
        }
        try withMessage(response) { m in
            #expect(m.header == DNSHeader(id: 0xbeef, isResponse: true, recursionDesired: true, recursionAvailable: true,
                                          checkingDisabled: true, responseCode: .nameError, questionCount: 1))
            #expect(m.description == "48879 NXDomain 0/0/0 (21)")
        }
        let noQuestion = dnsHeader(qd: 0)
        #expect(throws: WireError.unsupported(layer: .dns, reason: .count)) {
            try noQuestion.withUnsafeBytes { q in
                let queryView = try DNSMessageView(q)
                _ = try written { raw in try DNSMessageWriter.respond(to: queryView, with: [] as [IPAddress], timeToLive: 0, into: raw) }
            }
        }
    }

    @Test func cnameTargetsShareTheQuestionsSuffix() throws {
        let bytes = try written { raw in
            var w = try DNSMessageWriter(into: raw, header: DNSHeader(id: 7, isResponse: true, authoritativeAnswer: true,
                                                                      recursionDesired: true, recursionAvailable: true))
            try w.appendQuestion(dnsName("alias.sluice.test"), type: .a)
            try w.appendAnswer(.cname(dnsName("api.sluice.test")), timeToLive: 60)
            try w.appendAnswer(name: dnsName("api.sluice.test"), .a(IPv4Address(10, 99, 1, 81)), timeToLive: 60)
            try w.appendAnswer(name: dnsName("ALIAS.sluice.test"), .aaaa(IPv6Address("fd00:99:1::81")!), timeToLive: 60)
            try w.appendAnswer(name: dnsName("other.example"), .ptr(dnsName("sluice.test")), timeToLive: 60)
            return w.length
        }
        let q = dnsHeader(id: 7, flags: 0x8580, an: 4) + wireName("alias.sluice.test") + u16(1) + u16(1)
        let apiName: [UInt8] = [3] + Array("api".utf8) + [0xc0, 18]
        let expected = q
            + record([0xc0, 12], type: 5, rdata: apiName)
            + record(apiName, type: 1, rdata: [10, 99, 1, 81])
            + record([0xc0, 12], type: 28, rdata: [0xfd, 0, 0, 0x99, 0, 1] + [UInt8](repeating: 0, count: 9) + [0x81])
            + record(wireName("other.example"), type: 12, rdata: [0xc0, 18])
        #expect(bytes == expected)
        try withMessage(bytes) { m in
            #expect(m.description == "7* 4/0/0 CNAME api.sluice.test., A 10.99.1.81, AAAA fd00:99:1::81, PTR sluice.test. (\(bytes.count))")
            let names = m.answers.map { DNSName($0.name) }
            #expect(names == ["alias.sluice.test", "api.sluice.test", "alias.sluice.test", "other.example"].map(dnsName))
        }
    }

    @Test func everyTooSmallBufferIsRefused() throws {
        func build(_ raw: UnsafeMutableRawBufferPointer) throws -> Int {
            var w = try DNSMessageWriter(into: raw, header: DNSHeader(id: 1, isResponse: true))
            try w.appendQuestion(dnsName("www.example.test"), type: .aaaa)
            try w.appendAnswer(.cname(dnsName("cdn.example.test")), timeToLive: 1)
            try w.appendAnswer(name: dnsName("cdn.example.test"), .aaaa(IPv6Address("2001:db8::1")!), timeToLive: 1)
            return w.length
        }
        let full = try written { raw in try build(raw) }
        try withMessage(full) { m in #expect(Array(m.answers).count == 2) }
        for size in 0 ..< full.count {
            #expect(throws: WireError.malformed(layer: .dns, reason: .bufferTooSmall), "size \(size)") {
                _ = try written(size) { raw in try build(raw) }
            }
        }
    }

    @Test func sectionsMustComeInOrder() throws {
        var buffer = poisonedBytes(100)
        try buffer.withUnsafeMutableBytes { raw in
            var w = try DNSMessageWriter(into: raw, header: DNSHeader(id: 1, isResponse: true))
            #expect(throws: WireError.malformed(layer: .dns, reason: .count)) {
                try w.appendAnswer(.a(IPv4Address(1, 2, 3, 4)), timeToLive: 0)
            }
            try w.appendQuestion(dnsName("a.test"), type: .a)
            try w.appendAnswer(.a(IPv4Address(1, 2, 3, 4)), timeToLive: 0)
            #expect(throws: WireError.malformed(layer: .dns, reason: .count)) {
                try w.appendQuestion(dnsName("b.test"), type: .a)
            }
            #expect(w.header.questionCount == 1 && w.header.answerCount == 1)
            let m = try DNSMessageView(w.bytes)
            #expect(m.description == "1- 1/0/0 A 1.2.3.4 (\(w.length))")
        }
    }

    @Test func secondQuestionIsCompressedAgainstTheFirst() throws {
        let bytes = try written { raw in
            var w = try DNSMessageWriter(into: raw, header: DNSHeader(id: 2, recursionDesired: true))
            try w.appendQuestion(dnsName("www.example.test"), type: .a)
            try w.appendQuestion(dnsName("www.example.test"), type: .aaaa)
            try w.appendQuestion(dnsName("mail.example.test"), type: .mx)
            return w.length
        }
        let expected = dnsHeader(id: 2, qd: 3) + wireName("www.example.test") + u16(1) + u16(1)
            + [0xc0, 12] + u16(28) + u16(1)
            + [4] + Array("mail".utf8) + [0xc0, 16] + u16(15) + u16(1)
        #expect(bytes == expected)
        try withMessage(bytes) { m in
            #expect(m.description == "2+ [3q] A? www.example.test. AAAA? www.example.test. MX? mail.example.test. (\(bytes.count))")
        }
    }
}

// MARK: dns.pcap

/// dig asking dnsmasq for A, AAAA, a CNAME and a PTR over IPv4, then A over IPv6.
@Suite struct DNSFixtureTests {
    static let tcpdumpLines = [
        "61632+ [1au] A? api.sluice.test. (56)",
        "61632* 1/0/1 A 10.99.1.81 (60)",
        "30050+ [1au] AAAA? api.sluice.test. (56)",
        "30050* 1/0/1 AAAA fd00:99:1::81 (72)",
        "50477+ [1au] A? alias.sluice.test. (58)",
        "50477* 2/0/1 CNAME api.sluice.test., A 10.99.1.81 (91)",
        "48382+ [1au] PTR? 81.1.99.10.in-addr.arpa. (64)",
        "48382* 1/0/1 PTR api.sluice.test. (81)",
        "18659+ [1au] A? www.sluice.test. (56)",
        "18659* 1/0/1 A 10.99.1.80 (60)",
    ]

    static func messages() throws -> [[UInt8]] {
        let fixture = try PcapFixture.named("dns.pcap")
        return fixture.packets.compactMap { TransportFixture(datagram: $0.bytes) }.filter(\.isUDP).map(\.udpPayload)
    }

    @Test func everyMessageParsesAndPrintsLikeTcpdump() throws {
        let messages = try Self.messages()
        #expect(messages.count == Self.tcpdumpLines.count)
        for (message, line) in zip(messages, Self.tcpdumpLines) {
            try withMessage(message) { m in
                #expect(m.description == line)
                #expect(m.length == message.count)
            }
        }
    }

    @Test func answersDecode() throws {
        let messages = try Self.messages()
        try #require(messages.count == 10)
        try withMessage(messages[5]) { m in
            let answers = Array(m.answers)
            guard case let .cname(target) = answers[0].data, case let .a(address) = answers[1].data else {
                Issue.record("\(m)"); return
            }
            #expect(target.matches("api.sluice.test"))
            #expect(answers[1].name.matches(target), "owner is a pointer into the CNAME's RDATA")
            #expect(address == IPv4Address(10, 99, 1, 81))
        }
        try withMessage(messages[7]) { m in
            #expect(m.question!.name.matches("81.1.99.10.in-addr.arpa"))
            guard case let .ptr(target) = Array(m.answers)[0].data else { Issue.record("\(m)"); return }
            #expect(DNSName(target) == dnsName("api.sluice.test"))
        }
        try withMessage(messages[3]) { m in
            guard case let .aaaa(address) = Array(m.answers)[0].data else { Issue.record("\(m)"); return }
            #expect(address == IPv6Address("fd00:99:1::81"))
        }
    }

    @Test func everyTruncationOfEveryMessageThrows() throws {
        for message in try Self.messages() {
            for length in 0 ..< message.count {
                guard case .truncated? = parseError(Array(message[..<length])) else {
                    Issue.record("length \(length) of \(message.count) was not refused as truncated")
                    continue
                }
            }
        }
    }

    /// Our answer to dig's queries carries what dnsmasq's did (dnsmasq adds
    /// an OPT record, which we do not), with the same compressed owner name.
    @Test func ourResponsesMatchDnsmasqsAnswers() throws {
        let messages = try Self.messages()
        try #require(messages.count == 10)
        let cases: [(Int, [IPAddress])] = [
            (0, [.v4(IPv4Address(10, 99, 1, 81)), .v6(IPv6Address("fd00:99:1::81")!)]),
            (2, [.v4(IPv4Address(10, 99, 1, 81)), .v6(IPv6Address("fd00:99:1::81")!)]),
            (8, [.v4(IPv4Address(10, 99, 1, 80))]),
        ]
        for (index, addresses) in cases {
            let ours = try messages[index].withUnsafeBytes { q in
                let query = try DNSMessageView(q)
                return try written { raw in try DNSMessageWriter.respond(to: query, with: addresses, timeToLive: 0, into: raw) }
            }
            let theirs = messages[index + 1]
            // dnsmasq's message minus its 11-byte OPT record and with ARCOUNT 0.
            var expected = Array(theirs.dropLast(11))
            expected[11] = 0
            #expect(ours == expected, "response to query \(index)")
        }
    }
}
