import Testing
@testable import HTTP
import TestSupport

/// The sniffer on Initial packets cut the ways real clients cut them: a
/// ClientHello over several datagrams, CRYPTO frames split and shuffled,
/// packets coalesced, retransmitted pieces, and datagrams that are not QUIC.
/// (QUICInitialTests holds the RFCs' published packets.)
@Suite struct QUICClientHelloSnifferTests {
    let dcid: [UInt8] = [0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08]

    func feed(_ datagrams: [[UInt8]], into sniffer: inout QUICClientHelloSniffer) -> [SniffResult] {
        datagrams.map { datagram in datagram.withUnsafeBytes { sniffer.feed($0) } }
    }

    func datagram(_ frames: [UInt8], packetNumber: UInt32 = 0, version: QUICInitial.Version = .v1) -> [UInt8] {
        QUICInitialBuilder.datagram(version: version, destinationConnectionID: dcid, packetNumber: packetNumber, frames: frames)
    }

    @Test func aHelloInOneDatagramNamesTheServer() {
        let hello = QUICInitialBuilder.clientHello(serverName: "Quic.Test", protocols: ["h3", "h3-29"])
        var sniffer = QUICClientHelloSniffer()
        #expect(feed([datagram(QUICInitialBuilder.cryptoFrame(offset: 0, hello))], into: &sniffer) == [.serverName("quic.test")])
        #expect(sniffer.applicationProtocols == ["h3", "h3-29"])
    }

    @Test(arguments: [QUICInitial.Version.v1, .v2])
    func bothVersionsOpen(version: QUICInitial.Version) {
        let hello = QUICInitialBuilder.clientHello(serverName: "v.test")
        var sniffer = QUICClientHelloSniffer()
        #expect(feed([datagram(QUICInitialBuilder.cryptoFrame(offset: 0, hello), version: version)], into: &sniffer) == [.serverName("v.test")])
    }

    /// A post-quantum key share makes the hello about 1,800 bytes: two datagrams.
    @Test func aHelloAcrossTwoDatagramsWaitsForTheSecond() {
        let hello = QUICInitialBuilder.clientHello(serverName: "big.test", extraBytes: 1600)
        let cut = 1000
        var sniffer = QUICClientHelloSniffer()
        let results = feed([
            datagram(QUICInitialBuilder.cryptoFrame(offset: 0, Array(hello[..<cut])), packetNumber: 0),
            datagram(QUICInitialBuilder.cryptoFrame(offset: cut, Array(hello[cut...])), packetNumber: 1),
        ], into: &sniffer)
        #expect(results == [.needMore, .serverName("big.test")])
    }

    /// The second datagram may arrive first (the network reorders); the
    /// first still opens the flow's sniffing, and pieces go back by offset.
    @Test func piecesArrivingOutOfOrderAreReassembled() {
        let hello = QUICInitialBuilder.clientHello(serverName: "big.test", extraBytes: 1600)
        var sniffer = QUICClientHelloSniffer()
        let results = feed([
            datagram(QUICInitialBuilder.cryptoFrame(offset: 1200, Array(hello[1200...])), packetNumber: 1),
            datagram(QUICInitialBuilder.cryptoFrame(offset: 0, Array(hello[..<1200])), packetNumber: 0),
        ], into: &sniffer)
        #expect(results == [.needMore, .serverName("big.test")])
    }

    /// Chrome's habit: the hello in many small CRYPTO frames, shuffled, with
    /// PING and PADDING between them, and some bytes sent twice.
    @Test func shuffledOverlappingFramesWithPingsAndPadding() {
        let hello = QUICInitialBuilder.clientHello(serverName: "chrome.test", extraBytes: 300)
        var pieces: [[UInt8]] = []
        var offset = 0
        while offset < hello.count {
            let end = min(offset + 97, hello.count)
            // Each piece starts 10 bytes early: overlapping, as a retransmission would be.
            let start = max(0, offset - 10)
            pieces.append(QUICInitialBuilder.cryptoFrame(offset: start, Array(hello[start ..< end])))
            offset = end
        }
        var frames: [UInt8] = []
        for (i, piece) in pieces.reversed().enumerated() {
            frames += piece + (i % 2 == 0 ? [0x01] : [0x00, 0x00, 0x00])
        }
        var sniffer = QUICClientHelloSniffer()
        #expect(feed([datagram(frames)], into: &sniffer) == [.serverName("chrome.test")])
    }

    /// An ACK frame (a client that heard a server Initial already) and coalesced packets.
    @Test func acksAndCoalescedPacketsAreRead() {
        let hello = QUICInitialBuilder.clientHello(serverName: "co.test", extraBytes: 700)
        // ACK: largest 0, delay 0, 1 more range (gap 0, length 0), first range 0; then an ECN ACK with counts.
        let acks: [UInt8] = [0x02, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x05, 0x06, 0x07]
        let first = QUICInitialBuilder.datagram(destinationConnectionID: dcid, packetNumber: 0,
                                                frames: acks + QUICInitialBuilder.cryptoFrame(offset: 0, Array(hello[..<500])), size: 600)
        let second = QUICInitialBuilder.datagram(destinationConnectionID: dcid, packetNumber: 1,
                                                 frames: QUICInitialBuilder.cryptoFrame(offset: 500, Array(hello[500...])), size: 900)
        var sniffer = QUICClientHelloSniffer()
        #expect(feed([first + second], into: &sniffer) == [.serverName("co.test")])
    }

    @Test func aHelloWithoutServerNameIsSaidSo() {
        var hello = QUICInitialBuilder.clientHello(serverName: "x.test")
        // Turn the server_name extension (type 0) into an unknown one (0x7a7a).
        let body = 4 + 2 + 32 + 1 + 4 + 2 + 2
        hello[body] = 0x7a
        hello[body + 1] = 0x7a
        var sniffer = QUICClientHelloSniffer()
        #expect(feed([datagram(QUICInitialBuilder.cryptoFrame(offset: 0, hello))], into: &sniffer) == [.noServerName])
    }

    @Test func notQUICAtFirstIsFinal() {
        var sniffer = QUICClientHelloSniffer()
        let hello = QUICInitialBuilder.clientHello(serverName: "late.test")
        let results = feed([[UInt8](repeating: 0xc0, count: 1200), datagram(QUICInitialBuilder.cryptoFrame(offset: 0, hello))], into: &sniffer)
        #expect(results == [.notTLS, .notTLS])
    }

    /// After a good first datagram, one that does not open (0-RTT, short
    /// header, a stray) adds nothing and takes nothing away.
    @Test func laterDatagramsThatDoNotOpenAreSkipped() {
        let hello = QUICInitialBuilder.clientHello(serverName: "big.test", extraBytes: 1600)
        var sniffer = QUICClientHelloSniffer()
        let results = feed([
            datagram(QUICInitialBuilder.cryptoFrame(offset: 0, Array(hello[..<1000]))),
            [0x40] + [UInt8](repeating: 7, count: 60),
            datagram(QUICInitialBuilder.cryptoFrame(offset: 1000, Array(hello[1000...])), packetNumber: 1),
        ], into: &sniffer)
        #expect(results == [.needMore, .needMore, .serverName("big.test")])
    }

    /// A STREAM frame has no place in an Initial packet (RFC 9000 §12.4).
    @Test func aFrameAnInitialMayNotCarryEndsIt() {
        let hello = QUICInitialBuilder.clientHello(serverName: "x.test")
        var sniffer = QUICClientHelloSniffer()
        #expect(feed([datagram([0x08, 0x00, 0x01, 0x41] + QUICInitialBuilder.cryptoFrame(offset: 0, hello))], into: &sniffer) == [.notTLS])
    }

    /// The first handshake message must be a ClientHello.
    @Test func aServerHelloIsNotAClientHello() {
        var hello = QUICInitialBuilder.clientHello(serverName: "x.test")
        hello[0] = 2
        var sniffer = QUICClientHelloSniffer()
        #expect(feed([datagram(QUICInitialBuilder.cryptoFrame(offset: 0, hello))], into: &sniffer) == [.notTLS])
    }

    /// A hello longer than the limit is given up on as soon as its length is read.
    @Test func aHelloOverTheLimitHasNoName() {
        let hello = QUICInitialBuilder.clientHello(serverName: "huge.test", extraBytes: 3000)
        var sniffer = QUICClientHelloSniffer(limit: 2048)
        #expect(feed([datagram(QUICInitialBuilder.cryptoFrame(offset: 0, Array(hello[..<900])))], into: &sniffer) == [.noServerName])
    }

    /// Offsets far past the limit (a hostile client) are ignored, not allocated.
    @Test func farOffsetsAreIgnored() {
        var sniffer = QUICClientHelloSniffer()
        let results = feed([datagram(QUICInitialBuilder.cryptoFrame(offset: 0x3fff_0000, [1, 2, 3]))], into: &sniffer)
        #expect(results == [.needMore])
    }

    @Test func theCheapTestLooksAtTheHeaderOnly() {
        let good = datagram(QUICInitialBuilder.cryptoFrame(offset: 0, QUICInitialBuilder.clientHello(serverName: "x.test")))
        #expect(good.withUnsafeBytes { QUICClientHelloSniffer.mayStart($0) })
        #expect(!Array(good[..<1199]).withUnsafeBytes { QUICClientHelloSniffer.mayStart($0) })
        var handshake = good
        handshake[0] = handshake[0] & 0xcf | 0x20 // long header type 2: Handshake
        #expect(!handshake.withUnsafeBytes { QUICClientHelloSniffer.mayStart($0) })
        var unknownVersion = good
        unknownVersion[4] = 0x02
        #expect(!unknownVersion.withUnsafeBytes { QUICClientHelloSniffer.mayStart($0) })
        let v2 = datagram(QUICInitialBuilder.cryptoFrame(offset: 0, QUICInitialBuilder.clientHello(serverName: "x.test")), version: .v2)
        #expect(v2.withUnsafeBytes { QUICClientHelloSniffer.mayStart($0) })
    }

    /// Whatever the bytes after a valid header, nothing traps: each byte of
    /// a good datagram flipped in turn, and every truncation.
    @Test func flippedBytesAndTruncationsNeverTrapAndNeverName() {
        let good = datagram(QUICInitialBuilder.cryptoFrame(offset: 0, QUICInitialBuilder.clientHello(serverName: "x.test")))
        for i in stride(from: 0, to: good.count, by: 7) {
            var bad = good
            bad[i] ^= 0x10
            var sniffer = QUICClientHelloSniffer()
            let result = bad.withUnsafeBytes { sniffer.feed($0) }
            // Any flip breaks the header check, the keys (the connection ID), the tag or the header it covers.
            #expect(result != .serverName("x.test"), "byte \(i)")
        }
        for length in stride(from: 0, to: good.count, by: 13) {
            var sniffer = QUICClientHelloSniffer()
            let result = Array(good[..<length]).withUnsafeBytes { sniffer.feed($0) }
            #expect(result == .notTLS, "length \(length)")
        }
    }
}
