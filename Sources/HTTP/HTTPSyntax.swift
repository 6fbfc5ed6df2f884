/// Character classes of RFC 9110 §5.6 and RFC 9112, on bytes.
enum HTTPSyntax {
    /// tchar: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
    /// "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
    @inline(__always)
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "A") ... UInt8(ascii: "Z"),
             UInt8(ascii: "0") ... UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// field-vchar / SP / HTAB, with obs-text (0x80–0xFF).
    @inline(__always)
    static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
    }

    /// A request-target: visible ASCII only (RFC 3986 characters; no spaces,
    /// no controls, no raw non-ASCII, which servers disagree about).
    @inline(__always)
    static func isTargetByte(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte < 0x7F
    }

    @inline(__always)
    static func isLineBreakOrNul(_ byte: UInt8) -> Bool {
        byte == 0x0D || byte == 0x0A || byte == 0
    }

    @inline(__always)
    static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    static func equalsIgnoringCase<A: StringProtocol, B: StringProtocol>(_ a: A, _ b: B) -> Bool {
        // Most comparisons are of a header's name against another name, and
        // differ in length: a native string's UTF-8 count costs nothing.
        guard a.utf8.count == b.utf8.count else { return false }
        var i = a.utf8.makeIterator()
        var j = b.utf8.makeIterator()
        while true {
            switch (i.next(), j.next()) {
            case (nil, nil): return true
            case let (x?, y?): if lower(x) != lower(y) { return false }
            case (nil, _?), (_?, nil): return false
            }
        }
    }

    /// Each element of a comma-separated list value (RFC 9110 §5.6.1), in
    /// order, untrimmed and empty ones included, until `body` returns false.
    /// Walked in place: every response's Connection and Content-Length come here.
    static func forEachListElement<E: Error>(in value: String, _ body: (Substring) throws(E) -> Bool) throws(E) {
        var start = value.startIndex
        while true {
            let end = value.utf8[start...].firstIndex(of: UInt8(ascii: ",")) ?? value.endIndex
            guard try body(value[start ..< end]), end < value.endIndex else { return }
            start = value.utf8.index(after: end)
        }
    }

    /// Strips optional whitespace (SP, HTAB) at both ends.
    static func trimmed(_ s: Substring) -> Substring {
        // By bytes, not Characters: every request's Host and every list
        // header come here, and OWS is ASCII.
        let bytes = s.utf8
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while end > start {
            let before = bytes.index(before: end)
            guard bytes[before] == 0x20 || bytes[before] == 0x09 else { break }
            end = before
        }
        return s[start ..< end]
    }
}
