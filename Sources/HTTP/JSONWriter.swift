/// A streaming JSON writer for logs (HAR, flow logs, rule dumps) in layers that
/// may not use Foundation. The caller drives the structure; the writer places
/// commas, colons, indentation and escapes, so its output is always valid JSON
/// as long as every `begin` has its `end` and every `key` is followed by a value.
///
///     var json = JSONWriter()
///     json.beginObject()
///     json.field("method", "GET")
///     json.key("headers"); json.beginArray(); json.endArray()
///     json.endObject()
///     json.text   // {"method":"GET","headers":[]}
public struct JSONWriter: Sendable {
    /// The UTF-8 output so far. Inputs are Swift strings, hence valid UTF-8,
    /// and everything the writer adds is ASCII, so this is always valid UTF-8.
    public private(set) var bytes: [UInt8] = []
    public let pretty: Bool
    /// Pretty output as if nested this deep in an enclosing document: a
    /// value written apart and spliced into it (a streamed HAR entry).
    public let indentLevel: Int

    /// One entry per open container: whether it holds a value yet (for commas).
    private var open: [Bool] = []
    /// A key was written and its value has not: no comma, no newline before it.
    private var afterKey = false

    public init(pretty: Bool = false, indentLevel: Int = 0) {
        self.pretty = pretty
        self.indentLevel = indentLevel
    }

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// How many containers are open: 0 once the document is complete.
    public var depth: Int { open.count }

    // MARK: Structure

    public mutating func beginObject() {
        beforeValue()
        bytes.append(UInt8(ascii: "{"))
        open.append(false)
    }

    public mutating func endObject() { close(UInt8(ascii: "}")) }

    public mutating func beginArray() {
        beforeValue()
        bytes.append(UInt8(ascii: "["))
        open.append(false)
    }

    public mutating func endArray() { close(UInt8(ascii: "]")) }

    /// Writes a complete JSON value made apart (a flow-log line inside a
    /// control answer). The caller vouches that it is valid JSON.
    public mutating func rawValue(_ json: String) {
        beforeValue()
        bytes.append(contentsOf: json.utf8)
    }

    /// Writes an object member's name; the next call must write its value.
    public mutating func key(_ name: String) {
        beforeValue()
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        if pretty { bytes.append(UInt8(ascii: " ")) }
        afterKey = true
    }

    // MARK: Values

    public mutating func string(_ value: String) {
        beforeValue()
        appendQuoted(value)
    }

    public mutating func int(_ value: Int) {
        beforeValue()
        appendASCII(String(value))
    }

    /// JSON has no NaN or infinity: those become `null`. Integral values print
    /// without a fraction (`12`, not `12.0`), as HAR readers expect for times.
    public mutating func double(_ value: Double) {
        beforeValue()
        if !value.isFinite {
            appendASCII("null")
        } else if value.magnitude < 9_007_199_254_740_992, Double(Int(value)) == value {
            appendASCII(String(Int(value)))
        } else {
            // Swift prints the shortest round-tripping form, e.g. 0.1, 1e-05,
            // 1.5e+20: all valid JSON numbers.
            appendASCII(String(value))
        }
    }

    public mutating func bool(_ value: Bool) {
        beforeValue()
        appendASCII(value ? "true" : "false")
    }

    public mutating func null() {
        beforeValue()
        appendASCII("null")
    }

    // MARK: Object members in one call

    public mutating func field(_ name: String, _ value: String) { key(name); string(value) }
    public mutating func field(_ name: String, _ value: Int) { key(name); int(value) }
    public mutating func field(_ name: String, _ value: Double) { key(name); double(value) }
    public mutating func field(_ name: String, _ value: Bool) { key(name); bool(value) }

    /// `nil` writes `null`. (Pass a literal `nil` through `nullField`, since a
    /// bare `nil` cannot pick among the optional overloads.)
    public mutating func field(_ name: String, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    public mutating func field(_ name: String, _ value: Int?) {
        key(name)
        if let value { int(value) } else { null() }
    }

    public mutating func field(_ name: String, _ value: Double?) {
        key(name)
        if let value { double(value) } else { null() }
    }

    public mutating func field(_ name: String, _ value: Bool?) {
        key(name)
        if let value { bool(value) } else { null() }
    }

    public mutating func nullField(_ name: String) { key(name); null() }

    // MARK: Layout

    private mutating func beforeValue() {
        if afterKey {
            afterKey = false
            return
        }
        guard let last = open.indices.last else { return }
        if open[last] { bytes.append(UInt8(ascii: ",")) }
        open[last] = true
        newline(depth: open.count)
    }

    private mutating func close(_ bracket: UInt8) {
        // An unbalanced end is a caller bug; writing the bracket anyway keeps
        // the bug visible in the output instead of trapping in a log path.
        let hadValues = open.popLast() ?? false
        if hadValues { newline(depth: open.count) }
        bytes.append(bracket)
    }

    private mutating func newline(depth: Int) {
        guard pretty else { return }
        bytes.append(UInt8(ascii: "\n"))
        for _ in 0 ..< (depth + indentLevel) * 2 { bytes.append(UInt8(ascii: " ")) }
    }

    private mutating func appendASCII(_ s: String) {
        bytes.append(contentsOf: s.utf8)
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// RFC 8259 §7: the quote, the backslash and C0 controls must be escaped;
    /// everything else (DEL, U+2028, U+2029, any non-ASCII) may appear as is.
    private mutating func appendQuoted(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""):
                bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "\n"):
                bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
            case UInt8(ascii: "\r"):
                bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
            case UInt8(ascii: "\t"):
                bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
            case 0x00 ..< 0x20:
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                bytes.append(Self.hex[Int(byte >> 4)])
                bytes.append(Self.hex[Int(byte & 0x0F)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
