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

    public init?(_ url: String) {
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
        let name = host.contains(":") ? "[\(host)]" : host
        guard let port, port != (scheme == "https" ? 443 : 80) else { return name }
        return "\(name):\(port)"
    }
}
