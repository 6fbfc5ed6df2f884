/// The one HTTP head a proxy handshake reads: the answer to CONNECT, or the
/// first request a client sends to our HTTP proxy listener. Kept small and
/// local (start line plus header lines, bounded) because Relay must not wait
/// for the engine's full HTTP parser to read a status code.
struct ProxyHead: Sendable {
    /// RFC 9112 sets no limit; 16 KiB is what common proxies allow a head.
    static let maximumLength = 16 * 1024
    static let maximumHeaderCount = 100

    var startLine: Substring
    var headers: [(name: Substring, value: Substring)]
    /// Bytes from the start of the buffer through the blank line.
    var length: Int

    /// Finds and splits a complete head at the start of `bytes`. Nil: need more.
    /// Throws when no head ends within `maximumLength`, or a line is not a header.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(RelayError) -> ProxyHead? {
        guard let length = try headLength(bytes) else { return nil }
        let text = String(decoding: bytes.sub(0, length), as: UTF8.self)
        // "\r\n" is one Character in Swift, so both line ends are named.
        var lines = text.split(omittingEmptySubsequences: false) { $0 == "\r\n" || $0 == "\n" }
        // The head ends with an empty line, and split adds one after the last line end.
        while let last = lines.last, last.isEmpty { lines.removeLast() }
        guard let first = lines.first else { throw .protocolViolation(.headerSyntax) }
        guard lines.count - 1 <= maximumHeaderCount else { throw .protocolViolation(.tooManyHeaders) }
        var headers: [(name: Substring, value: Substring)] = []
        headers.reserveCapacity(lines.count - 1)
        for line in lines.dropFirst() {
            // RFC 9112 §5.1: no whitespace before the colon; obsolete line folding refused.
            guard let colon = line.firstIndex(of: ":") else { throw .protocolViolation(.headerSyntax) }
            let name = line[..<colon]
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else { throw .protocolViolation(.headerSyntax) }
            let value = line[line.index(after: colon)...].trimmingWhitespace
            guard value.utf8.allSatisfy(isFieldValueByte) else { throw .protocolViolation(.headerSyntax) }
            headers.append((name, value))
        }
        return ProxyHead(startLine: first, headers: headers, length: length)
    }

    /// The offset after the blank line ending the head (CRLF CRLF, or a bare LF
    /// as RFC 9112 §2.2 lets a recipient accept), or nil if not there yet. Only
    /// the first `maximumLength` bytes count, so the answer never depends on how
    /// the bytes were split into reads.
    static func headLength(_ bytes: UnsafeRawBufferPointer) throws(RelayError) -> Int? {
        let window = min(bytes.count, maximumLength)
        var i = 0
        while i + 1 < window {
            if bytes[i] == UInt8(ascii: "\n") {
                if bytes[i + 1] == UInt8(ascii: "\n") { return i + 2 }
                if i + 2 < window, bytes[i + 1] == UInt8(ascii: "\r"), bytes[i + 2] == UInt8(ascii: "\n") { return i + 3 }
            }
            i += 1
        }
        if bytes.count >= maximumLength { throw .protocolViolation(.headTooLarge) }
        return nil
    }

    /// The first value of a header, names compared case-insensitively.
    func value(_ name: String) -> Substring? {
        headers.first { $0.name.lowercased() == name }?.value
    }
}

/// RFC 9110 §5.6.2 tchar.
func isTokenByte(_ b: UInt8) -> Bool {
    switch b {
    case UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "A") ... UInt8(ascii: "Z"), UInt8(ascii: "0") ... UInt8(ascii: "9"):
        return true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
         UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
         UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        return true
    default:
        return false
    }
}

/// RFC 9110 §5.5: visible characters, space, tab and obs-text; no other controls.
func isFieldValueByte(_ b: UInt8) -> Bool {
    b == 0x09 || (b >= 0x20 && b != 0x7f)
}

extension Substring {
    var trimmingWhitespace: Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}
