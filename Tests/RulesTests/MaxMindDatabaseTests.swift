import Testing
import TestSupport
import Wire
@testable import Rules

/// The MaxMind DB reader against files written by MaxMindTestDatabase (which
/// `mmdblookup` reads too: IntegrationTests), and against broken files.
@Suite struct MaxMindDatabaseTests {
    static let networks: [(network: String, country: String)] = [
        ("192.0.2.0/24", "NL"), ("198.51.100.0/25", "JP"), ("198.51.100.128/25", "BR"),
        ("203.0.113.7/32", "AU"), ("2001:db8::/32", "DE"), ("10.0.0.0/8", "ZZ"),
    ]

    func database() throws -> MaxMindDatabase {
        try MaxMindDatabase(MaxMindTestDatabase.build(Self.networks, registeredOnly: [("100.64.0.0/10", "US")]))
    }

    @Test func countriesOfAddressesBothFamilies() throws {
        let db = try database()
        #expect(db.databaseType == "Sluice-Test-Country")
        let expected: [(String, String?)] = [
            ("192.0.2.1", "NL"), ("192.0.2.255", "NL"), ("192.0.3.0", nil),
            ("198.51.100.5", "JP"), ("198.51.100.200", "BR"), ("203.0.113.7", "AU"), ("203.0.113.8", nil),
            ("2001:db8::1", "DE"), ("2001:db9::1", nil), ("10.200.1.1", "ZZ"), ("11.0.0.1", nil),
            // Only a registered country: taken when the record has no country.
            ("100.64.1.1", "US"),
            // An IPv4-mapped IPv6 address is the IPv4 address.
            ("::ffff:192.0.2.9", "NL"),
        ]
        for (address, country) in expected {
            #expect(db.country(of: IPAddress(address)!) == country, "\(address)")
        }
    }

    @Test func autonomousSystemNumbers() throws {
        let db = try MaxMindDatabase(MaxMindTestDatabase.buildASN([("192.0.2.0/24", 64500), ("2001:db8::/32", 4_200_000_000)]))
        #expect(db.autonomousSystemNumber(of: IPAddress("192.0.2.77")!) == 64500)
        #expect(db.autonomousSystemNumber(of: IPAddress("2001:db8:1::1")!) == 4_200_000_000)
        #expect(db.autonomousSystemNumber(of: IPAddress("198.51.100.1")!) == nil)
        // A country database has no such key: no number, and the other way round.
        #expect(try database().autonomousSystemNumber(of: IPAddress("192.0.2.1")!) == nil)
        #expect(db.country(of: IPAddress("192.0.2.77")!) == nil)
    }

    @Test func brokenFilesAreErrorsAndBrokenRecordsNoCountry() throws {
        let good = MaxMindTestDatabase.build(Self.networks)
        #expect(throws: MaxMindDatabase.Failure.self) { try MaxMindDatabase([]) }
        #expect(throws: MaxMindDatabase.Failure.self) { try MaxMindDatabase(Array("not a database".utf8)) }
        // Cut before the metadata's end: the map is incomplete.
        #expect(throws: MaxMindDatabase.Failure.self) { try MaxMindDatabase(Array(good.dropLast(3))) }
        // Every byte of the tree and the data section set to every pattern in turn:
        // lookups answer something or nothing, and never trap.
        let markerAt = MaxMindDatabase.lastMarker(in: good)!
        for position in stride(from: 0, to: markerAt, by: 7) {
            for value: UInt8 in [0x00, 0xFF, 0x20, 0xE5, 0x01] {
                var bytes = good
                bytes[position] = value
                guard let db = try? MaxMindDatabase(bytes) else { continue }
                for address in ["192.0.2.1", "198.51.100.200", "2001:db8::1", "203.0.113.7"] { _ = db.country(of: IPAddress(address)!) }
            }
        }
    }

    /// Lookups stay bounded on a data section whose map points at itself.
    @Test func aSelfReferencingRecordEnds() throws {
        var bytes = MaxMindTestDatabase.build([("192.0.2.0/24", "NL")])
        let db = try MaxMindDatabase(bytes)
        let offset = try #require(db.dataOffset(for: IPAddress("192.0.2.1")!))
        // The record's first byte becomes a pointer to the record itself.
        let relative = offset - db.dataStart
        bytes[offset] = 0x20 | UInt8(relative >> 8 & 0x7)
        bytes[offset + 1] = UInt8(relative & 0xFF)
        let looped = try MaxMindDatabase(bytes)
        #expect(looped.country(of: IPAddress("192.0.2.1")!) == nil)
    }
}
