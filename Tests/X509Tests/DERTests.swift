import TestSupport
import Testing

@testable import X509

@Suite struct DERReaderTests {
    @Test func lengths() throws {
        var reader = DERReader([0x04, 0x00, 0x04, 0x81, 0x80] + [UInt8](repeating: 7, count: 128))
        #expect(try reader.readOctetString().isEmpty)
        #expect(try reader.readOctetString().count == 128)
        #expect(reader.isAtEnd)
        try reader.finish()

        let rejected: [([UInt8], DERError)] = [
            ([0x30, 0x80, 0x00, 0x00], .indefiniteLength),
            ([0x04, 0x81, 0x05, 1, 2, 3, 4, 5], .nonMinimalLength),  // 5 fits the short form
            ([0x04, 0x82, 0x00, 0x80] + [UInt8](repeating: 0, count: 128), .nonMinimalLength),  // leading zero octet
            ([0x04, 0xFF], .nonMinimalLength),  // reserved
            ([0x04, 0x85, 1, 0, 0, 0, 0], .lengthTooLarge),
            ([0x04, 0x03, 1, 2], .truncated),
            ([0x04, 0x82, 0x01], .truncated),
            ([0x04], .truncated),
            ([], .truncated),
            ([0x1F, 0x21, 0x00], .highTagNumber),
            ([0xBF, 0x81, 0x00, 0x00], .highTagNumber),
        ]
        for (bytes, expected) in rejected {
            var reader = DERReader(bytes)
            #expect(throws: expected) { try reader.readElement() }
        }
    }

    @Test func structure() throws {
        // SEQUENCE { INTEGER 5, [0] EXPLICIT { BOOLEAN TRUE }, [1] IMPLICIT OCTET STRING 'AB' }
        let bytes = tlv(0x30, tlv(0x02, [5]) + tlv(0xA0, tlv(0x01, [0xFF])) + tlv(0x81, [0xAB]))
        var outer = DERReader(bytes)
        var sequence = try outer.readSequence()
        try outer.finish()
        #expect(try sequence.readSmallInteger() == 5)
        #expect(try sequence.readOptionalExplicit(2) == nil)
        var explicit = try #require(try sequence.readOptionalExplicit(0))
        #expect(try explicit.readBoolean())
        try explicit.finish()
        let implicit = try #require(try sequence.readOptionalElement(tag: .contextSpecific(1, constructed: false)))
        #expect(Array(implicit.content) == [0xAB])
        #expect(Array(implicit.encoded) == [0x81, 0x01, 0xAB])
        try sequence.finish()

        var wrong = DERReader(tlv(0x31, []))
        #expect(throws: DERError.unexpectedTag(expected: 0x30, found: 0x31)) { try wrong.readSequence() }
        var trailing = DERReader(tlv(0x05, []) + [0x00])
        try trailing.readNull()
        #expect(throws: DERError.trailingData) { try trailing.finish() }
        // A constructed OCTET STRING (BER only) does not match the primitive tag.
        var constructed = DERReader(tlv(0x24, tlv(0x04, [1])))
        #expect(throws: DERError.unexpectedTag(expected: 0x04, found: 0x24)) { try constructed.readOctetString() }
    }

    @Test func integers() throws {
        func read(_ content: [UInt8]) throws -> [UInt8] {
            var reader = DERReader(tlv(0x02, content))
            return Array(try reader.readInteger())
        }
        #expect(try read([0x00]) == [0x00])
        #expect(try read([0x7F]) == [0x7F])
        #expect(try read([0x00, 0x80]) == [0x00, 0x80])
        #expect(try read([0xFF, 0x7F]) == [0xFF, 0x7F])
        #expect(try read([0x80]) == [0x80])
        for bad: [UInt8] in [[], [0x00, 0x7F], [0x00, 0x00], [0xFF, 0x80], [0xFF, 0xFF]] {
            #expect(throws: DERError.self) { try read(bad) }
        }
        func small(_ content: [UInt8]) throws -> Int {
            var reader = DERReader(tlv(0x02, content))
            return try reader.readSmallInteger()
        }
        #expect(try small([0x00]) == 0)
        #expect(try small([0x01, 0x00]) == 256)
        #expect(try small([0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]) == Int.max)
        #expect(throws: DERError.self) { try small([0x80]) }  // negative
        #expect(throws: DERError.self) { try small([0x00, 0x80, 0, 0, 0, 0, 0, 0, 0]) }  // too large
    }

    @Test func booleans() throws {
        func read(_ content: [UInt8]) throws -> Bool {
            var reader = DERReader(tlv(0x01, content))
            return try reader.readBoolean()
        }
        #expect(try read([0xFF]))
        #expect(try !read([0x00]))
        for bad: [UInt8] in [[0x01], [0xFE], [], [0xFF, 0xFF]] {
            #expect(throws: DERError.self) { try read(bad) }
        }
    }

    @Test func bitStrings() throws {
        #expect(try DER.bitString([0x00][...]) == DER.BitString(unusedBits: 0, bytes: [][...]))
        #expect(try DER.bitString([0x01, 0x86][...]).unusedBits == 1)
        #expect(throws: DERError.self) { try DER.bitString([][...]) }
        #expect(throws: DERError.self) { try DER.bitString([0x08, 0x00][...]) }
        #expect(throws: DERError.self) { try DER.bitString([0x01][...]) }
        #expect(throws: DERError.self) { try DER.bitString([0x01, 0x81][...]) }  // unused bit set
    }

    @Test func nullElement() throws {
        var good = DERReader([0x05, 0x00])
        try good.readNull()
        var bad = DERReader([0x05, 0x01, 0x00])
        #expect(throws: DERError.self) { try bad.readNull() }
    }

    @Test func objectIdentifiers() throws {
        // RFC 5480 §2.1.1: id-ecPublicKey 1.2.840.10045.2.1 = 06 07 2A 86 48 CE 3D 02 01.
        var reader = DERReader(hex("06072A8648CE3D0201"))
        let identifier = try reader.readObjectIdentifier()
        #expect(identifier == .ecPublicKey)
        #expect(identifier.description == "1.2.840.10045.2.1")
        #expect(ASN1ObjectIdentifier(dotted: "1.2.840.10045.2.1") == identifier)
        #expect(ASN1ObjectIdentifier(dotted: "2.5.29.17")?.derContent == [0x55, 0x1D, 0x11])
        #expect(ASN1ObjectIdentifier(dotted: "0.9.2342.19200300.100.1.25")?.description == "0.9.2342.19200300.100.1.25")
        #expect(ASN1ObjectIdentifier(dotted: "2.999.3")?.derContent == [0x88, 0x37, 0x03])  // X.690 §8.19.5 example
        #expect(try ASN1ObjectIdentifier(derContent: [0x88, 0x37, 0x03][...]).description == "2.999.3")
        // 2.25.<128-bit UUID>: wider than 64 bits, printed exactly.
        let uuid = try ASN1ObjectIdentifier(
            derContent: hex("6983F09DA7EBCFDEE0C7A1A7B2C0AFEEB7D0AFCB8FE0B17D")[...])
        #expect(uuid.description.hasPrefix("2.25."))
        #expect(try ASN1ObjectIdentifier(derContent: [0x00][...]).description == "0.0")
        #expect(try ASN1ObjectIdentifier(derContent: [0x28][...]).description == "1.0")
        #expect(try ASN1ObjectIdentifier(derContent: [0x50][...]).description == "2.0")
        for bad: [UInt8] in [[], [0x80, 0x01], [0x2A, 0x86], [0x2A, 0x80, 0x01]] {
            #expect(throws: DERError.self) { try ASN1ObjectIdentifier(derContent: bad[...]) }
        }
        for bad in ["", "1", "3.1", "1.40", "1..2", "1.2.", "01.2", "1.2.a", "1.18446744073709551616"] {
            #expect(ASN1ObjectIdentifier(dotted: bad) == nil)
        }
    }

    @Test func hugeArcPrintsCheaply() throws {
        let long = [UInt8](repeating: 0xFF, count: 60_000) + [0x7F]
        let identifier = try ASN1ObjectIdentifier(derContent: ([0x2A] + long + [0x01])[...])
        let text = identifier.description
        #expect(text.hasPrefix("1.2.#ffff"))
        #expect(text.hasSuffix("ff7f.1"))
    }

    @Test func uuidObjectIdentifierDecimal() throws {
        // 2.25.329800735698586629295641978511506172918 (RFC 4122 §B example
        // f81d4fae-7dec-11d0-a765-00a0c91e6bf6), encoded by hand in base 128.
        let value: [UInt8] = hex("f81d4fae7dec11d0a76500a0c91e6bf6")
        var digits: [UInt8] = []
        // Base-256 → base-128 groups.
        var bits: [UInt8] = value.flatMap { byte in (0..<8).reversed().map { (byte >> $0) & 1 } }
        while bits.count % 7 != 0 { bits.insert(0, at: 0) }
        var groups = stride(from: 0, to: bits.count, by: 7).map { start in
            bits[start..<start + 7].reduce(0) { $0 << 1 | $1 }
        }
        while groups.first == 0 { groups.removeFirst() }
        for (index, group) in groups.enumerated() { digits.append(index == groups.count - 1 ? group : group | 0x80) }
        let identifier = try ASN1ObjectIdentifier(derContent: ([0x69] + digits)[...])
        #expect(identifier.description == "2.25.329800735698586629295641978511506172918")
    }

    @Test func times() throws {
        func utc(_ text: String) throws -> Int64 { try DER.utcTime(Array(text.utf8)[...]) }
        func generalized(_ text: String) throws -> Int64 { try DER.generalizedTime(Array(text.utf8)[...]) }
        #expect(try utc("700101000000Z") == 0)
        #expect(try utc("491231235959Z") == 2_524_607_999)  // 2049-12-31T23:59:59Z
        #expect(try utc("500101000000Z") == -631_152_000)  // 1950
        #expect(try utc("000229000000Z") == 951_782_400)  // 2000 is a leap year
        #expect(try generalized("20500101000000Z") == 2_524_608_000)
        #expect(try generalized("99991231235959Z") == 253_402_300_799)
        #expect(try generalized("00010101000000Z") == -62_135_596_800)
        #expect(try generalized("21000301000000Z") == 4_107_542_400)
        for bad in [
            "7001010000Z", "700101000000", "700101000000+0000", "7001010000000Z", "701301000000Z", "700132000000Z",
            "700100000000Z", "700101240000Z", "700101006000Z", "700101000060Z", "010229000000Z", "70010100000aZ",
            " 70101000000Z",
        ] {
            #expect(throws: DERError.self, "\(bad)") { try utc(bad) }
        }
        for bad in [
            "20500101000000.5Z", "205001010000Z", "20500101000000", "00000101000000Z", "21000229000000Z",
            "2050010100000Z",
        ] {
            #expect(throws: DERError.self, "\(bad)") { try generalized(bad) }
        }
        var reader = DERReader(tlv(0x04, Array("700101000000Z".utf8)))
        #expect(throws: DERError.self) { try reader.readTime() }
    }

    @Test func civilTimeRoundTrip() throws {
        var seconds = CivilTime.earliest
        let step: Int64 = 86_400 * 37 + 3_601
        while seconds <= CivilTime.latest {
            let fields = try #require(CivilTime.fields(seconds))
            #expect(
                try CivilTime.seconds(
                    year: fields.year, month: fields.month, day: fields.day, hour: fields.hour, minute: fields.minute,
                    second: fields.second) == seconds)
            seconds += step
        }
        #expect(CivilTime.fields(CivilTime.earliest - 1) == nil)
        #expect(CivilTime.fields(CivilTime.latest + 1) == nil)
        #expect(CivilTime.fields(-1) == CivilTime.Fields(year: 1969, month: 12, day: 31, hour: 23, minute: 59, second: 59))
    }

    /// Validity times in messages read as dates: "expired at 1733356800 (Unix time)" made the user convert.
    @Test func civilTimeText() {
        #expect(CivilTime.text(0) == "1970-01-01T00:00:00Z")
        #expect(CivilTime.text(1_796_486_117) == "2026-12-05T15:55:17Z")
        #expect(CivilTime.text(-1) == "1969-12-31T23:59:59Z")
        #expect(CivilTime.text(CivilTime.earliest) == "0001-01-01T00:00:00Z")
        #expect(CivilTime.text(CivilTime.latest) == "9999-12-31T23:59:59Z")
        #expect(CivilTime.text(CivilTime.latest + 1) == "\(CivilTime.latest + 1) (Unix time)")
        let expired = ChainVerificationError.expired(subject: "CN=old.test", notAfter: 1_796_486_117)
        #expect(expired.description == "CN=old.test expired at 2026-12-05T15:55:17Z")
    }

    @Test func strings() throws {
        func decode(_ tag: DERTag, _ bytes: [UInt8]) throws -> String { try DER.string(tag: tag, content: bytes[...]) }
        #expect(try decode(.utf8String, Array("Zürich".utf8)) == "Zürich")
        #expect(try decode(.printableString, Array("Sluice (Test) Ltd.".utf8)) == "Sluice (Test) Ltd.")
        #expect(try decode(.ia5String, Array("a@b.test".utf8)) == "a@b.test")
        #expect(try decode(.t61String, [0x5A, 0xFC, 0x72]) == "Zür")
        #expect(try decode(.bmpString, [0x00, 0x5A, 0x00, 0xFC, 0xD8, 0x3D, 0xDE, 0x00]) == "Zü😀")
        #expect(try decode(.universalString, [0, 0, 0, 0x5A, 0, 1, 0xF6, 0]) == "Z😀")
        #expect(try decode(.visibleString, Array("ok".utf8)) == "ok")
        #expect(try decode(.numericString, Array("12 3".utf8)) == "12 3")
        let rejected: [(DERTag, [UInt8])] = [
            (.utf8String, [0xC3]), (.utf8String, [0xED, 0xA0, 0x80]), (.printableString, Array("a@b".utf8)),
            (.printableString, Array("a*".utf8)), (.ia5String, [0x80]), (.bmpString, [0x00]),
            (.bmpString, [0xD8, 0x3D]), (.universalString, [0, 0x11, 0, 0]), (.universalString, [0, 0, 0]),
            (.numericString, Array("1a".utf8)), (.visibleString, [0x0A]), (.octetString, [0x41]),
        ]
        for (tag, bytes) in rejected {
            #expect(throws: DERError.self, "\(tag)") { try decode(tag, bytes) }
        }
    }
}

@Suite struct DERWriterTests {
    @Test func lengthEncoding() {
        for (count, header) in [(0, [0x04, 0x00]), (127, [0x04, 0x7F]), (128, [0x04, 0x81, 0x80]),
            (255, [0x04, 0x81, 0xFF]), (256, [0x04, 0x82, 0x01, 0x00]), (65_536, [0x04, 0x83, 0x01, 0x00, 0x00])] as [(Int, [UInt8])]
        {
            var writer = DERWriter()
            writer.writeOctetString([UInt8](repeating: 0, count: count))
            #expect(Array(writer.bytes.prefix(header.count)) == header)
            #expect(writer.bytes.count == header.count + count)
            var reader = DERReader(writer.bytes)
            #expect((try? reader.readOctetString().count) == count)
        }
    }

    @Test func integers() {
        func unsigned(_ bytes: [UInt8]) -> [UInt8] {
            var writer = DERWriter()
            writer.writeInteger(unsignedBytes: bytes)
            return writer.bytes
        }
        #expect(unsigned([]) == [0x02, 0x01, 0x00])
        #expect(unsigned([0x00, 0x00]) == [0x02, 0x01, 0x00])
        #expect(unsigned([0x7F]) == [0x02, 0x01, 0x7F])
        #expect(unsigned([0x80]) == [0x02, 0x02, 0x00, 0x80])
        #expect(unsigned([0x00, 0x00, 0xFF, 0x01]) == [0x02, 0x03, 0x00, 0xFF, 0x01])
        func signed(_ value: Int) -> [UInt8] {
            var writer = DERWriter()
            writer.writeInteger(value)
            return writer.bytes
        }
        #expect(signed(0) == [0x02, 0x01, 0x00])
        #expect(signed(127) == [0x02, 0x01, 0x7F])
        #expect(signed(128) == [0x02, 0x02, 0x00, 0x80])
        #expect(signed(256) == [0x02, 0x02, 0x01, 0x00])
        #expect(signed(-1) == [0x02, 0x01, 0xFF])
        #expect(signed(-128) == [0x02, 0x01, 0x80])
        #expect(signed(-129) == [0x02, 0x02, 0xFF, 0x7F])
        #expect(signed(Int.max) == [0x02, 0x08, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(signed(Int.min) == [0x02, 0x08, 0x80, 0, 0, 0, 0, 0, 0, 0])
        for value in [0, 1, 127, 128, 255, 256, 65_535, 1 << 40, Int.max] {
            var reader = DERReader(signed(value))
            #expect((try? reader.readSmallInteger()) == value)
        }
    }

    @Test func nestedAndTagged() throws {
        var writer = DERWriter()
        writer.writeSequence { sequence in
            sequence.writeObjectIdentifier(.basicConstraints)
            sequence.writeBoolean(true)
            sequence.writeExplicit(0) { $0.writeInteger(2) }
            sequence.writeSet { $0.writeNull() }
            sequence.writeElement(tag: .contextSpecific(2, constructed: false), content: Array("a".utf8))
            sequence.writeNamedBits([0])
            sequence.writeNamedBits([5, 6])
            sequence.writeNamedBits([8])
            sequence.writeNamedBits([])
            sequence.writeBitString([0xAB])
        }
        #expect(
            writer.bytes
                == hex(
                    "3028 0603551D13 0101FF A003020102 31020500 820161 03020780 03020106 0303070080 030100 030200AB"
                        .replacingSpaces()))
    }

    @Test func times() throws {
        func written(_ seconds: Int64) throws -> [UInt8] {
            var writer = DERWriter()
            try writer.writeTime(seconds)
            return writer.bytes
        }
        #expect(try written(0) == tlv(0x17, Array("700101000000Z".utf8)))
        #expect(try written(2_524_607_999) == tlv(0x17, Array("491231235959Z".utf8)))
        #expect(try written(2_524_608_000) == tlv(0x18, Array("20500101000000Z".utf8)))
        #expect(try written(-631_152_001) == tlv(0x18, Array("19491231235959Z".utf8)))
        #expect(try written(-631_152_000) == tlv(0x17, Array("500101000000Z".utf8)))
        #expect(throws: DERError.self) { try written(CivilTime.latest + 1) }
        #expect(throws: DERError.self) { try written(Int64.min) }
    }

    @Test func strings() {
        var writer = DERWriter()
        let results = [
            writer.writePrintableString("DE"), writer.writePrintableString("a@b"), writer.writeIA5String("x.test"),
            writer.writeIA5String("ü"),
        ]
        #expect(results == [true, false, true, false])
        writer.writeUTF8String("ü")
        #expect(writer.bytes == [0x13, 0x02, 0x44, 0x45, 0x16, 0x06] + Array("x.test".utf8) + [0x0C, 0x02, 0xC3, 0xBC])
    }
}

extension String {
    fileprivate func replacingSpaces() -> String { String(filter { $0 != " " }) }
}
