/// One header field as received: the name keeps its spelling (rewritten heads
/// go out the way the app wrote them), lookups ignore case.
public struct HTTPHeader: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    public var description: String { "\(name): \(value)" }

    /// Field names compare ASCII case-insensitively (RFC 9110 §5.1), here and
    /// wherever another layer keeps names of its own (Rules' header lists).
    public static func namesEqual(_ a: String, _ b: String) -> Bool { HTTPSyntax.equalsIgnoringCase(a, b) }

    /// RFC 9110 §5.1: a field name is a token.
    public static func isValidName(_ name: String) -> Bool {
        var count = 0
        for byte in name.utf8 {
            guard HTTPSyntax.isTokenByte(byte) else { return false }
            count += 1
        }
        return count > 0
    }

    /// RFC 9110 §5.5: visible characters, spaces and tabs, and non-ASCII
    /// bytes; never CR, LF, NUL or another control, which would let a value
    /// end the line and inject a header of its own.
    public static func isValidValue(_ value: String) -> Bool {
        for byte in value.utf8 where !HTTPSyntax.isFieldValueByte(byte) { return false }
        return true
    }
}

/// The ordered header section of a head. Order and duplicates are kept,
/// because a proxy that reorders or merges fields changes what the far end sees.
public struct HTTPHeaders: Sendable, Equatable, RandomAccessCollection, ExpressibleByDictionaryLiteral,
    CustomStringConvertible
{
    public private(set) var fields: [HTTPHeader]

    public init() { fields = [] }

    public init(_ fields: [HTTPHeader]) { self.fields = fields }

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { HTTPHeader(name: $0.0, value: $0.1) }
    }

    public var startIndex: Int { fields.startIndex }
    public var endIndex: Int { fields.endIndex }
    public subscript(position: Int) -> HTTPHeader { fields[position] }

    /// The first value of `name`, compared case-insensitively.
    public subscript(name: String) -> String? {
        for field in fields where HTTPSyntax.equalsIgnoringCase(field.name, name) { return field.value }
        return nil
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { HTTPSyntax.equalsIgnoringCase($0.name, name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// How many fields carry `name`.
    public func count(of name: String) -> Int {
        var n = 0
        for field in fields where HTTPSyntax.equalsIgnoringCase(field.name, name) { n += 1 }
        return n
    }

    /// The comma-separated list elements of every `name` field, trimmed
    /// (RFC 9110 §5.6.1), e.g. `Connection: keep-alive, Upgrade`.
    public func tokens(_ name: String) -> [Substring] {
        var result: [Substring] = []
        for field in fields where HTTPSyntax.equalsIgnoringCase(field.name, name) {
            HTTPSyntax.forEachListElement(in: field.value) { element in
                let trimmed = HTTPSyntax.trimmed(element)
                if !trimmed.isEmpty { result.append(trimmed) }
                return true
            }
        }
        return result
    }

    /// Whether a list header holds `token`, case-insensitively. No list is
    /// built: every response asks this of Connection.
    public func hasToken(_ token: String, in name: String) -> Bool {
        var found = false
        for field in fields where !found && HTTPSyntax.equalsIgnoringCase(field.name, name) {
            HTTPSyntax.forEachListElement(in: field.value) { element in
                let trimmed = HTTPSyntax.trimmed(element)
                found = !trimmed.isEmpty && HTTPSyntax.equalsIgnoringCase(trimmed, token)
                return !found
            }
        }
        return found
    }

    /// Appends a field, keeping any existing ones of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(HTTPHeader(name: name, value: value))
    }

    /// Replaces every `name` field with one: the first keeps its position,
    /// the others go; appended when there was none.
    public mutating func replaceOrAdd(name: String, value: String) {
        if let first = fields.firstIndex(where: { HTTPSyntax.equalsIgnoringCase($0.name, name) }) {
            fields[first] = HTTPHeader(name: name, value: value)
            var i = fields.index(after: first)
            while i < fields.endIndex {
                if HTTPSyntax.equalsIgnoringCase(fields[i].name, name) { fields.remove(at: i) } else { i += 1 }
            }
        } else {
            add(name: name, value: value)
        }
    }

    /// Replaces the value of every `name` field with what `transform` makes of it.
    public mutating func updateValues(of name: String, _ transform: (String) -> String) {
        for i in fields.indices where HTTPSyntax.equalsIgnoringCase(fields[i].name, name) {
            fields[i].value = transform(fields[i].value)
        }
    }

    /// Removes every `name` field; returns how many went.
    @discardableResult
    public mutating func remove(name: String) -> Int {
        // Looked for first: removeAll copies a list it shares even when nothing goes.
        guard fields.contains(where: { HTTPSyntax.equalsIgnoringCase($0.name, name) }) else { return 0 }
        let before = fields.count
        fields.removeAll { HTTPSyntax.equalsIgnoringCase($0.name, name) }
        return before - fields.count
    }

    public var description: String {
        fields.map(\.description).joined(separator: "; ")
    }

    /// Writes `name: value\r\n` lines. CR, LF and NUL in a name or value
    /// (which only code, never a parsed head, can put there) are written as
    /// spaces: a rule can never split one header into two.
    func serialize(into out: inout [UInt8]) {
        for field in fields {
            for byte in field.name.utf8 { out.append(HTTPSyntax.isLineBreakOrNul(byte) ? 0x20 : byte) }
            out.append(UInt8(ascii: ":"))
            out.append(UInt8(ascii: " "))
            for byte in field.value.utf8 { out.append(HTTPSyntax.isLineBreakOrNul(byte) ? 0x20 : byte) }
            out.append(0x0D)
            out.append(0x0A)
        }
    }
}
