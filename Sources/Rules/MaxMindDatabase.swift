public import Wire

/// A MaxMind DB file (GeoLite2-Country.mmdb and the like), read for GEOIP
/// rules: the country an address belongs to. The format (MaxMind DB 2.0): a
/// binary search tree over the address bits, whose records point into a
/// data section of typed values (maps, strings, integers...), and a
/// metadata map at the end after the marker "\xAB\xCD\xEFMaxMind.com".
///
/// The file is untrusted: every read is checked against the bytes, pointers
/// and nesting are bounded, and a bad file is an error at load or, for a
/// record that leads nowhere sensible, no country: nothing traps.
public final class MaxMindDatabase: Sendable, Equatable, CustomStringConvertible {
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    public static let maximumFileSize = 256 << 20
    static let marker: [UInt8] = [0xAB, 0xCD, 0xEF] + Array("MaxMind.com".utf8)
    /// Maps within maps within arrays...: far deeper than any real file.
    static let maximumDepth = 32

    private let bytes: [UInt8]
    let nodeCount: Int
    let recordSize: Int
    let ipVersion: Int
    /// Where the data section starts (after the tree and its 16 zero bytes).
    let dataStart: Int
    public let databaseType: String
    /// The node an IPv4 address starts from in an IPv6 tree (after ::/96), once.
    private let ipv4Start: Int

    public init(_ bytes: [UInt8]) throws(Failure) {
        self.bytes = bytes
        guard let markerAt = Self.lastMarker(in: bytes) else {
            throw Failure("no MaxMind DB metadata marker: not a .mmdb file")
        }
        let metadataStart = markerAt + Self.marker.count
        var reader = Reader(bytes: bytes, sectionStart: metadataStart, sectionEnd: bytes.count)
        guard case let .map(entries)? = reader.value(at: metadataStart) else {
            throw Failure("the metadata is not a map")
        }
        func integer(_ key: String) -> Int? {
            guard let entry = entries.first(where: { $0.key == key }) else { return nil }
            if case let .unsigned(value) = entry.value, value <= UInt64(Int.max) { return Int(value) }
            return nil
        }
        guard let major = integer("binary_format_major_version"), major == 2 else {
            throw Failure("binary format major version is not 2")
        }
        guard let nodes = integer("node_count"), let size = integer("record_size"), let version = integer("ip_version") else {
            throw Failure("the metadata lacks node_count, record_size or ip_version")
        }
        guard [24, 28, 32].contains(size) else { throw Failure("record size \(size) is not 24, 28 or 32") }
        guard version == 4 || version == 6 else { throw Failure("ip_version \(version) is not 4 or 6") }
        let treeSize = nodes.multipliedReportingOverflow(by: size / 4)
        guard !treeSize.overflow, treeSize.partialValue + 16 <= markerAt else {
            throw Failure("the search tree (\(nodes) nodes) is larger than the file")
        }
        nodeCount = nodes
        recordSize = size
        ipVersion = version
        dataStart = treeSize.partialValue + 16
        if let entry = entries.first(where: { $0.key == "database_type" }), case let .string(type) = entry.value {
            databaseType = type
        } else {
            databaseType = "?"
        }
        var node = 0
        if version == 6 {
            for _ in 0 ..< 96 where node < nodes { node = Self.record(bytes, node: node, right: false, size: size) }
        }
        ipv4Start = node
    }

    public static func == (a: MaxMindDatabase, b: MaxMindDatabase) -> Bool { a === b }

    public var description: String { "\(databaseType) (\(nodeCount) nodes, IPv\(ipVersion))" }

    /// The ISO 3166-1 code of the address's `country`, or its
    /// `registered_country` when the record has no country (anycast networks);
    /// nil when the database has no record for it.
    public func country(of address: IPAddress) -> String? {
        guard let offset = dataOffset(for: address) else { return nil }
        var reader = Reader(bytes: bytes, sectionStart: dataStart, sectionEnd: bytes.count)
        for key in ["country", "registered_country"] {
            if let code = reader.lookupString(at: offset, path: [key, "iso_code"]) { return code }
        }
        return nil
    }

    /// The `autonomous_system_number` of the address's record (an ASN
    /// database: GeoLite2-ASN.mmdb); nil when it has none.
    public func autonomousSystemNumber(of address: IPAddress) -> UInt32? {
        guard let offset = dataOffset(for: address) else { return nil }
        var reader = Reader(bytes: bytes, sectionStart: dataStart, sectionEnd: bytes.count)
        guard case let .unsigned(number)? = reader.lookup(at: offset, path: ["autonomous_system_number"]),
              number <= UInt64(UInt32.max) else { return nil }
        return UInt32(number)
    }

    /// Walks the tree; the offset of the address's record in the file.
    func dataOffset(for address: IPAddress) -> Int? {
        var node: Int
        var bits: Int
        let bit: (Int) -> Bool
        switch address {
        case let .v4(a):
            node = ipv4Start
            bits = 32
            bit = { a.value >> UInt32(31 - $0) & 1 == 1 }
        case let .v6(a):
            // An IPv4-mapped address (a dual-stack socket's IPv4 peer) is the IPv4
            // address, whether or not the file aliases ::ffff:0:0/96 to its IPv4 part.
            if a.high == 0, a.low >> 32 == 0xffff {
                return dataOffset(for: .v4(IPv4Address(UInt32(truncatingIfNeeded: a.low))))
            }
            if ipVersion == 4 { return nil }
            node = 0
            bits = 128
            bit = { i in (i < 64 ? a.high >> UInt64(63 - i) : a.low >> UInt64(127 - i)) & 1 == 1 }
        }
        var depth = 0
        while node < nodeCount, depth < bits {
            node = Self.record(bytes, node: node, right: bit(depth), size: recordSize)
            depth += 1
        }
        // node_count itself means "no data"; past it, a pointer into the data section.
        let relative = node - nodeCount - 16
        guard node > nodeCount, relative >= 0, relative < bytes.count - dataStart else { return nil }
        return dataStart + relative
    }

    /// One record of a node: the left one for a 0 bit, the right for a 1.
    /// A node past the file's end reads as "no data" (node_count is checked
    /// against the file at load, so this is only for safety).
    static func record(_ bytes: [UInt8], node: Int, right: Bool, size: Int) -> Int {
        let base = node * size / 4
        guard base + size / 4 <= bytes.count else { return Int.max }
        func be(_ at: Int, _ count: Int) -> Int {
            var value = 0
            for i in 0 ..< count { value = value << 8 | Int(bytes[at + i]) }
            return value
        }
        switch size {
        case 24: return right ? be(base + 3, 3) : be(base, 3)
        case 28:
            let middle = Int(bytes[base + 3])
            return right ? (middle & 0x0F) << 24 | be(base + 4, 3) : (middle & 0xF0) << 20 | be(base, 3)
        default: return right ? be(base + 4, 4) : be(base, 4)
        }
    }

    static func lastMarker(in bytes: [UInt8]) -> Int? {
        // The metadata is at most 128 KiB from the end (the format's promise).
        let lowest = max(0, bytes.count - 128 * 1024 - marker.count)
        var at = bytes.count - marker.count
        while at >= lowest {
            if bytes[at] == marker[0], bytes[at ..< at + marker.count].elementsEqual(marker) { return at }
            at -= 1
        }
        return nil
    }

    /// The data section's values, as far as GEOIP needs them.
    enum Value {
        case string(String)
        case unsigned(UInt64)
        case map([(key: String, value: Value)])
        case other
    }

    /// Decodes fields of one section; pointers are relative to `sectionStart`.
    struct Reader {
        let bytes: [UInt8]
        let sectionStart: Int
        let sectionEnd: Int
        /// Fields decoded by one call: a file whose maps point at each other
        /// cannot make a lookup run forever.
        var budget = 2_000

        struct Field {
            var type: Int
            var size: Int
            /// Where the field's payload starts.
            var payload: Int
        }

        func byte(_ at: Int) -> Int? { at >= 0 && at < sectionEnd ? Int(bytes[at]) : nil }

        /// The control byte(s) at `at`: type, size and payload position.
        func field(at: Int) -> Field? {
            guard let control = byte(at) else { return nil }
            var type = control >> 5
            var next = at + 1
            if type == 0 {
                guard let extended = byte(next) else { return nil }
                type = 7 + extended
                next += 1
            }
            if type == 1 {
                // Pointer: the size bits are the pointer's own encoding.
                return Field(type: 1, size: control & 0x1F, payload: next)
            }
            var size = control & 0x1F
            switch size {
            case 29:
                guard let b = byte(next) else { return nil }
                size = 29 + b; next += 1
            case 30:
                guard let b0 = byte(next), let b1 = byte(next + 1) else { return nil }
                size = 285 + (b0 << 8 | b1); next += 2
            case 31:
                guard let b0 = byte(next), let b1 = byte(next + 1), let b2 = byte(next + 2) else { return nil }
                size = 65821 + (b0 << 16 | b1 << 8 | b2); next += 3
            default:
                break
            }
            return Field(type: type, size: size, payload: next)
        }

        /// A pointer field's target (an absolute position) and where the field ends.
        func pointer(_ field: Field) -> (target: Int, end: Int)? {
            let ss = field.size >> 3 & 0x3, vvv = field.size & 0x7
            var value = 0
            let count = ss + 1
            for i in 0 ..< count {
                guard let b = byte(field.payload + i) else { return nil }
                value = value << 8 | b
            }
            switch ss {
            case 0: value |= vvv << 8
            case 1: value = (vvv << 16 | value) + 2048
            case 2: value = (vvv << 24 | value) + 526_336
            default: break
            }
            let target = sectionStart + value
            return target < sectionEnd ? (target, field.payload + count) : nil
        }

        /// Where the value at `at` ends (a pointer ends after itself, not its target).
        mutating func end(of at: Int, depth: Int = 0) -> Int? {
            budget -= 1
            guard budget > 0, depth < MaxMindDatabase.maximumDepth, let field = field(at: at) else { return nil }
            switch field.type {
            case 1: return pointer(field)?.end
            case 7:
                var position = field.payload
                for _ in 0 ..< field.size * 2 {
                    guard let next = end(of: position, depth: depth + 1) else { return nil }
                    position = next
                }
                return position
            case 11:
                var position = field.payload
                for _ in 0 ..< field.size {
                    guard let next = end(of: position, depth: depth + 1) else { return nil }
                    position = next
                }
                return position
            case 14: return field.payload // boolean: the value is in the size
            case 3: return field.payload + 8 <= sectionEnd ? field.payload + 8 : nil
            case 15: return field.payload + 4 <= sectionEnd ? field.payload + 4 : nil
            default:
                return field.payload + field.size <= sectionEnd ? field.payload + field.size : nil
            }
        }

        /// The value at `at`, pointers followed (once: a pointer to a pointer is invalid).
        mutating func value(at: Int, depth: Int = 0, followed: Bool = false) -> Value? {
            budget -= 1
            guard budget > 0, depth < MaxMindDatabase.maximumDepth, let field = field(at: at) else { return nil }
            switch field.type {
            case 1:
                guard !followed, let (target, _) = pointer(field) else { return nil }
                return value(at: target, depth: depth + 1, followed: true)
            case 2:
                guard field.payload + field.size <= sectionEnd else { return nil }
                return .string(String(decoding: bytes[field.payload ..< field.payload + field.size], as: UTF8.self))
            case 5, 6, 9:
                guard field.size <= 8, field.payload + field.size <= sectionEnd else { return nil }
                var value: UInt64 = 0
                for i in 0 ..< field.size { value = value << 8 | UInt64(bytes[field.payload + i]) }
                return .unsigned(value)
            case 7:
                var entries: [(key: String, value: Value)] = []
                var position = field.payload
                for _ in 0 ..< field.size {
                    guard case let .string(key)? = value(at: position, depth: depth + 1), let afterKey = end(of: position, depth: depth + 1),
                          let item = value(at: afterKey, depth: depth + 1), let afterValue = end(of: afterKey, depth: depth + 1)
                    else { return nil }
                    entries.append((key, item))
                    position = afterValue
                }
                return .map(entries)
            default:
                return end(of: at, depth: depth) == nil ? nil : .other
            }
        }

        /// The string at `path` inside the map at `at` ("country", "iso_code"),
        /// decoding only the keys on the way and skipping the rest.
        mutating func lookupString(at start: Int, path: [String]) -> String? {
            guard case let .string(text)? = lookup(at: start, path: path) else { return nil }
            return text
        }

        /// The value at `path` inside the map at `at` ("country", "iso_code"),
        /// decoding only the keys on the way and skipping the rest.
        mutating func lookup(at start: Int, path: [String]) -> Value? {
            var at = start
            for (level, key) in path.enumerated() {
                guard let map = resolve(at), map.type == 7 else { return nil }
                var position = map.payload
                var found: Int?
                for _ in 0 ..< map.size {
                    guard case let .string(name)? = value(at: position), let afterKey = end(of: position) else { return nil }
                    if name == key { found = afterKey; break }
                    guard let afterValue = end(of: afterKey) else { return nil }
                    position = afterValue
                }
                guard let next = found else { return nil }
                at = next
                if level == path.count - 1 { return value(at: at) }
            }
            return nil
        }

        /// The field at `at`, or the one a pointer there points to.
        mutating func resolve(_ at: Int) -> Field? {
            budget -= 1
            guard budget > 0, let field = field(at: at) else { return nil }
            guard field.type == 1 else { return field }
            guard let (target, _) = pointer(field), let resolved = self.field(at: target), resolved.type != 1 else { return nil }
            return resolved
        }
    }
}
