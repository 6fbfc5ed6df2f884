/// The parts of an absolute request URL that rules and rewrites need. Not a
/// general URL parser: "scheme://authority/rest", where the authority may hold
/// userinfo, a bracketed IPv6 literal and a port.
public struct RequestURL: Sendable, Equatable {
    public var scheme: String
    /// Lowercased, no trailing dot, brackets removed from an IPv6 literal.
    public var host: String
    public var port: UInt16?
    /// Everything from the first "/" (or "?") after the authority; "/" if empty.
    public var target: String

    /// Every URL a request carries is ASCII (RFC 3986 percent-encodes the
    /// rest), and the rules take apart several per request: those are read
    /// byte by byte. Anything else goes through `init(characters:)`, whose
    /// Character rules decide the edge cases; for ASCII the two agree
    /// (RequestURLTests compares them on every case and on random strings).
    public init?(_ url: String) {
        if url.utf8.allSatisfy({ $0 < 0x80 }) {
            guard let parsed = Self.parse(ascii: url) else { return nil }
            self = parsed
        } else {
            self.init(characters: url)
        }
    }

    /// `url` is ASCII. Nil when the URL is not one this type takes; the
    /// Character parser when the bytes are not contiguous (never, for a native string).
    static func parse(ascii url: String) -> RequestURL? {
        let bytes = url.utf8
        guard let found = bytes.withContiguousStorageIfAvailable({ Self.split($0) }) else { return RequestURL(characters: url) }
        guard let parts = found else { return nil }
        // Offsets into the UTF-8 view are offsets into the string: every byte is a character.
        func slice(_ range: Range<Int>) -> Substring {
            url[bytes.index(bytes.startIndex, offsetBy: range.lowerBound) ..< bytes.index(bytes.startIndex, offsetBy: range.upperBound)]
        }
        var port: UInt16?
        if let digits = parts.port {
            guard let p = bytes.withContiguousStorageIfAvailable({ Self.port($0[digits]) }) ?? UInt16(slice(digits)) else { return nil }
            port = p
        }
        var host = Self.lowercased(slice(parts.host))
        if host.utf8.last == UInt8(ascii: ".") { host.removeLast() }
        guard !host.isEmpty else { return nil }
        let t = slice(parts.target)
        return RequestURL(scheme: Self.lowercased(slice(parts.scheme)), host: host, port: port,
                          target: t.isEmpty ? "/" : (t.utf8.first == UInt8(ascii: "/") ? String(t) : "/" + t))
    }

    init(scheme: String, host: String, port: UInt16?, target: String) {
        self.scheme = scheme; self.host = host; self.port = port; self.target = target
    }

    /// Where the parts lie, as byte offsets: nil without "scheme://", with an
    /// unclosed "[", or with anything but a port after "]".
    static func split(_ bytes: UnsafeBufferPointer<UInt8>) -> (scheme: Range<Int>, host: Range<Int>, port: Range<Int>?, target: Range<Int>)? {
        let n = bytes.count
        let colon = UInt8(ascii: ":"), slash = UInt8(ascii: "/")
        guard n >= 3 else { return nil }
        var c = 0
        while c <= n - 3, !(bytes[c] == colon && bytes[c + 1] == slash && bytes[c + 2] == slash) { c += 1 }
        guard c <= n - 3, c > 0 else { return nil }
        let rest = c + 3
        var authorityEnd = rest
        while authorityEnd < n, bytes[authorityEnd] != slash, bytes[authorityEnd] != UInt8(ascii: "?"), bytes[authorityEnd] != UInt8(ascii: "#") {
            authorityEnd += 1
        }
        var authorityStart = rest
        if let at = bytes[rest ..< authorityEnd].lastIndex(of: UInt8(ascii: "@")) { authorityStart = at + 1 }
        var host = authorityStart ..< authorityEnd
        var port: Range<Int>?
        if authorityStart < authorityEnd, bytes[authorityStart] == UInt8(ascii: "[") {
            guard let close = bytes[authorityStart ..< authorityEnd].firstIndex(of: UInt8(ascii: "]")) else { return nil }
            host = authorityStart + 1 ..< close
            if close + 1 < authorityEnd {
                guard bytes[close + 1] == colon else { return nil }
                port = close + 2 ..< authorityEnd
            }
        } else if let last = bytes[authorityStart ..< authorityEnd].lastIndex(of: colon) {
            host = authorityStart ..< last
            if last + 1 < authorityEnd { port = last + 1 ..< authorityEnd }
        }
        return (0 ..< c, host, port, authorityEnd ..< n)
    }

    /// The port as `UInt16(String)` reads it (a sign, then any number of
    /// decimal digits; "-" only before a zero), without its generic parser.
    static func port(_ text: Slice<UnsafeBufferPointer<UInt8>>) -> UInt16? {
        var digits = text[...]
        var negative = false
        if let sign = digits.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            negative = sign == UInt8(ascii: "-")
            digits = digits.dropFirst()
        }
        guard !digits.isEmpty else { return nil }
        var value: UInt32 = 0
        for byte in digits {
            guard byte &- UInt8(ascii: "0") < 10 else { return nil }
            value = value * 10 + UInt32(byte &- UInt8(ascii: "0"))
            guard value <= UInt32(UInt16.max) else { return nil }
        }
        guard !negative || value == 0 else { return nil }
        return UInt16(value)
    }

    /// ASCII letters only: the caller checked that there is nothing else.
    static func lowercased(_ text: Substring) -> String {
        let count = text.utf8.count
        return String(unsafeUninitializedCapacity: count) { out in
            for (i, byte) in text.utf8.enumerated() { out[i] = byte &- 0x41 < 26 ? byte | 0x20 : byte }
            return count
        }
    }

    init?(characters url: String) {
        guard let colon = url.firstRange(of: "://") else { return nil }
        scheme = String(url[..<colon.lowerBound]).lowercased()
        guard !scheme.isEmpty else { return nil }
        let rest = url[colon.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var hostPart = authority
        port = nil
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            hostPart = authority[authority.index(after: authority.startIndex) ..< close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = UInt16(after.dropFirst()) else { return nil }
                port = p
            } else if !after.isEmpty { return nil }
        } else if let c = authority.lastIndex(of: ":") {
            hostPart = authority[..<c]
            let digits = authority[authority.index(after: c)...]
            if !digits.isEmpty {
                guard let p = UInt16(digits) else { return nil }
                port = p
            }
        }
        var h = hostPart.lowercased()
        if h.hasSuffix(".") { h.removeLast() }
        guard !h.isEmpty else { return nil }
        host = h
        let t = rest[authorityEnd...]
        target = t.isEmpty ? "/" : (t.hasPrefix("/") ? String(t) : "/" + t)
    }

    /// The Host header value for this URL: host, bracketed if IPv6, with the
    /// port when it is not the scheme's default.
    public var hostHeader: String {
        var header = String()
        appendHostHeader(to: &header)
        return header
    }

    /// Every HTTP-mode request builds its normalized URL: appended in place,
    /// not through interpolation's intermediate strings.
    private func appendHostHeader(to out: inout String) {
        let bracketed = host.utf8.contains(UInt8(ascii: ":"))
        if bracketed { out += "[" }
        out += host
        if bracketed { out += "]" }
        guard let port, port != defaultPort else { return }
        out += ":"
        out += String(port)
    }

    /// Whether `url` reads byte for byte as `normalized`, found without making that string.
    public func spellsNormalized(_ url: String) -> Bool {
        var bytes = url.utf8.makeIterator()
        func next(_ expected: String.UTF8View) -> Bool {
            for byte in expected { guard bytes.next() == byte else { return false } }
            return true
        }
        let bracketed = host.utf8.contains(UInt8(ascii: ":"))
        guard next(scheme.utf8), next("://".utf8), !bracketed || next("[".utf8), next(host.utf8), !bracketed || next("]".utf8) else { return false }
        if let port, port != defaultPort {
            guard next(":".utf8), next(String(port).utf8) else { return false }
        }
        return next(target.utf8) && bytes.next() == nil
    }

    /// The scheme's port: 443 for https, else 80.
    var defaultPort: UInt16 { scheme == "https" ? 443 : 80 }

    /// `normalized`, and the parts that parsing it gives. HTTP mode needs
    /// both for every request; for a host of letters, digits, `-`, `_`, `.`
    /// and `:` (not ending in a dot) those are these parts without a default
    /// port, and only another host (a stray bracket, a dot left over) is
    /// parsed again.
    public var normalizedAndParts: (url: String, parts: RequestURL?) { normalizedAndParts(of: nil) }

    /// `normalizedAndParts` for the URL these parts came from: that very
    /// string when it is already spelled so (as nearly every request's is),
    /// instead of a new one.
    public func normalizedAndParts(of original: String?) -> (url: String, parts: RequestURL?) {
        let url = original.flatMap { spellsNormalized($0) ? $0 : nil } ?? normalized
        guard hasPlainHost else { return (url, RequestURL(url)) }
        var parts = self
        if port == defaultPort { parts.port = nil }
        return (url, parts)
    }

    private var hasPlainHost: Bool {
        guard host.utf8.last != UInt8(ascii: ".") else { return false }
        for byte in host.utf8 {
            switch byte {
            case UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "0") ... UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"):
                continue
            default:
                return false
            }
        }
        return true
    }
    /// The URL as the rules see it: the host lowercased without a trailing
    /// dot, no default port, no user part. `http://KEEP.TEST.:80/x` and
    /// `http://keep.test/x` are one URL: URL-REGEX, [URL Rewrite] and
    /// [Map Local] patterns written for the second were dodged by the first.
    public var normalized: String {
        var url = String()
        url.reserveCapacity(scheme.utf8.count + host.utf8.count + target.utf8.count + 11)
        url += scheme
        url += "://"
        appendHostHeader(to: &url)
        url += target
        return url
    }
}
