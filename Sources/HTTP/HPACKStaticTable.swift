/// RFC 7541 Appendix A: the 61 fields both ends know from the start, at
/// indexes 1...61 (the dynamic table's entries follow from 62, §2.3.3).
enum HPACKStaticTable {
    static let count = 61

    /// Index 1 first.
    static let fields: [HPACKHeader] = [
        HPACKHeader(":authority", ""),
        HPACKHeader(":method", "GET"),
        HPACKHeader(":method", "POST"),
        HPACKHeader(":path", "/"),
        HPACKHeader(":path", "/index.html"),
        HPACKHeader(":scheme", "http"),
        HPACKHeader(":scheme", "https"),
        HPACKHeader(":status", "200"),
        HPACKHeader(":status", "204"),
        HPACKHeader(":status", "206"),
        HPACKHeader(":status", "304"),
        HPACKHeader(":status", "400"),
        HPACKHeader(":status", "404"),
        HPACKHeader(":status", "500"),
        HPACKHeader("accept-charset", ""),
        HPACKHeader("accept-encoding", "gzip, deflate"),
        HPACKHeader("accept-language", ""),
        HPACKHeader("accept-ranges", ""),
        HPACKHeader("accept", ""),
        HPACKHeader("access-control-allow-origin", ""),
        HPACKHeader("age", ""),
        HPACKHeader("allow", ""),
        HPACKHeader("authorization", ""),
        HPACKHeader("cache-control", ""),
        HPACKHeader("content-disposition", ""),
        HPACKHeader("content-encoding", ""),
        HPACKHeader("content-language", ""),
        HPACKHeader("content-length", ""),
        HPACKHeader("content-location", ""),
        HPACKHeader("content-range", ""),
        HPACKHeader("content-type", ""),
        HPACKHeader("cookie", ""),
        HPACKHeader("date", ""),
        HPACKHeader("etag", ""),
        HPACKHeader("expect", ""),
        HPACKHeader("expires", ""),
        HPACKHeader("from", ""),
        HPACKHeader("host", ""),
        HPACKHeader("if-match", ""),
        HPACKHeader("if-modified-since", ""),
        HPACKHeader("if-none-match", ""),
        HPACKHeader("if-range", ""),
        HPACKHeader("if-unmodified-since", ""),
        HPACKHeader("last-modified", ""),
        HPACKHeader("link", ""),
        HPACKHeader("location", ""),
        HPACKHeader("max-forwards", ""),
        HPACKHeader("proxy-authenticate", ""),
        HPACKHeader("proxy-authorization", ""),
        HPACKHeader("range", ""),
        HPACKHeader("referer", ""),
        HPACKHeader("refresh", ""),
        HPACKHeader("retry-after", ""),
        HPACKHeader("server", ""),
        HPACKHeader("set-cookie", ""),
        HPACKHeader("strict-transport-security", ""),
        HPACKHeader("transfer-encoding", ""),
        HPACKHeader("user-agent", ""),
        HPACKHeader("vary", ""),
        HPACKHeader("via", ""),
        HPACKHeader("www-authenticate", ""),
    ]

    /// The field at `index` (1...61), or nil.
    static func field(at index: Int) -> HPACKHeader? {
        guard index >= 1, index <= count, index <= fields.count else { return nil }
        return fields[index - 1]
    }

    /// Keyed by octets, not by String: String equality is Unicode canonical
    /// equivalence, and a field must match octet for octet.
    private struct FieldKey: Hashable {
        var name: [UInt8]
        var value: [UInt8]
    }

    private static let indexByField: [FieldKey: Int] = {
        var indexes: [FieldKey: Int] = [:]
        for (offset, field) in fields.enumerated() {
            let key = FieldKey(name: Array(field.name.utf8), value: Array(field.value.utf8))
            if indexes[key] == nil { indexes[key] = offset + 1 }
        }
        return indexes
    }()

    /// The lowest index per name, the one an encoder names a field by.
    private static let indexByName: [[UInt8]: Int] = {
        var indexes: [[UInt8]: Int] = [:]
        for (offset, field) in fields.enumerated() where indexes[Array(field.name.utf8)] == nil {
            indexes[Array(field.name.utf8)] = offset + 1
        }
        return indexes
    }()

    static func index(name: [UInt8], value: [UInt8]) -> Int? {
        indexByField[FieldKey(name: name, value: value)]
    }

    static func index(name: [UInt8]) -> Int? {
        indexByName[name]
    }
}
