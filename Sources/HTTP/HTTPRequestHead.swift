/// A parsed (or built) request line and header section.
public struct HTTPRequestHead: Sendable, Equatable, CustomStringConvertible {
    public var method: HTTPMethod
    /// The request-target as received: origin-form `/p?q`, absolute-form
    /// `http://h/p`, authority-form `h:443` (CONNECT) or `*` (OPTIONS).
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders

    public init(method: HTTPMethod, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = [:]) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    /// The Host header, or the authority of an absolute-form target (which
    /// RFC 9112 §3.2.2 says wins over Host).
    public var host: String? {
        if let authority = HTTPTarget.authority(ofAbsolute: target) { return String(authority) }
        return headers["Host"]
    }

    /// The single valid Content-Length, if any (the parser has already
    /// rejected conflicting or malformed ones).
    public var contentLength: Int? { HTTPFraming.contentLength(headers) }

    public var isChunked: Bool { HTTPFraming.isChunked(headers) }

    /// A body follows the head (RFC 9112 §6.3: chunked, or a Content-Length above 0).
    public var hasBody: Bool { isChunked || (contentLength ?? 0) > 0 }

    /// Whether the connection stays open after this message: HTTP/1.1 unless
    /// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool { HTTPFraming.keepAlive(version: version, headers: headers) }

    /// `Expect: 100-continue` (RFC 9110 §10.1.1).
    public var expectsContinue: Bool {
        guard let expect = headers["Expect"] else { return false }
        return HTTPSyntax.equalsIgnoringCase(HTTPSyntax.trimmed(Substring(expect)), "100-continue")
    }

    /// The protocols asked for by `Upgrade`, when `Connection` lists
    /// `upgrade` too (RFC 9110 §7.8), e.g. `websocket`.
    public var upgrade: String? {
        guard let value = headers["Upgrade"], headers.hasToken("upgrade", in: "Connection") else { return nil }
        return value
    }

    /// `scheme://host/path?query`: absolute-form passes through; origin-form
    /// joins Host; authority-form (CONNECT) gives `scheme://host:port`;
    /// `*` gives `scheme://host`. nil without any host.
    public func absoluteURL(defaultScheme: String = "http") -> String? {
        if HTTPTarget.authority(ofAbsolute: target) != nil { return target }
        if method == .connect { return "\(defaultScheme)://\(target)" }
        guard let host = headers["Host"].map({ HTTPSyntax.trimmed(Substring($0)) }), !host.isEmpty else { return nil }
        // Every request in HTTP mode comes here: appended in place, not
        // through interpolation's intermediate strings.
        var url = String()
        url.reserveCapacity(defaultScheme.utf8.count + host.utf8.count + target.utf8.count + 4)
        url += defaultScheme
        url += "://"
        url += host
        if target == "*" { return url }
        if target.utf8.first != UInt8(ascii: "/") { url += "/" }
        url += target
        return url
    }

    /// The head as it goes on the wire: request line, fields, empty line.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + target.utf8.count + headers.count * 32)
        // The method and target come from a parsed head or from code; spaces
        // or line breaks in them would forge a different request line.
        for byte in method.rawValue.utf8 { out.append(HTTPSyntax.isTokenByte(byte) ? byte : UInt8(ascii: "_")) }
        out.append(0x20)
        for byte in target.utf8 { out.append(HTTPSyntax.isTargetByte(byte) ? byte : UInt8(ascii: "_")) }
        out.append(0x20)
        version.serialize(into: &out)
        out.append(0x0D)
        out.append(0x0A)
        headers.serialize(into: &out)
        out.append(0x0D)
        out.append(0x0A)
        return out
    }

    /// `GET /x HTTP/1.1 host=a.test`, plus the framing when there is a body.
    public var description: String {
        var s = "\(method) \(target) \(version)"
        if let host = headers["Host"] { s += " host=\(host)" }
        if let length = contentLength { s += " length=\(length)" }
        if isChunked { s += " chunked" }
        if let upgrade { s += " upgrade=\(upgrade)" }
        if expectsContinue { s += " expect=100-continue" }
        return s
    }
}

enum HTTPTarget {
    /// The authority of `http://authority/path` (scheme compared ignoring case).
    static func authority(ofAbsolute target: String) -> Substring? {
        // Origin-form, nearly every request: no scheme to look for.
        guard target.utf8.first != UInt8(ascii: "/") else { return nil }
        guard let schemeEnd = target.firstIndex(of: ":") else { return nil }
        let scheme = target[..<schemeEnd]
        guard HTTPSyntax.equalsIgnoringCase(scheme, "http") || HTTPSyntax.equalsIgnoringCase(scheme, "https")
        else { return nil }
        let rest = target[schemeEnd...]
        guard rest.hasPrefix("://") else { return nil }
        let authorityStart = rest.index(rest.startIndex, offsetBy: 3)
        let afterScheme = rest[authorityStart...]
        let end = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        let authority = afterScheme[..<end]
        // userinfo is not allowed in http(s) URIs (RFC 9110 §4.2.4); drop it
        // anyway so it can never pose as the host.
        if let at = authority.lastIndex(of: "@") { return authority[authority.index(after: at)...] }
        return authority
    }
}
