import Testing
import HTTP

/// ClientHellos built by hand, for the cases openssl will not produce.
enum HelloBuilder {
    static func u16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    static func serverNameExtension(_ name: [UInt8], type: UInt8 = 0) -> [UInt8] {
        let entry = [type] + u16(name.count) + name
        let list = u16(entry.count) + entry
        return u16(0) + u16(list.count) + list
    }

    static func alpnExtension(_ protocols: [String]) -> [UInt8] {
        var list: [UInt8] = []
        for p in protocols { list += [UInt8(p.utf8.count)] + Array(p.utf8) }
        let body = u16(list.count) + list
        return u16(16) + u16(body.count) + body
    }

    /// The handshake message (type, 24-bit length, ClientHello body).
    static func handshake(extensions: [[UInt8]]?) -> [UInt8] {
        var body: [UInt8] = [0x03, 0x03] + [UInt8](repeating: 7, count: 32)
        body += [0]                      // session id
        body += u16(2) + [0x13, 0x01]   // one cipher suite
        body += [1, 0]                   // null compression
        if let extensions {
            let all = extensions.flatMap { $0 }
            body += u16(all.count) + all
        }
        return [1, UInt8(body.count >> 16), UInt8(body.count >> 8 & 0xFF), UInt8(body.count & 0xFF)] + body
    }

    /// The handshake bytes cut into TLS records of the given sizes (the last takes the rest).
    static func records(_ handshake: [UInt8], sizes: [Int] = []) -> [UInt8] {
        var out: [UInt8] = []
        var rest = handshake[...]
        var sizes = sizes[...]
        while !rest.isEmpty {
            let n = min(sizes.popFirst() ?? rest.count, rest.count)
            out += [0x16, 0x03, 0x01] + u16(n) + rest.prefix(n)
            rest = rest.dropFirst(n)
        }
        return out
    }

    /// The handshake message inside a one-record hello.
    static func handshakeOf(_ hello: [UInt8]) -> [UInt8] { Array(hello[5...]) }
}

@Suite struct SNISnifferTests {
    func sniff(_ bytes: [UInt8], _ split: Split) -> (SniffResult, TLSClientHelloSniffer, needMoreBeforeLast: Bool) {
        var sniffer = TLSClientHelloSniffer()
        var result = SniffResult.needMore
        var offset = 0
        var allNeedMore = true
        let pieces = split.pieces(bytes.count)
        for (k, piece) in pieces.enumerated() {
            result = bytes[offset ..< offset + piece].withUnsafeBytes { sniffer.feed($0) }
            offset += piece
            if k < pieces.count - 1 && result != .needMore { allNeedMore = false }
        }
        return (result, sniffer, allNeedMore)
    }

    @Test(arguments: Split.all)
    func opensslHelloWithSNIAndALPN(split: Split) {
        let (result, sniffer, waited) = sniff(ClientHelloFixtures.withSNIAndALPN, split)
        #expect(result == .serverName("a.test"))
        #expect(sniffer.applicationProtocols == ["h2", "http/1.1"])
        #expect(waited, "the answer comes with the hello's last byte, not before")
    }

    @Test(arguments: Split.all)
    func opensslHelloWithoutSNI(split: Split) {
        #expect(sniff(ClientHelloFixtures.withoutSNI, split).0 == .noServerName)
    }

    @Test(arguments: Split.all)
    func opensslTLS12HelloIsLowercased(split: Split) {
        #expect(sniff(ClientHelloFixtures.tls12MixedCaseSNI, split).0 == .serverName("www.example-host.test"))
    }

    @Test(arguments: [[1], [4], [3, 3], [1, 1, 1, 1, 1, 1, 1], [100], [40, 40, 40, 40]] as [[Int]])
    func helloSplitAcrossRecords(sizes: [Int]) {
        let hello = HelloBuilder.records(HelloBuilder.handshakeOf(ClientHelloFixtures.withSNIAndALPN), sizes: sizes)
        for split in Split.all {
            let (result, sniffer, waited) = sniff(hello, split)
            #expect(result == .serverName("a.test"), "\(split)")
            #expect(sniffer.applicationProtocols == ["h2", "http/1.1"])
            #expect(waited)
        }
    }

    @Test func resultIsSticky() {
        var sniffer = TLSClientHelloSniffer()
        #expect(ClientHelloFixtures.withSNIAndALPN.withUnsafeBytes { sniffer.feed($0) } == .serverName("a.test"))
        #expect(bytes("GET / HTTP/1.1").withUnsafeBytes { sniffer.feed($0) } == .serverName("a.test"))
    }

    @Test(arguments: [
        bytes("GET / HTTP/1.1\r\n"),
        [0x16, 0x02],
        [0x16, 0x03, 0x05],
        [0x16, 0x03, 0x01, 0x00, 0x00],             // empty record
        [0x16, 0x03, 0x01, 0x40, 0x01],             // record longer than 2^14
        [0x17, 0x03, 0x03, 0x00, 0x10],             // application data
        [0x16, 0x03, 0x01, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00], // ServerHello, not ClientHello
    ] as [[UInt8]])
    func notTLS(input: [UInt8]) {
        #expect(sniff(input, .whole).0 == .notTLS)
        #expect(sniff(input, .byteByByte).0 == .notTLS)
    }

    @Test func notTLSAtTheFirstByte() {
        var sniffer = TLSClientHelloSniffer()
        #expect(([UInt8(ascii: "G")] as [UInt8]).withUnsafeBytes { sniffer.feed($0) } == .notTLS)
    }

    @Test func malformedHelloBodiesAreNotTLS() {
        var broken = HelloBuilder.handshake(extensions: [HelloBuilder.serverNameExtension(bytes("a.test"))])
        // Extensions length one more than what follows.
        let extLengthOffset = 4 + 2 + 32 + 1 + 4 + 2
        broken[extLengthOffset + 1] += 1
        #expect(sniff(HelloBuilder.records(broken), .whole).0 == .notTLS)
        // A record type change in the middle of the hello.
        let full = HelloBuilder.records(HelloBuilder.handshakeOf(ClientHelloFixtures.withSNIAndALPN), sizes: [10])
        var switched = full
        switched[15] = 0x15
        #expect(sniff(switched, .whole).0 == .notTLS)
        // Two server_name extensions.
        let twice = HelloBuilder.handshake(extensions: [HelloBuilder.serverNameExtension(bytes("a.test")),
                                                        HelloBuilder.serverNameExtension(bytes("b.test"))])
        #expect(sniff(HelloBuilder.records(twice), .whole).0 == .notTLS)
    }

    @Test(arguments: ["a b.test", "a..test", ".a.test", "a.test.", "a/b", "ä.test", "", String(repeating: "a", count: 64) + ".test",
                      String(repeating: "abcdefgh.", count: 29) + "x"])
    func invalidNamesAreNoServerName(name: String) {
        let hello = HelloBuilder.handshake(extensions: [HelloBuilder.serverNameExtension(bytes(name))])
        #expect(sniff(HelloBuilder.records(hello), .byteByByte).0 == .noServerName)
    }

    @Test func validNamesAndNonHostNameEntries() {
        let name = String(repeating: "a", count: 63) + ".b_c-d.test"
        let hello = HelloBuilder.handshake(extensions: [HelloBuilder.alpnExtension(["http/1.1"]),
                                                        HelloBuilder.serverNameExtension(bytes(name))])
        #expect(sniff(HelloBuilder.records(hello), .whole).0 == .serverName(name))
        let otherType = HelloBuilder.handshake(extensions: [HelloBuilder.serverNameExtension(bytes("a.test"), type: 1)])
        #expect(sniff(HelloBuilder.records(otherType), .whole).0 == .noServerName)
        let noExtensions = HelloBuilder.handshake(extensions: nil)
        #expect(sniff(HelloBuilder.records(noExtensions), .whole).0 == .noServerName)
    }

    @Test func boundedAt16KiB() {
        // A hello that says it is 20000 bytes long: given up on at once.
        let huge: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x00, 0x4E, 0x20]
        #expect(sniff(huge, .byteByByte).0 == .noServerName)
        // A legal but padded hello larger than the limit, in many records.
        let padding = [UInt8](repeating: 0, count: 17000)
        let padded = HelloBuilder.handshake(extensions: [HelloBuilder.u16(21) + HelloBuilder.u16(padding.count) + padding,
                                                         HelloBuilder.serverNameExtension(bytes("a.test"))])
        let records = HelloBuilder.records(padded, sizes: Array(repeating: 1000, count: 20))
        #expect(sniff(records, .whole).0 == .noServerName)
        #expect(sniff(records, .random(seed: 5)).0 == .noServerName)
        // Under a larger limit the same hello is read.
        var roomy = TLSClientHelloSniffer(limit: 32 * 1024)
        #expect(records.withUnsafeBytes { roomy.feed($0) } == .serverName("a.test"))
    }

    @Test(arguments: [
        ("GET ", ProtocolGuess.http), ("POST /x", .http), ("M-SEARCH * HTTP/1.1", .http), ("GE", .needMore),
        ("", .needMore), ("get / HTTP/1.1", .other), (" GET", .other), ("SSH-2.0-OpenSSH_9", .other),
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZ ", .other), ("PRI * HTTP/2.0", .http),
    ])
    func protocolGuessText(input: String, expected: ProtocolGuess) {
        #expect(bytes(input).withUnsafeBytes { ProtocolGuess.guess($0) } == expected)
    }

    @Test func protocolGuessTLS() {
        #expect(ClientHelloFixtures.withoutSNI.withUnsafeBytes { ProtocolGuess.guess($0) } == .tls)
        #expect(([0x16] as [UInt8]).withUnsafeBytes { ProtocolGuess.guess($0) } == .needMore)
        #expect(([0x16, 0x03] as [UInt8]).withUnsafeBytes { ProtocolGuess.guess($0) } == .tls)
        #expect(([0x16, 0x01] as [UInt8]).withUnsafeBytes { ProtocolGuess.guess($0) } == .other)
        #expect(([0x00, 0x01] as [UInt8]).withUnsafeBytes { ProtocolGuess.guess($0) } == .other)
    }
}
