import Testing
@testable import HTTP
import TestSupport

private func hex(_ text: String) -> [UInt8] { QUICFixtures.hex(text) }

/// A datagram with a readable name, so a failing case does not print 1200 bytes.
struct NamedDatagram: Sendable, CustomStringConvertible {
    let name: String
    let bytes: [UInt8]
    var description: String { name }
}

/// The RFCs' published client Initials (RFC 9001 and RFC 9369, Appendix A),
/// what is not one, and header fields the samples leave fixed: a token,
/// connection IDs of any length, other sizes, another version's keys.
@Suite struct QUICInitialTests {
    func sniff(_ datagram: [UInt8]) -> SniffResult {
        var sniffer = QUICClientHelloSniffer()
        return datagram.withUnsafeBytes { sniffer.feed($0) }
    }

    func isClientInitial(_ datagram: [UInt8]) -> Bool {
        datagram.withUnsafeBytes { QUICInitial.isClientInitial($0) }
    }

    // MARK: The RFC samples

    @Test func rfc9001ClientInitialNamesExampleCom() {
        #expect(isClientInitial(QUICFixtures.rfc9001ClientInitial))
        #expect(sniff(QUICFixtures.rfc9001ClientInitial) == .serverName("example.com"))
    }

    @Test func rfc9369ClientInitialNamesExampleCom() {
        #expect(isClientInitial(QUICFixtures.rfc9369ClientInitial))
        #expect(sniff(QUICFixtures.rfc9369ClientInitial) == .serverName("example.com"))
    }

    // The server's Initials in RFC 9001 and RFC 9369 Appendix A.3 are 135
    // bytes: servers need not pad, so the 1200-byte floor alone rules them out.
    // The Appendix A.5 packets are 21-byte short headers.
    static let notClientInitials: [NamedDatagram] = {
        let v1 = QUICFixtures.rfc9001ClientInitial
        let v2 = QUICFixtures.rfc9369ClientInitial
        func changed(_ bytes: [UInt8], _ change: (inout [UInt8]) -> Void) -> [UInt8] {
            var copy = bytes
            change(&copy)
            return copy
        }
        func withVersion(_ bytes: [UInt8], _ version: String) -> [UInt8] {
            changed(bytes) { $0.replaceSubrange(1 ..< 5, with: hex(version)) }
        }
        return [
            NamedDatagram(name: "empty", bytes: []),
            NamedDatagram(name: "one byte", bytes: [0xC0]),
            NamedDatagram(name: "header only", bytes: Array(v1.prefix(22))),
            NamedDatagram(name: "short header", bytes: changed(v1) { $0[0] &= 0x7F }),
            NamedDatagram(name: "fixed bit clear", bytes: changed(v1) { $0[0] &= 0xBF }),
            NamedDatagram(name: "version 1 0-RTT type", bytes: changed(v1) { $0[0] |= 0x10 }),
            NamedDatagram(name: "version 1 Handshake type", bytes: changed(v1) { $0[0] |= 0x20 }),
            NamedDatagram(name: "version 2 Retry type", bytes: changed(v2) { $0[0] &= 0xCF }),
            NamedDatagram(name: "version 2 Handshake type", bytes: changed(v2) { $0[0] |= 0x30 }),
            // A v2 Initial's type bits mean 0-RTT under version 1, and a v1
            // Initial's mean Retry under version 2.
            NamedDatagram(name: "version 2 packet relabelled version 1", bytes: withVersion(v2, "00000001")),
            NamedDatagram(name: "version 1 packet relabelled version 2", bytes: withVersion(v1, "6b3343cf")),
            NamedDatagram(name: "draft-29 version", bytes: withVersion(v1, "ff00001d")),
            NamedDatagram(name: "version negotiation", bytes: withVersion(v1, "00000000")),
            NamedDatagram(name: "QUIC v2 draft codepoint", bytes: withVersion(v2, "709a50c4")),
            NamedDatagram(name: "RFC 9001 Initial cut to 1199 bytes", bytes: Array(v1.prefix(1199))),
            NamedDatagram(name: "RFC 9369 Initial cut to 1199 bytes", bytes: Array(v2.prefix(1199))),
            NamedDatagram(name: "RFC 9001 A.3 server Initial", bytes: QUICFixtures.rfc9001ServerInitial),
            NamedDatagram(name: "RFC 9369 A.3 server Initial", bytes: QUICFixtures.rfc9369ServerInitial),
            NamedDatagram(name: "RFC 9001 A.5 short header", bytes: QUICFixtures.rfc9001ChaChaShortHeader),
            NamedDatagram(name: "RFC 9369 A.5 short header", bytes: QUICFixtures.rfc9369ChaChaShortHeader),
            NamedDatagram(name: "1200 zero bytes", bytes: [UInt8](repeating: 0, count: 1200)),
            NamedDatagram(name: "1200 0xff bytes", bytes: [UInt8](repeating: 0xFF, count: 1200)),
        ]
    }()

    @Test(arguments: QUICInitialTests.notClientInitials)
    func notAClientInitial(datagram: NamedDatagram) {
        #expect(!isClientInitial(datagram.bytes))
        #expect(sniff(datagram.bytes) == .notTLS)
    }

    // A datagram may be longer than 1200 bytes; only shorter ones are refused.
    @Test func longerDatagramPassesTheHeaderCheck() {
        #expect(isClientInitial(QUICFixtures.rfc9001ClientInitial + [UInt8](repeating: 0, count: 300)))
    }

    // The header check does not authenticate anything, so the low bits of the
    // first byte (protected) and the connection IDs do not matter to it.
    @Test func headerCheckIgnoresProtectedBits() {
        var packet = QUICFixtures.rfc9001ClientInitial
        packet[0] ^= 0x0F
        packet[6] ^= 0xFF
        #expect(isClientInitial(packet))
    }

    // MARK: Damage

    // Offsets into the 1200-byte samples: 0 is the first byte (its low bits
    // give the packet number length), 6 the connection ID the keys come from,
    // 18 the protected packet number, 22..<1184 the ciphertext (22..<38 is
    // also the header protection sample) and 1184..<1200 the tag.
    @Test(arguments: [0, 6, 13, 18, 21, 22, 37, 38, 100, 600, 1183, 1184, 1199])
    func corruptedByteIsNotTLS(offset: Int) {
        for fixture in [QUICFixtures.rfc9001ClientInitial, QUICFixtures.rfc9369ClientInitial] {
            var packet = fixture
            packet[offset] ^= 0x01
            #expect(sniff(packet) == .notTLS, "offset \(offset)")
        }
    }

    // Every prefix is a datagram a broken or hostile sender could produce;
    // none may trap or be believed.
    @Test func truncatedInitialsNeverGiveAName() {
        for fixture in [QUICFixtures.rfc9001ClientInitial, QUICFixtures.rfc9369ClientInitial] {
            for length in 0 ..< fixture.count {
                let result = sniff(Array(fixture.prefix(length)))
                if case .serverName = result {
                    Issue.record("a \(length)-byte prefix gave \(result)")
                }
            }
        }
    }

    // MARK: Stickiness

    @Test func nameIsSticky() {
        var sniffer = QUICClientHelloSniffer()
        #expect(QUICFixtures.rfc9001ClientInitial.withUnsafeBytes { sniffer.feed($0) } == .serverName("example.com"))
        #expect(QUICFixtures.rfc9001ChaChaShortHeader.withUnsafeBytes { sniffer.feed($0) } == .serverName("example.com"))
        #expect(QUICFixtures.rfc9369ClientInitial.withUnsafeBytes { sniffer.feed($0) } == .serverName("example.com"))
    }

    @Test func notTLSIsSticky() {
        var sniffer = QUICClientHelloSniffer()
        #expect(QUICFixtures.rfc9001ChaChaShortHeader.withUnsafeBytes { sniffer.feed($0) } == .notTLS)
        #expect(QUICFixtures.rfc9001ClientInitial.withUnsafeBytes { sniffer.feed($0) } == .notTLS)
    }

    /// The keys the sniffer derives are RFC 9001's and RFC 9369's (Appendix A.1, client side).
    @Test func derivedKeysAreTheRFCs() {
        let v1 = QUICInitial.Keys(version: .v1, destinationConnectionID: QUICFixtures.exampleDestinationConnectionID)
        #expect(v1.key == hex("1f369613dd76d5467730efcbe3b1a22d") && v1.iv == hex("fa044b2f42a3fd3b46fb255c"))
        let v2 = QUICInitial.Keys(version: .v2, destinationConnectionID: QUICFixtures.exampleDestinationConnectionID)
        #expect(v2.key == hex("8b1a0bc121284290a29e0971b5cd045d") && v2.iv == hex("91f73e2351d8fa91660e909f"))
    }

    // MARK: Built packets

    /// TestSupport's QUICInitialBuilder makes the packets of the tests
    /// below, of QUICClientHelloSnifferTests and of the integration tests:
    /// it makes the RFCs' samples byte for byte.
    @Test func builderReproducesTheRFCSamples() {
        let frame = QUICFixtures.rfc9001ClientInitialCryptoFrame
        let dcid = QUICFixtures.exampleDestinationConnectionID
        #expect(QUICInitialBuilder.datagram(version: .v1, destinationConnectionID: dcid, packetNumber: 2, frames: frame) == QUICFixtures.rfc9001ClientInitial)
        #expect(QUICInitialBuilder.datagram(version: .v2, destinationConnectionID: dcid, packetNumber: 2, frames: frame) == QUICFixtures.rfc9369ClientInitial)
    }

    // Connection IDs up to 20 bytes (RFC 9000 §17.2), a source connection ID
    // and a token all move the packet number; the Initial keys come from the
    // destination connection ID whatever its length.
    @Test func longConnectionIDsAndATokenAreSkipped() {
        let packet = QUICInitialBuilder.datagram(
            destinationConnectionID: (0 ..< 20).map { UInt8($0 &* 13 &+ 1) },
            sourceConnectionID: [1, 2, 3, 4, 5, 6, 7, 8],
            token: [UInt8](repeating: 0x77, count: 70),
            packetNumber: 0,
            frames: QUICFixtures.rfc9001ClientInitialCryptoFrame)
        #expect(isClientInitial(packet))
        #expect(sniff(packet) == .serverName("example.com"))
    }

    // Clients that pad to more than 1200 bytes (Chrome sends 1250) put it all
    // inside the Initial's Length.
    @Test func largerInitialIsRead() {
        let packet = QUICInitialBuilder.datagram(destinationConnectionID: QUICFixtures.exampleDestinationConnectionID, packetNumber: 2,
                                                 frames: QUICFixtures.rfc9001ClientInitialCryptoFrame, size: 1350)
        #expect(packet.count == 1350)
        #expect(sniff(packet) == .serverName("example.com"))
    }

    // RFC 9000 §12.2: an Initial may be followed by other packets in the same
    // datagram (a 0-RTT packet, say); the Length field says where it ends.
    @Test func packetsCoalescedAfterTheInitialAreIgnored() {
        let datagram = QUICFixtures.rfc9001ClientInitial + QUICFixtures.rfc9001ChaChaShortHeader
        #expect(sniff(datagram) == .serverName("example.com"))
    }

    // A version 1 header over version 2 keys: the salt must follow the
    // version field, or this would open.
    @Test func keysFollowTheVersion() {
        let packet = QUICInitialBuilder.datagram(version: .v1, keysOf: .v2, destinationConnectionID: QUICFixtures.exampleDestinationConnectionID,
                                                 packetNumber: 2, frames: QUICFixtures.rfc9001ClientInitialCryptoFrame)
        #expect(isClientInitial(packet))
        #expect(sniff(packet) == .notTLS)
    }
}
