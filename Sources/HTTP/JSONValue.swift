/// A parsed JSON document (RFC 8259), for the small bodies of Sluice's control
/// API: request bodies such as `{"selected": "proxy-b"}` and the replies the
/// `sluice status` and `sluice flows` clients read. Strict: one value, only
/// whitespace around it, no trailing commas, no comments, nesting bounded.
public enum JSONValue: Sendable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    /// Members in document order (duplicate names are kept; `[name]` takes the first).
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.number(x), .number(y)): return x == y
        case let (.string(x), .string(y)): return x == y
        case let (.array(x), .array(y)): return x == y
        case let (.object(x), .object(y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// Deeper documents are refused rather than recursed into.
    public static let maximumDepth = 64

    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        var reader = JSONReader(Array(bytes))
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.atEnd else { throw JSONParseError(offset: reader.offset, reason: "text after the value") }
        return value
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue { try parse(Array(text.utf8)) }

    public subscript(name: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        return members.first { $0.0 == name }?.1
    }

    public subscript(index: Int) -> JSONValue? {
        guard case let .array(items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }

    public var stringValue: String? { if case let .string(s) = self { return s }; return nil }
    public var doubleValue: Double? { if case let .number(n) = self { return n }; return nil }
    public var boolValue: Bool? { if case let .bool(b) = self { return b }; return nil }
    public var arrayValue: [JSONValue]? { if case let .array(a) = self { return a }; return nil }
    public var objectValue: [(String, JSONValue)]? { if case let .object(o) = self { return o }; return nil }
    public var isNull: Bool { if case .null = self { return true }; return false }

    /// An exact integer, or nil (fractions and values beyond 2^53 are not integers here).
    public var intValue: Int? {
        guard case let .number(n) = self, n.rounded(.towardZero) == n, n.magnitude <= 9_007_199_254_740_992 else { return nil }
        return Int(n)
    }

    /// Compact JSON again (through JSONWriter).
    public var description: String {
        var json = JSONWriter()
        write(into: &json)
        return json.text
    }

    public func write(into json: inout JSONWriter) {
        switch self {
        case .null: json.null()
        case let .bool(b): json.bool(b)
        case let .number(n): json.double(n)
        case let .string(s): json.string(s)
        case let .array(items):
            json.beginArray()
            for item in items { item.write(into: &json) }
            json.endArray()
        case let .object(members):
            json.beginObject()
            for (name, value) in members { json.key(name); value.write(into: &json) }
            json.endObject()
        }
    }
}

public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset where the document went wrong.
    public let offset: Int
    public let reason: String
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// The recursive-descent reader behind `JSONValue.parse`.
private struct JSONReader {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { offset >= bytes.count }

    func fail(_ reason: String) -> JSONParseError { JSONParseError(offset: offset, reason: reason) }

    mutating func skipWhitespace() {
        while offset < bytes.count, bytes[offset] == 0x20 || bytes[offset] == 0x09 || bytes[offset] == 0x0A || bytes[offset] == 0x0D {
            offset += 1
        }
    }

    mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth < JSONValue.maximumDepth else { throw fail("nested deeper than \(JSONValue.maximumDepth)") }
        guard offset < bytes.count else { throw fail("a value is missing") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0") ... UInt8(ascii: "9"): return .number(try number())
        default: throw fail("unexpected byte 0x\(String(bytes[offset], radix: 16))")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        guard offset + count <= bytes.count else { throw fail("truncated literal") }
        for i in 0 ..< count where bytes[offset + i] != word.utf8Start[i] { throw fail("bad literal") }
        offset += count
    }

    mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
        offset += 1
        var members: [(String, JSONValue)] = []
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") {
            offset += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw fail("an object member needs a quoted name") }
            let name = try string()
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else { throw fail("':' expected") }
            offset += 1
            skipWhitespace()
            members.append((name, try value(depth: depth + 1)))
            skipWhitespace()
            guard offset < bytes.count else { throw fail("unterminated object") }
            if bytes[offset] == UInt8(ascii: ",") { offset += 1; continue }
            if bytes[offset] == UInt8(ascii: "}") { offset += 1; return .object(members) }
            throw fail("',' or '}' expected")
        }
    }

    mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
        offset += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") {
            offset += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try value(depth: depth + 1))
            skipWhitespace()
            guard offset < bytes.count else { throw fail("unterminated array") }
            if bytes[offset] == UInt8(ascii: ",") { offset += 1; continue }
            if bytes[offset] == UInt8(ascii: "]") { offset += 1; return .array(items) }
            throw fail("',' or ']' expected")
        }
    }

    mutating func number() throws(JSONParseError) -> Double {
        let start = offset
        func digits() -> Int {
            let from = offset
            while offset < bytes.count, bytes[offset] >= 0x30, bytes[offset] <= 0x39 { offset += 1 }
            return offset - from
        }
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        guard offset < bytes.count else { throw fail("a number needs digits") }
        if bytes[offset] == UInt8(ascii: "0") {
            offset += 1
        } else if digits() == 0 {
            throw fail("a number needs digits")
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            guard digits() > 0 else { throw fail("a fraction needs digits") }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            guard digits() > 0 else { throw fail("an exponent needs digits") }
        }
        guard let value = Double(String(decoding: bytes[start ..< offset], as: UTF8.self)) else { throw fail("bad number") }
        // 1e400 would become infinity, which JSON cannot say back.
        guard value.isFinite else { throw fail("number out of range") }
        return value
    }

    mutating func string() throws(JSONParseError) -> String {
        offset += 1
        var out: [UInt8] = []
        while true {
            guard offset < bytes.count else { throw fail("unterminated string") }
            let byte = bytes[offset]
            offset += 1
            switch byte {
            case UInt8(ascii: "\""):
                // The input may hold invalid UTF-8; decoding repairs it rather than trapping.
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard offset < bytes.count else { throw fail("unterminated escape") }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800 ..< 0xDC00).contains(scalar) {
                        // A high surrogate must be followed by an escaped low one.
                        guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") else {
                            throw fail("a lone surrogate")
                        }
                        offset += 2
                        let low = try hex4()
                        guard (0xDC00 ..< 0xE000).contains(low) else { throw fail("a lone surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00 ..< 0xE000).contains(scalar) {
                        throw fail("a lone surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail("bad code point") }
                    out.append(contentsOf: String(Character(unicode)).utf8)
                default:
                    throw fail("unknown escape")
                }
            case 0x00 ..< 0x20:
                throw fail("a control character in a string")
            default:
                out.append(byte)
            }
        }
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw fail("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0 ..< 4 {
            let byte = bytes[offset]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0") ... UInt8(ascii: "9"): digit = UInt32(byte - 0x30)
            case UInt8(ascii: "a") ... UInt8(ascii: "f"): digit = UInt32(byte - 0x61 + 10)
            case UInt8(ascii: "A") ... UInt8(ascii: "F"): digit = UInt32(byte - 0x41 + 10)
            default: throw fail("bad hex digit in \\u escape")
            }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }
}
