/// Parses a complete head (start line through the empty line) into values.
/// Strict where a lenient reading could make Sluice and the server see
/// different messages; see docs/http.md.
enum HeadParser {
    static func request(_ bytes: UnsafeRawBufferPointer, limits: HTTPParserLimits) throws(HTTPParseError)
        -> HTTPRequestHead
    {
        var lines = LineIterator(bytes)
        guard let line = try lines.next() else { throw .invalidMethod }
        // method SP request-target SP HTTP-version
        var i = 0
        while i < line.count, HTTPSyntax.isTokenByte(line[i]) { i += 1 }
        guard i > 0, i < line.count, line[i] == 0x20 else { throw .invalidMethod }
        let method = HTTPMethod(rawValue: ascii(line.window(0, i)))
        let targetStart = i + 1
        var j = targetStart
        while j < line.count, HTTPSyntax.isTargetByte(line[j]) { j += 1 }
        guard j > targetStart, j < line.count, line[j] == 0x20 else { throw .invalidTarget }
        let target = ascii(line.window(targetStart, j - targetStart))
        let version = try parseVersion(line.window(j + 1, line.count - j - 1), wholeLine: true)
        let headers = try parseFields(&lines, limits: limits)
        let head = HTTPRequestHead(method: method, target: target, version: version, headers: headers)

        // RFC 9112 §3.2: exactly one Host in HTTP/1.1, never two in any version.
        let hosts = headers.count(of: "Host")
        if hosts > 1 { throw .multipleHost }
        if hosts == 0 && version == .http1_1 { throw .missingHost }
        if let host = headers["Host"], !isValidHost(host) { throw .invalidHost }
        return head
    }

    static func response(_ bytes: UnsafeRawBufferPointer, limits: HTTPParserLimits) throws(HTTPParseError)
        -> HTTPResponseHead
    {
        var lines = LineIterator(bytes)
        guard let line = try lines.next() else { throw .invalidVersion }
        // HTTP-version SP 3DIGIT SP [reason-phrase]; a missing SP after the
        // code is common enough in the wild to accept.
        guard line.count >= 12, line[8] == 0x20 else { throw .invalidVersion }
        let version = try parseVersion(line.window(0, 8), wholeLine: false)
        var status = 0
        for k in 9 ..< 12 {
            let d = line[k]
            guard d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") else { throw .invalidStatus }
            status = status * 10 + Int(d - UInt8(ascii: "0"))
        }
        guard status >= 100 else { throw .invalidStatus }
        var reason = ""
        if line.count > 12 {
            guard line[12] == 0x20 else { throw .invalidStatus }
            let phrase = line.window(13, line.count - 13)
            for byte in phrase where !HTTPSyntax.isFieldValueByte(byte) { throw .invalidStatus }
            reason = String(decoding: phrase, as: UTF8.self)
        }
        let headers = try parseFields(&lines, limits: limits)
        return HTTPResponseHead(version: version, status: status, reason: reason, headers: headers)
    }

    /// `HTTP/1.0` or `HTTP/1.1` (any 1.x is read as 1.1's syntax; other majors refused).
    private static func parseVersion(_ v: UnsafeRawBufferPointer, wholeLine: Bool) throws(HTTPParseError)
        -> HTTPVersion
    {
        guard v.count == 8, v[0] == UInt8(ascii: "H"), v[1] == UInt8(ascii: "T"), v[2] == UInt8(ascii: "T"),
              v[3] == UInt8(ascii: "P"), v[4] == UInt8(ascii: "/"), v[6] == UInt8(ascii: "."),
              isDigit(v[5]), isDigit(v[7])
        else { throw .invalidVersion }
        let version = HTTPVersion(major: v[5] - UInt8(ascii: "0"), minor: v[7] - UInt8(ascii: "0"))
        guard version.major == 1 else { throw .unsupportedVersion }
        return version
    }

    private static func parseFields(_ lines: inout LineIterator, limits: HTTPParserLimits) throws(HTTPParseError)
        -> HTTPHeaders
    {
        var fields: [HTTPHeader] = []
        // One allocation per head: growing one field at a time reallocated
        // (and copied every field so far) four times for a server's usual eight.
        fields.reserveCapacity(min(lines.remainingLineCount, limits.maxHeaderCount))
        while let line = try lines.next() {
            if line.count == 0 { break }
            // obs-fold: a continuation line. Rejected (RFC 9112 §5.2 allows
            // it) because servers that unfold disagree with those that don't.
            if line[0] == 0x20 || line[0] == 0x09 { throw .obsoleteLineFolding }
            guard fields.count < limits.maxHeaderCount else { throw .tooManyHeaders }
            var colon = 0
            while colon < line.count, HTTPSyntax.isTokenByte(line[colon]) { colon += 1 }
            // No whitespace between name and colon (§5.1): `Host :` is refused.
            guard colon > 0, colon < line.count, line[colon] == UInt8(ascii: ":") else { throw .invalidHeaderName }
            var start = colon + 1
            var end = line.count
            while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
            while end > start, line[end - 1] == 0x20 || line[end - 1] == 0x09 { end -= 1 }
            let raw = line.window(start, end - start)
            var high: UInt8 = 0
            for byte in raw {
                guard HTTPSyntax.isFieldValueByte(byte) else { throw .invalidHeaderValue }
                high |= byte
            }
            let value: String
            if high < 0x80 {
                // ASCII, as nearly every value is: nothing to validate.
                value = ascii(raw)
            } else {
                // A value that is not UTF-8 could not round-trip through String,
                // and a rewritten head must carry the bytes the app sent.
                guard let text = String(validating: raw, as: UTF8.self) else { throw .invalidHeaderValue }
                value = text
            }
            fields.append(HTTPHeader(name: ascii(line.window(0, colon)), value: value))
        }
        return HTTPHeaders(fields)
    }

    /// uri-host [ ":" port ]: reg-name characters, an IP-literal in
    /// brackets, or empty (§3.2 allows it for targets without authority).
    static func isValidHost(_ host: String) -> Bool {
        for byte in host.utf8 {
            switch byte {
            case UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "A") ... UInt8(ascii: "Z"),
                 UInt8(ascii: "0") ... UInt8(ascii: "9"):
                continue
            case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "%"),
                 UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
                 UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
                 UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"):
                continue
            default:
                return false
            }
        }
        return true
    }

    @inline(__always)
    private static func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    /// Bytes already checked to be ASCII.
    private static func ascii(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}

/// Lines of a head: each ends in CRLF or a lone LF (RFC 9112 §2.2 lets a
/// recipient accept LF); a CR anywhere else is refused.
struct LineIterator {
    private let bytes: UnsafeRawBufferPointer
    private var position = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func next() throws(HTTPParseError) -> UnsafeRawBufferPointer? {
        guard position < bytes.count else { return nil }
        var i = position
        while i < bytes.count, bytes[i] != 0x0A { i += 1 }
        // HeadReader hands over whole heads, so every line has its LF.
        var end = i
        if end > position, bytes[end - 1] == 0x0D { end -= 1 }
        let line = bytes.window(position, end - position)
        for byte in line where byte == 0x0D { throw .invalidLineEnding }
        position = min(i + 1, bytes.count)
        return line
    }

    /// Lines not yet read (their LFs): the head's fields and its blank line.
    var remainingLineCount: Int {
        var count = 0
        for i in position ..< bytes.count where bytes[i] == 0x0A { count += 1 }
        return count
    }
}
