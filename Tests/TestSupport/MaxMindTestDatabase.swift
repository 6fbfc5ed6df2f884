import Wire

/// Writes small MaxMind DB files (format 2.0, IPv6 tree, 24-bit records) for
/// the GEOIP tests: networks and the country each belongs to. What real
/// files do that a reader must follow is done here too: IPv4 networks under
/// ::/96, other keys beside `country` to skip, keys shared through
/// pointers, and records with only a `registered_country`. `mmdblookup`
/// (Debian's mmdb-bin) reads what this writes (IntegrationTests).
public enum MaxMindTestDatabase {
    public static func build(_ networks: [(network: String, country: String)],
                             registeredOnly: [(network: String, country: String)] = []) -> [UInt8] {
        var data: [UInt8] = []
        var isoKeyAt: Int?
        var records: [String: Int] = [:]
        func record(_ country: String, registered: Bool) -> Int {
            let key = (registered ? "r:" : "c:") + country
            if let at = records[key] { return at }
            let at = data.count
            data += map(2)
            data += string("continent") + map(1) + string("code") + string("EU")
            data += string(registered ? "registered_country" : "country") + map(2)
            data += string("geoname_id") + unsigned(UInt64(country.utf8.reduce(0) { $0 * 31 + Int($1) }), type: 6)
            // The second record on uses a pointer to the first "iso_code" key, as real files share strings.
            if let shared = isoKeyAt { data += pointer(shared) } else { isoKeyAt = data.count; data += string("iso_code") }
            data += string(country)
            records[key] = at
            return at
        }
        let inserts = networks.map { ($0.network, record($0.country, registered: false)) }
            + registeredOnly.map { ($0.network, record($0.country, registered: true)) }
        return file(inserts, data: data, databaseType: "Sluice-Test-Country")
    }

    /// An ASN database (as GeoLite2-ASN): each network's autonomous system number and organization.
    public static func buildASN(_ networks: [(network: String, number: UInt32)]) -> [UInt8] {
        var data: [UInt8] = []
        var inserts: [(String, Int)] = []
        for (network, number) in networks {
            inserts.append((network, data.count))
            data += map(2)
            data += string("autonomous_system_number") + unsigned(UInt64(number), type: 6)
            data += string("autonomous_system_organization") + string("AS\(number) Test Net")
        }
        return file(inserts, data: data, databaseType: "Sluice-Test-ASN")
    }

    /// The search tree over `inserts` (network, offset of its record in `data`), the data, the metadata.
    static func file(_ inserts: [(String, Int)], data: [UInt8], databaseType: String) -> [UInt8] {
        var tree: [(left: Record, right: Record)] = [(.empty, .empty)]
        func insert(_ text: String, offset: Int) {
            let parts = text.split(separator: "/")
            let (high, low, length): (UInt64, UInt64, Int)
            switch IPAddress(String(parts[0]))! {
            case let .v4(a): (high, low, length) = (0, UInt64(a.value), 96 + Int(parts[1])!)
            case let .v6(a): (high, low, length) = (a.high, a.low, Int(parts[1])!)
            }
            func bit(_ i: Int) -> Bool { (i < 64 ? high >> UInt64(63 - i) : low >> UInt64(127 - i)) & 1 == 1 }
            var node = 0
            for i in 0 ..< length - 1 {
                let current = bit(i) ? tree[node].right : tree[node].left
                if case let .node(next) = current { node = next; continue }
                let new = tree.count
                tree.append((.empty, .empty))
                if bit(i) { tree[node].right = .node(new) } else { tree[node].left = .node(new) }
                node = new
            }
            if bit(length - 1) { tree[node].right = .data(offset) } else { tree[node].left = .data(offset) }
        }
        for (network, offset) in inserts { insert(network, offset: offset) }
        let nodeCount = tree.count
        var file: [UInt8] = []
        func put24(_ record: Record) {
            let value: Int
            switch record {
            case .empty: value = nodeCount
            case let .node(n): value = n
            case let .data(offset): value = nodeCount + 16 + offset
            }
            file += [UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        }
        for node in tree { put24(node.left); put24(node.right) }
        file += [UInt8](repeating: 0, count: 16)
        file += data
        file += [0xAB, 0xCD, 0xEF] + Array("MaxMind.com".utf8)
        file += map(9)
        file += string("binary_format_major_version") + unsigned(2, type: 5)
        file += string("binary_format_minor_version") + unsigned(0, type: 5)
        file += string("build_epoch") + unsigned(1_764_633_600, type: 9)
        file += string("database_type") + string(databaseType)
        file += string("description") + map(1) + string("en") + string("Sluice's GEOIP tests")
        file += string("ip_version") + unsigned(6, type: 5)
        file += string("languages") + [0x01, 0x04] + string("en")
        file += string("node_count") + unsigned(UInt64(nodeCount), type: 6)
        file += string("record_size") + unsigned(24, type: 5)
        return file
    }

    enum Record { case empty, node(Int), data(Int) }

    static func string(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        precondition(bytes.count < 285)
        // Sizes from 29 on take a byte more (the format's size 29 escape).
        return bytes.count < 29 ? [0x40 | UInt8(bytes.count)] + bytes : [0x40 | 29, UInt8(bytes.count - 29)] + bytes
    }

    static func map(_ pairs: Int) -> [UInt8] { [0xE0 | UInt8(pairs)] }

    /// uint16 (5), uint32 (6) or uint64 (9, an extended type), in as few bytes as the value needs.
    static func unsigned(_ value: UInt64, type: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = value
        while rest > 0 { bytes.insert(UInt8(rest & 0xFF), at: 0); rest >>= 8 }
        if type < 8 { return [UInt8(type << 5) | UInt8(bytes.count)] + bytes }
        return [UInt8(bytes.count), UInt8(type - 7)] + bytes
    }

    /// A pointer below 2048 (the 11-bit form).
    static func pointer(_ offset: Int) -> [UInt8] {
        precondition(offset < 2048)
        return [0x20 | UInt8(offset >> 8 & 0x7), UInt8(offset & 0xFF)]
    }
}
